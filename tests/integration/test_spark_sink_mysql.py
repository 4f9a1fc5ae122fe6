"""The Spark sink applies the MariaDB connector's topics: the Delta tables end equal to MariaDB.

One workload runs once for the module on the session's real MariaDB 10.11 and is captured by
cdcflow's MariaDB connector into the session's real Kafka (a snapshot, then the binlog); each
test applies those topics with the real job in Spark local mode and compares the Delta tables
with the MariaDB tables' final state (SCD1), or with the changes of every key (SCD2).

The sink orders a key's changes by their ``source`` position: binlog file number, ``pos`` (where
the rows event starts in its file) and ``row`` (the row's index in that rows event). The
workload makes every part count: a key changed several times in one transaction and again in
later ones; statements that move keys up by one (8 to 9 and 7 to 8; 39 to 40, 38 to 39, …), so
keys 8 and 31-39 are deleted and created again in one rows event, at one ``pos``, in
consecutive rows; a binlog rotation, after which the same keys change at *smaller* ``pos``
values in the next file; deletes, re-inserted keys and key changes; a TRUNCATE between changes
of the same keys (composite keys there); a column added while streaming; and seeded random
transactions. A table of MariaDB types checks the values the sink decodes from Debezium's
encodings, from the snapshot and from the binlog.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import random
import re
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pymysql
import pytest
from confluent_kafka import Message, Producer
from pyspark.sql import SparkSession
from pyspark.sql import types as st

from cdcflow.operator.devservices.kafka import KafkaBroker
from cdcflow.operator.devservices.postgres import PostgresServer
from cdcflow.sparkapps.batches import BatchReport
from cdcflow.sparkapps.config import CdcSink
from tests.integration.sink_support import apply_backlog, plain, sink_resource, table_path
from tests.plugins.fix_capture import CaptureHarness, Event
from tests.plugins.fix_conformance import MariaDbDriver
from tests.plugins.fix_kafka import create_topic, read_topic_to_end
from tests.services import mariadb
from tests.services.mariadb import MariaDbServer

Row = tuple[Any, ...]
Position = tuple[int, int, int]
"""``(binlog file number, pos, row)`` of an event, the order the sink must apply."""

ACCOUNT_COLUMNS = ("id", "name", "n", "amount", "note")
TAG_COLUMNS = ("k1", "k2", "v")
SENTINEL = 1_000_000
SNAPSHOT_IDS = (*range(1, 9), *range(30, 40))
UTC = "SET time_zone = '+00:00'"


# -- The workload --------------------------------------------------------------------------


@dataclass(frozen=True)
class Captured:
    """The module's MariaDB tables, captured into Kafka; the connector has stopped."""

    maria: MariaDbDriver
    accounts: str
    tags: str
    types: str

    @property
    def servers(self) -> str:
        return self.maria.capture.kafka.bootstrap_servers

    def topic(self, table: str) -> str:
        return f"{self.maria.name}.{self.maria.topic(table)}"

    def events(self, table: str) -> list[Event]:
        return self.maria.capture.events(self.maria.topic(table))


@pytest.fixture(scope="module")
def captured(
    postgres_server: PostgresServer,
    kafka_broker: KafkaBroker,
    mariadb_server: MariaDbServer,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Captured]:
    """Run the workload once for every test here (the ``maria`` fixture is per test)."""
    harness = CaptureHarness(
        postgres_server,
        kafka_broker,
        tmp_path_factory.mktemp("maria-capture"),
        name=f"t{uuid.uuid4().hex[:10]}",
    )
    maria = MariaDbDriver(harness, mariadb_server)
    try:
        yield _run_workload(maria)
    finally:
        for running in harness.running:
            running.engine.stop.set()
            running.thread.join(30)


