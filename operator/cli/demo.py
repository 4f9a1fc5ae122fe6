"""``cdcflow demo``: the whole capture path on a laptop in one command.

Starts a throwaway PostgreSQL and Kafka (installing what is missing into the cache), creates a
small sample schema, runs a connector in this process, makes inserts, updates, a primary-key
change and a delete, and prints the change events read back from Kafka.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

import click
import orjson
from rich.console import Console
from rich.table import Table

from cdcflow.capture.connector_resource import CdcConnector
from cdcflow.capture.credentials import Login
from cdcflow.capture.engine import Engine, build_engine
from cdcflow.operator.cli.extras import require
from cdcflow.operator.devservices import kafka, postgres

SCHEMA = [
    "CREATE TABLE customers (id serial PRIMARY KEY, name text NOT NULL, email text, "
    "tier text DEFAULT 'basic', updated_at timestamptz DEFAULT now())",
    "CREATE TABLE orders (id serial PRIMARY KEY, customer_id int REFERENCES customers, "
    "amount numeric(10,2) NOT NULL, placed date DEFAULT current_date)",
    "INSERT INTO customers (name, email) VALUES ('Anne Kretchmar', 'annek@noanswer.org'), "
    "('Sally Thomas', 'sally.thomas@acme.com'), ('George Bailey', 'gbailey@foobar.com')",
    "INSERT INTO orders (customer_id, amount) VALUES (1, 19.99), (2, 120.00)",
]
SNAPSHOT_ROWS = 5
CHANGES = [
    (
        "insert a customer",
        "INSERT INTO customers (name, email) VALUES ('Edward Walker', 'ed@walker.com')",
    ),
    ("update an email", "UPDATE customers SET email = 'anne@kretchmar.org' WHERE id = 1"),
    ("place an order", "INSERT INTO orders (customer_id, amount) VALUES (4, 42.50)"),
    ("change a primary key", "UPDATE orders SET id = 100 WHERE id = 2"),
    ("delete a customer", "DELETE FROM customers WHERE id = 3"),
]


def _resource(pg: postgres.PostgresServer, broker: kafka.KafkaBroker) -> CdcConnector:
    return CdcConnector.model_validate(
        {
            "apiVersion": "cdcflow.io/v1alpha1",
            "kind": "CdcConnector",
            "metadata": {"name": "demo"},
            "spec": {
                "source": {
                    "postgresql": {"host": pg.host, "port": pg.port, "database": pg.database}
                },
                "kafka": {"bootstrapServers": broker.bootstrap_servers},
                "offsets": {"store": "memory"},
                "config": {
                    "topic.prefix": "demo",
                    "table.include.list": "public.customers,public.orders",
                    "provide.transaction.metadata": True,
                    "offset.flush.interval.ms": 200,
                },
            },
        }
    )


@contextlib.contextmanager
def _running(engine: Engine) -> Iterator[None]:
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
    "--lake/--no-lake",
    default=True,
    show_default=True,
    help="Also apply the topics to Delta tables with Spark and show them.",
)
def demo(lake: bool) -> None:
    """Run PostgreSQL → cdcflow → Kafka → Delta end to end on throwaway servers."""
    require("psycopg", "confluent_kafka", *(("pyspark", "delta") if lake else ()))
    console = Console()
    with console.status("starting a throwaway PostgreSQL…"):
        pg_context = postgres.running_postgres()
        pg = pg_context.__enter__()
    try:
        console.print(f"[green]✓[/] PostgreSQL on {pg.host}:{pg.port} (wal_level=logical)")
        with console.status("starting a throwaway Kafka broker (first run downloads its jars)…"):
            kafka_context = kafka.running_kafka()
            broker = kafka_context.__enter__()
        try:
            console.print(f"[green]✓[/] Kafka {broker.version} on {broker.bootstrap_servers}")
            _run_demo(console, pg, broker)
            if lake:
                from cdcflow.operator.cli.demo_lake import show_lake

                same = show_lake(console, pg, broker)
                verdict = "[green]✓[/] equal" if same else "[red]✗[/] different"
                console.print(f"{verdict}: every Delta table holds its source table's rows")
        finally:
            kafka_context.__exit__(None, None, None)
    finally:
        pg_context.__exit__(None, None, None)


def _run_demo(console: Console, pg: postgres.PostgresServer, broker: kafka.KafkaBroker) -> None:
    import psycopg

    with psycopg.connect(pg.dsn(), autocommit=True) as conn:
        for statement in SCHEMA:
            conn.execute(statement)
    console.print("[green]✓[/] sample schema: customers (3 rows), orders (2 rows)")
    engine = build_engine(_resource(pg, broker), login=Login(pg.superuser, pg.superuser_password))
    with _running(engine):
        console.print("[green]✓[/] connector 'demo': snapshot done, streaming")
        with psycopg.connect(pg.dsn(), autocommit=True) as conn:
            for what, statement in CHANGES:
                conn.execute(statement)
                console.print(f"  • {what}: [dim]{statement}[/]")
        expected = SNAPSHOT_ROWS + len(CHANGES)
        deadline = time.monotonic() + 30
        while engine.stats.total_events_seen < expected and time.monotonic() < deadline:
            time.sleep(0.1)
    topics = ["demo.public.customers", "demo.public.orders", "demo.transaction"]
    console.print(_events_table(broker, topics))
    console.print(
        f"{engine.stats.total_events_seen} events; offsets committed "
        f"{engine.stats.offsets_committed} times. Run `cdcflow capture -f connector.yaml` "
        "against your own database next (see README)."
    )
