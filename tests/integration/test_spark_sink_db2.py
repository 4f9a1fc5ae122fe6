"""The Spark sink applies the Db2 connector's topics: the Delta table ends equal to Db2.

One workload runs once for the module on the emulation of Db2's ASN capture
(tests/services/db2_emulation: no Db2 server can run here) and is captured by cdcflow's Db2
connector into the session's real Kafka: a snapshot, then CD-table changes. The sink orders a
key's changes by ``source.commit_lsn`` then ``source.change_lsn``; the workload makes both
count — a key changed several times in one transaction (one commit LSN, rising change LSNs), a
key deleted and created again in one transaction, a primary-key change, seeded random
transactions — and the tests apply the topic in order and shuffled.
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from cdcflow.operator.devservices.kafka import KafkaBroker
from cdcflow.operator.devservices.postgres import PostgresServer
from tests.integration.sink_support import delta_rows, plain, table_path
from tests.integration.test_spark_sink_mysql import Row, _apply, _produce, _sink
from tests.plugins.fix_capture import CaptureHarness
from tests.plugins.fix_conformance import Db2Driver
from tests.plugins.fix_kafka import read_topic_to_end
from tests.services.db2_emulation import Db2Emulation

COLUMNS = ("id", "name", "n")
SENTINEL = 1_000_000


@dataclass(frozen=True)
class Captured:
    """The module's Db2 table, captured into Kafka; the connector has stopped."""

    db2: Db2Driver
    table: str

    @property
    def servers(self) -> str:
        return self.db2.capture.kafka.bootstrap_servers

    @property
    def topic(self) -> str:
        return f"{self.db2.name}.{self.db2.topic(self.table)}"

    def rows(self) -> list[Row]:
        names = ", ".join(f'"{c}"' for c in COLUMNS)
        found = self.db2.db2.query(f"SELECT {names} FROM {self.db2._qualified(self.table)}")
        return sorted((tuple(plain(v) for v in row) for row in found), key=repr)


@pytest.fixture(scope="module")
def captured(
    postgres_server: PostgresServer,
    kafka_broker: KafkaBroker,
    db2_emulation: Db2Emulation,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Captured]:
    harness = CaptureHarness(
        postgres_server,
        kafka_broker,
        tmp_path_factory.mktemp("db2-capture"),
        name=f"t{uuid.uuid4().hex[:10]}",
    )
    db2 = Db2Driver(harness, db2_emulation)
    try:
        yield _run_workload(db2)
    finally:
        for running in harness.running:
            running.engine.stop.set()
            running.thread.join(30)


def _run_workload(db2: Db2Driver) -> Captured:
    table = db2.table("accounts")
    source = db2._qualified(table)
    db2.db2.ensure_schema(db2.schema)
    db2.run(
        f'CREATE TABLE {source} ("id" INTEGER NOT NULL PRIMARY KEY, '
        '"name" VARCHAR(40) NOT NULL, "n" INTEGER NOT NULL)',
        f"INSERT INTO {source} VALUES " + ", ".join(f"({k}, 'snap{k}', 0)" for k in range(1, 21)),
    )
    db2.db2.add_table(db2.schema, table)
    running = db2.start([table], **{"key.converter.schemas.enable": False})

    def update(key: int, name: str) -> str:
        return f'UPDATE {source} SET "name" = \'{name}\', "n" = "n" + 1 WHERE "id" = {key}'

    # One key changed three times and another deleted and created again in one commit.
    db2.run_atomically(
        update(5, "five-a"),
        update(5, "five-b"),
        update(5, "five-c"),
        f'DELETE FROM {source} WHERE "id" = 6',
        f"INSERT INTO {source} VALUES (6, 'six-again', 100)",
    )
    db2.run(f'UPDATE {source} SET "id" = 70 WHERE "id" = 7')
    rng = random.Random(3)
    present = set(range(1, 21)) - {7} | {70}
    for batch in range(30):
        statements = []
        for step in range(rng.randint(1, 6)):
            key = rng.choice(sorted(present))
            choice = rng.random()
            if choice < 0.6:
                statements.append(update(key, f"r{batch}-{step}"))
            elif choice < 0.8:
                statements.append(f'DELETE FROM {source} WHERE "id" = {key}')
                present.discard(key)
            else:
                new = 100 + batch * 10 + step
                statements.append(f"INSERT INTO {source} VALUES ({new}, 'new', 0)")
                present.add(new)
            if not present:
                break
        db2.run_atomically(*statements)
    db2.run(f"INSERT INTO {source} VALUES ({SENTINEL}, 'sentinel', 0)")
    db2.wait_for_events(table, lambda ev: any(e.key == {"id": SENTINEL} for e in ev))
    running.stop()
    return Captured(db2, table)


def test_change_table_changes_applied_in_order_leave_delta_equal_to_db2(
    captured: Captured, spark: SparkSession, tmp_path: Path
) -> None:
    sink = _sink(captured.servers, [captured.topic], tmp_path)
    _apply(spark, sink)

    assert delta_rows(spark, table_path(sink, captured.topic), COLUMNS) == captured.rows()


def test_changes_arriving_in_any_order_are_applied_in_commit_then_change_lsn_order(
    captured: Captured, spark: SparkSession, tmp_path: Path
) -> None:
    copy = f"{captured.db2.name}x.{captured.db2.topic(captured.table)}"
    messages = read_topic_to_end(captured.servers, captured.topic)
    random.Random(5).shuffle(messages)
    values = [json.loads(m.value() or b"null") for m in messages]
    fives = [_position(v) for v in values if v and _id(v) == 5]
    assert fives != sorted(fives), "the shuffle should reorder key 5's changes"
    _produce(captured.servers, copy, messages)
    sink = _sink(captured.servers, [copy], tmp_path)

    reports = _apply(spark, sink)

    assert len([r for r in reports if r.records]) == 1
    assert delta_rows(spark, table_path(sink, copy), COLUMNS) == captured.rows()


def _position(value: dict[str, Any]) -> tuple[str, str]:
    source = value["payload"]["source"]
    return source["commit_lsn"], source["change_lsn"] or ""


def _id(value: dict[str, Any]) -> object:
    payload = value["payload"]
    return (payload["after"] or payload["before"])["id"]