def _run_workload(maria: MariaDbDriver) -> Captured:
    accounts, tags, types = (maria.table(s) for s in ("accounts", "tags", "types"))
    maria.run(
        f"CREATE TABLE {accounts} (id INT PRIMARY KEY, name VARCHAR(40) NOT NULL, "
        "n INT NOT NULL, amount DECIMAL(10,2))",
        f"CREATE TABLE {tags} (k1 INT, k2 VARCHAR(10), v VARCHAR(20), PRIMARY KEY (k1, k2))",
        f"CREATE TABLE {types} ({', '.join(TYPE_COLUMNS)}) DEFAULT CHARSET=utf8mb4",
        "INSERT INTO {} VALUES {}".format(
            accounts, ", ".join(f"({i}, 'snap-{i}', {i}, {i * 1.25})" for i in SNAPSHOT_IDS)
        ),
        f"INSERT INTO {tags} VALUES (1, 'red', 'a'), (1, 'blue', 'b'), (2, 'red', 'c')",
    )
    mariadb.run_sql(  # the snapshot's rows: read by SELECT, not from the binlog
        maria.server,
        UTC,
        _insert_types(types, 1, V1_SQL),
        _insert_types(types, 2, NULLS_SQL),
        _insert_types(types, 5, V2_SQL),
    )
    running = maria.start([accounts, tags, types], **{"skipped.operations": "none"})
    a = accounts
    maria.run_atomically(  # one transaction: one key several times, a key deleted and re-made
        f"UPDATE {a} SET n = n + 1 WHERE id = 1",
        f"UPDATE {a} SET n = n + 1 WHERE id = 1",
        f"UPDATE {a} SET name = 'one-tx' WHERE id = 1",
        f"UPDATE {a} SET name = 'two' WHERE id = 2",
        f"DELETE FROM {a} WHERE id = 3",
        f"INSERT INTO {a} VALUES (20, 'tx-insert', 20, 0.50)",
        f"UPDATE {a} SET n = 21 WHERE id = 20",
        f"DELETE FROM {a} WHERE id = 20",
        f"INSERT INTO {a} VALUES (20, 'tx-again', 22, 1.00)",
    )
    maria.run(  # the same keys again, one transaction each
        f"UPDATE {a} SET n = n * 10 WHERE id = 1",
        f"UPDATE {a} SET name = 'two-b' WHERE id = 2",
        f"UPDATE {a} SET name = 'two-c' WHERE id = 2",
        f"DELETE FROM {a} WHERE id = 4",
        f"INSERT INTO {a} VALUES (4, 'reborn', 40, 4.44)",
        f"UPDATE {a} SET amount = amount * 2 WHERE id IN (1, 2, 5)",  # one rows event, 3 rows
        f"UPDATE {a} SET id = 50 WHERE id = 5",
        f"UPDATE {a} SET n = 500 WHERE id = 50",
        # One rows event: row 0 moves 8 to 9, row 1 moves 7 to 8.
        f"UPDATE {a} SET id = id + 1 WHERE id IN (7, 8) ORDER BY id DESC",
        # Again for ten keys: row k moves 39 - k up by one, so keys 31 to 39 are each deleted
        # and created again in the same rows event, the create one row later. It is their
        # last change: only that row order decides their final state.
        f"UPDATE {a} SET id = id + 1 WHERE id BETWEEN 30 AND 39 ORDER BY id DESC",
    )
    mariadb.run_sql(maria.server, "FLUSH BINARY LOGS")  # later changes: next file, small pos
    maria.run(
        f"UPDATE {a} SET n = n + 1000 WHERE id IN (1, 2, 8)",
        f"UPDATE {a} SET name = 'rotated' WHERE id = 9",
        f"ALTER TABLE {a} ADD COLUMN note VARCHAR(20)",
        f"UPDATE {a} SET note = 'noted' WHERE id IN (1, 50)",
        f"INSERT INTO {a} VALUES (21, 'with-note', 21, 2.10, 'new')",
    )
    _random_account_changes(maria, a, seed=7, count=60, first_id=100)
    t = tags
    maria.run_atomically(
        f"INSERT INTO {t} VALUES (3, 'red', 'd')",
        f"UPDATE {t} SET v = 'a2' WHERE k1 = 1 AND k2 = 'red'",
        f"DELETE FROM {t} WHERE k1 = 1 AND k2 = 'blue'",
    )
    maria.run(
        f"TRUNCATE TABLE {t}",
        f"INSERT INTO {t} VALUES (1, 'red', 'after'), (2, 'red', 'x')",
        f"UPDATE {t} SET k2 = 'green' WHERE k1 = 2 AND k2 = 'red'",
        f"UPDATE {t} SET v = 'final' WHERE k1 = 1",
    )
    mariadb.run_sql(
        maria.server,
        UTC,
        _insert_types(types, 3, V1_SQL),
        _insert_types(types, 4, V2_SQL),
        _update_types(types, 2, V2_SQL),
        f"DELETE FROM {types} WHERE id = 5",
        _update_types(types, 4, NULLS_SQL),
    )
    maria.run(
        f"INSERT INTO {a} (id, name, n) VALUES ({SENTINEL}, 'end', 0)",
        f"INSERT INTO {t} VALUES ({SENTINEL}, 'end', 'end')",
    )
    maria.wait_for_events(a, lambda events: _has_key(events, "id", SENTINEL))
    maria.wait_for_events(t, lambda events: _has_key(events, "k1", SENTINEL))
    maria.wait_for_events(
        types, lambda events: any(e.op == "u" and e.payload["after"]["id"] == 4 for e in events)
    )
    running.stop()
    return Captured(maria, accounts, tags, types)


