"""Records that cannot be applied: routed to a dead-letter Delta table, or failing the job.

A dead letter keeps where the record came from (topic, partition, offset), the raw key, the
value and the reason, plus the micro-batch that met it. ``value`` is the record's value as
received, except that for a record that parsed as a ``{"schema", "payload"}`` JSON object only
the payload is kept (the Connect schema is in every record of the topic anyway).

Writes are idempotent per micro-batch (Delta's ``txnAppId``/``txnVersion``), so a batch that
runs again after a crash does not record its dead letters twice.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as sf

from cdcflow.sparkapps.decoding import KEY, OFFSET, PARTITION, PAYLOAD, PROBLEM, TOPIC, VALUE

COLUMNS = ("topic", "partition", "offset", "key", "value", "reason")
SAMPLE_SIZE = 3


class BadRecordsError(RuntimeError):
    """Records cannot be applied and the sink is configured to fail on them."""


def letters(frame: DataFrame, *, value: Column, reason: Column) -> DataFrame:
    """``frame``'s records in the dead-letter shape."""
    return frame.select(
        sf.col(TOPIC).alias("topic"),
        sf.col(PARTITION).alias("partition"),
        sf.col(OFFSET).alias("offset"),
        sf.col(KEY).alias("key"),
        value.alias("value"),
        reason.alias("reason"),
    )


def from_records(records: DataFrame) -> DataFrame:
    """Records that are not JSON or not change events (decoding step 1)."""
    bad = records.where(sf.col(PROBLEM).isNotNull())
    return letters(bad, value=sf.col(VALUE), reason=sf.col(PROBLEM))


def from_changes(changes: DataFrame) -> DataFrame:
    """Change rows with a problem (schema mismatch, unknown op, no position; step 2)."""
    bad = changes.where(sf.col(PROBLEM).isNotNull())
    return letters(bad, value=sf.col(PAYLOAD), reason=sf.col(PROBLEM))


def rejected(records: DataFrame, reason: str) -> DataFrame:
    """Records rejected as a whole (their schema version clashes with the target)."""
    good = records.where(sf.col(PROBLEM).isNull())
    return letters(good, value=sf.col(PAYLOAD), reason=sf.lit(reason))


def union(frames: Sequence[DataFrame]) -> DataFrame | None:
    """All dead letters of a batch as one frame, or None when there are none."""
    if not frames:
        return None
    combined = frames[0]
    for frame in frames[1:]:
        combined = combined.unionByName(frame)
    return combined


def fail(letters_frame: DataFrame, *, count: int, batch_id: int) -> BadRecordsError:
    """The error for a batch with ``count`` bad records, naming the first few."""
    sample = letters_frame.orderBy("topic", "partition", "offset").limit(SAMPLE_SIZE).collect()
    described = "; ".join(
        f"{r['topic']} partition {r['partition']} offset {r['offset']}: {r['reason']}"
        for r in sample
    )
    return BadRecordsError(
        f"{count} record(s) in micro-batch {batch_id} cannot be applied ({described}). "
        "Nothing of this micro-batch was applied. Fix the producer, or set spec.deadLetter "
        "(path, onError: deadletter) to route such records to a dead-letter table."
    )


def write(letters_frame: DataFrame, *, path: str, batch_id: int, app_id: str) -> None:
    """Append a batch's dead letters to the Delta table at ``path``, once per batch."""
    (
        letters_frame.withColumn("batch_id", sf.lit(batch_id).cast("long"))
        .withColumn("recorded_at", sf.current_timestamp())
        .write.format("delta")
        .mode("append")
        .option("txnAppId", app_id)
        .option("txnVersion", batch_id)
        .save(path)
    )
