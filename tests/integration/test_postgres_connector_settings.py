"""Debezium 3.7 connector settings that change events or connection behaviour, against real
PostgreSQL and Kafka: query and connection timeouts, LSN flushing, replica identities set at
start, snapshot isolation, ordering, delay and configuration-based snapshots, column comments,
built-in tables, guardrails and failover slots (on a server too old for them).
"""

from __future__ import annotations

import logging
import socket
import time
from typing import Any

import pytest

from cdcflow.capture.connectors.postgres.connection import (
    Endpoint,
    connect,
    validation_timeout_s,
)
from cdcflow.capture.errors import FatalError, RetriableError
from tests.plugins.fix_capture import CaptureHarness, Event

PLAIN = {"key.converter.schemas.enable": False, "value.converter.schemas.enable": False}


def _run_until_failure(capture: CaptureHarness, table: str, **config: Any) -> Exception:
    running = capture.start(capture.resource([table], **config), wait_for=None)
    running.thread.join(60)
    assert not running.thread.is_alive() and running.errors, "the engine did not fail"
    error = running.errors[0]
    assert isinstance(error, Exception)
    return error


def _confirmed_flush(capture: CaptureHarness) -> int:
    [(lsn,)] = capture.query(
        "SELECT confirmed_flush_lsn - '0/0'::pg_lsn FROM pg_replication_slots "
        f"WHERE slot_name = '{capture.name}'"
    )
    return int(lsn)


def _field(event: Event, block: str, name: str) -> dict[str, Any]:
    (struct,) = [f for f in event.value["schema"]["fields"] if f["field"] == block]
    (found,) = [f for f in struct["fields"] if f["field"] == name]
    return dict(found)


def test_a_statement_longer_than_the_query_timeout_is_cancelled(capture: CaptureHarness) -> None:
    table = capture.table("slow")
    capture.sql(f"CREATE TABLE {table} (id int PRIMARY KEY)", f"INSERT INTO {table} VALUES (1)")
    config = {
        "database.query.timeout.ms": 1500,  # whole seconds, as Debezium: 1 s
        "snapshot.select.statement.overrides": f"public.{table}",
        f"snapshot.select.statement.overrides.public.{table}": (
            f"SELECT id FROM {table} WHERE pg_sleep(3) IS NOT NULL"
        ),
    }
    error = _run_until_failure(capture, table, **config)
    assert isinstance(error, FatalError) and "statement timeout" in str(error)


def test_the_validating_connection_gives_up_after_the_validation_timeout() -> None:
    with socket.create_server(("127.0.0.1", 0)) as silent:  # accepts, never answers
        port = silent.getsockname()[1]
        endpoint = Endpoint("127.0.0.1", port, "db", "u", "pw-not-used", sslmode="disable")
        started = time.monotonic()
        with pytest.raises(RetriableError, match="timeout expired"):
            connect(endpoint, connect_timeout_s=validation_timeout_s(1000))
        assert time.monotonic() - started < 6


def test_manual_lsn_flushing_leaves_the_slot_where_it_was(capture: CaptureHarness) -> None:
    table = capture.table("manual")
    capture.sql(f"CREATE TABLE {table} (id int PRIMARY KEY)")
    config = {"lsn.flush.mode": "manual", "status.update.interval.ms": 100}
    running = capture.start(capture.resource([table], **config))
    created = _confirmed_flush(capture)
    capture.sql(f"INSERT INTO {table} VALUES (1)", f"INSERT INTO {table} VALUES (2)")
    capture.wait_for_events(f"public.{table}", lambda ev: len(ev) >= 2)
    time.sleep(0.5)  # offsets committed (200 ms) and status updates sent (100 ms) meanwhile
    assert running.engine.stats.offsets_committed > 0
    assert _confirmed_flush(capture) == created
    running.stop()

    confirming = capture.start(capture.resource([table], **{"status.update.interval.ms": 100}))
    capture.sql(f"INSERT INTO {table} VALUES (3)")
    capture.wait_for_events(f"public.{table}", lambda ev: len(ev) >= 3)
    deadline = time.monotonic() + 10
    while _confirmed_flush(capture) == created and time.monotonic() < deadline:
        time.sleep(0.1)
    confirming.stop()
    assert _confirmed_flush(capture) > created


