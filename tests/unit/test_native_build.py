"""Compiled hot-path modules are used only while their sources are unchanged: a changed
source makes them stale (the suite refuses to run, the engine warns) until rebuilt or removed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from cdcflow.capture import native


def _tree(tmp_path: Path) -> Path:
    """A package root holding copies of the hot modules' sources and an extension for each,
    as a build leaves them."""
    installed = native._installed_root()
    for module in native.HOT_MODULES:
        source = native._source(module, tmp_path)
        source.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(native._source(module, installed), source)
        native._extension(module, tmp_path).write_bytes(b"\x7fELF")
    files = [str(native._extension(m, tmp_path).relative_to(tmp_path)) for m in native.HOT_MODULES]
    manifest = {"digest": native.digest(tmp_path), "files": files}
    (tmp_path / native.MANIFEST).write_text(json.dumps(manifest))
    return tmp_path


def test_extensions_built_from_the_current_sources_are_not_stale(tmp_path: Path) -> None:
    assert native.stale(_tree(tmp_path)) == []


def test_a_changed_source_makes_the_extensions_stale_until_they_are_removed(
    tmp_path: Path,
) -> None:
    root = _tree(tmp_path)
    source = native._source(native.HOT_MODULES[0], root)
    source.write_text(source.read_text() + "\n# changed\n")

    assert native.stale(root) == list(native.HOT_MODULES)
    native.clean(root)
    assert native.stale(root) == []
    assert not any(native._extension(m, root).exists() for m in native.HOT_MODULES)


def test_a_checkout_without_extensions_runs_plain_python(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    native.clean(root)
    assert native.stale(root) == [] and not (root / native.MANIFEST).exists()


def test_extensions_shipped_without_their_compiler_are_judged_by_their_sources(
    tmp_path: Path,
) -> None:
    # An image carries extensions built elsewhere and no mypy: the manifest names the compiler.
    root = _tree(tmp_path)
    built_by = "0.0-elsewhere"
    files = json.loads((root / native.MANIFEST).read_text())["files"]
    manifest = {"digest": native.digest(root, compiler=built_by), "compiler": built_by}
    (root / native.MANIFEST).write_text(json.dumps({**manifest, "files": files}))

    assert native.stale(root) == []
    source = native._source(native.HOT_MODULES[-1], root)
    source.write_text(source.read_text() + "\n# changed\n")
    assert native.stale(root) == list(native.HOT_MODULES)
