"""``cdcflow offsets``: show, set or reset a connector's stored position.

Works on the store the connector's YAML names (file or Kafka topic). Changing offsets of a
running connector is refused by convention, not enforced here: stop it first.
"""

from __future__ import annotations

from pathlib import Path

import click
import orjson

from cdcflow.capture.config import ConfigError
from cdcflow.capture.connector_resource import load_connector
from cdcflow.capture.errors import CaptureError
from cdcflow.capture.spi import OffsetStore

_FILE = click.option(
    "-f",
    "--file",
    "path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    required=True,
    help="The connector's CdcConnector YAML.",
)
_OFFSETS_FILE = click.option(
    "--offsets-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="File store location, if the connector was run with --offsets-file.",
)


def _store(path: Path, offsets_file: Path | None) -> OffsetStore:
    from cdcflow.capture.assembly import offset_store

    try:
        return offset_store(load_connector(path), offsets_file)
    except ConfigError as error:
        raise click.ClickException(str(error)) from None


@click.group()
def offsets() -> None:
    """Inspect and change where a connector resumes (stop the connector first)."""


@offsets.command()
@_FILE
@_OFFSETS_FILE
def show(path: Path, offsets_file: Path | None) -> None:
    """Print the stored offset as JSON (nothing stored: exit code 1)."""
    try:
        offset = _store(path, offsets_file).load()
    except CaptureError as error:
        raise click.ClickException(str(error)) from None
    if offset is None:
        raise click.ClickException("no offset stored: the connector starts from scratch")
    click.echo(orjson.dumps(offset.to_dict(), option=orjson.OPT_INDENT_2).decode())


@offsets.command(name="set")
@_FILE
@_OFFSETS_FILE
@click.argument("offset_json")
def set_offset(path: Path, offsets_file: Path | None, offset_json: str) -> None:
    """Store OFFSET_JSON, e.g. '{"lsn": 24023128}' (PostgreSQL LSNs as integers)."""
    from cdcflow.capture.spi import Offset

    try:
        values = orjson.loads(offset_json)
    except orjson.JSONDecodeError as error:
        raise click.ClickException(f"OFFSET_JSON is not valid JSON: {error}") from None
    if not isinstance(values, dict):
        raise click.ClickException('OFFSET_JSON must be an object such as {"lsn": 24023128}')
    _store(path, offsets_file).save(Offset.from_dict(values))
    click.echo("offset stored")


@offsets.command()
@_FILE
@_OFFSETS_FILE
@click.confirmation_option(prompt="Forget the stored offset? The next start snapshots again.")
def reset(path: Path, offsets_file: Path | None) -> None:
    """Forget the stored offset so the next start behaves like a first start."""
    _store(path, offsets_file).reset()
    click.echo("offset reset")
