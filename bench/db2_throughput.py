"""Drain a backlog of Db2 inserts from the ASN change-data table into Kafka, on an EMULATED Db2.

**Db2 is emulated.** No Db2 server can run on the project's machines, so this bench runs the
Db2 connector against the test suite's emulation of Db2's ASN SQL-replication capture inside
PostgreSQL (``tests/services/db2_emulation``): the ASN control tables, the change-data (CD)
tables and the catalog views live in a PostgreSQL database, a capture agent thread in this
process plays ``asncap`` (logical decoding → CD tables) and the connector talks to it through a
psycopg-based DB-API driver dressed as ``ibm_db``. The figures therefore show what the
connector's polling path costs (queries on CD tables, row decoding, the engine, Kafka), not
how a real Db2 or a real ``asncap`` performs; no Debezium comparison is possible (Debezium's
Db2 connector needs a real Db2 and IBM's JDBC driver).

Starts PostgreSQL and Kafka, installs the emulation, creates ``"DB2INST1"."BENCH"`` and puts it
in capture mode (``ASNCDC.ADDTABLE``), then measures in the same run:

1. the emulated agent's capture rate: N inserts (default 200k, 1000-row transactions) written
   while the agent is stopped, then timed from ``ASNCDCSERVICES('start')`` until every row is
   in the CD table — the emulation's ceiling, not Db2's;
2. the raw ceiling of the polling path: the connector's own :class:`Connection` (the emulation's
   driver, server-side cursor, ``query.fetch.size`` 2000) streaming the CD table with the
   connector's change query (``sql.changes``) over the full LSN window, rows not decoded;
3. the connector's ``ChangeStream`` alone, in this process, from the same resume position:
   the change query, row decoding, update pairing, transactions and source blocks — no engine,
   no serialisation, no Kafka;
4. ``cdcflow capture`` as a child process (``snapshot.mode=no_data``, JSON with schemas, Kafka
   sink). It is started once BEFORE the backlog is written, streams until it saved an offset
   and is stopped; once the backlog is captured it is started again and resumes from that
   offset, so it reads the whole backlog from the CD table. Timed from its first event until
   the offset it saved covers the last commit (Kafka acknowledged every event; offsets are
   saved every ``offset.flush.interval.ms``, 1 s by default), and until the topic holds N
   events; with its CPU seconds over that span and its peak RSS (``--profile FILE`` runs
   this child under cProfile and prints its top functions: the rates then drop);
5. end-to-end latency: single-row commits at a low rate once the backlog is drained, Kafka
   message timestamp (set when the connector produces it) minus the commit time the agent
   recorded (``IBMSNAP_LOGMARKER``); it is set by the agent's sleep interval and the
   connector's ``poll.interval.ms`` (at worst about their sum plus processing), both printed.

    python -m bench.db2_throughput [--rows 200000] [--agent-sleep 0.2] [--poll-ms 100]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC
from pathlib import Path

import psycopg
import yaml
from confluent_kafka import Consumer, KafkaException, TopicPartition

from bench.common import Rate, RunningCapture, cpu_seconds, warm_kafka_for_drains
from cdcflow.capture.connectors.db2 import sql as db2_sql
from cdcflow.capture.connectors.db2.connection import Endpoint, connect, load_driver
from cdcflow.capture.connectors.db2.connector import Db2Connector
from cdcflow.capture.connectors.db2.lsn import Db2Position, Lsn
from cdcflow.capture.connectors.db2.properties import Db2Properties
from cdcflow.capture.filters import Filters
from cdcflow.capture.spi import Offset, RowChange, TxCommit
from cdcflow.operator.devservices import kafka, postgres
from cdcflow.operator.devservices.processes import free_port
from tests.services.db2_emulation import DRIVER_NAME, Db2Emulation, install

REPO = Path(__file__).resolve().parent.parent
SCHEMA = "DB2INST1"
TABLE = "BENCH"
TOPIC = f"bench.{SCHEMA}.{TABLE}"
DDL = (
    f'CREATE TABLE "{SCHEMA}"."{TABLE}" ("ID" BIGINT NOT NULL PRIMARY KEY, '
    '"QTY" INTEGER NOT NULL, "NAME" VARCHAR(64) NOT NULL, "AMOUNT" DECIMAL(12,2), '
    '"CREATED" TIMESTAMP(6) NOT NULL)'
)
INSERT = (
    f'INSERT INTO "{SCHEMA}"."{TABLE}" SELECT g, mod(g, 1000), \'customer \' || g, g / 100.0, '
    "TIMESTAMP '2024-01-01 00:00:00.123456' + g * INTERVAL '1 second' "
    "FROM generate_series(%s::bigint, %s::bigint) g"
)
FETCH_SIZE = 2000
LATENCY_COMMITS = 20
LATENCY_SPACING_S = 0.37  # not a multiple of the agent's or the connector's interval


@dataclass(frozen=True)
class CaptureRun:
    """``cdcflow capture`` draining the backlog, then the latency of single commits."""

    acked: Rate
    in_kafka_s: float
    events_seen: int
    latencies_ms: list[float]


def _write_rows(emulation: Db2Emulation, first: int, last: int) -> None:
    """Insert ids ``first..last`` in 1000-row transactions."""
    with psycopg.connect(emulation.dsn(), autocommit=True) as conn:
        for start in range(first, last + 1, 1000):
            conn.execute(INSERT, (start, min(start + 999, last)))


def _synchpoint(emulation: Db2Emulation) -> Lsn:
    """The agent's position: the last commit it captured (the connector's max LSN)."""
    rows = emulation.query(
        'SELECT "SYNCHPOINT" FROM "ASNCDC"."IBMSNAP_REGISTER" WHERE "GLOBAL_RECORD" = \'Y\''
    )
    return Lsn.of(rows[0][0])


def _cd_table(emulation: Db2Emulation) -> tuple[str, str]:
    rows = emulation.query(
        'SELECT "CD_OWNER", "CD_TABLE" FROM "ASNCDC"."IBMSNAP_REGISTER" '
        'WHERE "SOURCE_OWNER" = %s AND "SOURCE_TABLE" = %s',
        (SCHEMA, TABLE),
    )
    return str(rows[0][0]), str(rows[0][1])


def _agent_drain(emulation: Db2Emulation, rows: int) -> tuple[float, Rate]:
    """Write the backlog with the agent stopped; seconds writing, and the agent's drain."""
    emulation.stop_agent()
    started = time.perf_counter()
    _write_rows(emulation, 1, rows)
    written = time.perf_counter() - started
    started = time.perf_counter()
    emulation.services("start")
    emulation.wait_captured(timeout_s=60 + rows / 200)
    return written, Rate(time.perf_counter() - started, rows)


