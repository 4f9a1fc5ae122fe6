"""Topic names, exactly as Debezium derives them from ``topic.prefix``."""

from __future__ import annotations

from dataclasses import dataclass

from cdcflow.capture.config import ConnectorProperties
from cdcflow.capture.spi import TableId


@dataclass(frozen=True)
class TopicNames:
    """``<prefix>.<schema>.<table>`` data topics and the connector's side topics."""

    prefix: str
    delimiter: str
    transaction_suffix: str
    heartbeat_prefix: str

    @classmethod
    def from_properties(cls, properties: ConnectorProperties) -> TopicNames:
        return cls(
            prefix=properties.topic_prefix,
            delimiter=properties.topic_delimiter,
            transaction_suffix=properties.topic_transaction,
            heartbeat_prefix=properties.heartbeat_topics_prefix,
        )

    def data(self, table: TableId) -> str:
        return self.delimiter.join((self.prefix, table.schema, table.table))

    @property
    def transaction(self) -> str:
        return f"{self.prefix}{self.delimiter}{self.transaction_suffix}"

    @property
    def heartbeat(self) -> str:
        return f"{self.heartbeat_prefix}{self.delimiter}{self.prefix}"

    def schema_name(self, table: TableId, suffix: str) -> str:
        """Connect schema names such as ``<prefix>.<schema>.<table>.Envelope`` (Avro-safe)."""
        parts = (self.prefix, table.schema, table.table, suffix)
        return ".".join(_avro_safe(part) for part in parts)


def _avro_safe(part: str) -> str:
    safe = "".join(ch if ch.isalnum() or ch in "_." else "_" for ch in part)
    return safe if safe[:1].isalpha() or safe[:1] == "_" else f"_{safe}"
