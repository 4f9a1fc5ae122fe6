"""Connector properties that change events, against real PostgreSQL and Kafka.

Column mappers (masking, hashing, truncation, source-type propagation), money digits, field and
schema name adjustment, partition-root publishing, unchanged-update skipping, parallel and
locked snapshots, select overrides by name, slot retries, stream parameters and ``xmin``.
Expected hashes were computed with the JDK's ``MessageDigest`` and ``ObjectOutputStream``.
"""

from __future__ import annotations

import base64
import time
from typing import Any

import psycopg

from cdcflow.capture.errors import FatalError
from tests.plugins.fix_capture import CaptureHarness, Event

PLAIN_KEYS = {"key.converter.schemas.enable": False}


def _field(event: Event, name: str, block: str = "after") -> dict[str, Any]:
    """The schema of field ``name`` in the envelope's ``block`` struct."""
    (struct,) = [f for f in event.value["schema"]["fields"] if f["field"] == block]
    (found,) = [f for f in struct["fields"] if f["field"] == name]
    return dict(found)


def _after(events: list[Event]) -> list[dict[str, Any]]:
    return [e.payload["after"] for e in events if e.payload is not None]


def _run_until_failure(capture: CaptureHarness, config: dict[str, Any], table: str) -> Exception:
    running = capture.start(capture.resource([table], **config), wait_for=None)
    running.thread.join(60)
    assert not running.thread.is_alive() and running.errors, "the engine did not fail"
    error = running.errors[0]
    assert isinstance(error, Exception)
    return error


def test_masking_hashing_and_truncation_map_snapshot_and_streamed_values(
    capture: CaptureHarness,
) -> None:
    table = capture.table("mapped")
    capture.sql(
        f"CREATE TABLE {table} (id int PRIMARY KEY, email varchar(64), code varchar(10), "
        "secret text, name text, blob bytea, n int)",
        f"INSERT INTO {table} VALUES (1, 'hello', 'hello', 's3cr3t', 'abcdef', '\\x0102030405', 7)",
    )
    config = {
        "column.mask.hash.SHA-256.with.salt.pepper": f"public\\.{table}\\.email",
        "column.mask.hash.v2.SHA-256.with.salt.pepper": f"public\\.{table}\\.code",
        "column.mask.with.4.chars": f"public\\.{table}\\.(secret|n)",
        "column.truncate.to.3.chars": f"public\\.{table}\\.(name|blob)",
        **PLAIN_KEYS,
    }
    running = capture.start(capture.resource([table], **config))
    capture.sql(f"INSERT INTO {table} VALUES (2, NULL, NULL, NULL, 'xy', NULL, 8)")
    events = capture.wait_for_events(f"public.{table}", lambda ev: len(ev) >= 2)
    running.stop()

    snapshot, streamed = _after(events)
    assert snapshot == {
        "id": 1,
        "email": "aabd2fe7a97c53b45502d4592a8e255fd7d25c172c4e58b6411a2e01ebafb06e",
        "code": "711394d339",  # v2 hashes the UTF-8 value; cut to varchar(10)
        "secret": "****",
        "name": "abc",
        "blob": base64.b64encode(b"\x01\x02\x03").decode(),
        "n": 7,  # masking leaves non-character columns alone
    }
    assert streamed == {
        "id": 2,
        "email": None,
        "code": None,
        "secret": "****",  # Debezium masks NULL too
        "name": "xy",
        "blob": None,
        "n": 8,
    }
    first = events[0]
    assert _field(first, "email")["parameters"] == {"masked": "true"}
    assert _field(first, "secret")["parameters"] == {"masked": "true"}
    assert _field(first, "n")["parameters"] == {"masked": "true"}
    assert _field(first, "name")["parameters"] == {"truncateLength": "3"}


