"""The Spark apps' commands: ``cdcflow sink`` runs a CdcSink YAML as a local Spark job applying
change topics to tables.

The job is exactly the one a SparkApplication runs (``python -m cdcflow.sparkapps.sink``),
started here in Spark local mode. pyspark is imported only when the command runs, so the rest
of the CLI does not pay for it (and a base install without the ``spark`` extra still lists it).
The top-level ``cdcflow`` group mounts :data:`commands`.
"""

from __future__ import annotations

import logging
from pathlib import Path

import click


@click.command()
@click.option(
    "-f",
    "--file",
    "path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    required=True,
    help="CdcSink YAML: the same file `kubectl apply -f` takes.",
)
@click.option(
    "--available-now",
    is_flag=True,
    help="Apply what the topics hold now, then exit (overrides spec.trigger).",
)
@click.option(
    "--master",
    default=None,
    help="Spark master URL. Default: local[N], N = spec.spark.driver.cores (at least 2).",
)
@click.option("--log-level", default="INFO", show_default=True, help="Python logging level.")
def sink(path: Path, available_now: bool, master: str | None, log_level: str) -> None:
    """Apply a connector's change topics to Delta Lake (or Parquet) tables with Spark.

    Runs until interrupted (Ctrl-C stops after the current micro-batch), or until the topics'
    backlog is applied with --available-now or spec.trigger.availableNow. Progress is kept in
    spec.checkpointLocation: the next run resumes where this one stopped, with no change lost
    or applied twice.
    """
    logging.basicConfig(
        level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    logging.getLogger("py4j").setLevel(logging.WARNING)
    from cdcflow.sparkapps import config, deadletters
    from cdcflow.sparkapps import sink as job

    try:
        resource = config.load_sink(path)
        resource.bootstrap_servers()
    except config.SinkConfigError as error:
        raise click.ClickException(str(error)) from None
    spark = job.spark_session(resource, master=master)
    try:
        job.run(spark, resource, available_now=True if available_now else None)
    except (deadletters.BadRecordsError, job.SinkJobError) as error:
        raise click.ClickException(str(error)) from None
    finally:
        spark.stop()


commands: list[click.Command] = [sink]
"""The commands the Spark apps add to ``cdcflow``."""
