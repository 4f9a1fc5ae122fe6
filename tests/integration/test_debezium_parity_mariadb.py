"""cdcflow's MariaDB events equal the real Debezium MariaDB connector's, on the same server.

The real Debezium MariaDB connector (3.5, on the session's Kafka Connect worker) and cdcflow's
``mariadb`` connector capture the same tables of the session's MariaDB 10.11 with the same
properties, each with its own replication server id and topic prefix, in two property sets:
``defaults`` (transaction metadata on, truncates not skipped) over every table, and ``modes``
(the other decimal, binary, time and unsigned-bigint handling modes, ``include.query``, schema
history of the captured tables only) over the table of every type. One workload runs once for
both:

* a snapshot of rows written before the connectors start: a column of every MariaDB type
  (integers of every size signed and unsigned, DECIMAL, FLOAT/DOUBLE, BIT(1)/BIT(n), utf8mb4
  and latin1 text, binary strings and BLOBs, DATE/TIME/DATETIME/TIMESTAMP at several
  precisions, YEAR, ENUM, SET, JSON, spatial types), with extreme values and NULLs;
* a stream of inserts, updates and deletes, a primary-key change, a multi-row transaction
  over two tables, one statement changing several rows, DDL (``ALTER TABLE … ADD COLUMN`` on
  two tables, then rows using the new columns, ``CREATE TABLE`` of an included table, then its
  rows), a truncate, a transaction on a table that is not captured and a zero TIMESTAMP.

Every topic of the two prefixes is compared record by record — keys, key and value schemas,
values, source blocks, headers, the schema-change topic ``<prefix>`` and the transaction
topic — with :mod:`tests.integration.debezium_oracle`, which names what may differ, after
one adjustment for the oracle's age (:data:`GEOMETRY`). A difference fails with a unified diff
(``-`` Debezium, ``+`` cdcflow).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import pytest

from cdcflow.capture.assembly import build_engine
from cdcflow.capture.connector_resource import CdcConnector
from cdcflow.capture.credentials import Login
from cdcflow.operator.devservices.kafka import KafkaBroker
from tests.integration import debezium_oracle as oracle
from tests.plugins.fix_capture import RunningEngine
from tests.plugins.fix_connect import ConnectHarness
from tests.plugins.fix_kafka import read_topic_to_end
from tests.services import mariadb
from tests.services.kafka_connect import MARIADB_CONNECTOR, ConnectWorker
from tests.services.mariadb import MariaDbServer

RUN = uuid.uuid4().hex[:6]
TYPES = f"m_types_{RUN}"
EVENTS = f"m_events_{RUN}"
#: Created during streaming: its CREATE TABLE reaches both sides from the binlog only.
LATE = f"m_late_{RUN}"
TABLES = [TYPES, EVENTS, LATE]
#: In the captured database but not captured: its transactions still get BEGIN and END.
UNCAPTURED = f"m_other_{RUN}"
MARKER_ID = 999

#: Property sets run side by side, each by one Debezium and one cdcflow connector.
VARIANTS: dict[str, dict[str, str]] = {
    "defaults": {"provide.transaction.metadata": "true", "skipped.operations": "none"},
    "modes": {
        "decimal.handling.mode": "string",
        "binary.handling.mode": "base64",
        "time.precision.mode": "connect",
        "bigint.unsigned.handling.mode": "precise",
        "include.query": "true",
        # Debezium then snapshots, records and announces the captured tables only, as cdcflow
        # always does (docs/mysql.md, "Where cdcflow differs").
        "schema.history.internal.store.only.captured.tables.ddl": "true",
    },
}
#: The tables each variant captures.
VARIANT_TABLES = {"defaults": TABLES, "modes": [TYPES]}
#: Per variant, the table and row id of the workload's last change: streamed once it is seen.
LAST_CHANGE = {"defaults": (EVENTS, MARKER_ID), "modes": (TYPES, 6)}
#: The snapshot rows per table, written before the connectors start.
SNAPSHOT_ROWS = {TYPES: 3, EVENTS: 2}
SETTLE_TIMEOUT = 120.0

#: A column of every MariaDB type, in the table's default charset utf8mb4 unless named.
TYPE_COLUMNS: list[tuple[str, str]] = [
    ("c_tinyint", "TINYINT"),
    ("c_tinyint_u", "TINYINT UNSIGNED"),
    ("c_bool", "BOOLEAN"),
    ("c_smallint", "SMALLINT"),
    ("c_smallint_u", "SMALLINT UNSIGNED"),
    ("c_mediumint", "MEDIUMINT"),
    ("c_mediumint_u", "MEDIUMINT UNSIGNED"),
    ("c_int", "INT"),
    ("c_int_u", "INT UNSIGNED"),
    ("c_bigint", "BIGINT"),
    ("c_bigint_u", "BIGINT UNSIGNED"),
    ("c_decimal", "DECIMAL(10,3)"),
    ("c_decimal_wide", "DECIMAL(30,10) UNSIGNED"),
    ("c_decimal_int", "DECIMAL(5)"),
    ("c_float", "FLOAT"),
    ("c_double", "DOUBLE"),
    ("c_bit1", "BIT(1)"),
    ("c_bit10", "BIT(10)"),
    ("c_bit64", "BIT(64)"),
    ("c_char", "CHAR(5)"),
    ("c_varchar", "VARCHAR(100)"),
    ("c_tinytext", "TINYTEXT"),
    ("c_text", "TEXT"),
    ("c_mediumtext", "MEDIUMTEXT"),
    ("c_longtext", "LONGTEXT"),
    ("c_latin1", "VARCHAR(20) CHARACTER SET latin1"),
    ("c_binary", "BINARY(4)"),
    ("c_varbinary", "VARBINARY(10)"),
    ("c_tinyblob", "TINYBLOB"),
    ("c_blob", "BLOB"),
    ("c_mediumblob", "MEDIUMBLOB"),
    ("c_longblob", "LONGBLOB"),
    ("c_date", "DATE"),
    ("c_time", "TIME"),
    ("c_time6", "TIME(6)"),
    ("c_datetime", "DATETIME"),
    ("c_datetime3", "DATETIME(3)"),
    ("c_datetime6", "DATETIME(6)"),
    ("c_timestamp", "TIMESTAMP NULL"),
    ("c_timestamp6", "TIMESTAMP(6) NULL"),
    ("c_year", "YEAR"),
    ("c_enum", "ENUM('small','medium','large')"),
    ("c_set", "SET('a','b','c')"),
    ("c_json", "JSON"),
    ("c_point", "POINT"),
    ("c_geometry", "GEOMETRY"),
    ("c_linestring", "LINESTRING"),
    ("c_default_int", "INT NOT NULL DEFAULT 42"),
    ("c_default_text", "VARCHAR(10) DEFAULT 'dflt'"),
    ("c_default_ts", "DATETIME(3) DEFAULT '2020-02-02 02:02:02.002'"),
]
#: Values of row 1: minimum integers, fractions, multi-byte text, a full JSON document.
ROW_MIN = (
    "-128, 0, 1, -32768, 0, -8388608, 0, -2147483648, 0, -9223372036854775808, 0, "
    "-1234567.891, 12345678901234567890.0123456789, -99999, "
    "-1.5, -2.25e-300, "
    "b'1', b'1010101010', b'1000000000000000000000000000000000000000000000000000000000000001', "
    "'ab', 'héllo wörld 🎉', 'tiny', 'text ✓', 'medium', 'long ∞', "
    "'café', "
    "x'00ff10', x'deadbeef', x'01', x'0203', x'04', x'05', "
    "'1000-01-01', '00:00:00', '12:34:56.789012', '1000-01-01 00:00:00', "
    "'2024-02-29 23:59:59.999', '2024-02-29 12:34:56.123456', '1970-01-01 00:00:01', "
    "'2038-01-19 03:14:07.999999', "
    "1901, "
    "'small', 'a,c', "
    '\'{"a": [1, 2.5, "x"], "b": null, "ü": true}\', '
    "ST_GeomFromText('POINT(1 2)'), "
    "ST_GeomFromText('POLYGON((0 0, 1 0, 1 1, 0 0))'), "
    "ST_GeomFromText('LINESTRING(0 0, 1 1, 2 0)'), "
    "0, '', '1999-12-31 23:59:59.999'"
)
#: Values of row 2: maximum integers, zero fractions, empty strings, upper date limits.
ROW_MAX = (
    "127, 255, 0, 32767, 65535, 8388607, 16777215, 2147483647, 4294967295, "
    "9223372036854775807, 18446744073709551615, "
    "0.000, 0, 0, "
    "3.4e38, 1.7976931348623157e308, "
    "b'0', b'0000000000', b'1111111111111111111111111111111111111111111111111111111111111111', "
    "'', '', '', '', '', '', "
    "'', "
    "x'', x'', x'', x'', x'', x'', "
    "'9999-12-31', '23:59:59', '00:00:00.000001', '9999-12-31 23:59:59', "
    "'9999-12-31 23:59:59.999', '9999-12-31 23:59:59.999999', '2000-01-01 00:00:00', "
    "'2000-01-01 00:00:00.000001', "
    "2155, "
    "'large', '', "
    "'[]', "
    "ST_GeomFromText('POINT(-180.5 90.25)'), "
    "ST_GeomFromText('POINT(0 0)'), "
    "ST_GeomFromText('LINESTRING(1 1, 2 2)'), "
    "-1, NULL, NULL"
)
#: Row 4, inserted while streaming: values between the two.
ROW_MID = (
    "-1, 1, 0, -1, 1, -1, 1, -1, 1, -1, 9223372036854775808, "
    "0.5, 1.1, 12, "
    "0.1, 0.1, "
    "b'0', b'1', b'10', "
    "'x', 'x', 'x', 'x', 'x', 'x', "
    "'x', "
    "x'7f', x'80', x'ff', x'00', x'0a', x'0d', "
    "'2000-02-29', '01:02:03', '23:59:59.5', '2000-02-29 01:02:03', "
    "'2000-02-29 01:02:03.400', '2000-02-29 01:02:03.000500', '2024-06-30 12:00:00', "
    "'2024-06-30 12:00:00.5', "
    "2000, "
    "'medium', 'a,b,c', "
    '\'{"nested": {"deep": [[], {}]}}\', '
    "ST_GeomFromText('POINT(3 4)'), "
    "ST_GeomFromText('MULTIPOINT(1 1, 2 2)'), "
    "ST_GeomFromText('LINESTRING(5 5, 6 6)'), "
    "7, 'seven', NULL"
)


def _insert_types(row_id: int, values: str) -> str:
    columns = ", ".join(["id", *(name for name, _ in TYPE_COLUMNS)])
    return f"INSERT INTO {TYPES} ({columns}) VALUES ({row_id}, {values})"


def _snapshot_statements() -> list[str]:
    return [
        f"CREATE TABLE {TYPES} (id INT PRIMARY KEY, "
        + ", ".join(f"{name} {kind}" for name, kind in TYPE_COLUMNS)
        + ") DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci",
        _insert_types(1, ROW_MIN),
        _insert_types(2, ROW_MAX),
        f"INSERT INTO {TYPES} (id) VALUES (3)",
        f"CREATE TABLE {EVENTS} (id INT PRIMARY KEY, val VARCHAR(50) NOT NULL) "
        "DEFAULT CHARSET=utf8mb4",
        f"INSERT INTO {EVENTS} VALUES (1, 'one'), (2, 'two')",
        f"CREATE TABLE {UNCAPTURED} (id INT PRIMARY KEY)",
    ]


#: The streamed workload: each inner list runs as one transaction.
STREAM: list[list[str]] = [
    [_insert_types(4, ROW_MID)],
    [
        f"UPDATE {TYPES} SET c_varchar = 'changed ✓', c_json = '{{\"k\": 1}}', c_set = '', "
        "c_enum = 'large', c_datetime6 = '2001-01-01 00:00:00.000001', c_bit10 = b'1', "
        "c_point = ST_GeomFromText('POINT(9 9)'), c_decimal = 1.001 WHERE id = 1"
    ],
    [f"UPDATE {TYPES} SET c_int = 5, c_text = NULL WHERE id = 3"],
    [f"DELETE FROM {TYPES} WHERE id = 2"],
    [f"UPDATE {EVENTS} SET id = 20 WHERE id = 2"],
    [
        f"INSERT INTO {EVENTS} VALUES (3, 'three'), (4, 'four')",
        f"UPDATE {EVENTS} SET val = 'one!' WHERE id = 1",
        f"UPDATE {TYPES} SET c_int = 7 WHERE id = 3",
        f"DELETE FROM {EVENTS} WHERE id = 3",
    ],
    [f"UPDATE {EVENTS} SET val = CONCAT(val, '+')"],
    [f"INSERT INTO {UNCAPTURED} VALUES (1)"],
    [f"UPDATE {TYPES} SET c_timestamp = '0000-00-00 00:00:00' WHERE id = 3"],
    [
        f"ALTER TABLE {EVENTS} ADD COLUMN note VARCHAR(20) NOT NULL DEFAULT 'n/a', "
        "ADD COLUMN qty INT UNSIGNED"
    ],
    [
        f"INSERT INTO {EVENTS} VALUES (5, 'five', 'noted', 7)",
        f"UPDATE {EVENTS} SET qty = 8 WHERE id = 1",
    ],
    [f"ALTER TABLE {TYPES} ADD COLUMN c_added DATETIME(6) DEFAULT '2020-01-01 00:00:00.5'"],
    [
        f"INSERT INTO {TYPES} (id, c_added) VALUES (5, '2021-05-05 05:05:05.000005')",
        f"INSERT INTO {TYPES} (id) VALUES (6)",
    ],
    [
        f"CREATE TABLE {LATE} (id BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY, "
        "label VARCHAR(30) CHARACTER SET utf8mb4 NOT NULL, amount DECIMAL(8,2) DEFAULT 1.50, "
        "created DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6))"
    ],
    [f"INSERT INTO {LATE} (label, created) VALUES ('a', '2022-02-02'), ('b', '2023-03-03')"],
    [f"UPDATE {LATE} SET amount = 2.25 WHERE label = 'b'"],
    [f"TRUNCATE TABLE {LATE}"],
    [f"INSERT INTO {EVENTS} (id, val) VALUES ({MARKER_ID}, 'marker')"],
]


def _run_stream(server: MariaDbServer) -> None:
    for statements in STREAM:
        if len(statements) == 1:
            mariadb.run_sql(server, *statements)
        else:
            mariadb.run_sql(server, "START TRANSACTION", *statements, "COMMIT")


@dataclass
class Side:
    """One connector of a comparison: its topic prefix and how to read its topics."""

    prefix: str
    kafka: KafkaBroker

    def topic(self, suffix: str) -> str:
        return f"{self.prefix}.{suffix}" if suffix else self.prefix

    def records(self, suffix: str) -> list[oracle.Decoded]:
        return oracle.read_records(self.kafka.bootstrap_servers, self.topic(suffix))

    def count(self, suffix: str) -> int:
        try:
            return len(read_topic_to_end(self.kafka.bootstrap_servers, self.topic(suffix)))
        except (LookupError, RuntimeError, TimeoutError):
            return 0


def _data(table: str) -> str:
    return f"{mariadb.DATABASE}.{table}"


@dataclass
class Run:
    """The finished workload: both sides of every variant, and whether both settled."""

    sides: dict[str, tuple[Side, Side]]  # variant -> (debezium, cdcflow)
    engines: dict[str, RunningEngine]
    unsettled: dict[str, str]  # variant -> what cdcflow had not caught up with


def _start_cdcflow(
    server: MariaDbServer,
    kafka: KafkaBroker,
    workdir: Path,
    *,
    name: str,
    tables: list[str],
    properties: dict[str, str],
) -> RunningEngine:
    """cdcflow's ``mariadb`` connector in a thread, configured as the Debezium side is."""
    workdir.mkdir()
    config = {
        "topic.prefix": name,
        "table.include.list": ",".join(f"{server.database}\\.{table}" for table in tables),
        "schema.history.internal": "io.debezium.storage.file.history.FileSchemaHistory",
        "schema.history.internal.file.filename": str(workdir / "history.dat"),
        "include.schema.changes": "true",
        "offset.flush.interval.ms": 200,
        "poll.interval.ms": 100,
        **properties,
    }
    resource = CdcConnector.model_validate(
        {
            "apiVersion": "cdcflow.io/v1alpha1",
            "kind": "CdcConnector",
            "metadata": {"name": name.replace("_", "-")},
            "spec": {
                "source": {"mariadb": {"host": server.host, "port": server.port}},
                "kafka": {"bootstrapServers": kafka.bootstrap_servers},
                "config": config,
            },
        }
    )
    engine = build_engine(
        resource,
        login=Login(server.cdc_user, server.cdc_password),
        offsets_path=workdir / "offsets.json",
    )
    errors: list[BaseException] = []

    def target() -> None:
        try:
            engine.run()
        except BaseException as error:  # surfaced to the tests through RunningEngine
            errors.append(error)

    thread = threading.Thread(target=target, daemon=True, name=f"cdcflow-{name}")
    thread.start()
    return RunningEngine(engine, thread, errors)


