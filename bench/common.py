"""Helpers the throughput benches share: measuring a process, a Kafka topic and Debezium.

- :class:`Rate`: one measured drain (seconds, rows, CPU seconds, peak RSS);
- :func:`cpu_seconds` and :func:`peak_rss_mb`: what a process (all its threads) has cost so
  far, read from ``/proc``;
- :func:`topic_size`: how many records partition 0 of a topic holds, from its watermarks;
- :func:`topic_rate`: the time from a topic's first record until it holds N, with what a
  process cost over that span (cdcflow and Debezium are timed by it alike);
- :class:`RunningCapture`: a ``cdcflow capture`` child process and its /status endpoint,
  started by :func:`spawn_capture` (or :func:`capture_running`, stopped at the block's end);
- :func:`debezium_missing` and :func:`run_debezium`: whether a Debezium connector can run here,
  and one run of it on a fresh standalone Kafka Connect worker with the full JIT (the test
  fixture of :mod:`tests.services.kafka_connect`), timed from its first record until its topic
  holds every row, with the worker's CPU seconds and peak RSS;
- :func:`warm_kafka` and :func:`warm_kafka_for_drains`: a fresh broker ready, and busy for a
  while first, so that the pipeline measured first does not share the cores with the
  broker's JIT compiler;
- :func:`print_line` and :func:`print_goal`: the report's lines.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from unittest import mock

import yaml
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from cdcflow.operator.devservices import kafka, postgres
from cdcflow.operator.devservices.processes import free_port

if TYPE_CHECKING:  # imported where used: the benches run without the tests package too
    from tests.services.kafka_connect import ConnectWorker

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
WARM_UP_TOPIC = "bench.warm-up"
#: Records per second of :func:`warm_kafka`'s load: the latency bench's rate.
WARM_UP_RATE = 5000
#: The throughput benches warm the broker this long, at this rate, before the first drain.
THROUGHPUT_WARM_UP_S = 45.0
THROUGHPUT_WARM_UP_RATE = 30_000
#: How long a Debezium connector may take to write the whole backlog.
DEBEZIUM_TIMEOUT_S = 1800.0


@dataclass(frozen=True)
class Rate:
    """One measured drain: how long it took, how much it moved, what it cost."""

    seconds: float
    rows: int
    cpu_s: float = 0.0
    peak_rss_mb: float = 0.0

    @property
    def per_s(self) -> float:
        return self.rows / self.seconds if self.seconds > 0 else float("inf")

    @property
    def per_cpu_s(self) -> float:
        """Rows per CPU-second of the measured process (NaN when no CPU time was measured)."""
        return self.rows / self.cpu_s if self.cpu_s else float("nan")


def cpu_seconds(pid: int) -> float:
    """User plus system CPU seconds process ``pid`` (all its threads) has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime


