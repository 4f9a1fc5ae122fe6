"""PostgreSQL connector behaviours against real PostgreSQL and Kafka, one behaviour per test.

Snapshot modes, snapshot and filter properties, replica identity, TOAST, logical decoding
messages, heartbeats and the publication and slot lifecycle, as the seed inventory
(``seed-postgresql.md`` §1.3, §2.5-§2.10, §4.7, §4.8, §8) describes them. What every connector
shares (envelopes, key changes, transaction metadata, restarts, skipped operations, truncates,
snapshot.mode never) is in test_connector_conformance.py.
"""

from __future__ import annotations

import base64
import time
from typing import Any

import orjson
import psycopg
import pytest

from cdcflow.capture.connector_resource import CdcConnector
from cdcflow.capture.errors import FatalError
from tests.plugins.fix_capture import CaptureHarness, Event, RunningEngine
from tests.plugins.fix_kafka import read_topic_to_end

PLAIN_KEYS = {"key.converter.schemas.enable": False}
PLAIN = {"key.converter.schemas.enable": False, "value.converter.schemas.enable": False}
#: About 32 KB of hex digits: far over the TOAST threshold, and stored out of line uncompressed.
BIG_VALUE_SQL = (
    "(SELECT string_agg(md5(g::text || random()::text), '') FROM generate_series(1, 1000) g)"
)


# -- helpers -----------------------------------------------------------------------------------


def _ops(events: list[Event]) -> list[tuple[str | None, Any]]:
    """(op, key) pairs, with schemaless keys."""
    return [(e.op, e.key) for e in events]


def _write_offset(capture: CaptureHarness, resource: CdcConnector, value: dict[str, Any]) -> None:
    """Store ``value`` as the connector's offset, as a previous run would have left it."""
    key = [resource.metadata.name, {"server": capture.name}]
    capture.offsets_path.write_bytes(orjson.dumps({"key": key, "value": value}))


def _run_to_end(capture: CaptureHarness, resource: CdcConnector) -> RunningEngine:
    """Start an engine expected to end on its own, and wait until it did."""
    running = capture.start(resource, wait_for=None)
    running.thread.join(60)
    assert not running.thread.is_alive(), "the engine kept running"
    return running


def _start_failure(capture: CaptureHarness, resource: CdcConnector) -> BaseException:
    """Start an engine expected to fail at startup; return its error."""
    running = _run_to_end(capture, resource)
    assert running.errors, "the engine ended without an error"
    return running.errors[0]


def _slot(capture: CaptureHarness) -> tuple[Any, ...] | None:
    """(active, confirmed_flush_lsn, restart_lsn) of the test's slot, LSNs as integers."""
    rows = capture.query(
        "SELECT active, confirmed_flush_lsn - '0/0'::pg_lsn, restart_lsn - '0/0'::pg_lsn "
        f"FROM pg_replication_slots WHERE slot_name = '{capture.name}'"
    )
    return rows[0] if rows else None


def _topic_exists(capture: CaptureHarness, suffix: str) -> bool:
    try:
        capture.events(suffix, timeout=10)
    except LookupError:
        return False
    return True


def _fields(schema: dict[str, Any], name: str) -> list[str]:
    """Field names of the envelope's ``before``/``after`` struct."""
    (block,) = [f for f in schema["fields"] if f["field"] == name]
    return [f["field"] for f in block["fields"]]


# -- 1. snapshot.mode ------------------------------------------------------------------------


def test_snapshot_mode_always_resnapshots_on_every_start_then_streams(
    capture: CaptureHarness,
) -> None:
    table = capture.table("always")
    capture.sql(
        f"CREATE TABLE {table} (id int PRIMARY KEY)", f"INSERT INTO {table} VALUES (1), (2)"
    )
    resource = capture.resource([table], **{"snapshot.mode": "always", **PLAIN_KEYS})
    first = capture.start(resource)
    capture.sql(f"INSERT INTO {table} VALUES (3)")
    capture.wait_for_events(f"public.{table}", lambda ev: len(ev) >= 3)
    first.stop()
    capture.sql(f"INSERT INTO {table} VALUES (4)")  # while the connector is down
    second = capture.start(resource)
    capture.sql(f"INSERT INTO {table} VALUES (5)")
    events = capture.wait_for_events(f"public.{table}", lambda ev: ("c", {"id": 5}) in _ops(ev[3:]))
    second.stop()

    assert _ops(events[:3]) == [("r", {"id": 1}), ("r", {"id": 2}), ("c", {"id": 3})]
    again = events[3:]
    reads = [e for e in again if e.op == "r"]
    assert sorted(e.key["id"] for e in reads) == [1, 2, 3, 4]
    assert [reads[0].payload["source"]["snapshot"], reads[-1].payload["source"]["snapshot"]] == [
        "first",
        "last",
    ]
    assert again.index(reads[-1]) < _ops(again).index(("c", {"id": 5}))