def _wait(condition: Callable[[], bool], *, timeout: float = SETTLE_TIMEOUT) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.5)
    return False


def _snapshot_done(side: Side, variant: str) -> bool:
    tables = VARIANT_TABLES[variant]
    return all(
        side.count(_data(table)) >= SNAPSHOT_ROWS[table]
        for table in tables
        if table in SNAPSHOT_ROWS
    )


def _cdcflow_snapshot_done(side: Side, variant: str, engine: RunningEngine) -> bool:
    """Whether cdcflow streams after its snapshot; raises with its error when it died."""
    if engine.errors:
        raise AssertionError(f"{variant}: cdcflow's connector failed") from engine.errors[0]
    if not engine.thread.is_alive():
        raise AssertionError(
            f"{variant}: cdcflow's connector stopped ({engine.engine.stats.phase})"
        )
    return engine.engine.stats.phase == "streaming" and _snapshot_done(side, variant)


def _last_change_seen(side: Side, variant: str) -> bool:
    """Whether the side streamed the workload's last change of the variant's tables."""
    table, row_id = LAST_CHANGE[variant]
    try:
        records = side.records(_data(table))
    except (LookupError, RuntimeError, TimeoutError):
        return False
    return any((oracle.payload(r.value).get("after") or {}).get("id") == row_id for r in records)


