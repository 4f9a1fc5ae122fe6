"""Fixture plugin: the connector conformance suite's drivers, one per connector kind.

A driver does, in its database's dialect, the few things the conformance tests need — make a
table ``(id int primary key, v text)``, write rows, change a key, truncate, start a connector
on some tables — and checks what only its connector puts in an event (the ``source`` block's
own fields, transaction ids). The tests in ``tests/integration/test_connector_conformance.py``
then assert the behaviours every Debezium connector shares, once, for every driver. The MySQL
and Db2 connectors join by adding a driver to :data:`DRIVERS`.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import time
from collections.abc import Callable
from typing import Any, Protocol

import psycopg
import pytest

from cdcflow.capture.connector_resource import CdcConnector, OffsetsSpec
from cdcflow.capture.credentials import Login
from tests.plugins.fix_capture import CaptureHarness, Event, RunningEngine
from tests.plugins.fix_db2 import Db2Server
from tests.services import mariadb
from tests.services.db2_emulation import Db2Emulation
from tests.services.mariadb import MariaDbServer

Row = tuple[int, str | None]


class ConnectorDriver(Protocol):
    """What a conformance test asks of one connector kind."""

    kind: str
    full_before_images: bool
    """Whether deletes (and key-preserving updates) carry the whole old row."""
    modes_streaming_from_now: tuple[str, ...]
    """The ``snapshot.mode`` values that stream only what happens after the start."""

    @property
    def name(self) -> str:
        """The connector's topic prefix."""
        ...

    def table(self, stem: str) -> str: ...

    def topic(self, table: str) -> str:
        """The topic suffix of ``table`` after the prefix, e.g. ``public.orders``."""
        ...

    def create_table(self, table: str, rows: tuple[Row, ...] = ()) -> None: ...

    def insert(self, table: str, *rows: Row) -> str: ...

    def signal_table(self, stem: str) -> str:
        """Create a signal table the connector may write watermarks to; its
        ``signal.data.collection`` name."""
        ...

    def crash_database(self) -> None:
        """Crash the database server (SIGKILL) and return once it recovered and answers."""
        ...

    def lose_position(self) -> None:
        """Make the server drop the log the (stopped) connector still needs, as servers do:
        PostgreSQL's slot dropped, MariaDB's binlog purged, ASN's change tables emptied by a
        cold start."""
        ...

    def update(self, table: str, row_id: int, value: str) -> str: ...

    def delete(self, table: str, row_id: int) -> str: ...

    def change_key(self, table: str, old: int, new: int) -> str: ...

    def truncate(self, *tables: str) -> str: ...

    def run(self, *statements: str) -> None:
        """Each statement committed on its own."""
        ...

    def run_atomically(self, *statements: str) -> None:
        """All statements in one transaction."""
        ...

    def add_column(self, table: str, column: str) -> None:
        """Add a nullable integer column to a captured table, as its database requires."""
        ...

    def rows(self, table: str) -> dict[int, str | None]:
        """The table's rows now, ``id -> v``."""
        ...

    def comment_column(self, table: str, column: str, text: str) -> None:
        """Give a column of a ``(id, v)`` table a comment."""
        ...

    def start(self, tables: list[str], **config: Any) -> RunningEngine: ...

    def resource(self, tables: list[str], **config: Any) -> CdcConnector:
        """The CdcConnector the driver starts, for a ``cdcflow capture`` process."""
        ...

    @property
    def login(self) -> Login: ...

    def wait_for_events(
        self, table: str, predicate: Callable[[list[Event]], bool]
    ) -> list[Event]: ...

    def events_of(self, topic_suffix: str, predicate: Callable[[list[Event]], bool]) -> list[Event]:
        """Events of a topic named by its suffix (``transaction``, …)."""
        ...

    def check_source(self, source: dict[str, Any], table: str) -> None:
        """Assert the connector's own ``source`` fields of an event of ``table``."""
        ...

    def check_transaction_ids(self, begin: dict[str, Any], events: list[Event]) -> None:
        """Assert how the connector ties events to their BEGIN marker's id."""
        ...


#: Debezium's documented signal table
SIGNAL_COLUMNS = "(id varchar(64) PRIMARY KEY, type varchar(32) NOT NULL, data varchar(2048))"