def test_snapshot_mode_initial_only_snapshots_then_ends_without_streaming(
    capture: CaptureHarness,
) -> None:
    table = capture.table("only")
    capture.sql(
        f"CREATE TABLE {table} (id int PRIMARY KEY)", f"INSERT INTO {table} VALUES (1), (2)"
    )
    resource = capture.resource([table], **{"snapshot.mode": "initial_only", **PLAIN_KEYS})
    running = _run_to_end(capture, resource)
    capture.sql(f"INSERT INTO {table} VALUES (3)")

    assert not running.errors
    assert running.engine.stats.phase == "stopped"
    events = capture.events(f"public.{table}")
    assert _ops(events) == [("r", {"id": 1}), ("r", {"id": 2})]
    saved = orjson.loads(capture.offsets_path.read_bytes())["value"]
    assert not saved.get("snapshot") and saved["lsn"] > 0
    assert _slot(capture) is None  # no slot holding WAL for a connector that never streams

    second = _run_to_end(capture, resource)  # the snapshot is complete: nothing to do
    assert not second.errors and second.engine.stats.phase == "stopped"
    assert len(capture.events(f"public.{table}")) == 2


def test_snapshot_mode_initial_resnapshots_after_an_interrupted_snapshot(
    capture: CaptureHarness,
) -> None:
    table = capture.table("redo")
    capture.sql(
        f"CREATE TABLE {table} (id int PRIMARY KEY)", f"INSERT INTO {table} VALUES (1), (2)"
    )
    # The slot was created by the interrupted run, which recorded only the snapshot marker.
    capture.sql(f"SELECT pg_create_logical_replication_slot('{capture.name}', 'pgoutput')")
    resource = capture.resource([table], **PLAIN_KEYS)
    _write_offset(capture, resource, {"snapshot": True})
    running = capture.start(resource)
    capture.sql(f"INSERT INTO {table} VALUES (3)")
    events = capture.wait_for_events(f"public.{table}", lambda ev: ("c", {"id": 3}) in _ops(ev))
    running.stop()

    assert _ops(events)[:2] == [("r", {"id": 1}), ("r", {"id": 2})]
    assert ("c", {"id": 3}) in _ops(events[2:])
    saved = orjson.loads(capture.offsets_path.read_bytes())["value"]
    assert not saved.get("snapshot")


def test_snapshot_mode_never_fails_on_an_offset_recording_an_interrupted_snapshot(
    capture: CaptureHarness,
) -> None:
    table = capture.table("nevredo")
    capture.sql(f"CREATE TABLE {table} (id int PRIMARY KEY)")
    resource = capture.resource([table], **{"snapshot.mode": "never"})
    _write_offset(capture, resource, {"snapshot": True})

    error = _start_failure(capture, resource)
    assert isinstance(error, FatalError)
    assert "interrupted snapshot" in str(error) and "snapshot.mode=initial" in str(error)


# -- 2. snapshot properties ------------------------------------------------------------------


def test_snapshot_include_collection_list_limits_the_snapshot_not_the_stream(
    capture: CaptureHarness,
) -> None:
    a, b = capture.table("snapped"), capture.table("streamed")
    capture.sql(
        f"CREATE TABLE {a} (id int PRIMARY KEY)",
        f"CREATE TABLE {b} (id int PRIMARY KEY)",
        f"INSERT INTO {a} VALUES (1)",
        f"INSERT INTO {b} VALUES (1)",
    )
    config = {"snapshot.include.collection.list": f"public\\.{a}", **PLAIN_KEYS}
    running = capture.start(capture.resource([a, b], **config))
    capture.sql(f"INSERT INTO {b} VALUES (2)")
    streamed = capture.wait_for_events(f"public.{b}", lambda ev: len(ev) >= 1)
    running.stop()

    assert _ops(capture.events(f"public.{a}")) == [("r", {"id": 1})]
    assert _ops(streamed) == [("c", {"id": 2})]


