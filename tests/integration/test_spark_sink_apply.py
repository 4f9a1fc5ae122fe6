"""The Spark sink keeps Delta tables equal to PostgreSQL tables (SCD1), through restarts.

Changes are made in PostgreSQL, captured by the real engine into the real Kafka, and applied
by the real job in Spark local mode; then the Delta tables are compared row for row with the
source tables.
"""

from __future__ import annotations

import datetime as dt
import decimal
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from pyspark.sql import SparkSession

from cdcflow.sparkapps import faults
from tests.integration.sink_support import (
    Key,
    Workload,
    apply_backlog,
    delta_rows,
    sink_resource,
    source_rows,
    table_path,
    write_yaml,
)
from tests.plugins.fix_capture import CaptureHarness, RunningEngine
from tests.plugins.fix_kafka import read_topic_to_end

A_COLUMNS = ("id", "name", "amount", "created", "day", "flag", "data", "score")
B_COLUMNS = ("k1", "k2", "v")
SENTINEL = 1_000_000
#: About 32 KB of hex digits: over the TOAST threshold, stored out of line uncompressed.
BIG_VALUE_SQL = (
    "(SELECT string_agg(md5(g::text || random()::text), '') FROM generate_series(1, 1000) g)"
)
JOB_TIMEOUT = 420


def _create_tables(capture: CaptureHarness) -> tuple[str, str]:
    a, b = capture.table("accounts"), capture.table("tags")
    capture.sql(
        f"CREATE TABLE {a} (id int PRIMARY KEY, name text NOT NULL, amount numeric(12,2), "
        "created timestamp, day date, flag boolean, data bytea, score double precision)",
        f"CREATE TABLE {b} (k1 int, k2 text, v text, PRIMARY KEY (k1, k2))",
    )
    return a, b


def _account(workload: Workload, key: Key | None) -> tuple[Key, dict[str, Any]]:
    rnd = workload.random
    if key is None:
        key = (workload.next_id,)
        workload.next_id += 1
    row = {
        "id": key[0],
        "name": f"name-{rnd.randrange(10**6)}",
        "amount": decimal.Decimal(rnd.randint(-(10**9), 10**9)).scaleb(-2),
        "created": dt.datetime(2020, 1, 1) + dt.timedelta(microseconds=rnd.randrange(10**14)),
        "day": dt.date(1990, 1, 1) + dt.timedelta(days=rnd.randrange(20_000)),
        "flag": rnd.random() < 0.5,
        "data": rnd.randbytes(rnd.randrange(12)) if rnd.random() < 0.8 else None,
        "score": rnd.uniform(-1e6, 1e6) if rnd.random() < 0.8 else None,
    }
    if workload.options.get("note"):
        row["note"] = f"note-{rnd.randrange(100)}"
    return key, row


def _tag(workload: Workload, key: Key | None) -> tuple[Key, dict[str, Any]]:
    rnd = workload.random
    if key is None:
        key = (workload.next_id, rnd.choice(["red", "green"]))
        workload.next_id += 1
    return key, {"k1": key[0], "k2": key[1], "v": f"v{rnd.randrange(1000)}"}


def _fence(capture: CaptureHarness, a: str, b: str, *, n: int = 0) -> None:
    """Write a last row to each table and wait until the engine has published it."""
    sentinel = SENTINEL + n
    capture.sql(
        f"INSERT INTO {a} (id, name) VALUES ({sentinel}, 'end')",
        f"INSERT INTO {b} VALUES ({sentinel}, 'end', 'end')",
    )
    for table in (a, b):
        capture.wait_for_events(
            f"public.{table}",
            lambda events: any(
                e.key and e.key["payload"].get("k1", e.key["payload"].get("id")) == sentinel
                for e in events
            ),
            timeout=60,
        )


def _assert_equal(
    spark: SparkSession,
    capture: CaptureHarness,
    sink: Any,
    a: str,
    b: str,
    *,
    a_columns: tuple[str, ...] = A_COLUMNS,
) -> None:
    topic_a, topic_b = f"{capture.name}.public.{a}", f"{capture.name}.public.{b}"
    assert delta_rows(spark, table_path(sink, topic_a), a_columns) == source_rows(
        capture, a, a_columns
    )
    assert delta_rows(spark, table_path(sink, topic_b), B_COLUMNS) == source_rows(
        capture, b, B_COLUMNS
    )