class StandardStatements:
    """The row statements both SQL dialects write alike."""

    def insert(self, table: str, *rows: Row) -> str:
        values = ", ".join(f"({row_id}, {_literal(value)})" for row_id, value in rows)
        return f"INSERT INTO {table} (id, v) VALUES {values}"

    def update(self, table: str, row_id: int, value: str) -> str:
        return f"UPDATE {table} SET v = {_literal(value)} WHERE id = {row_id}"

    def delete(self, table: str, row_id: int) -> str:
        return f"DELETE FROM {table} WHERE id = {row_id}"

    def change_key(self, table: str, old: int, new: int) -> str:
        return f"UPDATE {table} SET id = {new} WHERE id = {old}"


class PostgresDriver(StandardStatements):
    """The PostgreSQL connector through the capture harness (real PostgreSQL and Kafka)."""

    kind = "postgresql"
    full_before_images = False  # REPLICA IDENTITY DEFAULT: old rows carry the key only
    modes_streaming_from_now: tuple[str, ...] = ("never", "no_data")

    def __init__(self, capture: CaptureHarness) -> None:
        self.capture = capture

    @property
    def name(self) -> str:
        return self.capture.name

    def table(self, stem: str) -> str:
        return self.capture.table(stem)

    def topic(self, table: str) -> str:
        return f"public.{table}"

    def create_table(self, table: str, rows: tuple[Row, ...] = ()) -> None:
        self.capture.sql(f"CREATE TABLE {table} (id int PRIMARY KEY, v text)")
        if rows:
            self.capture.sql(self.insert(table, *rows))

    def truncate(self, *tables: str) -> str:
        return f"TRUNCATE {', '.join(tables)}"

    def signal_table(self, stem: str) -> str:
        table = self.table(stem)
        self.capture.sql(f"CREATE TABLE {table} {SIGNAL_COLUMNS}")
        return f"public.{table}"

    def crash_database(self) -> None:
        crash_postgres(self.capture.postgres.dsn())

    def lose_position(self) -> None:
        slot = self.capture.name
        deadline = time.monotonic() + 10
        while self.capture.query(
            f"SELECT 1 FROM pg_replication_slots WHERE slot_name = '{slot}' AND active"
        ):
            assert time.monotonic() < deadline, "the stopped connector's walsender kept the slot"
            time.sleep(0.05)
        self.capture.sql(f"SELECT pg_drop_replication_slot('{slot}')")

    def run(self, *statements: str) -> None:
        self.capture.sql(*statements)

    def run_atomically(self, *statements: str) -> None:
        self.capture.sql("BEGIN; " + "; ".join(statements) + "; COMMIT;")

    def add_column(self, table: str, column: str) -> None:
        self.capture.sql(f"ALTER TABLE {table} ADD COLUMN {column} int")

    def comment_column(self, table: str, column: str, text: str) -> None:
        self.capture.sql(f"COMMENT ON COLUMN {table}.{column} IS {_literal(text)}")

    def rows(self, table: str) -> dict[int, str | None]:
        return {int(i): v for i, v in self.capture.query(f"SELECT id, v FROM {table}")}

    def start(self, tables: list[str], **config: Any) -> RunningEngine:
        return self.capture.start(self.resource(tables, **config))

    def resource(self, tables: list[str], **config: Any) -> CdcConnector:
        return self.capture.resource(tables, **config)

    @property
    def login(self) -> Login:
        postgres = self.capture.postgres
        return Login(postgres.superuser, postgres.superuser_password)

    def wait_for_events(self, table: str, predicate: Callable[[list[Event]], bool]) -> list[Event]:
        return self.capture.wait_for_events(self.topic(table), predicate)

    def events_of(self, topic_suffix: str, predicate: Callable[[list[Event]], bool]) -> list[Event]:
        return self.capture.wait_for_events(topic_suffix, predicate)

    def check_source(self, source: dict[str, Any], table: str) -> None:
        assert source["connector"] == "postgresql"
        assert (source["db"], source["schema"], source["table"]) == ("inventory", "public", table)
        assert isinstance(source["lsn"], int) and isinstance(source["txId"], int)

    def check_transaction_ids(self, begin: dict[str, Any], events: list[Event]) -> None:
        # Debezium's PostgreSQL ids are "<xid>:<LSN of the message>": one xid, own LSNs.
        xid = begin["id"].split(":")[0]
        for event in events:
            assert event.payload["transaction"]["id"] == f"{xid}:{event.payload['source']['lsn']}"