def test_source_types_are_propagated_as_debezium_reads_them_in_snapshot_and_stream(
    capture: CaptureHarness,
) -> None:
    table = capture.table("typed")
    capture.sql(
        f"CREATE TABLE {table} (id serial PRIMARY KEY, name varchar(255), price numeric(10,2), "
        "amount numeric, seen timestamp(3), note text)",
        f"INSERT INTO {table} (name, price, amount, seen, note) VALUES ('a', 1.5, 2, now(), 'x')",
    )
    config = {
        "column.propagate.source.type": f"public\\.{table}\\.(name|amount|seen)",
        "datatype.propagate.source.type": ".+\\.numeric",
        **PLAIN_KEYS,
    }
    running = capture.start(capture.resource([table], **config))
    capture.sql(f"INSERT INTO {table} (name, price, amount) VALUES ('b', 2.5, 3)")
    events = capture.wait_for_events(f"public.{table}", lambda ev: len(ev) >= 2)
    running.stop()

    snapshot, streamed = events
    prefix = "__debezium.source.column."
    assert _field(snapshot, "name")["parameters"] == {
        f"{prefix}type": "VARCHAR",
        f"{prefix}length": "255",
        f"{prefix}scale": "0",
        f"{prefix}name": "name",
    }
    assert _field(snapshot, "price")["parameters"] == {
        "scale": "2",
        "connect.decimal.precision": "10",
        f"{prefix}type": "NUMERIC",
        f"{prefix}length": "10",
        f"{prefix}scale": "2",
        f"{prefix}name": "price",
    }
    assert _field(snapshot, "seen")["parameters"] == {
        f"{prefix}type": "TIMESTAMP",
        f"{prefix}length": "26",
        f"{prefix}scale": "3",
        f"{prefix}name": "seen",
    }
    assert "parameters" not in _field(snapshot, "note")
    amount = f"{prefix}length", f"{prefix}scale"
    snapshot_amount = _field(snapshot, "amount")["parameters"]
    streamed_amount = _field(streamed, "amount")["parameters"]
    # Debezium's two readings of an unconstrained numeric disagree; cdcflow follows each.
    assert [snapshot_amount.get(k) for k in amount] == ["0", None]
    assert [streamed_amount.get(k) for k in amount] == ["131089", "0"]
    assert _field(streamed, "name") == _field(snapshot, "name")


def test_a_mapped_key_column_keeps_its_value_in_the_key_and_is_mapped_in_the_value(
    capture: CaptureHarness,
) -> None:
    table = capture.table("keymask")
    capture.sql(
        f"CREATE TABLE {table} (email text PRIMARY KEY, note text)",
        f"INSERT INTO {table} VALUES ('a@b.c', 'n')",
    )
    config = {"column.mask.with.3.chars": f"public\\.{table}\\..*"}
    running = capture.start(capture.resource([table], **config))
    capture.sql(f"UPDATE {table} SET email = 'x@y.z' WHERE email = 'a@b.c'")
    events = capture.wait_for_events(f"public.{table}", lambda ev: len(ev) >= 4)
    running.stop()

    snapshot, delete, tombstone, create = events
    assert snapshot.key["payload"] == {"email": "a@b.c"}
    assert snapshot.payload["after"] == {"email": "***", "note": "***"}
    key_field = snapshot.key["schema"]["fields"][0]
    assert "parameters" not in key_field
    assert _field(snapshot, "email")["parameters"] == {"masked": "true"}
    # The primary-key change: delete and create keyed and headed by the raw keys.
    assert (delete.op, delete.key["payload"], delete.payload["before"]["email"]) == (
        "d",
        {"email": "a@b.c"},
        "***",
    )
    assert delete.headers["__debezium.newkey"] == b'{"email":"x@y.z"}'
    assert tombstone.value is None and tombstone.key["payload"] == {"email": "a@b.c"}
    assert (create.op, create.key["payload"], create.payload["after"]["email"]) == (
        "c",
        {"email": "x@y.z"},
        "***",
    )
    assert create.headers["__debezium.oldkey"] == b'{"email":"a@b.c"}'


def test_money_fraction_digits_is_the_scale_of_precise_money(capture: CaptureHarness) -> None:
    table = capture.table("money")
    capture.sql(
        f"CREATE TABLE {table} (id int PRIMARY KEY, m money)",
        f"INSERT INTO {table} VALUES (1, 12.5), (2, -0.5)",
    )
    running = capture.start(capture.resource([table], **{"money.fraction.digits": 0}))
    events = capture.wait_for_events(f"public.{table}", lambda ev: len(ev) >= 2)
    running.stop()

    assert _field(events[0], "m")["parameters"] == {"scale": "0"}
    unscaled = [
        int.from_bytes(base64.b64decode(a["m"]), "big", signed=True) for a in _after(events)
    ]
    assert unscaled == [13, -1]  # BigDecimal.setScale(0, HALF_UP)


