"""The CdcSink job: Kafka change topics to lakehouse tables with Spark Structured Streaming.

    python -m cdcflow.sparkapps.sink sink.yaml

is the job's entry point, in a SparkApplication (under ``spark-submit``, which starts the JVM
with the image's jars) and locally (Spark local mode, jars from the cdcflow cache, see
:mod:`cdcflow.sparkapps.session`); ``cdcflow sink -f sink.yaml`` runs the same :func:`run`.

The query reads the topics with Spark's Kafka source and hands each micro-batch to
:class:`~cdcflow.sparkapps.batches.BatchApplier`. Exactly-once: the checkpoint records the
Kafka offsets of a batch before it runs and marks it committed after; a batch that was not
committed runs again with the same offsets, and the appliers make a second run harmless.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path

from pyspark.errors import StreamingQueryException
from pyspark.sql import SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from cdcflow.sparkapps import session
from cdcflow.sparkapps.batches import BatchApplier, BatchReport
from cdcflow.sparkapps.config import CdcSink, SinkConfigError, load_sink

log = logging.getLogger(__name__)
#: Session settings the job needs wherever it runs (static ones only apply to a new JVM).
JOB_CONF = {
    "spark.sql.extensions": session.DELTA_EXTENSION,
    "spark.sql.catalog.spark_catalog": session.DELTA_CATALOG,
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.streaming.stopGracefullyOnShutdown": "true",
    # The MERGE source is a persisted DataFrame of a fixed Kafka offset range: deterministic,
    # so Delta need not copy it again before merging.
    "spark.databricks.delta.merge.materializeSource": "none",
}


class SinkJobError(RuntimeError):
    """The streaming query stopped with an error; the message is the cause's."""


def start(
    spark: SparkSession,
    sink: CdcSink,
    *,
    available_now: bool | None = None,
    on_batch: Callable[[BatchReport], None] | None = None,
) -> tuple[StreamingQuery, BatchApplier]:
    """Start the streaming query for ``sink``; ``available_now`` overrides spec.trigger."""
    spec = sink.spec
    kafka = spec.kafka
    option, topics = sink.subscription()
    reader = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", sink.bootstrap_servers())
        .option(option, topics)
        .option("startingOffsets", spec.starting_offsets)
        .option("maxOffsetsPerTrigger", str(kafka.max_offsets_per_trigger if kafka else 100_000))
        .option("includeHeaders", "true")  # the key-change headers link old and new keys
    )
    options = dict(kafka.options) if kafka is not None else {}
    # One Kafka partition would be one task: split offset ranges so every core decodes.
    options.setdefault("minPartitions", str(spark.sparkContext.defaultParallelism))
    # Records of an aborted or open Kafka transaction (exactly-once connectors) never apply
    options.setdefault("kafka.isolation.level", "read_committed")
    reader = reader.options(**options)
    applier = BatchApplier(spark, sink, on_batch=on_batch)
    writer = (
        reader.load()
        .writeStream.queryName(f"cdcflow-sink-{sink.metadata.name}")
        .option("checkpointLocation", sink.checkpoint_location)
        .foreachBatch(applier)
    )
    once = spec.trigger.available_now if available_now is None else available_now
    writer = (
        writer.trigger(availableNow=True)
        if once
        else writer.trigger(processingTime=spec.trigger.interval)
    )
    return writer.start(), applier


def run(
    spark: SparkSession,
    sink: CdcSink,
    *,
    available_now: bool | None = None,
    on_batch: Callable[[BatchReport], None] | None = None,
) -> None:
    """Run the job until it finishes (availableNow), fails, or is interrupted.

    Raises the batch's own exception (a bad record with onError fail, for instance) when
    one stopped the query, rather than Spark's wrapper around it.
    """
    if sink.spec.state == "suspended":
        log.warning("CdcSink %s is suspended (spec.state); not starting", sink.metadata.name)
        return
    query, applier = start(spark, sink, available_now=available_now, on_batch=on_batch)
    try:
        query.awaitTermination()
    except StreamingQueryException as error:
        if applier.failure is not None:
            raise applier.failure from error
        raise SinkJobError(f"the streaming query failed: {error}") from error
    except KeyboardInterrupt:
        log.warning("interrupted: stopping the query after the current micro-batch")
        query.stop()


def spark_session(sink: CdcSink, *, master: str | None = None) -> SparkSession:
    """The session for the job: spark-submit's when running under it, else a local one."""
    conf = {**JOB_CONF, **sink.spec.spark.conf}
    if "PYSPARK_GATEWAY_PORT" in os.environ:
        builder = SparkSession.builder.appName(f"cdcflow-sink-{sink.metadata.name}")
        for key, value in conf.items():
            builder = builder.config(key, value)
        return builder.getOrCreate()
    return session.build_session(
        app_name=f"cdcflow-sink-{sink.metadata.name}",
        master=master or f"local[{max(sink.spec.spark.driver.cores, 2)}]",
        extra_conf=conf,
        driver_memory=sink.spec.spark.driver.memory,
    )


def main(argv: list[str] | None = None) -> int:
    """``python -m cdcflow.sparkapps.sink <config.yaml>``: run the CdcSink in the file."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m cdcflow.sparkapps.sink <cdcsink.yaml>", file=sys.stderr)
        return 2
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    logging.getLogger("py4j").setLevel(logging.WARNING)
    try:
        sink = load_sink(Path(args[0]))
        run(spark_session(sink), sink)
    except SinkConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except Exception as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
