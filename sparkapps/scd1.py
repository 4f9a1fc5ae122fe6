"""SCD type 1: keep each target row equal to its source row's latest state, with MERGE.

Per table and micro-batch:

1. A truncate at position T (the greatest in the batch) deletes the rows written before T and
   then records T as the table's floor; events before the floor are dropped.
2. Placeholders (unchanged TOAST values) are filled from the key's earlier change in the batch;
   those of a primary-key change's create from the old key's row (its earlier change in the
   batch, the target row, or the *moved rows*: the values of rows whose key changed, kept
   beside the target from their delete until their create is applied, which may come in a
   later micro-batch).
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
from cdcflow.sparkapps.decoding import OLD_KEY, OP, POSITION, SOURCE_TS
from cdcflow.sparkapps.planning import TableWork
from cdcflow.sparkapps.tables import DeltaTarget, Tombstones, assigned, key_condition, ref
from cdcflow.sparkapps.transforms import KNOWN_AT

META_COLUMNS: tuple[st.StructField, ...] = (
    st.StructField(OP, st.StringType(), True),
    st.StructField(POSITION, st.StringType(), True),
    st.StructField(SOURCE_TS, st.TimestampType(), True),
)
"""What SCD1 rows carry besides the source columns: the last op, its position and time."""


def apply(work: TableWork, target: DeltaTarget, tombstones: Tombstones, moved: DeltaTarget) -> None:
    """Apply one table's changes of a micro-batch (see the module docstring)."""
    target.ensure_columns([*work.columns, *META_COLUMNS])
    floor = target.floor()
    truncated_at = work.facts.truncated_at
    if truncated_at is not None and (floor is None or truncated_at > floor):
        target.truncate_before(truncated_at)
        floor = truncated_at
    if work.facts.row_changes == 0 or not work.keys:
        return  # without a key, row changes were dead letters already
    # work.changes is persisted: reading ``rows`` again only repeats cheap transforms.
    rows = filled_changes(work, floor, target, moved)
    if work.facts.key_moves and work.unavailable:
        keep_moved(moved, rows, work, target)
    latest = latest_changes(rows, work, tombstones).persist()
    try:
        merge(target, latest, work)
        if work.facts.deletes:
            key_types = [c for c in work.columns if c.name in work.keys]
            tombstones.record(latest, key_types)
    finally:
        latest.unpersist()
    if work.facts.key_arrivals and moved.schema() is not None:
        forget_moved(moved, work)


def filled_changes(
    work: TableWork, floor: str | None, target: DeltaTarget, moved: DeltaTarget
) -> DataFrame:
    """Steps 1-2: the row changes after the floor, placeholders filled where possible."""
    rows = transforms.row_changes(work.changes, after=floor)
    if not work.facts.placeholders:
        return rows
    rows = transforms.fill_unavailable(rows, work.keys, work.unavailable)
    if work.facts.moved_placeholders:
        earlier = _earlier_rows(target, moved, work)
        rows = transforms.fill_from_old_keys(rows, work.keys, work.unavailable, earlier=earlier)
    return rows


def latest_changes(rows: DataFrame, work: TableWork, tombstones: Tombstones) -> DataFrame:
    """Step 3: the change to apply per key (decoding gave it the target's column types)."""
    columns = [c.name for c in work.columns]
    rows = rows.select(*columns, OP, POSITION, SOURCE_TS, *transforms.ORDER_COLUMNS)
    latest = transforms.latest_per_key(rows, work.keys)
    return tombstones.newer(latest).select(*columns, OP, POSITION, SOURCE_TS)


def keep_moved(moved: DeltaTarget, rows: DataFrame, work: TableWork, target: DeltaTarget) -> None:
    """Keep the values of the rows whose key changes in this batch, before MERGE deletes them."""
    kept = transforms.moved_rows(
        rows, work.keys, work.unavailable, earlier=_earlier_rows(target, None, work)
    )
    names = {name for name, _ in work.unavailable}
    moved.ensure_columns(
        [
            *[c for c in work.columns if c.name in work.keys],
            st.StructField(KNOWN_AT, st.StringType(), True),
            *[c for c in work.columns if c.name in names],
        ]
    )
    (
        moved.table()
        .alias("t")
        .merge(kept.alias("s"), key_condition(work.keys))
        .whenMatchedUpdateAll(condition=ref("s", KNOWN_AT) > ref("t", KNOWN_AT))
        .whenNotMatchedInsertAll()
        .execute()
    )


def forget_moved(moved: DeltaTarget, work: TableWork) -> None:
    """Drop the moved rows whose new key's create this batch applied."""
    arrived = (
        transforms.row_changes(work.changes)
        .where(sf.col(OLD_KEY).isNotNull())
        .select(*[sf.col(OLD_KEY)[key].alias(key) for key in work.keys])
        .distinct()
    )
    moved.table().alias("t").merge(
        arrived.alias("s"), key_condition(work.keys)
    ).whenMatchedDelete().execute()


def _earlier_rows(target: DeltaTarget, moved: DeltaTarget | None, work: TableWork) -> DataFrame:
    """What the target (and the moved rows) held before this batch, for the placeholders."""
    names = [name for name, _ in work.unavailable]
    earlier = target.table().toDF().select(*work.keys, sf.col(POSITION).alias(KNOWN_AT), *names)
    schema = moved.schema() if moved is not None else None
    if moved is None or schema is None:
        return earlier
    kept = moved.table().toDF()
    present = set(schema.fieldNames())
    values = [
        sf.col(c.name) if c.name in present else sf.lit(None).cast(c.dataType).alias(c.name)
        for c in work.columns
        if c.name in names
    ]
    return earlier.unionByName(kept.select(*work.keys, KNOWN_AT, *values))


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
