"""The PostgreSQL connector on the releases users deploy: 16 and 17 (the servers Maven Central
serves as ``io.zonky.test.postgres`` binaries), beside the suite's system PostgreSQL 15.

One connector per release snapshots, streams every operation, stops and resumes without a gap
or a repeat; on 17, ``slot.failover`` creates a failover slot (what a standby with
``sync_replication_slots`` keeps in step), and on 16 it says it cannot and goes on. The log's
budget on both: a slot nearing ``max_slot_wal_keep_size`` warns, an invalidated one stops the
connector until ``snapshot.mode=when_needed`` snapshots again, and an idle captured database
holds no WAL back while other databases write. On 17, a failover slot synchronised to a
physical standby (``sync_replication_slots``) carries the connector across the standby's
promotion without a loss, a repeat or a new snapshot; on 16, the connector captures from a
standby and refuses at start what a standby cannot do.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from cdcflow.capture.connectors.postgres import log_budget
from cdcflow.capture.errors import PositionLostError
from cdcflow.capture.log_budget import LogBudget, LogState
from cdcflow.operator.devservices import postgres
from cdcflow.operator.devservices.kafka import KafkaBroker
from cdcflow.operator.devservices.postgres import PostgresServer
from tests.plugins.fix_capture import CaptureHarness, eventually
from tests.services import postgres_standby

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


def test_a_slot_warns_near_its_keep_size_and_when_needed_snapshots_once_it_is_invalidated(
    harness: CaptureHarness, release: PostgresServer
) -> None:
    table = harness.table("kept")
    harness.sql(
        f"CREATE TABLE {table} (id int PRIMARY KEY, v text)",
        f"INSERT INTO {table} VALUES (1, 'snapshot')",
        "ALTER SYSTEM SET max_slot_wal_keep_size = '64MB'",
        "SELECT pg_reload_conf()",
    )
    try:
        measured = {"log.budget.check.interval.ms": 200}
        resource = harness.resource([table], **PLAIN, **measured)
        first = harness.start(resource)
        harness.sql(f"INSERT INTO {table} VALUES (2, 'streamed')")
        harness.wait_for_events(f"public.{table}", lambda ev: len(ev) >= 2)
        reported = eventually(lambda: first.engine.stats.log_budget)
        first.stop()
        assert reported["state"] == "ok" and reported["walStatus"] == "reserved"
        assert reported["safeBytes"] is not None and reported["safeBytes"] > 32 * MIB

        harness.sql(f"INSERT INTO {table} VALUES (3, 'written while stopped')")
        with psycopg.connect(release.dsn(), autocommit=True) as conn:
            warned = _write_wal_until(conn, harness.name, LogState.WARNING)
            lost = _write_wal_until(conn, harness.name, LogState.LOST)
        assert warned.safe_bytes is not None and warned.safe_bytes < 16 * MIB, warned
        assert "invalidated" in lost.message

        refused = harness.start(resource, wait_for=None)
        refused.thread.join(60)
        assert refused.errors and isinstance(refused.errors[0], PositionLostError)
        assert "wal_status=lost" in str(refused.errors[0])

        when_needed = {**measured, "snapshot.mode": "when_needed"}
        again = harness.start(harness.resource([table], **PLAIN, **when_needed))
        harness.sql(f"INSERT INTO {table} VALUES (4, 'after')")
        events = harness.wait_for_events(
            f"public.{table}", lambda ev: any(e.key == {"id": 4} for e in ev)
        )
        again.stop()
        assert [(e.key["id"], e.op) for e in events[2:]] == [(1, "r"), (2, "r"), (3, "r"), (4, "c")]
    finally:
        harness.sql("ALTER SYSTEM RESET max_slot_wal_keep_size", "SELECT pg_reload_conf()")


MIB = 1024 * 1024


def _write_wal_until(
    conn: psycopg.Connection[tuple[Any, ...]], slot: str, state: LogState
) -> LogBudget:
    """Write WAL a segment at a time (a checkpoint after each: it is what invalidates a slot)
    until the slot's budget reaches ``state``."""
    conn.execute("CREATE TABLE IF NOT EXISTS wal_filler (n int)")
    for _ in range(40):
        budget = log_budget.measure(conn, slot)
        if budget.state is state:
            return budget
        conn.execute("INSERT INTO wal_filler VALUES (1)")
        conn.execute("SELECT pg_switch_wal()")
        conn.execute("CHECKPOINT")
    raise AssertionError(f"the slot never reached {state}: {budget}")


def _retained_below(budget: dict[str, Any] | None, limit: int) -> dict[str, Any] | None:
    """``budget`` once the slot retains less than ``limit`` bytes, else None."""
    if budget is None or budget["retainedBytes"] is None or budget["retainedBytes"] >= limit:
        return None
    return budget


