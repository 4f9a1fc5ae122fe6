"""SCD type 1: keep each target row equal to its source row's latest state, with MERGE.

Per table and micro-batch:

1. A truncate at position T (the greatest in the batch) deletes the rows written before T and
   then records T as the table's floor; events before the floor are dropped.
2. Placeholders (unchanged TOAST values) are filled from the key's earlier change in the batch.
3. The latest change per key is kept, minus changes at or before a recorded delete of the key.
4. ``MERGE``: a newer delete deletes, a newer change updates (a column still holding the
   placeholder keeps the target's value), an unknown key is inserted. *Newer* means a greater
   ``_cdc_position`` than the row's: replays and stale events never move a row backwards.
5. Deletes are recorded as tombstones.

Each step is idempotent, so a micro-batch that is run again after a crash (at any point)
leaves the same table.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as sf
from pyspark.sql import types as st

from cdcflow.sparkapps import transforms
from cdcflow.sparkapps.decoding import OP, POSITION, SOURCE_TS
from cdcflow.sparkapps.planning import TableWork
from cdcflow.sparkapps.tables import DeltaTarget, Tombstones, assigned, key_condition, ref

META_COLUMNS: tuple[st.StructField, ...] = (
    st.StructField(OP, st.StringType(), True),
    st.StructField(POSITION, st.StringType(), True),
    st.StructField(SOURCE_TS, st.TimestampType(), True),
)
"""What SCD1 rows carry besides the source columns: the last op, its position and time."""


def apply(work: TableWork, target: DeltaTarget, tombstones: Tombstones) -> None:
    """Apply one table's changes of a micro-batch (see the module docstring)."""
    target.ensure_columns([*work.columns, *META_COLUMNS])
    floor = target.floor()
    truncated_at = work.facts.truncated_at
    if truncated_at is not None and (floor is None or truncated_at > floor):
        target.truncate_before(truncated_at)
        floor = truncated_at
    if work.facts.row_changes == 0 or not work.keys:
        return  # without a key, row changes were dead letters already
    latest = latest_changes(work, floor, tombstones).persist()
    try:
        merge(target, latest, work)
        if work.facts.deletes:
            key_types = [c for c in work.columns if c.name in work.keys]
            tombstones.record(latest, key_types)
    finally:
        latest.unpersist()


def latest_changes(work: TableWork, floor: str | None, tombstones: Tombstones) -> DataFrame:
    """Steps 1-3: the change to apply per key (decoding gave it the target's column types)."""
    rows = transforms.row_changes(work.changes, after=floor)
    if work.facts.placeholders:
        rows = transforms.fill_unavailable(rows, work.keys, work.unavailable)
    columns = [c.name for c in work.columns]
    rows = rows.select(*columns, OP, POSITION, SOURCE_TS, *transforms.ORDER_COLUMNS)
    latest = transforms.latest_per_key(rows, work.keys)
    return tombstones.newer(latest).select(*columns, OP, POSITION, SOURCE_TS)


def merge(target: DeltaTarget, latest: DataFrame, work: TableWork) -> None:
    """Step 4: the guarded MERGE of the latest change per key."""
    newer = ref("s", POSITION) > ref("t", POSITION)
    names = [c.name for c in work.columns]
    values = [*[n for n in names if n not in work.keys], OP, POSITION, SOURCE_TS]
    placeholders = dict(work.unavailable)
    updates: dict[str, str | Column] = {
        assigned(n): _kept_if_unavailable(n, placeholders.get(n)) for n in values
    }
    inserts: dict[str, str | Column] = {
        assigned(n): ref("s", n) for n in [*names, OP, POSITION, SOURCE_TS]
    }
    (
        target.table()
        .alias("t")
        .merge(latest.alias("s"), key_condition(work.keys))
        .whenMatchedDelete(condition=(ref("s", OP) == "d") & newer)
        .whenMatchedUpdate(condition=newer, set=updates)
        .whenNotMatchedInsert(condition=ref("s", OP) != "d", values=inserts)
        .execute()
    )


def _kept_if_unavailable(name: str, placeholder: Column | None) -> Column:
    if placeholder is None:
        return ref("s", name)
    return sf.when(ref("s", name).eqNullSafe(placeholder), ref("t", name)).otherwise(ref("s", name))
