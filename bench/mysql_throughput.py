"""Drain a backlog of MariaDB inserts from the binlog into Kafka and compare with the library.

Starts MariaDB 10.11 (binlog ready for CDC) and Kafka, writes N inserts (default 500k, in
1000-row transactions) into a moderately wide table, then measures in the same run, one after
another over the same binlog range:

1. python-mysql-replication alone: ``BinLogStreamReader`` reading the range, once without
   touching rows (event framing only) and once decoding every row (iterating each row's values);
2. cdcflow's binlog reader alone (its helper thread and row decoding, no engine, no Kafka);
3. ``cdcflow capture`` as a child process (MariaDB source, ``snapshot.mode=never``: the whole
   binlog, JSON with schemas, Kafka sink), timed from its first event until the offset it saved
   covers the backlog, i.e. until Kafka acknowledged every event; with its CPU seconds over
   that span and its peak RSS;
4. the Debezium MariaDB connector on a standalone Kafka Connect worker (JSON with schemas too,
   full JIT), timed from its first record until the topic holds every row, with the worker's
   CPU seconds and peak RSS, when the worker and the plugin are available (``--no-debezium``
   skips it).

    python -m bench.mysql_throughput [--rows 500000] [--no-debezium]
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pymysql
from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.event import XidEvent
from pymysqlreplication.row_event import WriteRowsEvent

from bench.common import (
    Rate,
    RunningCapture,
    bench_arguments,
    capture_running,
    cpu_seconds,
    debezium_skipped,
    run_debezium,
    warm_kafka_for_drains,
)
from cdcflow.capture.connectors.mysql import binlog
from cdcflow.operator.devservices import kafka
from tests.services import mariadb

TARGET_EVENTS_PER_S = 50_000
TARGET_RSS_MB = 150  # the memory budget at these rates
TABLE = "bench"
SCHEMA = (
    f"CREATE TABLE {TABLE} (id bigint PRIMARY KEY, qty int NOT NULL, store smallint NOT NULL, "
    "views bigint NOT NULL, name varchar(64) NOT NULL, amount decimal(12,2), "
    "created datetime(6) NOT NULL)"
)
#: Replication server ids of the bench's own readers (the server is 1, cdcflow 5400-6400).
RAW_SERVER_ID = 7001
READER_SERVER_ID = 7002
DEBEZIUM_SERVER_ID = 7003


@dataclass(frozen=True, order=True)
class BinlogPoint:
    """A binlog position, ordered by file number then offset; ``gtids`` is the server's
    ``gtid_binlog_pos`` there (readers start from it: python-mysql-replication cannot start a
    MariaDB stream at a file and offset)."""

    number: int
    pos: int
    file: str = field(compare=False)
    gtids: str = field(default="", compare=False)

    @classmethod
    def at(cls, file: str, pos: int, gtids: str = "") -> BinlogPoint:
        return cls(int(file.rpartition(".")[2]), pos, file, gtids)


def connect_root(server: mariadb.MariaDbServer) -> pymysql.Connection[Any]:
    settings = server.connection_settings()
    return pymysql.connect(
        host=str(settings["host"]),
        port=int(settings["port"]),
        user=str(settings["user"]),
        password=str(settings["password"]),
        database=server.database,
        autocommit=True,
    )


def _master_status(server: mariadb.MariaDbServer) -> BinlogPoint:
    with connect_root(server) as conn, conn.cursor() as cursor:
        cursor.execute("SHOW MASTER STATUS")
        row = cursor.fetchone()
        assert row is not None, "the server writes no binlog"
        cursor.execute("SELECT @@gtid_binlog_pos")
        (gtids,) = cursor.fetchone() or ("",)
        return BinlogPoint.at(str(row[0]), int(row[1]), str(gtids))


def _write_backlog(server: mariadb.MariaDbServer, rows: int) -> None:
    with connect_root(server) as conn, conn.cursor() as cursor:
        for start in range(1, rows + 1, 1000):
            end = min(start + 999, rows)
            cursor.execute(
                f"INSERT INTO {TABLE} SELECT seq, seq % 1000, seq % 50, seq * 7, "
                "CONCAT('customer ', seq), seq / 100, "
                "TIMESTAMP '2024-01-01 00:00:00.123456' + INTERVAL seq SECOND "
                f"FROM seq_{start}_to_{end}"
            )


def _reader_settings(server: mariadb.MariaDbServer) -> dict[str, Any]:
    """What cdcflow's connector connects with: the ``cdc`` login, utf8mb4."""
    return {**server.connection_settings(cdc=True), "charset": "utf8mb4"}


