"""One huge transaction through the capture: its memory, its time, and the server's spill.

PostgreSQL: ``--rows`` rows (5,000,000 by default) inserted in one transaction while the
capture streams, with ``stream.in.progress.transactions`` on (pgoutput protocol 2: the server
streams the transaction as it runs, the capture keeps it on its disk until the commit) and,
with ``--compare``, off (the server spills it to its own disk and sends it at commit). Printed:
the capture's peak RSS, the time from the commit until Kafka acknowledged the last event, and
the slot's ``pg_stat_replication_slots`` spill and stream counters.

MariaDB (``--mariadb-rows``, 1,000,000 by default) and Db2 on the emulation (``--db2-rows``,
200,000): the same transaction through the binlog and the change-table connectors, at that
size and at a fifth of it, so the peak RSS shows whether memory grows with the transaction
(0 skips a source).

    .venv/bin/python -m bench.huge_transaction [--rows 5000000] [--compare] [--mariadb-rows N]
        [--db2-rows N]

Not part of ``make test`` (tests/integration/test_postgres_releases.py checks the streaming,
the savepoints, the aborts and the absent spill on 20,000 rows on PostgreSQL 16 and 17).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

import psycopg

from bench import db2_throughput as db2_bench
from bench.common import RunningCapture, capture_running, postgres_connector, print_line
from bench.mysql_throughput import connect_root
from cdcflow.operator.devservices import kafka, mariadb, postgres
from tests.services.db2_emulation import install

TABLE = "huge"


def _acknowledged(running: RunningCapture, *, events: int) -> bool:
    status = running.status()
    streaming = status.get("streaming") or {}
    seen = int(streaming.get("totalEventsSeen", 0)) if isinstance(streaming, dict) else 0
    committed = status.get("offsetsCommitted")
    return seen >= events and isinstance(committed, int) and committed > 0 and _settled(status)


def _settled(status: dict[str, object]) -> bool:
    """Kafka acknowledged everything read: the connector caught up and committed."""
    streaming = status.get("streaming") or {}
    return isinstance(streaming, dict) and int(streaming.get("millisecondsBehindSource", 1)) == 0


def _postgres_run(
    server: postgres.PostgresServer,
    broker: kafka.KafkaBroker,
    workdir: Path,
    *,
    name: str,
    rows: int,
    streaming: bool,
) -> dict[str, Any]:
    resource = postgres_connector(
        server,
        broker,
        name=name,
        config={
            "topic.prefix": name,
            "slot.name": name,
            "publication.name": name,
            "publication.autocreate.mode": "filtered",
            "table.include.list": f"public.{TABLE}",
            "snapshot.mode": "no_data",
            "stream.in.progress.transactions": streaming,
            "value.converter.schemas.enable": False,
        },
    )
    login = (server.superuser, server.superuser_password)
    with (
        capture_running(resource, workdir=workdir, login=login) as running,
        psycopg.connect(server.dsn(), autocommit=True) as conn,
    ):
        conn.execute(f"TRUNCATE {TABLE}")
        started = time.monotonic()
        conn.execute(
            f"INSERT INTO {TABLE} SELECT g, md5(g::text) FROM generate_series(1, %s) g", (rows,)
        )
        committed = time.monotonic()
        while not _acknowledged(running, events=rows):
            time.sleep(0.2)
        done = time.monotonic()
        counters = conn.execute(
            "SELECT spill_txns, spill_bytes, stream_txns, stream_bytes "
            "FROM pg_stat_replication_slots WHERE slot_name = %s",
            (name,),
        ).fetchone()
        rss = running.peak_rss_mb()
    assert counters is not None
    return {
        "rss": rss,
        "transaction_s": committed - started,
        "after_commit_s": done - committed,
        "spill": (counters[0], counters[1]),
        "stream": (counters[2], counters[3]),
    }


def _postgres(rows: int, *, compare: bool) -> None:
    with (
        postgres.running_postgres() as server,
        kafka.running_kafka() as broker,
        tempfile.TemporaryDirectory() as tmp,
    ):
        with psycopg.connect(server.dsn(), autocommit=True) as conn:
            conn.execute(f"CREATE TABLE {TABLE} (id bigint PRIMARY KEY, pad text NOT NULL)")
        modes = [True, False] if compare else [True]
        for streaming in modes:
            name = "streamed" if streaming else "spilled"
            workdir = Path(tmp) / name
            workdir.mkdir()
            result = _postgres_run(
                server, broker, workdir, name=name, rows=rows, streaming=streaming
            )
            label = f"PostgreSQL, {rows:,} rows, {name}"
            print_line(label, f"peak RSS {result['rss']:,.0f} MB (goal < 300 MB)")
            print_line(
                "  time",
                f"transaction {result['transaction_s']:,.1f} s, then "
                f"{result['after_commit_s']:,.1f} s until Kafka acknowledged the last event",
            )
            spill_txns, spill_bytes = result["spill"]
            stream_txns, stream_bytes = result["stream"]
            print_line(
                "  server",
                f"spilled {spill_txns} transaction(s), {spill_bytes / 2**20:,.0f} MiB; "
                f"streamed {stream_txns}, {stream_bytes / 2**20:,.0f} MiB",
            )


def _mariadb_run(
    server: mariadb.MariaDbServer, broker: kafka.KafkaBroker, workdir: Path, *, rows: int
) -> tuple[float, float]:
    name = f"maria{rows}"
    resource = {
        "apiVersion": "cdcflow.io/v1alpha1",
        "kind": "CdcConnector",
        "metadata": {"name": name},
        "spec": {
            "source": {"mariadb": {"host": server.host, "port": server.port}},
            "kafka": {"bootstrapServers": broker.bootstrap_servers},
            "config": {
                "topic.prefix": name,
                "table.include.list": f"{server.database}\\.{TABLE}",
                "snapshot.mode": "no_data",
                "schema.history.internal": "io.debezium.relational.history.MemorySchemaHistory",
                "value.converter.schemas.enable": False,
            },
        },
    }
    login = (server.cdc_user, server.cdc_password)
    connection = connect_root(server)
    connection.autocommit(False)
    with capture_running(resource, workdir=workdir, login=login) as running, connection:
        with connection.cursor() as cursor:
            cursor.execute(f"TRUNCATE {TABLE}")
            for start in range(1, rows + 1, 50_000):
                stop = min(start + 50_000, rows + 1)
                values = ",".join(f"({n}, md5({n}))" for n in range(start, stop))
                cursor.execute(f"INSERT INTO {TABLE} VALUES {values}")
        connection.commit()
        committed = time.monotonic()
        while not _acknowledged(running, events=rows):
            time.sleep(0.2)
        return running.peak_rss_mb(), time.monotonic() - committed


def _mariadb(rows: int) -> None:
    with (
        mariadb.running_mariadb() as server,
        kafka.running_kafka() as broker,
        tempfile.TemporaryDirectory() as tmp,
    ):
        admin = connect_root(server)
        with admin, admin.cursor() as cursor:
            cursor.execute(f"CREATE TABLE {TABLE} (id bigint PRIMARY KEY, pad char(32) NOT NULL)")
        for size in (rows // 5, rows):
            workdir = Path(tmp) / str(size)
            workdir.mkdir()
            rss, after_commit = _mariadb_run(server, broker, workdir, rows=size)
            print_line(
                f"MariaDB, {size:,} rows",
                f"peak RSS {rss:,.0f} MB; {after_commit:,.1f} s from the commit until Kafka "
                "acknowledged the last event",
            )


def _db2(rows: int) -> None:
    """The Db2 connector on the emulation (as bench.db2_throughput runs it): one transaction
    of ``rows`` inserts, at a fifth of that size and at it."""
    with (
        postgres.running_postgres() as server,
        kafka.running_kafka() as broker,
        tempfile.TemporaryDirectory() as tmp,
    ):
        emulation = install(server, database="db2huge", sleep_s=0.2)
        try:
            emulation.execute(f'CREATE SCHEMA "{db2_bench.SCHEMA}"', db2_bench.DDL)
            emulation.add_table(db2_bench.SCHEMA, db2_bench.TABLE)
            written = 0
            for size in (rows // 5, rows):
                workdir = Path(tmp) / str(size)
                workdir.mkdir()
                with db2_bench.start_capture(emulation, broker, workdir, poll_ms=100) as running:
                    with psycopg.connect(emulation.dsn(), autocommit=True) as conn:
                        conn.execute(db2_bench.INSERT, (written + 1, written + size))
                    written += size
                    committed = time.monotonic()
                    while not _acknowledged(running, events=size):
                        time.sleep(0.2)
                    print_line(
                        f"Db2 (emulated), {size:,} rows",
                        f"peak RSS {running.peak_rss_mb():,.0f} MB; "
                        f"{time.monotonic() - committed:,.1f} s from the commit until Kafka "
                        "acknowledged the last event (the emulated agent's copy included)",
                    )
        finally:
            emulation.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--compare", action="store_true", help="also without streaming")
    parser.add_argument("--mariadb-rows", type=int, default=1_000_000)
    parser.add_argument("--db2-rows", type=int, default=200_000)
    args = parser.parse_args()
    if args.rows:
        _postgres(args.rows, compare=args.compare)
    if args.mariadb_rows:
        _mariadb(args.mariadb_rows)
    if args.db2_rows:
        _db2(args.db2_rows)


if __name__ == "__main__":
    main()
