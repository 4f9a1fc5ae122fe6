"""Incremental snapshot throughput: rows/s on a large table, with and without a write load.

For each chunk size (1024 and 8192 by default) and each load (idle, concurrent writer) an
in-process engine streams a fresh slot; an ``execute-snapshot`` signal is inserted and the time
from the STARTED to the COMPLETED notification is measured. Two ceilings frame it: a plain
keyset ``SELECT`` of the same rows through psycopg (the database side alone), and the
end-to-end event rate of ``bench.pipeline_throughput`` (~55k events/s into Kafka on 2 cores),
which every emitted row also pays.

    python -m bench.incremental_snapshot [--rows 1000000]
"""

from __future__ import annotations

import argparse
import random
import tempfile
import threading
import time
from pathlib import Path

import psycopg

from cdcflow.capture.assembly import build_engine
from cdcflow.capture.connector_resource import CdcConnector
from cdcflow.capture.credentials import Login
from cdcflow.operator.devservices import kafka, postgres

CHUNK_SIZES = (1024, 8192)


def _resource(
    pg: postgres.PostgresServer, broker: kafka.KafkaBroker, name: str, chunk: int
) -> CdcConnector:
    return CdcConnector.model_validate(
        {
            "apiVersion": "cdcflow.io/v1alpha1",
            "kind": "CdcConnector",
            "metadata": {"name": name},
            "spec": {
                "source": {
                    "postgresql": {"host": pg.host, "port": pg.port, "database": pg.database}
                },
                "kafka": {"bootstrapServers": broker.bootstrap_servers},
                "config": {
                    "topic.prefix": name,
                    "slot.name": name,
                    "publication.name": name,
                    "publication.autocreate.mode": "filtered",
                    "table.include.list": "public.bench",
                    "signal.data.collection": "public.bench_signal",
                    "snapshot.mode": "never",
                    "incremental.snapshot.chunk.size": chunk,
                    "notification.enabled.channels": "",
                },
            },
        }
    )


def _writer(dsn: str, rows: int, stop: threading.Event, counter: list[int]) -> None:
    rng = random.Random(3)
    with psycopg.connect(dsn, autocommit=True) as conn:
        while not stop.is_set():
            with conn.transaction():
                for _ in range(50):
                    conn.execute(
                        "UPDATE bench SET val = val + 1 WHERE id = %s", (rng.randint(1, rows),)
                    )
            counter[0] += 50


def _run(
    pg: postgres.PostgresServer, broker: kafka.KafkaBroker, *, rows: int, chunk: int, load: bool
) -> tuple[float, float]:
    name = f"inc{chunk}{'load' if load else 'idle'}"
    with tempfile.TemporaryDirectory() as workdir:
        engine = build_engine(
            _resource(pg, broker, name, chunk),
            login=Login(pg.superuser, pg.superuser_password),
            offsets_path=Path(workdir) / "offsets.json",
        )
        thread = threading.Thread(target=engine.run, daemon=True)
        thread.start()
        while engine.stats.phase != "streaming":
            time.sleep(0.05)
        stop, written = threading.Event(), [0]
        writer = threading.Thread(target=_writer, args=(pg.dsn(), rows, stop, written))
        if load:
            writer.start()
        signal_id = f"bench-{name}"
        with psycopg.connect(pg.dsn(), autocommit=True) as conn:
            conn.execute(
                "INSERT INTO bench_signal VALUES (%s, 'execute-snapshot', "
                '\'{"data-collections": ["public.bench"]}\')',
                (signal_id,),
            )
        started = time.perf_counter()
        while engine.stats.signals.get(signal_id, {}).get("status") != "COMPLETED":
            time.sleep(0.05)
        elapsed = time.perf_counter() - started
        stop.set()
        if load:
            writer.join()
        engine.stop.set()
        thread.join(60)
        with psycopg.connect(pg.dsn(), autocommit=True) as conn:
            conn.execute("SELECT pg_drop_replication_slot(%s)", (name,))
    return rows / elapsed, written[0] / elapsed


def _select_ceiling(dsn: str, rows: int, chunk: int) -> float:
    started = time.perf_counter()
    last = 0
    with psycopg.connect(dsn, autocommit=True) as conn:
        while True:
            batch = conn.execute(
                "SELECT id, val, name FROM bench WHERE id > %s ORDER BY id LIMIT %s", (last, chunk)
            ).fetchall()
            if not batch:
                break
            last = batch[-1][0]
    return rows / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    rows = parser.parse_args().rows
    with postgres.running_postgres() as pg, kafka.running_kafka() as broker:
        with psycopg.connect(pg.dsn(), autocommit=True) as conn:
            conn.execute(
                "CREATE TABLE bench (id int PRIMARY KEY, val int NOT NULL, name text NOT NULL)"
            )
            conn.execute(
                "INSERT INTO bench SELECT g, g, 'row ' || g FROM generate_series(1, %s) g", (rows,)
            )
            conn.execute(
                "CREATE TABLE bench_signal "
                "(id varchar(64) PRIMARY KEY, type varchar(32), data varchar(2048))"
            )
            conn.execute("VACUUM ANALYZE bench")
        print(f"table: {rows:,} rows")
        for chunk in CHUNK_SIZES:
            ceiling = _select_ceiling(pg.dsn(), rows, chunk)
            for load in (False, True):
                rate, writes = _run(pg, broker, rows=rows, chunk=chunk, load=load)
                label = f"chunk {chunk:>5}, {'with' if load else 'no':>4} write load"
                extra = f", concurrent updates {writes:,.0f}/s" if load else ""
                print(
                    f"{label}: {rate:>9,.0f} rows/s  "
                    f"(ceiling: plain keyset SELECT {ceiling:,.0f} rows/s){extra}"
                )


if __name__ == "__main__":
    main()
