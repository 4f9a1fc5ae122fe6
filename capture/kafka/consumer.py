"""Reading a topic from the beginning to its current end (for `cdcflow demo` and tooling),
and a partition's watermarks while its leader may still be being elected."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

#: A partition whose leader is being elected (a topic just created, a broker restarting).
LEADER_ELECTION = frozenset({KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE})
ELECTION_RETRY_S = 0.5


def watermarks(
    consumer: Consumer, partition: TopicPartition, *, timeout: float, cached: bool = False
) -> tuple[int, int]:
    """The partition's low and high watermarks, asked again while its leader is being elected
    (until ``timeout``); other errors raise at once."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            low, high = consumer.get_watermark_offsets(partition, timeout=timeout, cached=cached)
            return int(low), int(high)
        except KafkaException as error:
            if error.args[0].code() not in LEADER_ELECTION or time.monotonic() >= deadline:
                raise
            time.sleep(ELECTION_RETRY_S)


def read_to(consumer: Consumer, partition: TopicPartition, end: int) -> bool:
    """Whether the consumer's position on ``partition`` reached ``end``: a ``read_committed``
    consumer passes transaction markers and aborted records without returning them, so the
    last record it returns may lie before the high watermark."""
    (position,) = consumer.position([partition])
    return int(position.offset) >= end


@dataclass(frozen=True)
class TopicRecord:
    """One record as read back: raw key and value bytes (None for a tombstone)."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None


def read_to_end(bootstrap_servers: str, topic: str, *, timeout: float = 30.0) -> list[TopicRecord]:
    """Every record of ``topic`` up to the high watermarks seen when the read started."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap_servers,
            "group.id": f"cdcflow-reader-{uuid.uuid4()}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        metadata = consumer.list_topics(topic, timeout=timeout).topics[topic]
        ends = {
            partition: watermarks(consumer, TopicPartition(topic, partition), timeout=timeout)[1]
            for partition in metadata.partitions
        }
        pending = {partition: end for partition, end in ends.items() if end > 0}
        consumer.assign([TopicPartition(topic, partition, 0) for partition in pending])
        records: list[TopicRecord] = []
        while pending:
            message = consumer.poll(timeout)
            if message is None:
                raise TimeoutError(f"timed out reading {topic}")
            if message.error():
                raise RuntimeError(f"cannot read {topic}: {message.error()}")
            partition, offset = message.partition() or 0, message.offset() or 0
            records.append(TopicRecord(topic, partition, offset, message.key(), message.value()))
            if offset + 1 >= pending.get(partition, 0):
                pending.pop(partition, None)
        return records
    finally:
        consumer.close()