class MariaDbDriver(StandardStatements):
    """The MariaDB connector (``spec.source.mariadb``) on the session's real MariaDB 10.11."""

    kind = "mariadb"
    full_before_images = True  # binlog_row_image=FULL: old rows carry every column
    # `never` reads the binlog from its start
    modes_streaming_from_now: tuple[str, ...] = ("no_data",)

    def __init__(self, capture: CaptureHarness, server: MariaDbServer) -> None:
        self.capture = capture
        self.server = server

    @property
    def name(self) -> str:
        return self.capture.name

    def table(self, stem: str) -> str:
        return self.capture.table(stem)

    def topic(self, table: str) -> str:
        return f"{self.server.database}.{table}"

    def create_table(self, table: str, rows: tuple[Row, ...] = ()) -> None:
        self.run(f"CREATE TABLE {table} (id int PRIMARY KEY, v text)")
        if rows:
            self.run(self.insert(table, *rows))

    def truncate(self, *tables: str) -> str:
        return "; ".join(f"TRUNCATE TABLE {table}" for table in tables)

    def signal_table(self, stem: str) -> str:
        table = self.table(stem)
        self.run(
            f"CREATE TABLE {table} {SIGNAL_COLUMNS}",
            # what docs/mysql.md asks for: watermarks are rows the connector writes
            f"GRANT INSERT, DELETE ON {table} TO '{self.server.cdc_user}'@'%'",
        )
        return f"{self.server.database}.{table}"

    def crash_database(self) -> None:
        self.server.restart(crash=True)

    def lose_position(self) -> None:
        mariadb.run_sql(self.server, "FLUSH BINARY LOGS")
        newest = str(mariadb.query(self.server, "SHOW BINARY LOGS")[-1][0])
        deadline = time.monotonic() + 20
        # the server keeps (with a warning) a file a binlog dump thread still reads: the
        # stopped connector's, until the server notices that its client is gone
        while len(mariadb.query(self.server, "SHOW BINARY LOGS")) > 1:
            assert time.monotonic() < deadline, "the server kept binlog a reader holds"
            mariadb.run_sql(self.server, f"PURGE BINARY LOGS TO '{newest}'")
            time.sleep(0.2)

    def run(self, *statements: str) -> None:
        for statement in statements:
            for part in filter(None, (p.strip() for p in statement.split(";"))):
                mariadb.run_sql(self.server, part)

    def run_atomically(self, *statements: str) -> None:
        mariadb.run_sql(self.server, "START TRANSACTION", *statements, "COMMIT")

    def add_column(self, table: str, column: str) -> None:
        self.run(f"ALTER TABLE {table} ADD COLUMN {column} int")

    def comment_column(self, table: str, column: str, text: str) -> None:
        self.run(f"ALTER TABLE {table} MODIFY {column} text COMMENT {_literal(text)}")

    def rows(self, table: str) -> dict[int, str | None]:
        found = mariadb.query(self.server, f"SELECT id, v FROM {self.server.database}.{table}")
        return {int(str(i)): None if v is None else str(v) for i, v in found}

    def start(self, tables: list[str], **config: Any) -> RunningEngine:
        return self.capture.start(self.resource(tables, **config), login=self.login)

    @property
    def login(self) -> Login:
        return Login(self.server.cdc_user, self.server.cdc_password)

    def resource(self, tables: list[str], **config: Any) -> CdcConnector:
        """The CdcConnector of a ``mariadb`` source on ``tables`` with the test defaults."""
        database = self.server.database
        return _historized_resource(
            self.capture,
            {"mariadb": {"host": self.server.host, "port": self.server.port}},
            include=[f"{database}\\.{table}" for table in tables],
            config=config,
        )

    def wait_for_events(self, table: str, predicate: Callable[[list[Event]], bool]) -> list[Event]:
        return self.capture.wait_for_events(self.topic(table), predicate)

    def events_of(self, topic_suffix: str, predicate: Callable[[list[Event]], bool]) -> list[Event]:
        return self.capture.wait_for_events(topic_suffix, predicate)

    def check_source(self, source: dict[str, Any], table: str) -> None:
        assert source["connector"] == "mariadb"
        assert (source["db"], source["table"]) == (self.server.database, table)
        assert source["file"].startswith("mysql-bin") or source["file"]
        assert isinstance(source["pos"], int) and isinstance(source["server_id"], int)

    def check_transaction_ids(self, begin: dict[str, Any], events: list[Event]) -> None:
        # MariaDB transactions are named by their GTID, domain-server-sequence.
        assert re.fullmatch(r"\d+-\d+-\d+", begin["id"])
        for event in events:
            assert event.payload["transaction"]["id"] == begin["id"]
            assert event.payload["source"]["gtid"] == begin["id"]


