"""The distribution's layout: folders mapped into ``cdcflow.*`` without shadowing the stdlib."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = {
    "capture": "cdcflow.capture",
    "operator": "cdcflow.operator",
    "sparkapps": "cdcflow.sparkapps",
}


def test_importing_operator_from_the_repository_root_still_gets_the_stdlib() -> None:
    probe = (
        "import operator, collections, sys; "
        "assert operator.itemgetter(1)([0, 7]) == 7; "
        "assert hasattr(collections, 'OrderedDict'); "
        "print(getattr(operator, '__file__', 'builtin'))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert str(ROOT / "operator") not in result.stdout


def test_the_operator_folder_has_no_init_module() -> None:
    assert not (ROOT / "operator" / "__init__.py").exists()


def test_every_subpackage_in_the_tree_is_listed_in_pyproject() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    assert config["package-dir"] == {name: folder for folder, name in FOLDERS.items()}
    assert _packages_in_tree() == listed


def _packages_in_tree() -> set[str]:
    found = set(FOLDERS.values())
    for folder, package in FOLDERS.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            relative = init.parent.relative_to(ROOT / folder)
            if relative.parts:
                found.add(".".join([package, *relative.parts]))
    return found


def test_the_console_script_reports_the_installed_version() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "cdcflow.operator.cli", "version"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("cdcflow 0.")
