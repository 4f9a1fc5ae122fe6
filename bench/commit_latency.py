"""Commit → Kafka latency of single-row transactions at a steady rate, with the shipped defaults.

Starts PostgreSQL and Kafka, creates the change topic with ``message.timestamp.type=
LogAppendTime`` (so a record's timestamp is the moment the broker appended it), starts
``cdcflow capture`` as a child process with the connector's defaults (offsets in a file), then
for each rate commits single-row INSERTs at that rate for a while (one writer process per 4,000
commits/s) and reads the topic back.
Latency per event = Kafka append time minus the transaction's commit time (``source.ts_ms``, ms
resolution). Prints p50/p95/p99/max per rate and the capture's peak RSS.

    python -m bench.commit_latency [--rates 1000,5000,10000] [--seconds 20]
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import statistics
import tempfile
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import orjson
import psycopg
from confluent_kafka import Consumer, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from bench.pipeline_throughput import start_capture
from cdcflow.operator.devservices import kafka, postgres

TOPIC = "bench.public.latency"
SCHEMA = "CREATE TABLE latency (id bigint PRIMARY KEY, note text NOT NULL)"
TARGET_P50_MS = 5
TARGET_P99_MS = 25
WARMUP_S = 3.0
#: Commits per second one writer process is asked for.
COMMITS_PER_WRITER = 4000


@dataclass(frozen=True)
class Percentiles:
    """Latency figures of one rate, in milliseconds."""

    rate: int
    achieved: float
    events: int
    p50: float
    p95: float
    p99: float
    worst: float


def _create_topic(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = NewTopic(TOPIC, 1, 1, config={"message.timestamp.type": "LogAppendTime"})
    for future in admin.create_topics([topic]).values():
        try:
            future.result(30)
        except KafkaException as error:
            if "TOPIC_ALREADY_EXISTS" not in str(error):
                raise


def _commit_at(
    dsn: str, *, rate: float, seconds: float, first_id: int, stride: int
) -> tuple[int, float]:
    """Single-row autocommit INSERTs paced to ``rate``/s, ids ``first_id`` + k·``stride``;
    (rows written, achieved rate)."""
    interval = 1 / rate
    with psycopg.connect(dsn, autocommit=True) as conn:
        started = time.perf_counter()
        written = 0
        while (elapsed := time.perf_counter() - started) < seconds:
            due = int(elapsed / interval) + 1
            while written < due:
                row_id = first_id + written * stride
                conn.execute("INSERT INTO latency VALUES (%s, 'x')", (row_id,), prepare=True)
                written += 1
            pause = (written * interval) - (time.perf_counter() - started)
            if pause > 0:
                time.sleep(pause)
    return written, written / (time.perf_counter() - started)


def _commit_in_processes(
    dsn: str, *, rate: int, seconds: float, first_id: int
) -> tuple[int, float]:
    """:func:`_commit_at` in one process per :data:`COMMITS_PER_WRITER` commits/s, each on its
    own connection (one connection tops out near 7k commits/s here); the totals."""
    writers = max(1, math.ceil(rate / COMMITS_PER_WRITER))
    with ProcessPoolExecutor(writers, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [
            pool.submit(
                _commit_at,
                dsn,
                rate=rate / writers,
                seconds=seconds,
                first_id=first_id + index,
                stride=writers,
            )
            for index in range(writers)
        ]
        results = [future.result() for future in futures]
    return sum(count for count, _ in results), sum(achieved for _, achieved in results)


def _poll(consumer: Consumer, first_id: int) -> list[int]:
    """Append time minus commit time (ms) of the events just read with ids from ``first_id``."""
    found = []
    for message in consumer.consume(1000, timeout=0.2):
        value = message.value()
        if message.error() or value is None:
            continue
        payload = orjson.loads(value)["payload"]
        if payload["after"]["id"] >= first_id:
            found.append(message.timestamp()[1] - payload["source"]["ts_ms"])
    return found


def _measure(
    dsn: str, consumer: Consumer, *, rate: int, seconds: float, first_id: int
) -> Percentiles:
    """Commit at ``rate`` for ``seconds`` while reading the events back; the first
    :data:`WARMUP_S` seconds are left out of the figures."""
    written: list[tuple[int, float]] = []
    writer = threading.Thread(
        target=lambda: written.append(
            _commit_in_processes(dsn, rate=rate, seconds=seconds, first_id=first_id)
        )
    )
    writer.start()
    values: list[int] = []
    deadline = time.monotonic() + seconds + 60
    while (writer.is_alive() or len(values) < written[0][0]) and time.monotonic() < deadline:
        values += _poll(consumer, first_id)
    writer.join()
    count, achieved = written[0]
    if len(values) < count:
        raise SystemExit(f"{rate}/s: only {len(values)} of {count} events reached Kafka in time")
    measured = sorted(values[int(len(values) * WARMUP_S / seconds) :])
    cuts = statistics.quantiles(measured, n=100, method="inclusive")
    return Percentiles(rate, achieved, len(values), cuts[49], cuts[94], cuts[98], measured[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", default="1000,5000,10000")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument(
        "--producer",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a librdkafka setting (spec.kafka.producer), e.g. linger.ms=5; repeatable",
    )
    args = parser.parse_args()
    producer = dict(item.split("=", 1) for item in args.producer)
    rates = [int(rate) for rate in args.rates.split(",")]
    results: list[Percentiles] = []
    with (
        postgres.running_postgres() as server,
        kafka.running_kafka() as broker,
        tempfile.TemporaryDirectory() as workdir,
    ):
        with psycopg.connect(server.dsn(), autocommit=True) as conn:
            conn.execute(SCHEMA)  # the slot exists before the first commit of the run
            conn.execute("CREATE PUBLICATION bench FOR TABLE latency")
            conn.execute("SELECT pg_create_logical_replication_slot('bench', 'pgoutput')")
        _create_topic(broker.bootstrap_servers)
        consumer = Consumer(
            {
                "bootstrap.servers": broker.bootstrap_servers,
                "group.id": "latency-bench",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "log_level": 2,  # the broker stops before the consumer: no farewell noise
            }
        )
        consumer.subscribe([TOPIC])
        with start_capture(
            server,
            broker,
            Path(workdir),
            {"table.include.list": "public.latency"},
            producer=producer,
        ) as capture:
            first_id = 0
            for rate in rates:
                results.append(
                    _measure(
                        server.dsn(), consumer, rate=rate, seconds=args.seconds, first_id=first_id
                    )
                )
                first_id += rate * int(args.seconds + 1) * 2
            rss = capture.peak_rss_mb()
        consumer.close()
    settings = ", ".join(f"{k}={v}" for k, v in producer.items()) or "shipped defaults"
    print(
        f"commit → Kafka append latency, {settings} (targets p50 < {TARGET_P50_MS} ms, "
        f"p99 < {TARGET_P99_MS} ms; Debezium 3.7 here: ~450 ms p50 as shipped, 8-15 ms with "
        "poll.interval.ms=10)"
    )
    for r in results:
        print(
            f"  {r.rate:>6,}/s asked, {r.achieved:>7,.0f}/s written, {r.events:>7,} events: "
            f"p50 {r.p50:>6.1f} ms  p95 {r.p95:>6.1f} ms  p99 {r.p99:>6.1f} ms  "
            f"max {r.worst:>6.0f} ms"
        )
    print(f"  capture peak RSS {rss:.0f} MB")


if __name__ == "__main__":
    main()