class Db2Driver:
    """The Db2 connector (``spec.source.db2``) on the test suite's emulation of Db2's ASN
    capture (tests/services/db2_emulation: no Db2 server can run here), or on a real Db2
    when ``CDCFLOW_DB2_DSN`` is set. Identifiers are quoted, so the same statements run on
    both; tables live in ``DB2INST1`` and are put in capture mode with ``ASNCDC.ADDTABLE``."""

    kind = "db2"
    full_before_images = True  # CD tables hold whole rows
    modes_streaming_from_now: tuple[str, ...] = ("no_data",)
    schema = "DB2INST1"

    def __init__(self, capture: CaptureHarness, db2: Db2Server) -> None:
        self.capture = capture
        self.db2 = db2

    @property
    def name(self) -> str:
        return self.capture.name

    def table(self, stem: str) -> str:
        # Db2's case: Debezium's ADDTABLE script joins names unquoted, so Db2 folds them to
        # upper case and a lower-case table could not enter capture mode on a real server
        return self.capture.table(stem).upper()

    def topic(self, table: str) -> str:
        return f"{self.schema}.{table}"

    def _qualified(self, table: str) -> str:
        return f'"{self.schema}"."{table}"'

    def create_table(self, table: str, rows: tuple[Row, ...] = ()) -> None:
        self.db2.ensure_schema(self.schema)
        self.db2.execute(
            f'CREATE TABLE {self._qualified(table)} ("id" INTEGER NOT NULL PRIMARY KEY, '
            '"v" VARCHAR(200))',
        )
        if rows:
            self.db2.execute(self.insert(table, *rows))
        self.db2.add_table(self.schema, table)

    def insert(self, table: str, *rows: Row) -> str:
        values = ", ".join(f"({row_id}, {_literal(value)})" for row_id, value in rows)
        return f'INSERT INTO {self._qualified(table)} ("id", "v") VALUES {values}'

    def update(self, table: str, row_id: int, value: str) -> str:
        return f'UPDATE {self._qualified(table)} SET "v" = {_literal(value)} WHERE "id" = {row_id}'

    def delete(self, table: str, row_id: int) -> str:
        return f'DELETE FROM {self._qualified(table)} WHERE "id" = {row_id}'

    def change_key(self, table: str, old: int, new: int) -> str:
        return f'UPDATE {self._qualified(table)} SET "id" = {new} WHERE "id" = {old}'

    def truncate(self, *tables: str) -> str:
        raise AssertionError("ASN capture does not capture TRUNCATE; Db2 emits no t events")

    def signal_table(self, stem: str) -> str:
        table = self.table(stem)
        self.db2.ensure_schema(self.schema)
        self.db2.execute(
            f'CREATE TABLE {self._qualified(table)} ("id" VARCHAR(64) NOT NULL PRIMARY KEY, '
            '"type" VARCHAR(32) NOT NULL, "data" VARCHAR(2048))'
        )
        self.db2.add_table(self.schema, table)  # watermarks reach the connector through ASN
        return f"{self.db2.database}.{self.schema}.{table}"

    def crash_database(self) -> None:
        # the emulation's tables live in PostgreSQL: crash that (its agent reconnects, as
        # ASN capture is restarted after a Db2 crash); a real Db2 is not ours to crash
        if isinstance(self.db2, Db2Emulation):
            crash_postgres(self.db2.dsn())

    def lose_position(self) -> None:
        if not isinstance(self.db2, Db2Emulation):
            pytest.skip("a real Db2's capture agent is not ours to cold-start")
        self.db2.cold_start()  # the CD tables emptied, the log since the last capture skipped
        self.db2.wait_captured()

    def run(self, *statements: str) -> None:
        for statement in statements:
            self.db2.execute(statement)

    def run_atomically(self, *statements: str) -> None:
        self.db2.execute_atomically(*statements)

    def add_column(self, table: str, column: str) -> None:
        # Db2's online procedure (docs/db2.md): INACTIVE, reinit, the column into the source
        # table and its CD table, ACTIVE, reinit. The agent sees nothing of it before then.
        self.db2.mark(self.schema, table, "I")
        self.db2.reinit_and_wait()
        self.db2.execute(
            f'ALTER TABLE {self._qualified(table)} ADD COLUMN "{column}" INTEGER',
            f'ALTER TABLE "ASNCDC"."CDC_{self.schema}_{table}" ADD COLUMN "{column}" INTEGER',
        )
        self.db2.mark(self.schema, table, "A")
        self.db2.reinit_and_wait()

    def comment_column(self, table: str, column: str, text: str) -> None:
        self.db2.execute(
            f'COMMENT ON COLUMN {self._qualified(table)}."{column}" IS {_literal(text)}'
        )

    def rows(self, table: str) -> dict[int, str | None]:
        found = self.db2.query(f'SELECT "id", "v" FROM {self._qualified(table)}')
        return {int(i): None if v is None else str(v) for i, v in found}

    def start(self, tables: list[str], **config: Any) -> RunningEngine:
        return self.capture.start(self.resource(tables, **config), login=self.login)

    @property
    def login(self) -> Login:
        return self.db2.login

    def resource(self, tables: list[str], **config: Any) -> CdcConnector:
        """The CdcConnector of a ``db2`` source on ``tables`` with the test defaults."""
        return _historized_resource(
            self.capture,
            self.db2.source,
            include=[f"{self.schema}\\.{table}" for table in tables],
            config={**self.db2.driver_properties, **config},
        )

    def wait_for_events(self, table: str, predicate: Callable[[list[Event]], bool]) -> list[Event]:
        return self.capture.wait_for_events(self.topic(table), predicate)

    def events_of(self, topic_suffix: str, predicate: Callable[[list[Event]], bool]) -> list[Event]:
        return self.capture.wait_for_events(topic_suffix, predicate)

    def check_source(self, source: dict[str, Any], table: str) -> None:
        assert source["connector"] == "db2"
        assert (source["db"], source["schema"], source["table"]) == (
            self.db2.database,
            self.schema,
            table,
        )
        lsn = r"[0-9a-f]{8}:[0-9a-f]{8}:[0-9a-f]{16}"
        assert re.fullmatch(lsn, source["commit_lsn"])
        assert source["change_lsn"] is None or re.fullmatch(lsn, source["change_lsn"])

    def check_transaction_ids(self, begin: dict[str, Any], events: list[Event]) -> None:
        # A Db2 transaction is named by its commit LSN.
        for event in events:
            assert event.payload["transaction"]["id"] == begin["id"]
            assert event.payload["source"]["commit_lsn"] == begin["id"]


