"""Commit → Kafka latency of single-row transactions at steady rates: cdcflow, then Debezium.

Starts PostgreSQL and Kafka, creates table ``latency``, publication ``bench`` on it and
cdcflow's slot. Every change topic is created before its writer starts, with
``message.timestamp.type=LogAppendTime`` (so a record's timestamp is the moment the broker
appended it). Then, one after another on the same server and broker:

1. ``cdcflow capture`` as a child process with the connector's defaults (offsets in a file;
   ``--producer`` adds librdkafka settings); its peak RSS is reported;
2. unless ``--no-debezium``, the Debezium PostgreSQL connector (pgoutput, ``snapshot.mode=
   no_data``, JSON with schemas) on one standalone Kafka Connect worker with the full JIT,
   twice: as shipped (``poll.interval.ms`` 500, Connect's default producer; slot ``lat_dbz``,
   prefix ``latdbz``) and at its best latency here (``poll.interval.ms=10`` and the producer
   tuned like cdcflow's, ``linger.ms`` 5, ``batch.size`` 1 MB, lz4, as ``producer.override.*``;
   slot ``lat_dbzt``, prefix ``latdbzt``). Each connector creates its own slot when it starts
   and is removed before the next one starts. When the worker or the plugin is unavailable
   the bench says why and still reports cdcflow.

Before the first pipeline the fresh broker is kept busy for a minute (bench.common.warm_kafka:
its JVM compiles the produce and fetch paths meanwhile, and its answers stall for hundreds of ms
while it does). Each pipeline first streams a warm-up row (committed once a second until one
reaches its topic) and runs :data:`WARM_UP_RUN_S` seconds at up to :data:`TARGET_RATE`
commits/s, not counted. Then for each rate single-row INSERTs are committed at that rate for a
while (one writer process per 4,000 commits/s) while the topic is read back; row ids keep
increasing across all runs, so each run counts only its own rows. Latency per event = Kafka
append time minus the transaction's commit time (``source.ts_ms``, ms resolution); the first
seconds of each rate are left out. Prints p50/p95/p99/max and the achieved rate per pipeline and
rate, whether cdcflow meets the targets at 5,000 commits/s, and the capture's peak RSS.

With ``--exactly-once FLUSH_MS`` cdcflow runs a second time with ``exactly.once.support=
required`` committing every FLUSH_MS, read ``read_committed``; latency is then taken when the
reader receives an event (for every pipeline, so the figures compare): a transactional record is
appended before its transaction commits, and readable only after.

    python -m bench.commit_latency [--rates 1000,5000,10000] [--seconds 20] [--no-debezium]
        [--exactly-once 100]
"""

from __future__ import annotations

import argparse
import contextlib
import math
import multiprocessing
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from unittest import mock

import orjson
import psycopg
from confluent_kafka import Consumer, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from bench.common import debezium_missing, print_line, warm_kafka
from bench.pipeline_throughput import (
    TUNED_PRODUCER,
    DebeziumRun,
    debezium_config,
    start_capture,
)
from cdcflow.operator.devservices import kafka, postgres

if TYPE_CHECKING:  # imported where used: the bench runs without the tests package too
    from tests.services.kafka_connect import ConnectWorker

TOPIC = "bench.public.latency"
SCHEMA = "CREATE TABLE latency (id bigint PRIMARY KEY, note text NOT NULL)"
INSERT = "INSERT INTO latency VALUES (%s, 'x')"
TARGET_P50_MS = 5
TARGET_P99_MS = 25
#: The rate the targets are judged at.
TARGET_RATE = 5000
WARMUP_S = 3.0
#: Commits per second one writer process is asked for.
COMMITS_PER_WRITER = 4000
#: How long a pipeline may take to stream its first (warm-up) row.
STREAMING_TIMEOUT_S = 180.0
#: How long the events may take to reach Kafka after the last commit of a rate.
DRAIN_TIMEOUT_S = 60.0
#: How long each pipeline runs (at up to TARGET_RATE) before anything is counted.
WARM_UP_RUN_S = 20.0
#: How long the fresh broker is kept busy before the first pipeline (see bench.common.warm_kafka).
WARM_UP_LOAD_S = 60.0


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


