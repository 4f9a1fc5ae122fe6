"""Drain an insert backlog through `cdcflow capture` into Kafka, beside Debezium and the ceiling.

Starts PostgreSQL and Kafka and writes N inserts (default 500k, in 1000-row transactions) while
nothing reads them, every reader's slot created up front on publication ``bench``. Then, one
after another over the same WAL:

1. a bare Python receive loop (slot ``bench_raw<i>``) measures the raw pgoutput rate the server
   and psycopg deliver: the ceiling the pipeline is compared to;
2. right after it, ``cdcflow capture`` as a child process (slot and topic prefix ``bench<i>``,
   JSON with schemas, Kafka sink) is timed from the first record in its topic until the topic
   holds every event, i.e. until Kafka acknowledged them all; with its CPU seconds over that
   span (events per CPU-second) and its peak RSS; then (untimed) until the offset it saved
   covers the backlog;
3. 1. and 2. again, ``--pairs`` times in all (default 3): the two cores are shared with
   PostgreSQL and the broker and one drain moves by ±20 % between runs, so the ratio to the
   ceiling is each pair's (measured back to back) and the figure reported is the median pair;
4. the Debezium PostgreSQL connector (pgoutput, ``snapshot.mode=no_data``, JSON with schemas,
   the worker's default converters) on a fresh standalone Kafka Connect worker with the full
   JIT, timed from its first record until its topic holds every row, with the worker's CPU
   seconds and peak RSS; twice: with Connect's default producer (slot ``bench_dbz``, prefix
   ``dbz``) and with a producer tuned like cdcflow's (``linger.ms`` 5, ``batch.size`` 1 MB,
   lz4, as ``producer.override.*``; slot ``bench_dbzt``, prefix ``dbzt``). ``--no-debezium``
   skips it; when the worker or the plugin is unavailable the bench says why.

It ends with the ratios the goals name: cdcflow (its median drain) against tuned Debezium
(events/s and events per CPU-second) and against the raw receive rate (the median pair).

    python -m bench.pipeline_throughput [--rows 500000] [--pairs 3] [--no-debezium]
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import psycopg

from bench.common import (
    Rate,
    RunningCapture,
    bench_arguments,
    capture_running,
    debezium_skipped,
    postgres_connector,
    print_goal,
    print_line,
    run_debezium,
    topic_consumer,
    topic_rate,
    warm_kafka_for_drains,
)
from cdcflow.capture.connectors.postgres import pgoutput
from cdcflow.capture.connectors.postgres.connection import Endpoint, connect_replication
from cdcflow.capture.connectors.postgres.replication import ReplicationStream
from cdcflow.operator.devservices import kafka, postgres

TARGET_EVENTS_PER_S = 50_000
TARGET_RSS_MB = 150  # the memory budget at these rates
#: The goals: cdcflow's events/s over tuned Debezium's and over the raw receive rate, and its
#: events per CPU-second over tuned Debezium's.
GOAL_VS_DEBEZIUM = 2.0
GOAL_VS_RAW = 0.60
GOAL_PER_CPU_VS_DEBEZIUM = 3.0
SCHEMA = (
    "CREATE TABLE bench (id bigint PRIMARY KEY, name text NOT NULL, amount numeric(10,2), "
    "created timestamp NOT NULL DEFAULT now(), active boolean NOT NULL DEFAULT true)"
)
#: cdcflow's producer defaults (capture/kafka/producer.py) in Kafka's Java client's names.
TUNED_PRODUCER = {"linger.ms": "5", "batch.size": "1000000", "compression.type": "lz4"}


@dataclass(frozen=True)
class DebeziumRun:
    """One run of the Debezium PostgreSQL connector: its own slot (created before the backlog,
    so it reads all of it) and topic prefix, and the producer settings it overrides."""

    label: str
    slot: str
    prefix: str
    producer: Mapping[str, str]


DEBEZIUM_RUNS = (
    DebeziumRun("default producer", "bench_dbz", "dbz", {}),
    DebeziumRun("tuned producer", "bench_dbzt", "dbzt", TUNED_PRODUCER),
)


def write_backlog(dsn: str, rows: int) -> None:
    """``rows`` inserts into the bench table, in 1,000-row transactions."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        for start in range(0, rows, 1000):
            conn.execute(
                "INSERT INTO bench (id, name, amount) SELECT g, 'customer ' || g, g / 100.0 "
                "FROM generate_series(%s::bigint, %s::bigint) g",
                (start + 1, min(start + 1000, rows)),
            )


