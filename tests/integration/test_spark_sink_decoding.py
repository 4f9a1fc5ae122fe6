"""Envelope decoding on Spark: wire values become the stored values users query."""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import random
from typing import Any

import pytest
from pyspark.sql import Row, SparkSession
from pyspark.sql import functions as sf

from cdcflow.sparkapps import decoding, positions, schemas
from tests.integration.sink_support import unscaled_bytes

WIDE = decimal.Context(prec=decimal.MAX_PREC)
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
    10**38,  # 16 bytes, 39 digits
    -(10**38),
    2**127 - 1,
    -(2**127),
    2**127,  # 17 bytes
    -(2**127) - 1,
    10**40,
    -(10**40) - 1,
    7 * 10**100 + 3,
    -(10**300) + 1,
]


def _random_unscaled(seed: int, count: int) -> list[int]:
    rnd = random.Random(seed)
    return [rnd.choice((-1, 1)) * rnd.randrange(10 ** rnd.randint(1, 120)) for _ in range(count)]


def _decoded(spark: SparkSession, values: list[int], scale: int) -> list[str | None]:
    frame = spark.createDataFrame([(unscaled_bytes(v),) for v in values], "v string")
    decoded = frame.select(decoding.decimal_text(sf.unbase64("v"), sf.lit(scale)))
    return [row[0] for row in decoded.collect()]


@pytest.mark.parametrize("scale", [0, 2, 10, 50, -3])
def test_decimals_of_any_width_decode_to_their_exact_value(spark: SparkSession, scale: int) -> None:
    values = UNSCALED + _random_unscaled(seed=scale, count=100)

    decoded = _decoded(spark, values, scale)

    assert [decimal.Decimal(text) for text in decoded] == [  # type: ignore[arg-type]
        decimal.Decimal(v).scaleb(-scale, context=WIDE) for v in values
    ]


@pytest.mark.parametrize(
    ("unscaled", "scale", "text"),
    [
        (0, 0, "0"),
        (0, 3, "0.000"),
        (-5, 3, "-0.005"),
        (1250, 2, "12.50"),
        (123, -2, "12300"),
        (0, -2, "0"),
        (-(10**41) - 5, 1, "-10000000000000000000000000000000000000000.5"),
        (10**45, 45, "1.000000000000000000000000000000000000000000000"),
    ],
)
def test_decimal_text_is_plain_notation_with_exactly_the_scale_digits(
    spark: SparkSession, unscaled: int, scale: int, text: str
) -> None:
    assert _decoded(spark, [unscaled], scale) == [text]


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
    _column("ratio", "double"),
    _column("level", "float"),
]
SOURCE = {
    "type": "struct",
    "fields": [_column("ts_ms", "int64"), _column("lsn", "int64")],
}


def _envelope(columns: list[dict[str, Any]]) -> dict[str, Any]:
    row_schema = {"type": "struct", "fields": columns}
    return {
        "type": "struct",
        "fields": [
            {**row_schema, "field": "before"},
            {**row_schema, "field": "after"},
            {**SOURCE, "field": "source"},
            _column("op", "string"),
        ],
    }


def _decode(
    spark: SparkSession, columns: list[dict[str, Any]], afters: list[dict[str, Any]]
) -> list[Row]:
    """``u`` events with these after images (offsets 0, 1, …) as change rows, by offset."""
    envelope = _envelope(columns)
    values = [
        {
            "schema": envelope,
            "payload": {
                "before": None,
                "after": after,
                "op": "u",
                "source": {"ts_ms": 1_700_000_000_000, "lsn": 42 + offset},
            },
        }
        for offset, after in enumerate(afters)
    ]
    kafka = spark.createDataFrame(
        [("p.public.t", 0, i, b'{"id": 7}', json.dumps(v).encode()) for i, v in enumerate(values)],
        "topic string, partition int, offset long, key binary, value binary",
    )
    plan = schemas.envelope_plan(envelope)
    ordering = positions.ordering_for(plan.source.names)
    assert ordering is not None
    rows = decoding.changes(decoding.records(kafka), plan, ordering, keyed=True).collect()
    return sorted(rows, key=lambda row: row[decoding.OFFSET])