def test_field_and_schema_names_are_adjusted_for_avro(capture: CaptureHarness) -> None:
    table = capture.table("odd-name")
    capture.sql(
        f'CREATE TABLE "{table}" (id int PRIMARY KEY, "my-col" text, "dropped-col" text)',
        f"INSERT INTO \"{table}\" VALUES (1, 'v', 'gone')",
    )
    config = {
        "field.name.adjustment.mode": "avro",
        "schema.name.adjustment.mode": "avro",
        # Column filters still name the column as the database does.
        "column.exclude.list": f"public\\.{table}\\.dropped-col",
    }
    running = capture.start(capture.resource([table], **config))
    capture.sql(f'UPDATE "{table}" SET "my-col" = \'w\'')
    events = capture.wait_for_events(f"public.{table}", lambda ev: len(ev) >= 2)
    running.stop()

    assert [e.payload["after"] for e in events] == [
        {"id": 1, "my_col": "v"},
        {"id": 1, "my_col": "w"},
    ]
    safe = table.replace("-", "_")
    assert events[0].value["schema"]["name"] == f"{capture.name}.public.{safe}.Envelope"
    assert events[0].key["schema"]["name"] == f"{capture.name}.public.{safe}.Key"


def test_publish_via_partition_root_puts_partition_changes_on_the_root_topic(
    capture: CaptureHarness,
) -> None:
    root = capture.table("parted")
    capture.sql(
        f"CREATE TABLE {root} (id int PRIMARY KEY) PARTITION BY RANGE (id)",
        f"CREATE TABLE {root}_low PARTITION OF {root} FOR VALUES FROM (0) TO (100)",
        f"CREATE TABLE {root}_high PARTITION OF {root} FOR VALUES FROM (100) TO (200)",
        f"INSERT INTO {root} VALUES (1), (150)",
    )
    config = {"publish.via.partition.root": True, **PLAIN_KEYS}
    running = capture.start(capture.resource([root], **config))
    capture.sql(f"INSERT INTO {root} VALUES (2), (151)")
    events = capture.wait_for_events(f"public.{root}", lambda ev: len(ev) >= 4)
    running.stop()

    assert [(e.op, e.key["id"]) for e in events] == [("r", 1), ("r", 150), ("c", 2), ("c", 151)]
    assert {e.payload["source"]["table"] for e in events} == {root}
    via_root = capture.query(
        f"SELECT pubviaroot FROM pg_publication WHERE pubname = '{capture.name}'"
    )
    assert via_root == [(True,)]


def test_skip_messages_without_change_drops_updates_of_excluded_columns_only(
    capture: CaptureHarness,
) -> None:
    table = capture.table("unchanged")
    capture.sql(
        f"CREATE TABLE {table} (id int PRIMARY KEY, v text, touched int)",
        f"ALTER TABLE {table} REPLICA IDENTITY FULL",
    )
    config = {
        "skip.messages.without.change": True,
        "column.exclude.list": f"public\\.{table}\\.touched",
        **PLAIN_KEYS,
    }
    running = capture.start(capture.resource([table], **config))
    capture.sql(
        f"INSERT INTO {table} VALUES (1, 'a', 0)",
        f"UPDATE {table} SET touched = 1",  # no change in the event's columns: skipped
        f"UPDATE {table} SET v = 'b'",
    )
    events = capture.wait_for_events(f"public.{table}", lambda ev: len(ev) >= 2)
    running.stop()

    assert [(e.op, e.payload["after"]) for e in events] == [
        ("c", {"id": 1, "v": "a"}),
        ("u", {"id": 1, "v": "b"}),
    ]


def test_snapshot_max_threads_reads_tables_in_parallel_and_emits_them_in_order(
    capture: CaptureHarness,
) -> None:
    tables = [capture.table(f"par{i}") for i in range(3)]
    for index, table in enumerate(tables):
        capture.sql(
            f"CREATE TABLE {table} (id int PRIMARY KEY)",
            f"INSERT INTO {table} SELECT g FROM generate_series(1, {50 * (index + 1)}) g",
        )
    config = {"snapshot.max.threads": 3, "snapshot.fetch.size": 7, **PLAIN_KEYS}
    running = capture.start(capture.resource(tables, **config))
    per_table = [
        capture.wait_for_events(f"public.{table}", lambda ev, n=50 * (i + 1): len(ev) >= n)
        for i, table in enumerate(tables)
    ]
    running.stop()

    for index, events in enumerate(per_table):
        assert [e.key["id"] for e in events] == list(range(1, 50 * (index + 1) + 1))
    markers = [e.payload["source"]["snapshot"] for e in per_table[0]]
    assert markers[0] == "first" and markers[-1] == "last_in_data_collection"
    assert per_table[-1][-1].payload["source"]["snapshot"] == "last"
    assert len({e.payload["source"]["lsn"] for events in per_table for e in events}) == 1