def _raw_ceiling(server: postgres.PostgresServer, target: int, *, slot: str) -> Rate:
    """A bare receive loop (frames only) over the same WAL: seconds and row messages."""
    endpoint = Endpoint(
        host=server.host,
        port=server.port,
        database=server.database,
        user=server.superuser,
        password=server.superuser_password,
    )
    stream = ReplicationStream(connect_replication(endpoint))
    stream.start(slot=slot, publication="bench", start_lsn=0, messages=False)
    rows, started = 0, time.perf_counter()
    while True:
        frame = stream.read(5.0)
        if frame is None:
            break
        if isinstance(frame, pgoutput.XLogData):
            if frame.payload[:1] == b"I":
                rows += 1
            if frame.data_start >= target:
                break
        elif frame.wal_end >= target:
            break
    elapsed = time.perf_counter() - started
    stream.close()
    return Rate(elapsed, rows)


@contextlib.contextmanager
def start_capture(
    server: postgres.PostgresServer,
    broker: kafka.KafkaBroker,
    workdir: Path,
    config: dict[str, str] | None = None,
    producer: dict[str, str] | None = None,
    offsets_store: str = "file",
) -> Iterator[RunningCapture]:
    """``cdcflow capture`` on the bench slot and publication, the connector's defaults
    otherwise (JSON with schemas, offsets in a file unless ``offsets_store`` says), with
    ``config`` added and ``producer`` (librdkafka settings, ``spec.kafka.producer``)."""
    config = {
        "topic.prefix": "bench",
        "slot.name": "bench",
        "publication.name": "bench",
        "snapshot.mode": "never",
        **(config or {}),
    }
    resource = postgres_connector(server, broker, name="bench", config=config, producer=producer)
    spec = resource["spec"]
    assert isinstance(spec, dict)
    spec["offsets"] = {"store": offsets_store}
    login = (server.superuser, server.superuser_password)
    with capture_running(resource, workdir=workdir, login=login) as running:
        yield running