def _has_key(events: list[Event], column: str, value: int) -> bool:
    return any(e.key and e.key["payload"].get(column) == value for e in events)


def _random_account_changes(
    maria: MariaDbDriver, table: str, *, seed: int, count: int, first_id: int
) -> None:
    """``count`` random inserts, updates, key changes and deletes of keys from ``first_id``
    on, in transactions of one to four statements."""
    rnd = random.Random(seed)
    existing: list[int] = []  # its own keys only: the scripted keys keep a known history
    next_id = first_id
    statements: list[str] = []

    def values() -> str:
        amount = decimal.Decimal(rnd.randint(-(10**7), 10**7)).scaleb(-2)
        note = f"'n{rnd.randrange(100)}'" if rnd.random() < 0.7 else "NULL"
        return f"'r-{rnd.randrange(10**6)}', {rnd.randrange(10**6)}, {amount}, {note}"

    for _ in range(count):
        choice = rnd.random()
        if not existing or choice < 0.35:
            statements.append(f"INSERT INTO {table} VALUES ({next_id}, {values()})")
            existing.append(next_id)
            next_id += 1
        elif choice < 0.65:
            name, n, amount, note = values().split(", ")
            key = rnd.choice(existing)
            statements.append(
                f"UPDATE {table} SET name = {name}, n = {n}, amount = {amount}, note = {note} "
                f"WHERE id = {key}"
            )
        elif choice < 0.8:
            key = rnd.choice(existing)
            existing[existing.index(key)] = next_id
            statements.append(f"UPDATE {table} SET id = {next_id} WHERE id = {key}")
            next_id += 1
        else:
            key = rnd.choice(existing)
            existing.remove(key)
            statements.append(f"DELETE FROM {table} WHERE id = {key}")
    while statements:
        size = rnd.randint(1, 4)
        batch, statements = statements[:size], statements[size:]
        maria.run_atomically(*batch)


def query(server: MariaDbServer, statement: str) -> list[Row]:
    """Rows of a query on the test database, as root."""
    settings = server.connection_settings()
    with (
        pymysql.connect(
            host=str(settings["host"]),
            port=int(settings["port"]),
            user=str(settings["user"]),
            password=str(settings["password"]),
            database=server.database,
        ) as conn,
        conn.cursor() as cursor,
    ):
        cursor.execute(statement)
        return [tuple(row) for row in cursor.fetchall()]


def mariadb_rows(server: MariaDbServer, table: str, columns: Sequence[str]) -> list[Row]:
    rows = query(server, f"SELECT {', '.join(columns)} FROM {table}")
    return sorted((tuple(plain(v) for v in row) for row in rows), key=repr)


# -- Applying and reading ------------------------------------------------------------------


def _sink(servers: str, topics: Sequence[str], workdir: Path, **spec: Any) -> CdcSink:
    return sink_resource(bootstrap_servers=servers, topics=topics, workdir=workdir, **spec)


def _apply(spark: SparkSession, sink: CdcSink) -> list[BatchReport]:
    reports = apply_backlog(spark, sink)
    assert sum(r.dead_letters for r in reports) == 0
    return reports


def _delta(spark: SparkSession, sink: CdcSink, topic: str, columns: Sequence[str]) -> list[Row]:
    frame = spark.read.format("delta").load(table_path(sink, topic))
    present = [c for c in columns if c in frame.columns]
    assert present == list(columns), f"Delta table has {frame.columns}"
    return sorted(
        (tuple(plain(v) for v in row) for row in frame.select(*columns).collect()), key=repr
    )