@dataclass(frozen=True)
class LatencyRun:
    """One Debezium configuration: its slot, topic prefix and producer overrides (``run``),
    and the connector settings it adds."""

    run: DebeziumRun
    settings: Mapping[str, str] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return self.run.label

    @property
    def topic(self) -> str:
        return f"{self.run.prefix}.public.latency"


DEBEZIUM_RUNS = (
    LatencyRun(DebeziumRun("Debezium as shipped", "lat_dbz", "latdbz", {})),
    LatencyRun(
        DebeziumRun("Debezium poll 10 ms, tuned producer", "lat_dbzt", "latdbzt", TUNED_PRODUCER),
        {"poll.interval.ms": "10"},
    ),
)


class Ids:
    """Row ids handed out in increasing blocks: every run's rows come after all earlier ones."""

    def __init__(self) -> None:
        self._next = 0

    def take(self, count: int) -> int:
        """The first of ``count`` fresh ids."""
        first = self._next
        self._next += count
        return first


@dataclass(frozen=True)
class Schedule:
    """The rates each pipeline is measured at, for how long each, and the ids they use."""

    rates: Sequence[int]
    seconds: float
    ids: Ids


def _create_topic(bootstrap: str, topic: str) -> None:
    """``topic`` (one partition) with broker append times as its records' timestamps."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    new = NewTopic(topic, 1, 1, config={"message.timestamp.type": "LogAppendTime"})
    for future in admin.create_topics([new]).values():
        try:
            future.result(30)
        except KafkaException as error:
            if "TOPIC_ALREADY_EXISTS" not in str(error):
                raise


def _consumer(bootstrap: str, topic: str, *, committed_only: bool = False) -> Consumer:
    """A consumer of ``topic`` from its start, in a group of its own (``read_committed`` with
    ``committed_only``: a transactional record counts once its transaction committed)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"latency-bench-{topic}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "isolation.level": "read_committed" if committed_only else "read_uncommitted",
            "log_level": 2,  # the broker stops before the consumer: no farewell noise
        }
    )
    consumer.subscribe([topic])
    return consumer


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
                conn.execute(INSERT, (row_id,), prepare=True)
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


#: Whether latency is taken at the reader (receive time) instead of the broker's append time:
#: a transactional record is appended long before its transaction commits and it is readable.
AT_READER = {"on": False}


def _poll(consumer: Consumer, first_id: int) -> list[int]:
    """Append time (or, under :data:`AT_READER`, receive time) minus commit time (ms) of the
    events just read (from the topic ``consumer`` is subscribed to) with ids from
    ``first_id``."""
    found = []
    # at the reader, a batch must not wait to fill: its wait would be counted as latency
    messages = consumer.consume(1000, timeout=0.002 if AT_READER["on"] else 0.2)
    received = int(time.time() * 1000)
    for message in messages:
        value = message.value()
        if message.error() or value is None:
            continue
        payload = orjson.loads(value)["payload"]
        if payload["after"]["id"] >= first_id:
            seen = received if AT_READER["on"] else message.timestamp()[1]
            found.append(seen - payload["source"]["ts_ms"])
    return found