def _suffixes(variant: str) -> list[str]:
    """Every topic of a variant: data topics, the schema-change topic and transactions."""
    suffixes = [_data(table) for table in VARIANT_TABLES[variant]] + [""]
    if VARIANTS[variant].get("provide.transaction.metadata") == "true":
        suffixes.append("transaction")
    return suffixes


def _lagging(variant: str, debezium: Side, cdcflow: Side) -> list[str]:
    """The topics where cdcflow holds a different number of records than Debezium."""
    counts = {
        suffix: (debezium.count(suffix), cdcflow.count(suffix)) for suffix in _suffixes(variant)
    }
    return [
        f"{suffix or '<schema changes>'}: Debezium {theirs}, cdcflow {ours}"
        for suffix, (theirs, ours) in counts.items()
        if theirs != ours
    ]


def _settled(variant: str, debezium: Side, cdcflow: Side) -> bool:
    return not _lagging(variant, debezium, cdcflow)


@pytest.fixture(scope="module")
def run(
    mariadb_server: MariaDbServer,
    kafka_broker: KafkaBroker,
    kafka_connect_worker: ConnectWorker,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Run]:
    """Snapshot rows, start both sides of every variant, stream the workload, let it settle.

    Debezium must snapshot and stream everything, and cdcflow must come up and finish its
    snapshot before the stream starts; after that, what cdcflow misses or gets wrong is left
    to the tests to show as differences.
    """
    workdir = tmp_path_factory.mktemp("parity_mariadb")
    mariadb.run_sql(mariadb_server, *_snapshot_statements())
    connect = ConnectHarness(kafka_connect_worker, None, workdir)
    sides: dict[str, tuple[Side, Side]] = {}
    engines: dict[str, RunningEngine] = {}
    try:
        for variant, properties in VARIANTS.items():
            debezium = Side(f"dbz_{variant}_{RUN}", kafka_broker)
            cdcflow = Side(f"cdc_{variant}_{RUN}", kafka_broker)
            sides[variant] = (debezium, cdcflow)
            connect.debezium_mariadb(
                debezium.prefix,
                server=mariadb_server,
                tables=VARIANT_TABLES[variant],
                **properties,
            )
            if not _wait(partial(_snapshot_done, debezium, variant)):
                connect.raise_if_failed(debezium.prefix)
                raise AssertionError(f"{variant}: Debezium's snapshot did not finish")
            engines[variant] = _start_cdcflow(
                mariadb_server,
                kafka_broker,
                workdir / cdcflow.prefix,
                name=cdcflow.prefix,
                tables=VARIANT_TABLES[variant],
                properties=properties,
            )
        for variant, (_, cdcflow) in sides.items():
            engine = engines[variant]
            if not _wait(partial(_cdcflow_snapshot_done, cdcflow, variant, engine)):
                raise AssertionError(
                    f"{variant}: cdcflow did not finish its snapshot ({engine.engine.stats.phase}"
                    f", records: {_lagging(variant, *sides[variant])})"
                )
        _run_stream(mariadb_server)
        unsettled: dict[str, str] = {}
        for variant, (debezium, cdcflow) in sides.items():
            if not _wait(partial(_last_change_seen, debezium, variant)):
                connect.raise_if_failed(debezium.prefix)
                raise AssertionError(f"{variant}: Debezium did not stream the whole workload")
            # cdcflow may miss records or write more: the tests show the differences.
            if not (
                _wait(partial(_last_change_seen, cdcflow, variant))
                and _wait(partial(_settled, variant, debezium, cdcflow), timeout=20)
            ):
                lagging = _lagging(variant, debezium, cdcflow)
                unsettled[variant] = "; ".join(lagging) or "its last change never arrived"
        yield Run(sides, engines, unsettled)
    finally:
        for engine in engines.values():
            engine.engine.stop.set()
            engine.thread.join(30)
        connect.cleanup()
        mariadb.run_sql(mariadb_server, f"DROP TABLE IF EXISTS {', '.join(TABLES)}")