def _raw_cd_read(emulation: Db2Emulation) -> Rate:
    """The connector's Connection streaming the CD table's change query, rows not decoded."""
    server = emulation.server
    endpoint = Endpoint(
        host=server.host,
        port=server.port,
        database=emulation.database,
        user=server.superuser,
        password=server.superuser_password,
        driver=DRIVER_NAME,
    )
    cd_schema, cd_table = _cd_table(emulation)
    rows = 0
    with connect(endpoint, load_driver(DRIVER_NAME)) as conn:
        started = time.perf_counter()
        _, changes = conn.open(
            db2_sql.changes(cd_schema, cd_table),
            (bytes(16), b"\xff" * 16),
            fetch_size=FETCH_SIZE,
        )
        for _ in changes:
            rows += 1
        elapsed = time.perf_counter() - started
        conn.rollback()
    return Rate(elapsed, rows)


def _connector_alone(emulation: Db2Emulation, resume_at: Lsn, target: Lsn) -> Rate:
    """The connector's :class:`ChangeStream` in this process (the query, row decoding into
    Python values, update pairing, transactions, source blocks), no engine, no Kafka: from
    the resume position to the commit at ``target``."""
    server = emulation.server
    properties = Db2Properties.model_validate(
        {
            "topic.prefix": "bench",
            "table.include.list": f"{SCHEMA}\\.{TABLE}",
            "snapshot.mode": "no_data",
            "db2.driver": DRIVER_NAME,
        }
    )
    endpoint = Endpoint(
        host=server.host,
        port=server.port,
        database=emulation.database,
        user=server.superuser,
        password=server.superuser_password,
        driver=DRIVER_NAME,
    )
    connector = Db2Connector(
        endpoint=endpoint,
        driver=load_driver(DRIVER_NAME),
        properties=properties,
        filters=Filters.from_properties(properties),
        version="bench",
    )
    offset = Db2Position(commit_lsn=resume_at).offset()
    connector.prepare()
    connector.prepare_stream(for_snapshot=False, offset=offset)
    stream = connector.streaming(offset)
    rows = 0
    started = time.perf_counter()
    try:
        for event in stream.events():
            if isinstance(event, RowChange):
                rows += 1
            elif isinstance(event, TxCommit) and _commit_lsn(event.offset) >= target:
                break
        elapsed = time.perf_counter() - started
    finally:
        stream.close()
        connector.conn.close()
    return Rate(elapsed, rows)