def _measure(
    dsn: str,
    consumer: Consumer,
    *,
    rate: int,
    seconds: float,
    first_id: int,
    check: Callable[[], object],
) -> Percentiles:
    """Commit at ``rate`` for ``seconds`` while reading the events back; the first
    :data:`WARMUP_S` seconds are left out of the figures. ``check`` runs at every poll once the
    writers are done (it raises to give up: the pipeline died or failed); the events get
    :data:`DRAIN_TIMEOUT_S` after the last commit."""
    written: list[tuple[int, float]] = []
    writer = threading.Thread(
        target=lambda: written.append(
            _commit_in_processes(dsn, rate=rate, seconds=seconds, first_id=first_id)
        )
    )
    writer.start()
    values: list[int] = []
    while writer.is_alive():
        values += _poll(consumer, first_id)
    writer.join()
    if not written:
        raise RuntimeError(f"{rate}/s: the writers failed")
    count, achieved = written[0]
    deadline = time.monotonic() + DRAIN_TIMEOUT_S
    while len(values) < count and time.monotonic() < deadline:
        check()
        values += _poll(consumer, first_id)
    if len(values) < count:
        raise TimeoutError(f"{rate}/s: only {len(values)} of {count} events reached Kafka in time")
    measured = sorted(values[int(len(values) * WARMUP_S / seconds) :])
    cuts = statistics.quantiles(measured, n=100, method="inclusive")
    return Percentiles(rate, achieved, len(values), cuts[49], cuts[94], cuts[98], measured[-1])


def _wait_streaming(dsn: str, consumer: Consumer, *, ids: Ids, check: Callable[[], object]) -> None:
    """Commit a warm-up row once a second until one reaches the topic: the pipeline streams
    (a connector that creates its slot misses the rows committed before it)."""
    first_id: int | None = None
    deadline = time.monotonic() + STREAMING_TIMEOUT_S
    while time.monotonic() < deadline:
        check()
        row_id = ids.take(1)
        first_id = row_id if first_id is None else first_id
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(INSERT, (row_id,))
        until = time.monotonic() + 1.0
        while time.monotonic() < until:
            if _poll(consumer, first_id):
                return
    raise TimeoutError(f"no warm-up row reached Kafka within {STREAMING_TIMEOUT_S:.0f} s")


def _measure_rates(
    dsn: str, consumer: Consumer, *, schedule: Schedule, check: Callable[[], object]
) -> list[Percentiles]:
    """Once the pipeline streams, :func:`_measure` at each of the schedule's rates."""
    _wait_streaming(dsn, consumer, ids=schedule.ids, check=check)
    warm_up = min(max(schedule.rates), TARGET_RATE)
    first_id = schedule.ids.take(warm_up * int(WARM_UP_RUN_S + 1) * 2)
    _measure(dsn, consumer, rate=warm_up, seconds=WARM_UP_RUN_S, first_id=first_id, check=check)
    results = []
    for rate in schedule.rates:
        first_id = schedule.ids.take(rate * int(schedule.seconds + 1) * 2)
        results.append(
            _measure(
                dsn, consumer, rate=rate, seconds=schedule.seconds, first_id=first_id, check=check
            )
        )
    return results