#: Debezium 3.7 (cdcflow's reference, the PostgreSQL oracle's version) gave the geometry
#: struct an optional ``extensions`` map and made it version 2; the MariaDB oracle is 3.5,
#: whose version 1 has no such field. cdcflow's records are compared as 3.5 writes them when
#: the map is empty (null), so the oracle's age is not reported as a difference.
GEOMETRY = "io.debezium.data.geometry.Geometry"


#: Debezium 3.7 maps signed TINYINT (and MariaDB's BOOLEAN, a TINYINT(1)) to int8 and
#: java.sql.Types.TINYINT (debezium/dbz#2235); 3.5 used int16 and SMALLINT.
TINYINT_3_5 = {"int8": "int16"}
JDBC_TINYINT, JDBC_SMALLINT = -6, 5


def _as_debezium_3_5(record: oracle.Decoded) -> oracle.Decoded:
    value = record.value
    if not (isinstance(value, dict) and isinstance(value.get("schema"), dict)):
        return record
    for change in oracle.payload(value).get("tableChanges") or []:
        for column in (change.get("table") or {}).get("columns") or []:
            if column.get("jdbcType") == JDBC_TINYINT:
                column["jdbcType"] = JDBC_SMALLINT
    for image in value["schema"].get("fields", []):
        for column in image.get("fields") or []:
            column["type"] = TINYINT_3_5.get(column.get("type"), column.get("type"))
    geometry_columns: set[str] = set()
    for image in value["schema"].get("fields", []):
        for column in image.get("fields") or []:
            if column.get("name") == GEOMETRY and column.get("version") == 2:
                geometry_columns.add(column["field"])
                column["version"] = 1
                column["fields"] = [f for f in column["fields"] if f["field"] != "extensions"]
    for image in ("before", "after"):
        row = oracle.payload(value).get(image)
        for name in geometry_columns:
            cell = row.get(name) if isinstance(row, dict) else None
            if isinstance(cell, dict) and "extensions" in cell and cell["extensions"] is None:
                del cell["extensions"]
    return record