def _whole_table(spark: SparkSession, sink: CdcSink, topic: str) -> list[Row]:
    """Every row and column, the sink's own included."""
    frame = spark.read.format("delta").load(table_path(sink, topic))
    return sorted((tuple(plain(v) for v in row) for row in frame.collect()), key=repr)


def _assert_equal_to_mariadb(spark: SparkSession, sink: CdcSink, captured: Captured) -> None:
    server = captured.maria.server
    for table, columns in ((captured.accounts, ACCOUNT_COLUMNS), (captured.tags, TAG_COLUMNS)):
        expected = mariadb_rows(server, table, columns)
        assert _delta(spark, sink, captured.topic(table), columns) == expected, table


def position(event: Event) -> Position:
    source = event.payload["source"]
    found = re.search(r"(\d+)$", source["file"])
    assert found is not None, source["file"]
    return int(found[1]), int(source["pos"]), int(source["row"])


def position_text(event: Event) -> str:
    """The sink's ``_cdc_position`` of an event: each part zero-padded."""
    file_number, pos, row = position(event)
    return f"{file_number:012d}:{pos:020d}:{row:010d}"


def _changes_of(
    events: list[Event], key: Callable[[dict[str, Any]], Any]
) -> dict[Any, list[Event]]:
    """The row events (no tombstones) of each key, in topic order."""
    changes: dict[Any, list[Event]] = {}
    for event in events:
        if event.value is None or event.op not in ("c", "u", "d", "r"):
            continue
        row = event.payload["after"] or event.payload["before"]
        changes.setdefault(key(row), []).append(event)
    return changes


# -- SCD1 ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Applied:
    """A sink that applied the module's topics, in the order Kafka holds them, once."""

    sink: CdcSink
    reports: list[BatchReport]


@pytest.fixture(scope="module")
def in_order(
    captured: Captured, spark: SparkSession, tmp_path_factory: pytest.TempPathFactory
) -> Applied:
    """Every topic applied in one micro-batch (SCD1), shared by the tests that read it."""
    tables = (captured.accounts, captured.tags, captured.types)
    workdir = tmp_path_factory.mktemp("in-order")
    sink = _sink(captured.servers, [captured.topic(t) for t in tables], workdir)
    return Applied(sink, _apply(spark, sink))


def test_binlog_changes_applied_in_order_leave_delta_equal_to_mariadb(
    captured: Captured, in_order: Applied, spark: SparkSession
) -> None:
    assert len(in_order.reports) == 1, "the test needs every change in one micro-batch"
    _assert_equal_to_mariadb(spark, in_order.sink, captured)
    path = table_path(in_order.sink, captured.topic(captured.accounts))
    schema = spark.read.format("delta").load(path).schema
    assert schema["note"].dataType == st.StringType()  # the column added while streaming
    assert schema["amount"].dataType == st.DecimalType(10, 2)


