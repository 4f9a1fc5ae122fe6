"""The Parquet changelog target: every change once, in source order, truncates included."""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import SparkSession

from tests.integration.sink_support import apply_backlog, sink_resource, table_path
from tests.plugins.fix_capture import CaptureHarness


def test_the_parquet_changelog_holds_every_change_once_in_source_order(
    capture: CaptureHarness, spark: SparkSession, tmp_path: Path
) -> None:
    table = capture.table("log")
    capture.sql(f"CREATE TABLE {table} (id int PRIMARY KEY, v text)")
    running = capture.start(capture.resource([table], **{"skipped.operations": "none"}))
    topic = f"public.{table}"
    capture.sql(
        f"INSERT INTO {table} VALUES (1, 'a'), (2, 'b')",
        f"UPDATE {table} SET v = 'c' WHERE id = 1",
        f"DELETE FROM {table} WHERE id = 2",
    )
    capture.wait_for_events(topic, lambda events: len(events) >= 5)
    sink = sink_resource(
        bootstrap_servers=capture.kafka.bootstrap_servers,
        topics=[f"{capture.name}.{topic}"],
        workdir=tmp_path,
        target={"format": "parquet", "path": str(tmp_path / "lake")},
    )
    apply_backlog(spark, sink)
    capture.sql(f"TRUNCATE {table}", f"INSERT INTO {table} VALUES (3, 'd')")
    capture.wait_for_events(topic, lambda events: len(events) >= 7)
    running.stop()

    apply_backlog(spark, sink)

    log = spark.read.parquet(table_path(sink, f"{capture.name}.{topic}"))
    ordered = log.orderBy("_cdc_position", "_cdc_offset").select("_cdc_op", "id", "v", "_cdc_batch")
    assert [tuple(row) for row in ordered.collect()] == [
        ("c", 1, "a", 0),
        ("c", 2, "b", 0),
        ("u", 1, "c", 0),
        ("d", 2, None, 0),
        ("t", None, None, 1),
        ("c", 3, "d", 1),
    ]
