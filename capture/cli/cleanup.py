"""``cdcflow cleanup``: drop what a connector left on the server — PostgreSQL's replication slot
and publication (the operator's cleanup Job runs this when a CdcConnector with
``cleanupPolicy: Delete`` is deleted)."""

from __future__ import annotations

from pathlib import Path

import click

from cdcflow.capture.capabilities import Cleanup
from cdcflow.capture.cli.capture import failed
from cdcflow.capture.config import ConfigError
from cdcflow.capture.connector_resource import load_connector
from cdcflow.capture.errors import CaptureError


@click.command()
@click.option(
    "-f",
    "--file",
    "path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    required=True,
    help="The connector's CdcConnector YAML.",
)
@click.option(
    "--credentials-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="YAML with `username:` and `password:`. Default: CDCFLOW_DATABASE_USER/_PASSWORD.",
)
def cleanup(path: Path, credentials_file: Path | None) -> None:
    """Drop the connector's server-side objects (slot, publication). Offsets are kept."""
    from cdcflow.capture.assembly import build_engine
    from cdcflow.capture.credentials import Login

    try:
        engine = build_engine(
            load_connector(path), login=Login.from_environment(credentials_file), sink="stdout"
        )
        dropped = engine.connector.cleanup() if isinstance(engine.connector, Cleanup) else []
    except (ConfigError, CaptureError) as error:
        raise failed(str(error)) from None
    click.echo(f"dropped {', '.join(dropped)}" if dropped else "nothing to drop")