def test_stale_changes_sent_again_after_newer_ones_change_no_row(
    captured: Captured, in_order: Applied, spark: SparkSession, tmp_path: Path
) -> None:
    """What a capture engine restarting from an old offset does: the first three quarters of
    each topic sent again, after everything newer was applied, and applied by the sink
    restarted on them. Snapshot rows, creates of keys deleted since, updates older than the
    rows, changes before the truncate and changes before the binlog rotation (at higher
    ``pos``, in an earlier file): the position guard, the recorded deletes and the truncate
    floor must refuse every one."""
    accounts = captured.events(captured.accounts)
    stale = accounts[: len(accounts) * 3 // 4]
    final_keys = {
        row[0] for row in query(captured.maria.server, f"SELECT id FROM {captured.accounts}")
    }
    resurrectable = {
        key
        for key, changes in _changes_of(stale, lambda row: row["id"]).items()
        if key not in final_keys and changes[-1].op != "d"
    }
    assert resurrectable, "the stale prefix should hold creates of keys deleted after it"
    prefix = f"{captured.maria.name}r"
    resent, records = [], 0
    for table in (captured.accounts, captured.tags):
        copy = f"{prefix}.{captured.maria.topic(table)}"  # the same target table
        messages = read_topic_to_end(captured.servers, captured.topic(table))
        _produce(captured.servers, copy, messages[: len(messages) * 3 // 4])
        resent.append(copy)
        records += sum(m.value() is not None for m in messages[: len(messages) * 3 // 4])
    sink = in_order.sink
    topics = [captured.topic(captured.accounts), captured.topic(captured.tags)]
    before = {topic: _whole_table(spark, sink, topic) for topic in topics}
    restarted = sink.model_copy(
        update={
            "spec": sink.spec.model_copy(
                update={"topics": resent, "checkpoint_location": str(tmp_path / "checkpoint")}
            )
        }
    )

    reports = _apply(spark, restarted)

    assert sum(r.records for r in reports) == records
    assert {topic: _whole_table(spark, sink, topic) for topic in topics} == before


def test_the_workload_orders_changes_of_one_key_by_row_and_across_a_binlog_rotation(
    captured: Captured,
) -> None:
    """What the other tests rely on: orders that only some part of the position tells."""
    changes = _changes_of(captured.events(captured.accounts), lambda row: row["id"])

    # 8 -> 9 (row 0), then 7 -> 8 (row 1): key 8's delete and create differ in row alone;
    # so do those of keys 31 to 39, moved up by one in one statement too.
    for key in (8, *range(31, 40)):
        (moved_away,) = (e for e in changes[key] if e.op == "d")
        (moved_in,) = (e for e in changes[key] if e.op == "c")
        assert position(moved_away)[:2] == position(moved_in)[:2], key
        assert position(moved_in)[2] == position(moved_away)[2] + 1, key
    # After the rotation the same keys change at a smaller pos, in the next file.
    for key in (1, 2, 8):
        steps = list(zip(changes[key], changes[key][1:], strict=False))
        (rotated,) = [(a, b) for a, b in steps if position(a)[0] != position(b)[0]]
        before, after = (position(e) for e in rotated)
        assert after[0] == before[0] + 1 and after[1] < before[1], (key, before, after)
    # Key 1 changes three times in one transaction (its snapshot row first).
    assert [e.op for e in changes[1][:4]] == ["r", "u", "u", "u"]
    assert len({e.payload["source"]["gtid"] for e in changes[1][1:4]}) == 1


def test_changes_arriving_in_any_order_are_applied_in_binlog_file_pos_and_row_order(
    captured: Captured, spark: SparkSession, tmp_path: Path
) -> None:
    """The records of each topic sent in a random order to fresh topics and applied in one
    micro-batch: whatever the offsets say, each key ends at its change with the greatest
    (file, pos, row), and the truncate removes exactly the rows before it. (Across micro-batches
    the position guard and the recorded deletes are what the stale-changes test proves.)"""
    prefix = f"{captured.maria.name}x"
    copies, arrivals = [], []
    for n, table in enumerate((captured.accounts, captured.tags)):
        copy = f"{prefix}.{captured.maria.topic(table)}"
        messages = read_topic_to_end(captured.servers, captured.topic(table))
        random.Random(n).shuffle(messages)
        _produce(captured.servers, copy, messages)
        copies.append(copy)
        arrivals.append([json.loads(m.value() or b"null") for m in messages])
    ops = {
        key: [v["payload"]["op"] for v in arrivals[0] if v and _id(v) == key]
        for key in range(31, 40)
    }
    late = [key for key, arrived in ops.items() if arrived.index("d") > arrived.index("c")]
    # Keys 31-39 are deleted (row r) and created (row r + 1) at one pos: some must arrive late.
    assert len(late) >= 3, "the shuffle should put some deletes after their keys' creates"
    sink = _sink(captured.servers, copies, tmp_path)

    reports = _apply(spark, sink)

    assert len([r for r in reports if r.records]) == 1
    server = captured.maria.server
    for table, columns in ((captured.accounts, ACCOUNT_COLUMNS), (captured.tags, TAG_COLUMNS)):
        copy = f"{prefix}.{captured.maria.topic(table)}"
        assert _delta(spark, sink, copy, columns) == mariadb_rows(server, table, columns), table


def _id(value: dict[str, Any]) -> Any:
    payload = value["payload"]
    return (payload["after"] or payload["before"])["id"]


def _produce(servers: str, topic: str, messages: Sequence[Message]) -> None:
    """Send ``messages`` (keys, values, headers) to a new ``topic``, in this order."""
    create_topic(servers, topic)
    producer = Producer({"bootstrap.servers": servers, "enable.idempotence": True})
    for message in messages:
        producer.produce(
            topic, key=message.key(), value=message.value(), headers=message.headers() or []
        )
    assert producer.flush(30) == 0


# -- SCD2 ----------------------------------------------------------------------------------


def test_scd2_history_of_every_key_is_its_binlog_changes_and_current_rows_equal_mariadb(
    captured: Captured, spark: SparkSession, tmp_path: Path
) -> None:
    topic = captured.topic(captured.accounts)
    sink = _sink(captured.servers, [topic], tmp_path, mode="scd2")

    _apply(spark, sink)

    frame = spark.read.format("delta").load(table_path(sink, topic))
    current = frame.where("_cdc_is_current").select(*ACCOUNT_COLUMNS).collect()
    assert sorted((tuple(row) for row in current), key=repr) == mariadb_rows(
        captured.maria.server, captured.accounts, ACCOUNT_COLUMNS
    )
    history = ("id", "name", "n", "_cdc_op", "_cdc_valid_from", "_cdc_valid_to", "_cdc_is_current")
    stored = sorted((tuple(row) for row in frame.select(*history).collect()), key=repr)
    assert stored == _expected_history(captured.events(captured.accounts))


def _expected_history(events: list[Event]) -> list[Row]:
    """One version per c/u/r event, closed by the key's next change (the topic holds each
    key's changes in source order)."""
    versions: list[Row] = []
    for changes in _changes_of(events, lambda row: row["id"]).values():
        for event, following in zip(changes, [*changes[1:], None], strict=True):
            if event.op == "d":
                continue
            after = event.payload["after"]
            closed = None if following is None else position_text(following)
            versions.append(
                (
                    after["id"],
                    after["name"],
                    after["n"],
                    event.op,
                    position_text(event),
                    closed,
                    following is None,
                )
            )
    return sorted(versions, key=repr)


# -- Types ---------------------------------------------------------------------------------

TYPE_COLUMNS = (
    "id INT PRIMARY KEY",
    "ti TINYINT",
    "tiu TINYINT UNSIGNED",
    "si SMALLINT",
    "siu SMALLINT UNSIGNED",
    "i INT",
    "iu INT UNSIGNED",
    "bi BIGINT",
    "biu BIGINT UNSIGNED",
    "de DECIMAL(12,4)",
    "dbl DOUBLE",
    "vc VARCHAR(40)",
    "d DATE",
    "dt6 DATETIME(6)",
    "dt0 DATETIME",
    "ts TIMESTAMP(6) NULL DEFAULT NULL",
    "en ENUM('small','medium','large')",
    "j JSON",
    "bl BLOB",
)
TYPE_NAMES = tuple(c.split()[0] for c in TYPE_COLUMNS[1:])

#: (SQL literal, what Delta holds) per column, for the two sets of values.
V1: dict[str, tuple[str, Any]] = {
    "ti": ("-128", -128),
    "tiu": ("255", 255),
    "si": ("-32768", -32768),
    "siu": ("65535", 65535),
    "i": ("-2147483648", -(2**31)),
    "iu": ("4294967295", 2**32 - 1),
    "bi": ("-9223372036854775808", -(2**63)),
    "biu": ("9223372036854775807", 2**63 - 1),
    "de": ("-12345678.9012", decimal.Decimal("-12345678.9012")),
    "dbl": ("-1.5e300", -1.5e300),
    "vc": ("'naïve 🚀 façade Ωμέγα'", "naïve 🚀 façade Ωμέγα"),
    "d": ("'1969-07-20'", dt.date(1969, 7, 20)),
    "dt6": ("'1900-03-04 05:06:07.890123'", dt.datetime(1900, 3, 4, 5, 6, 7, 890123)),
    "dt0": ("'2038-01-19 03:14:08'", dt.datetime(2038, 1, 19, 3, 14, 8)),
    "ts": (
        "'2024-02-29 12:34:56.123456'",
        dt.datetime(2024, 2, 29, 12, 34, 56, 123456, tzinfo=dt.UTC),
    ),
    "en": ("'large'", "large"),
    "j": ('\'{"a": [1, 2.5, "x"], "b": null}\'', {"a": [1, 2.5, "x"], "b": None}),
    "bl": ("X'00FF1062696E617279'", b"\x00\xff\x10binary"),
}
V2: dict[str, tuple[str, Any]] = {
    "ti": ("127", 127),
    "tiu": ("0", 0),
    "si": ("32767", 32767),
    "siu": ("0", 0),
    "i": ("2147483647", 2**31 - 1),
    "iu": ("0", 0),
    "bi": ("9223372036854775807", 2**63 - 1),
    "biu": ("0", 0),
    "de": ("99999999.9999", decimal.Decimal("99999999.9999")),
    "dbl": ("2.2250738585072014e-308", 2.2250738585072014e-308),
    "vc": ("'🙂'", "🙂"),
    "d": ("'9999-12-31'", dt.date(9999, 12, 31)),
    "dt6": ("'1970-01-01 00:00:00.000001'", dt.datetime(1970, 1, 1, 0, 0, 0, 1)),
    "dt0": ("'1000-01-01 00:00:00'", dt.datetime(1000, 1, 1)),
    "ts": ("'1970-01-01 00:00:01'", dt.datetime(1970, 1, 1, 0, 0, 1, tzinfo=dt.UTC)),
    "en": ("'small'", "small"),
    "j": ("'[]'", []),
    "bl": ("''", b""),
}
V1_SQL = {name: sql for name, (sql, _) in V1.items()}
V2_SQL = {name: sql for name, (sql, _) in V2.items()}
NULLS_SQL = dict.fromkeys(TYPE_NAMES, "NULL")

#: The Delta column types of Debezium 3.7's encodings (TINYINT is int8, INT UNSIGNED int64, …).
DELTA_TYPES: dict[str, st.DataType] = {
    "ti": st.ByteType(),
    "tiu": st.ShortType(),
    "si": st.ShortType(),
    "siu": st.IntegerType(),
    "i": st.IntegerType(),
    "iu": st.LongType(),
    "bi": st.LongType(),
    "biu": st.LongType(),
    "de": st.DecimalType(12, 4),
    "dbl": st.DoubleType(),
    "vc": st.StringType(),
    "d": st.DateType(),
    "dt6": st.TimestampNTZType(),  # io.debezium.time.MicroTimestamp
    "dt0": st.TimestampNTZType(),  # io.debezium.time.Timestamp
    "ts": st.TimestampType(),  # io.debezium.time.ZonedTimestamp
    "en": st.StringType(),
    "j": st.StringType(),
    "bl": st.BinaryType(),
}


def _insert_types(table: str, row_id: int, values: dict[str, str]) -> str:
    listed = ", ".join(values[name] for name in TYPE_NAMES)
    return f"INSERT INTO {table} (id, {', '.join(TYPE_NAMES)}) VALUES ({row_id}, {listed})"


def _update_types(table: str, row_id: int, values: dict[str, str]) -> str:
    sets = ", ".join(f"{name} = {values[name]}" for name in TYPE_NAMES)
    return f"UPDATE {table} SET {sets} WHERE id = {row_id}"


def _stored(name: str, value: Any) -> Any:
    """A Delta value as comparable: instants in UTC (PySpark gives local time), JSON parsed."""
    if value is None:
        return None
    if name == "ts":
        return value.astimezone(dt.UTC)
    if name == "j":
        return json.loads(value)
    return plain(value)


def test_mariadb_types_arrive_in_delta_as_debezium_encodes_them_from_snapshot_and_binlog(
    captured: Captured, in_order: Applied, spark: SparkSession
) -> None:
    sink, topic = in_order.sink, captured.topic(captured.types)
    frame = spark.read.format("delta").load(table_path(sink, topic))
    assert {name: frame.schema[name].dataType for name in TYPE_NAMES} == DELTA_TYPES
    stored = {
        row["id"]: {name: _stored(name, row[name]) for name in TYPE_NAMES}
        for row in frame.collect()
    }
    first, second = ({n: v for n, (_, v) in values.items()} for values in (V1, V2))
    assert stored == {
        1: first,  # snapshot
        2: second,  # snapshot of NULLs, then a binlog update
        3: first,  # binlog insert
        4: dict.fromkeys(TYPE_NAMES),  # binlog insert, then an update to NULLs
    }


pytestmark = pytest.mark.timeout(600)
