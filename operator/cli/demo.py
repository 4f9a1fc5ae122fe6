"""``cdcflow demo``: the whole capture path on a laptop in one command.

Starts a throwaway source database (PostgreSQL, or MariaDB with ``--source mariadb``) and Kafka,
installing what is missing into the cache, creates a small sample schema, runs a connector in
this process, makes inserts, updates, a primary-key change and a delete, and prints the change
events read back from Kafka.

Each source is described once by a :class:`DemoSource` (its sample tables, the namespace its
topics are named by, how to start it); everything else is shared.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

import click
import orjson
from rich.console import Console
from rich.table import Table

from cdcflow.capture.assembly import build_engine
from cdcflow.capture.connector_resource import CdcConnector
from cdcflow.capture.credentials import Login
from cdcflow.capture.engine import Engine
from cdcflow.operator.cli.extras import require
from cdcflow.operator.devservices import kafka, mariadb, postgres

TOPIC_PREFIX = "demo"
TABLES = ("customers", "orders")
SAMPLE_ROWS = (
    "INSERT INTO customers (name, email) VALUES ('Anne Kretchmar', 'annek@noanswer.org'), "
    "('Sally Thomas', 'sally.thomas@acme.com'), ('George Bailey', 'gbailey@foobar.com')",
    "INSERT INTO orders (customer_id, amount) VALUES (1, 19.99), (2, 120.00)",
)
SNAPSHOT_ROWS = 5
CHANGES = (
    (
        "insert a customer",
        "INSERT INTO customers (name, email) VALUES ('Edward Walker', 'ed@walker.com')",
    ),
    ("update an email", "UPDATE customers SET email = 'anne@kretchmar.org' WHERE id = 1"),
    ("place an order", "INSERT INTO orders (customer_id, amount) VALUES (4, 42.50)"),
    ("change a primary key", "UPDATE orders SET id = 100 WHERE id = 2"),
    ("delete a customer", "DELETE FROM customers WHERE id = 3"),
)
"""The changes made while the connector streams; plain SQL that both sources run as is."""

Row = tuple[Any, ...]


@dataclass(frozen=True)
class Database:
    """A started demo database: how the connector reaches it and how the demo runs SQL on it."""

    banner: str
    source: dict[str, Any]
    """``spec.source`` of the connector resource."""
    login: Login
    execute: Callable[[Sequence[str]], None]
    """Run statements in order, each committed."""
    query: Callable[[str], list[Row]]
    """The rows of one SELECT."""


@dataclass(frozen=True)
class DemoSource:
    """One kind of source the demo runs on: its sample tables and how to start it."""

    label: str
    modules: tuple[str, ...]
    """Optional modules it needs (see :mod:`cdcflow.operator.cli.extras`)."""
    namespace: str
    """Schema (PostgreSQL) or database (MariaDB) of the tables: the topics' middle part."""
    create_tables: tuple[str, ...]
    start: Callable[[], AbstractContextManager[Database]]
    config: dict[str, Any] = field(default_factory=dict)
    """Connector properties this source needs besides the shared ones."""

    @property
    def schema(self) -> tuple[str, ...]:
        """The statements creating and filling the sample tables."""
        return (*self.create_tables, *SAMPLE_ROWS)

    def topic(self, table: str) -> str:
        """The change topic of a sample table, e.g. ``demo.public.customers``."""
        return f"{TOPIC_PREFIX}.{self.namespace}.{table}"

    def resource(self, database: Database, broker: kafka.KafkaBroker) -> CdcConnector:
        """The connector capturing the sample tables into ``broker``."""
        include = ",".join(f"{self.namespace}\\.{table}" for table in TABLES)
        return CdcConnector.model_validate(
            {
                "apiVersion": "cdcflow.io/v1alpha1",
                "kind": "CdcConnector",
                "metadata": {"name": "demo"},
                "spec": {
                    "source": database.source,
                    "kafka": {"bootstrapServers": broker.bootstrap_servers},
                    "offsets": {"store": "memory"},
                    "config": {
                        "topic.prefix": TOPIC_PREFIX,
                        "table.include.list": include,
                        "provide.transaction.metadata": True,
                        "offset.flush.interval.ms": 200,
                        **self.config,
                    },
                },
            }
        )


