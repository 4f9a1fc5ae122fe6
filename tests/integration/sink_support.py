"""Helpers for the Spark sink tests: CdcSink resources, running the job, comparing tables."""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import random
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import psycopg
import yaml
from confluent_kafka import Producer
from pyspark.sql import SparkSession

from cdcflow.sparkapps import sink as job
from cdcflow.sparkapps.batches import BatchReport
from cdcflow.sparkapps.config import CdcSink, parse_sink
from tests.plugins.fix_capture import CaptureHarness

Row = tuple[Any, ...]
Key = tuple[Any, ...]


def sink_resource(
    *, bootstrap_servers: str, topics: Sequence[str], workdir: Path, **spec: Any
) -> CdcSink:
    """A CdcSink on ``topics`` writing under ``workdir/lake`` (spec fields override)."""
    document: dict[str, Any] = {
        "topics": list(topics),
        "kafka": {"bootstrapServers": bootstrap_servers},
        "target": {"path": str(workdir / "lake")},
        "checkpointLocation": str(workdir / "checkpoint"),
        "deadLetter": {"path": str(workdir / "dead-letters")},
        "trigger": {"availableNow": True},
    }
    document.update(spec)
    return parse_sink(
        {
            "apiVersion": "cdcflow.io/v1alpha1",
            "kind": "CdcSink",
            "metadata": {"name": "test-sink"},
            "spec": {k: v for k, v in document.items() if v is not None},
        }
    )


def write_yaml(sink: CdcSink, path: Path) -> Path:
    """The resource as the YAML file ``cdcflow sink -f`` and the job entry point take."""
    path.write_text(yaml.safe_dump(sink.model_dump(by_alias=True, exclude_none=True)))
    return path


def apply_backlog(spark: SparkSession, sink: CdcSink) -> list[BatchReport]:
    """Run the job in this process until the topics' current contents are applied."""
    reports: list[BatchReport] = []
    job.run(spark, sink, available_now=True, on_batch=reports.append)
    return reports


def table_path(sink: CdcSink, topic: str) -> str:
    return sink.spec.target.table_path(topic)


def plain(value: Any) -> Any:
    """Values as both sides return them: bytes for binary, everything else as is."""
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    return value


def delta_rows(spark: SparkSession, path: str, columns: Sequence[str]) -> list[Row]:
    """The Delta table's rows (the named columns), sorted; duplicates are kept."""
    frame = spark.read.format("delta").load(path).select(*columns)
    return sorted((tuple(plain(v) for v in row) for row in frame.collect()), key=repr)


def source_rows(capture: CaptureHarness, table: str, columns: Sequence[str]) -> list[Row]:
    """The PostgreSQL table's rows (the named columns), sorted like :func:`delta_rows`."""
    listed = ", ".join(columns)
    rows = capture.query(f"SELECT {listed} FROM {table}")
    return sorted((tuple(plain(v) for v in row) for row in rows), key=repr)


#: Default shares of inserts, updates and key changes among random statements (the rest delete).
MIX = (0.35, 0.3, 0.15)


