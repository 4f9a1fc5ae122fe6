"""What a SIGKILL in the middle of a large initial snapshot costs: exported vs chunked.

A PostgreSQL table of ``--rows`` rows (2,000,000 by default) is snapshotted twice into Kafka:
once as Debezium does it (``snapshot.strategy=exported``, one transaction; a kill means the
next start reads everything again), once with ``snapshot.strategy=chunked`` killed with SIGKILL
when about half of the table was read, then started again. The chunked run's topic is read
back: every row's read must be there, and the rows read twice must be at most
``snapshot.max.threads`` times ``incremental.snapshot.chunk.size`` (the window in flight).

    .venv/bin/python -m bench.resumable_snapshot [--rows 2000000] [--chunk 4096] [--threads 1]

Not part of ``make test`` (the integration tier measures the same bound on 12,000 rows on every
connector, in tests/integration/test_chunked_snapshots.py).
"""

from __future__ import annotations

import argparse
import signal
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import psycopg
from confluent_kafka import Consumer, TopicPartition

from bench.common import RunningCapture, postgres_connector, print_line, spawn_capture
from cdcflow.capture.kafka.consumer import read_to
from cdcflow.operator.devservices import kafka, postgres


def _connector(
    server: postgres.PostgresServer, broker: kafka.KafkaBroker, name: str, **config: Any
) -> dict[str, object]:
    properties = {
        "topic.prefix": name,
        "slot.name": name,
        "publication.name": name,
        "publication.autocreate.mode": "filtered",
        "table.include.list": "public.big",
        "signal.data.collection": "public.signals",
        "key.converter.schemas.enable": False,
        "value.converter.schemas.enable": False,
        **config,
    }
    return postgres_connector(server, broker, name=name, config=properties)


def _rows_read(running: RunningCapture) -> int:
    snapshot = running.status().get("snapshot")
    tables = snapshot.get("tables", {}) if isinstance(snapshot, dict) else {}
    return sum(int(t.get("rowsScanned", 0)) for t in tables.values())


def _snapshot_done(running: RunningCapture) -> bool:
    status = running.status()
    snapshot = status.get("snapshot")
    running_now = isinstance(snapshot, dict) and snapshot.get("running")
    return status.get("phase") in ("streaming", "stopped") and not running_now


def _wait(predicate: Any, running: RunningCapture) -> None:
    while not predicate(running):
        time.sleep(0.1)


def _reads(broker: kafka.KafkaBroker, topic: str) -> Counter[int]:
    consumer = Consumer(
        {"bootstrap.servers": broker.bootstrap_servers, "group.id": f"{topic}-count",
         "enable.auto.commit": False}
    )  # fmt: skip
    partition = TopicPartition(topic, 0)
    reads: Counter[int] = Counter()
    try:
        _, high = consumer.get_watermark_offsets(partition, timeout=30)
        consumer.assign([TopicPartition(topic, 0, 0)])
        while not read_to(consumer, partition, high):
            for message in consumer.consume(10_000, 1):
                value = message.value()
                if message.error() or not value:
                    continue
                event = orjson.loads(value)
                if event["op"] == "r":
                    reads[orjson.loads(message.key() or b"{}")["id"]] += 1
    finally:
        consumer.close()
    return reads


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--chunk", type=int, default=4096, help="incremental.snapshot.chunk.size")
    parser.add_argument("--threads", type=int, default=1, help="snapshot.max.threads")
    args = parser.parse_args()
    with (
        postgres.running_postgres() as server,
        kafka.running_kafka() as broker,
        tempfile.TemporaryDirectory() as tmp,
    ):
        login = (server.superuser, server.superuser_password)
        with psycopg.connect(server.dsn(), autocommit=True) as conn:
            conn.execute(
                "CREATE TABLE big (id bigint PRIMARY KEY, val int NOT NULL, pad text NOT NULL)"
            )
            conn.execute(
                "INSERT INTO big SELECT g, g %% 1000, md5(g::text) FROM generate_series(1, %s) g",
                (args.rows,),
            )
            conn.execute("CREATE TABLE signals (id varchar(64) PRIMARY KEY, type varchar(32), "
                         "data varchar(2048))")  # fmt: skip
            conn.execute("ANALYZE big")

        exported = _connector(server, broker, "exported", **{"snapshot.mode": "initial_only"})
        (Path(tmp) / "exported").mkdir()
        started = time.monotonic()
        running = spawn_capture(exported, workdir=Path(tmp) / "exported", login=login)
        running.process.wait()
        exported_s = time.monotonic() - started

        chunked = _connector(
            server,
            broker,
            "chunked",
            **{
                "snapshot.strategy": "chunked",
                "incremental.snapshot.chunk.size": args.chunk,
                "snapshot.max.threads": args.threads,
            },
        )
        workdir = Path(tmp) / "chunked"
        workdir.mkdir()
        started = time.monotonic()
        running = spawn_capture(chunked, workdir=workdir, login=login)
        _wait(lambda r: _rows_read(r) >= args.rows // 2, running)
        killed_at = _rows_read(running)
        running.process.send_signal(signal.SIGKILL)
        running.process.wait(30)
        restarted = time.monotonic()
        running = spawn_capture(chunked, workdir=workdir, login=login)
        _wait(lambda r: _rows_read(r) > 0, running)
        resumed_at = _rows_read(running)
        _wait(_snapshot_done, running)
        chunked_s = time.monotonic() - started
        after_kill_s = time.monotonic() - restarted
        running.process.send_signal(signal.SIGTERM)
        running.process.wait(60)
        reads = _reads(broker, "chunked.public.big")

    read_twice = sum(reads.values()) - len(reads)
    bound = args.threads * args.chunk
    print_line("table", f"{args.rows:,} rows")
    print_line(
        "exported (Debezium's)",
        f"{exported_s:,.1f} s, {args.rows / exported_s:,.0f} rows/s; a kill reads it all again",
    )
    print_line(
        "chunked, killed once",
        f"{chunked_s:,.1f} s in all, {args.rows / chunked_s:,.0f} rows/s "
        f"(chunk {args.chunk:,}, {args.threads} thread(s))",
    )
    print_line("killed at / resumed at", f"{killed_at:,} / {resumed_at:,} rows")
    print_line("after the kill", f"{after_kill_s:,.1f} s to finish the table")
    print_line("rows read again", f"{read_twice:,} (bound: {bound:,}; exported: {killed_at:,})")
    print_line("every row read", "yes" if len(reads) == args.rows else f"NO: {len(reads):,}")
    if len(reads) != args.rows or read_twice > bound:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