def test_an_idle_captured_database_holds_no_wal_back_while_others_write(
    harness: CaptureHarness, release: PostgresServer
) -> None:
    table = harness.table("quiet")
    harness.sql(
        f"CREATE TABLE {table} (id int PRIMARY KEY)",
        f"CREATE TABLE {table}_heartbeat (id int PRIMARY KEY, at timestamptz)",
    )
    other = f"{harness.name}_busy"
    harness.sql(f"CREATE DATABASE {other}")
    heartbeat = (
        f"INSERT INTO {table}_heartbeat VALUES (1, now()) "
        "ON CONFLICT (id) DO UPDATE SET at = excluded.at"
    )
    resource = harness.resource(
        [table],
        **PLAIN,
        **{
            "heartbeat.interval.ms": 300,
            "heartbeat.action.query": heartbeat,
            "log.budget.check.interval.ms": 300,
        },
    )
    running = harness.start(resource)
    try:
        with psycopg.connect(release.dsn(dbname=other), autocommit=True) as busy:
            busy.execute("CREATE TABLE traffic (n int, pad text)")
            for _ in range(8):  # 8 WAL segments of traffic the connector never captures
                busy.execute(
                    "INSERT INTO traffic SELECT n, repeat('x', 200) "
                    "FROM generate_series(1, 20000) n"
                )
                busy.execute("SELECT pg_switch_wal()")
            written = 8 * 16 * MIB
        # the slot follows the server: what it retains shrinks to the segment being written
        held = eventually(lambda: _retained_below(running.engine.stats.log_budget, 16 * MIB))
    finally:
        running.stop()
        harness.sql(f"DROP DATABASE {other}")
    assert held["state"] == "ok" and held["retainedBytes"] < written


def test_a_failover_slot_carries_the_connector_across_a_promoted_standby(
    kafka_broker: KafkaBroker, tmp_path: Path
) -> None:
    with postgres.running_postgres(major="17") as primary:
        harness = CaptureHarness(primary, kafka_broker, tmp_path, name=f"t{uuid.uuid4().hex[:10]}")
        table = harness.table("orders")
        harness.sql(
            f"CREATE TABLE {table} (id int PRIMARY KEY, v text)",
            f"INSERT INTO {table} VALUES (1, 'snapshot')",
        )
        standby_settings = {"sync_replication_slots": "on", "hot_standby_feedback": "on"}
        with postgres_standby.running_standby(
            primary, slot="standby1", settings=standby_settings
        ) as standby:
            # the primary sends a logical change only once the standby has its WAL, so the
            # connector is never ahead of the server that takes over
            harness.sql(
                "ALTER SYSTEM SET synchronized_standby_slots = 'standby1'",
                "SELECT pg_reload_conf()",
            )
            resource = harness.resource([table], **PLAIN, **{"slot.failover": True})
            before = harness.start(resource)
            for n in range(2, 12):
                harness.sql(f"INSERT INTO {table} VALUES ({n}, 'before')")
            topic = f"public.{table}"
            harness.wait_for_events(topic, lambda ev: len(ev) >= 11)
            eventually(lambda: _synced(standby, harness.name), timeout_s=90)
            for n in range(12, 22):  # some of these are in flight when the primary fails
                harness.sql(f"INSERT INTO {table} VALUES ({n}, 'around the failover')")
            postgres_standby.crash(primary)
            before.stop()

            with psycopg.connect(standby.dsn(), autocommit=True) as conn:
                conn.execute("SELECT pg_promote(true, 60)")
            promoted = dataclasses.replace(harness, postgres=standby, running=[])
            after = promoted.start(resource_on(promoted, table))
            promoted.sql(f"INSERT INTO {table} VALUES (22, 'after')")
            events = promoted.wait_for_events(
                topic, lambda ev: any(e.key == {"id": 22} for e in ev)
            )
            after.stop()
            survived = {row[0] for row in promoted.query(f"SELECT id FROM {table}")}
            promoted.cleanup()

    ops = [(e.key["id"], e.op) for e in events]
    assert ops[0] == (1, "r") and all(op == "c" for _, op in ops[1:]), "no new snapshot"
    streamed = [key for key, _ in ops[1:]]
    assert len(streamed) == len(set(streamed)), f"repeated: {streamed}"
    assert set(streamed) | {1} == survived, "every row the new primary has, and nothing else"


def resource_on(harness: CaptureHarness, table: str) -> Any:
    """The same connector, pointed at ``harness``'s server."""
    return harness.resource([table], **PLAIN, **{"slot.failover": True})


def _synced(standby: PostgresServer, slot: str) -> bool | None:
    """True once the standby holds a synchronised, persistent copy of ``slot``."""
    with psycopg.connect(standby.dsn(), autocommit=True) as conn:
        row = conn.execute(
            "SELECT synced AND NOT temporary FROM pg_replication_slots WHERE slot_name = %s",
            (slot,),
        ).fetchone()
    return True if row and row[0] else None


