"""What a restart after SIGKILL sends again: duplicates per kill on the PostgreSQL chaos workload.

The crash-safety test's workload, longer: transactions of 1,000 inserts, ~300 updates and
~100 deletes each, written while ``cdcflow capture`` is killed with SIGKILL ``--kills`` times
at random moments 0.5-2 s into each run; a last run catches up and stops with SIGTERM. Every
change event names its own change: (``source.lsn``, key, op); a record whose change was
already in the topic is a duplicate, counted for the kill after which it was written (the
topic's end offset is read at each kill). What a kill repeats is bounded by what the capture
read since its last offset commit: at most one ``offset.flush.interval.ms`` of reading, which
after a restart is a catch-up at the capture's full rate. The report lists the duplicates after
each kill (a kill while the capture catches up after a restart repeats the most) and checks
that the topic replays to the table (nothing lost).

With ``--exactly-once`` the connector runs with ``exactly.once.support=required`` (offsets in
Kafka) and the topic is counted as a ``read_committed`` consumer reads it: the duplicates
should then be none.

    .venv/bin/python -m bench.restart_duplicates [--kills 20] [--flush-ms 1000] [--exactly-once]

A soak run of a few minutes; not part of ``make test``.
"""

from __future__ import annotations

import argparse
import random
import signal
import statistics
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import psycopg
from confluent_kafka import Consumer, TopicPartition

from bench.common import RunningCapture, postgres_connector, print_line, spawn_capture
from cdcflow.capture.kafka.consumer import read_to
from cdcflow.operator.devservices import kafka, postgres

TOPIC = "chaos.public.chaos"
ROUNDS_PER_KILL = 6


def _workload(dsn: str, rounds: int, done: threading.Event) -> None:
    rng = random.Random(7)
    with psycopg.connect(dsn, autocommit=True) as conn:
        for _ in range(rounds):
            (top,) = conn.execute("SELECT coalesce(max(id), 0) FROM chaos").fetchone() or (0,)
            with conn.transaction():
                conn.execute("INSERT INTO chaos (val) SELECT g FROM generate_series(1, 1000) g")
                conn.execute(
                    "UPDATE chaos SET val = val + 1 WHERE id %% 97 = %s AND id <= %s",
                    (rng.randrange(97), top),
                )
                conn.execute(
                    "DELETE FROM chaos WHERE id %% 211 = %s AND id <= %s",
                    (rng.randrange(211), top),
                )
    done.set()


def _start(server: postgres.PostgresServer, resource: Any, workdir: Path) -> RunningCapture:
    login = (server.superuser, server.superuser_password)
    running = spawn_capture(resource, workdir=workdir, login=login, log_level="ERROR")
    while running.status().get("phase") != "streaming":
        time.sleep(0.05)
    return running


def _connector(
    server: postgres.PostgresServer, broker: kafka.KafkaBroker, flush_ms: int, *, exactly_once: bool
) -> Any:
    config = {
        "exactly.once.support": "required" if exactly_once else "requested",
        "topic.prefix": "chaos",
        "slot.name": "chaos",
        "publication.name": "chaos",
        "publication.autocreate.mode": "filtered",
        "table.include.list": "public.chaos",
        "offset.flush.interval.ms": flush_ms,
        "key.converter.schemas.enable": False,
        "value.converter.schemas.enable": False,
    }
    resource = postgres_connector(server, broker, name="chaos", config=config)
    spec = resource["spec"]
    assert isinstance(spec, dict)
    spec["offsets"] = {"store": "kafka" if exactly_once else "file"}
    return resource


def _records(broker: kafka.KafkaBroker) -> Iterator[tuple[int, Any, Any]]:
    """(offset, key, value) of every committed record of the data topic (``read_committed``:
    records of aborted transactions are skipped; without transactions, every record)."""
    consumer = Consumer(
        {"bootstrap.servers": broker.bootstrap_servers, "group.id": "chaos-count",
         "enable.auto.commit": False, "isolation.level": "read_committed"}
    )  # fmt: skip
    partition = TopicPartition(TOPIC, 0)
    try:
        _, high = consumer.get_watermark_offsets(partition, timeout=30)
        consumer.assign([TopicPartition(TOPIC, 0, 0)])
        while not read_to(consumer, partition, high):
            message = consumer.poll(1)
            if message is None or message.error():
                continue
            offset, key, value = message.offset() or 0, message.key() or b"null", message.value()
            yield offset, orjson.loads(key), orjson.loads(value) if value else None
    finally:
        consumer.close()


