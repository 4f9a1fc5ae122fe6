"""The Debezium event contract every connector keeps, asserted once for each connector kind.

Each test runs against the real database and Kafka through a :class:`ConnectorDriver`
(tests/plugins/fix_conformance.py): snapshot then stream, key changes, converters without
schemas, transaction metadata, restarts, a lost position, skipped operations, truncates,
snapshot modes.
What differs between connectors (their ``source`` fields, transaction ids, full or key-only
old rows) is the driver's to check.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson
import pytest

from cdcflow.capture.errors import PositionLostError
from tests.plugins.fix_capture import Event, eventually
from tests.plugins.fix_conformance import ConnectorDriver

PLAIN_KEYS = {"key.converter.schemas.enable": False}
PLAIN = {"key.converter.schemas.enable": False, "value.converter.schemas.enable": False}


def _ops(events: list[Event]) -> list[tuple[str | None, Any]]:
    """(op, key) pairs."""
    return [(e.op, e.key) for e in events]


def test_snapshot_then_stream_emits_debezium_envelopes(driver: ConnectorDriver) -> None:
    table = driver.table("customers")
    driver.create_table(table, ((1, "anne"), (2, None)))
    running = driver.start([table])
    driver.run(driver.insert(table, (3, "carl")), driver.update(table, 2, "bob"))
    driver.run(driver.delete(table, 1))
    events = driver.wait_for_events(table, lambda ev: len(ev) >= 6)
    running.stop()

    assert [e.op for e in events] == ["r", "r", "c", "u", "d", None]
    assert [e.payload["source"]["snapshot"] for e in events[:3]] == ["first", "last", "false"]
    insert = events[2]
    topic = f"{driver.name}.{driver.topic(table)}"
    assert insert.key == {
        "schema": {
            "type": "struct",
            "optional": False,
            "name": f"{topic}.Key",
            "fields": [{"type": "int32", "optional": False, "field": "id"}],
        },
        "payload": {"id": 3},
    }
    schema = insert.value["schema"]
    assert schema["name"] == f"{topic}.Envelope"
    assert [f["field"] for f in schema["fields"]] == [
        "before", "after", "source", "transaction", "op", "ts_ms", "ts_us", "ts_ns",
    ]  # fmt: skip
    assert schema["fields"][1]["fields"][1] == {"type": "string", "optional": True, "field": "v"}
    assert insert.payload["after"] == {"id": 3, "v": "carl"}
    assert insert.payload["before"] is None
    source = insert.payload["source"]
    assert source["name"] == driver.name
    driver.check_source(source, table)
    update, delete, tombstone = events[3], events[4], events[5]
    assert update.payload["after"] == {"id": 2, "v": "bob"}
    old_row = {"id": 1, "v": "anne"} if driver.full_before_images else {"id": 1, "v": None}
    assert delete.payload["before"] == old_row
    assert delete.payload["after"] is None
    assert tombstone.value is None and tombstone.key["payload"] == {"id": 1}
    assert insert.payload["ts_ms"] >= source["ts_ms"]


def test_primary_key_change_becomes_delete_tombstone_create(driver: ConnectorDriver) -> None:
    table = driver.table("pk")
    driver.create_table(table)
    running = driver.start([table], **PLAIN_KEYS)
    driver.run(driver.insert(table, (1, "x")), driver.change_key(table, 1, 2))
    events = driver.wait_for_events(table, lambda ev: len(ev) >= 4)
    running.stop()

    assert _ops(events) == [("c", {"id": 1}), ("d", {"id": 1}), (None, {"id": 1}), ("c", {"id": 2})]
    assert orjson.loads(events[1].headers["__debezium.newkey"]) == {"id": 2}
    assert orjson.loads(events[2].headers["__debezium.newkey"]) == {"id": 2}
    assert orjson.loads(events[3].headers["__debezium.oldkey"]) == {"id": 1}
    assert events[3].payload["after"] == {"id": 2, "v": "x"}


def test_schemaless_json_and_no_tombstones_when_disabled(driver: ConnectorDriver) -> None:
    table = driver.table("plain")
    driver.create_table(table)
    running = driver.start([table], **PLAIN, **{"tombstones.on.delete": False})
    driver.run(driver.insert(table, (7, None)), driver.delete(table, 7))
    events = driver.wait_for_events(table, lambda ev: len(ev) >= 2)
    running.stop()

    assert [e.op for e in events] == ["c", "d"]
    assert events[0].key == {"id": 7}
    assert set(events[0].value) >= {"before", "after", "source", "op", "ts_ms"}
    assert "schema" not in events[0].value


def test_transaction_metadata_marks_boundaries_and_orders_events(driver: ConnectorDriver) -> None:
    a, b = driver.table("a"), driver.table("b")
    driver.create_table(a)
    driver.create_table(b)
    running = driver.start([a, b], **{"provide.transaction.metadata": True}, **PLAIN)
    driver.run_atomically(
        driver.insert(a, (1, None)), driver.insert(b, (1, None)), driver.insert(a, (2, None))
    )
    markers = driver.events_of("transaction", lambda ev: len(ev) >= 2)
    rows = driver.wait_for_events(a, lambda ev: len(ev) >= 2) + driver.wait_for_events(
        b, lambda ev: len(ev) >= 1
    )
    running.stop()

    begin, end = markers[0].payload, markers[1].payload
    assert (begin["status"], end["status"]) == ("BEGIN", "END")
    assert end["event_count"] == 3
    assert sorted((c["data_collection"], c["event_count"]) for c in end["data_collections"]) == [
        (driver.topic(a), 2),
        (driver.topic(b), 1),
    ]
    assert sorted(e.payload["transaction"]["total_order"] for e in rows) == [1, 2, 3]
    assert sorted(e.payload["transaction"]["data_collection_order"] for e in rows[:2]) == [1, 2]
    driver.check_transaction_ids(begin, rows)


def test_restart_resumes_after_the_last_offset_without_snapshot_again(
    driver: ConnectorDriver,
) -> None:
    table = driver.table("resume")
    driver.create_table(table, ((1, None),))
    first = driver.start([table], **PLAIN_KEYS)
    driver.run(driver.insert(table, (2, None)))
    driver.wait_for_events(table, lambda ev: len(ev) >= 2)
    first.stop()
    driver.run(driver.insert(table, (3, None)))  # written while the connector is down
    second = driver.start([table], **PLAIN_KEYS)
    driver.run(driver.insert(table, (4, None)))
    events = driver.wait_for_events(table, lambda ev: len(ev) >= 4)
    second.stop()

    assert _ops(events) == [("r", {"id": 1}), *[("c", {"id": n}) for n in (2, 3, 4)]]


def test_the_log_budget_is_measured_and_a_lost_position_stops_until_when_needed_snapshots(
    driver: ConnectorDriver,
) -> None:
    table = driver.table("lost")
    driver.create_table(table, ((1, None),))
    first = driver.start([table], **PLAIN_KEYS, **{"log.budget.check.interval.ms": 200})
    driver.run(driver.insert(table, (2, None)))
    driver.wait_for_events(table, lambda ev: len(ev) >= 2)
    budget = eventually(lambda: first.engine.stats.log_budget, what="a log budget")
    first.stop()
    assert budget["state"] == "ok" and budget["oldestNeeded"], budget
    assert budget["message"]

    driver.run(driver.insert(table, (3, None)))  # written while the connector is down
    driver.lose_position()
    driver.run(driver.insert(table, (4, None)))
    refused = driver.capture.start(
        driver.resource([table], **PLAIN_KEYS), login=driver.login, wait_for=None
    )
    refused.thread.join(60)
    assert refused.errors and isinstance(refused.errors[0], PositionLostError)
    message = str(refused.errors[0])
    assert message.startswith("position lost: ")
    assert "snapshot.mode=when_needed" in message and "cdcflow offsets reset" in message

    again = driver.start([table], **PLAIN_KEYS, **{"snapshot.mode": "when_needed"})
    driver.run(driver.insert(table, (5, None)))
    events = driver.wait_for_events(table, lambda ev: any(e.key == {"id": 5} for e in ev))
    again.stop()
    assert _ops(events)[2:] == [
        *[("r", {"id": n}) for n in (1, 2, 3, 4)],
        ("c", {"id": 5}),
    ]


def test_skipped_operations_u_emits_no_update_events(driver: ConnectorDriver) -> None:
    table = driver.table("skipu")
    driver.create_table(table)
    running = driver.start([table], **{"skipped.operations": "u"}, **PLAIN)
    driver.run(driver.insert(table, (1, "a")), driver.update(table, 1, "b"))
    driver.run(driver.delete(table, 1))
    events = driver.wait_for_events(table, lambda ev: len(ev) >= 3)
    running.stop()

    assert _ops(events) == [("c", {"id": 1}), ("d", {"id": 1}), (None, {"id": 1})]
    assert running.engine.stats.events_filtered == 1


@pytest.mark.parametrize(
    "config",
    [{"skipped.operations": "none"}, {"truncate.handling.mode": "include"}],
    ids=["skipped-none", "handling-include"],
)
def test_truncate_emits_one_keyless_t_event_per_table_when_enabled(
    truncating_driver: ConnectorDriver, config: dict[str, str]
) -> None:
    driver = truncating_driver
    a, b = driver.table("ta"), driver.table("tb")
    driver.create_table(a)
    driver.create_table(b)
    running = driver.start([a, b], **config)
    driver.run(driver.insert(a, (1, None)), driver.insert(b, (1, None)), driver.truncate(a, b))
    truncates = {name: driver.wait_for_events(name, lambda ev: len(ev) >= 2)[1] for name in (a, b)}
    running.stop()

    for name, event in truncates.items():
        assert event.key is None
        payload = event.payload
        assert payload["op"] == "t"
        assert payload["before"] is None and payload["after"] is None
        driver.check_source(payload["source"], name)
        assert event.value["schema"]["name"] == f"{driver.name}.{driver.topic(name)}.Envelope"


def test_truncate_is_skipped_by_default(truncating_driver: ConnectorDriver) -> None:
    driver = truncating_driver
    table = driver.table("tskip")
    driver.create_table(table)
    running = driver.start([table], **PLAIN)
    driver.run(driver.insert(table, (1, None)), driver.truncate(table))
    driver.run(driver.insert(table, (2, None)))
    events = driver.wait_for_events(table, lambda ev: len(ev) >= 2)
    running.stop()

    assert _ops(events) == [("c", {"id": 1}), ("c", {"id": 2})]


@pytest.mark.parametrize("mode", ["never", "no_data"])
def test_snapshot_mode_never_streams_only_changes_made_after_the_connector_started(
    driver: ConnectorDriver, mode: str
) -> None:
    if mode not in driver.modes_streaming_from_now:
        mode = "no_data"  # a binlog connector under `never` reads the whole log (its own test)
    table = driver.table("never")
    driver.create_table(table, ((1, None), (2, None)))
    running = driver.start([table], **{"snapshot.mode": mode}, **PLAIN_KEYS)
    driver.run(driver.insert(table, (3, None)), driver.change_key(table, 2, 20))
    events = driver.wait_for_events(table, lambda ev: len(ev) >= 4)
    running.stop()

    assert _ops(events) == [
        ("c", {"id": 3}),
        ("d", {"id": 2}),
        (None, {"id": 2}),
        ("c", {"id": 20}),
    ]


def _after_field(event: Event, name: str) -> dict[str, Any]:
    after = event.value["schema"]["fields"][1]["fields"]
    return dict(next(field for field in after if field["field"] == name))


@pytest.mark.parametrize(
    ("rule", "value", "parameters"),
    [
        ("column.mask.with.4.chars", "****", {"masked": "true"}),
        ("column.truncate.to.2.chars", "se", {"truncateLength": "2"}),
        (
            "column.mask.hash.v2.SHA-256.with.salt.pepper",
            hashlib.sha256(b"peppersecret").hexdigest(),
            {"masked": "true"},
        ),
    ],
    ids=["mask", "truncate", "hash"],
)
def test_column_mappers_change_the_value_and_mark_the_schema(
    driver: ConnectorDriver, rule: str, value: str, parameters: dict[str, str]
) -> None:
    table = driver.table("mapped")
    driver.create_table(table, ((1, "secret"),))
    running = driver.start([table], **{rule: f".*\\.{table}\\.v"})
    driver.run(driver.insert(table, (2, "secret")))
    events = driver.wait_for_events(table, lambda ev: len(ev) >= 2)
    running.stop()

    for event in events:  # snapshot and stream alike
        assert event.payload["after"]["v"] == value
        assert parameters.items() <= _after_field(event, "v")["parameters"].items()
        assert event.payload["after"]["id"] == event.key["payload"]["id"]  # keys stay unmapped


def test_source_types_and_column_comments_reach_the_field_schema(driver: ConnectorDriver) -> None:
    table = driver.table("described")
    driver.create_table(table, ((1, "a"),))
    driver.comment_column(table, "v", "what it is")
    config = {
        "include.schema.comments": True,
        "column.propagate.source.type": f".*\\.{table}\\.v",
        "datatype.propagate.source.type": ".+\\.(INT|INTEGER|INT4)",
    }
    running = driver.start([table], **config)
    driver.run(driver.insert(table, (2, "b")))
    events = driver.wait_for_events(table, lambda ev: len(ev) >= 2)
    running.stop()

    for event in events:
        described = _after_field(event, "v")
        assert described["doc"] == "what it is"
        parameters = described["parameters"]
        assert parameters["__debezium.source.column.name"] == "v"
        assert parameters["__debezium.source.column.comment"] == "what it is"
        assert parameters["__debezium.source.column.type"]
        key_type = _after_field(event, "id")["parameters"]["__debezium.source.column.type"]
        assert key_type in ("INT", "INTEGER", "INT4")