def crash_postgres(dsn: str) -> None:
    """SIGKILL one PostgreSQL server process: the postmaster then ends every session and
    recovers from the WAL, as after a crash; return once the server answers again."""
    with contextlib.suppress(psycopg.Error), psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute("SELECT pg_backend_pid()").fetchone()
        assert row is not None
        os.kill(int(row[0]), signal.SIGKILL)
    deadline = time.monotonic() + 60
    while True:
        try:
            with psycopg.connect(dsn, connect_timeout=2) as conn:
                conn.execute("SELECT 1")
                return
        except psycopg.OperationalError:
            assert time.monotonic() < deadline, "PostgreSQL did not recover from the crash"
            time.sleep(0.2)


def exactly_once(driver: ConnectorDriver, tables: list[str], **config: Any) -> CdcConnector:
    """The driver's connector with ``exactly.once.support=required``: offsets in Kafka, and a
    historized connector's schema history too (what the property needs)."""
    config["exactly.once.support"] = "required"
    if driver.kind != "postgresql":
        config |= {
            "schema.history.internal": "io.debezium.storage.kafka.history.KafkaSchemaHistory",
            "schema.history.internal.kafka.topic": f"{driver.name}-history",
        }
    resource = driver.resource(tables, **config)
    spec = resource.spec.model_copy(update={"offsets": OffsetsSpec(store="kafka")})
    return resource.model_copy(update={"spec": spec})