def _raw_library(
    server: mariadb.MariaDbServer, start: BinlogPoint, end: BinlogPoint, *, decode: bool
) -> Rate:
    """python-mysql-replication over [start, end) with every row's values decoded (not
    ``decode``: the events parsed but their rows left alone, ``rows`` stays 0)."""
    started = time.perf_counter()
    reader = BinLogStreamReader(
        connection_settings=_reader_settings(server),
        server_id=RAW_SERVER_ID,
        auto_position=start.gtids,
        resume_stream=True,
        blocking=True,  # MariaDB 10.11 reset non-blocking dumps of this binlog part way
        is_mariadb=True,
        only_events=[WriteRowsEvent, XidEvent],
    )
    rows, touched = 0, 0
    for event in reader:
        if decode and isinstance(event, WriteRowsEvent):
            for row in event.rows:
                rows += 1
                for value in row["values"].values():
                    touched += value is not None
        if BinlogPoint.at(reader.log_file, reader.log_pos) >= end:
            break
    elapsed = time.perf_counter() - started
    reader.close()
    assert not decode or touched == rows * 7, "the library lost values"
    return Rate(elapsed, rows)


def _cdcflow_reader(server: mariadb.MariaDbServer, start: BinlogPoint, end: BinlogPoint) -> Rate:
    """cdcflow's :class:`~binlog.BinlogReader` over [start, end): items only, no engine."""
    started = time.perf_counter()
    reader = binlog.BinlogReader(
        _reader_settings(server),
        server_id=READER_SERVER_ID,
        start=binlog.StartAt(gtids=start.gtids),
        mariadb=True,
        queue_size=8192,
    )
    rows = 0
    try:
        while True:
            item = reader.next(10.0)
            if item is None:
                raise SystemExit("cdcflow's binlog reader stalled before the end of the backlog")
            if isinstance(item, binlog.Rows):
                rows += len(item.rows)
            elif isinstance(item, binlog.Commit) and _point(item.header) >= end:
                break
    finally:
        elapsed = time.perf_counter() - started
        reader.close()
    return Rate(elapsed, rows)


def _point(header: binlog.Header) -> BinlogPoint:
    return BinlogPoint.at(header.file, header.next_pos)


@contextlib.contextmanager
def start_capture(
    server: mariadb.MariaDbServer,
    broker: kafka.KafkaBroker,
    workdir: Path,
    config: dict[str, str] | None = None,
) -> Iterator[RunningCapture]:
    """``cdcflow capture`` on the bench table, reading the whole binlog (``snapshot.mode=
    never``), the connector's defaults otherwise (JSON with schemas, offsets in a file), with
    ``config`` added."""
    resource = {
        "apiVersion": "cdcflow.io/v1alpha1",
        "kind": "CdcConnector",
        "metadata": {"name": "bench"},
        "spec": {
            "source": {"mariadb": {"host": server.host, "port": server.port}},
            "kafka": {"bootstrapServers": broker.bootstrap_servers},
            "config": {
                "topic.prefix": "bench",
                "table.include.list": f"{server.database}\\.{TABLE}",
                "snapshot.mode": "never",
                "schema.history.internal": "io.debezium.relational.history.MemorySchemaHistory",
                **(config or {}),
            },
        },
    }
    login = (server.cdc_user, server.cdc_password)
    with capture_running(resource, workdir=workdir, login=login) as running:
        yield running


def _saved_point(status: dict[str, object]) -> BinlogPoint | None:
    offset = status.get("offset")
    if not isinstance(offset, dict) or "file" not in offset:
        return None
    return BinlogPoint.at(str(offset["file"]), int(offset["pos"]))


def _run_capture(
    server: mariadb.MariaDbServer, broker: kafka.KafkaBroker, workdir: Path, end: BinlogPoint
) -> tuple[Rate, int]:
    """The drain from first event to everything acknowledged; and the events /status counted."""
    first_event = first_cpu = None
    with start_capture(server, broker, workdir) as capture:
        pid = capture.process.pid
        while True:
            status = capture.status()
            streaming = status.get("streaming") or {}
            seen = int(streaming.get("totalEventsSeen", 0)) if isinstance(streaming, dict) else 0
            if first_event is None and seen > 0:
                first_event, first_cpu = time.perf_counter(), cpu_seconds(pid)
            saved = _saved_point(status)
            if saved is not None and saved >= end:
                done, cpu = time.perf_counter(), cpu_seconds(pid)
                break
            time.sleep(0.05)
        rss = capture.peak_rss_mb()
    assert first_event is not None and first_cpu is not None
    return Rate(done - first_event, seen, cpu - first_cpu, rss), seen