def _commit_lsn(offset: Offset) -> Lsn:
    return Lsn.parse(str(offset.get("commit_lsn")))


@contextlib.contextmanager
def start_capture(
    emulation: Db2Emulation,
    broker: kafka.KafkaBroker,
    workdir: Path,
    *,
    poll_ms: int,
    profile: Path | None = None,
) -> Iterator[RunningCapture]:
    """``cdcflow capture`` on the bench table (``snapshot.mode=no_data``: streaming from the
    stored offset, or from the agent's position now without one), JSON with schemas, offsets
    and schema history in ``workdir``; under cProfile when ``profile`` names its output."""
    server = emulation.server
    resource = {
        "apiVersion": "cdcflow.io/v1alpha1",
        "kind": "CdcConnector",
        "metadata": {"name": "bench"},
        "spec": {
            "source": {
                "db2": {"host": server.host, "port": server.port, "database": emulation.database}
            },
            "kafka": {"bootstrapServers": broker.bootstrap_servers},
            "config": {
                "topic.prefix": "bench",
                "table.include.list": f"{SCHEMA}\\.{TABLE}",
                "snapshot.mode": "no_data",
                "poll.interval.ms": str(poll_ms),
                "schema.history.internal": "io.debezium.storage.file.history.FileSchemaHistory",
                "schema.history.internal.file.filename": str(workdir / "history.jsonl"),
                "db2.driver": DRIVER_NAME,
            },
        },
    }
    path = workdir / "connector.yaml"
    path.write_text(yaml.safe_dump(resource))
    port = free_port()
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
        "CDCFLOW_DATABASE_USER": server.superuser,
        "CDCFLOW_DATABASE_PASSWORD": server.superuser_password,
    }
    profiler = ["-m", "cProfile", "-o", str(profile)] if profile is not None else []
    command = [
        sys.executable, *profiler, "-m", "cdcflow.operator.cli", "capture", "-f", str(path),
        "--offsets-file", str(workdir / "offsets.json"), "--status-port", str(port),
        "--log-level", "WARNING",
    ]  # fmt: skip
    process = subprocess.Popen(command, env=env, cwd=REPO)
    try:
        running = RunningCapture(process, port)
        deadline = time.monotonic() + 120
        while not running.status().get("connected"):
            if time.monotonic() > deadline:
                raise SystemExit("cdcflow capture did not connect within 120 s")
            time.sleep(0.05)
        yield running
    finally:
        process.terminate()
        process.wait(60)


def _saved_lsn(status: dict[str, object]) -> Lsn | None:
    offset = status.get("offset")
    if not isinstance(offset, dict) or not isinstance(offset.get("commit_lsn"), str):
        return None
    return Lsn.parse(str(offset["commit_lsn"]))


def _events_seen(status: dict[str, object]) -> int:
    streaming = status.get("streaming") or {}
    return int(streaming.get("totalEventsSeen", 0)) if isinstance(streaming, dict) else 0


def _first_offset(
    emulation: Db2Emulation, broker: kafka.KafkaBroker, workdir: Path, *, poll_ms: int
) -> Lsn:
    """Start the connector on an idle table and stop it once it saved a streaming offset: the
    offset the second start resumes from, before any row of the backlog."""
    with start_capture(emulation, broker, workdir, poll_ms=poll_ms) as capture:
        deadline = time.monotonic() + 60
        while (saved := _saved_lsn(capture.status())) is None:
            if time.monotonic() > deadline:
                raise SystemExit(f"no offset saved within 60 s: {capture.status()}")
            time.sleep(0.05)
    return saved


def _partitions(consumer: Consumer) -> list[int]:
    topics = consumer.list_topics(TOPIC, timeout=10).topics
    metadata = topics.get(TOPIC)
    if metadata is None or metadata.error is not None:
        return []
    return sorted(metadata.partitions)


