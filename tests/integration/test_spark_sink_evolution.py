"""Several schema versions of one table in one micro-batch, applied end to end.

When a source column changes type mid-stream (``numeric(10,2)`` to ``numeric(12,4)``,
``timestamp(3)`` to ``timestamp(6)``, ``int`` to ``bigint``), one micro-batch can hold records
written with either schema. Every record must be decoded with the schema it was written with
(its own decimal scale, its own time unit) and only then converted to the table's column type.
The events are built by hand in the shape Debezium's PostgreSQL connector writes them.
"""

from __future__ import annotations

import datetime as dt
import decimal
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import types as st

from cdcflow.operator.devservices.kafka import KafkaBroker
from cdcflow.sparkapps.batches import BatchReport
from cdcflow.sparkapps.config import CdcSink
from tests.integration.sink_support import (
    apply_backlog,
    connect_decimal,
    epoch_micros,
    event_value,
    produce,
    sink_resource,
    table_path,
)
from tests.plugins.fix_kafka import create_topic

DECIMAL = "org.apache.kafka.connect.data.Decimal"
VARIABLE_DECIMAL = "io.debezium.data.VariableScaleDecimal"
ID = {"type": "int32", "optional": False, "field": "id"}

Columns = list[dict[str, Any]]
Event = tuple[Columns, dict[str, Any]]
"""The Connect columns of the event's schema version and the row it carries."""


def _column(field: str, type_: str, **extra: Any) -> dict[str, Any]:
    return {"type": type_, "optional": True, "field": field, **extra}


def _decimal(field: str, scale: int, precision: int) -> dict[str, Any]:
    parameters = {"scale": str(scale), "connect.decimal.precision": str(precision)}
    return _column(field, "bytes", name=DECIMAL, version=1, parameters=parameters)


def _variable_decimal(field: str) -> dict[str, Any]:
    fields = [
        {"type": "int32", "optional": False, "field": "scale"},
        {"type": "bytes", "optional": False, "field": "value"},
    ]
    return _column(field, "struct", name=VARIABLE_DECIMAL, version=1, fields=fields)


@pytest.fixture
def topic(kafka_broker: KafkaBroker) -> str:
    """A fresh ``<prefix>.public.items`` topic."""
    name = f"evolve{uuid.uuid4().hex[:8]}.public.items"
    create_topic(kafka_broker.bootstrap_servers, name)
    return name


def _apply(
    spark: SparkSession,
    broker: KafkaBroker,
    topic: str,
    workdir: Path,
    events: Sequence[Event],
    *,
    target: str | None = None,
) -> tuple[CdcSink, list[BatchReport]]:
    """Produce ``events`` (row ``id`` as key, ascending LSNs) and apply them in one batch.

    ``target``, a DDL column list, creates the Delta table beforehand (as a table widened by
    hand, or left by an earlier run, would be).
    """
    sink = sink_resource(
        bootstrap_servers=broker.bootstrap_servers, topics=[topic], workdir=workdir
    )
    if target is not None:
        empty = spark.createDataFrame([], target)
        empty.write.format("delta").save(table_path(sink, topic))
    produce(
        broker.bootstrap_servers,
        topic,
        [
            ({"id": row["id"]}, event_value("c", row, lsn=10 * n, columns=columns, name=topic))
            for n, (columns, row) in enumerate(events, start=1)
        ],
    )
    reports = [r for r in apply_backlog(spark, sink) if r.records]
    assert len(reports) == 1, "the test needs every version in one micro-batch"
    return sink, reports


def _column_of(spark: SparkSession, sink: CdcSink, topic: str, name: str) -> dict[int, Any]:
    frame = spark.read.format("delta").load(table_path(sink, topic))
    return {row["id"]: row[name] for row in frame.select("id", name).collect()}


def _type_of(spark: SparkSession, sink: CdcSink, topic: str, name: str) -> st.DataType:
    return spark.read.format("delta").load(table_path(sink, topic)).schema[name].dataType


def _dead_letters(sink: CdcSink, spark: SparkSession) -> dict[int, str]:
    dead_letter = sink.spec.dead_letter
    assert dead_letter is not None and dead_letter.path is not None
    if not Path(dead_letter.path).exists():
        return {}
    letters = spark.read.format("delta").load(dead_letter.path).collect()
    return {row["offset"]: row["reason"] for row in letters}


