"""``cdcflow crds``: generate the CustomResourceDefinitions, or check them for drift."""

from __future__ import annotations

from pathlib import Path

import click

from cdcflow.operator.crd import files

_DIRECTORY = click.option(
    "-d",
    "--directory",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("crds"),
    show_default=True,
    help="Where the CRD YAML files live.",
)


@click.group()
def crds() -> None:
    """The CRDs of CdcConnector, CdcSnapshotSignal and CdcSink, generated from the models."""


@crds.command()
@_DIRECTORY
def generate(directory: Path) -> None:
    """Write the CRD YAML files (kubectl apply -f crds/)."""
    for path in files.write(directory):
        click.echo(f"wrote {path}")


@crds.command()
@_DIRECTORY
def check(directory: Path) -> None:
    """Fail when the committed files differ from what the models generate."""
    stale = files.drift(directory)
    if stale:
        raise click.ClickException(
            f"CRDs out of date: {', '.join(stale)}. Run `cdcflow crds generate`."
        )
    click.echo("CRDs are up to date")