def test_replica_identities_are_set_at_start_as_configured(capture: CaptureHarness) -> None:
    full, keyed = capture.table("full"), capture.table("keyed")
    capture.sql(
        f"CREATE TABLE {full} (id int PRIMARY KEY, note text)",
        f"CREATE TABLE {keyed} (id int NOT NULL, note text)",
        f"CREATE UNIQUE INDEX {keyed}_idx ON {keyed} (id)",
        f"INSERT INTO {full} VALUES (1, 'old')",
    )
    config = {
        "replica.identity.autoset.values": (f"public.{full}:FULL,public.{keyed}:INDEX {keyed}_idx"),
        **PLAIN,
    }
    running = capture.start(capture.resource([full, keyed], **config))
    capture.sql(f"UPDATE {full} SET note = 'new'")
    events = capture.wait_for_events(f"public.{full}", lambda ev: len(ev) >= 2)
    running.stop()

    identities = dict(
        capture.query(
            f"SELECT relname, relreplident FROM pg_class WHERE relname IN ('{full}', '{keyed}')"
        )
    )
    assert identities == {full: "f", keyed: "i"}
    assert events[1].payload["before"] == {"id": 1, "note": "old"}  # a full old image


def _isolation_of_snapshot(capture: CaptureHarness, **config: Any) -> str:
    table = capture.table("iso")
    capture.sql(
        f"CREATE TABLE IF NOT EXISTS {table} (id int PRIMARY KEY, note text)",
        f"INSERT INTO {table} VALUES (1, 'x') ON CONFLICT DO NOTHING",
    )
    override = f"SELECT id, current_setting('transaction_isolation') AS note FROM {table}"
    properties = {
        "snapshot.mode": "initial_only",  # no slot: the isolation mode decides
        "snapshot.select.statement.overrides": f"public.{table}",
        f"snapshot.select.statement.overrides.public.{table}": override,
        **PLAIN,
        **config,
    }
    capture.offsets_path.unlink(missing_ok=True)
    running = capture.start(capture.resource([table], **properties), wait_for=None)
    running.thread.join(60)
    assert not running.errors
    events = capture.events(f"public.{table}")
    return str(events[-1].payload["after"]["note"])


def test_the_snapshot_isolation_mode_sets_the_snapshot_transactions_isolation(
    capture: CaptureHarness,
) -> None:
    assert _isolation_of_snapshot(capture) == "serializable"
    read_committed = {"snapshot.isolation.mode": "read_committed"}
    assert _isolation_of_snapshot(capture, **read_committed) == "read committed"
    repeatable = {"snapshot.isolation.mode": "repeatable_read"}
    assert _isolation_of_snapshot(capture, **repeatable) == "repeatable read"


def test_snapshot_tables_are_read_in_row_count_order(capture: CaptureHarness) -> None:
    small, large = capture.table("small"), capture.table("large")
    capture.sql(
        f"CREATE TABLE {small} (id int PRIMARY KEY)",
        f"CREATE TABLE {large} (id int PRIMARY KEY)",
        f"INSERT INTO {small} VALUES (1)",
        f"INSERT INTO {large} SELECT generate_series(1, 5)",
        f"ANALYZE {small}",
        f"ANALYZE {large}",
    )
    config = {"snapshot.mode": "initial_only", "snapshot.tables.order.by.row.count": "descending"}
    running = capture.start(capture.resource([small, large], **config), wait_for=None)
    running.thread.join(60)
    assert not running.errors
    assert list(running.engine.stats.tables) == [f"public.{large}", f"public.{small}"]
    [first_of_small] = [
        e for e in capture.events(f"public.{small}") if e.payload["source"]["snapshot"] != "true"
    ]
    assert first_of_small.payload["source"]["snapshot"] == "last"


def test_streaming_starts_the_streaming_delay_after_a_snapshot(capture: CaptureHarness) -> None:
    table = capture.table("delayed")
    capture.sql(f"CREATE TABLE {table} (id int PRIMARY KEY)", f"INSERT INTO {table} VALUES (1)")
    running = capture.start(
        capture.resource([table], **{"streaming.delay.ms": 2000}), wait_for=None
    )
    running.wait_for_phase("snapshot")
    snapshot_seen = time.monotonic()
    running.wait_for_phase("streaming")
    assert time.monotonic() - snapshot_seen >= 1.5
    running.stop()


