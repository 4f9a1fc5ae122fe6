"""Fixture plugin: one real Kafka Connect worker per test session, with Debezium's connectors.

The worker (standalone mode, JSON with schemas) runs the real Debezium PostgreSQL and MariaDB
connectors as the oracles cdcflow's events are compared with, and real consumers of change
topics: Debezium's JDBC sink and Kafka Connect's ``FileStreamSink`` behind Debezium's
``ExtractNewRecordState``. Connectors are added per test through the REST API and removed at
the end of the test. The harness needs a database server only for the connectors that read
one: the MariaDB connector takes its server as an argument, so PostgreSQL tests never start
MariaDB, and a harness built without a PostgreSQL server (``postgres=None``) never starts
PostgreSQL.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
import pytest

from cdcflow.operator.devservices.kafka import KafkaBroker
from cdcflow.operator.devservices.postgres import PostgresServer
from tests.services import kafka_connect
from tests.services.kafka_connect import ConnectWorker
from tests.services.mariadb import MariaDbServer

#: Debezium's MariaDB connectors get replication server ids from here, one per connector, away
#: from the server's own id and from cdcflow's default range (5400-6400).
MARIADB_SERVER_IDS = (6500, 9999)

#: Kafka Connect's stock transform that drops the primary-key-change headers: the Debezium JDBC
#: sink cannot read ``__debezium.newkey`` whichever connector wrote it (the documented
#: workaround).
DROP_KEY_HEADERS = {
    "transforms": "dropKeyHeaders",
    "transforms.dropKeyHeaders.type": "org.apache.kafka.connect.transforms.DropHeaders",
    "transforms.dropKeyHeaders.headers": "__debezium.newkey,__debezium.oldkey",
}


@pytest.fixture(scope="session")
def kafka_connect_worker(kafka_broker: KafkaBroker) -> Iterator[ConnectWorker]:
    """A running standalone Kafka Connect 4.x worker with the Debezium plugins installed."""
    with kafka_connect.running_connect(kafka_broker.bootstrap_servers) as worker:
        yield worker


@dataclass
class ConnectHarness:
    """Starts real connectors on the session's worker and removes them again."""

    worker: ConnectWorker
    postgres: PostgresServer | None
    workdir: Path
    started: list[str] = field(default_factory=list)
    slots: list[str] = field(default_factory=list)

    def start(self, name: str, config: Mapping[str, str], *, timeout: float = 120) -> None:
        """Create connector ``name`` and wait until it and its task run."""
        self.worker.rest.put_connector(name, config)
        self.started.append(name)
        self.worker.rest.wait_running(name, timeout=timeout)

    def debezium_postgres(self, name: str, *, tables: list[str], **config: str) -> None:
        """The real Debezium PostgreSQL connector on ``tables`` (schema public), prefix ``name``.

        It logs in as the superuser, with a slot and a filtered publication named after it,
        exactly as the cdcflow side of a comparison is configured.
        """
        postgres = self._postgres()
        self.slots.append(name)
        self.start(
            name,
            {
                "connector.class": kafka_connect.POSTGRES_CONNECTOR,
                "tasks.max": "1",
                "database.hostname": postgres.host,
                "database.port": str(postgres.port),
                "database.user": postgres.superuser,
                "database.password": postgres.superuser_password,
                "database.dbname": postgres.database,
                "topic.prefix": name,
                "plugin.name": "pgoutput",
                "slot.name": name,
                "publication.name": name,
                "publication.autocreate.mode": "filtered",
                "table.include.list": ",".join(f"public\\.{table}" for table in tables),
                **config,
            },
        )

    def debezium_mariadb(
        self, name: str, *, server: MariaDbServer, tables: list[str], **config: str
    ) -> None:
        """The real Debezium MariaDB connector on ``tables`` of ``server``'s test database.

        Configured as the cdcflow side of a comparison is: it logs in as the ``cdc`` user, with
        a replication server id of its own, topic prefix ``name``, schema changes on topic
        ``name`` and its schema history in a file of the harness's folder.
        """
        self.start(
            name,
            {
                "connector.class": kafka_connect.MARIADB_CONNECTOR,
                "tasks.max": "1",
                "database.hostname": server.host,
                "database.port": str(server.port),
                "database.user": server.cdc_user,
                "database.password": server.cdc_password,
                "database.server.id": str(random.randint(*MARIADB_SERVER_IDS)),
                "topic.prefix": name,
                "table.include.list": ",".join(f"{server.database}\\.{table}" for table in tables),
                "schema.history.internal": "io.debezium.storage.file.history.FileSchemaHistory",
                "schema.history.internal.file.filename": str(self.workdir / f"{name}-history.dat"),
                "include.schema.changes": "true",
                **config,
            },
        )

    def jdbc_sink(self, name: str, *, topics_regex: str, database: str) -> None:
        """Debezium's JDBC sink applying change topics to ``database`` on the test server."""
        postgres = self._postgres()
        self.start(
            name,
            {
                "connector.class": kafka_connect.JDBC_SINK_CONNECTOR,
                "tasks.max": "1",
                "connection.url": f"jdbc:postgresql://{postgres.host}:{postgres.port}/{database}",
                "connection.username": postgres.superuser,
                "connection.password": postgres.superuser_password,
                "topics.regex": topics_regex,
                "insert.mode": "upsert",
                "delete.enabled": "true",
                "truncate.enabled": "true",
                "primary.key.mode": "record_key",
                "schema.evolution": "basic",
                "collection.name.format": "${source.table}",
                # See kafka_connect.PLUGINS: keeps Hibernate off the worker's Jackson modules.
                "hibernate.type.json_format_mapper": "jsonb",
                **DROP_KEY_HEADERS,
            },
        )

    def unwrapped_file_sink(self, name: str, *, topics_regex: str) -> Path:
        """``FileStreamSink`` behind ``ExtractNewRecordState``: one line per record it received.

        Every record passes Kafka Connect's ``JsonConverter`` (schemas on) and Debezium's
        transform; a record either rejects fails the task, which :meth:`state` reports.
        """
        path = self.workdir / f"{name}.txt"
        self.start(
            name,
            {
                "connector.class": kafka_connect.FILE_SINK_CONNECTOR,
                "tasks.max": "1",
                "file": str(path),
                "topics.regex": topics_regex,
                "transforms": "unwrap",
                "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState",
                "transforms.unwrap.delete.tombstone.handling.mode": "rewrite",
                "transforms.unwrap.add.fields": "op,table",
            },
        )
        return path

    def raise_if_failed(self, name: str) -> None:
        """Raise with the task's trace, and the worker's errors, if ``name`` or its task failed."""
        try:
            kafka_connect.failed_trace(self.worker.rest.status(name), name=name)
        except kafka_connect.ConnectError as error:
            errors = [
                line
                for line in self.worker.log.read_text(errors="replace").splitlines()
                if " ERROR " in line or " WARN " in line
            ]
            raise kafka_connect.ConnectError(
                f"{error}\nWorker errors and warnings:\n" + "\n".join(errors[-20:])
            ) from None

    def _postgres(self) -> PostgresServer:
        if self.postgres is None:
            raise AssertionError("this harness was built without a PostgreSQL server")
        return self.postgres

    def cleanup(self) -> None:
        for name in self.started:
            self.worker.rest.delete_connector(name)
        if not self.slots:
            return
        with psycopg.connect(self._postgres().dsn(), autocommit=True) as conn:
            for slot in self.slots:
                _drop_slot_when_released(conn, slot)
                conn.execute(f"DROP PUBLICATION IF EXISTS {slot}")  # type: ignore[call-overload]


def _drop_slot_when_released(conn: psycopg.Connection[tuple[object, ...]], slot: str) -> None:
    """Drop a slot once its walsender let go of it (a deleted task stops asynchronously)."""
    for _ in range(100):
        with contextlib.suppress(psycopg.errors.ObjectInUse):
            conn.execute(
                "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
                "WHERE slot_name = %s",
                (slot,),
            )
            return
        conn.execute("SELECT pg_sleep(0.1)")


@pytest.fixture
def connect(
    kafka_connect_worker: ConnectWorker, postgres_server: PostgresServer, tmp_path: Path
) -> Iterator[ConnectHarness]:
    """A harness for real connectors that removes what it started when the test ends."""
    harness = ConnectHarness(kafka_connect_worker, postgres_server, tmp_path)
    yield harness
    harness.cleanup()
