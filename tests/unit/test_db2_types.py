"""Db2 catalog rows become the structures Debezium records, and values the events it writes."""

from __future__ import annotations

import base64
from datetime import date, datetime, time
from decimal import Decimal
from typing import Any

import pytest

from cdcflow.capture.connectors.db2 import structure, types
from cdcflow.capture.spi import Column, TableId

TABLE = TableId("DB2INST1", "ALLTYPES")


def _row(
    name: str,
    type_name: str,
    *,
    length: int,
    scale: int = 0,
    nulls: str = "Y",
    keyseq: int | None = None,
    default: str | None = None,
    codepage: int = 0,
    colno: int = 0,
) -> tuple[Any, ...]:
    """A row of sql.COLUMNS, as SYSCAT.COLUMNS gives it."""
    return (name, colno, type_name, length, scale, nulls, keyseq, default, "N", " ", codepage,
            None)  # fmt: skip


def _column(row: tuple[Any, ...], **options: Any) -> Column:
    column_structure, _ = structure.column_structure(row)
    mapped = types.column(column_structure, types.TypeOptions(**options))
    assert mapped is not None
    return mapped


def _unscaled(text: str) -> int:
    return int.from_bytes(base64.b64decode(text), "big", signed=True)


def test_catalog_lengths_become_the_column_sizes_jcc_reports() -> None:
    rows = [
        _row("ID", "INTEGER", length=4, nulls="N", keyseq=1, colno=0),
        _row("PRICE", "DECIMAL", length=10, scale=2, colno=1),
        _row("AT", "TIMESTAMP", length=10, scale=6, colno=2),
        _row("TAG", "CHARACTER", length=8, codepage=0, colno=3),
        _row("NAME", "VARCHAR", length=40, codepage=1208, colno=4),
        _row("TENANT", "SMALLINT", length=2, nulls="N", keyseq=2, colno=5),
    ]
    table = structure.table_structure(TABLE, list(reversed(rows)))

    assert [c.name for c in table.columns] == ["ID", "PRICE", "AT", "TAG", "NAME", "TENANT"]
    assert table.primary_key == ("ID", "TENANT")
    by_name = {c.name: c for c in table.columns}
    assert (by_name["ID"].jdbc_type, by_name["ID"].length, by_name["ID"].optional) == (4, 10, False)
    assert (by_name["PRICE"].length, by_name["PRICE"].scale) == (10, 2)
    assert (by_name["AT"].jdbc_type, by_name["AT"].length, by_name["AT"].scale) == (93, 26, 6)
    assert (by_name["TAG"].jdbc_type, by_name["TAG"].type_name) == (-2, "CHAR () FOR BIT DATA")
    assert (by_name["NAME"].jdbc_type, by_name["NAME"].scale) == (12, None)


@pytest.mark.parametrize(
    ("mode", "schema_name", "expected"),
    [
        ("precise", "org.apache.kafka.connect.data.Decimal", 1234500),
        ("double", None, 12345.0),
        ("string", None, "12345.00"),
    ],
)
def test_decimals_follow_decimal_handling_mode(
    mode: str, schema_name: str | None, expected: Any
) -> None:
    column = _column(_row("PRICE", "DECIMAL", length=9, scale=2), decimal_handling_mode=mode)
    assert column.schema.get("name") == schema_name
    # ibm_db gives DECIMAL as text; the scale is padded to the column's, as Debezium does
    value = column.convert("12345")
    assert (_unscaled(value) if mode == "precise" else value) == expected
    if mode == "precise":
        assert column.schema["parameters"] == {"scale": "2", "connect.decimal.precision": "9"}


def test_decfloat_is_a_variable_scale_decimal_in_precise_mode() -> None:
    column = _column(_row("F", "DECFLOAT", length=16))
    assert column.schema["name"] == "io.debezium.data.VariableScaleDecimal"
    converted = column.convert(Decimal("12.3400"))
    assert converted["scale"] == 2 and _unscaled(converted["value"]) == 1234
    assert column.convert(Decimal("NaN")) is None
    assert _column(_row("F", "DECFLOAT", length=8), decimal_handling_mode="double").convert(
        "1.5E3"
    ) == pytest.approx(1500.0)


