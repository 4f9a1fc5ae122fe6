"""Pure per-batch transforms of change rows (DataFrame in, DataFrame out, no I/O).

Change rows are what :func:`cdcflow.sparkapps.decoding.changes` produces: the table's
columns plus ``_cdc_op``, ``_cdc_position`` and the Kafka coordinates. Within one key, the
order is the source position, then the Kafka partition and offset (a replayed event has the
same position as the original, so either copy may win: they are equal).
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as sf
from pyspark.sql import types as st

from cdcflow.sparkapps.decoding import (
    KEY_MOVED,
    OFFSET,
    OLD_KEY,
    OP,
    PARTITION,
    POSITION,
    PROBLEM,
    ROW_OPS,
    SOURCE_TS,
)

VALID_FROM = "_cdc_valid_from"
VALID_TO = "_cdc_valid_to"
VALID_FROM_TS = "_cdc_valid_from_ts"
VALID_TO_TS = "_cdc_valid_to_ts"
IS_CURRENT = "_cdc_is_current"
ORDER_COLUMNS = (PARTITION, OFFSET)
"""Kafka coordinates that break ties between equal positions (replays)."""
KNOWN_AT = "_cdc_known_at"
"""The position of a row whose values :func:`fill_from_old_keys` may take."""
_ORDER = (POSITION, *ORDER_COLUMNS)
_MOVED_AT = "_cdc_moved_at"
_FOUND = "_cdc_found_"


def row_changes(changes: DataFrame, *, after: str | None = None) -> DataFrame:
    """The good row events (c, u, d, r), only those after position ``after`` when given."""
    rows = changes.where(sf.col(PROBLEM).isNull() & sf.col(OP).isin(*ROW_OPS))
    return rows if after is None else rows.where(sf.col(POSITION) > sf.lit(after))


def latest_per_key(changes: DataFrame, keys: Sequence[str]) -> DataFrame:
    """The last change of every key (an aggregation, so no sort of the whole batch)."""
    others = [c for c in changes.columns if c not in keys]
    order = sf.struct(*[sf.col(c) for c in _ORDER])
    latest = sf.max_by(sf.struct(*[sf.col(c) for c in others]), order).alias("_latest")
    return (
        changes.groupBy(*keys).agg(latest).select(*keys, *[sf.col(f"_latest.{c}") for c in others])
    )


def placeholder_value(data_type: st.DataType, placeholder: str) -> Column | None:
    """The placeholder as a literal of a column's type; None for types that cannot hold it."""
    if isinstance(data_type, st.StringType):
        return sf.lit(placeholder)
    if isinstance(data_type, st.BinaryType):
        return sf.lit(bytearray(placeholder.encode()))
    return None


def unavailable_columns(
    columns: Sequence[st.StructField], placeholder: str
) -> list[tuple[str, Column]]:
    """``(name, placeholder literal)`` of the columns that may carry the placeholder."""
    found = []
    for column in columns:
        literal = placeholder_value(column.dataType, placeholder)
        if literal is not None:
            found.append((column.name, literal))
    return found


def has_placeholder(columns: Sequence[tuple[str, Column]]) -> Column:
    """True where any of ``columns`` holds the placeholder."""
    condition = sf.lit(False)
    for name, literal in columns:
        condition = condition | sf.coalesce(sf.col(name) == literal, sf.lit(False))
    return condition


