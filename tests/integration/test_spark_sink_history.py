"""SCD2: the Delta history of a key is the sequence of its changes, bounded by positions."""

from __future__ import annotations

from pathlib import Path

import orjson
from pyspark.sql import SparkSession

from tests.integration.sink_support import apply_backlog, sink_resource, table_path
from tests.plugins.fix_capture import CaptureHarness, Event

HISTORY = (
    "id",
    "v",
    "_cdc_op",
    "_cdc_valid_from",
    "_cdc_valid_to",
    "_cdc_is_current",
)


def _position(event: Event) -> str:
    """The sink's order key: ``source.sequence`` as [last commit, lsn], each 20 digits."""
    last_commit, lsn = orjson.loads(event.payload["source"]["sequence"])
    return f"{int(last_commit or 0):020d}:{int(lsn):020d}"


def _history(spark: SparkSession, path: str, key: int) -> list[tuple[object, ...]]:
    rows = spark.read.format("delta").load(path).where(f"id = {key}").select(*HISTORY).collect()
    return sorted((tuple(row) for row in rows), key=lambda row: str(row[3]))


def test_scd2_history_matches_the_sequence_of_changes_of_a_key(
    capture: CaptureHarness, spark: SparkSession, tmp_path: Path
) -> None:
    table = capture.table("prices")
    capture.sql(f"CREATE TABLE {table} (id int PRIMARY KEY, v text)")
    running = capture.start(capture.resource([table], **{"skipped.operations": "none"}))
    topic = f"public.{table}"
    capture.sql(
        f"INSERT INTO {table} VALUES (1, 'a'), (2, 'x')",
        f"UPDATE {table} SET v = 'b' WHERE id = 1",
    )
    capture.wait_for_events(topic, lambda events: len(events) >= 3)
    sink = sink_resource(
        bootstrap_servers=capture.kafka.bootstrap_servers,
        topics=[f"{capture.name}.{topic}"],
        workdir=tmp_path,
        mode="scd2",
    )
    apply_backlog(spark, sink)  # the history so far, then the rest in a later run
    capture.sql(
        f"UPDATE {table} SET v = 'c' WHERE id = 1",
        f"DELETE FROM {table} WHERE id = 1",
        f"INSERT INTO {table} VALUES (1, 'd')",
        f"UPDATE {table} SET v = 'y' WHERE id = 2",
        f"UPDATE {table} SET id = 3 WHERE id = 2",
    )
    events = [e for e in capture.wait_for_events(topic, lambda ev: len(ev) >= 11) if e.value]
    running.stop()
    apply_backlog(spark, sink)
    path = table_path(sink, f"{capture.name}.{topic}")

    ins_a, _ins_x, upd_b, upd_c, del_1, ins_d, upd_y, del_2, ins_3 = events
    p = _position
    assert _history(spark, path, 1) == [
        (1, "a", "c", p(ins_a), p(upd_b), False),
        (1, "b", "u", p(upd_b), p(upd_c), False),
        (1, "c", "u", p(upd_c), p(del_1), False),
        (1, "d", "c", p(ins_d), None, True),
    ]
    assert [row[1:] for row in _history(spark, path, 2)][-1] == (
        "y",
        "u",
        p(upd_y),
        p(del_2),
        False,
    )
    assert _history(spark, path, 3) == [(3, "y", "c", p(ins_3), None, True)]

    before = sorted(map(tuple, spark.read.format("delta").load(path).collect()), key=str)
    replay = sink.model_copy(
        update={
            "spec": sink.spec.model_copy(update={"checkpoint_location": str(tmp_path / "again")})
        }
    )
    apply_backlog(spark, replay)
    after = sorted(map(tuple, spark.read.format("delta").load(path).collect()), key=str)
    assert after == before, "replaying the topic must not add or change history rows"


def test_scd2_truncate_closes_every_current_version(
    capture: CaptureHarness, spark: SparkSession, tmp_path: Path
) -> None:
    table = capture.table("truncated")
    capture.sql(f"CREATE TABLE {table} (id int PRIMARY KEY, v text)")
    running = capture.start(capture.resource([table], **{"skipped.operations": "none"}))
    topic = f"public.{table}"
    capture.sql(
        f"INSERT INTO {table} VALUES (1, 'a'), (2, 'b')",
        f"TRUNCATE {table}",
        f"INSERT INTO {table} VALUES (2, 'c')",
    )
    events = capture.wait_for_events(topic, lambda ev: len(ev) >= 4)
    running.stop()
    sink = sink_resource(
        bootstrap_servers=capture.kafka.bootstrap_servers,
        topics=[f"{capture.name}.{topic}"],
        workdir=tmp_path,
        mode="scd2",
    )

    apply_backlog(spark, sink)

    path = table_path(sink, f"{capture.name}.{topic}")
    truncate = _position(events[2])
    assert _history(spark, path, 1) == [(1, "a", "c", _position(events[0]), truncate, False)]
    assert _history(spark, path, 2) == [
        (2, "b", "c", _position(events[1]), truncate, False),
        (2, "c", "c", _position(events[3]), None, True),
    ]