def test_snapshot_select_statement_overrides_choose_the_snapshot_rows(
    capture: CaptureHarness,
) -> None:
    table, unlisted = capture.table("soft"), capture.table("unlisted")
    capture.sql(
        f"CREATE TABLE {table} (id int PRIMARY KEY, deleted boolean NOT NULL)",
        f"INSERT INTO {table} SELECT g, g % 2 = 0 FROM generate_series(1, 6) g",
        f"CREATE TABLE {unlisted} (id int PRIMARY KEY)",
        f"INSERT INTO {unlisted} VALUES (1), (2)",
    )
    config = {
        "snapshot.select.statement.overrides": f"public.{table}",
        f"snapshot.select.statement.overrides.public.{table}": (
            f"SELECT * FROM public.{table} WHERE NOT deleted"
        ),
        # A statement for a table missing from the list is ignored, as in Debezium.
        f"snapshot.select.statement.overrides.public.{unlisted}": (
            f"SELECT * FROM public.{unlisted} WHERE id = 1"
        ),
        **PLAIN_KEYS,
    }
    running = capture.start(capture.resource([table, unlisted], **config))
    capture.sql(f"INSERT INTO {table} VALUES (7, true)")  # the stream is not filtered
    events = capture.wait_for_events(f"public.{table}", lambda ev: len(ev) >= 4)
    running.stop()

    assert _ops(events) == [
        ("r", {"id": 1}),
        ("r", {"id": 3}),
        ("r", {"id": 5}),
        ("c", {"id": 7}),
    ]
    assert _ops(capture.events(f"public.{unlisted}")) == [("r", {"id": 1}), ("r", {"id": 2})]


def test_small_snapshot_fetch_size_still_snapshots_every_row(capture: CaptureHarness) -> None:
    table = capture.table("fetch")
    capture.sql(
        f"CREATE TABLE {table} (id int PRIMARY KEY)",
        f"INSERT INTO {table} SELECT generate_series(1, 10)",
    )
    running = capture.start(capture.resource([table], **{"snapshot.fetch.size": 3, **PLAIN_KEYS}))
    events = capture.wait_for_events(f"public.{table}", lambda ev: len(ev) >= 10)
    running.stop()

    assert [e.key["id"] for e in events] == list(range(1, 11))
    assert {e.op for e in events} == {"r"}


# -- 3. filters ------------------------------------------------------------------------------


def test_table_exclude_list_drops_the_excluded_tables_changes(capture: CaptureHarness) -> None:
    schema = capture.name
    capture.sql(
        f"CREATE SCHEMA {schema}",
        f"CREATE TABLE {schema}.kept (id int PRIMARY KEY)",
        f"CREATE TABLE {schema}.skipped (id int PRIMARY KEY)",
        f"INSERT INTO {schema}.kept VALUES (1)",
        f"INSERT INTO {schema}.skipped VALUES (1)",
        # The publication covers both tables, so the exclusion is the connector's doing.
        f"CREATE PUBLICATION {capture.name} FOR TABLES IN SCHEMA {schema}",
    )
    config = {
        "table.include.list": "",
        "schema.include.list": schema,
        "table.exclude.list": f"{schema}\\.skipped",
        **PLAIN_KEYS,
    }
    try:
        running = capture.start(capture.resource([], **config))
        capture.sql(
            f"INSERT INTO {schema}.skipped VALUES (2)", f"INSERT INTO {schema}.kept VALUES (2)"
        )
        events = capture.wait_for_events(f"{schema}.kept", lambda ev: len(ev) >= 2)
        running.stop()

        assert _ops(events) == [("r", {"id": 1}), ("c", {"id": 2})]
        assert not _topic_exists(capture, f"{schema}.skipped")
        assert running.engine.stats.captured_tables == [f"{schema}.kept"]
    finally:
        capture.sql(f"DROP PUBLICATION IF EXISTS {capture.name}", f"DROP SCHEMA {schema} CASCADE")