class Workload:
    """Random inserts, updates, key changes and deletes on a table, from a seeded generator."""

    def __init__(
        self,
        capture: CaptureHarness,
        table: str,
        *,
        seed: int,
        keys: Sequence[str],
        mix: tuple[float, float, float] = MIX,
    ) -> None:
        self.capture = capture
        self.table = table
        self.random = random.Random(seed)
        self.keys = tuple(keys)
        self.mix = mix
        self.next_id = 1
        self.options: dict[str, Any] = {}

    def statements(self, count: int, make_row: RowMaker) -> Iterable[tuple[str, tuple[Any, ...]]]:
        """``count`` random statements with parameters, chosen against the table's keys."""
        existing = [tuple(r) for r in self.capture.query(f"SELECT {self._keys} FROM {self.table}")]
        for _ in range(count):
            choice = self.random.random()
            inserts, updates, key_changes = self.mix
            if not existing or choice < inserts:
                key, row = make_row(self, None)
                existing.append(key)
                yield self._insert(row)
            elif choice < inserts + updates:
                key = self.random.choice(existing)
                _, row = make_row(self, key)
                yield self._update(key, {k: v for k, v in row.items() if k not in self.keys})
            elif choice < inserts + updates + key_changes:
                key = self.random.choice(existing)
                new_key, _ = make_row(self, None)
                existing.remove(key)
                existing.append(new_key)
                yield self._update(key, dict(zip(self.keys, new_key, strict=True)))
            else:
                key = self.random.choice(existing)
                existing.remove(key)
                yield self._delete(key)

    def run(self, count: int, make_row: RowMaker, *, per_transaction: int = 4) -> None:
        """Execute ``count`` random statements in transactions of up to ``per_transaction``."""
        statements = list(self.statements(count, make_row))
        with psycopg.connect(self.capture.postgres.dsn()) as conn:
            while statements:
                size = self.random.randint(1, per_transaction)
                batch, statements = statements[:size], statements[size:]
                with conn.transaction():
                    for sql, params in batch:
                        conn.execute(sql, params)

    @property
    def _keys(self) -> str:
        return ", ".join(self.keys)

    def _where(self, key: tuple[Any, ...]) -> tuple[str, tuple[Any, ...]]:
        return " AND ".join(f"{k} = %s" for k in self.keys), key

    def _insert(self, row: dict[str, Any]) -> tuple[str, tuple[Any, ...]]:
        names = ", ".join(row)
        marks = ", ".join(["%s"] * len(row))
        return f"INSERT INTO {self.table} ({names}) VALUES ({marks})", tuple(row.values())

    def _update(self, key: tuple[Any, ...], values: dict[str, Any]) -> tuple[str, tuple[Any, ...]]:
        where, params = self._where(key)
        sets = ", ".join(f"{name} = %s" for name in values)
        return f"UPDATE {self.table} SET {sets} WHERE {where}", (*values.values(), *params)

    def _delete(self, key: tuple[Any, ...]) -> tuple[str, tuple[Any, ...]]:
        where, params = self._where(key)
        return f"DELETE FROM {self.table} WHERE {where}", params


RowMaker = Callable[[Workload, Key | None], tuple[Key, dict[str, Any]]]
"""Makes a row for a key (a new key when given None): ``(key, column values)``."""


def event_value(
    op: str,
    row: dict[str, Any] | None,
    *,
    lsn: int,
    columns: Sequence[dict[str, Any]],
    name: str = "bad.public.items",
) -> bytes:
    """A Debezium PostgreSQL change event with its Connect schema, built by hand."""
    value_schema = {
        "type": "struct",
        "optional": True,
        "name": f"{name}.Value",
        "fields": list(columns),
    }
    source_schema = {
        "type": "struct",
        "optional": False,
        "name": "io.debezium.connector.postgresql.Source",
        "fields": [
            {"type": "int64", "optional": False, "field": "ts_ms"},
            {"type": "int64", "optional": True, "field": "lsn"},
        ],
    }
    envelope = {
        "type": "struct",
        "optional": False,
        "name": f"{name}.Envelope",
        "fields": [
            {**value_schema, "field": "before"},
            {**value_schema, "field": "after"},
            {**source_schema, "field": "source"},
            {"type": "string", "optional": False, "field": "op"},
            {"type": "int64", "optional": True, "field": "ts_ms"},
        ],
    }
    payload = {
        "before": row if op == "d" else None,
        "after": None if op == "d" else row,
        "source": {"ts_ms": 1_700_000_000_000 + lsn, "lsn": lsn},
        "op": op,
        "ts_ms": 1_700_000_000_000,
    }
    return json.dumps({"schema": envelope, "payload": payload}).encode()


def connect_decimal(value: decimal.Decimal, scale: int) -> str:
    """A decimal as Connect's JSON carries it: base64 of the unscaled two's complement.

    Exact at any width (``value`` must have at most ``scale`` fraction digits).
    """
    unscaled = value.scaleb(scale, context=decimal.Context(prec=decimal.MAX_PREC))
    if unscaled != unscaled.to_integral_value():
        raise ValueError(f"{value} has more than {scale} fraction digits")
    return unscaled_bytes(int(unscaled))


def unscaled_bytes(unscaled: int) -> str:
    """An unscaled integer as Connect's JSON carries it: base64 of its two's complement."""
    size = max(1, (unscaled.bit_length() + 8) // 8)
    return base64.b64encode(unscaled.to_bytes(size, "big", signed=True)).decode()


def produce(
    bootstrap_servers: str, topic: str, records: Iterable[tuple[Any, bytes | None]]
) -> None:
    """Send ``(key, value)`` records to ``topic`` (keys as JSON) and wait for every ack."""
    producer = Producer({"bootstrap.servers": bootstrap_servers})
    for key, value in records:
        producer.produce(topic, key=json.dumps(key).encode(), value=value)
    assert producer.flush(30) == 0


def epoch_micros(value: dt.datetime) -> int:
    return int((value - dt.datetime(1970, 1, 1)) / dt.timedelta(microseconds=1))