def _without_debeziums_ddl_quirks(records: list[oracle.Decoded]) -> list[oracle.Decoded]:
    """Debezium's records as cdcflow writes them where Debezium's are artefacts of its binlog
    client, not a contract (docs/mysql.md, "Where cdcflow differs"): a DDL or TRUNCATE
    transaction gets a BEGIN marker and never an END, the TRUNCATE event a ``transaction``
    block of that unfinished transaction, and a streamed DDL record the ``source.row`` of
    the rows event before it."""
    ended = {
        oracle.payload(r.value).get("id")
        for r in records
        if isinstance(r.value, dict) and oracle.payload(r.value).get("status") == "END"
    }
    kept = []
    for record in records:
        payload = oracle.payload(record.value) if isinstance(record.value, dict) else {}
        if payload.get("status") == "BEGIN" and payload.get("id") not in ended:
            continue
        if payload.get("op") == "t":
            payload["transaction"] = None
        if "ddl" in payload and payload["source"].get("snapshot") == "false":
            payload["source"]["row"] = 0
        kept.append(record)
    return kept


def _compare(run: Run, variant: str, suffix: str) -> None:
    debezium, cdcflow = run.sides[variant]
    theirs = _without_debeziums_ddl_quirks(debezium.records(suffix))
    ours = [_as_debezium_3_5(record) for record in cdcflow.records(suffix)]
    assert theirs, f"Debezium wrote nothing to {debezium.topic(suffix)}"
    schema_difference = oracle.diff(
        oracle.schemas(theirs, prefix=debezium.prefix), oracle.schemas(ours, prefix=cdcflow.prefix)
    )
    record_difference = oracle.diff(
        oracle.normalized(theirs, prefix=debezium.prefix),
        oracle.normalized(ours, prefix=cdcflow.prefix),
    )
    engine = run.engines[variant]
    state = f"cdcflow is {engine.engine.stats.phase}"
    if engine.errors:
        state += f", failed with {engine.errors[0]!r}"
    if variant in run.unsettled:
        state += f"; record counts differ: {run.unsettled[variant]}"
    assert not (schema_difference or record_difference), (
        f"{variant} {debezium.topic(suffix)} differs from Debezium ({state}).\n"
        f"Schemas:\n{schema_difference or 'equal'}\nRecords:\n{record_difference or 'equal'}"
    )