@pytest.mark.parametrize(
    ("scale", "mode", "schema_name", "expected"),
    [
        (6, "adaptive", "io.debezium.time.MicroTimestamp", 1_795_426_500_123_456),
        (3, "adaptive", "io.debezium.time.Timestamp", 1_795_426_500_123),
        (0, "adaptive", "io.debezium.time.Timestamp", 1_795_426_500_123),
        (9, "adaptive", "io.debezium.time.NanoTimestamp", 1_795_426_500_123_456_000),
        (6, "connect", "org.apache.kafka.connect.data.Timestamp", 1_795_426_500_123),
    ],
)
def test_timestamps_are_utc_epoch_values_of_the_precision_the_scale_gives(
    scale: int, mode: str, schema_name: str, expected: int
) -> None:
    column = _column(_row("AT", "TIMESTAMP", length=10, scale=scale), time_precision_mode=mode)
    assert column.schema["name"] == schema_name
    assert column.convert(datetime(2026, 11, 23, 9, 35, 0, 123456)) == expected
    # Db2's own text form of the same instant reads the same
    assert column.convert("2026-11-23-09.35.00.123456") == expected


def test_dates_times_xml_binary_and_booleans_map_as_debezium_does() -> None:
    day = _column(_row("D", "DATE", length=4))
    assert (day.schema["name"], day.convert(date(1970, 1, 11))) == ("io.debezium.time.Date", 10)
    clock = _column(_row("T", "TIME", length=3))
    assert (clock.schema["name"], clock.convert(time(0, 0, 2))) == ("io.debezium.time.Time", 2000)
    micro = _column(_row("T", "TIME", length=3), time_precision_mode="adaptive_time_microseconds")
    assert micro.convert(time(0, 0, 2)) == 2_000_000
    xml = _column(_row("X", "XML", length=0))
    assert (xml.schema["name"], xml.convert("<a/>")) == ("io.debezium.data.Xml", "<a/>")
    blob = _column(_row("B", "BLOB", length=1024))
    assert (blob.schema["type"], blob.convert(memoryview(b"\x00\xff"))) == ("bytes", "AP8=")
    hexed = _column(_row("B", "VARCHAR", length=8, codepage=0), binary_handling_mode="hex")
    assert (hexed.schema["type"], hexed.convert(b"\x00\xff")) == ("string", "00ff")
    flag = _column(_row("OK", "BOOLEAN", length=1))
    assert (flag.schema["type"], flag.convert(1)) == ("boolean", True)


def test_defaults_are_parsed_as_db2s_default_value_converter_does() -> None:
    text = _column(_row("C", "CHARACTER", length=4, default="'ab'", codepage=1208))
    assert text.schema["default"] == "ab  "
    number = _column(_row("N", "INTEGER", length=4, default="42", nulls="N"))
    assert number.schema["default"] == 42
    assert number.convert(None) == 42
    now = _column(_row("AT", "TIMESTAMP", length=10, scale=6, default="CURRENT TIMESTAMP"))
    assert "default" not in now.schema
    required = _column(
        _row("AT", "TIMESTAMP", length=10, scale=6, default="CURRENT TIMESTAMP", nulls="N")
    )
    assert required.schema["default"] == 0
    decfloat = _column(_row("F", "DECFLOAT", length=16, default="1.5"))
    assert "default" not in decfloat.schema  # a struct cannot be a Connect default


def test_a_type_debezium_cannot_map_is_left_out_of_the_events() -> None:
    rows = [
        _row("ID", "INTEGER", length=4, nulls="N", keyseq=1, colno=0),
        _row("SHAPE", "ST_POINT", length=0, colno=1),
    ]
    schema = types.table_schema(structure.table_structure(TABLE, rows), types.TypeOptions())
    assert [c.name for c in schema.columns] == ["ID"]
