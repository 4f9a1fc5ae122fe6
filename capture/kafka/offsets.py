"""Offsets in a compacted Kafka topic, keyed exactly like Kafka Connect's ``connect-offsets``.

``load`` reads the topic to its end (committed records only) and keeps the last value for this
connector's key (a null value is a reset); ``save`` produces the new value and waits for the
acknowledgement. Under exactly-once the store writes through the connector's transactional
sink instead: ``save`` adds the offset to the open transaction and commits it, so the offset
and the records it covers become visible together or not at all.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Mapping
from typing import Any

import orjson
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from cdcflow.capture.errors import RetriableError
from cdcflow.capture.kafka.consumer import read_to, watermarks
from cdcflow.capture.kafka.producer import KafkaSink
from cdcflow.capture.offsets import partition_key
from cdcflow.capture.spi import Offset, Record

READ_TIMEOUT_S = 30.0
#: One poll's wait before the position is checked against the end.
EMPTY_POLL_S = 0.5
log = logging.getLogger(__name__)


class KafkaOffsetStore:
    """Offsets stored as records of a compacted topic."""

    def __init__(
        self,
        *,
        bootstrap_servers: str,
        topic: str,
        connector: str,
        server: str,
        client_config: Mapping[str, Any] | None = None,
        transactions: KafkaSink | None = None,
    ) -> None:
        self._bootstrap = bootstrap_servers
        #: The transactional sink the offsets commit with (exactly-once), else None.
        self._transactions = transactions
        self._security = dict(client_config or {})
        self.topic = topic
        self._key = orjson.dumps(partition_key(connector, server))
        config: dict[str, Any] = {
            **self._security,
            "bootstrap.servers": bootstrap_servers,
            "enable.idempotence": True,
            "acks": "all",
            "logger": log,
        }
        self._producer = Producer(config)
        self._ensure_topic()

    def _ensure_topic(self) -> None:
        admin_config: dict[str, Any] = {
            **self._security,
            "bootstrap.servers": self._bootstrap,
            "logger": log,
        }
        admin = AdminClient(admin_config)
        if self.topic in admin.list_topics(timeout=30).topics:
            return
        config = {"cleanup.policy": "compact"}
        future = admin.create_topics([NewTopic(self.topic, 1, 1, config=config)])[self.topic]
        try:
            future.result()
        except KafkaException as error:
            if "TOPIC_ALREADY_EXISTS" not in str(error):
                raise

    def load(self) -> Offset | None:
        if self._transactions is not None:
            # fence a killed predecessor first: its open transaction is aborted, so reading
            # committed records is not held up until the broker times it out
            self._transactions.start_transactions()
        latest: dict[str, Any] | None = None
        for key, value in self._read_all():
            if key == self._key:
                latest = None if value is None else orjson.loads(value)
        return None if latest is None else Offset.from_dict(latest)

    def _read_all(self) -> list[tuple[bytes | None, bytes | None]]:
        consumer = Consumer(
            {
                **self._security,
                "bootstrap.servers": self._bootstrap,
                "group.id": f"cdcflow-offsets-{uuid.uuid4()}",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "isolation.level": "read_committed",
            }
        )
        try:
            try:
                _, high = watermarks(consumer, TopicPartition(self.topic, 0), timeout=30)
            except KafkaException as error:
                raise RetriableError(
                    f"cannot read the end of offsets topic {self.topic}: {error.args[0].str()}"
                ) from None
            consumer.assign([TopicPartition(self.topic, 0, 0)])
            out: list[tuple[bytes | None, bytes | None]] = []
            position = 0
            deadline = time.monotonic() + READ_TIMEOUT_S
            while position < high:
                message = consumer.poll(EMPTY_POLL_S)
                if message is None:
                    if read_to(consumer, TopicPartition(self.topic, 0), high):
                        break  # the rest are transaction markers or aborted records
                    if time.monotonic() > deadline:
                        raise RetriableError(f"timed out reading offsets topic {self.topic}")
                    continue
                if message.error():
                    raise RetriableError(f"cannot read offsets topic: {message.error()}")
                out.append((message.key(), message.value()))
                position = (message.offset() or 0) + 1
            return out
        finally:
            consumer.close()

    def save(self, offset: Offset) -> None:
        value = orjson.dumps(offset.to_dict())
        if self._transactions is None:
            self._write(value)
            return
        self._transactions.write(Record(self.topic, self._key, value))
        self._transactions.commit_transaction()

    def reset(self) -> None:
        self._write(None)

    def _write(self, value: bytes | None) -> None:
        self._producer.produce(self.topic, value, self._key)
        if self._producer.flush(READ_TIMEOUT_S) > 0:
            raise RetriableError(f"offset write to {self.topic} was not acknowledged in time")

    def close(self) -> None:
        self._producer.flush(READ_TIMEOUT_S)
        self._producer.close()
