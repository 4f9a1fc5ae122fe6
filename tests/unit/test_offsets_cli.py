"""`cdcflow offsets` shows, sets and resets the position a connector resumes from."""

from __future__ import annotations

from pathlib import Path

import orjson
import yaml
from click.testing import CliRunner

from cdcflow.operator.cli.main import cli


def _connector(tmp_path: Path) -> Path:
    path = tmp_path / "connector.yaml"
    document = {
        "apiVersion": "cdcflow.io/v1alpha1",
        "kind": "CdcConnector",
        "metadata": {"name": "orders"},
        "spec": {
            "source": {"postgresql": {"host": "db", "database": "shop"}},
            "offsets": {"store": "file", "path": str(tmp_path / "offsets.json")},
            "config": {"topic.prefix": "shop"},
        },
    }
    path.write_text(yaml.safe_dump(document))
    return path


def test_set_then_show_round_trips_the_offset_under_the_connect_key(tmp_path: Path) -> None:
    config = _connector(tmp_path)
    runner = CliRunner()
    stored = runner.invoke(cli, ["offsets", "set", "-f", str(config), '{"lsn": 24023128}'])
    shown = runner.invoke(cli, ["offsets", "show", "-f", str(config)])
    assert stored.exit_code == 0, stored.output
    assert orjson.loads(shown.output) == {"lsn": 24023128}
    document = orjson.loads((tmp_path / "offsets.json").read_bytes())
    assert document["key"] == ["orders", {"server": "shop"}]


def test_reset_forgets_the_offset(tmp_path: Path) -> None:
    config = _connector(tmp_path)
    runner = CliRunner()
    runner.invoke(cli, ["offsets", "set", "-f", str(config), '{"lsn": 1}'])
    reset = runner.invoke(cli, ["offsets", "reset", "-f", str(config), "--yes"])
    shown = runner.invoke(cli, ["offsets", "show", "-f", str(config)])
    assert reset.exit_code == 0
    assert shown.exit_code == 1
    assert "no offset stored" in shown.output


def test_set_rejects_text_that_is_not_a_json_object(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["offsets", "set", "-f", str(_connector(tmp_path)), "[1]"])
    assert result.exit_code != 0
    assert "must be an object" in result.output