def test_snapshot_locking_mode_shared_aborts_when_a_table_lock_is_not_granted(
    capture: CaptureHarness,
) -> None:
    table = capture.table("locked")
    capture.sql(f"CREATE TABLE {table} (id int PRIMARY KEY)")
    config = {"snapshot.locking.mode": "shared", "snapshot.lock.timeout.ms": 300}
    # Publication and slot first: creating them would wait for the lock holder too.
    capture.sql(
        f"CREATE PUBLICATION {capture.name} FOR TABLE {table}",
        f"SELECT pg_create_logical_replication_slot('{capture.name}', 'pgoutput')",
    )
    with psycopg.connect(capture.postgres.dsn()) as holder:
        holder.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")
        error = _run_until_failure(capture, config, table)
    assert isinstance(error, FatalError)
    assert "snapshot.lock.timeout.ms=300" in str(error)


def test_select_override_columns_map_to_the_table_by_name(capture: CaptureHarness) -> None:
    table = capture.table("byname")
    capture.sql(
        f"CREATE TABLE {table} (id int PRIMARY KEY, a text, b text)",
        f"INSERT INTO {table} VALUES (1, 'a1', 'b1')",
    )
    config = {
        "snapshot.select.statement.overrides": f"public.{table}",
        f"snapshot.select.statement.overrides.public.{table}": f"SELECT b, id FROM {table}",
        **PLAIN_KEYS,
    }
    running = capture.start(capture.resource([table], **config))
    events = capture.wait_for_events(f"public.{table}", lambda ev: len(ev) >= 1)
    running.stop()
    assert _after(events) == [{"id": 1, "a": None, "b": "b1"}]


def test_a_busy_slot_is_retried_until_its_holder_lets_go(capture: CaptureHarness) -> None:
    table = capture.table("busy")
    capture.sql(f"CREATE TABLE {table} (id int PRIMARY KEY)")
    resource = capture.resource([table], **{"slot.retry.delay.ms": 100, "slot.max.retries": 50})
    first = capture.start(resource)
    second = capture.start(resource, wait_for=None)
    time.sleep(0.5)
    assert second.engine.stats.phase == "starting"  # waiting for the slot
    first.stop()
    second.wait_for_phase("streaming", timeout=30)
    capture.sql(f"INSERT INTO {table} VALUES (1)")
    events = capture.wait_for_events(f"public.{table}", lambda ev: len(ev) >= 1)
    second.stop()
    assert events[-1].payload["op"] == "c"


def test_a_stop_while_waiting_for_a_busy_slot_ends_the_wait_at_once(
    capture: CaptureHarness,
) -> None:
    table = capture.table("waiting")
    capture.sql(f"CREATE TABLE {table} (id int PRIMARY KEY)")
    resource = capture.resource([table], **{"slot.retry.delay.ms": 10_000, "slot.max.retries": 6})
    first = capture.start(resource)
    second = capture.start(resource, wait_for=None)
    time.sleep(0.5)
    asked = time.monotonic()
    try:
        second.stop(timeout=5)  # a SIGTERM is this: it must not wait out 60 s of retries
    finally:
        first.stop()
    assert time.monotonic() - asked < 3
    assert second.engine.stats.phase == "stopped"


def test_a_slot_busy_after_the_retries_fails_naming_them(capture: CaptureHarness) -> None:
    table = capture.table("stuck")
    capture.sql(f"CREATE TABLE {table} (id int PRIMARY KEY)")
    resource = capture.resource([table])
    first = capture.start(resource)
    config = {"slot.retry.delay.ms": 50, "slot.max.retries": 2}
    try:
        error = _run_until_failure(capture, config, table)
    finally:
        first.stop()
    assert isinstance(error, FatalError)
    assert "in use" in str(error) and "2 retries" in str(error)


def test_stream_params_reach_pgoutput_and_xmin_fills_the_source(capture: CaptureHarness) -> None:
    table = capture.table("xmin")
    capture.sql(f"CREATE TABLE {table} (id int PRIMARY KEY)")
    config = {
        "xmin.fetch.interval.ms": 10,
        "slot.stream.params": "streaming=off",
        **PLAIN_KEYS,
    }
    running = capture.start(capture.resource([table], **config))
    capture.sql(f"INSERT INTO {table} VALUES (1)")
    events = capture.wait_for_events(f"public.{table}", lambda ev: len(ev) >= 1)
    running.stop()
    [(catalog_xmin,)] = capture.query(
        f"SELECT catalog_xmin::text::bigint FROM pg_replication_slots "
        f"WHERE slot_name = '{capture.name}'"
    )
    xmin = events[0].payload["source"]["xmin"]
    assert isinstance(xmin, int) and 0 < xmin <= catalog_xmin

    failing = {"slot.stream.params": "no_such_option=1"}
    error = _run_until_failure(capture, failing, table)
    assert "no_such_option" in str(error)