def test_change_events_decode_to_typed_columns_with_position_and_op(spark: SparkSession) -> None:
    after = {
        "id": 7,
        "amount": unscaled_bytes(-123456),
        "free": {"scale": 3, "value": unscaled_bytes(98765)},
        "day": 19000,
        "at": 1_700_000_000_123_456,
        "at_ms": 1_700_000_000_123,
        "at_tz": "2023-11-14T22:13:20.5Z",
        "blob": base64.b64encode(b"\x00\xffdata").decode(),
        "days": [0, 1],
        "ratio": "NaN",
        "level": 0.5,
    }

    (row,) = _decode(spark, COLUMNS, [after])

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
    assert row["level"] == 0.5
    assert (row[decoding.OP], row[decoding.POSITION]) == ("u", f"{0:020d}:{42:020d}")
    assert row[decoding.PROBLEM] is None


DECIMAL = "org.apache.kafka.connect.data.Decimal"
DECIMAL_COLUMNS = [
    _column("id", "int32"),
    _column("money", "bytes", name=DECIMAL, parameters={"scale": "2"}),
    _column(
        "amounts",
        "array",
        items={
            "type": "bytes",
            "name": DECIMAL,
            "parameters": {"scale": "2", "connect.decimal.precision": "5"},
        },
    ),
    _column(
        "wide",
        "bytes",
        name=DECIMAL,
        parameters={"scale": "2", "connect.decimal.precision": "60"},
    ),
    _column(
        "free",
        "struct",
        name="io.debezium.data.VariableScaleDecimal",
        fields=[_column("scale", "int32"), _column("value", "bytes")],
    ),
]
FITTING = {
    "id": 1,
    "money": unscaled_bytes(10**37 + 1),
    "amounts": [unscaled_bytes(100), unscaled_bytes(-99999)],
    "wide": unscaled_bytes(-(10**57) - 5),
    "free": {"scale": 3, "value": unscaled_bytes(10**60 + 1)},
}


def test_decimals_wider_than_38_digits_are_exact_strings_and_fitting_ones_typed(
    spark: SparkSession,
) -> None:
    (row,) = _decode(spark, DECIMAL_COLUMNS, [FITTING])

    assert row[decoding.PROBLEM] is None
    assert row["money"] == decimal.Decimal("1" + "0" * 35 + ".01")
    assert row["amounts"] == [decimal.Decimal("1.00"), decimal.Decimal("-999.99")]
    assert row["wide"] == "-1" + "0" * 55 + ".05"
    assert row["free"] == "1" + "0" * 56 + "0.001"


def test_a_decimal_without_an_exact_stored_value_is_a_problem_never_a_silent_null(
    spark: SparkSession,
) -> None:
    afters: list[dict[str, Any]] = [
        {**FITTING, "money": unscaled_bytes(10**38)},  # 39 digits into decimal(38,2)
        {**FITTING, "amounts": [unscaled_bytes(1), unscaled_bytes(100000)]},  # 1000.00
        {**FITTING, "money": "not base64!"},
        {**FITTING, "free": {"value": unscaled_bytes(5)}},  # no scale
        {"id": 5, "money": None, "amounts": None, "wide": None, "free": None},
    ]

    rows = _decode(spark, DECIMAL_COLUMNS, afters)

    assert [row[decoding.PROBLEM] for row in rows] == [
        "decimal out of range: column money has a value that does not fit decimal(38,2)",
        "decimal out of range: column amounts has a value that does not fit array<decimal(5,2)>",
        "schema mismatch: column money has a decimal that cannot be read (not base64, or no "
        "scale or value)",
        "schema mismatch: column free has a decimal that cannot be read (not base64, or no "
        "scale or value)",
        None,  # a null at the source is a null
    ]


@pytest.mark.parametrize(
    ("sequence", "position"),
    [
        ('[null,"26417872"]', f"{0:020d}:{26417872:020d}"),  # Debezium: no commit seen yet
        ('["26417000","26417872"]', f"{26417000:020d}:{26417872:020d}"),
        (None, f"{0:020d}:{26417872:020d}"),
    ],
)
def test_a_postgres_position_reads_a_null_last_commit_as_zero_so_it_sorts_first(
    spark: SparkSession, sequence: str | None, position: str
) -> None:
    ordering = positions.ordering_for({"lsn", "sequence"})
    assert ordering is not None
    frame = spark.createDataFrame([(sequence, 26417872)], "sequence string, lsn long").select(
        sf.struct("sequence", "lsn").alias("source")
    )

    (row,) = frame.select(ordering.position(sf.col("source"))).collect()

    assert row[0] == position
