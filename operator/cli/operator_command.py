"""``cdcflow operator``: run the Kubernetes operator (kopf) for the cdcflow.io kinds."""

from __future__ import annotations

import logging
import secrets

import click

PRIORITY_RANGE = 2**31 - 2
PEERING_NAME = "default"
"""The ClusterKopfPeering object the replicas coordinate through (manifests' HA overlay)."""


class RetriedRequests(logging.Filter):
    """kopf logs every API request it will retry at ERROR, such as the API server's ``429
    storage is (re)initializing`` while it starts: a retry is not an error yet. Those lines go
    out as warnings (429s, which tell to come back later, as info); the attempt that gives up
    stays an error."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno == logging.ERROR and "failed; will retry" in str(record.msg):
            level = logging.INFO if "TooManyRequests" in str(record.msg) else logging.WARNING
            record.levelno, record.levelname = level, logging.getLevelName(level)
        return True


@click.command()
@click.option(
    "-n",
    "--namespace",
    "namespaces",
    multiple=True,
    help="Namespace to watch (repeatable). Default: all namespaces.",
)
@click.option(
    "--standalone/--peering",
    default=True,
    show_default=True,
    help="Run alone, or coordinate with other replicas through kopf peering (HA).",
)
@click.option(
    "--priority",
    type=int,
    default=None,
    help="Peering priority of this replica; the highest live one is active. Default with "
    "--peering: a random one, so that replicas of one Deployment never tie (kopf pauses all "
    "replicas of equal priority).",
)
@click.option("--log-level", default="INFO", show_default=True, help="Python logging level.")
@click.option(
    "--log-format",
    type=click.Choice(["json", "plain"]),
    default="json",
    show_default=True,
    help="JSON lines for log collectors, or plain text.",
)
@click.option(
    "--liveness",
    default="http://0.0.0.0:8081/healthz",
    show_default=True,
    help="Liveness endpoint served by kopf.",
)
def operator(
    namespaces: tuple[str, ...],
    standalone: bool,
    priority: int | None,
    log_level: str,
    log_format: str,
    liveness: str,
) -> None:
    """Reconcile CdcConnector, CdcSnapshotSignal and CdcSink resources."""
    import kopf

    import cdcflow.operator.handlers  # noqa: F401 - registers the handlers

    kopf.configure(
        log_format=kopf.LogFormat.JSON if log_format == "json" else kopf.LogFormat.PLAIN,
        verbose=log_level.upper() == "DEBUG",
    )
    logging.getLogger().setLevel(log_level.upper())
    for handler in logging.getLogger().handlers:
        handler.addFilter(RetriedRequests())
    if priority is None:
        priority = 0 if standalone else secrets.randbelow(PRIORITY_RANGE) + 1
        if not standalone:
            logging.getLogger(__name__).info("peering priority of this replica: %d", priority)
    kopf.run(
        standalone=standalone,
        # A named peering is mandatory: a starting replica stays paused until it has seen the
        # other replicas, so it never writes alongside the active one, even for a moment.
        peering_name=None if standalone else PEERING_NAME,
        priority=priority,
        namespaces=namespaces,
        clusterwide=not namespaces,
        liveness_endpoint=liveness,
    )