def test_table_outside_the_include_list_gets_no_topic(capture: CaptureHarness) -> None:
    kept, other = capture.table("kept"), capture.table("other")
    capture.sql(
        f"CREATE TABLE {kept} (id int PRIMARY KEY)",
        f"CREATE TABLE {other} (id int PRIMARY KEY)",
        f"CREATE PUBLICATION {capture.name} FOR TABLE {kept}, {other}",
    )
    running = capture.start(capture.resource([kept], **PLAIN_KEYS))
    capture.sql(f"INSERT INTO {other} VALUES (1)", f"INSERT INTO {kept} VALUES (1)")
    capture.wait_for_events(f"public.{kept}", lambda ev: len(ev) >= 1)
    running.stop()

    assert not _topic_exists(capture, f"public.{other}")


def test_column_exclude_list_removes_the_column_from_values_but_not_the_key(
    capture: CaptureHarness,
) -> None:
    table = capture.table("colex")
    capture.sql(
        f"CREATE TABLE {table} (id int PRIMARY KEY, name text, secret text)",
        f"ALTER TABLE {table} REPLICA IDENTITY FULL",
        f"INSERT INTO {table} VALUES (1, 'a', 's1')",
    )
    config = {"column.exclude.list": f"public\\.{table}\\.secret"}
    running = capture.start(capture.resource([table], **config))
    capture.sql(
        f"UPDATE {table} SET name = 'b', secret = 's2' WHERE id = 1", f"DELETE FROM {table}"
    )
    events = capture.wait_for_events(f"public.{table}", lambda ev: len(ev) >= 4)
    running.stop()

    read, update, delete = events[:3]
    assert [e.op for e in (read, update, delete)] == ["r", "u", "d"]
    assert read.payload["after"] == {"id": 1, "name": "a"}
    assert update.payload["before"] == {"id": 1, "name": "a"}
    assert update.payload["after"] == {"id": 1, "name": "b"}
    assert delete.payload["before"] == {"id": 1, "name": "b"}
    for event in (read, update, delete):
        assert event.key["payload"] == {"id": 1}
        assert _fields(event.value["schema"], "before") == ["id", "name"]
        assert _fields(event.value["schema"], "after") == ["id", "name"]


def test_column_include_list_keeps_only_the_listed_columns(capture: CaptureHarness) -> None:
    table = capture.table("colin")
    capture.sql(f"CREATE TABLE {table} (id int PRIMARY KEY, name text, age int, notes text)")
    config = {"column.include.list": f"public\\.{table}\\.(id|name)"}
    running = capture.start(capture.resource([table], **config))
    capture.sql(f"INSERT INTO {table} VALUES (1, 'a', 30, 'x')")
    (event,) = capture.wait_for_events(f"public.{table}", lambda ev: len(ev) >= 1)
    running.stop()

    assert event.payload["after"] == {"id": 1, "name": "a"}
    assert _fields(event.value["schema"], "after") == ["id", "name"]
    assert event.key["payload"] == {"id": 1}


def test_message_key_columns_build_the_key_from_the_named_columns(
    capture: CaptureHarness,
) -> None:
    table = capture.table("mkc")
    capture.sql(
        f"CREATE TABLE {table} (id int PRIMARY KEY, tenant int NOT NULL, code text NOT NULL)",
        f"INSERT INTO {table} VALUES (1, 7, 'a')",
    )
    config = {"message.key.columns": f"public\\.{table}:tenant,code"}
    running = capture.start(capture.resource([table], **config))
    capture.sql(f"INSERT INTO {table} VALUES (2, 8, 'b')")
    events = capture.wait_for_events(f"public.{table}", lambda ev: len(ev) >= 2)
    running.stop()

    assert [e.key["payload"] for e in events] == [
        {"tenant": 7, "code": "a"},
        {"tenant": 8, "code": "b"},
    ]
    assert events[1].key["schema"] == {
        "type": "struct",
        "optional": False,
        "name": f"{capture.name}.public.{table}.Key",
        "fields": [
            {"type": "int32", "optional": False, "field": "tenant"},
            {"type": "string", "optional": False, "field": "code"},
        ],
    }


# -- 4. replica identity ---------------------------------------------------------------------


