"""The cached Go builds of the test services rebuild exactly when they must."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.services import gobuild


@pytest.fixture(autouse=True)
def _no_toolchain_needed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gobuild, "go_binary", lambda: "go")


def _cache(home: Path, digest: str = "recipe-1") -> gobuild.CachedBuild:
    return gobuild.CachedBuild("svc", home, digest, (home / "bin" / "tool",))


def _writes_tool(calls: list[str]) -> Callable[[gobuild.Go], None]:
    def build(go: gobuild.Go) -> None:
        calls.append(go.service)
        partial = gobuild.fresh_folder(go.log.parent / "bin.partial")
        (partial / "tool").write_text("binary")
        gobuild.replace_folder(partial, go.log.parent / "bin")

    return build


def test_a_finished_build_is_reused_without_running_go_again(tmp_path: Path) -> None:
    calls: list[str] = []
    cache = _cache(tmp_path)
    assert not cache.ready()
    cache.ensure(_writes_tool(calls))
    cache.ensure(_writes_tool(calls))
    assert calls == ["svc"] and cache.ready()


def test_a_changed_recipe_rebuilds(tmp_path: Path) -> None:
    calls: list[str] = []
    _cache(tmp_path).ensure(_writes_tool(calls))
    changed = _cache(tmp_path, "recipe-2")
    assert not changed.ready()
    changed.ensure(_writes_tool(calls))
    assert calls == ["svc", "svc"] and changed.ready() and not _cache(tmp_path).ready()


def test_an_interrupted_build_is_not_taken_for_a_finished_one(tmp_path: Path) -> None:
    calls: list[str] = []
    cache = _cache(tmp_path)
    cache.ensure(_writes_tool(calls))
    with pytest.raises(RuntimeError):
        _cache(tmp_path, "recipe-2").ensure(_fails)
    assert not cache.ready(), "the old marker must be gone once a rebuild started"


def test_a_missing_output_means_not_built(tmp_path: Path) -> None:
    cache = _cache(tmp_path)
    cache.ensure(_writes_tool([]))
    (tmp_path / "bin" / "tool").unlink()
    assert not cache.ready()


def _fails(go: gobuild.Go) -> None:
    raise RuntimeError("go build failed")
