"""The PostgreSQL connector on the releases users deploy: 16 and 17 (the servers Maven Central
serves as ``io.zonky.test.postgres`` binaries), beside the suite's system PostgreSQL 15.

One connector per release snapshots, streams every operation, stops and resumes without a gap
or a repeat; on 17, ``slot.failover`` creates a failover slot (what a standby with
``sync_replication_slots`` keeps in step), and on 16 it says it cannot and goes on.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from cdcflow.operator.devservices import postgres
from cdcflow.operator.devservices.kafka import KafkaBroker
from cdcflow.operator.devservices.postgres import PostgresServer
from tests.plugins.fix_capture import CaptureHarness

PLAIN = {"key.converter.schemas.enable": False, "value.converter.schemas.enable": False}


@pytest.fixture(scope="module", params=["16", "17"])
def release(request: pytest.FixtureRequest) -> Iterator[PostgresServer]:
    with postgres.running_postgres(major=request.param) as server:
        yield server


@pytest.fixture
def harness(
    release: PostgresServer, kafka_broker: KafkaBroker, tmp_path: Path
) -> Iterator[CaptureHarness]:
    harness = CaptureHarness(release, kafka_broker, tmp_path, name=f"t{uuid.uuid4().hex[:10]}")
    yield harness
    harness.cleanup()


def test_the_connector_snapshots_streams_and_resumes_on_each_release(
    harness: CaptureHarness,
) -> None:
    (version,) = harness.query("SHOW server_version_num")[0]
    table = harness.table("orders")
    harness.sql(
        f"CREATE TABLE {table} (id int PRIMARY KEY, v text)",
        f"INSERT INTO {table} VALUES (1, 'snapshot')",
    )
    resource = harness.resource([table], **PLAIN, **{"slot.failover": True})
    first = harness.start(resource)
    harness.sql(
        f"INSERT INTO {table} VALUES (2, 'created')",
        f"UPDATE {table} SET v = 'updated' WHERE id = 1",
        f"DELETE FROM {table} WHERE id = 2",
    )
    topic = f"public.{table}"
    harness.wait_for_events(topic, lambda ev: len(ev) >= 5)
    first.stop()
    (failover,) = harness.query(
        "SELECT "
        + ("failover" if int(version) >= 170000 else "false")
        + f" FROM pg_replication_slots WHERE slot_name = '{harness.name}'"
    )[0]
    assert failover is (int(version) >= 170000), "17 creates a failover slot, 16 cannot"

    harness.sql(f"INSERT INTO {table} VALUES (3, 'while stopped')")
    second = harness.start(resource)
    harness.sql(f"INSERT INTO {table} VALUES (4, 'after the restart')")
    events = harness.wait_for_events(topic, lambda ev: any(e.key == {"id": 4} for e in ev))
    second.stop()

    assert [(e.key["id"], e.op) for e in events] == [
        (1, "r"),
        (2, "c"),
        (1, "u"),
        (2, "d"),
        (2, None),  # the tombstone
        (3, "c"),
        (4, "c"),
    ], f"PostgreSQL {version}"