def test_replica_identity_full_gives_the_whole_old_row_on_update_and_delete(
    capture: CaptureHarness,
) -> None:
    table = capture.table("full")
    capture.sql(
        f"CREATE TABLE {table} (id int PRIMARY KEY, name text, n int)",
        f"ALTER TABLE {table} REPLICA IDENTITY FULL",
    )
    running = capture.start(capture.resource([table], **PLAIN))
    capture.sql(
        f"INSERT INTO {table} VALUES (1, 'a', 10)",
        f"UPDATE {table} SET n = 11 WHERE id = 1",
        f"DELETE FROM {table} WHERE id = 1",
    )
    events = capture.wait_for_events(f"public.{table}", lambda ev: len(ev) >= 3)
    running.stop()

    update, delete = events[1].payload, events[2].payload
    assert (update["op"], update["before"]) == ("u", {"id": 1, "name": "a", "n": 10})
    assert update["after"] == {"id": 1, "name": "a", "n": 11}
    assert (delete["op"], delete["before"]) == ("d", {"id": 1, "name": "a", "n": 11})


def test_replica_identity_using_index_keys_snapshot_and_stream_by_the_index(
    capture: CaptureHarness,
) -> None:
    table = capture.table("idx")
    capture.sql(
        f"CREATE TABLE {table} (code text NOT NULL, region text NOT NULL, v text)",
        f"CREATE UNIQUE INDEX {table}_uk ON {table} (code, region)",
        f"ALTER TABLE {table} REPLICA IDENTITY USING INDEX {table}_uk",
        f"INSERT INTO {table} VALUES ('a', 'eu', 'x')",
    )
    running = capture.start(capture.resource([table], **PLAIN))
    capture.sql(
        f"INSERT INTO {table} VALUES ('b', 'us', 'y')",
        f"UPDATE {table} SET v = 'z' WHERE code = 'b'",
        f"DELETE FROM {table} WHERE code = 'a'",
    )
    events = capture.wait_for_events(f"public.{table}", lambda ev: len(ev) >= 5)
    running.stop()

    assert _ops(events) == [
        ("r", {"code": "a", "region": "eu"}),
        ("c", {"code": "b", "region": "us"}),
        ("u", {"code": "b", "region": "us"}),
        ("d", {"code": "a", "region": "eu"}),
        (None, {"code": "a", "region": "eu"}),
    ]
    assert events[2].payload["before"] is None  # the index columns did not change
    assert events[3].payload["before"] == {"code": "a", "region": "eu", "v": None}


def test_replica_identity_nothing_leaves_updates_and_deletes_uncapturable(
    capture: CaptureHarness, caplog: pytest.LogCaptureFixture
) -> None:
    """pgoutput cannot describe an old row without a replica identity, so PostgreSQL refuses
    UPDATE and DELETE on a published table with REPLICA IDENTITY NOTHING: there is never a
    delete without ``before`` to emit, only inserts."""
    table = capture.table("nothing")
    capture.sql(
        f"CREATE TABLE {table} (id int PRIMARY KEY, v text)",
        f"ALTER TABLE {table} REPLICA IDENTITY NOTHING",
    )
    running = capture.start(capture.resource([table], **PLAIN))
    with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState, match="replica identity"):
        capture.sql(f"INSERT INTO {table} VALUES (1, 'a')", f"DELETE FROM {table} WHERE id = 1")
    with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState, match="replica identity"):
        capture.sql(f"UPDATE {table} SET v = 'b' WHERE id = 1")
    capture.sql(f"INSERT INTO {table} VALUES (2, 'b')")
    events = capture.wait_for_events(f"public.{table}", lambda ev: len(ev) >= 2)
    running.stop()

    assert _ops(events) == [("c", {"id": 1}), ("c", {"id": 2})]
    assert any(
        table in r.getMessage() and "REPLICA IDENTITY NOTHING" in r.getMessage()
        for r in caplog.records
    )


# -- 5. TOAST --------------------------------------------------------------------------------


def _toast_table(capture: CaptureHarness, stem: str, *, full: bool = False) -> str:
    table = capture.table(stem)
    capture.sql(
        f"CREATE TABLE {table} (id int PRIMARY KEY, n int, big text)",
        f"ALTER TABLE {table} ALTER COLUMN big SET STORAGE EXTERNAL",
        *([f"ALTER TABLE {table} REPLICA IDENTITY FULL"] if full else []),
    )
    return table