def test_the_connector_captures_from_a_standby_and_says_what_it_cannot_do_there(
    kafka_broker: KafkaBroker, tmp_path: Path
) -> None:
    with postgres.running_postgres(major="16") as primary:
        harness = CaptureHarness(primary, kafka_broker, tmp_path, name=f"t{uuid.uuid4().hex[:10]}")
        table = harness.table("orders")
        harness.sql(
            f"CREATE TABLE {table} (id int PRIMARY KEY, v text)",
            f"INSERT INTO {table} VALUES (1, 'snapshot')",
            f"CREATE PUBLICATION {harness.name} FOR TABLE {table}",  # a standby cannot create it
        )
        settings = {"hot_standby_feedback": "on"}
        with postgres_standby.running_standby(
            primary, slot="standby1", settings=settings
        ) as standby:
            on_standby = dataclasses.replace(harness, postgres=standby, running=[])
            writes = {
                "heartbeat.action.query": "UPDATE heartbeat SET at = now()",
                "publication.name": f"{harness.name}_missing",
            }
            for name, value in writes.items():
                refused = on_standby.start(
                    on_standby.resource([table], **PLAIN, **{name: value}), wait_for=None
                )
                refused.thread.join(30)
                assert refused.errors, f"{name} on a standby"
                message = str(refused.errors[0])
                assert "standby" in message and "primary" in message, message
            resource = on_standby.resource([table], **PLAIN, **{"read.only": True})
            running = on_standby.start(resource, wait_for=None)
            # a slot on a standby is made at the primary's next running-transactions record
            eventually(lambda: _nudged(primary, running), timeout_s=60)
            harness.sql(
                f"INSERT INTO {table} VALUES (2, 'created')",
                f"UPDATE {table} SET v = 'updated' WHERE id = 1",
            )
            on_standby.wait_for_events(f"public.{table}", lambda ev: len(ev) >= 3)
            # read.only: an incremental snapshot on the standby, which nothing may write to
            request = f'{{"data-collections": ["public.{table}"]}}'
            assert running.engine.send_signal("on-standby", "execute-snapshot", request)
            events = on_standby.wait_for_events(f"public.{table}", lambda ev: len(ev) >= 5)
            running.stop()
    assert [(e.key["id"], e.op) for e in events] == [
        (1, "r"),
        (2, "c"),
        (1, "u"),
        (1, "r"),  # the incremental snapshot's reads
        (2, "r"),
    ]


def _nudged(primary: PostgresServer, running: Any) -> bool | None:
    """True once the engine streams; until then the primary logs a running-transactions
    record (what a slot being created on its standby waits for)."""
    if running.errors:
        raise running.errors[0]
    if running.engine.stats.phase == "streaming":
        return True
    with psycopg.connect(primary.dsn(), autocommit=True) as conn:
        conn.execute("SELECT pg_log_standby_snapshot()")
    time.sleep(0.5)
    return None


def test_a_transaction_larger_than_the_decoding_memory_streams_without_a_server_spill(
    harness: CaptureHarness,
) -> None:
    table = harness.table("huge")
    harness.sql(
        f"CREATE TABLE {table} (id int PRIMARY KEY, v text)",
        "ALTER SYSTEM SET logical_decoding_work_mem = '64kB'",  # the least the server allows
        "SELECT pg_reload_conf()",
    )
    try:
        running = harness.start(harness.resource([table], **PLAIN))
        harness.sql(
            "BEGIN",
            f"INSERT INTO {table} SELECT g, 'row ' || g FROM generate_series(1, 20000) g",
            "SAVEPOINT undone",
            f"INSERT INTO {table} SELECT g, 'rolled back' FROM generate_series(50001, 50100) g",
            "ROLLBACK TO SAVEPOINT undone",
            f"UPDATE {table} SET v = 'updated' WHERE id <= 10",
            "COMMIT",
        )
        harness.sql(
            "BEGIN",
            f"INSERT INTO {table} SELECT g, 'aborted' FROM generate_series(60001, 80000) g",
            "ROLLBACK",
        )
        harness.sql(f"INSERT INTO {table} VALUES (99999, 'after')")
        topic = f"public.{table}"
        events = harness.wait_for_events(topic, lambda ev: any(e.key == {"id": 99999} for e in ev))
        spilled, streamed = harness.query(
            "SELECT spill_txns, stream_txns FROM pg_stat_replication_slots "
            f"WHERE slot_name = '{harness.name}'"
        )[0]
        running.stop()
    finally:
        harness.sql("ALTER SYSTEM RESET logical_decoding_work_mem", "SELECT pg_reload_conf()")

    ops = [(e.key["id"], e.op) for e in events]
    assert ops == [
        *[(n, "c") for n in range(1, 20001)],
        *[(n, "u") for n in range(1, 11)],
        (99999, "c"),
    ], "the transaction whole and in order; nothing of the savepoint or the aborted one"
    assert (spilled, streamed) == (0, 2), "streamed while running, nothing spilled"
