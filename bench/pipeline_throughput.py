"""Drain a backlog of inserts through `cdcflow capture` into Kafka and compare with the ceiling.

Writes N inserts (default 500k, in 1000-row transactions) while the connector is stopped, then
starts ``cdcflow capture`` as a child process (JSON with schemas, Kafka sink) and times how
long it takes until the offset it saved covers the backlog, i.e. until Kafka acknowledged
every event. In the same run a bare Python receive loop on a second slot measures the raw
pgoutput rate the server and psycopg deliver: the ceiling the pipeline is compared to.
Also reports the capture process's peak RSS.

    python -m bench.pipeline_throughput [--rows 500000]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import yaml

from cdcflow.capture.connectors.postgres import pgoutput
from cdcflow.capture.connectors.postgres.connection import Endpoint, connect_replication
from cdcflow.capture.connectors.postgres.replication import ReplicationStream
from cdcflow.operator.devservices import kafka, postgres
from cdcflow.operator.devservices.processes import free_port

TARGET_EVENTS_PER_S = 50_000
TARGET_RSS_MB = 300
SCHEMA = (
    "CREATE TABLE bench (id bigint PRIMARY KEY, name text NOT NULL, amount numeric(10,2), "
    "created timestamp NOT NULL DEFAULT now(), active boolean NOT NULL DEFAULT true)"
)


def _write_backlog(dsn: str, rows: int) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        for start in range(0, rows, 1000):
            conn.execute(
                "INSERT INTO bench (id, name, amount) SELECT g, 'customer ' || g, g / 100.0 "
                "FROM generate_series(%s::bigint, %s::bigint) g",
                (start + 1, min(start + 1000, rows)),
            )


def _raw_ceiling(server: postgres.PostgresServer, target: int) -> tuple[float, int]:
    """Seconds and row messages for a bare receive loop (frames only) over the same WAL."""
    endpoint = Endpoint(
        host=server.host,
        port=server.port,
        database=server.database,
        user=server.superuser,
        password=server.superuser_password,
    )
    stream = ReplicationStream(connect_replication(endpoint))
    stream.start(slot="bench_raw", publication="bench", start_lsn=0, messages=False)
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
    return elapsed, rows


def _status(port: int) -> dict[str, object] | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/status", timeout=2) as reply:
            return dict(json.load(reply))
    except OSError:
        return None


def _peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


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
        return _peak_rss_mb(self.process.pid)


@contextlib.contextmanager
def start_capture(
    server: postgres.PostgresServer,
    broker: kafka.KafkaBroker,
    workdir: Path,
    config: dict[str, str] | None = None,
    producer: dict[str, str] | None = None,
) -> Iterator[RunningCapture]:
    """``cdcflow capture`` on the bench slot and publication, the connector's defaults
    otherwise (JSON with schemas, offsets in a file), with ``config`` added and ``producer``
    (librdkafka settings, ``spec.kafka.producer``)."""
    resource = {
        "apiVersion": "cdcflow.io/v1alpha1",
        "kind": "CdcConnector",
        "metadata": {"name": "bench"},
        "spec": {
            "source": {
                "postgresql": {"host": server.host, "port": server.port, "database": "inventory"}
            },
            "kafka": {"bootstrapServers": broker.bootstrap_servers, "producer": producer or {}},
            "config": {
                "topic.prefix": "bench",
                "slot.name": "bench",
                "publication.name": "bench",
                "snapshot.mode": "never",
                **(config or {}),
            },
        },
    }
    path = workdir / "connector.yaml"
    path.write_text(yaml.safe_dump(resource))
    port = free_port()
    env = {
        **os.environ,
        "CDCFLOW_DATABASE_USER": server.superuser,
        "CDCFLOW_DATABASE_PASSWORD": server.superuser_password,
    }
    command = [
        sys.executable, "-m", "cdcflow.operator.cli", "capture", "-f", str(path),
        "--offsets-file", str(workdir / "offsets.json"), "--status-port", str(port),
        "--log-level", "WARNING",
    ]  # fmt: skip
    process = subprocess.Popen(command, env=env)
    try:
        running = RunningCapture(process, port)
        while not running.status().get("connected"):
            time.sleep(0.05)
        yield running
    finally:
        process.terminate()
        process.wait(60)


def _run_capture(
    server: postgres.PostgresServer, broker: kafka.KafkaBroker, workdir: Path, target: int
) -> tuple[float, float, int]:
    """Seconds from first event to everything acknowledged, peak RSS (MB), events."""
    first_event = None
    with start_capture(server, broker, workdir) as capture:
        while True:
            status = capture.status()
            streaming = status.get("streaming") or {}
            seen = int(streaming.get("totalEventsSeen", 0)) if isinstance(streaming, dict) else 0
            if first_event is None and seen > 0:
                first_event = time.perf_counter()
            offset = status.get("offset") or {}
            if isinstance(offset, dict) and int(offset.get("lsn", 0)) >= target:
                done = time.perf_counter()
                break
            time.sleep(0.05)
        rss = capture.peak_rss_mb()
    assert first_event is not None
    return done - first_event, rss, seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=500_000)
    rows = parser.parse_args().rows
    with postgres.running_postgres() as server, kafka.running_kafka() as broker:
        dsn = server.dsn()
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(SCHEMA)
            conn.execute("CREATE PUBLICATION bench FOR TABLE bench")
            conn.execute("SELECT pg_create_logical_replication_slot('bench', 'pgoutput')")
            conn.execute("SELECT pg_create_logical_replication_slot('bench_raw', 'pgoutput')")
        started = time.perf_counter()
        _write_backlog(dsn, rows)
        print(
            f"backlog: {rows} inserts in {rows // 1000} transactions written in "
            f"{time.perf_counter() - started:.1f}s"
        )
        with psycopg.connect(dsn, autocommit=True) as conn:
            (target,) = conn.execute("SELECT pg_current_wal_lsn() - '0/0'::pg_lsn").fetchone() or (
                0,
            )
        raw_s, raw_rows = _raw_ceiling(server, int(target))
        with tempfile.TemporaryDirectory() as workdir:
            seconds, rss, seen = _run_capture(server, broker, Path(workdir), int(target))
    raw_rate, rate = raw_rows / raw_s, rows / seconds
    print(f"raw pgoutput receive ceiling        : {raw_rate:>10,.0f} rows/s ({raw_rows} rows)")
    print(
        f"cdcflow capture → Kafka (acked)      : {rate:>10,.0f} events/s "
        f"(target ≥ {TARGET_EVENTS_PER_S:,}/s; Debezium publishes ~45,000/s on 4 vCPU)"
    )
    print(f"ratio to the raw ceiling            : {rate / raw_rate:>10.2f}")
    print(f"capture peak RSS                    : {rss:>10.0f} MB (target < {TARGET_RSS_MB} MB)")
    print(f"events counted by /status           : {seen:>10,}")


if __name__ == "__main__":
    main()