def _toast_changes(capture: CaptureHarness, table: str) -> tuple[str, list[Event]]:
    capture.sql(f"INSERT INTO {table} VALUES (1, 0, {BIG_VALUE_SQL})")
    (big,) = capture.query(f"SELECT big FROM {table} WHERE id = 1")[0]
    (external,) = capture.query(f"SELECT pg_column_size(big) < length(big) FROM {table}")[0]
    assert len(big) > 8192 and not external  # stored whole, out of line
    capture.sql(f"UPDATE {table} SET n = 1 WHERE id = 1", f"DELETE FROM {table} WHERE id = 1")
    events = capture.wait_for_events(f"public.{table}", lambda ev: len(ev) >= 3)
    return big, events


def test_unchanged_toast_value_is_the_unavailable_placeholder_under_default_identity(
    capture: CaptureHarness,
) -> None:
    table = _toast_table(capture, "toast")
    running = capture.start(capture.resource([table], **PLAIN))
    big, events = _toast_changes(capture, table)
    running.stop()

    insert, update, delete = (e.payload for e in events[:3])
    assert insert["after"]["big"] == big
    assert update["before"] is None
    assert update["after"] == {"id": 1, "n": 1, "big": "__debezium_unavailable_value"}
    assert delete["before"] == {"id": 1, "n": None, "big": None}


def test_unavailable_value_placeholder_is_configurable(capture: CaptureHarness) -> None:
    table = _toast_table(capture, "toastph")
    config = {"unavailable.value.placeholder": "<not sent>", **PLAIN}
    running = capture.start(capture.resource([table], **config))
    _, events = _toast_changes(capture, table)
    running.stop()

    assert events[1].payload["after"]["big"] == "<not sent>"


def test_replica_identity_full_carries_the_real_toasted_value(capture: CaptureHarness) -> None:
    table = _toast_table(capture, "toastfull", full=True)
    running = capture.start(capture.resource([table], **PLAIN))
    big, events = _toast_changes(capture, table)
    running.stop()

    update, delete = events[1].payload, events[2].payload
    assert update["before"] == {"id": 1, "n": 0, "big": big}
    assert update["after"] == {"id": 1, "n": 1, "big": big}
    assert delete["before"] == {"id": 1, "n": 1, "big": big}


# -- 7. logical decoding messages ------------------------------------------------------------


def test_logical_decoding_message_becomes_an_m_event_on_the_message_topic(
    capture: CaptureHarness,
) -> None:
    table = capture.table("msg")
    capture.sql(f"CREATE TABLE {table} (id int PRIMARY KEY)")
    running = capture.start(capture.resource([table]))
    capture.sql(
        f"BEGIN; SELECT pg_logical_emit_message(true, 'audit', 'hello'); "
        f"INSERT INTO {table} VALUES (1); COMMIT;",
        "SELECT pg_logical_emit_message(false, 'audit', 'bye')",
    )
    messages = capture.wait_for_events("message", lambda ev: len(ev) >= 2)
    (row,) = capture.events(f"public.{table}")
    running.stop()

    transactional, plain = messages
    assert transactional.key == {
        "schema": {
            "type": "struct",
            "optional": False,
            "name": "io.debezium.connector.postgresql.MessageKey",
            "version": 1,
            "fields": [{"type": "string", "optional": True, "field": "prefix"}],
        },
        "payload": {"prefix": "audit"},
    }
    schema = transactional.value["schema"]
    assert schema["name"] == "io.debezium.connector.postgresql.MessageValue"
    assert [f["field"] for f in schema["fields"]] == [
        "op",
        "ts_ms",
        "source",
        "transaction",
        "message",
    ]
    message_schema = schema["fields"][-1]
    assert message_schema["name"] == "io.debezium.connector.postgresql.Message"
    assert message_schema["fields"] == [
        {"type": "string", "optional": True, "field": "prefix"},
        {"type": "bytes", "optional": True, "field": "content"},
    ]
    payload = transactional.payload
    assert payload["op"] == "m"
    assert payload["message"] == {"prefix": "audit", "content": base64.b64encode(b"hello").decode()}
    assert (payload["source"]["schema"], payload["source"]["table"]) == ("", "")
    assert payload["source"]["txId"] == row.payload["source"]["txId"] is not None
    assert isinstance(payload["ts_ms"], int)
    assert plain.payload["message"]["content"] == base64.b64encode(b"bye").decode()
    assert plain.payload["source"]["txId"] is None