def peak_rss_mb(pid: int) -> float:
    """The peak resident set size of process ``pid`` (``VmHWM``) in MB; 0 when not reported."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def topic_size(consumer: Consumer, topic: str) -> int:
    """Records in partition 0 of ``topic`` (0 while the topic does not exist)."""
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=2)
    except KafkaException:
        return 0
    return int(high - low)


def _status(port: int) -> dict[str, object] | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/status", timeout=2) as reply:
            return dict(json.load(reply))
    except OSError:
        return None


@dataclass(frozen=True)
class RunningCapture:
    """A ``cdcflow capture`` child process and the port of its /status endpoint."""

    process: subprocess.Popen[bytes]
    status_port: int

    def status(self) -> dict[str, object]:
        """Its /status document (empty while it does not answer); exits if it died."""
        if self.process.poll() is not None:
            raise SystemExit(f"capture exited with {self.process.returncode}")
        return _status(self.status_port) or {}

    def peak_rss_mb(self) -> float:
        return peak_rss_mb(self.process.pid)


def postgres_connector(
    server: postgres.PostgresServer,
    broker: kafka.KafkaBroker,
    *,
    name: str,
    config: Mapping[str, object],
    producer: Mapping[str, str] | None = None,
) -> dict[str, object]:
    """A CdcConnector document named ``name`` of ``server``'s ``inventory`` database into
    ``broker``, with ``config`` (Debezium properties) and ``producer`` (librdkafka settings)."""
    return {
        "apiVersion": "cdcflow.io/v1alpha1",
        "kind": "CdcConnector",
        "metadata": {"name": name},
        "spec": {
            "source": {
                "postgresql": {"host": server.host, "port": server.port, "database": "inventory"}
            },
            "kafka": {
                "bootstrapServers": broker.bootstrap_servers,
                "producer": dict(producer or {}),
            },
            "config": dict(config),
        },
    }


def spawn_capture(
    resource: Mapping[str, object],
    *,
    workdir: Path,
    login: tuple[str, str],
    log_level: str = "WARNING",
) -> RunningCapture:
    """``cdcflow capture`` of ``resource`` (a CdcConnector document) as a child process,
    logging in as ``login`` (user, password), with its offsets in ``workdir``."""
    path = workdir / "connector.yaml"
    path.write_text(yaml.safe_dump(dict(resource)))
    port = free_port()
    user, password = login
    env = {**os.environ, "CDCFLOW_DATABASE_USER": user, "CDCFLOW_DATABASE_PASSWORD": password}
    command = [
        sys.executable, "-m", "cdcflow.operator.cli", "capture", "-f", str(path),
        "--offsets-file", str(workdir / "offsets.json"), "--status-port", str(port),
        "--log-level", log_level,
    ]  # fmt: skip
    return RunningCapture(subprocess.Popen(command, env=env), port)


@contextlib.contextmanager
def capture_running(
    resource: Mapping[str, object], *, workdir: Path, login: tuple[str, str]
) -> Iterator[RunningCapture]:
    """:func:`spawn_capture`, once connected; terminated (SIGTERM) when the block ends."""
    running = spawn_capture(resource, workdir=workdir, login=login)
    try:
        while not running.status().get("connected"):
            time.sleep(0.05)
        yield running
    finally:
        running.process.terminate()
        running.process.wait(60)


# -- Debezium ------------------------------------------------------------------------------------


def debezium_missing(*, connector: str, plugin: str, database: str) -> str | None:
    """Why a Debezium connector cannot be measured here (None: it can): ``connector`` names
    the class constant of :mod:`tests.services.kafka_connect` (``MARIADB_CONNECTOR``),
    ``plugin`` a word of its plugin folder's name, ``database`` what the message calls it."""
    try:
        from tests.services import kafka_connect
    except ImportError as error:
        return f"tests.services.kafka_connect does not import ({error})"
    if not hasattr(kafka_connect, connector):
        return f"tests/services/kafka_connect.py has no {connector}"
    if not any(plugin in name for name in kafka_connect.PLUGINS):
        return f"tests/services/kafka_connect.py installs no {database} plugin"
    return None


def run_debezium(
    broker: kafka.KafkaBroker, *, name: str, config: Mapping[str, str], topic: str, rows: int
) -> Rate:
    """Connector ``name`` with ``config`` on a fresh standalone worker with the full JIT: from
    the first record in ``topic`` until it holds ``rows``, with the worker's CPU seconds over
    that span and its peak RSS."""
    from tests.services import kafka_connect

    # The test worker stops the JIT at C1 (it starts faster); a bench gives Debezium the full JIT.
    full_jit = tuple(o for o in kafka_connect.JVM_OPTIONS if "TieredStopAtLevel" not in o)
    consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "bench"})
    try:
        with (
            mock.patch.object(kafka_connect, "JVM_OPTIONS", full_jit),
            kafka_connect.running_connect(broker.bootstrap_servers) as worker,
        ):
            worker.rest.put_connector(name, config)
            worker.rest.wait_running(name, timeout=180)
            return _drain(worker, consumer, name=name, topic=topic, rows=rows)
    finally:
        consumer.close()


def _drain(worker: ConnectWorker, consumer: Consumer, *, name: str, topic: str, rows: int) -> Rate:
    """Poll ``topic`` until it holds ``rows``; raise if the connector failed or stalled."""
    from tests.services import kafka_connect

    def check() -> None:
        kafka_connect.failed_trace(worker.rest.status(name), name=name)

    return topic_rate(consumer, topic=topic, rows=rows, pid=worker.pid, check=check)


@contextlib.contextmanager
def topic_consumer(broker: kafka.KafkaBroker) -> Iterator[Consumer]:
    """A consumer for reading topic sizes (:func:`topic_size`, :func:`topic_rate`)."""
    consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "bench"})
    try:
        yield consumer
    finally:
        consumer.close()


