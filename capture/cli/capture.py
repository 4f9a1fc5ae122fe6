"""``cdcflow capture``: run a CdcConnector YAML as a local process (or inside the capture pod)."""

from __future__ import annotations

import contextlib
import logging
import signal
import sys
import threading
from pathlib import Path
from types import FrameType

import click

from cdcflow.capture.cli import progress
from cdcflow.capture.config import ConfigError
from cdcflow.capture.connector_resource import load_connector
from cdcflow.capture.errors import CaptureError

TERMINATION_LOG = Path("/dev/termination-log")
"""Where Kubernetes reads a container's termination message (``terminationMessagePath``)."""


def failed(message: str) -> click.ClickException:
    """The error that ends the run. In a pod it is also the container's termination message,
    so the operator shows it rather than the log's tail (``FallbackToLogsOnError``), which
    would start with the start-up banner."""
    if TERMINATION_LOG.exists():
        with contextlib.suppress(OSError):
            TERMINATION_LOG.write_text(message[:4096])
    return click.ClickException(message)


@click.command()
@click.option(
    "-f",
    "--file",
    "path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    required=True,
    help="CdcConnector YAML: the same file `kubectl apply -f` takes.",
)
@click.option(
    "--sink",
    type=click.Choice(["kafka", "stdout"]),
    default="kafka",
    show_default=True,
    help="Where events go: spec.kafka, or one JSON object per line on stdout for debugging.",
)
@click.option(
    "--credentials-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="YAML with `username:` and `password:`. Default: CDCFLOW_DATABASE_USER/_PASSWORD.",
)
@click.option(
    "--offsets-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="File offset store location (default: spec.offsets.path or ~/.cache/cdcflow/offsets).",
)
@click.option(
    "--status-port",
    type=int,
    default=8080,
    show_default=True,
    help="Port of /metrics, /healthz, /readyz and /status (0 picks a free port, -1 disables).",
)
@click.option("--log-level", default="INFO", show_default=True, help="Python logging level.")
def capture(
    path: Path,
    sink: str,
    credentials_file: Path | None,
    offsets_file: Path | None,
    status_port: int,
    log_level: str,
) -> None:
    """Snapshot and stream a database's changes to Kafka as Debezium-compatible events.

    Stops cleanly on Ctrl-C or SIGTERM: records in flight are flushed and the offset saved, so
    the next start resumes exactly where this one stopped.
    """
    logging.basicConfig(
        level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    from cdcflow.capture.assembly import build_engine
    from cdcflow.capture.credentials import Login
    from cdcflow.capture.status_server import StatusServer

    try:
        resource = load_connector(path)
        engine = build_engine(
            resource,
            login=Login.from_environment(credentials_file),
            sink="stdout" if sink == "stdout" else "kafka",
            offsets_path=offsets_file,
        )
    except (ConfigError, CaptureError) as error:
        raise failed(str(error)) from None
    _stop_on_signals(engine.stop)
    server = (
        StatusServer(engine.stats, port=status_port, send_signal=engine.send_signal)
        if status_port >= 0
        else None
    )
    reporter = progress.start(engine.stats, engine.stop, tty=sys.stderr.isatty())
    try:
        engine.run()
    except CaptureError as error:
        engine.stats.phase = "failed"
        engine.stats.last_error = str(error)
        raise failed(str(error)) from None
    finally:
        reporter.join(timeout=2)
        if server is not None:
            server.close()


def _stop_on_signals(stop: threading.Event) -> None:
    def handler(signum: int, _frame: FrameType | None) -> None:
        logging.getLogger("cdcflow").info("%s received: stopping", signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