def _historized_resource(
    capture: CaptureHarness,
    source: dict[str, Any],
    *,
    include: list[str],
    config: dict[str, Any],
) -> CdcConnector:
    """A CdcConnector of a connector with schema history, with the test defaults: the history
    in a file kept across the restarts of one test, as the offsets file is."""
    properties = {
        "topic.prefix": capture.name,
        "table.include.list": ",".join(include),
        "schema.history.internal": "io.debezium.storage.file.history.FileSchemaHistory",
        "schema.history.internal.file.filename": str(capture.workdir / "history.jsonl"),
        "offset.flush.interval.ms": 200,
        "poll.interval.ms": 100,
        **config,
    }
    return CdcConnector.model_validate(
        {
            "apiVersion": "cdcflow.io/v1alpha1",
            "kind": "CdcConnector",
            "metadata": {"name": capture.name.replace("_", "-")},
            "spec": {
                "source": source,
                "kafka": {"bootstrapServers": capture.kafka.bootstrap_servers},
                "config": properties,
            },
        }
    )


def _literal(value: str | None) -> str:
    return "NULL" if value is None else "'" + value.replace("'", "''") + "'"


DRIVERS = ("postgresql", "mariadb", "db2")
"""The connector kinds the conformance suite runs against."""
TRUNCATING_DRIVERS = ("postgresql", "mariadb")
"""The kinds whose log carries TRUNCATE (Db2's ASN capture does not capture it)."""
READ_ONLY_DRIVERS = ("postgresql", "mariadb")
"""The kinds with ``read.only`` snapshots (Db2's chunk reads cannot be placed among ASN's
change rows without a watermark row: docs/db2.md)."""


def _driver(request: pytest.FixtureRequest, kind: str) -> ConnectorDriver:
    capture = request.getfixturevalue("capture")
    if kind == "postgresql":
        return PostgresDriver(capture)
    if kind == "mariadb":
        return MariaDbDriver(capture, request.getfixturevalue("mariadb_server"))
    if kind == "db2":
        return Db2Driver(capture, request.getfixturevalue("db2_server"))
    raise AssertionError(f"no conformance driver for {kind}")


@pytest.fixture(params=DRIVERS)
def driver(request: pytest.FixtureRequest) -> ConnectorDriver:
    """A driver for each connector kind (its services start once per session)."""
    return _driver(request, request.param)


@pytest.fixture(params=TRUNCATING_DRIVERS)
def truncating_driver(request: pytest.FixtureRequest) -> ConnectorDriver:
    """A driver for each connector kind that captures TRUNCATE."""
    return _driver(request, request.param)


@pytest.fixture(params=READ_ONLY_DRIVERS)
def read_only_driver(request: pytest.FixtureRequest) -> ConnectorDriver:
    """A driver for each connector kind whose snapshots can run without writing."""
    return _driver(request, request.param)


@pytest.fixture
def maria(capture: CaptureHarness, mariadb_server: MariaDbServer) -> MariaDbDriver:
    """The MariaDB driver alone, for the binlog connector's own tests."""
    return MariaDbDriver(capture, mariadb_server)


@pytest.fixture
def db2(capture: CaptureHarness, db2_server: Db2Server) -> Db2Driver:
    """The Db2 driver alone, for the Db2 connector's own tests (on a real Db2 when
    ``CDCFLOW_DB2_DSN`` names one)."""
    return Db2Driver(capture, db2_server)


@pytest.fixture
def emulated_db2(capture: CaptureHarness, db2_emulation: Db2Emulation) -> Db2Driver:
    """The Db2 driver on the emulation, for tests that reach into it (its agent, its
    PostgreSQL roles and domains)."""
    return Db2Driver(capture, db2_emulation)
