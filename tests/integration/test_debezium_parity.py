"""cdcflow's PostgreSQL events equal the real Debezium's, and real Connect consumers read them.

The real Debezium PostgreSQL connector (3.7, on Kafka Connect 4.3) and cdcflow capture the same
tables with the same properties, each with its own slot and topic prefix, in three property
sets that together cover every handling mode. One workload runs once for all of them: a
snapshot of rows written before the connectors start (a column of every mapped type,
representative values and NULLs, a one-row table), then a stream of inserts, updates, deletes,
a primary-key change inside a multi-table transaction, an update leaving a TOAST value
unchanged, REPLICA IDENTITY FULL and keyless tables, a truncate and transactional and
non-transactional logical messages.

Every topic of the two prefixes is then compared record by record (keys, key and value
schemas, values, source blocks, transaction topic, headers); what may differ is named in
:mod:`tests.integration.debezium_oracle`. Then a real consumer reads both prefixes' topics:
Kafka Connect's JsonConverter with Debezium's ExtractNewRecordState (FileStreamSink).
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from pyspark.sql import SparkSession

from cdcflow.operator.devservices.kafka import KafkaBroker
from cdcflow.operator.devservices.postgres import PostgresServer
from tests.integration import debezium_oracle as oracle
from tests.integration.pg_type_catalog import (
    MOOD,
    column_definitions,
    create_type_objects,
    drop_type_objects,
    insert_values_sql,
)
from tests.integration.sink_support import (
    apply_backlog,
    delta_rows,
    plain,
    sink_resource,
    table_path,
)
from tests.plugins.fix_capture import CaptureHarness
from tests.plugins.fix_connect import ConnectHarness
from tests.plugins.fix_kafka import read_topic_to_end
from tests.services.kafka_connect import ConnectWorker

RUN = uuid.uuid4().hex[:6]
TYPES = f"p_types_{RUN}"
EVENTS = f"p_events_{RUN}"
FULL = f"p_full_{RUN}"
KEYLESS = f"p_keyless_{RUN}"
DEFAULTS = f"p_defaults_{RUN}"
#: Not alphabetical on purpose: Debezium snapshots tables in table.include.list order.
TABLES = [TYPES, EVENTS, FULL, KEYLESS, DEFAULTS]
MARKER_ID = 999
ORIGIN = f"parity_origin_{RUN}"

#: Property sets run side by side; together they cover every handling mode.
VARIANTS: dict[str, dict[str, str]] = {
    "defaults": {
        "provide.transaction.metadata": "true",
        "skipped.operations": "none",
        "heartbeat.interval.ms": "1000",
    },
    "modes_a": {
        "decimal.handling.mode": "double",
        "time.precision.mode": "connect",
        "hstore.handling.mode": "map",
        "interval.handling.mode": "string",
        "binary.handling.mode": "base64",
    },
    "nulls_kept": {"value.converter.replace.null.with.default": "false"},
    "modes_b": {
        "decimal.handling.mode": "string",
        "time.precision.mode": "adaptive_time_microseconds",
        "binary.handling.mode": "hex",
        "include.unknown.datatypes": "true",
    },
}

#: The snapshot rows per table, written before the connectors start.
SNAPSHOT_ROWS = {TYPES: 2, EVENTS: 1, FULL: 2, KEYLESS: 1, DEFAULTS: 2}

#: Columns with a DEFAULT of every kind Debezium reads: literals, casts, functions and
#: CURRENT_* (placeholders), enums, and types it gives no default.
DEFAULT_COLUMNS = (
    "n int DEFAULT 7, big bigint NOT NULL DEFAULT 9, small smallint DEFAULT -3, "
    "t text DEFAULT 'x', vc varchar(10) DEFAULT 'abc', ch char(3) DEFAULT 'ab', "
    "num numeric(6,2) DEFAULT 1.5, neg numeric(5,1) DEFAULT -1.5, numv numeric DEFAULT 2.25, "
    "f4 real DEFAULT 1.25, f8 double precision DEFAULT 2.5, flag boolean DEFAULT true, "
    "d date DEFAULT '2020-01-01', dnow date DEFAULT CURRENT_DATE, tm time DEFAULT '10:00', "
    "ts timestamp DEFAULT now(), tsl timestamp DEFAULT '2020-01-01 10:00:00', "
    "tz timestamptz DEFAULT CURRENT_TIMESTAMP, tzl timestamptz DEFAULT '2020-01-01 10:00+02', "
    "u uuid DEFAULT gen_random_uuid(), j jsonb DEFAULT '{\"a\": 1}', "
    f"mood {MOOD} DEFAULT 'ok', b bytea DEFAULT '\\x00', nullable text DEFAULT 'dflt'"
)
#: Columns whose value the database fills at insert time (differs between the two runs).
GENERATED = ("dnow", "ts", "tz", "u")
SETTLE_TIMEOUT = 120.0


def _snapshot_data(conn: psycopg.Connection[Any]) -> None:
    create_type_objects(conn)
    statements = [
        f"CREATE TABLE {TYPES} (id int PRIMARY KEY, {column_definitions()})",
        insert_values_sql(TYPES, 1),
        f"INSERT INTO {TYPES} (id) VALUES (2)",
        f"CREATE TABLE {EVENTS} (id int PRIMARY KEY, val text, big text)",
        f"ALTER TABLE {EVENTS} ALTER COLUMN big SET STORAGE EXTERNAL",
        f"INSERT INTO {EVENTS} VALUES (1, 'one', NULL)",
        f"CREATE TABLE {FULL} (id int PRIMARY KEY, val text, n numeric(6,2), r real, "
        "d double precision, ts timestamptz, day date, flag boolean, blob bytea, doc jsonb)",
        f"ALTER TABLE {FULL} REPLICA IDENTITY FULL",
        f"INSERT INTO {FULL} VALUES (1, 'a', 1.5, 1.25, -2.5e10, '2024-02-29 12:00:00.5+01', "
        "'2024-02-29', true, '\\x00ff', '{\"k\": [1, 2]}'), (2, 'b', NULL, NULL, NULL, NULL, "
        "NULL, NULL, NULL, NULL)",
        f"CREATE TABLE {KEYLESS} (val text, n int)",
        f"ALTER TABLE {KEYLESS} REPLICA IDENTITY FULL",
        f"INSERT INTO {KEYLESS} VALUES ('k', 1)",
        f"CREATE TABLE {DEFAULTS} (id serial PRIMARY KEY, {DEFAULT_COLUMNS})",
        f"INSERT INTO {DEFAULTS} DEFAULT VALUES",
        f"INSERT INTO {DEFAULTS} (n, t, num, flag, d, nullable) "
        "VALUES (NULL, NULL, NULL, NULL, NULL, NULL)",
    ]
    for statement in statements:
        conn.execute(statement)  # type: ignore[call-overload]


def _stream_workload(conn: psycopg.Connection[Any]) -> None:
    big = "".join(uuid.uuid4().hex for _ in range(200))  # 6.4 kB, stored out of line
    transactions = [
        [insert_values_sql(TYPES, 3), f"INSERT INTO {TYPES} (id) VALUES (4)"],
        [f"UPDATE {TYPES} SET c_text = 'changed', c_int4 = NULL WHERE id = 3"],
        [f"DELETE FROM {TYPES} WHERE id = 4"],
        [
            f"INSERT INTO {EVENTS} VALUES (2, 'two', '{big}')",
            f"INSERT INTO {FULL} (id, val, n, r, d) VALUES (3, 'c', 3.25, 0.5, 1e-3)",
            f"UPDATE {EVENTS} SET id = 20 WHERE id = 2",
            "SELECT pg_logical_emit_message(true, 'audit', 'in a transaction')",
            f"UPDATE {FULL} SET val = 'cc' WHERE id = 3",
        ],
        [f"UPDATE {EVENTS} SET val = 'twenty' WHERE id = 20"],  # big stays TOASTed
        [f"UPDATE {FULL} SET n = 9.99 WHERE id = 1", f"DELETE FROM {FULL} WHERE id = 2"],
        [f"UPDATE {KEYLESS} SET n = 2", f"INSERT INTO {KEYLESS} VALUES ('l', 3)"],
        [f"DELETE FROM {KEYLESS} WHERE val = 'k'"],
        [
            f"INSERT INTO {DEFAULTS} DEFAULT VALUES",
            f"INSERT INTO {DEFAULTS} (n, t, nullable) VALUES (NULL, NULL, NULL)",
            f"DELETE FROM {DEFAULTS} WHERE id = 1",
        ],
        ["SELECT pg_logical_emit_message(false, 'audit', 'outside a transaction')"],
        [f"TRUNCATE {KEYLESS}"],
    ]
    for statements in transactions:
        with conn.transaction():
            for statement in statements:
                conn.execute(statement)  # type: ignore[call-overload]
    _replayed_from_an_origin(conn)
    conn.execute(f"INSERT INTO {EVENTS} VALUES ({MARKER_ID}, 'marker', NULL)")  # type: ignore[call-overload]


def _replayed_from_an_origin(conn: psycopg.Connection[Any]) -> None:
    """A transaction as a logical replication subscriber applies it: with a replication
    origin, so its events carry ``source.origin`` and ``origin_lsn``."""
    conn.execute("SELECT pg_replication_origin_create(%s)", (ORIGIN,))
    conn.execute("SELECT pg_replication_origin_session_setup(%s)", (ORIGIN,))
    try:
        with conn.transaction():
            conn.execute("SELECT pg_replication_origin_xact_setup('0/1A2B3C', now())")
            conn.execute(f"INSERT INTO {EVENTS} VALUES (30, 'from elsewhere', NULL)")  # type: ignore[call-overload]
    finally:
        conn.execute("SELECT pg_replication_origin_session_reset()")


@dataclass
class Side:
    """One connector of a comparison: its topic prefix and how to read its topics."""

    prefix: str
    kafka: KafkaBroker

    def topic(self, suffix: str) -> str:
        return f"{self.prefix}.{suffix}"

    def records(self, suffix: str) -> list[oracle.Decoded]:
        return oracle.read_records(self.kafka.bootstrap_servers, self.topic(suffix))

    def count(self, suffix: str) -> int:
        try:
            return len(read_topic_to_end(self.kafka.bootstrap_servers, self.topic(suffix)))
        except (LookupError, RuntimeError, TimeoutError):
            return 0


@dataclass
class Run:
    """The finished workload: both sides of every variant."""

    sides: dict[str, tuple[Side, Side]]  # variant -> (debezium, cdcflow)
    postgres: PostgresServer
    kafka: KafkaBroker
    connect: ConnectHarness


def _converter_overrides(properties: dict[str, str]) -> dict[str, str]:
    """Kafka Connect reads ``value.converter.*`` settings of a connector only together with
    its own ``value.converter``; cdcflow takes them as they are."""
    if not any(name.startswith("value.converter.") for name in properties):
        return {}
    return {
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "true",
    }


def _wait(condition: Callable[[], bool], *, what: str, timeout: float = SETTLE_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


def _snapshot_done(side: Side) -> bool:
    return all(side.count(f"public.{table}") >= rows for table, rows in SNAPSHOT_ROWS.items())


def _marker_seen(side: Side) -> bool:
    try:
        records = side.records(f"public.{EVENTS}")
    except (LookupError, RuntimeError, TimeoutError):
        return False
    return any(
        oracle.payload(r.value).get("after", {})
        and oracle.payload(r.value)["after"]["id"] == MARKER_ID
        for r in records
        if r.value is not None
    )


def _settled(debezium: Side, cdcflow: Side) -> bool:
    """Both sides saw the marker and hold as many records on every data topic."""
    if not (_marker_seen(debezium) and _marker_seen(cdcflow)):
        return False
    return all(
        debezium.count(f"public.{table}") == cdcflow.count(f"public.{table}") for table in TABLES
    )


@pytest.fixture(scope="module")
def run(
    postgres_server: PostgresServer,
    kafka_broker: KafkaBroker,
    kafka_connect_worker: ConnectWorker,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Run]:
    workdir = tmp_path_factory.mktemp("parity")
    with psycopg.connect(postgres_server.dsn(), autocommit=True) as conn:
        _snapshot_data(conn)
    connect = ConnectHarness(kafka_connect_worker, postgres_server, workdir)
    harnesses: list[CaptureHarness] = []
    sides: dict[str, tuple[Side, Side]] = {}
    try:
        for variant, properties in VARIANTS.items():
            debezium = Side(f"dbz_{variant}_{RUN}", kafka_broker)
            cdcflow = Side(f"cdc_{variant}_{RUN}", kafka_broker)
            connect.debezium_postgres(
                debezium.prefix, tables=TABLES, **properties, **_converter_overrides(properties)
            )
            harness = CaptureHarness(
                postgres_server, kafka_broker, workdir / variant, name=cdcflow.prefix
            )
            (workdir / variant).mkdir()
            harnesses.append(harness)
            harness.start(harness.resource(TABLES, **properties), wait_for=None)
            sides[variant] = (debezium, cdcflow)
        for variant, (debezium, cdcflow) in sides.items():
            _wait(lambda d=debezium: _snapshot_done(d), what=f"{variant}: Debezium's snapshot")
            _wait(lambda c=cdcflow: _snapshot_done(c), what=f"{variant}: cdcflow's snapshot")
        with psycopg.connect(postgres_server.dsn(), autocommit=True) as conn:
            _stream_workload(conn)
        for variant, (debezium, cdcflow) in sides.items():
            _wait(lambda d=debezium, c=cdcflow: _settled(d, c), what=f"{variant}: both streams")
        yield Run(sides, postgres_server, kafka_broker, connect)
    finally:
        for harness in harnesses:
            harness.cleanup()
        connect.cleanup()
        with psycopg.connect(postgres_server.dsn(), autocommit=True) as conn:
            conn.execute(f"DROP TABLE IF EXISTS {', '.join(TABLES)}")  # type: ignore[call-overload]
            drop_type_objects(conn)
            conn.execute(
                "SELECT pg_replication_origin_drop(roname) FROM pg_replication_origin "
                "WHERE roname = %s",
                (ORIGIN,),
            )


def _compare(run: Run, variant: str, suffix: str) -> None:
    debezium, cdcflow = run.sides[variant]
    theirs, ours = debezium.records(suffix), cdcflow.records(suffix)
    assert theirs, f"Debezium wrote nothing to {debezium.topic(suffix)}"
    schema_difference = oracle.diff(
        oracle.schemas(theirs, prefix=debezium.prefix), oracle.schemas(ours, prefix=cdcflow.prefix)
    )
    record_difference = oracle.diff(
        oracle.normalized(theirs, prefix=debezium.prefix),
        oracle.normalized(ours, prefix=cdcflow.prefix),
    )
    assert not (schema_difference or record_difference), (
        f"{variant} {suffix} differs from Debezium.\nSchemas:\n{schema_difference or 'equal'}\n"
        f"Records:\n{record_difference or 'equal'}"
    )


#: Every table under the defaults; the handling modes change only the types table.
DATA_TOPICS = [
    *[("defaults", table) for table in TABLES],
    *[(variant, TYPES) for variant in ("modes_a", "modes_b")],
    ("nulls_kept", DEFAULTS),
]


@pytest.mark.parametrize(
    ("variant", "table"),
    DATA_TOPICS,
    ids=[f"{variant}-{table.removesuffix(f'_{RUN}')}" for variant, table in DATA_TOPICS],
)
def test_data_topics_equal_debeziums(run: Run, variant: str, table: str) -> None:
    _compare(run, variant, f"public.{table}")


def test_transaction_topic_equals_debeziums(run: Run) -> None:
    _compare(run, "defaults", "transaction")


def test_message_topic_equals_debeziums(run: Run) -> None:
    _compare(run, "defaults", "message")


def test_heartbeat_records_equal_debeziums(run: Run) -> None:
    """Heartbeats come on their own clock, so the first one of each is compared."""
    heartbeats = [
        oracle.read_records(run.kafka.bootstrap_servers, f"__debezium-heartbeat.{side.prefix}")
        for side in run.sides["defaults"]
    ]
    (debezium, theirs), (cdcflow, ours) = zip(run.sides["defaults"], heartbeats, strict=True)
    assert theirs and ours, "a connector wrote no heartbeat"
    schemas = oracle.diff(
        oracle.schemas(theirs[:1], prefix=debezium.prefix),
        oracle.schemas(ours[:1], prefix=cdcflow.prefix),
    )
    records = oracle.diff(
        oracle.normalized(theirs[:1], prefix=debezium.prefix),
        oracle.normalized(ours[:1], prefix=cdcflow.prefix),
    )
    assert not (schemas or records), f"Schemas:\n{schemas}\nRecords:\n{records}"


#: Struct.toString() prints byte arrays by identity (``[B@4089a05a``).
JAVA_ARRAY_IDENTITY = re.compile(r"\[B@[0-9a-f]+")


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def test_stock_connect_consumers_read_every_record_as_they_read_debeziums(run: Run) -> None:
    """JsonConverter (schemas on) + ExtractNewRecordState accept every record of every table."""
    files = {}
    for side in run.sides["defaults"]:
        topics = rf"{side.prefix}\.public\..*"
        files[side.prefix] = run.connect.unwrapped_file_sink(
            f"{side.prefix}_file", topics_regex=topics
        )
    debezium, cdcflow = (files[side.prefix] for side in run.sides["defaults"])

    def caught_up() -> bool:
        for name in files:
            run.connect.raise_if_failed(f"{name}_file")
        theirs = _lines(debezium)
        return bool(theirs) and len(_lines(cdcflow)) == len(theirs)

    _wait(caught_up, what="both file sinks to hold every record", timeout=60)
    time.sleep(2)  # nothing more arrives on either side
    theirs, ours = _lines(debezium), _lines(cdcflow)
    assert len(ours) == len(theirs)
    # Struct.toString() of the unwrapped rows: equal for the tables without deviating columns.
    dbz_prefix, cdc_prefix = (side.prefix for side in run.sides["defaults"])
    plain = [EVENTS, FULL, KEYLESS]

    def pick(lines: list[str], prefix: str) -> list[str]:
        return sorted(
            JAVA_ARRAY_IDENTITY.sub("[B@", line.replace(prefix, oracle.PREFIX))
            for line in lines
            if any(t in line for t in plain)
        )

    assert pick(ours, cdc_prefix) == pick(theirs, dbz_prefix)


#: Properties of the real connector's ConfigDef that cdcflow takes from the resource instead.
FROM_THE_RESOURCE = {
    "database.hostname", "database.port", "database.user", "database.password",
    "database.dbname", "database.sslpassword",
}  # fmt: skip
#: Kafka Connect's own connector settings: cdcflow is not a Connect plugin.
CONNECT_FRAMEWORK = {
    "name", "connector.class", "connector.plugin.version", "tasks.max", "tasks.max.enforce",
    "key.converter", "key.converter.plugin.version", "value.converter",
    "value.converter.plugin.version", "header.converter", "header.converter.plugin.version",
    "transforms", "predicates", "config.action.reload", "errors.retry.timeout",
    "errors.retry.delay.max.ms", "errors.tolerance", "errors.log.enable",
    "errors.log.include.messages", "topic.creation.groups", "exactly.once.support",
    "transaction.boundary", "transaction.boundary.interval.ms", "offsets.storage.topic",
    "converters", "post.processors", "transaction.metadata.factory", "sourceinfo.struct.maker",
    "memory.management.schemas.class", "memory.management.tables.class",
}  # fmt: skip
#: ConfigDef entries that are name patterns; cdcflow accepts the names they describe.
PATTERNS = {
    "column.mask.hash.([^.]+).with.salt.(.+)", "column.mask.with.(d+).chars",
    "column.truncate.to.(d+).chars",
}  # fmt: skip


def test_every_property_of_debeziums_configdef_is_handled_or_listed(
    kafka_connect_worker: ConnectWorker,
) -> None:
    """The real connector's ConfigDef against ours: every property is supported, refused with
    a reason, or in one of the lists above; a new Debezium property fails until it is one of
    them."""
    from cdcflow.capture import config
    from cdcflow.capture.connectors.postgres.properties import PostgresProperties
    from tests.services.kafka_connect import POSTGRES_CONNECTOR

    names = {e["name"] for e in kafka_connect_worker.rest.plugin_config(POSTGRES_CONNECTOR)}
    handled = set(config.known_properties(PostgresProperties)) | {
        name for name in names if config.unsupported_reason(name, PostgresProperties) is not None
    }
    assert names - handled - FROM_THE_RESOURCE - CONNECT_FRAMEWORK - PATTERNS == set()


#: The tables the JDBC sink applies: not the keyless one (no record key to upsert by), nor the
#: one of every type, which the sink (3.6) cannot create whichever connector wrote the topic.
JDBC_TABLES = [EVENTS, FULL]


def _rows(dsn: str, table: str, columns: str = "*") -> list[str]:
    """The table's rows as JSON text ordered by id; empty when the table does not exist."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        found = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (table,)).fetchone()
        if found is None or not found[0]:
            return []
        query = (
            f"SELECT row_to_json(sunk)::text FROM (SELECT {columns} FROM {table} ORDER BY id) sunk"
        )
        return [str(row[0]) for row in conn.execute(query).fetchall()]  # type: ignore[call-overload]