# -- Decimal: the scale is a schema parameter -------------------------------------------------

NUMERIC_10_2 = [ID, _decimal("amount", 2, 10)]
NUMERIC_12_4 = [ID, _decimal("amount", 4, 12)]


def _amount(columns: Columns, row_id: int, value: str) -> Event:
    scale = int(columns[1]["parameters"]["scale"])
    return columns, {"id": row_id, "amount": connect_decimal(decimal.Decimal(value), scale)}


@pytest.mark.parametrize(
    ("target", "older", "newer"),
    [
        pytest.param(
            "id INT, amount DECIMAL(12,4)",
            NUMERIC_10_2,
            NUMERIC_12_4,
            id="scale-raised-table-already-wide-enough",
        ),
        pytest.param(None, NUMERIC_12_4, NUMERIC_10_2, id="scale-lowered-new-table"),
    ],
)
def test_each_decimal_is_decoded_with_the_scale_of_the_schema_version_it_was_written_with(
    kafka_broker: KafkaBroker,
    topic: str,
    spark: SparkSession,
    tmp_path: Path,
    target: str | None,
    older: Columns,
    newer: Columns,
) -> None:
    events = [
        _amount(older, 1, "12.34"),
        _amount(newer, 2, "-56.78"),
        _amount(older, 3, "0.01"),
        _amount(newer, 4, "99999999.99"),
    ]

    sink, _ = _apply(spark, kafka_broker, topic, tmp_path, events, target=target)

    assert _type_of(spark, sink, topic, "amount") == st.DecimalType(12, 4)
    assert _column_of(spark, sink, topic, "amount") == {
        1: decimal.Decimal("12.3400"),
        2: decimal.Decimal("-56.7800"),
        3: decimal.Decimal("0.0100"),
        4: decimal.Decimal("99999999.9900"),
    }
    assert _dead_letters(sink, spark) == {}


def test_variable_scale_decimals_keep_the_scale_each_value_carries_across_schema_versions(
    kafka_broker: KafkaBroker, topic: str, spark: SparkSession, tmp_path: Path
) -> None:
    numeric = [ID, _variable_decimal("amount")]
    with_note = [*numeric, _column("note", "string")]

    def event(columns: Columns, row_id: int, value: str, scale: int) -> Event:
        amount = {"scale": scale, "value": connect_decimal(decimal.Decimal(value), scale)}
        return columns, {"id": row_id, "amount": amount, "note": "n"}

    events = [
        event(numeric, 1, "12.34", 2),
        event(with_note, 2, "-56.7891", 4),
        event(numeric, 3, "100", 0),
        event(with_note, 4, "0.5", 1),
    ]

    sink, _ = _apply(spark, kafka_broker, topic, tmp_path, events)

    assert _column_of(spark, sink, topic, "amount") == {
        1: "12.34",
        2: "-56.7891",
        3: "100",
        4: "0.5",
    }
    assert _dead_letters(sink, spark) == {}


# -- Timestamps: the unit is the logical name ---------------------------------------------------