def test_configuration_based_snapshots_follow_their_switches(capture: CaptureHarness) -> None:
    table = capture.table("based")
    capture.sql(f"CREATE TABLE {table} (id int PRIMARY KEY)", f"INSERT INTO {table} VALUES (1)")
    based = "snapshot.mode.configuration.based"
    snapshot_only = {
        "snapshot.mode": "configuration_based",
        f"{based}.snapshot.data": True,
    }
    running = capture.start(capture.resource([table], **snapshot_only), wait_for=None)
    running.thread.join(60)
    assert not running.errors and running.engine.stats.phase == "stopped"
    assert (
        capture.query(f"SELECT 1 FROM pg_replication_slots WHERE slot_name = '{capture.name}'")
        == []
    )

    # No slot holds the snapshot's position: on.data.error drops that offset and streams.
    stream_only = {
        "snapshot.mode": "configuration_based",
        f"{based}.start.stream": True,
        f"{based}.snapshot.on.data.error": True,
    }
    streaming = capture.start(capture.resource([table], **stream_only))
    capture.sql(f"INSERT INTO {table} VALUES (2)")
    events = capture.wait_for_events(f"public.{table}", lambda ev: len(ev) >= 2)
    streaming.stop()
    assert [(e.op, e.key["payload"]["id"]) for e in events] == [("r", 1), ("c", 2)]


def test_column_comments_document_their_fields(capture: CaptureHarness) -> None:
    table = capture.table("commented")
    capture.sql(
        f"CREATE TABLE {table} (id int PRIMARY KEY, note text, plain text)",
        f"COMMENT ON COLUMN {table}.id IS 'the id'",
        f"COMMENT ON COLUMN {table}.note IS 'a note'",
        f"INSERT INTO {table} VALUES (1, 'x', 'y')",
    )
    config = {"include.schema.comments": True, "column.propagate.source.type": ".*\\.note"}
    running = capture.start(capture.resource([table], **config))
    capture.sql(f"INSERT INTO {table} VALUES (2, 'x', 'y')")
    events = capture.wait_for_events(f"public.{table}", lambda ev: len(ev) >= 2)
    running.stop()

    for event in events:  # snapshot and stream alike
        assert event.key["schema"]["fields"][0]["doc"] == "the id"
        assert _field(event, "after", "id")["doc"] == "the id"
        note = _field(event, "after", "note")
        assert note["doc"] == "a note"
        assert note["parameters"]["__debezium.source.column.comment"] == "a note"
        assert "doc" not in _field(event, "after", "plain")


def test_builtin_tables_are_captured_only_when_not_ignored(capture: CaptureHarness) -> None:
    schema = capture.table("gis")
    capture.sql(
        f"CREATE SCHEMA {schema}",
        f"CREATE TABLE {schema}.spatial_ref_sys (srid int PRIMARY KEY)",
        f"INSERT INTO {schema}.spatial_ref_sys VALUES (4326)",
    )
    include = {"table.include.list": f"{schema}\\.spatial_ref_sys"}
    try:
        error = _run_until_failure(capture, "unused", **include)
        assert "no table matches the filters" in str(error)
        running = capture.start(capture.resource([], **include, **{"table.ignore.builtin": False}))
        events = capture.wait_for_events(f"{schema}.spatial_ref_sys", lambda ev: len(ev) >= 1)
        running.stop()
        assert events[0].key["payload"]["srid"] == 4326
    finally:
        capture.sql(f"DROP SCHEMA {schema} CASCADE")


def test_the_collections_guardrail_fails_a_connector_capturing_too_many_tables(
    capture: CaptureHarness,
) -> None:
    first, second = capture.table("g1"), capture.table("g2")
    capture.sql(f"CREATE TABLE {first} (id int PRIMARY KEY)", f"CREATE TABLE {second} (id int)")
    config = {
        "table.include.list": f"public\\.{first},public\\.{second}",
        "guardrail.collections.max": 1,
        "guardrail.collections.limit.action": "fail",
    }
    error = _run_until_failure(capture, first, **config)
    assert "Guardrail limit exceeded: 2 tables/collections" in str(error)


def test_a_failover_slot_is_a_regular_one_before_postgresql_17(
    capture: CaptureHarness, caplog: pytest.LogCaptureFixture
) -> None:
    table = capture.table("failover")
    capture.sql(f"CREATE TABLE {table} (id int PRIMARY KEY)")
    with caplog.at_level(logging.INFO):
        running = capture.start(capture.resource([table], **{"slot.failover": True}))
    capture.sql(f"INSERT INTO {table} VALUES (1)")
    capture.wait_for_events(f"public.{table}", lambda ev: len(ev) >= 1)
    running.stop()
    assert "slot.failover: PostgreSQL" in caplog.text and "creating a regular slot" in caplog.text