# -- Debezium ------------------------------------------------------------------------------------


def _run_debezium(
    server: mariadb.MariaDbServer, broker: kafka.KafkaBroker, *, workdir: Path, rows: int
) -> Rate:
    """Debezium's MariaDB connector over the whole binlog: first record to every row in Kafka."""
    from tests.services import kafka_connect

    config = {
        "connector.class": kafka_connect.MARIADB_CONNECTOR,
        "tasks.max": "1",
        "database.hostname": server.host,
        "database.port": str(server.port),
        "database.user": server.cdc_user,
        "database.password": server.cdc_password,
        "database.server.id": str(DEBEZIUM_SERVER_ID),
        "topic.prefix": "dbz",
        "table.include.list": f"{server.database}\\.{TABLE}",
        "snapshot.mode": "never",
        "schema.history.internal": "io.debezium.storage.file.history.FileSchemaHistory",
        "schema.history.internal.file.filename": str(workdir / "dbz-history.dat"),
    }
    topic = f"dbz.{server.database}.{TABLE}"
    return run_debezium(broker, name="dbz", config=config, topic=topic, rows=rows)


def main() -> None:
    args = bench_arguments(__doc__.splitlines()[0], rows=500_000)
    rows: int = args.rows
    not_measured = debezium_skipped(
        args, connector="MARIADB_CONNECTOR", plugin="mariadb", database="MariaDB"
    )
    debezium: Rate | None = None
    with mariadb.running_mariadb() as server, kafka.running_kafka() as broker:
        warm_kafka_for_drains(broker.bootstrap_servers)
        with connect_root(server) as conn, conn.cursor() as cursor:
            cursor.execute(SCHEMA)
        start = _master_status(server)
        started = time.perf_counter()
        _write_backlog(server, rows)
        end = _master_status(server)
        print(
            f"backlog: {rows} inserts in {-(-rows // 1000)} transactions written in "
            f"{time.perf_counter() - started:.1f}s ({(end.pos - start.pos) / 2**20:.0f} MB "
            "of binlog)"
        )
        framing = _raw_library(server, start, end, decode=False)
        raw = _raw_library(server, start, end, decode=True)
        reader = _cdcflow_reader(server, start, end)
        with tempfile.TemporaryDirectory() as workdir:
            capture, seen = _run_capture(server, broker, Path(workdir), end)
            if not_measured is None:
                try:
                    debezium = _run_debezium(server, broker, workdir=Path(workdir), rows=rows)
                except Exception as error:  # reported beside the results
                    not_measured = f"failed: {type(error).__name__}: {error}"
    rate = rows / capture.seconds
    print(f"library, rows not decoded            : {rows / framing.seconds:>10,.0f} rows/s")
    print(f"library row decoding (raw ceiling)   : {raw.per_s:>10,.0f} rows/s ({raw.rows} rows)")
    print(f"cdcflow binlog reader (no engine)    : {reader.per_s:>10,.0f} rows/s")
    print(
        f"cdcflow capture → Kafka (acked)      : {rate:>10,.0f} events/s "
        f"(target ≥ {TARGET_EVENTS_PER_S:,}/s)"
    )
    print(f"ratio to the library's decode rate   : {rate / raw.per_s:>10.2f}")
    print(
        f"capture CPU while draining           : {capture.cpu_s:>10.1f} s "
        f"({capture.cpu_s / capture.seconds:.2f} cores, {capture.seconds:.1f} s wall)"
    )
    print(f"capture peak RSS                     : {capture.peak_rss_mb:>10.0f} MB "
          f"(target < {TARGET_RSS_MB} MB)")  # fmt: skip
    print(f"events counted by /status            : {seen:>10,}")
    if debezium is not None:
        print(
            f"Debezium MariaDB → Kafka             : {debezium.per_s:>10,.0f} events/s "
            f"({debezium.cpu_s:.1f} CPU s, worker peak RSS {debezium.peak_rss_mb:.0f} MB)"
        )
    else:
        print(f"Debezium MariaDB connector           : not measured, {not_measured}")


if __name__ == "__main__":
    main()
