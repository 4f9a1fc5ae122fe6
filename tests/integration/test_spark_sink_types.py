"""Connect types as Debezium writes them, applied end to end: Kafka to the Delta table.

The events are built by hand in the exact shape the real Debezium PostgreSQL connector writes
with JsonConverter (``real`` is ``float``, ``double precision`` is ``double``, ``numeric(p, s)``
a ``Decimal`` with ``connect.decimal.precision``, ``numeric`` a ``VariableScaleDecimal``,
``money`` a ``Decimal`` without precision).
"""

from __future__ import annotations

import decimal
import uuid
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import types as st

from cdcflow.operator.devservices.kafka import KafkaBroker
from tests.integration.sink_support import (
    apply_backlog,
    connect_decimal,
    delta_rows,
    event_value,
    produce,
    sink_resource,
    table_path,
)
from tests.plugins.fix_kafka import create_topic

DECIMAL = "org.apache.kafka.connect.data.Decimal"
VARIABLE_DECIMAL = "io.debezium.data.VariableScaleDecimal"


def _column(field: str, type_: str, **extra: Any) -> dict[str, Any]:
    return {"type": type_, "optional": True, "field": field, **extra}


def _decimal(field: str, scale: int, precision: int | None = None) -> dict[str, Any]:
    parameters = {"scale": str(scale)}
    if precision is not None:
        parameters["connect.decimal.precision"] = str(precision)
    return _column(field, "bytes", name=DECIMAL, version=1, parameters=parameters)


ID = {"type": "int32", "optional": False, "field": "id"}


@pytest.fixture
def topic(kafka_broker: KafkaBroker) -> str:
    """A fresh ``<prefix>.public.items`` topic."""
    name = f"types{uuid.uuid4().hex[:8]}.public.items"
    create_topic(kafka_broker.bootstrap_servers, name)
    return name


def _event(row: dict[str, Any], *, lsn: int, columns: list[dict[str, Any]], topic: str) -> bytes:
    return event_value("c", row, lsn=lsn, columns=columns, name=topic)


def test_debezium_float_and_double_columns_apply_as_do_legacy_float32_and_float64_events(
    kafka_broker: KafkaBroker, topic: str, spark: SparkSession, tmp_path: Path
) -> None:
    debezium = [ID, _column("r", "float"), _column("d", "double")]
    legacy = [ID, _column("r", "float32"), _column("d", "float64")]
    produce(
        kafka_broker.bootstrap_servers,
        topic,
        [
            (
                {"id": 1},
                _event({"id": 1, "r": 1.5, "d": -2.25}, lsn=10, columns=legacy, topic=topic),
            ),
            (
                {"id": 2},
                _event({"id": 2, "r": 0.25, "d": 1e300}, lsn=20, columns=debezium, topic=topic),
            ),
        ],
    )
    sink = sink_resource(
        bootstrap_servers=kafka_broker.bootstrap_servers, topics=[topic], workdir=tmp_path
    )

    apply_backlog(spark, sink)

    path = table_path(sink, topic)
    assert delta_rows(spark, path, ["id", "r", "d"]) == [(1, 1.5, -2.25), (2, 0.25, 1e300)]
    schema = spark.read.format("delta").load(path).schema
    assert (schema["r"].dataType, schema["d"].dataType) == (st.FloatType(), st.DoubleType())
    assert not (tmp_path / "dead-letters").exists()


DECIMAL_COLUMNS = [
    ID,
    _decimal("price", 2, 12),  # numeric(12,2)
    _decimal("money", 2),  # money: no precision, so decimal(38,2)
    _decimal("huge", 5, 60),  # numeric(60,5): wider than Spark's 38 digits
    _column(
        "free",  # numeric
        "struct",
        name=VARIABLE_DECIMAL,
        version=1,
        fields=[
            {"type": "int32", "optional": False, "field": "scale"},
            {"type": "bytes", "optional": False, "field": "value"},
        ],
    ),
]
HUGE = decimal.Decimal("-" + "9" * 55 + ".00001")
FREE = decimal.Decimal("1" + "0" * 60 + ".125")


def _decimal_row(row_id: int, *, money: decimal.Decimal, price: str = "1.50") -> dict[str, Any]:
    return {
        "id": row_id,
        "price": connect_decimal(decimal.Decimal(price), 2),
        "money": connect_decimal(money, 2),
        "huge": connect_decimal(HUGE, 5),
        "free": {"scale": 3, "value": connect_decimal(FREE, 3)},
    }


def test_decimals_are_stored_exactly_and_values_that_do_not_fit_are_dead_letters(
    kafka_broker: KafkaBroker, topic: str, spark: SparkSession, tmp_path: Path
) -> None:
    too_big = decimal.Decimal("1" + "0" * 36 + ".00")  # 39 digits at scale 2
    rows = [
        _decimal_row(1, money=decimal.Decimal("-1234.56")),
        _decimal_row(2, money=too_big),
        _decimal_row(3, money=decimal.Decimal("0.01"), price="12345678901.00"),  # 13 digits
        _decimal_row(4, money=decimal.Decimal("99" * 18 + ".99")),  # 38 digits: fits
    ]
    produce(
        kafka_broker.bootstrap_servers,
        topic,
        [
            (
                {"id": row["id"]},
                _event(row, lsn=10 * row["id"], columns=DECIMAL_COLUMNS, topic=topic),
            )
            for row in rows
        ],
    )
    sink = sink_resource(
        bootstrap_servers=kafka_broker.bootstrap_servers, topics=[topic], workdir=tmp_path
    )

    apply_backlog(spark, sink)

    path = table_path(sink, topic)
    schema = spark.read.format("delta").load(path).schema
    assert [schema[c].dataType for c in ("price", "money", "huge", "free")] == [
        st.DecimalType(12, 2),
        st.DecimalType(38, 2),
        st.StringType(),
        st.StringType(),
    ]
    assert delta_rows(spark, path, ["id", "price", "money", "huge", "free"]) == [
        (1, decimal.Decimal("1.50"), decimal.Decimal("-1234.56"), str(HUGE), str(FREE)),
        (4, decimal.Decimal("1.50"), decimal.Decimal("99" * 18 + ".99"), str(HUGE), str(FREE)),
    ]
    letters = spark.read.format("delta").load(str(tmp_path / "dead-letters")).collect()
    assert {r["offset"]: r["reason"] for r in letters} == {
        1: "decimal out of range: column money has a value that does not fit decimal(38,2)",
        2: "decimal out of range: column price has a value that does not fit decimal(12,2)",
    }
