"""Fixture plugin: one real KRaft Kafka broker per test session, fresh topics, reading to the end.

``confluent_kafka`` is imported inside the functions that use it, so registering this plugin
does not make the unit tier depend on the Kafka client.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from cdcflow.operator.devservices import kafka

if TYPE_CHECKING:
    import confluent_kafka

TOPIC_NAME_MAX = 200
ADMIN_TIMEOUT = 30.0


@pytest.fixture(scope="session")
def kafka_broker() -> Iterator[kafka.KafkaBroker]:
    """A running single-node Kafka 4.x (KRaft, broker and controller in one JVM)."""
    with kafka.running_kafka() as broker:
        yield broker


@pytest.fixture
def kafka_topic(kafka_broker: kafka.KafkaBroker, request: pytest.FixtureRequest) -> str:
    """The name of a new, empty, one-partition topic made for this test alone."""
    name = unique_topic_name(request.node.name)
    create_topic(kafka_broker.bootstrap_servers, name)
    return name


def unique_topic_name(hint: str) -> str:
    """A legal topic name derived from ``hint`` with a random suffix."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", hint).strip("-.") or "topic"
    return f"{stem[:TOPIC_NAME_MAX]}-{uuid.uuid4().hex[:10]}"


def create_topic(bootstrap_servers: str, name: str, *, partitions: int = 1) -> None:
    """Create a topic (replication factor one) and wait until the broker confirms it."""
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    admin = AdminClient({"bootstrap.servers": bootstrap_servers})
    futures = admin.create_topics(
        [NewTopic(name, num_partitions=partitions, replication_factor=1)],
        operation_timeout=ADMIN_TIMEOUT,
        request_timeout=ADMIN_TIMEOUT,
    )
    futures[name].result(timeout=ADMIN_TIMEOUT)


def read_topic_to_end(
    bootstrap_servers: str, topic: str, *, timeout: float = 30.0, isolation: str = "read_committed"
) -> list[confluent_kafka.Message]:
    """Every committed message of ``topic`` from the beginning up to each partition's end.

    The ends are the high watermarks, queried first and read-uncommitted so that records of a
    transaction whose commit markers are still being written count; the read itself is
    read-committed, so records of aborted transactions are skipped. Messages produced after the
    query are left out (``isolation="read_uncommitted"`` reads aborted records too, as an
    at-least-once consumer would have seen them). Messages come back in offset order within
    each partition. Raises
    ``LookupError`` if the topic does not exist, ``RuntimeError`` on a consumer error (a new
    topic without a leader yet included) and
    ``TimeoutError`` if the ends are not reached within ``timeout`` seconds (for instance
    because a transaction is still open).
    """
    deadline = time.monotonic() + timeout
    probe = _consumer(bootstrap_servers, isolation="read_uncommitted")
    try:
        ends = _high_watermarks(probe, topic, timeout=timeout)
    finally:
        probe.close()
    consumer = _consumer(bootstrap_servers, isolation=isolation)
    try:
        return _consume_until(consumer, topic, ends, deadline=deadline, timeout=timeout)
    finally:
        consumer.close()


def _consumer(bootstrap_servers: str, *, isolation: str) -> confluent_kafka.Consumer:
    """A consumer in a throwaway group that never commits offsets."""
    from confluent_kafka import Consumer

    return Consumer(
        {
            "bootstrap.servers": bootstrap_servers,
            "group.id": f"read-to-end-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "isolation.level": isolation,
        }
    )


def _high_watermarks(
    consumer: confluent_kafka.Consumer, topic: str, *, timeout: float
) -> dict[int, tuple[int, int]]:
    """``{partition: (low, high)}`` for every partition of ``topic``."""
    from confluent_kafka import TopicPartition

    metadata = consumer.list_topics(topic, timeout=timeout).topics.get(topic)
    if metadata is None or metadata.error is not None or not metadata.partitions:
        reason = metadata.error if metadata is not None else "no metadata"
        raise LookupError(f"topic {topic!r} cannot be read: {reason}")
    from confluent_kafka import KafkaException

    try:
        return {
            partition: consumer.get_watermark_offsets(
                TopicPartition(topic, partition), timeout=timeout, cached=False
            )
            for partition in sorted(metadata.partitions)
        }
    except KafkaException as error:  # a topic created just now may still be electing a leader
        raise RuntimeError(f"topic {topic!r} cannot be read yet: {error}") from None


def _consume_until(
    consumer: confluent_kafka.Consumer,
    topic: str,
    ends: dict[int, tuple[int, int]],
    *,
    deadline: float,
    timeout: float,
) -> list[confluent_kafka.Message]:
    """Read the assigned partitions from ``low`` until the consumer's position reaches ``high``.

    Progress is judged by the consumer's position rather than the last message's offset, so
    transaction markers (offsets that are never delivered) do not stall the read.
    """
    from confluent_kafka import TopicPartition

    pending = {p: high for p, (low, high) in ends.items() if high > low}
    consumer.assign([TopicPartition(topic, p, ends[p][0]) for p in pending])
    messages: list[confluent_kafka.Message] = []
    while pending:
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"reading {topic!r} did not reach the high watermarks {ends} within "
                f"{timeout:.0f}s: {len(messages)} message(s) read, still waiting for "
                f"partitions {sorted(pending)}"
            )
        message = consumer.poll(0.2)
        if message is not None and _wanted(message, topic, pending):
            messages.append(message)
        for position in consumer.position([TopicPartition(topic, p) for p in pending]):
            if position.offset >= pending[position.partition]:
                del pending[position.partition]
    return messages


def _wanted(message: confluent_kafka.Message, topic: str, pending: dict[int, int]) -> bool:
    """Whether a polled message lies below its partition's end; raise on a consumer error."""
    error = message.error()
    if error is not None:
        raise RuntimeError(f"consumer error while reading {topic!r}: {error}")
    partition, offset = message.partition(), message.offset()
    if partition is None or offset is None:
        return False
    return offset < pending.get(partition, -1)
