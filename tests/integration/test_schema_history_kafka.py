"""Schema history in a real Kafka topic: created as Debezium creates it, refused when it would
lose or reorder records, and read back in order by a new store instance."""

from __future__ import annotations

import orjson
import pytest
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    ConfigResource,
    NewTopic,
    ResourceType,
)

from cdcflow.capture.errors import FatalError
from cdcflow.capture.kafka.history import KafkaSchemaHistory
from cdcflow.capture.spi import (
    ColumnStructure,
    Offset,
    SchemaChange,
    TableChange,
    TableChangeType,
    TableId,
    TableStructure,
)
from cdcflow.operator.devservices import kafka
from tests.plugins.fix_kafka import create_topic, read_topic_to_end, unique_topic_name


def _history(broker: kafka.KafkaBroker, topic: str) -> KafkaSchemaHistory:
    return KafkaSchemaHistory(
        bootstrap_servers=broker.bootstrap_servers,
        client_config={},
        topic=topic,
        server="dbserver1",
    )


def _change(number: int) -> SchemaChange:
    table = TableStructure(
        TableId("inventory", f"t{number}"),
        (ColumnStructure("id", 4, "INT", 1, optional=False, type_expression="INT"),),
        ("id",),
        "utf8mb4",
    )
    return SchemaChange(
        "inventory",
        None,
        f"CREATE TABLE t{number} (id INT PRIMARY KEY)",
        (TableChange(TableChangeType.CREATE, table),),
        {"ts_ms": number},
        Offset({"file": "binlog.000001", "pos": number}),
    )


def _topic_settings(broker: kafka.KafkaBroker, topic: str) -> tuple[int, dict[str, str]]:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    partitions = len(admin.list_topics(timeout=30).topics[topic].partitions)
    resource = ConfigResource(ResourceType.TOPIC, topic)
    entries = admin.describe_configs([resource])[resource].result(timeout=30)
    return partitions, {name: entry.value for name, entry in entries.items()}


def test_records_come_back_in_order_to_a_new_store_instance(
    kafka_broker: kafka.KafkaBroker,
) -> None:
    topic = unique_topic_name("schema-history")
    history = _history(kafka_broker, topic)
    history.start()
    assert not history.exists()
    assert list(history.changes()) == []
    for number in range(1, 6):
        history.record(_change(number))
    history.close()

    restarted = _history(kafka_broker, topic)
    restarted.start()
    assert restarted.exists()
    changes = list(restarted.changes())
    assert [change.offset.get("pos") for change in changes] == [1, 2, 3, 4, 5]
    assert changes[0].changes == _change(1).changes
    assert changes[0].source == {}
    restarted.close()

    messages = read_topic_to_end(kafka_broker.bootstrap_servers, topic)
    assert [message.key() for message in messages] == [None] * 5
    first = orjson.loads(messages[0].value() or b"")
    assert list(first) == [
        "source", "position", "ts_ms", "databaseName", "ddl", "tableChanges",
    ]  # fmt: skip
    assert first["source"] == {"server": "dbserver1"}
    assert first["tableChanges"][0]["id"] == '"inventory"."t1"'


def test_reading_stops_at_the_end_the_topic_had_when_reading_started(
    kafka_broker: kafka.KafkaBroker,
) -> None:
    history = _history(kafka_broker, unique_topic_name("schema-history-end"))
    history.start()
    history.record(_change(1))
    history.record(_change(2))
    reading = history.changes()
    first = next(reading)
    history.record(_change(3))
    assert [first.offset.get("pos"), *(c.offset.get("pos") for c in reading)] == [1, 2]
    history.close()


def test_the_created_topic_has_one_partition_and_keeps_everything_forever(
    kafka_broker: kafka.KafkaBroker,
) -> None:
    topic = unique_topic_name("schema-history-created")
    history = _history(kafka_broker, topic)
    history.start()
    history.close()
    partitions, config = _topic_settings(kafka_broker, topic)
    assert partitions == 1
    assert config["cleanup.policy"] == "delete"
    assert config["retention.ms"] == "-1"
    assert config["retention.bytes"] == "-1"
    # A second start finds the topic fit and leaves it as it is.
    _history(kafka_broker, topic).start()


def test_a_compacted_topic_is_refused_with_the_fix(kafka_broker: kafka.KafkaBroker) -> None:
    topic = unique_topic_name("schema-history-compacted")
    admin = AdminClient({"bootstrap.servers": kafka_broker.bootstrap_servers})
    new = NewTopic(
        topic, num_partitions=1, replication_factor=1, config={"cleanup.policy": "compact"}
    )
    admin.create_topics([new])[topic].result(timeout=30)

    with pytest.raises(FatalError) as caught:
        _history(kafka_broker, topic).start()
    message = str(caught.value)
    assert f"schema history topic {topic}" in message
    assert "cleanup.policy is compact" in message
    assert f"--entity-name {topic} --add-config cleanup.policy=delete" in message


def test_a_topic_of_three_partitions_is_refused_with_the_fix(
    kafka_broker: kafka.KafkaBroker,
) -> None:
    topic = unique_topic_name("schema-history-partitions")
    create_topic(kafka_broker.bootstrap_servers, topic, partitions=3)

    with pytest.raises(FatalError) as caught:
        _history(kafka_broker, topic).start()
    message = str(caught.value)
    assert "it has 3 partitions" in message
    assert "point schema.history.internal.kafka.topic at a new topic" in message


def test_a_topic_with_the_brokers_default_retention_is_refused(
    kafka_broker: kafka.KafkaBroker,
) -> None:
    topic = unique_topic_name("schema-history-retention")
    create_topic(kafka_broker.bootstrap_servers, topic)  # retention.ms: the 7-day default

    with pytest.raises(FatalError, match=r"retention\.ms=-1,retention\.bytes=-1"):
        _history(kafka_broker, topic).start()
