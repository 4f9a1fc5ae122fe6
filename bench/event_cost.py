"""CPU per event of cdcflow's PostgreSQL paths on the thread that does the work: where a
change to the hot path shows first.

The throughput benches time the whole machine (PostgreSQL, Kafka, the capture) and move by
±20 % between runs on a shared 2-core host; this one measures the capture's own event work
alone, on the thread that does it, so that two builds can be compared run against run (see
docs/performance.md). It starts PostgreSQL and Kafka, fills bench.pipeline_throughput's table
with N rows (default 200,000) in 1,000-row transactions, keeps the pgoutput frames of those
inserts (read once from a slot with ``pg_logical_slot_peek_binary_changes``) and then,
``--loops`` times each, reports the least thread CPU per event of:

1. the snapshot reader alone (server-side cursor, values converted), the ceiling of 2.;
2. the snapshot: rows read, converted, enveloped and serialised into a sink that drops them;
3. streaming: the kept frames decoded, converted, enveloped and serialised, through the
   engine's stream loop, into the same sink;
4. the same into the Kafka sink on a real broker: what ``produce`` (with Debezium's context
   headers) and serving the delivery reports add on the event thread, the final flush
   included; librdkafka's own threads (batching, compression, the socket) are not counted.

    python -m bench.event_cost [--rows 200000] [--loops 5]
"""

from __future__ import annotations

import argparse
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import psycopg
from psycopg.types.string import TextLoader

from bench import pipeline_throughput
from bench.common import print_line
from cdcflow.capture.connectors.postgres import pgoutput, snapshotter
from cdcflow.capture.connectors.postgres.connector import SOURCE_SCHEMA
from cdcflow.capture.connectors.postgres.properties import parse_properties
from cdcflow.capture.connectors.postgres.source import PostgresStream, SourceBlock
from cdcflow.capture.connectors.postgres.tables import DecodedTable, TableCatalog
from cdcflow.capture.connectors.postgres.types import TypeOptions
from cdcflow.capture.envelope import Framing, context_headers
from cdcflow.capture.filters import Filters
from cdcflow.capture.kafka.producer import KafkaSink
from cdcflow.capture.pipeline import Dispatcher, Pipeline
from cdcflow.capture.spi import Offset, Record, RowChange, Sink, TableId
from cdcflow.capture.stats import Stats
from cdcflow.capture.topics import TopicNames
from cdcflow.operator.devservices import kafka, postgres

PROPERTIES = parse_properties({"topic.prefix": "bench"})
#: The source block of every event here.
BLOCK = SourceBlock(version="3.7.0.Final", server="bench", database="postgres")
#: The slot whose changes are kept (peeked, never consumed).
SLOT = "cost"
Frame = pgoutput.XLogData | pgoutput.Keepalive


class CountingSink:
    """Counts the records and drops them."""

    def __init__(self) -> None:
        self.records = 0

    def write(self, record: Record) -> None:
        self.records += 1

    def flush(self) -> None:
        return None

    def close(self) -> None:
        return None


class NoOffsets:
    """Keeps no position: nothing here restarts."""

    def load(self) -> Offset | None:
        return None

    def save(self, offset: Offset) -> None:
        return None

    def reset(self) -> None:
        return None

    def close(self) -> None:
        return None


class KeptFrames:
    """The kept frames as a replication stream; sets ``stop`` once they are all read."""

    def __init__(self, frames: Sequence[Frame], stop: threading.Event) -> None:
        self._frames = iter(frames)
        self._stop = stop

    def read(self, timeout: float) -> Frame | None:
        frame = next(self._frames, None)
        if frame is None:
            self._stop.set()
        return frame

    def send_status(
        self, *, flushed: int, received: int, reply: bool = False, timeout: float | None = None
    ) -> bool:
        return True

    def close(self) -> None:
        return None


def _fill(dsn: str, rows: int) -> list[Frame]:
    """The table filled as bench.pipeline_throughput fills it; the pgoutput frames of those
    inserts, read from a slot made before them."""
    pipeline_throughput.prepare(dsn, slots=[SLOT])
    pipeline_throughput.write_backlog(dsn, rows)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("VACUUM (FREEZE, ANALYZE) bench")
        changes = conn.execute(
            "SELECT lsn, data FROM pg_logical_slot_peek_binary_changes(%s, NULL, NULL, "
            "'proto_version', '1', 'publication_names', 'bench')",
            (SLOT,),
        ).fetchall()
    frames: list[Frame] = []
    for lsn, data in changes:
        position = pgoutput.parse_lsn(str(lsn))
        frames.append(pgoutput.XLogData(position, position, 0, bytes(data)))
    return frames