def test_snapshot_and_stream_of_every_type_equal_debeziums(run: Run) -> None:
    """Rows of every MariaDB type, read by the snapshot and from the binlog, before and after
    an ALTER TABLE: same keys, schemas, values and source blocks as Debezium's."""
    _compare(run, "defaults", _data(TYPES))


def test_every_type_under_the_other_handling_modes_equals_debeziums(run: Run) -> None:
    """decimal string, binary base64, time connect, unsigned bigint precise, include.query."""
    _compare(run, "modes", _data(TYPES))


def test_key_change_transaction_and_added_columns_equal_debeziums(run: Run) -> None:
    """Updates, deletes and tombstones, a primary-key change (delete + tombstone + create with
    the key headers), a multi-row transaction and statement, rows after ADD COLUMN."""
    _compare(run, "defaults", _data(EVENTS))


def test_table_created_while_streaming_and_its_truncate_equal_debeziums(run: Run) -> None:
    _compare(run, "defaults", _data(LATE))


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_schema_change_topic_equals_debeziums(run: Run, variant: str) -> None:
    """The snapshot's statements and table structures and the streamed ALTER and CREATE TABLE
    statements, with their tableChanges, on topic ``<prefix>``: with Debezium's default
    history (every table of the captured database) and with captured tables only."""
    _compare(run, variant, "")


