"""Apply a backlog of change events from Kafka into a Delta table with the CdcSink job.

Produces N synthetic Debezium PostgreSQL change events (default 500k, JSON with Connect
schemas, as ``cdcflow capture`` writes them) for one table straight to Kafka: inserts of
``--keys`` rows, then updates, deletes and re-inserts over them, with increasing LSNs. Then
runs the sink (SCD1 into Delta, trigger availableNow, in this process, Spark local mode on
the machine's cores) and reports the rows/s applied and each micro-batch's latency. Finally
the Delta table is compared with the expected final state of every key.

    python -m bench.spark_apply [--events 500000] [--keys 100000] [--batch 100000]
"""

from __future__ import annotations

import argparse
import base64
import random
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import orjson
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from cdcflow.operator.devservices import kafka
from cdcflow.sparkapps import sink as job
from cdcflow.sparkapps.batches import BatchReport
from cdcflow.sparkapps.config import CdcSink, parse_sink

TOPIC = "bench.public.items"
COLUMNS: list[dict[str, Any]] = [
    {"type": "int64", "optional": False, "field": "id"},
    {"type": "string", "optional": False, "field": "name"},
    {
        "type": "bytes",
        "optional": True,
        "name": "org.apache.kafka.connect.data.Decimal",
        "version": 1,
        "parameters": {"scale": "2", "connect.decimal.precision": "10"},
        "field": "amount",
    },
    {
        "type": "int64",
        "optional": False,
        "name": "io.debezium.time.MicroTimestamp",
        "version": 1,
        "field": "created",
    },
    {"type": "boolean", "optional": False, "field": "active"},
]
SOURCE_FIELDS = [
    ("version", "string"),
    ("connector", "string"),
    ("name", "string"),
    ("ts_ms", "int64"),
    ("snapshot", "string"),
    ("db", "string"),
    ("sequence", "string"),
    ("schema", "string"),
    ("table", "string"),
    ("txId", "int64"),
    ("lsn", "int64"),
]


def _envelope_schema() -> dict[str, Any]:
    row = {"type": "struct", "optional": True, "name": f"{TOPIC}.Value", "fields": COLUMNS}
    source = {
        "type": "struct",
        "optional": False,
        "name": "io.debezium.connector.postgresql.Source",
        "fields": [{"type": t, "optional": True, "field": f} for f, t in SOURCE_FIELDS],
        "field": "source",
    }
    return {
        "type": "struct",
        "optional": False,
        "name": f"{TOPIC}.Envelope",
        "version": 1,
        "fields": [
            {**row, "field": "before"},
            {**row, "field": "after"},
            source,
            {"type": "string", "optional": False, "field": "op"},
            {"type": "int64", "optional": True, "field": "ts_ms"},
        ],
    }


def _decimal(value: Decimal) -> str:
    unscaled = int(value.scaleb(2))
    size = max(1, (unscaled.bit_length() + 8) // 8)
    return base64.b64encode(unscaled.to_bytes(size, "big", signed=True)).decode()


@dataclass
class Backlog:
    """Generates the events and remembers each key's final row (None when deleted)."""

    keys: int
    seed: int = 7
    lsn: int = 1_000_000
    rows: dict[int, tuple[Any, ...] | None] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.random = random.Random(self.seed)
        key_schema = {"type": "struct", "optional": False, "fields": [COLUMNS[0]]}
        self._head = b'{"schema":' + orjson.dumps(_envelope_schema()) + b',"payload":'
        self._key_head = b'{"schema":' + orjson.dumps(key_schema) + b',"payload":'

    def events(self, count: int) -> list[tuple[bytes, bytes | None]]:
        """``count`` change events (and a tombstone after each delete): inserts of every key
        first, then a random mix."""
        out: list[tuple[bytes, bytes | None]] = []
        for _ in range(count):
            key = (
                len(self.rows) + 1
                if len(self.rows) < self.keys
                else self.random.randint(1, self.keys)
            )
            live = self.rows.get(key) is not None
            choice = self.random.random()
            if not live:
                out.append(self._event("c", key))
            elif choice < 0.8:
                out.append(self._event("u", key))
            else:
                out.append(self._event("d", key))
                out.append((self._key(key), None))
        return out

    def _event(self, op: str, key: int) -> tuple[bytes, bytes]:
        self.lsn += self.random.randint(40, 400)
        rnd = self.random
        row = None
        if op != "d":
            row = (
                key,
                f"customer {key} v{rnd.randrange(1000)}",
                Decimal(rnd.randint(-(10**7), 10**7)).scaleb(-2),
                1_700_000_000_000_000 + rnd.randrange(10**12),
                rnd.random() < 0.5,
            )
        image = (
            self._image(row)
            if row
            else {"id": key, "name": None, "amount": None, "created": None, "active": None}
        )
        self.rows[key] = row
        source = {
            "version": "cdcflow",
            "connector": "postgresql",
            "name": "bench",
            "ts_ms": 1_700_000_000_000 + self.lsn // 1000,
            "snapshot": "false",
            "db": "inventory",
            "sequence": f'[null,"{self.lsn}"]',
            "schema": "public",
            "table": "items",
            "txId": self.lsn // 100,
            "lsn": self.lsn,
        }
        payload = {
            "before": image if op == "d" else None,
            "after": None if op == "d" else image,
            "source": source,
            "op": op,
            "ts_ms": source["ts_ms"],
        }
        return self._key(key), self._head + orjson.dumps(payload) + b"}"

    def _image(self, row: tuple[Any, ...]) -> dict[str, Any]:
        key, name, amount, created, active = row
        return {
            "id": key,
            "name": name,
            "amount": _decimal(amount),
            "created": created,
            "active": active,
        }

    def _key(self, key: int) -> bytes:
        return self._key_head + orjson.dumps({"id": key}) + b"}"


def produce(bootstrap: str, records: list[tuple[bytes, bytes | None]]) -> None:
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 20,
            "batch.num.messages": 10000,
            "compression.type": "lz4",
        }
    )
    for index, (key, value) in enumerate(records):
        while True:
            try:
                producer.produce(TOPIC, key=key, value=value)
                break
            except BufferError:
                producer.poll(0.1)
        if index % 10000 == 0:
            producer.poll(0)
    assert producer.flush(120) == 0


