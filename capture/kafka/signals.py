"""The Kafka signal channel: signals keyed by ``topic.prefix`` on ``signal.kafka.topic``."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from confluent_kafka import Consumer

log = logging.getLogger(__name__)


class KafkaSignalChannel:
    """Polls the signal topic without blocking the event loop."""

    def __init__(
        self,
        *,
        bootstrap_servers: str,
        topic: str,
        group_id: str,
        server: str,
        timeout_ms: int,
        client_config: Mapping[str, Any] | None = None,
    ) -> None:
        config: dict[str, Any] = {
            **(client_config or {}),
            "bootstrap.servers": bootstrap_servers,
            "group.id": group_id,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": True,
            "logger": log,
        }
        self._consumer = Consumer(config)
        self._consumer.subscribe([topic])
        self._server = server.encode()
        self._timeout = timeout_ms / 1000

    def poll(self) -> list[tuple[bytes | None, bytes | None, str]]:
        """Signals that arrived since the last poll (only those keyed by this connector)."""
        out = []
        for message in self._consumer.consume(num_messages=100, timeout=self._timeout):
            if message.error():
                log.warning("signal topic: %s", message.error())
                continue
            if message.key() != self._server:
                continue
            position = f"{message.topic()}:{message.partition()}:{message.offset()}"
            out.append((message.key(), message.value(), position))
        return out

    def close(self) -> None:
        self._consumer.close()