def test_logical_decoding_messages_follow_converter_and_prefix_settings(
    capture: CaptureHarness,
) -> None:
    table = capture.table("msgplain")
    capture.sql(f"CREATE TABLE {table} (id int PRIMARY KEY)")
    config = {"message.prefix.exclude.list": "noise.*", "binary.handling.mode": "hex", **PLAIN}
    running = capture.start(capture.resource([table], **config))
    capture.sql(
        "SELECT pg_logical_emit_message(false, 'noise-1', 'x')",
        "SELECT pg_logical_emit_message(false, 'audit', 'hi')",
    )
    (message,) = capture.wait_for_events("message", lambda ev: len(ev) >= 1)
    running.stop()

    assert message.key == {"prefix": "audit"}
    assert set(message.value) == {"op", "ts_ms", "source", "transaction", "message"}
    assert message.value["message"] == {"prefix": "audit", "content": b"hi".hex()}


# -- 8. heartbeats ---------------------------------------------------------------------------


def test_heartbeats_are_keyed_by_server_name_and_run_the_action_query(
    capture: CaptureHarness,
) -> None:
    table, beats = capture.table("quiet"), capture.table("beats")
    capture.sql(
        f"CREATE TABLE {table} (id int PRIMARY KEY)",
        f"CREATE TABLE {beats} (id serial PRIMARY KEY, at timestamptz NOT NULL DEFAULT now())",
    )
    config = {
        "heartbeat.interval.ms": 200,
        "heartbeat.action.query": f"INSERT INTO {beats} DEFAULT VALUES",
    }
    running = capture.start(capture.resource([table], **config))
    topic = f"__debezium-heartbeat.{capture.name}"
    deadline = time.monotonic() + 30
    records: list[Any] = []
    while len(records) < 3 and time.monotonic() < deadline:
        time.sleep(0.3)
        try:
            records = read_topic_to_end(capture.kafka.bootstrap_servers, topic)
        except LookupError:
            records = []
    running.stop()

    assert len(records) >= 3
    key, value = orjson.loads(records[0].key()), orjson.loads(records[0].value())
    assert key["payload"] == {"serverName": capture.name}
    assert key["schema"]["name"] == "io.debezium.connector.common.ServerNameKey"
    assert value["schema"]["name"] == "io.debezium.connector.common.Heartbeat"
    assert isinstance(value["payload"]["ts_ms"], int)
    (ran,) = capture.query(f"SELECT count(*) FROM {beats}")[0]
    assert ran >= 2


def test_writes_elsewhere_advance_an_idle_slots_confirmed_and_restart_lsn(
    capture: CaptureHarness,
) -> None:
    idle, other = capture.table("idle"), capture.table("elsewhere")
    capture.sql(
        f"CREATE TABLE {idle} (id int PRIMARY KEY)",
        f"CREATE TABLE {other} (id serial PRIMARY KEY, v text)",  # not in the publication
    )
    running = capture.start(capture.resource([idle], **{"heartbeat.interval.ms": 200}))
    state = _slot(capture)
    assert state is not None
    _, confirmed0, restart0 = state
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        capture.sql(f"INSERT INTO {other} (v) SELECT 'x' FROM generate_series(1, 100)")
        capture.sql("CHECKPOINT")  # logs running transactions: where decoding may restart
        time.sleep(0.3)
        state = _slot(capture)
        assert state is not None
        if state[1] > confirmed0 and state[2] > restart0:
            break
    running.stop()

    assert state[1] > confirmed0, "confirmed_flush_lsn did not advance"
    assert state[2] > restart0, "restart_lsn did not advance"
    with pytest.raises(LookupError):
        capture.events(f"public.{idle}", timeout=5)


# -- 9. publication and slot lifecycle --------------------------------------------------------


