"""PostgreSQL column metadata is what Debezium 3.x reads through pgjdbc 42.7: type name, length,
scale (``DatabaseMetaData.getColumns`` for snapshots, the Relation message for the stream)."""

from __future__ import annotations

from typing import Any

import pytest

from cdcflow.capture.connectors.postgres.metadata import (
    UNKNOWN_LENGTH,
    Origin,
    display_size,
    precision,
    scale,
    source_column,
)
from cdcflow.capture.connectors.postgres.types import TypeRegistry
from cdcflow.capture.mapping import SourceColumn

INT4, TEXT, VARCHAR, NUMERIC, TIMESTAMP, BOOL = 23, 25, 1043, 1700, 1114, 16
VARCHAR_ARRAY, MOOD, SHORT, PRICE, PRICE_ALIAS, CITEXT = 1015, 60001, 60002, 60003, 60004, 60005


def _row(
    oid: int,
    name: str,
    *,
    typtype: str = "b",
    base: int = 0,
    elem: int = 0,
    typmod: int = -1,
    category: str = "U",
) -> tuple[Any, ...]:
    return (oid, name, "pg_catalog", typtype, base, elem, typmod, None, category)


def numeric(digits: int, places: int) -> int:
    return ((digits << 16) | places) + 4


REGISTRY = TypeRegistry.from_rows(
    [
        _row(INT4, "int4", category="N"),
        _row(TEXT, "text", category="S"),
        _row(VARCHAR, "varchar", category="S"),
        _row(NUMERIC, "numeric", category="N"),
        _row(TIMESTAMP, "timestamp", category="D"),
        _row(BOOL, "bool", category="B"),
        _row(VARCHAR_ARRAY, "_varchar", elem=VARCHAR, category="A"),
        _row(MOOD, "mood", typtype="e"),
        _row(SHORT, "short_text", typtype="d", base=VARCHAR, typmod=14),
        _row(PRICE, "price", typtype="d", base=NUMERIC, typmod=numeric(8, 3)),
        _row(PRICE_ALIAS, "price_alias", typtype="d", base=PRICE),
        _row(CITEXT, "citext", category="S"),
    ]
)


def _meta(
    oid: int, typmod: int = -1, *, origin: Origin = "snapshot", serial: bool = False
) -> SourceColumn:
    return source_column(
        name="c", type_oid=oid, typmod=typmod, serial=serial, registry=REGISTRY, origin=origin
    )


def test_pgjdbc_precision_scale_and_display_size() -> None:
    assert [precision(INT4, -1), scale(INT4, -1), display_size(INT4, -1)] == [10, 0, 11]
    assert [precision(NUMERIC, numeric(10, 2)), scale(NUMERIC, numeric(10, 2))] == [10, 2]
    assert display_size(NUMERIC, numeric(10, 2)) == 12
    assert [precision(TIMESTAMP, 3), scale(TIMESTAMP, 3), precision(TIMESTAMP, -1)] == [26, 3, 29]
    assert precision(VARCHAR, -1) == precision(TEXT, -1) == UNKNOWN_LENGTH


@pytest.mark.parametrize("origin", ["snapshot", "stream"])
def test_common_columns_read_the_same_both_ways(origin: Origin) -> None:
    assert _meta(VARCHAR, 259, origin=origin) == SourceColumn("c", "varchar", 255, 0, True)
    assert _meta(TEXT, origin=origin) == SourceColumn("c", "text", UNKNOWN_LENGTH, 0, True)
    assert _meta(NUMERIC, numeric(10, 2), origin=origin).length == 10
    assert _meta(TIMESTAMP, 3, origin=origin) == SourceColumn("c", "timestamp", 26, 3, False)
    assert _meta(BOOL, origin=origin) == SourceColumn("c", "bool", 1, 0, False)
    assert _meta(VARCHAR_ARRAY, 9, origin=origin) == SourceColumn("c", "_varchar", 5, 0, False)


def test_unconstrained_numeric_reads_differently_in_snapshot_and_stream() -> None:
    assert (_meta(NUMERIC).length, _meta(NUMERIC).scale) == (0, None)
    streamed = _meta(NUMERIC, origin="stream")
    assert (streamed.length, streamed.scale) == (131089, 0)


def test_domains_take_the_length_and_scale_of_their_declared_base() -> None:
    assert _meta(SHORT) == SourceColumn("c", "short_text", 10, 0, character=True)
    assert (_meta(PRICE).length, _meta(PRICE).scale) == (8, 3)
    alias = _meta(PRICE_ALIAS, origin="stream")
    assert (alias.type_name, alias.length, alias.scale) == ("price_alias", 8, 3)


def test_serial_columns_are_named_as_the_driver_names_them() -> None:
    assert _meta(INT4, serial=True).type_name == "serial"
    assert _meta(TEXT, serial=True).type_name == "text"


def test_character_columns_are_the_jdbc_char_types_and_enums() -> None:
    assert _meta(MOOD).character and _meta(SHORT).character
    assert not _meta(CITEXT).character and not _meta(VARCHAR_ARRAY).character