def _end_offset(broker: kafka.KafkaBroker) -> int:
    consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "chaos-end"})
    try:
        return int(consumer.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=30)[1])
    finally:
        consumer.close()


def _count(broker: kafka.KafkaBroker, kills_at: list[int]) -> tuple[list[int], int, dict[int, int]]:
    """Duplicates after each kill, the change events in all, and the topic replayed."""
    seen: set[tuple[Any, ...]] = set()
    per_kill = [0] * len(kills_at)
    state: dict[int, int] = {}
    events = 0
    for offset, key, value in _records(broker):
        if value is None:
            continue
        events += 1
        change = (value["source"]["lsn"], key["id"], value["op"])
        if change in seen:
            after = sum(1 for at in kills_at if at <= offset) - 1
            per_kill[max(after, 0)] += 1
        seen.add(change)
        if value["op"] == "d":
            state.pop(key["id"], None)
        else:
            state[key["id"]] = value["after"]["val"]
    return per_kill, events, state


def _committed_lsn(running: RunningCapture) -> int:
    offset = running.status().get("offset")
    return int(offset.get("lsn", 0)) if isinstance(offset, dict) else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--flush-ms", type=int, default=1000, help="offset.flush.interval.ms")
    parser.add_argument("--exactly-once", action="store_true", help="exactly.once.support=required")
    args = parser.parse_args()
    with (
        postgres.running_postgres() as server,
        kafka.running_kafka() as broker,
        tempfile.TemporaryDirectory() as tmp,
    ):
        workdir = Path(tmp)
        dsn = server.dsn()
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("CREATE TABLE chaos (id bigserial PRIMARY KEY, val int NOT NULL)")
        resource = _connector(server, broker, args.flush_ms, exactly_once=args.exactly_once)
        rng = random.Random(11)
        done = threading.Event()
        writer = threading.Thread(
            target=_workload, args=(dsn, args.kills * ROUNDS_PER_KILL, done), daemon=True
        )
        kills_at: list[int] = []
        started = time.monotonic()
        for kill in range(args.kills):
            running = _start(server, resource, workdir)
            if kill == 0:
                writer.start()
            time.sleep(rng.uniform(0.5, 2.0))
            kills_at.append(_end_offset(broker))
            running.process.send_signal(signal.SIGKILL)
            running.process.wait(30)
        final = _start(server, resource, workdir)
        writer.join()
        with psycopg.connect(dsn) as conn:
            lsn = conn.execute("SELECT pg_current_wal_lsn() - '0/0'::pg_lsn").fetchone()
        target = int(lsn[0]) if lsn else 0
        while _committed_lsn(final) < target:
            time.sleep(0.2)
        final.process.send_signal(signal.SIGTERM)
        final.process.wait(60)
        elapsed = time.monotonic() - started
        per_kill, events, state = _count(broker, kills_at)
        with psycopg.connect(dsn) as conn:
            rows = conn.execute("SELECT id, val FROM chaos").fetchall()
        source = {int(row[0]): int(row[1]) for row in rows}
    mode = "exactly-once" if args.exactly_once else "at-least-once"
    print_line("kills", f"{args.kills} (offset.flush.interval.ms={args.flush_ms}, {mode})")
    print_line("workload", f"{events - sum(per_kill):,} change events in {elapsed:,.0f} s")
    print_line("duplicates in all", f"{sum(per_kill):,}")
    print_line("duplicates after each kill", " ".join(f"{n:,}" for n in per_kill))
    mean, median = statistics.mean(per_kill), statistics.median(per_kill)
    print_line("per kill: mean / median / max", f"{mean:,.0f} / {median:,.0f} / {max(per_kill):,}")
    print_line("topic replays to the table", "yes" if state == source else "NO: changes lost")
    if state != source:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