def _framing() -> Framing:
    return Framing(
        topics=TopicNames.from_properties(PROPERTIES),
        source_schema=SOURCE_SCHEMA,
        context_headers=context_headers(logical_name="bench", connector_name="bench", run_id="1"),
    )


def _pipeline(stop: threading.Event, sink: Sink) -> Pipeline:
    stats = Stats(connector="bench", server="bench")
    dispatcher = Dispatcher(
        properties=PROPERTIES,
        framing=_framing(),
        filters=Filters.from_properties(PROPERTIES),
        sink=sink,
        stats=stats,
    )
    return Pipeline(
        dispatcher=dispatcher,
        sink=sink,
        offsets=NoOffsets(),
        properties=PROPERTIES,
        stats=stats,
        stop=stop,
    )


def _least_cpu_per_event(run: Callable[[], int], loops: int) -> float:
    """The least thread CPU microseconds per event of ``loops`` runs (``run`` returns its
    event count): the run least disturbed by the rest of the machine."""
    best = float("inf")
    for _ in range(loops):
        started = time.thread_time()
        events = run()
        best = min(best, (time.thread_time() - started) / max(events, 1) * 1e6)
    return best


def _snapshot_runs(
    conn: psycopg.Connection[tuple[Any, ...]], decoded: DecodedTable
) -> tuple[Callable[[], int], Callable[[], int]]:
    """The bare snapshot read and the full snapshot path, each one run over the table."""

    def rows() -> Iterator[RowChange]:
        return snapshotter.read_table(
            conn, decoded, overrides={}, fetch_size=10_240, source_block=BLOCK, lsn=1, tx_id=1
        )

    def read() -> int:
        count = sum(1 for _ in rows())
        conn.commit()
        return count

    def snapshot() -> int:
        sink = CountingSink()
        _pipeline(threading.Event(), sink).snapshot(rows())
        conn.commit()
        return sink.records

    return read, snapshot


def _stream_run(
    conn: psycopg.Connection[tuple[Any, ...]],
    frames: Sequence[Frame],
    sink: Sink,
) -> Callable[[], int]:
    """The kept frames through the stream loop into ``sink``, from a fresh relation cache
    each run; the stream loop's last commit flushes the sink (Kafka acknowledged them all)."""
    filters = Filters.from_properties(PROPERTIES)
    # an insert makes one record
    events = sum(1 for f in frames if isinstance(f, pgoutput.XLogData) and f.payload[:1] == b"I")

    def stream() -> int:
        stop = threading.Event()
        source = PostgresStream(
            stream=KeptFrames(frames, stop),
            catalog=TableCatalog(conn, options=TypeOptions(), filters=filters),
            filters=filters,
            source_block=BLOCK,
            placeholder="__debezium_unavailable_value",
            resume_lsn=0,
            last_commit_lsn=None,
            status_interval_s=10.0,
            poll_interval_s=0.5,
        )
        _pipeline(stop, sink).stream(source)
        return events

    return stream


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--loops", type=int, default=5)
    args = parser.parse_args()
    with postgres.running_postgres() as server, kafka.running_kafka() as broker:
        frames = _fill(server.dsn(), args.rows)
        with psycopg.connect(server.dsn()) as conn:
            catalog = TableCatalog(
                conn, options=TypeOptions(), filters=Filters.from_properties(PROPERTIES)
            )
            for oid in catalog.type_oids():  # every column as the server's text, as cdcflow
                conn.adapters.register_loader(oid, TextLoader)
            decoded = catalog.from_catalog(TableId("public", "bench"))
            assert decoded is not None
            read, snapshot = _snapshot_runs(conn, decoded)
            figures = {
                "snapshot read and convert (ceiling)": _least_cpu_per_event(read, args.loops),
                "snapshot to a null sink": _least_cpu_per_event(snapshot, args.loops),
            }
            conn.autocommit = True
            figures["stream to a null sink"] = _least_cpu_per_event(
                _stream_run(conn, frames, CountingSink()), args.loops
            )
            kafka_sink = KafkaSink(bootstrap_servers=broker.bootstrap_servers)
            try:
                figures["stream into Kafka (event thread)"] = _least_cpu_per_event(
                    _stream_run(conn, frames, kafka_sink), args.loops
                )
            finally:
                kafka_sink.close()
    print(f"{args.rows:,} rows; least thread CPU of {args.loops} runs each")
    for label, micros in figures.items():
        print_line(label, f"{micros:>10.2f} µs per event ({1e6 / micros:>9,.0f} per CPU-second)")


if __name__ == "__main__":
    main()