def _watermarks(consumer: Consumer) -> dict[int, int]:
    """High watermark of each partition of the bench topic (none yet: empty)."""
    marks: dict[int, int] = {}
    for partition in _partitions(consumer):
        try:
            _, high = consumer.get_watermark_offsets(TopicPartition(TOPIC, partition), timeout=5)
        except KafkaException:
            continue
        marks[partition] = int(high)
    return marks


def _latencies(
    emulation: Db2Emulation, consumer: Consumer, capture: RunningCapture, rows: int
) -> list[float]:
    """Single-row commits (ids after the backlog) spaced LATENCY_SPACING_S apart; for each,
    Kafka's message timestamp minus the commit time the agent recorded (ms)."""
    start_marks = _watermarks(consumer)
    with psycopg.connect(emulation.dsn(), autocommit=True) as conn:
        for index in range(LATENCY_COMMITS):
            conn.execute(INSERT, (rows + 1 + index, rows + 1 + index))
            time.sleep(LATENCY_SPACING_S)
    wanted = set(range(rows + 1, rows + 1 + LATENCY_COMMITS))
    consumer.assign([TopicPartition(TOPIC, p, o) for p, o in start_marks.items()])
    produced: dict[int, int] = {}
    deadline = time.monotonic() + 60
    while not wanted <= produced.keys():
        capture.status()  # exits if the capture died
        if time.monotonic() > deadline:
            raise SystemExit(f"only {len(produced)} of {LATENCY_COMMITS} latency events arrived")
        message = consumer.poll(0.5)
        if message is None or message.error() is not None:
            continue
        key = message.key()
        if key is None:
            continue
        payload = json.loads(key)["payload"]
        _, timestamp_ms = message.timestamp()
        produced[int(payload["ID"])] = int(timestamp_ms)
    cd_schema, cd_table = _cd_table(emulation)
    commits = emulation.query(
        f'SELECT "ID", "IBMSNAP_LOGMARKER" FROM "{cd_schema}"."{cd_table}" WHERE "ID" > %s',
        (rows,),
    )
    latencies = []
    for row_id, logmarker in commits:
        committed_ms = logmarker.replace(tzinfo=UTC).timestamp() * 1000
        latencies.append(produced[int(row_id)] - committed_ms)
    return latencies


def _run_capture(
    emulation: Db2Emulation,
    broker: kafka.KafkaBroker,
    workdir: Path,
    *,
    rows: int,
    target: Lsn,
    poll_ms: int,
    profile: Path | None,
) -> CaptureRun:
    """The resumed connector: first event to the offset covering ``target`` (and to the topic
    holding ``rows`` events), then the latency commits."""
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": "bench-db2",
            "enable.auto.commit": False,
        }
    )
    first_event = first_cpu = in_kafka = None
    try:
        with start_capture(emulation, broker, workdir, poll_ms=poll_ms, profile=profile) as capture:
            pid = capture.process.pid
            deadline = time.monotonic() + 600 + rows / 100
            while True:
                status = capture.status()
                seen = _events_seen(status)
                now = time.perf_counter()
                if first_event is None and seen > 0:
                    first_event, first_cpu = now, cpu_seconds(pid)
                if in_kafka is None and sum(_watermarks(consumer).values()) >= rows:
                    in_kafka = now
                saved = _saved_lsn(status)
                if saved is not None and saved >= target:
                    done, cpu = now, cpu_seconds(pid)
                    break
                if time.monotonic() > deadline:
                    raise SystemExit(f"the backlog was not drained in time: {status}")
                time.sleep(0.05)
            rss = capture.peak_rss_mb()
            while in_kafka is None:  # acknowledged means in Kafka: only a slow poll misses it
                if sum(_watermarks(consumer).values()) >= rows:
                    in_kafka = time.perf_counter()
            latencies = _latencies(emulation, consumer, capture, rows)
    finally:
        consumer.close()
    assert first_event is not None and first_cpu is not None
    acked = Rate(done - first_event, rows, cpu - first_cpu, rss)
    return CaptureRun(acked, in_kafka - first_event, seen, latencies)