def prepare(dsn: str, *, slots: list[str]) -> None:
    """The bench table, publication ``bench`` on it, and one pgoutput slot per reader."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(SCHEMA)
        conn.execute("CREATE PUBLICATION bench FOR TABLE bench")
        for slot in slots:
            conn.execute("SELECT pg_create_logical_replication_slot(%s, 'pgoutput')", (slot,))


def _current_lsn(dsn: str) -> int:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute("SELECT pg_current_wal_lsn() - '0/0'::pg_lsn").fetchone()
    return int(row[0]) if row else 0


def _events_seen(status: dict[str, object]) -> int:
    streaming = status.get("streaming") or {}
    return int(streaming.get("totalEventsSeen", 0)) if isinstance(streaming, dict) else 0


def _saved_lsn(status: dict[str, object]) -> int:
    offset = status.get("offset") or {}
    return int(offset.get("lsn", 0)) if isinstance(offset, dict) else 0


def _run_capture(
    server: postgres.PostgresServer,
    broker: kafka.KafkaBroker,
    *,
    workdir: Path,
    slot: str,
    target: int,
    rows: int,
) -> tuple[Rate, int]:
    """The drain of ``rows`` events on ``slot`` (also the topic prefix) timed as Debezium's
    is, from the first record in the topic until it holds them all, with the capture's CPU
    seconds over that span and its peak RSS; then (untimed) until the saved offset covers the
    backlog; and the events /status counted."""
    config = {"slot.name": slot, "topic.prefix": slot}
    with (
        topic_consumer(broker) as consumer,
        start_capture(server, broker, workdir, config) as capture,
    ):
        rate = topic_rate(
            consumer,
            topic=f"{slot}.public.bench",
            rows=rows,
            pid=capture.process.pid,
            check=capture.status,  # raises when the capture died
        )
        while _saved_lsn(status := capture.status()) < target:
            time.sleep(0.05)
        return rate, _events_seen(status)


# -- Debezium ------------------------------------------------------------------------------------


def debezium_config(server: postgres.PostgresServer, run: DebeziumRun) -> dict[str, str]:
    """The connector as the tests configure it (superuser, pgoutput), on the bench's own
    publication and ``run``'s slot, streaming only (the slot holds the whole backlog)."""
    from tests.services import kafka_connect

    return {
        "connector.class": kafka_connect.POSTGRES_CONNECTOR,
        "tasks.max": "1",
        "database.hostname": server.host,
        "database.port": str(server.port),
        "database.user": server.superuser,
        "database.password": server.superuser_password,
        "database.dbname": server.database,
        "topic.prefix": run.prefix,
        "plugin.name": "pgoutput",
        "slot.name": run.slot,
        "publication.name": "bench",
        "publication.autocreate.mode": "disabled",
        "table.include.list": "public\\.bench",
        "snapshot.mode": "no_data",
        # The worker's connector.client.config.override.policy (All) lets a connector set these.
        **{f"producer.override.{key}": value for key, value in run.producer.items()},
    }


def _run_debezium(
    server: postgres.PostgresServer, broker: kafka.KafkaBroker, *, rows: int
) -> dict[str, Rate | str]:
    """Each of :data:`DEBEZIUM_RUNS` over the whole backlog, by label: its rate, or why not."""
    results: dict[str, Rate | str] = {}
    for run in DEBEZIUM_RUNS:
        config = debezium_config(server, run)
        topic = f"{run.prefix}.public.bench"
        try:
            results[run.label] = run_debezium(
                broker, name=run.prefix, config=config, topic=topic, rows=rows
            )
        except Exception as error:  # reported beside the results
            results[run.label] = f"failed: {type(error).__name__}: {error}"
    return results


# -- Report --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pair:
    """The raw receive ceiling and a cdcflow drain measured right after it."""

    raw: Rate
    capture: Rate
    seen: int

    @property
    def ratio(self) -> float:
        return self.capture.per_s / self.raw.per_s


def _run_pairs(
    server: postgres.PostgresServer, broker: kafka.KafkaBroker, *, pairs: int, rows: int
) -> list[Pair]:
    """``pairs`` times the raw receive loop, then a cdcflow drain, each on its own slot."""
    target = _current_lsn(server.dsn())
    measured = []
    for index in range(pairs):
        raw = _raw_ceiling(server, target, slot=f"bench_raw{index}")
        with tempfile.TemporaryDirectory() as workdir:
            capture, seen = _run_capture(
                server,
                broker,
                workdir=Path(workdir),
                slot=f"bench{index}",
                target=target,
                rows=rows,
            )
        measured.append(Pair(raw, capture, seen))
        print(
            f"pair {index + 1}: raw {raw.per_s:,.0f} rows/s, cdcflow {capture.per_s:,.0f} "
            f"events/s: {measured[-1].ratio:.2f} of raw",
            flush=True,
        )
    return measured


