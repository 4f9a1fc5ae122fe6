"""Bad records go to the dead-letter table with the reason, or stop the job when asked to."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from cdcflow.operator.devservices.kafka import KafkaBroker
from cdcflow.sparkapps.deadletters import BadRecordsError
from tests.integration.sink_support import (
    apply_backlog,
    event_value,
    produce,
    sink_resource,
    table_path,
)
from tests.plugins.fix_kafka import create_topic

COLUMNS = [
    {"type": "int32", "optional": False, "field": "id"},
    {"type": "string", "optional": True, "field": "name"},
]
NAME_AS_INT = [COLUMNS[0], {"type": "int32", "optional": True, "field": "name"}]


@pytest.fixture
def items_topic(kafka_broker: KafkaBroker) -> str:
    """A fresh ``<prefix>.public.items`` topic."""
    topic = f"bad{uuid.uuid4().hex[:8]}.public.items"
    create_topic(kafka_broker.bootstrap_servers, topic)
    return topic


def _produce(
    broker: KafkaBroker, topic: str, records: list[tuple[dict[str, Any], bytes | None]]
) -> None:
    produce(broker.bootstrap_servers, topic, records)


def _good(row_id: int, lsn: int) -> tuple[dict[str, Any], bytes]:
    return {"id": row_id}, event_value(
        "c", {"id": row_id, "name": f"n{row_id}"}, lsn=lsn, columns=COLUMNS
    )


BAD_RECORDS: list[tuple[dict[str, Any], bytes | None]] = [
    _good(1, 10),
    ({"id": 2}, b'{"schema": {"type": "struct", "fields": [], "payload": '),
    ({"id": 3}, event_value("x", {"id": 3, "name": "n3"}, lsn=30, columns=COLUMNS)),
    ({"id": 4}, event_value("c", {"id": "four", "name": "n4"}, lsn=40, columns=COLUMNS)),
    _good(5, 50),
    ({"id": 6}, event_value("c", {"id": 6, "name": 66}, lsn=60, columns=NAME_AS_INT)),
    ({"id": 1}, None),  # a tombstone is not an error
]
REASONS = {
    1: "malformed JSON value",
    2: "unknown op x",
    3: "schema mismatch: the payload does not match the value schema",
    5: "schema mismatch: column name is int in the change events but string in the target table",
}


def test_bad_records_go_to_the_dead_letter_table_and_the_job_keeps_going(
    kafka_broker: KafkaBroker, items_topic: str, spark: SparkSession, tmp_path: Path
) -> None:
    _produce(kafka_broker, items_topic, BAD_RECORDS)
    sink = sink_resource(
        bootstrap_servers=kafka_broker.bootstrap_servers, topics=[items_topic], workdir=tmp_path
    )

    apply_backlog(spark, sink)
    _produce(kafka_broker, items_topic, [_good(7, 70)])
    apply_backlog(spark, sink)

    rows = spark.read.format("delta").load(table_path(sink, items_topic)).select("id", "name")
    assert sorted(map(tuple, rows.collect())) == [(1, "n1"), (5, "n5"), (7, "n7")]
    letters = spark.read.format("delta").load(str(tmp_path / "dead-letters")).collect()
    assert {r["offset"]: r["reason"] for r in letters} == REASONS  # once each, not per run
    malformed = next(r for r in letters if r["offset"] == 1)
    assert (malformed["topic"], malformed["partition"], malformed["key"]) == (
        items_topic,
        0,
        '{"id": 2}',
    )
    assert malformed["value"] == BAD_RECORDS[1][1].decode()  # type: ignore[union-attr]
    assert json.loads(next(r for r in letters if r["offset"] == 2)["value"])["op"] == "x"


def test_with_on_error_fail_the_job_stops_with_the_first_bad_record_and_applies_nothing(
    kafka_broker: KafkaBroker, items_topic: str, spark: SparkSession, tmp_path: Path
) -> None:
    _produce(kafka_broker, items_topic, BAD_RECORDS)
    sink = sink_resource(
        bootstrap_servers=kafka_broker.bootstrap_servers,
        topics=[items_topic],
        workdir=tmp_path,
        deadLetter={"path": str(tmp_path / "dead-letters"), "onError": "fail"},
    )

    with pytest.raises(BadRecordsError) as failure:
        apply_backlog(spark, sink)

    message = str(failure.value)
    assert message.startswith("4 record(s) in micro-batch 0 cannot be applied")
    assert f"{items_topic} partition 0 offset 1: malformed JSON value" in message
    assert "Nothing of this micro-batch was applied" in message
    assert not Path(table_path(sink, items_topic)).exists()
    assert not (tmp_path / "dead-letters").exists()