def _prepare(dsn: str) -> None:
    """The table, publication ``bench`` on it and cdcflow's slot, before the first commit."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(SCHEMA)
        conn.execute("CREATE PUBLICATION bench FOR TABLE latency")
        conn.execute("SELECT pg_create_logical_replication_slot('bench', 'pgoutput')")


def _run_cdcflow(
    server: postgres.PostgresServer,
    broker: kafka.KafkaBroker,
    *,
    producer: dict[str, str],
    schedule: Schedule,
    exactly_once_flush_ms: int | None = None,
) -> tuple[list[Percentiles], float]:
    """``cdcflow capture`` (stopped at the end) at each rate; and its peak RSS in MB. With
    ``exactly_once_flush_ms``, exactly-once committing every that many ms (offsets in Kafka),
    read ``read_committed``."""
    _create_topic(broker.bootstrap_servers, TOPIC)
    exactly_once = exactly_once_flush_ms is not None
    consumer = _consumer(broker.bootstrap_servers, TOPIC, committed_only=exactly_once)
    config = {"table.include.list": "public.latency"}
    if exactly_once:
        config |= {
            "exactly.once.support": "required",
            "offset.flush.interval.ms": str(exactly_once_flush_ms),
        }
    try:
        with (
            tempfile.TemporaryDirectory() as workdir,
            start_capture(
                server,
                broker,
                Path(workdir),
                config,
                producer=producer,
                offsets_store="kafka" if exactly_once else "file",
            ) as capture,
        ):
            results = _measure_rates(
                server.dsn(), consumer, schedule=schedule, check=capture.status
            )
            return results, capture.peak_rss_mb()
    except TimeoutError as error:
        raise SystemExit(f"cdcflow: {error}") from None
    finally:
        consumer.close()


# -- Debezium ------------------------------------------------------------------------------------


@contextlib.contextmanager
def _full_jit_connect(bootstrap: str) -> Iterator[ConnectWorker]:
    """The tests' standalone Connect worker without their C1-only JIT option, as
    :func:`bench.common.run_debezium` starts it."""
    from tests.services import kafka_connect

    full_jit = tuple(o for o in kafka_connect.JVM_OPTIONS if "TieredStopAtLevel" not in o)
    with (
        mock.patch.object(kafka_connect, "JVM_OPTIONS", full_jit),
        kafka_connect.running_connect(bootstrap) as worker,
    ):
        yield worker


def _connector_check(worker: ConnectWorker, name: str) -> Callable[[], None]:
    """A check that raises with the trace once connector ``name`` failed."""
    from tests.services import kafka_connect

    def check() -> None:
        kafka_connect.failed_trace(worker.rest.status(name), name=name)

    return check


def _debezium_config(server: postgres.PostgresServer, run: LatencyRun) -> dict[str, str]:
    """The throughput bench's connector, on table ``latency``, with ``run``'s settings."""
    return {
        **debezium_config(server, run.run),
        "table.include.list": "public\\.latency",
        **run.settings,
    }


def _run_connector(
    worker: ConnectWorker,
    server: postgres.PostgresServer,
    broker: kafka.KafkaBroker,
    *,
    run: LatencyRun,
    schedule: Schedule,
) -> list[Percentiles] | str:
    """Connector ``run`` on ``worker`` at each rate, removed at the end; or why it failed."""
    name = run.run.prefix
    _create_topic(broker.bootstrap_servers, run.topic)
    consumer = _consumer(broker.bootstrap_servers, run.topic)
    try:
        worker.rest.put_connector(name, _debezium_config(server, run))
        worker.rest.wait_running(name, timeout=STREAMING_TIMEOUT_S)
        check = _connector_check(worker, name)
        return _measure_rates(server.dsn(), consumer, schedule=schedule, check=check)
    except Exception as error:  # reported beside the results
        return f"failed: {type(error).__name__}: {error}"
    finally:
        worker.rest.delete_connector(name)
        consumer.close()


def _run_debezium(
    server: postgres.PostgresServer, broker: kafka.KafkaBroker, *, schedule: Schedule
) -> dict[str, list[Percentiles] | str]:
    """Each of :data:`DEBEZIUM_RUNS` in turn on one worker, by label: its figures, or why not."""
    results: dict[str, list[Percentiles] | str] = {}
    try:
        with _full_jit_connect(broker.bootstrap_servers) as worker:
            for run in DEBEZIUM_RUNS:
                results[run.label] = _run_connector(
                    worker, server, broker, run=run, schedule=schedule
                )
    except Exception as error:  # the worker did not start: reported beside the results
        reason = f"failed: {type(error).__name__}: {error}"
        results |= {run.label: reason for run in DEBEZIUM_RUNS if run.label not in results}
    return results


# -- Report --------------------------------------------------------------------------------------

LABEL_WIDTH = 38


def _print_table(results: Mapping[str, list[Percentiles] | str]) -> None:
    """One row per pipeline and rate (latency in ms), or why a pipeline was not measured."""
    title = "commit → read latency, ms" if AT_READER["on"] else "commit → Kafka append latency, ms"
    print(
        f"{title:<{LABEL_WIDTH}} {'asked/s':>8} {'written/s':>9} "
        f"{'events':>8} {'p50':>7} {'p95':>7} {'p99':>7} {'max':>7}"
    )
    for label, figures in results.items():
        if isinstance(figures, str):
            print(f"{label:<{LABEL_WIDTH}} not measured, {figures}")
            continue
        for r in figures:
            print(
                f"{label:<{LABEL_WIDTH}} {r.rate:>8,} {r.achieved:>9,.0f} {r.events:>8,} "
                f"{r.p50:>7.1f} {r.p95:>7.1f} {r.p99:>7.1f} {r.worst:>7.0f}"
            )


def _print_targets(cdcflow: Sequence[Percentiles]) -> None:
    """cdcflow's figures at :data:`TARGET_RATE` against the targets."""
    label = f"cdcflow at {TARGET_RATE:,}/s"
    targets = f"targets p50 < {TARGET_P50_MS} ms, p99 < {TARGET_P99_MS} ms"
    at_target = [r for r in cdcflow if r.rate == TARGET_RATE]
    if not at_target:
        print_line(label, f"not measured ({targets}; --rates has no {TARGET_RATE})")
        return
    r = at_target[0]
    met = r.p50 < TARGET_P50_MS and r.p99 < TARGET_P99_MS
    verdict = "met" if met else "not met"
    print_line(label, f"p50 {r.p50:.1f} ms, p99 {r.p99:.1f} ms ({targets}: {verdict})")


