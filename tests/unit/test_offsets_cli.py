"""`cdcflow offsets` shows, sets and resets the position a connector resumes from."""

from __future__ import annotations

from pathlib import Path

import orjson
from click.testing import CliRunner

from cdcflow.operator.cli.main import cli
from tests.documents import connector_file


def test_set_then_show_round_trips_the_offset_under_the_connect_key(tmp_path: Path) -> None:
    config = connector_file(tmp_path)
    runner = CliRunner()
    stored = runner.invoke(cli, ["offsets", "set", "-f", str(config), '{"lsn": 24023128}'])
    shown = runner.invoke(cli, ["offsets", "show", "-f", str(config)])
    assert stored.exit_code == 0, stored.output
    assert orjson.loads(shown.output) == {"lsn": 24023128}
    document = orjson.loads((tmp_path / "offsets.json").read_bytes())
    assert document["key"] == ["orders", {"server": "shop"}]


def test_reset_forgets_the_offset(tmp_path: Path) -> None:
    config = connector_file(tmp_path)
    runner = CliRunner()
    runner.invoke(cli, ["offsets", "set", "-f", str(config), '{"lsn": 1}'])
    reset = runner.invoke(cli, ["offsets", "reset", "-f", str(config), "--yes"])
    shown = runner.invoke(cli, ["offsets", "show", "-f", str(config)])
    assert reset.exit_code == 0
    assert shown.exit_code == 1
    assert "no offset stored" in shown.output


def test_set_rejects_text_that_is_not_a_json_object(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["offsets", "set", "-f", str(connector_file(tmp_path)), "[1]"])
    assert result.exit_code != 0
    assert "must be an object" in result.output


def test_a_damaged_or_foreign_offsets_file_is_refused_with_the_way_out(tmp_path: Path) -> None:
    config = connector_file(tmp_path)
    offsets = tmp_path / "offsets.json"
    runner = CliRunner()
    offsets.write_bytes(b'{"key": ["orders", {"server": "shop"}], "value": {"ls')
    damaged = runner.invoke(cli, ["offsets", "show", "-f", str(config)])
    assert damaged.exit_code != 0
    assert "is damaged" in damaged.output and "cdcflow offsets reset" in damaged.output
    assert "Traceback" not in damaged.output

    offsets.write_bytes(orjson.dumps({"key": ["billing", {"server": "b"}], "value": {"lsn": 1}}))
    foreign = runner.invoke(cli, ["offsets", "show", "-f", str(config)])
    assert foreign.exit_code != 0
    assert "belongs to another connector" in foreign.output
    assert offsets.read_bytes().startswith(b'{"key":["billing"'), "left untouched"


def test_an_invalid_table_pattern_is_a_configuration_error(tmp_path: Path) -> None:
    from cdcflow.capture.config import ConfigError
    from cdcflow.capture.connectors.postgres.properties import parse_properties

    try:
        parse_properties({"topic.prefix": "shop", "table.include.list": "public.orders("})
    except ConfigError as error:
        assert "'public.orders(' is not a regular expression" in str(error)
    else:
        raise AssertionError("accepted an invalid regular expression")