AT = dt.datetime(2024, 5, 6, 7, 8, 9, 123456)
AT_MS = AT.replace(microsecond=123000)
TIMESTAMP = ("io.debezium.time.Timestamp", "int64", epoch_micros(AT) // 1000)
MICRO_TIMESTAMP = ("io.debezium.time.MicroTimestamp", "int64", epoch_micros(AT))
NANO_TIMESTAMP = ("io.debezium.time.NanoTimestamp", "int64", epoch_micros(AT) * 1000 + 789)
CONNECT_TIMESTAMP = ("org.apache.kafka.connect.data.Timestamp", "int64", epoch_micros(AT) // 1000)
ZONED_TIMESTAMP = ("io.debezium.time.ZonedTimestamp", "string", "2024-05-06T07:08:09.123456Z")
UTC_AT = AT.replace(tzinfo=dt.UTC)
UTC_AT_MS = AT_MS.replace(tzinfo=dt.UTC)


def _timestamps(*versions: tuple[str, str, Any]) -> list[Event]:
    """One row per version (ids 1, 2, …), then one more per version (ids 11, 12, …)."""
    events: list[Event] = []
    for offset in (0, 10):
        for n, (name, wire, value) in enumerate(versions, start=1):
            columns = [ID, _column("at", wire, name=name, version=1)]
            events.append((columns, {"id": offset + n, "at": value}))
    return events


def _collected(value: Any, *, instant: bool) -> Any:
    # PySpark returns an instant (timestamp) as a naive date-time in the local time zone.
    return value.astimezone(dt.UTC) if instant else value


@pytest.mark.parametrize(
    ("target", "versions", "expected"),
    [
        pytest.param(
            None,
            (TIMESTAMP, MICRO_TIMESTAMP, NANO_TIMESTAMP),
            (AT_MS, AT, AT),
            id="millis-then-micros-then-nanos",
        ),
        pytest.param(
            "id INT, at TIMESTAMP_NTZ",
            (MICRO_TIMESTAMP, TIMESTAMP),
            (AT, AT_MS),
            id="micros-then-millis-existing-table",
        ),
        pytest.param(
            None,
            (CONNECT_TIMESTAMP, ZONED_TIMESTAMP),
            (UTC_AT_MS, UTC_AT),
            id="connect-timestamp-then-zoned",
        ),
        pytest.param(
            None,
            (ZONED_TIMESTAMP, CONNECT_TIMESTAMP),
            (UTC_AT, UTC_AT_MS),
            id="zoned-then-connect-timestamp",
        ),
    ],
)
def test_each_timestamp_is_decoded_with_the_unit_of_the_schema_version_it_was_written_with(
    kafka_broker: KafkaBroker,
    topic: str,
    spark: SparkSession,
    tmp_path: Path,
    target: str | None,
    versions: tuple[tuple[str, str, Any], ...],
    expected: tuple[dt.datetime, ...],
) -> None:
    sink, _ = _apply(spark, kafka_broker, topic, tmp_path, _timestamps(*versions), target=target)

    instant = isinstance(_type_of(spark, sink, topic, "at"), st.TimestampType)
    stored = {
        row_id: _collected(value, instant=instant)
        for row_id, value in _column_of(spark, sink, topic, "at").items()
    }
    want = {offset + n: value for offset in (0, 10) for n, value in enumerate(expected, start=1)}
    assert stored == want
    assert _dead_letters(sink, spark) == {}


# -- Integers: int32 and int64 versions ---------------------------------------------------------

INT = [ID, _column("n", "int32")]
BIGINT = [ID, _column("n", "int64")]
BIG = 2**40 + 7


def test_int_and_bigint_versions_both_apply_exactly_to_a_bigint_column(
    kafka_broker: KafkaBroker, topic: str, spark: SparkSession, tmp_path: Path
) -> None:
    events = [
        (INT, {"id": 1, "n": 2**31 - 1}),
        (BIGINT, {"id": 2, "n": BIG}),
        (INT, {"id": 3, "n": -(2**31)}),
        (BIGINT, {"id": 4, "n": -BIG}),
    ]

    sink, _ = _apply(spark, kafka_broker, topic, tmp_path, events, target="id INT, n BIGINT")

    assert _type_of(spark, sink, topic, "n") == st.LongType()
    assert _column_of(spark, sink, topic, "n") == {1: 2**31 - 1, 2: BIG, 3: -(2**31), 4: -BIG}
    assert _dead_letters(sink, spark) == {}


def test_a_column_narrowed_from_bigint_to_int_keeps_bigint_and_every_value(
    kafka_broker: KafkaBroker, topic: str, spark: SparkSession, tmp_path: Path
) -> None:
    events = [(BIGINT, {"id": 1, "n": BIG}), (INT, {"id": 2, "n": -(2**31)})]

    sink, _ = _apply(spark, kafka_broker, topic, tmp_path, events)

    assert _type_of(spark, sink, topic, "n") == st.LongType()
    assert _column_of(spark, sink, topic, "n") == {1: BIG, 2: -(2**31)}


def test_a_bigint_version_after_an_int_one_is_a_dead_letter_when_the_table_is_int(
    kafka_broker: KafkaBroker, topic: str, spark: SparkSession, tmp_path: Path
) -> None:
    events = [(INT, {"id": 1, "n": 5}), (BIGINT, {"id": 2, "n": BIG})]

    sink, _ = _apply(spark, kafka_broker, topic, tmp_path, events)

    assert _type_of(spark, sink, topic, "n") == st.IntegerType()
    assert _column_of(spark, sink, topic, "n") == {1: 5}
    assert _dead_letters(sink, spark) == {
        1: "schema mismatch: column n is bigint in the change events but int in the target table"
    }