def test_debezium_jdbc_sink_writes_the_same_tables_from_cdcflows_topics_as_from_debeziums(
    run: Run,
) -> None:
    """The Debezium JDBC sink applies both connectors' topics to two databases: they come out
    equal to each other, and to the source (where the sink keeps values as they were)."""
    targets = {}
    with psycopg.connect(run.postgres.dsn(), autocommit=True) as conn:
        for side in run.sides["defaults"]:
            targets[side.prefix] = f"sink_{side.prefix}"
            conn.execute(f"CREATE DATABASE {targets[side.prefix]}")  # type: ignore[call-overload]
    tables = "|".join(JDBC_TABLES)
    for side in run.sides["defaults"]:
        run.connect.jdbc_sink(
            f"{side.prefix}_jdbc",
            topics_regex=rf"{side.prefix}\.public\.({tables})",
            database=targets[side.prefix],
        )
    debezium, cdcflow = (run.postgres.dsn(dbname=targets[s.prefix]) for s in run.sides["defaults"])
    source = run.postgres.dsn()
    # Every column, except the big one the sink writes the TOAST placeholder into.
    columns = {EVENTS: "id, val", FULL: "*"}
    expected = {table: _rows(source, table, columns[table]) for table in JDBC_TABLES}
    assert all(expected.values()), "a source table is empty: nothing would be compared"

    def applied() -> bool:
        for side in run.sides["defaults"]:
            run.connect.raise_if_failed(f"{side.prefix}_jdbc")
        return all(
            _rows(cdcflow, table, columns[table]) == rows for table, rows in expected.items()
        ) and all(_rows(cdcflow, table) == _rows(debezium, table) for table in JDBC_TABLES)

    _wait(applied, what="the JDBC sink to write equal tables from both connectors", timeout=120)


