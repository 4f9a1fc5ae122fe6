"""A base install (no extras) runs ``cdcflow --help``, every command's ``--help`` and
``cdcflow version``; a command that needs an extra says which one instead of a traceback.

Each case runs the CLI in a fresh interpreter where an import hook makes every optional
dependency's top-level module missing, as if ``pip install cdcflow`` had installed nothing else.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import click
import pytest

from cdcflow.operator.cli.extras import MODULE_EXTRAS
from cdcflow.operator.cli.main import cli
from tests.documents import connector_file

ROOT = Path(__file__).resolve().parents[2]
BLOCKED = (
    "psycopg",
    "pymysql",
    "pymysqlreplication",
    "ibm_db",
    "confluent_kafka",
    "kopf",
    "kubernetes",
    "pyspark",
    "delta",
)
"""Top-level modules of the postgres, mysql, db2, kafka, operator and spark extras."""

BOOTSTRAP = f"""
import sys
from importlib.abc import MetaPathFinder

BLOCKED = {set(BLOCKED)!r}


class NotInstalled(MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None


sys.meta_path.insert(0, NotInstalled())
sys.argv = ["cdcflow", *sys.argv[1:]]
from cdcflow.operator.cli.main import main

main()
"""


def _base_install(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CDCFLOW_DATABASE_USER": "cdc", "CDCFLOW_DATABASE_PASSWORD": "secret"}
    return subprocess.run(
        [sys.executable, "-c", BOOTSTRAP, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def _command_paths(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    paths: list[tuple[str, ...]] = []
    for name, command in sorted(group.commands.items()):
        paths.append((*prefix, name))
        if isinstance(command, click.Group):
            paths.extend(_command_paths(command, (*prefix, name)))
    return paths


COMMANDS = _command_paths(cli)


def test_the_bootstrap_really_hides_the_extras(tmp_path: Path) -> None:
    probe = BOOTSTRAP.replace("main()", "import psycopg")
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert result.returncode == 1
    assert "ModuleNotFoundError: No module named 'psycopg'" in result.stderr


def test_help_lists_every_command_without_any_extra(tmp_path: Path) -> None:
    result = _base_install("--help", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    for name in cli.commands:
        assert f"  {name} " in result.stdout


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_command_help_works_without_any_extra(
    command: tuple[str, ...], tmp_path: Path
) -> None:
    result = _base_install(*command, "--help", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"Usage: cdcflow {' '.join(command)} ")


def test_version_works_without_any_extra(tmp_path: Path) -> None:
    result = _base_install("version", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("cdcflow 0.")


def test_a_command_missing_its_extra_names_the_extra(tmp_path: Path) -> None:
    result = _base_install("capture", "-f", str(connector_file(tmp_path)), cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    assert (
        "Error: the postgresql connector needs psycopg, which is not installed: "
        "pip install 'cdcflow[postgres]'"
    ) in result.stderr


def test_a_module_missing_inside_a_command_names_the_extra(tmp_path: Path) -> None:
    result = _base_install("operator", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    assert result.stderr == (
        "Error: cdcflow operator needs kopf, which is not installed: "
        "pip install 'cdcflow[operator]'\n"
    )


def test_every_blocked_module_maps_to_the_extra_of_pyproject_installing_it() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    distributions = metadata.packages_distributions()
    assert set(MODULE_EXTRAS) == set(BLOCKED)
    for module, extra in MODULE_EXTRAS.items():
        required = {_distribution(requirement) for requirement in extras[extra]}
        installed_by = {_distribution(name) for name in distributions.get(module, [])}
        assert not installed_by or installed_by & required, (module, extra, installed_by)


def _distribution(requirement: str) -> str:
    return re.split(r"[\[<>=!~;\s]", requirement, maxsplit=1)[0].lower().replace("_", "-")