def test_random_changes_and_a_job_killed_mid_batch_leave_delta_equal_to_postgres(
    capture: CaptureHarness, spark: SparkSession, tmp_path: Path
) -> None:
    """Snapshot rows, random changes on two tables (one with a composite key), truncates and
    a column added while the job is down; the job is killed in the middle of a micro-batch
    and resumed: no loss, no duplicate, Delta equals PostgreSQL."""
    a, b = _create_tables(capture)
    accounts, tags = (
        Workload(capture, a, seed=3, keys=["id"]),
        Workload(capture, b, seed=4, keys=["k1", "k2"]),
    )
    accounts.run(15, _account)  # snapshot rows
    running = capture.start(capture.resource([a, b], **{"skipped.operations": "none"}))
    accounts.run(80, _account)
    tags.run(50, _tag)
    capture.sql(f"TRUNCATE {a}")
    accounts.run(30, _account)
    _fence(capture, a, b)
    sink = sink_resource(
        bootstrap_servers=capture.kafka.bootstrap_servers,
        topics=[f"{capture.name}.public.{a}", f"{capture.name}.public.{b}"],
        workdir=tmp_path,
        kafka={"bootstrapServers": capture.kafka.bootstrap_servers, "maxOffsetsPerTrigger": 120},
    )
    config = write_yaml(sink, tmp_path / "sink.yaml")

    killed = subprocess.run(
        [sys.executable, "-m", "cdcflow.sparkapps.sink", str(config)],
        env={**os.environ, faults.ENV: "after-table:3"},
        capture_output=True,
        text=True,
        timeout=JOB_TIMEOUT,
        check=False,
    )
    assert killed.returncode == 137, killed.stderr[-4000:]
    started, committed = (
        _batches(tmp_path / "checkpoint" / part) for part in ("offsets", "commits")
    )
    assert started == committed + 1, "the kill should interrupt a batch that was under way"

    accounts.run(40, _account)  # more changes while the job is down
    capture.sql(f"TRUNCATE {b}")
    tags.run(20, _tag)
    capture.sql(f"ALTER TABLE {a} ADD COLUMN note text")
    accounts.options["note"] = True
    accounts.run(40, _account)
    _fence(capture, a, b, n=1)
    running.stop()
    resumed = subprocess.run(
        [
            sys.executable,
            "-m",
            "cdcflow.operator.cli",
            "sink",
            "-f",
            str(config),
            "--available-now",
        ],
        capture_output=True,
        text=True,
        timeout=JOB_TIMEOUT,
        check=False,
    )

    assert resumed.returncode == 0, resumed.stderr[-4000:]
    _assert_equal(spark, capture, sink, a, b, a_columns=(*A_COLUMNS, "note"))
    (truncated,) = capture.query(f"SELECT count(*) FROM {a} WHERE id <= 15")[0]
    assert truncated == 0  # the snapshot rows were truncated away, in Delta too