def _print_profile(profile: Path, top: int = 25) -> None:
    import pstats

    if not profile.exists():
        print(f"no profile written at {profile}")
        return
    for order in ("tottime", "cumulative"):
        print(f"\n-- capture child, top {top} by {order} --")
        pstats.Stats(str(profile)).sort_stats(order).print_stats(top)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument(
        "--agent-sleep", type=float, default=0.2, help="the emulated agent's sleep (s)"
    )
    parser.add_argument("--poll-ms", type=int, default=100, help="the connector's poll.interval.ms")
    parser.add_argument(
        "--profile", type=Path, help="run the draining capture child under cProfile, output here"
    )
    args = parser.parse_args()
    rows: int = args.rows
    poll_ms: int = args.poll_ms
    agent_sleep: float = args.agent_sleep
    with (
        postgres.running_postgres() as server,
        kafka.running_kafka() as broker,
        tempfile.TemporaryDirectory() as tmp,
    ):
        workdir = Path(tmp)
        warm_kafka_for_drains(broker.bootstrap_servers)
        emulation = install(server, database="db2bench", sleep_s=agent_sleep)
        try:
            emulation.execute(f'CREATE SCHEMA "{SCHEMA}"', DDL)
            emulation.add_table(SCHEMA, TABLE)
            resume_at = _first_offset(emulation, broker, workdir, poll_ms=poll_ms)
            written_s, agent = _agent_drain(emulation, rows)
            target = _synchpoint(emulation)
            print(
                f"backlog: {rows:,} inserts in {-(-rows // 1000)} transactions written in "
                f"{written_s:.1f}s; connector resumes after {resume_at}, last commit {target}"
            )
            raw = _raw_cd_read(emulation)
            if raw.rows != rows:
                raise SystemExit(f"the CD table holds {raw.rows} rows, not {rows}")
            alone = _connector_alone(emulation, resume_at, target)
            run = _run_capture(
                emulation,
                broker,
                workdir,
                rows=rows,
                target=target,
                poll_ms=poll_ms,
                profile=args.profile,
            )
        finally:
            emulation.close()
    acked = run.acked
    lat = sorted(run.latencies_ms)
    print("Db2 is EMULATED (ASN capture played inside PostgreSQL): not Db2's own figures.")
    print(f"emulated agent → CD table            : {agent.per_s:>10,.0f} rows/s "
          f"({agent.seconds:.1f} s; the emulation's ceiling, not Db2's)")  # fmt: skip
    print(f"raw CD read, connector's Connection  : {raw.per_s:>10,.0f} rows/s "
          f"({raw.rows:,} rows in {raw.seconds:.1f} s, not decoded: the ceiling)")  # fmt: skip
    print(
        f"connector ChangeStream (no engine)   : {alone.per_s:>10,.0f} rows/s "
        f"({alone.rows:,} rows decoded in {alone.seconds:.1f} s; "
        f"{alone.per_s / raw.per_s:.2f} of the ceiling)"
    )
    print(
        f"cdcflow capture → Kafka (acked)      : {acked.per_s:>10,.0f} events/s "
        f"({acked.seconds:.1f} s; {acked.per_s / raw.per_s:.2f} of the ceiling)"
    )
    in_kafka = rows / run.in_kafka_s
    print(
        f"cdcflow capture → Kafka (in topic)   : {in_kafka:>10,.0f} events/s "
        f"({run.in_kafka_s:.1f} s; {in_kafka / raw.per_s:.2f} of the ceiling)"
    )
    print(
        f"capture CPU while draining           : {acked.cpu_s:>10.1f} s "
        f"({acked.cpu_s / acked.seconds:.2f} cores; "
        f"{acked.cpu_s * 1e6 / rows:.0f} µs CPU per event)"
    )
    print(f"capture peak RSS                     : {acked.peak_rss_mb:>10.0f} MB")
    print(f"events counted by /status            : {run.events_seen:>10,}")
    print(
        f"commit → Kafka latency ({len(lat)} commits) : median {statistics.median(lat):.0f} ms, "
        f"min {lat[0]:.0f}, max {lat[-1]:.0f}, mean {statistics.fmean(lat):.0f} "
        f"(agent sleep {agent_sleep * 1000:.0f} ms, poll.interval.ms {poll_ms})"
    )
    print("Debezium Db2 connector               : not measured (it needs a real Db2)")
    if args.profile is not None:
        _print_profile(args.profile)


if __name__ == "__main__":
    main()
