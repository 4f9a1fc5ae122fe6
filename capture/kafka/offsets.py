"""Offsets in a compacted Kafka topic, keyed exactly like Kafka Connect's ``connect-offsets``.

``load`` reads the topic to its end and keeps the last value for this connector's key (a null
value is a reset); ``save`` produces the new value and waits for the acknowledgement.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from typing import Any

import orjson
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from cdcflow.capture.errors import RetriableError
from cdcflow.capture.kafka.consumer import watermarks
from cdcflow.capture.offsets import partition_key
from cdcflow.capture.spi import Offset

READ_TIMEOUT_S = 30.0
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
    ) -> None:
        self._bootstrap = bootstrap_servers
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
            while position < high:
                message = consumer.poll(READ_TIMEOUT_S)
                if message is None:
                    raise RetriableError(f"timed out reading offsets topic {self.topic}")
                if message.error():
                    raise RetriableError(f"cannot read offsets topic: {message.error()}")
                out.append((message.key(), message.value()))
                position = (message.offset() or 0) + 1
            return out
        finally:
            consumer.close()

    def save(self, offset: Offset) -> None:
        self._write(orjson.dumps(offset.to_dict()))

    def reset(self) -> None:
        self._write(None)

    def _write(self, value: bytes | None) -> None:
        self._producer.produce(self.topic, value, self._key)
        if self._producer.flush(READ_TIMEOUT_S) > 0:
            raise RetriableError(f"offset write to {self.topic} was not acknowledged in time")

    def close(self) -> None:
        self._producer.flush(READ_TIMEOUT_S)
        self._producer.close()
