"""End to end against real PostgreSQL and Kafka: the Debezium event contract users rely on."""

from __future__ import annotations

import orjson

from tests.plugins.fix_capture import CaptureHarness, Event


def _rows(events: list[Event]) -> list[tuple[str | None, object]]:
    return [(e.op, e.key) for e in events]


def test_snapshot_then_stream_emits_debezium_envelopes(capture: CaptureHarness) -> None:
    table = capture.table("customers")
    capture.sql(
        f"CREATE TABLE {table} (id int PRIMARY KEY, name text NOT NULL, email text)",
        f"INSERT INTO {table} VALUES (1, 'anne', 'a@x'), (2, 'bob', NULL)",
    )
    running = capture.start(capture.resource([table]))
    capture.sql(
        f"INSERT INTO {table} VALUES (3, 'carl', 'c@x')",
        f"UPDATE {table} SET email = 'b@x' WHERE id = 2",
        f"DELETE FROM {table} WHERE id = 1",
    )
    events = capture.wait_for_events(f"public.{table}", lambda ev: len(ev) >= 6)
    running.stop()

    assert [e.op for e in events] == ["r", "r", "c", "u", "d", None]
    assert [e.payload["source"]["snapshot"] for e in events[:3]] == ["first", "last", "false"]
    insert = events[2]
    assert insert.key == {
        "schema": {
            "type": "struct",
            "optional": False,
            "name": f"{capture.name}.public.{table}.Key",
            "fields": [{"type": "int32", "optional": False, "field": "id"}],
        },
        "payload": {"id": 3},
    }
    schema = insert.value["schema"]
    assert schema["name"] == f"{capture.name}.public.{table}.Envelope"
    assert [f["field"] for f in schema["fields"]] == [
        "before",
        "after",
        "source",
        "transaction",
        "op",
        "ts_ms",
        "ts_us",
        "ts_ns",
    ]
    after_fields = schema["fields"][1]["fields"]
    assert after_fields[1] == {"type": "string", "optional": False, "field": "name"}
    assert insert.payload["after"] == {"id": 3, "name": "carl", "email": "c@x"}
    assert insert.payload["before"] is None
    source = insert.payload["source"]
    assert source["connector"] == "postgresql"
    assert source["name"] == capture.name
    assert (source["db"], source["schema"], source["table"]) == ("inventory", "public", table)
    assert isinstance(source["lsn"], int) and isinstance(source["txId"], int)
    _last_commit, lsn = orjson.loads(source["sequence"])
    assert lsn == str(source["lsn"])
    update, delete, tombstone = events[3], events[4], events[5]
    assert update.payload["after"]["email"] == "b@x"
    assert update.payload["before"] is None  # REPLICA IDENTITY DEFAULT, key unchanged
    assert delete.payload["before"] == {"id": 1, "name": None, "email": None}
    assert delete.payload["after"] is None
    assert tombstone.value is None and tombstone.key["payload"] == {"id": 1}
    assert insert.payload["ts_ms"] >= source["ts_ms"]


def test_primary_key_change_becomes_delete_tombstone_create(capture: CaptureHarness) -> None:
    table = capture.table("pk")
    capture.sql(f"CREATE TABLE {table} (id int PRIMARY KEY, v text)")
    running = capture.start(capture.resource([table], **{"key.converter.schemas.enable": False}))
    capture.sql(f"INSERT INTO {table} VALUES (1, 'x')", f"UPDATE {table} SET id = 2 WHERE id = 1")
    events = capture.wait_for_events(f"public.{table}", lambda ev: len(ev) >= 4)
    running.stop()

    assert _rows(events) == [
        ("c", {"id": 1}),
        ("d", {"id": 1}),
        (None, {"id": 1}),
        ("c", {"id": 2}),
    ]
    assert orjson.loads(events[1].headers["__debezium.newkey"]) == {"id": 2}
    assert orjson.loads(events[3].headers["__debezium.oldkey"]) == {"id": 1}
    assert events[3].payload["after"] == {"id": 2, "v": "x"}


