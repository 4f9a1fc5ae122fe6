"""The ``cdcflow`` entry point: a click group mounting each package's commands.

The capture package brings ``capture``, ``offsets`` and ``cleanup``; the Spark apps bring
``sink``; the operator package adds its own ``operator``, ``crds`` and ``demo``, and
``version``. Every command imports what needs an extra only when it runs, so a base install
lists them all and a command missing its extra says which one to install.
"""

from __future__ import annotations

from importlib import metadata

import click

from cdcflow.capture.cli import commands as capture_commands
from cdcflow.operator.cli import crds, demo, operator_command
from cdcflow.operator.cli.extras import ExtrasGroup
from cdcflow.sparkapps.cli import commands as sparkapps_commands


@click.group(
    cls=ExtrasGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
def cli() -> None:
    """cdcflow: Debezium-compatible change data capture, from a database log to Kafka and Spark.

    Each subcommand takes the same YAML custom resources the Kubernetes operator reads, so a
    connector that works on a laptop works unchanged in a cluster.
    """


@cli.command()
def version() -> None:
    """Print the cdcflow version."""
    click.echo(f"cdcflow {metadata.version('cdcflow')}")


OPERATOR_COMMANDS: list[click.Command] = [demo.demo, crds.crds, operator_command.operator]
"""The operator package's own commands."""


def _mount(group: click.Group, commands: list[click.Command]) -> None:
    for command in commands:
        group.add_command(command)


_mount(cli, [*capture_commands, *OPERATOR_COMMANDS, *sparkapps_commands])


def main() -> None:
    """Console-script entry point."""
    cli()