def _median(pairs: list[Pair], key: Callable[[Pair], float]) -> Pair:
    """The pair in the middle by ``key`` (the lower one of an even count: never flattering)."""
    return sorted(pairs, key=key)[(len(pairs) - 1) // 2]


def _print_cdcflow(raw: Rate, drain: Pair) -> None:
    """The median pair's ceiling and the median drain's figures."""
    capture, seen = drain.capture, drain.seen
    print_line("raw pgoutput receive ceiling", f"{raw.per_s:>10,.0f} rows/s ({raw.rows} rows)")
    print_line(
        "cdcflow capture → Kafka (acked)",
        f"{capture.per_s:>10,.0f} events/s (target ≥ {TARGET_EVENTS_PER_S:,}/s)",
    )
    print_line(
        "cdcflow capture CPU while draining",
        f"{capture.cpu_s:>10.1f} s ({capture.cpu_s / capture.seconds:.2f} cores, "
        f"{capture.seconds:.1f} s wall)",
    )
    print_line("cdcflow events per CPU-second", f"{capture.per_cpu_s:>10,.0f}")
    print_line(
        "cdcflow capture peak RSS",
        f"{capture.peak_rss_mb:>10.0f} MB (target < {TARGET_RSS_MB} MB)",
    )
    print_line("events counted by /status", f"{seen:>10,}")


def print_debezium(results: Mapping[str, Rate | str]) -> None:
    for label, result in results.items():
        if isinstance(result, str):
            print_line(f"Debezium PostgreSQL ({label})", f"not measured, {result}")
            continue
        print_line(
            f"Debezium PostgreSQL ({label})",
            f"{result.per_s:>10,.0f} events/s ({result.cpu_s:.1f} CPU s, "
            f"{result.per_cpu_s:,.0f} events per CPU-second, "
            f"worker peak RSS {result.peak_rss_mb:.0f} MB)",
        )


def _print_goals(capture: Rate, median_pair: Pair, *, pairs: int, tuned: Rate | None) -> None:
    print_goal(
        "cdcflow ÷ tuned Debezium, events/s",
        capture.per_s / tuned.per_s if tuned else None,
        GOAL_VS_DEBEZIUM,
    )
    print_goal(
        f"cdcflow ÷ raw receive rate, median of {pairs}",
        median_pair.ratio,
        GOAL_VS_RAW,
    )
    print_goal(
        "cdcflow ÷ tuned Debezium, events per CPU-s",
        capture.per_cpu_s / tuned.per_cpu_s if tuned else None,
        GOAL_PER_CPU_VS_DEBEZIUM,
    )


def main() -> None:
    args = bench_arguments(__doc__.splitlines()[0], rows=500_000, pairs=3)
    rows: int = args.rows
    pairs: int = args.pairs
    not_measured = debezium_skipped(
        args, connector="POSTGRES_CONNECTOR", plugin="postgres", database="PostgreSQL"
    )
    dbz_slots = [run.slot for run in DEBEZIUM_RUNS] if not_measured is None else []
    debezium: dict[str, Rate | str] = {}
    with postgres.running_postgres() as server, kafka.running_kafka() as broker:
        warm_kafka_for_drains(broker.bootstrap_servers)
        dsn = server.dsn()
        own_slots = [f"bench{i}" for i in range(pairs)] + [f"bench_raw{i}" for i in range(pairs)]
        prepare(dsn, slots=[*own_slots, *dbz_slots])
        started = time.perf_counter()
        write_backlog(dsn, rows)
        print(
            f"backlog: {rows} inserts in {-(-rows // 1000)} transactions written in "
            f"{time.perf_counter() - started:.1f}s"
        )
        measured = _run_pairs(server, broker, pairs=pairs, rows=rows)
        if not_measured is None:
            debezium = _run_debezium(server, broker, rows=rows)
    median_pair = _median(measured, lambda pair: pair.ratio)
    median_drain = _median(measured, lambda pair: pair.capture.per_s)
    _print_cdcflow(median_pair.raw, median_drain)
    if debezium:
        print_debezium(debezium)
    else:
        print_line("Debezium PostgreSQL connector", f"not measured, {not_measured}")
    tuned = debezium.get("tuned producer")
    _print_goals(
        median_drain.capture,
        median_pair,
        pairs=pairs,
        tuned=tuned if isinstance(tuned, Rate) else None,
    )


if __name__ == "__main__":
    main()
