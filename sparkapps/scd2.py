"""SCD type 2: every version of every row, as history rows bounded by source positions.

A history row holds the source columns of one version plus:

* ``_cdc_valid_from`` / ``_cdc_valid_from_ts``: position and source time of the change that
  made this version (c, u or r, recorded in ``_cdc_op``);
* ``_cdc_valid_to`` / ``_cdc_valid_to_ts``: those of the change that ended it (the key's next
  change, its delete, or a truncate), null while it is current;
* ``_cdc_is_current``: whether this is the key's live version.

Per table and micro-batch: a truncate closes every current version written before it (the
events before it in the batch are applied first). The key's events newer than anything its
history has seen become new versions, each closed by the next; the key's previous current
version is closed by the first of them. Closing and inserting happen in **one** MERGE, so a
history is never half-updated, and the "seen" guard (the greatest position in the key's
history) makes a replayed batch a no-op. Events are expected in source order per key (Kafka
keeps a key's events in one partition): an event older than the key's
history is a replay and is dropped, never inserted into the middle of it.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as sf
from pyspark.sql import types as st

from cdcflow.sparkapps import transforms
from cdcflow.sparkapps.decoding import OLD_KEY, OP, POSITION, SOURCE_TS
from cdcflow.sparkapps.planning import TableWork
from cdcflow.sparkapps.tables import DeltaTarget, assigned, key_condition, ref
from cdcflow.sparkapps.transforms import (
    IS_CURRENT,
    KNOWN_AT,
    ORDER_COLUMNS,
    VALID_FROM,
    VALID_FROM_TS,
    VALID_TO,
    VALID_TO_TS,
)

META_COLUMNS: tuple[st.StructField, ...] = (
    st.StructField(OP, st.StringType(), True),
    st.StructField(VALID_FROM, st.StringType(), True),
    st.StructField(VALID_TO, st.StringType(), True),
    st.StructField(VALID_FROM_TS, st.TimestampType(), True),
    st.StructField(VALID_TO_TS, st.TimestampType(), True),
    st.StructField(IS_CURRENT, st.BooleanType(), True),
)
_ACTION = "_cdc_action"
_SEEN = "_cdc_seen"
_PREVIOUS = "_cdc_previous"


def apply(work: TableWork, target: DeltaTarget) -> None:
    """Apply one table's changes of a micro-batch as history (see the module docstring).

    Truncates split the batch: the events before a truncate are applied, the truncate closes
    every current version, then the events after it follow.
    """
    target.ensure_columns([*work.columns, *META_COLUMNS])
    floor = target.floor()
    for position, ts_ms in work.facts.truncates:
        if floor is not None and position <= floor:
            continue
        _apply_events(work, target, after=floor, before=position)
        close_all_before(target, position, ts_ms)
        target.record_floor(position)
        floor = position
    _apply_events(work, target, after=floor, before=None)


def _apply_events(
    work: TableWork, target: DeltaTarget, *, after: str | None, before: str | None
) -> None:
    if work.facts.row_changes == 0:
        return
    events = new_events(work, target, after=after, before=before).persist()
    try:
        merge(target, events, work)
    finally:
        events.unpersist()


def close_all_before(target: DeltaTarget, position: str, ts_ms: int | None) -> None:
    """End every current version written before a truncate at ``position``."""
    ended = sf.timestamp_millis(sf.lit(ts_ms)) if ts_ms is not None else sf.lit(None)
    target.table().update(
        condition=sf.col(IS_CURRENT) & (sf.col(VALID_FROM) < sf.lit(position)),
        set={VALID_TO: sf.lit(position), VALID_TO_TS: ended, IS_CURRENT: sf.lit(False)},
    )


def new_events(
    work: TableWork, target: DeltaTarget, *, after: str | None, before: str | None
) -> DataFrame:
    """The batch's events between two positions and newer than each key's history.

    Placeholders are filled from the key's previous event or its current version; those of a
    primary-key change's create from the old key's history (which outlives its delete).
    """
    names = [c.name for c in work.columns]
    events = transforms.row_changes(work.changes, after=after)
    if before is not None:
        events = events.where(sf.col(POSITION) < sf.lit(before))
    events = events.select(*names, OP, POSITION, SOURCE_TS, OLD_KEY, *ORDER_COLUMNS)
    if work.facts.placeholders:
        events = transforms.fill_unavailable(events, work.keys, work.unavailable)
    if work.facts.moved_placeholders:
        history = (
            target.table()
            .toDF()
            .select(
                *work.keys, sf.col(VALID_FROM).alias(KNOWN_AT), *[n for n, _ in work.unavailable]
            )
        )
        events = transforms.fill_from_old_keys(events, work.keys, work.unavailable, earlier=history)
    seen = last_seen(target, events, work)
    events = events.join(seen, list(work.keys), "left").where(
        sf.col(_SEEN).isNull() | (sf.col(POSITION) > sf.col(_SEEN))
    )
    for name, literal in work.unavailable if work.facts.placeholders else ():
        previous = sf.col(_PREVIOUS)[name]
        still = sf.col(name).eqNullSafe(literal) & sf.col(_PREVIOUS).isNotNull()
        events = events.withColumn(name, sf.when(still, previous).otherwise(sf.col(name)))
    return events.drop(_SEEN, _PREVIOUS, OLD_KEY)


def last_seen(target: DeltaTarget, events: DataFrame, work: TableWork) -> DataFrame:
    """Per key of the batch: the greatest position in its history and its current values."""
    keys = list(work.keys)
    history = target.table().toDF().join(events.select(*keys).distinct(), keys, "left_semi")
    ended = sf.coalesce(sf.col(VALID_TO), sf.col(VALID_FROM))
    current = sf.struct(*[sf.col(name) for name, _ in work.unavailable] or [sf.lit(None)])
    return history.groupBy(*keys).agg(
        sf.max(sf.greatest(sf.col(VALID_FROM), ended)).alias(_SEEN),
        sf.max_by(sf.when(sf.col(IS_CURRENT), current), sf.col(VALID_FROM)).alias(_PREVIOUS),
    )


def merge(target: DeltaTarget, events: DataFrame, work: TableWork) -> None:
    """Close each key's current version and insert the new ones, in one MERGE."""
    names = [c.name for c in work.columns]
    rows = transforms.versions(events, work.keys).select(
        *names, OP, VALID_FROM, VALID_TO, VALID_FROM_TS, VALID_TO_TS, IS_CURRENT
    )
    firsts = transforms.first_per_key(events, work.keys).select(
        *work.keys,
        sf.col(POSITION).alias(VALID_FROM),
        sf.col(SOURCE_TS).alias(VALID_FROM_TS),
    )
    staged = rows.withColumn(_ACTION, sf.lit("insert")).unionByName(
        firsts.withColumn(_ACTION, sf.lit("close")), allowMissingColumns=True
    )
    closing = key_condition(work.keys) & ref("t", IS_CURRENT) & (ref("s", _ACTION) == "close")
    inserted = [*names, OP, VALID_FROM, VALID_TO, VALID_FROM_TS, VALID_TO_TS, IS_CURRENT]
    (
        target.table()
        .alias("t")
        .merge(staged.alias("s"), closing)
        .whenMatchedUpdate(
            condition=ref("t", VALID_FROM) < ref("s", VALID_FROM),
            set={
                VALID_TO: ref("s", VALID_FROM),
                VALID_TO_TS: ref("s", VALID_FROM_TS),
                IS_CURRENT: sf.lit(False),
            },
        )
        .whenNotMatchedInsert(
            condition=ref("s", _ACTION) == "insert",
            values={assigned(n): ref("s", n) for n in inserted},
        )
        .execute()
    )