def test_stale_events_sent_again_after_newer_ones_never_move_rows_backwards(
    capture: CaptureHarness, spark: SparkSession, tmp_path: Path
) -> None:
    a, b = _create_tables(capture)
    mostly_updates = (0.25, 0.6, 0.05)
    accounts = Workload(capture, a, seed=5, keys=["id"], mix=mostly_updates)
    tags = Workload(capture, b, seed=6, keys=["k1", "k2"], mix=mostly_updates)
    running = capture.start(capture.resource([a, b], **{"skipped.operations": "none"}))
    accounts.run(40, _account)
    tags.run(60, _tag)
    capture.sql(f"TRUNCATE {a}")
    accounts.run(60, _account)
    _fence(capture, a, b)
    running.stop()
    topics = [f"{capture.name}.public.{a}", f"{capture.name}.public.{b}"]
    sink = sink_resource(
        bootstrap_servers=capture.kafka.bootstrap_servers, topics=topics, workdir=tmp_path
    )
    apply_backlog(spark, sink)
    _assert_equal(spark, capture, sink, a, b)

    # What a capture engine restarting from an old offset does: send a prefix of each topic
    # again, after everything newer (old values, deleted rows, rows truncated since).
    for topic in topics:
        messages = read_topic_to_end(capture.kafka.bootstrap_servers, topic)
        _produce_again(capture.kafka.bootstrap_servers, topic, messages[: len(messages) * 3 // 4])
    reports = apply_backlog(spark, sink)

    assert sum(r.changes for r in reports) > 0
    _assert_equal(spark, capture, sink, a, b)


def _produce_again(bootstrap_servers: str, topic: str, messages: list[Any]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap_servers})
    for message in messages:
        producer.produce(topic, key=message.key(), value=message.value())
    assert producer.flush(30) == 0


def _toasted_rows(capture: CaptureHarness, stem: str) -> tuple[str, str, RunningEngine]:
    """A captured table ``(id, n, big)`` whose rows 1 and 2 hold a big value stored out of
    line; returns once their create events are in Kafka."""
    table = capture.table(stem)
    capture.sql(
        f"CREATE TABLE {table} (id int PRIMARY KEY, n int, big text)",
        f"ALTER TABLE {table} ALTER COLUMN big SET STORAGE EXTERNAL",
    )
    running = capture.start(capture.resource([table]))
    topic = f"public.{table}"
    capture.sql(f"INSERT INTO {table} VALUES (1, 0, {BIG_VALUE_SQL}), (2, 0, {BIG_VALUE_SQL})")
    capture.wait_for_events(topic, lambda events: len(events) >= 2)
    return table, topic, running


def test_unchanged_toast_values_keep_the_value_delta_already_has(
    capture: CaptureHarness, spark: SparkSession, tmp_path: Path
) -> None:
    table, topic, running = _toasted_rows(capture, "docs")
    sink = sink_resource(
        bootstrap_servers=capture.kafka.bootstrap_servers,
        topics=[f"{capture.name}.{topic}"],
        workdir=tmp_path,
    )
    apply_backlog(spark, sink)
    capture.sql(
        f"UPDATE {table} SET n = 1 WHERE id = 1",  # big unchanged: not sent
        f"INSERT INTO {table} VALUES (3, 0, {BIG_VALUE_SQL})",
        f"UPDATE {table} SET n = 1 WHERE id = 3",  # same micro-batch as its insert
        f"UPDATE {table} SET n = 2, big = 'small now' WHERE id = 2",
    )
    events = capture.wait_for_events(topic, lambda events: len(events) >= 6)
    running.stop()
    assert events[2].payload["after"]["big"] == "__debezium_unavailable_value"

    apply_backlog(spark, sink)

    columns = ("id", "n", "big")
    path = table_path(sink, f"{capture.name}.{topic}")
    assert delta_rows(spark, path, columns) == source_rows(capture, table, columns)
    assert "__debezium_unavailable_value" not in str(delta_rows(spark, path, ["big"]))


def test_a_key_change_keeps_the_toasted_value_of_the_old_key(
    capture: CaptureHarness, spark: SparkSession, tmp_path: Path
) -> None:
    """Under REPLICA IDENTITY DEFAULT the new key's create carries the placeholder for an
    untouched TOASTed value; the sink takes the value from the old key's row — whether the
    delete and the create share a micro-batch or not (two records per micro-batch split every
    key change below: delete + tombstone, then the create), in SCD1 and SCD2 alike."""
    table, topic, running = _toasted_rows(capture, "moving")
    topics = [f"{capture.name}.{topic}"]
    servers = capture.kafka.bootstrap_servers
    whole = sink_resource(bootstrap_servers=servers, topics=topics, workdir=tmp_path / "a")
    history = sink_resource(
        bootstrap_servers=servers, topics=topics, workdir=tmp_path / "c", mode="scd2"
    )
    for sink in (whole, history):
        apply_backlog(spark, sink)  # rows 1 and 2 are in the target before their keys change
    capture.sql(
        f"UPDATE {table} SET id = 10 WHERE id = 1",  # from the target row
        f"INSERT INTO {table} VALUES (3, 0, {BIG_VALUE_SQL})",
        f"UPDATE {table} SET id = 30 WHERE id = 3",  # from the same batch's insert
        f"UPDATE {table} SET n = 5 WHERE id = 2",  # a placeholder itself
        f"UPDATE {table} SET id = 20 WHERE id = 2",
    )
    events = capture.wait_for_events(topic, lambda events: len(events) >= 13)
    running.stop()
    creates = [e for e in events if e.value and e.payload["op"] == "c"]
    moved = next(e for e in creates if e.payload["after"]["id"] == 10)
    assert moved.payload["after"]["big"] == "__debezium_unavailable_value"
    assert "__debezium.oldkey" in moved.headers

    split = sink_resource(
        bootstrap_servers=servers,
        topics=topics,
        workdir=tmp_path / "b",
        kafka={"bootstrapServers": servers, "maxOffsetsPerTrigger": 2},
    )
    apply_backlog(spark, whole)
    apply_backlog(spark, history)
    reports = apply_backlog(spark, split)

    assert len(reports) >= len(events) // 2
    columns = ("id", "n", "big")
    expected = source_rows(capture, table, columns)
    assert [row[0] for row in expected] == [10, 20, 30]
    for sink in (whole, split):
        path = table_path(sink, f"{capture.name}.{topic}")
        assert delta_rows(spark, path, columns) == expected
    current = spark.read.format("delta").load(table_path(history, f"{capture.name}.{topic}"))
    rows = current.where("_cdc_is_current").select(*columns).collect()
    assert sorted(tuple(row) for row in rows) == expected


def _batches(folder: Path) -> int:
    return len([p for p in folder.iterdir() if p.name.isdigit()])


pytestmark = pytest.mark.timeout(900)
