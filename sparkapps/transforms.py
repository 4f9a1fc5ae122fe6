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
    OFFSET,
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
_ORDER = (POSITION, *ORDER_COLUMNS)


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
