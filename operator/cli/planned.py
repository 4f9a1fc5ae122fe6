"""Subcommands whose engines are not built yet: they say so and exit non-zero.

They exist so ``cdcflow --help`` shows the whole tool; each names what it will do.
"""

from __future__ import annotations

import click


def _planned(name: str, summary: str) -> click.Command:
    @click.command(name=name, help=f"{summary} (not available in this version).")
    @click.argument("args", nargs=-1)
    def command(args: tuple[str, ...]) -> None:
        raise click.UsageError(f"`cdcflow {name}` is not available in this version yet: {summary}")

    return command


sink = _planned("sink", "run a CdcSink YAML as a local Spark job applying changes to Delta")
