"""The Parquet changelog target: every change event appended as a row, nothing merged.

A row holds the table's columns (the ``after`` image; ``before`` for deletes; nulls for
truncates) and ``_cdc_op``, ``_cdc_position``, ``_cdc_source_ts`` and the Kafka topic,
partition and offset. Rows are written to ``<path>/<table>/_cdc_batch=<id>/``, replacing that
one partition: a micro-batch that runs again after a crash rewrites its own files instead of
appending them twice, so the changelog holds every change exactly once. Readers order by
``_cdc_position`` (then ``_cdc_partition``/``_cdc_offset``) to replay it.
"""

from __future__ import annotations

from pyspark.sql import functions as sf

from cdcflow.sparkapps.decoding import META_COLUMNS, PROBLEM
from cdcflow.sparkapps.planning import TableWork

BATCH = "_cdc_batch"


def append(work: TableWork, *, path: str, batch_id: int) -> None:
    """Write one table's good change rows of micro-batch ``batch_id`` to the changelog."""
    columns = [c.name for c in work.columns]
    rows = (
        work.changes.where(sf.col(PROBLEM).isNull())
        .select(*columns, *META_COLUMNS)
        .withColumn(BATCH, sf.lit(batch_id).cast("long"))
    )
    (
        rows.write.format("parquet")
        .mode("overwrite")
        .option("partitionOverwriteMode", "dynamic")
        .partitionBy(BATCH)
        .save(path)
    )