def _print_debezium_legend() -> None:
    """What the Debezium rows' labels stand for."""
    for run in DEBEZIUM_RUNS:
        poll = run.settings.get("poll.interval.ms", "500 (default)")
        producer = ", ".join(f"{k}={v}" for k, v in run.run.producer.items()) or "Connect's default"
        print_line(run.label, f"poll.interval.ms={poll}; producer: {producer}")


def _why_not_debezium(skip: bool) -> str | None:
    """Why Debezium is not measured (None: it is)."""
    if skip:
        return "skipped (--no-debezium)"
    return debezium_missing(
        connector="POSTGRES_CONNECTOR", plugin="postgres", database="PostgreSQL"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", default="1000,5000,10000")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument(
        "--producer",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a librdkafka setting of cdcflow's (spec.kafka.producer), e.g. linger.ms=5; "
        "repeatable",
    )
    parser.add_argument("--no-debezium", action="store_true", help="skip the Debezium connector")
    parser.add_argument(
        "--exactly-once",
        type=int,
        default=None,
        metavar="FLUSH_MS",
        help="also measure cdcflow with exactly.once.support=required committing every FLUSH_MS "
        "(read_committed); every pipeline's latency is then taken at the reader",
    )
    args = parser.parse_args()
    AT_READER["on"] = args.exactly_once is not None
    producer = dict(item.split("=", 1) for item in args.producer)
    schedule = Schedule([int(rate) for rate in args.rates.split(",")], args.seconds, Ids())
    not_measured = _why_not_debezium(args.no_debezium)
    settings = ", ".join(f"{k}={v}" for k, v in producer.items()) or "shipped defaults"
    results: dict[str, list[Percentiles] | str] = {}
    with postgres.running_postgres() as server, kafka.running_kafka() as broker:
        warm_kafka(broker.bootstrap_servers, load_s=WARM_UP_LOAD_S)
        _prepare(server.dsn())
        cdcflow, rss = _run_cdcflow(server, broker, producer=producer, schedule=schedule)
        results[f"cdcflow ({settings})"] = cdcflow
        if args.exactly_once is not None:
            results[f"cdcflow exactly-once, commits every {args.exactly_once} ms"], _ = (
                _run_cdcflow(
                    server,
                    broker,
                    producer=producer,
                    schedule=schedule,
                    exactly_once_flush_ms=args.exactly_once,
                )
            )
        if not_measured is None:
            results |= _run_debezium(server, broker, schedule=schedule)
    if not_measured is not None:
        results["Debezium PostgreSQL connector"] = not_measured
    _print_table(results)
    if not_measured is None:
        _print_debezium_legend()
    if not AT_READER["on"]:  # the targets are for the broker's append time
        _print_targets(cdcflow)
    print_line("cdcflow capture peak RSS", f"{rss:.0f} MB")


if __name__ == "__main__":
    main()
