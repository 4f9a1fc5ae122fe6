"""The pure per-batch transforms on Spark: latest per key, placeholders, SCD2 versions."""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession

from cdcflow.sparkapps import transforms

COLUMNS = "id INT, big STRING, _cdc_op STRING, _cdc_position STRING, _cdc_partition INT, "
COLUMNS += "_cdc_offset LONG, _cdc_source_ts TIMESTAMP, _cdc_problem STRING"
PH = "__debezium_unavailable_value"


def _changes(spark: SparkSession, rows: list[tuple[object, ...]]) -> DataFrame:
    full = [(*row, None, None) for row in rows]
    return spark.createDataFrame(full, COLUMNS)


def test_the_latest_change_per_key_wins_by_position_then_kafka_offset(spark: SparkSession) -> None:
    changes = _changes(
        spark,
        [
            (1, "a", "c", "10", 0, 1),
            (1, "b", "u", "30", 0, 3),
            (1, "old", "u", "20", 0, 9),  # sent again later, but older at the source
            (2, "x", "c", "15", 0, 2),
            (2, "x", "d", "40", 0, 4),
            (2, "x", "d", "40", 0, 8),  # a replayed duplicate
        ],
    )

    latest = transforms.latest_per_key(changes, ["id"]).select("id", "big", "_cdc_op")

    assert sorted(map(tuple, latest.collect())) == [(1, "b", "u"), (2, "x", "d")]


def test_placeholders_are_filled_from_the_keys_earlier_change_in_the_batch(
    spark: SparkSession,
) -> None:
    changes = _changes(
        spark,
        [
            (1, "first", "c", "10", 0, 1),
            (1, PH, "u", "20", 0, 2),
            (1, PH, "u", "30", 0, 3),
            (2, PH, "u", "15", 0, 4),  # nothing earlier in the batch: stays for the MERGE
            (3, "v", "c", "11", 0, 5),
            (3, None, "u", "12", 0, 6),  # a real null is a value, not a placeholder
            (3, PH, "u", "13", 0, 7),
        ],
    )
    unavailable = transforms.unavailable_columns(changes.schema.fields, PH)

    filled = transforms.fill_unavailable(changes, ["id"], unavailable)

    assert sorted(map(tuple, filled.select("id", "_cdc_position", "big").collect())) == [
        (1, "10", "first"),
        (1, "20", "first"),
        (1, "30", "first"),
        (2, "15", PH),
        (3, "11", "v"),
        (3, "12", None),
        (3, "13", None),
    ]


def test_scd2_versions_are_closed_by_the_next_change_and_deletes_add_no_row(
    spark: SparkSession,
) -> None:
    changes = _changes(
        spark,
        [
            (1, "a", "c", "10", 0, 1),
            (1, "b", "u", "20", 0, 2),
            (1, "b", "u", "20", 0, 5),  # replayed duplicate
            (1, None, "d", "30", 0, 3),
            (1, "c", "c", "40", 0, 4),
        ],
    )

    rows = transforms.versions(changes, ["id"]).select(
        "big", transforms.VALID_FROM, transforms.VALID_TO, transforms.IS_CURRENT
    )

    assert sorted(map(tuple, rows.collect())) == [
        ("a", "10", "20", False),
        ("b", "20", "30", False),
        ("c", "40", None, True),
    ]