@contextlib.contextmanager
def _postgres() -> Iterator[Database]:
    """A throwaway PostgreSQL, captured as its superuser."""
    import psycopg

    def execute(statements: Sequence[str]) -> None:
        with psycopg.connect(pg.dsn(), autocommit=True) as conn:
            for statement in statements:
                conn.execute(statement)

    def query(statement: str) -> list[Row]:
        with psycopg.connect(pg.dsn()) as conn:
            return [tuple(row) for row in conn.execute(statement).fetchall()]

    with postgres.running_postgres() as pg:
        yield Database(
            banner=f"PostgreSQL on {pg.host}:{pg.port} (wal_level=logical)",
            source={"postgresql": {"host": pg.host, "port": pg.port, "database": pg.database}},
            login=Login(pg.superuser, pg.superuser_password),
            execute=execute,
            query=query,
        )


@contextlib.contextmanager
def _mariadb() -> Iterator[Database]:
    """A throwaway MariaDB: SQL runs as root, the connector logs in as the ``cdc`` user."""

    def execute(statements: Sequence[str]) -> None:
        with _mariadb_cursor(server) as cursor:
            for statement in statements:
                cursor.execute(statement)

    def query(statement: str) -> list[Row]:
        with _mariadb_cursor(server) as cursor:
            cursor.execute(statement)
            return [tuple(row) for row in cursor.fetchall()]

    with mariadb.running_mariadb() as server:
        yield Database(
            banner=f"MariaDB on {server.host}:{server.port} (binlog_format=ROW)",
            source={"mariadb": {"host": server.host, "port": server.port}},
            login=Login(server.cdc_user, server.cdc_password),
            execute=execute,
            query=query,
        )


@contextlib.contextmanager
def _mariadb_cursor(server: mariadb.MariaDbServer) -> Iterator[Any]:
    """A root cursor on the sample database, autocommitting."""
    import pymysql

    with (
        pymysql.connect(
            host=server.host,
            port=server.port,
            user=server.root_user,
            password=server.root_password,
            database=server.database,
            autocommit=True,
        ) as conn,
        conn.cursor() as cursor,
    ):
        yield cursor


SOURCES = {
    "postgresql": DemoSource(
        label="PostgreSQL",
        modules=("psycopg",),
        namespace="public",
        create_tables=(
            "CREATE TABLE customers (id serial PRIMARY KEY, name text NOT NULL, email text, "
            "tier text DEFAULT 'basic', updated_at timestamptz DEFAULT now())",
            "CREATE TABLE orders (id serial PRIMARY KEY, customer_id int REFERENCES customers, "
            "amount numeric(10,2) NOT NULL, placed date DEFAULT current_date)",
        ),
        start=_postgres,
    ),
    "mariadb": DemoSource(
        label="MariaDB",
        modules=("pymysql", "pymysqlreplication"),
        namespace=mariadb.DATABASE,
        create_tables=(
            "CREATE TABLE customers (id int AUTO_INCREMENT PRIMARY KEY, "
            "name varchar(255) NOT NULL, email varchar(255), tier varchar(16) DEFAULT 'basic', "
            "updated_at timestamp(6) DEFAULT current_timestamp(6))",
            "CREATE TABLE orders (id int AUTO_INCREMENT PRIMARY KEY, customer_id int, "
            "amount decimal(10,2) NOT NULL, placed date DEFAULT curdate(), "
            "FOREIGN KEY (customer_id) REFERENCES customers (id))",
        ),
        start=_mariadb,
        config={"schema.history.internal": "io.debezium.relational.history.MemorySchemaHistory"},
    ),
}
"""The sources ``--source`` chooses from."""


@contextlib.contextmanager
def _running(engine: Engine) -> Iterator[None]:
    """Run ``engine`` in a thread; the block starts once it streams, and stops it at the end."""
    failure: list[BaseException] = []

    def target() -> None:
        try:
            engine.run()
        except BaseException as error:
            failure.append(error)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 60
        while engine.stats.phase != "streaming" and time.monotonic() < deadline:
            if failure:
                raise click.ClickException(str(failure[0]))
            time.sleep(0.1)
        yield
    finally:
        engine.stop.set()
        thread.join(30)


