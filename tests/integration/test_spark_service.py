"""The Spark fixture is real: Delta tables write, read back and MERGE; Kafka topics read."""

from __future__ import annotations

from pathlib import Path

from confluent_kafka import Producer
from delta.tables import DeltaTable
from pyspark.sql import SparkSession

from cdcflow.operator.devservices import kafka


def test_delta_table_round_trips_and_merge_updates_one_row(
    spark: SparkSession, tmp_path: Path
) -> None:
    path = str(tmp_path / "customers")
    rows = [(1, "ada", 10), (2, "grace", 20), (3, "linus", 30)]
    spark.createDataFrame(rows, "id INT, name STRING, balance INT").write.format("delta").save(path)

    read_back = spark.read.format("delta").load(path)
    assert sorted(tuple(row) for row in read_back.collect()) == rows
    assert DeltaTable.isDeltaTable(spark, path)

    changes = spark.createDataFrame([(2, "grace", 25)], "id INT, name STRING, balance INT")
    (
        DeltaTable.forPath(spark, path)
        .alias("t")
        .merge(changes.alias("c"), "t.id = c.id")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .execute()
    )

    merged = spark.read.format("delta").load(path)
    assert sorted(tuple(row) for row in merged.collect()) == [
        (1, "ada", 10),
        (2, "grace", 25),
        (3, "linus", 30),
    ]
    history = DeltaTable.forPath(spark, path).history().select("version", "operation")
    assert [tuple(row) for row in history.orderBy("version").collect()] == [
        (0, "WRITE"),
        (1, "MERGE"),
    ]


def test_spark_batch_reads_what_confluent_kafka_produced(
    spark: SparkSession, kafka_broker: kafka.KafkaBroker, kafka_topic: str
) -> None:
    sent = [(f"key-{i}".encode(), f"value-{i}".encode()) for i in range(5)]
    producer = Producer({"bootstrap.servers": kafka_broker.bootstrap_servers, "acks": "all"})
    for key, value in sent:
        producer.produce(kafka_topic, key=key, value=value)
    assert producer.flush(30) == 0

    records = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", kafka_broker.bootstrap_servers)
        .option("subscribe", kafka_topic)
        .option("startingOffsets", "earliest")
        .option("endingOffsets", "latest")
        .load()
        .select("key", "value", "topic", "partition", "offset")
        .orderBy("offset")
        .collect()
    )

    assert [(bytes(r["key"]), bytes(r["value"])) for r in records] == sent
    assert {r["topic"] for r in records} == {kafka_topic}
    assert [r["offset"] for r in records] == list(range(len(sent)))
