"""Envelope decoding on Spark: wire values become the stored values users query."""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as sf

from cdcflow.sparkapps import decoding, positions, schemas


def _unscaled(value: int) -> str:
    size = max(1, (value.bit_length() + 8) // 8)
    return base64.b64encode(value.to_bytes(size, "big", signed=True)).decode()


WIDE = decimal.Context(prec=60)
UNSCALED = [
    0,
    1,
    -1,
    127,
    128,
    -128,
    -129,
    255,
    2**63 - 1,
    -(2**63),
    2**63,
    -(2**63) - 1,
    2**64,
    10**37 + 12345,
    -(10**38) + 1,
    10**38 - 1,
]


@pytest.mark.parametrize("scale", [0, 2, 10])
def test_decimals_decode_exactly_across_byte_widths_and_signs(
    spark: SparkSession, scale: int
) -> None:
    frame = spark.createDataFrame([(_unscaled(v),) for v in UNSCALED], "v string")

    decoded = frame.select(decoding.decimal_text(sf.unbase64("v"), sf.lit(scale))).collect()

    assert [decimal.Decimal(row[0]) for row in decoded] == [
        decimal.Decimal(v).scaleb(-scale, context=WIDE) for v in UNSCALED
    ]


def test_a_decimal_too_wide_for_38_digits_decodes_to_null_not_a_wrong_number(
    spark: SparkSession,
) -> None:
    frame = spark.createDataFrame([(_unscaled(10**40),)], "v string")

    (row,) = frame.select(decoding.decimal_text(sf.unbase64("v"), sf.lit(0))).collect()

    assert row[0] is None


def _column(field: str, type_: str, **extra: Any) -> dict[str, Any]:
    return {"type": type_, "optional": True, "field": field, **extra}


COLUMNS = [
    _column("id", "int32"),
    _column(
        "amount",
        "bytes",
        name="org.apache.kafka.connect.data.Decimal",
        parameters={"scale": "2", "connect.decimal.precision": "12"},
    ),
    _column(
        "free",
        "struct",
        name="io.debezium.data.VariableScaleDecimal",
        fields=[_column("scale", "int32"), _column("value", "bytes")],
    ),
    _column("day", "int32", name="io.debezium.time.Date"),
    _column("at", "int64", name="io.debezium.time.MicroTimestamp"),
    _column("at_ms", "int64", name="io.debezium.time.Timestamp"),
    _column("at_tz", "string", name="io.debezium.time.ZonedTimestamp"),
    _column("blob", "bytes"),
    _column("days", "array", items={"type": "int32", "name": "io.debezium.time.Date"}),
    _column("ratio", "float64"),
]
SOURCE = {
    "type": "struct",
    "fields": [_column("ts_ms", "int64"), _column("lsn", "int64")],
}


def test_change_events_decode_to_typed_columns_with_position_and_op(spark: SparkSession) -> None:
    row_schema = {"type": "struct", "fields": COLUMNS}
    envelope = {
        "type": "struct",
        "fields": [
            {**row_schema, "field": "before"},
            {**row_schema, "field": "after"},
            {**SOURCE, "field": "source"},
            _column("op", "string"),
        ],
    }
    after = {
        "id": 7,
        "amount": _unscaled(-123456),
        "free": {"scale": 3, "value": _unscaled(98765)},
        "day": 19000,
        "at": 1_700_000_000_123_456,
        "at_ms": 1_700_000_000_123,
        "at_tz": "2023-11-14T22:13:20.5Z",
        "blob": base64.b64encode(b"\x00\xffdata").decode(),
        "days": [0, 1],
        "ratio": "NaN",
    }
    value = {
        "schema": envelope,
        "payload": {
            "before": None,
            "after": after,
            "op": "u",
            "source": {"ts_ms": 1_700_000_000_000, "lsn": 42},
        },
    }
    kafka = spark.createDataFrame(
        [("p.public.t", 0, 5, b'{"id": 7}', json.dumps(value).encode())],
        "topic string, partition int, offset long, key binary, value binary",
    )
    plan = schemas.envelope_plan(envelope)
    ordering = positions.ordering_for(plan.source.names)
    assert ordering is not None

    records = decoding.records(kafka)
    (row,) = decoding.changes(records, plan, ordering, keyed=True).collect()

    assert row["id"] == 7
    assert row["amount"] == decimal.Decimal("-1234.56")
    assert row["free"] == "98.765"
    assert row["day"] == dt.date(2022, 1, 8)
    assert row["at"] == dt.datetime(2023, 11, 14, 22, 13, 20, 123456)
    assert row["at_ms"] == dt.datetime(2023, 11, 14, 22, 13, 20, 123000)
    assert row["at_tz"].astimezone(dt.UTC) == dt.datetime(2023, 11, 14, 22, 13, 20, 500000, dt.UTC)
    assert bytes(row["blob"]) == b"\x00\xffdata"
    assert row["days"] == [dt.date(1970, 1, 1), dt.date(1970, 1, 2)]
    assert row["ratio"] != row["ratio"]  # NaN
    assert (row[decoding.OP], row[decoding.POSITION]) == ("u", f"{0:020d}:{42:020d}")
    assert row[decoding.PROBLEM] is None