def _events_table(broker: kafka.KafkaBroker, topics: list[str]) -> Table:
    """Every record of ``topics``, one row each: change events, tombstones, transactions."""
    from cdcflow.capture.kafka.consumer import read_to_end

    table = Table(title="Change events in Kafka", show_lines=False)
    for column in ("topic", "op", "key", "before", "after"):
        table.add_column(column, overflow="fold")
    for topic in topics:
        for record in read_to_end(broker.bootstrap_servers, topic):
            key = orjson.loads(record.key)["payload"] if record.key else None
            if record.value is None:
                table.add_row(topic, "tombstone", _short(key), "", "")
                continue
            payload = orjson.loads(record.value)["payload"]
            if "status" in payload:  # transaction metadata
                counts = payload.get("data_collections") or []
                summary = ", ".join(f"{c['data_collection']}: {c['event_count']}" for c in counts)
                table.add_row(topic, payload["status"], payload["id"], "", summary)
                continue
            table.add_row(
                topic,
                payload["op"],
                _short(key),
                _short(payload["before"]),
                _short(payload["after"]),
            )
    return table


def _short(value: Any) -> str:
    return "" if value is None else orjson.dumps(value).decode()


@click.command()
@click.option(
    "--source",
    "source_kind",
    type=click.Choice(list(SOURCES)),
    default="postgresql",
    show_default=True,
    help="The database to capture.",
)
@click.option(
    "--lake/--no-lake",
    default=True,
    show_default=True,
    help="Also apply the topics to Delta tables with Spark and show them.",
)
def demo(source_kind: str, lake: bool) -> None:
    """Run PostgreSQL or MariaDB → cdcflow → Kafka → Delta end to end on throwaway servers."""
    source = SOURCES[source_kind]
    require(*source.modules, "confluent_kafka", *(("pyspark", "delta") if lake else ()))
    console = Console()
    with contextlib.ExitStack() as stack:
        with console.status(f"starting a throwaway {source.label}…"):
            database = stack.enter_context(source.start())
        console.print(f"[green]✓[/] {database.banner}")
        with console.status("starting a throwaway Kafka broker (first run downloads its jars)…"):
            broker = stack.enter_context(kafka.running_kafka())
        console.print(f"[green]✓[/] Kafka {broker.version} on {broker.bootstrap_servers}")
        _run_demo(console, source, database, broker)
        if lake:
            _check_lake(console, source, database, broker)


def _check_lake(
    console: Console, source: DemoSource, database: Database, broker: kafka.KafkaBroker
) -> None:
    """Apply the topics to Delta; fail the command unless every table equals its source."""
    from cdcflow.operator.cli.demo_lake import show_lake

    if not show_lake(console, source, database, broker):
        console.print("[red]✗[/] different: a Delta table does not hold its source table's rows")
        raise click.ClickException("the Delta tables differ from the source tables")
    console.print("[green]✓[/] equal: every Delta table holds its source table's rows")


def _run_demo(
    console: Console, source: DemoSource, database: Database, broker: kafka.KafkaBroker
) -> None:
    """Create the sample schema, capture it and its changes, and print the events."""
    database.execute(source.schema)
    console.print("[green]✓[/] sample schema: customers (3 rows), orders (2 rows)")
    engine = build_engine(source.resource(database, broker), login=database.login)
    with _running(engine):
        console.print("[green]✓[/] connector 'demo': snapshot done, streaming")
        for what, statement in CHANGES:
            database.execute([statement])
            console.print(f"  • {what}: [dim]{statement}[/]")
        expected = SNAPSHOT_ROWS + len(CHANGES)
        deadline = time.monotonic() + 30
        while engine.stats.total_events_seen < expected and time.monotonic() < deadline:
            time.sleep(0.1)
    topics = [*(source.topic(table) for table in TABLES), f"{TOPIC_PREFIX}.transaction"]
    console.print(_events_table(broker, topics))
    console.print(
        f"{engine.stats.total_events_seen} events; offsets committed "
        f"{engine.stats.offsets_committed} times. Run `cdcflow capture -f connector.yaml` "
        "against your own database next (see README)."
    )