def fill_unavailable(
    changes: DataFrame, keys: Sequence[str], columns: Sequence[tuple[str, Column]]
) -> DataFrame:
    """Replace placeholders with the key's latest earlier value in the same batch.

    A delete or insert in between resets the chain (their images are complete), so a
    placeholder is only ever filled from the row it describes. Placeholders with no earlier
    value in the batch stay; the MERGE then keeps the target's value.
    """
    if not columns:
        return changes
    window = (
        Window.partitionBy(*keys)
        .orderBy(*[sf.col(c) for c in _ORDER])
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    filled = changes
    for name, literal in columns:
        known = sf.when(~sf.col(name).eqNullSafe(literal), sf.struct(sf.col(name).alias("v")))
        carried = sf.last(known, ignorenulls=True).over(window)
        filled = filled.withColumn(
            name, sf.when(carried.isNotNull(), carried["v"]).otherwise(sf.col(name))
        )
    return filled


def fill_from_old_keys(
    changes: DataFrame,
    keys: Sequence[str],
    columns: Sequence[tuple[str, Column]],
    *,
    earlier: DataFrame | None,
) -> DataFrame:
    """Fill the placeholders of a primary-key change's create from the old key's row.

    Under REPLICA IDENTITY DEFAULT a key change that leaves a TOASTed value untouched sends
    the placeholder in the new key's create: the value is the old key's, which no event of
    the new key holds. Each such placeholder takes the old key's latest value before the
    create that is not the placeholder: from the batch's own changes (already filled within
    their key), else from ``earlier`` — rows ``(keys…, _cdc_known_at, columns…)`` the target
    held before the batch. A value found nowhere stays the placeholder.
    """
    if not columns:
        return changes
    wanted = changes.where(sf.col(OLD_KEY).isNotNull() & has_placeholder(columns)).select(
        *[sf.col(OLD_KEY)[key].alias(key) for key in keys],
        sf.col(POSITION).alias(_MOVED_AT),
        *ORDER_COLUMNS,
    )
    found = values_before(wanted, known_values(changes, keys, columns, earlier), keys, columns)
    filled = changes.join(found, list(ORDER_COLUMNS), "left")
    for name, literal in columns:
        value = sf.col(_FOUND + name)
        still = sf.col(name).eqNullSafe(literal) & value.isNotNull()
        filled = filled.withColumn(name, sf.when(still, value["v"]).otherwise(sf.col(name)))
    return filled.drop(*[_FOUND + name for name, _ in columns])


def moved_rows(
    changes: DataFrame,
    keys: Sequence[str],
    columns: Sequence[tuple[str, Column]],
    *,
    earlier: DataFrame | None,
) -> DataFrame:
    """The values of rows whose key changed, as of their key-change delete.

    Rows ``(keys…, _cdc_known_at, columns…)`` for :func:`fill_from_old_keys` in a later
    batch, where the new key's create may land when the delete ended this one (SCD1 target
    rows do not outlive their delete). A value found nowhere is the placeholder; a row with
    no value found is left out.
    """
    wanted = changes.where(sf.col(KEY_MOVED)).select(
        *keys, sf.col(POSITION).alias(_MOVED_AT), *ORDER_COLUMNS
    )
    found = values_before(wanted, known_values(changes, keys, columns, earlier), keys, columns)
    moved = wanted.join(found, list(ORDER_COLUMNS))
    values = [
        sf.coalesce(sf.col(_FOUND + name)["v"], literal).alias(name) for name, literal in columns
    ]
    found_at = [sf.col(_FOUND + name)["at"] for name, _ in columns]
    known_at = sf.greatest(*found_at) if len(found_at) > 1 else found_at[0]
    rows = moved.select(*keys, known_at.alias(KNOWN_AT), *values)
    names = [KNOWN_AT, *(name for name, _ in columns)]
    latest = sf.max_by(sf.struct(*names), sf.col(KNOWN_AT)).alias("_cdc_latest")
    return rows.groupBy(*keys).agg(latest).select(*keys, "_cdc_latest.*")


def known_values(
    changes: DataFrame,
    keys: Sequence[str],
    columns: Sequence[tuple[str, Column]],
    earlier: DataFrame | None,
) -> DataFrame:
    """The batch's row images (c, u, r) and ``earlier``'s, as ``(keys…, _cdc_known_at,
    columns…)``."""
    names = [name for name, _ in columns]
    known = changes.where(sf.col(OP).isin("c", "u", "r")).select(
        *keys, sf.col(POSITION).alias(KNOWN_AT), *names
    )
    return known if earlier is None else known.unionByName(earlier.select(*keys, KNOWN_AT, *names))


def values_before(
    wanted: DataFrame,
    known: DataFrame,
    keys: Sequence[str],
    columns: Sequence[tuple[str, Column]],
) -> DataFrame:
    """Per wanted row (its Kafka coordinates; its key; ``_cdc_moved_at``): each column's
    latest known value before ``_cdc_moved_at`` that is not the placeholder, as a struct
    ``_cdc_found_<name>`` holding ``v`` and its position ``at`` (null when there is none)."""
    matched = wanted.join(known, list(keys)).where(sf.col(KNOWN_AT) < sf.col(_MOVED_AT))
    found = [
        sf.max_by(
            sf.struct(sf.col(name).alias("v"), sf.col(KNOWN_AT).alias("at")),
            sf.when(~sf.col(name).eqNullSafe(literal), sf.col(KNOWN_AT)),
        ).alias(_FOUND + name)
        for name, literal in columns
    ]
    return matched.groupBy(*ORDER_COLUMNS).agg(*found)


def versions(changes: DataFrame, keys: Sequence[str]) -> DataFrame:
    """SCD2 history rows: one per c/u/r event, closed by the key's next event in the batch.

    Adds ``_cdc_valid_from``/``_cdc_valid_from_ts`` (this event), ``_cdc_valid_to``/
    ``_cdc_valid_to_ts`` (the next event, a delete included; null if none) and
    ``_cdc_is_current``. Delete events produce no row: they only close the previous one.
    """
    unique = changes.dropDuplicates([*keys, POSITION])
    window = Window.partitionBy(*keys).orderBy(*[sf.col(c) for c in _ORDER])
    following = unique.select(
        "*",
        sf.lead(POSITION).over(window).alias(VALID_TO),
        sf.lead(SOURCE_TS).over(window).alias(VALID_TO_TS),
    )
    return (
        following.where(sf.col(OP) != "d")
        .withColumn(VALID_FROM, sf.col(POSITION))
        .withColumn(VALID_FROM_TS, sf.col(SOURCE_TS))
        .withColumn(IS_CURRENT, sf.col(VALID_TO).isNull())
    )


def first_per_key(changes: DataFrame, keys: Sequence[str]) -> DataFrame:
    """The earliest position (and its source time) of every key: where its new history starts."""
    first = sf.min(sf.struct(sf.col(POSITION), sf.col(SOURCE_TS))).alias("_first")
    return (
        changes.groupBy(*keys)
        .agg(first)
        .select(
            *keys,
            sf.col("_first").getField(POSITION).alias(POSITION),
            sf.col("_first").getField(SOURCE_TS).alias(SOURCE_TS),
        )
    )
