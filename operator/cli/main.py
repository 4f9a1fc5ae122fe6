"""The ``cdcflow`` entry point: a click group whose subcommands live in sibling modules."""

from __future__ import annotations

from importlib import metadata

import click

from cdcflow.operator.cli import (
    capture,
    cleanup,
    crds,
    demo,
    offsets,
    operator_command,
    sink,
)


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
def cli() -> None:
    """cdcflow: Debezium-compatible change data capture, from a database log to Kafka and Spark.

    Each subcommand takes the same YAML custom resources the Kubernetes operator reads, so a
    connector that works on a laptop works unchanged in a cluster.
    """


@cli.command()
def version() -> None:
    """Print the cdcflow version."""
    click.echo(f"cdcflow {metadata.version('cdcflow')}")


cli.add_command(capture.capture)
cli.add_command(offsets.offsets)
cli.add_command(demo.demo)
cli.add_command(crds.crds)
cli.add_command(cleanup.cleanup)
cli.add_command(operator_command.operator)
cli.add_command(sink.sink)


def main() -> None:
    """Console-script entry point."""
    cli()