def test_publication_autocreate_disabled_fails_naming_the_fix(capture: CaptureHarness) -> None:
    table = capture.table("nopub")
    capture.sql(f"CREATE TABLE {table} (id int PRIMARY KEY)")
    resource = capture.resource([table], **{"publication.autocreate.mode": "disabled"})

    error = _start_failure(capture, resource)
    assert isinstance(error, FatalError)
    assert capture.name in str(error) and "CREATE PUBLICATION" in str(error)
    assert not capture.query(f"SELECT 1 FROM pg_publication WHERE pubname = '{capture.name}'")


def test_existing_publication_is_used_as_is(capture: CaptureHarness) -> None:
    published, unpublished = capture.table("pub"), capture.table("unpub")
    capture.sql(
        f"CREATE TABLE {published} (id int PRIMARY KEY)",
        f"CREATE TABLE {unpublished} (id int PRIMARY KEY)",
        f"CREATE PUBLICATION {capture.name} FOR TABLE {published}",
    )
    resource = capture.resource([published, unpublished], **PLAIN_KEYS)
    running = capture.start(resource)
    capture.sql(f"INSERT INTO {unpublished} VALUES (1)", f"INSERT INTO {published} VALUES (1)")
    events = capture.wait_for_events(f"public.{published}", lambda ev: len(ev) >= 1)
    running.stop()

    assert _ops(events) == [("c", {"id": 1})]
    assert running.engine.stats.captured_tables == [f"public.{published}"]
    tables = capture.query(
        f"SELECT tablename FROM pg_publication_tables WHERE pubname = '{capture.name}'"
    )
    assert tables == [(published,)]
    assert not _topic_exists(capture, f"public.{unpublished}")


def test_slot_drop_on_stop_drops_the_slot_on_a_clean_stop(capture: CaptureHarness) -> None:
    table = capture.table("drop")
    capture.sql(f"CREATE TABLE {table} (id int PRIMARY KEY)")
    running = capture.start(capture.resource([table], **{"slot.drop.on.stop": True}))
    assert _slot(capture) is not None
    running.stop()

    assert _slot(capture) is None


def test_slot_is_kept_on_stop_by_default(capture: CaptureHarness) -> None:
    table = capture.table("keep")
    capture.sql(f"CREATE TABLE {table} (id int PRIMARY KEY)")
    capture.start(capture.resource([table])).stop()

    assert _slot(capture) is not None


def test_slot_is_confirmed_only_up_to_what_kafka_acknowledged(capture: CaptureHarness) -> None:
    table = capture.table("flush")
    capture.sql(f"CREATE TABLE {table} (id int PRIMARY KEY)")
    running = capture.start(capture.resource([table]))
    capture.sql(f"INSERT INTO {table} SELECT g FROM generate_series(1, 500) g")
    capture.wait_for_events(f"public.{table}", lambda ev: len(ev) >= 500)
    running.stop()

    (confirmed,) = capture.query(
        f"SELECT confirmed_flush_lsn - '0/0'::pg_lsn FROM pg_replication_slots "
        f"WHERE slot_name = '{capture.name}'"
    )[0]
    saved = orjson.loads(capture.offsets_path.read_bytes())["value"]
    assert int(confirmed) == saved["lsn"]
    assert saved["lsn"] > 0


def test_an_existing_all_tables_publication_is_warned_about_the_writes_it_blocks(
    capture: CaptureHarness, caplog: pytest.LogCaptureFixture
) -> None:
    table, keyless = capture.table("pubbed"), capture.table("keyless")
    publication = f"{capture.name}_all"
    capture.sql(f"CREATE TABLE {table} (id int PRIMARY KEY)")
    try:
        # Created by someone else, before a keyless table appeared: PostgreSQL now refuses
        # that table's UPDATE and DELETE, and every start says so.
        capture.sql(
            f"CREATE PUBLICATION {publication} FOR ALL TABLES",
            f"CREATE TABLE {keyless} (note text)",
        )
        resource = capture.resource([table], **{"publication.name": publication})
        with caplog.at_level("WARNING"):
            running = capture.start(resource)
            running.stop()
    finally:
        capture.sql(f"DROP PUBLICATION IF EXISTS {publication}", f"DROP TABLE {keyless}")

    warning = next(r.getMessage() for r in caplog.records if "FOR ALL TABLES" in r.getMessage())
    assert f"public.{keyless}" in warning and "refuses UPDATE and DELETE" in warning