#: Columns whose Delta values equal what psycopg reads from PostgreSQL (timestamps and JSON
#: arrive as strings and the unchanged TOAST value of a re-keyed row cannot be filled in).
SPARK_COLUMNS = {EVENTS: ("id", "val"), FULL: ("id", "val", "n", "r", "d", "day", "flag", "blob")}


def test_spark_sink_applies_the_real_debeziums_topics_to_tables_equal_to_the_source(
    run: Run, spark: SparkSession, tmp_path: Path
) -> None:
    """A user may point the Spark sink at an existing Debezium deployment's topics."""
    debezium, _ = run.sides["defaults"]
    sink = sink_resource(
        bootstrap_servers=run.kafka.bootstrap_servers,
        topics=[debezium.topic(f"public.{table}") for table in SPARK_COLUMNS],
        workdir=tmp_path,
    )

    reports = apply_backlog(spark, sink)

    assert sum(report.dead_letters for report in reports) == 0
    with psycopg.connect(run.postgres.dsn(), autocommit=True) as conn:
        for table, columns in SPARK_COLUMNS.items():
            query = f"SELECT {', '.join(columns)} FROM {table}"
            expected = sorted(
                (tuple(plain(v) for v in row) for row in conn.execute(query).fetchall()),  # type: ignore[call-overload]
                key=repr,
            )
            path = table_path(sink, debezium.topic(f"public.{table}"))
            assert delta_rows(spark, path, columns) == expected, table


def test_a_transaction_from_a_replication_origin_names_it_in_source(run: Run) -> None:
    _, cdcflow = run.sides["defaults"]
    [event] = [
        record
        for record in cdcflow.records(f"public.{EVENTS}")
        if record.value is not None
        and (oracle.payload(record.value)["after"] or {}).get("id") == 30
    ]
    source = oracle.payload(event.value)["source"]
    assert (source["origin"], source["origin_lsn"]) == (ORIGIN, 0x1A2B3C)