def warm_kafka(
    bootstrap_servers: str,
    *,
    timeout_s: float = 60.0,
    load_s: float = 0.0,
    rate: int = WARM_UP_RATE,
) -> None:
    """Wait until a fresh broker gives idempotent producers their id, so the coordinator's
    start-up ("Coordinator load in progress") is not timed as part of the first drain.

    ``load_s`` > 0 then keeps the broker busy that long with what the measured pipelines will
    ask of it (acks=all lz4 batches at ``rate`` records/s, read back at once):
    a fresh broker's JVM compiles its produce and fetch paths during its first minute of load,
    and on two cores its answers stall for hundreds of ms meanwhile, which would otherwise be
    timed against whichever pipeline runs first."""
    producer = Producer(
        {
            "bootstrap.servers": bootstrap_servers,
            "enable.idempotence": True,
            "linger.ms": 5,
            "compression.type": "lz4",  # the broker validates compressed batches record by record
        }
    )
    producer.produce(WARM_UP_TOPIC, b"ready")
    if producer.flush(timeout_s) > 0:
        raise SystemExit(f"Kafka at {bootstrap_servers} took no record within {timeout_s:.0f} s")
    if load_s <= 0:
        return
    consumer = Consumer(
        {"bootstrap.servers": bootstrap_servers, "group.id": "bench-warm-up", "log_level": 2}
    )
    consumer.assign([TopicPartition(WARM_UP_TOPIC, 0)])
    record = b"x" * 500
    started = time.perf_counter()
    sent = 0
    while (elapsed := time.perf_counter() - started) < load_s:
        while sent < elapsed * rate:
            producer.produce(WARM_UP_TOPIC, record)
            sent += 1
        producer.poll(0)
        consumer.consume(1000, timeout=0.01)
    producer.flush(timeout_s)
    consumer.close()


def warm_kafka_for_drains(bootstrap_servers: str) -> None:
    """:func:`warm_kafka` with the throughput benches' load (the first drain would otherwise
    share the two cores with the broker's JIT compiler)."""
    warm_kafka(bootstrap_servers, load_s=THROUGHPUT_WARM_UP_S, rate=THROUGHPUT_WARM_UP_RATE)


#: How often a drain's ``check`` runs: asking the capture's /status every 50 ms poll cost it
#: 6-20 % of its events/s (each request's handler thread takes the GIL from the event thread);
#: Kafka Connect's REST status is asked as often, for the same treatment.
CHECK_EVERY_S = 1.0


def topic_rate(
    consumer: Consumer,
    *,
    topic: str,
    rows: int,
    pid: int,
    check: Callable[[], object] = lambda: None,
    timeout_s: float = DEBEZIUM_TIMEOUT_S,
) -> Rate:
    """From the first record in ``topic`` until it holds ``rows``: the seconds, process
    ``pid``'s CPU seconds over that span and its peak RSS. The records the topic already held
    at the poll that first saw any are left out of the rate's rows, so a late first poll does
    not inflate it. ``check`` runs once every CHECK_EVERY_S and raises to give up (the process
    died, the connector failed)."""
    first: tuple[float, float, int] | None = None  # wall clock, CPU seconds and size then
    deadline = time.monotonic() + timeout_s
    next_check = 0.0
    while (now := time.monotonic()) < deadline:
        if now >= next_check:
            check()
            next_check = now + CHECK_EVERY_S
        size = topic_size(consumer, topic)
        if first is None and size > 0:
            first = time.perf_counter(), cpu_seconds(pid), size
        if first is not None and size >= rows:
            seconds, cpu = time.perf_counter() - first[0], cpu_seconds(pid) - first[1]
            return Rate(seconds, rows - first[2], cpu, peak_rss_mb(pid))
        time.sleep(0.05)
    raise TimeoutError(f"{topic} holds {topic_size(consumer, topic)} of {rows} records")


def print_line(label: str, text: str) -> None:
    """One line of a bench's report: the label in a column, then the figure."""
    print(f"{label:<44}: {text}")


def print_goal(label: str, ratio: float | None, goal: float) -> None:
    """A measured ratio beside its goal, met or not (``None``: Debezium was not measured)."""
    if ratio is None:
        print_line(label, f"{'-':>10} (goal ≥ {goal:.2f}; Debezium not measured)")
        return
    verdict = "met" if ratio >= goal else "not met"
    print_line(label, f"{ratio:>10.2f} (goal ≥ {goal:.2f}: {verdict})")


def _positive(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return int(text)


def bench_arguments(description: str, *, rows: int, pairs: int | None = None) -> argparse.Namespace:
    """The options every throughput bench takes: ``--rows`` and ``--no-debezium``; with
    ``pairs``, ``--pairs`` (ceiling and cdcflow measured back to back that many times)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--rows", type=int, default=rows)
    if pairs is not None:
        parser.add_argument("--pairs", type=_positive, default=pairs, help="ceiling/cdcflow pairs")
    parser.add_argument("--no-debezium", action="store_true", help="skip the Debezium connector")
    return parser.parse_args()


def debezium_skipped(
    args: argparse.Namespace, *, connector: str, plugin: str, database: str
) -> str | None:
    """Why Debezium is not measured in this run (None: it is)."""
    if args.no_debezium:
        return "skipped (--no-debezium)"
    return debezium_missing(connector=connector, plugin=plugin, database=database)