def create_topic(bootstrap: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics(
        [NewTopic(TOPIC, num_partitions=partitions, replication_factor=1)]
    )
    futures[TOPIC].result(timeout=30)


def bench_sink(bootstrap: str, *, batch: int, memory: str, workdir: str) -> CdcSink:
    """SCD1 into Delta, availableNow, ``batch`` records per micro-batch."""
    return parse_sink(
        {
            "apiVersion": "cdcflow.io/v1alpha1",
            "kind": "CdcSink",
            "metadata": {"name": "bench"},
            "spec": {
                "topics": [TOPIC],
                "kafka": {"bootstrapServers": bootstrap, "maxOffsetsPerTrigger": batch},
                "target": {"path": f"{workdir}/lake"},
                "trigger": {"availableNow": True},
                "spark": {"driver": {"memory": memory}},
            },
        }
    )


def apply(sink: CdcSink, backlog: Backlog) -> tuple[list[BatchReport], float, float, bool]:
    """Run the job over the backlog: reports, run and session seconds, whether it is right."""
    started = time.perf_counter()
    spark = job.spark_session(sink)
    session_s = time.perf_counter() - started
    reports: list[BatchReport] = []
    started = time.perf_counter()
    job.run(spark, sink, on_batch=reports.append)
    run_s = time.perf_counter() - started
    table = spark.read.format("delta").load(sink.spec.target.table_path(TOPIC))
    stored = {
        r["id"]: (r["id"], r["name"], r["amount"], r["active"])
        for r in table.select("id", "name", "amount", "active").collect()
    }
    spark.stop()
    expected = {k: (v[0], v[1], v[2], v[4]) for k, v in backlog.rows.items() if v is not None}
    return reports, run_s, session_s, stored == expected


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=500_000, help="change events")
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=100_000, help="maxOffsetsPerTrigger")
    parser.add_argument("--partitions", type=int, default=1, help="Kafka partitions of the topic")
    parser.add_argument("--driver-memory", default="2g")
    args = parser.parse_args()
    backlog = Backlog(keys=args.keys)
    records = backlog.events(args.events)
    with kafka.running_kafka() as broker, tempfile.TemporaryDirectory() as workdir:
        create_topic(broker.bootstrap_servers, args.partitions)
        started = time.perf_counter()
        produce(broker.bootstrap_servers, records)
        produced_s = time.perf_counter() - started
        print(f"backlog: {args.events:,} change events in {produced_s:.1f}s")
        sink = bench_sink(
            broker.bootstrap_servers, batch=args.batch, memory=args.driver_memory, workdir=workdir
        )
        reports, run_s, session_s, equal = apply(sink, backlog)
    _report(len(records), reports, run_s, session_s, equal)


def _report(
    records: int, reports: list[BatchReport], run_s: float, session_s: float, equal: bool
) -> None:
    latencies = [r.seconds for r in reports]
    applied = sum(r.records for r in reports)
    lines = [f"micro-batches                      : {len(reports)}"]
    lines += [
        f"  batch {r.batch_id:>3}: {r.records:>8,} records in {r.seconds:6.1f}s "
        f"({r.records / r.seconds:>8,.0f}/s)"
        for r in reports
    ]
    lines += [
        f"change events applied              : {applied:>10,} (of {records:,} records)",
        f"throughput, whole run              : {applied / run_s:>10,.0f} events/s "
        f"({run_s:.1f}s; session start {session_s:.1f}s not counted)",
        f"throughput, inside micro-batches   : {applied / sum(latencies):>10,.0f} events/s",
        f"per-batch latency p50 / max        : {statistics.median(latencies):>9.1f}s / "
        f"{max(latencies):.1f}s",
        f"Delta table equals expected state  : {equal}",
    ]
    print("\n".join(lines))


if __name__ == "__main__":
    main()
