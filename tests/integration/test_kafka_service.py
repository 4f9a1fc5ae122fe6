"""The Kafka fixture is a real KRaft broker: records round-trip with keys, headers and order."""

from __future__ import annotations

import os

import pytest
from confluent_kafka import Producer

from cdcflow.operator.devservices import kafka, processes
from tests.plugins.fix_kafka import create_topic, read_topic_to_end, unique_topic_name


def _idempotent_producer(broker: kafka.KafkaBroker, **extra: str | int | bool) -> Producer:
    return Producer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "enable.idempotence": True,
            "acks": "all",
            **extra,
        }
    )


def test_an_idempotent_producer_round_trips_keys_values_and_headers_in_order(
    kafka_broker: kafka.KafkaBroker, kafka_topic: str
) -> None:
    producer = _idempotent_producer(kafka_broker)
    sent = [(f"key-{i}".encode(), f"value-{i}".encode()) for i in range(10)]
    for index, (key, value) in enumerate(sent):
        headers: list[tuple[str, str | bytes | None]] = [
            ("seq", str(index).encode()),
            ("source", b"smoke"),
        ]
        producer.produce(kafka_topic, key=key, value=value, headers=headers)
    assert producer.flush(30) == 0

    received = read_topic_to_end(kafka_broker.bootstrap_servers, kafka_topic)

    assert [(m.key(), m.value()) for m in received] == sent
    assert [m.headers() for m in received] == [
        [("seq", str(i).encode()), ("source", b"smoke")] for i in range(10)
    ]
    assert [m.offset() for m in received] == list(range(10))


def test_reading_stops_at_the_high_watermark_of_every_partition(
    kafka_broker: kafka.KafkaBroker,
) -> None:
    topic = unique_topic_name("three-partitions")
    create_topic(kafka_broker.bootstrap_servers, topic, partitions=3)
    producer = _idempotent_producer(kafka_broker)
    for partition in range(3):
        for i in range(4):
            producer.produce(
                topic, key=f"p{partition}".encode(), value=str(i).encode(), partition=partition
            )
    assert producer.flush(30) == 0

    received = read_topic_to_end(kafka_broker.bootstrap_servers, topic)

    by_partition = {p: [m.value() for m in received if m.partition() == p] for p in range(3)}
    assert by_partition == {p: [b"0", b"1", b"2", b"3"] for p in range(3)}


def test_reading_skips_an_aborted_transaction_and_ends_after_a_committed_one(
    kafka_broker: kafka.KafkaBroker, kafka_topic: str
) -> None:
    producer = _idempotent_producer(
        kafka_broker, **{"transactional.id": f"smoke-{os.getpid()}-{kafka_topic}"}
    )
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(kafka_topic, key=b"tx", value=b"aborted")
    assert producer.flush(30) == 0  # on the log before the abort, not just purged locally
    producer.abort_transaction(30)
    producer.begin_transaction()
    for i in range(3):
        producer.produce(kafka_topic, key=b"tx", value=str(i).encode())
    producer.commit_transaction(30)

    received = read_topic_to_end(kafka_broker.bootstrap_servers, kafka_topic, timeout=20)

    assert [m.value() for m in received] == [b"0", b"1", b"2"]
    assert [m.offset() for m in received] == [2, 3, 4]  # 0: aborted record, 1: abort marker


def test_reading_an_empty_topic_returns_nothing(
    kafka_broker: kafka.KafkaBroker, kafka_topic: str
) -> None:
    assert read_topic_to_end(kafka_broker.bootstrap_servers, kafka_topic, timeout=10) == []


def test_reading_a_missing_topic_says_so(kafka_broker: kafka.KafkaBroker) -> None:
    with pytest.raises(LookupError, match="no-such-topic"):
        read_topic_to_end(kafka_broker.bootstrap_servers, "no-such-topic", timeout=10)


def test_the_broker_process_is_gone_after_the_context_manager_exits() -> None:
    with kafka.running_kafka() as broker:
        assert broker.version.startswith("4.")
        assert kafka.READY_LINE in broker.log.read_text()
        pid, port, workdir = broker.pid, broker.port, broker.log.parent
        os.kill(pid, 0)  # alive while inside

    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert not processes.port_open(port)
    assert not workdir.exists()