def test_schemaless_json_and_no_tombstones_when_disabled(capture: CaptureHarness) -> None:
    table = capture.table("plain")
    capture.sql(f"CREATE TABLE {table} (id int PRIMARY KEY)")
    config = {
        "key.converter.schemas.enable": False,
        "value.converter.schemas.enable": False,
        "tombstones.on.delete": False,
    }
    running = capture.start(capture.resource([table], **config))
    capture.sql(f"INSERT INTO {table} VALUES (7)", f"DELETE FROM {table}")
    events = capture.wait_for_events(f"public.{table}", lambda ev: len(ev) >= 2)
    running.stop()

    assert [e.op for e in events] == ["c", "d"]
    assert events[0].key == {"id": 7}
    assert set(events[0].value) >= {"before", "after", "source", "op", "ts_ms"}
    assert "schema" not in events[0].value


def test_transaction_metadata_marks_boundaries_and_orders_events(capture: CaptureHarness) -> None:
    a, b = capture.table("a"), capture.table("b")
    capture.sql(f"CREATE TABLE {a} (id int PRIMARY KEY)", f"CREATE TABLE {b} (id int PRIMARY KEY)")
    config = {"provide.transaction.metadata": True, "value.converter.schemas.enable": False}
    running = capture.start(capture.resource([a, b], **config))
    capture.sql(
        f"BEGIN; INSERT INTO {a} VALUES (1); INSERT INTO {b} VALUES (1); "
        f"INSERT INTO {a} VALUES (2); COMMIT;"
    )
    markers = capture.wait_for_events("transaction", lambda ev: len(ev) >= 2)
    rows = capture.events(f"public.{a}") + capture.events(f"public.{b}")
    running.stop()

    begin, end = markers[0].payload, markers[1].payload
    assert (begin["status"], end["status"]) == ("BEGIN", "END")
    # Debezium's PostgreSQL ids are "<xid>:<LSN of the message>": one xid, LSNs ascending.
    xid = begin["id"].split(":")[0]
    assert end["id"].split(":")[0] == xid and end["event_count"] == 3
    assert sorted((c["data_collection"], c["event_count"]) for c in end["data_collections"]) == [
        (f"public.{a}", 2),
        (f"public.{b}", 1),
    ]
    blocks = sorted((e.payload["transaction"]["total_order"], e.key["payload"]["id"]) for e in rows)
    assert [order for order, _ in blocks] == [1, 2, 3]
    for event in rows:
        assert event.payload["transaction"]["id"] == f"{xid}:{event.payload['source']['lsn']}"
    orders_in_a = sorted(e.payload["transaction"]["data_collection_order"] for e in rows[:2])
    assert orders_in_a == [1, 2]


def test_restart_resumes_after_the_last_offset_without_snapshot_again(
    capture: CaptureHarness,
) -> None:
    table = capture.table("resume")
    capture.sql(f"CREATE TABLE {table} (id int PRIMARY KEY)", f"INSERT INTO {table} VALUES (1)")
    resource = capture.resource([table])
    first = capture.start(resource)
    capture.sql(f"INSERT INTO {table} VALUES (2)")
    capture.wait_for_events(f"public.{table}", lambda ev: len(ev) >= 2)
    first.stop()
    capture.sql(f"INSERT INTO {table} VALUES (3)")  # written while the connector is down
    second = capture.start(resource)
    capture.sql(f"INSERT INTO {table} VALUES (4)")
    events = capture.wait_for_events(f"public.{table}", lambda ev: len(ev) >= 4)
    second.stop()

    assert _rows(events) == [
        ("r", {"schema": events[0].key["schema"], "payload": {"id": 1}}),
        *[("c", {"schema": events[0].key["schema"], "payload": {"id": n}}) for n in (2, 3, 4)],
    ]


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
