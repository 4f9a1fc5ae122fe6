"""The hot path compiled with mypyc: the per-value and per-event modules as C extensions.

The capture engine's CPU goes to decoding pgoutput frames, converting values and encoding
envelopes, in a few small, strictly typed modules (:data:`HOT_MODULES`). mypyc compiles them
to C extensions that import in place of the source (Python prefers an extension module beside
a ``.py`` of the same name); the source stays the one truth, readable and tested, and without
a compiler everything runs as plain Python. ``make setup`` runs ``python -m
cdcflow.capture.native build`` (``NATIVE=0`` skips it): the extensions are built in a scratch
copy of the package, cached under ``~/.cache/cdcflow/native/<digest>`` and copied beside the
sources, with a manifest naming the digest of the sources they were built from.

A compiled module is only right while its source is unchanged: :func:`stale` says when the
sources moved on (the test suite refuses to run then, the engine warns), and ``build`` again
or ``clean`` fixes it.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

#: The modules compiled, by import name: what every change event passes through.
HOT_MODULES = (
    "cdcflow.capture.spi",
    "cdcflow.capture.converting",
    "cdcflow.capture.snapshot",
    "cdcflow.capture.encoders",
    "cdcflow.capture.envelope",
    "cdcflow.capture.pipeline",
    "cdcflow.capture.stats",
    "cdcflow.capture.kafka.producer",
    "cdcflow.capture.connectors.postgres.pgoutput",
    "cdcflow.capture.connectors.postgres.types",
    "cdcflow.capture.connectors.postgres.replication",
    "cdcflow.capture.connectors.postgres.source",
    "cdcflow.capture.connectors.postgres.spool",
    "cdcflow.capture.connectors.postgres.snapshotter",
    "cdcflow.capture.connectors.mysql.binlog",
    "cdcflow.capture.connectors.mysql.rowimages",
    "cdcflow.capture.connectors.mysql.position",
    "cdcflow.capture.connectors.mysql.source",
    "cdcflow.capture.connectors.mysql.tables",
    "cdcflow.capture.connectors.mysql.types",
    "cdcflow.capture.connectors.db2.lsn",
    "cdcflow.capture.connectors.db2.stream",
    "cdcflow.capture.connectors.db2.types",
)
#: mypy's settings for the scratch copy: the drivers that ship no type information are Any,
#: as pyproject.toml's [tool.mypy] overrides say for the whole project.
MYPY_CONFIG = """\
[mypy]
[mypy-pymysqlreplication.*,ibm_db,ibm_db.*,ibm_db_dbi,ibm_db_dbi.*,confluent_kafka.*]
ignore_missing_imports = True
"""
MANIFEST = "native-manifest.json"
SUFFIX = sysconfig.get_config_var("EXT_SUFFIX") or ".so"


def _installed_root() -> Path:
    """Where ``cdcflow`` is imported from: the parent of ``cdcflow/capture`` as imported
    (not resolved: an editable install links each file to the checkout)."""
    import cdcflow.capture

    return Path(cdcflow.capture.__path__[0]).parent.parent


def _source(module: str, root: Path) -> Path:
    return root.joinpath(*module.split(".")).with_suffix(".py")


def _extension(module: str, root: Path) -> Path:
    return root.joinpath(*module.split(".")).with_name(module.rsplit(".", 1)[1] + SUFFIX)


def _compiler() -> str:
    try:
        return importlib.metadata.version("mypy")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"  # no compiler here: extensions, if any, came from elsewhere


def digest(root: Path, *, compiler: str | None = None) -> str:
    """What the extensions depend on: the hot modules' sources, the compiler's version (the
    installed mypy's unless given) and Python's ABI."""
    hashed = hashlib.sha256(f"{compiler or _compiler()} {SUFFIX}".encode())
    for module in HOT_MODULES:
        hashed.update(module.encode() + b"\0" + _source(module, root).read_bytes())
    return hashed.hexdigest()[:20]


def _manifest(root: Path) -> dict[str, Any]:
    path = root / MANIFEST
    return json.loads(path.read_text()) if path.exists() else {}


def stale(root: Path | None = None) -> list[str]:
    """Compiled modules whose sources changed since they were built (empty: none, or all
    current)."""
    root = root or _installed_root()
    present = [m for m in HOT_MODULES if _extension(m, root).exists()]
    manifest = _manifest(root)
    # judged with the compiler that built them: an image ships extensions without mypy
    if not present or manifest.get("digest") == digest(root, compiler=manifest.get("compiler")):
        return []
    return present


def clean(root: Path | None = None) -> None:
    """Remove the extensions: the modules run as plain Python again."""
    root = root or _installed_root()
    for name in _manifest(root).get("files", []):
        (root / str(name)).unlink(missing_ok=True)
    for module in HOT_MODULES:
        _extension(module, root).unlink(missing_ok=True)
    (root / MANIFEST).unlink(missing_ok=True)


def build(root: Path | None = None, *, cache: Path | None = None) -> list[str]:
    """Compile the hot modules (or take them from the cache) and put them beside their
    sources; returns the files placed, relative to ``root``."""
    root = root or _installed_root()
    key = digest(root)
    built = all(_extension(m, root).exists() for m in HOT_MODULES)
    if built and _manifest(root).get("digest") == key:
        return []
    clean(root)
    cached = (cache or _cache_dir()) / key
    if not (cached / MANIFEST).exists():
        _compile(root, cached)
    files = json.loads((cached / MANIFEST).read_text())["files"]
    for name in files:
        shutil.copy2(cached / name, root / name)
    manifest = {"digest": key, "compiler": _compiler(), "files": files}
    (root / MANIFEST).write_text(json.dumps(manifest))
    return list(files)


def _cache_dir() -> Path:
    return Path(os.environ.get("CDCFLOW_CACHE", Path.home() / ".cache" / "cdcflow")) / "native"


def _compile(root: Path, into: Path) -> None:
    """Run mypyc on a plain copy of the package (an editable install's links would make mypy
    see each file under two names) and keep the extensions in ``into``."""
    with tempfile.TemporaryDirectory(prefix="cdcflow-native-") as scratch:
        work = Path(scratch)
        skip = shutil.ignore_patterns("__pycache__", "*.so")
        shutil.copytree(root / "cdcflow", work / "cdcflow", symlinks=False, ignore=skip)
        (work / "cdcflow" / "__init__.py").touch()  # a regular package for mypy's module names
        (work / "mypy.ini").write_text(MYPY_CONFIG)
        sources = [str(_source(m, Path())) for m in HOT_MODULES]
        result = subprocess.run(
            [sys.executable, "-m", "mypyc", *sources],
            cwd=work,
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            raise RuntimeError(f"mypyc failed:\n{result.stdout[-4000:]}{result.stderr[-4000:]}")
        built = [p for p in work.rglob(f"*{SUFFIX}") if "build" not in p.relative_to(work).parts]
        into.mkdir(parents=True, exist_ok=True)
        files = []
        for path in built:
            relative = path.relative_to(work)
            (into / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, into / relative)
            files.append(str(relative))
        (into / MANIFEST).write_text(json.dumps({"files": sorted(files)}))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cdcflow.capture.native", description=__doc__)
    parser.add_argument("action", choices=("build", "check", "clean"))
    args = parser.parse_args(argv)
    if args.action == "clean":
        clean()
        return 0
    if args.action == "check":
        outdated = stale()
        for module in outdated:
            print(f"{module}: compiled from an older source; run `make setup`", file=sys.stderr)
        return 1 if outdated else 0
    try:
        placed = build()
    except (RuntimeError, OSError) as error:
        print(f"the hot path stays plain Python: {error}", file=sys.stderr)
        return 0
    print(f"compiled {len(HOT_MODULES)} hot modules" if placed else "compiled modules current")
    return 0


if __name__ == "__main__":
    sys.exit(main())