def test_transaction_topic_equals_debeziums(run: Run) -> None:
    """BEGIN/END records named by GTID, with per-table event counts."""
    _compare(run, "defaults", "transaction")


#: Properties of the real connector's ConfigDef that cdcflow takes from the resource instead.
FROM_THE_RESOURCE = {
    "database.hostname", "database.port", "database.user", "database.password",
}  # fmt: skip
#: Kafka Connect's own connector settings, and Debezium's Java extension points.
CONNECT_FRAMEWORK = {
    "name", "connector.class", "connector.plugin.version", "tasks.max", "tasks.max.enforce",
    "key.converter", "key.converter.plugin.version", "value.converter",
    "value.converter.plugin.version", "header.converter", "header.converter.plugin.version",
    "transforms", "predicates", "config.action.reload", "errors.retry.timeout",
    "errors.retry.delay.max.ms", "errors.tolerance", "errors.log.enable",
    "errors.log.include.messages", "topic.creation.groups", "exactly.once.support",
    "transaction.boundary", "transaction.boundary.interval.ms", "offsets.storage.topic",
    "converters", "post.processors", "transaction.metadata.factory", "sourceinfo.struct.maker",
}  # fmt: skip
#: ConfigDef entries that are name patterns; cdcflow accepts the names they describe.
PATTERNS = {
    "column.mask.hash.([^.]+).with.salt.(.+)", "column.mask.with.(d+).chars",
    "column.truncate.to.(d+).chars",
}  # fmt: skip


def test_every_property_of_debeziums_configdef_is_handled_or_listed(
    kafka_connect_worker: ConnectWorker,
) -> None:
    """The real MariaDB connector's ConfigDef against cdcflow's: every property is supported,
    refused with a reason, or in one of the lists above."""
    from cdcflow.capture import config
    from cdcflow.capture.connectors.mysql.properties import MySqlProperties

    names = {e["name"] for e in kafka_connect_worker.rest.plugin_config(MARIADB_CONNECTOR)}
    handled = set(config.known_properties(MySqlProperties)) | {
        name for name in names if config.unsupported_reason(name, MySqlProperties) is not None
    }
    missing = names - handled - FROM_THE_RESOURCE - CONNECT_FRAMEWORK - PATTERNS
    assert not missing, "Debezium's properties cdcflow neither handles nor refuses: " + ", ".join(
        sorted(missing)
    )
