"""Reading a topic from the beginning to its current end (for `cdcflow demo` and tooling)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from confluent_kafka import Consumer, TopicPartition


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
            partition: consumer.get_watermark_offsets(
                TopicPartition(topic, partition), timeout=timeout
            )[1]
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
