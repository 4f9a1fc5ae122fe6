"""Topic names, exactly as Debezium derives them from ``topic.prefix``."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from cdcflow.capture.config import EngineProperties
from cdcflow.capture.errors import FatalError
from cdcflow.capture.names import NameAdjuster, NameConflictError
from cdcflow.capture.spi import TableId

#: Kafka's limit on topic name length.
MAX_TOPIC_LENGTH = 249
_INVALID_TOPIC_CHARACTER = re.compile(r"[^A-Za-z0-9._-]")


def sanitized_topic(name: str) -> str:
    """A data topic name as Debezium's ``sanitizedTopicName`` makes it valid for Kafka: other
    characters than ``A-Za-z0-9._-`` become ``_``, the name is cut to 249 characters, and
    ``.``/``..`` become ``_``/``__``."""
    sanitized = _INVALID_TOPIC_CHARACTER.sub("_", name)[:MAX_TOPIC_LENGTH]
    if sanitized in (".", ".."):
        sanitized = "_" * len(sanitized)
    return sanitized


def _unadjusted() -> NameAdjuster:
    return NameAdjuster("none", fields=False)


@dataclass(frozen=True)
class TopicNames:
    """``<prefix>.<schema>.<table>`` data topics and the connector's side topics."""

    prefix: str
    delimiter: str
    transaction_suffix: str
    heartbeat_prefix: str
    #: ``schema.name.adjustment.mode``, applied to the Key/Value/Envelope schema names.
    schema_names: NameAdjuster = field(default_factory=_unadjusted, compare=False)

    @classmethod
    def from_properties(cls, properties: EngineProperties) -> TopicNames:
        return cls(
            prefix=properties.topic_prefix,
            delimiter=properties.topic_delimiter,
            transaction_suffix=properties.topic_transaction,
            heartbeat_prefix=properties.topic_heartbeat_prefix
            or properties.heartbeat_topics_prefix,
            schema_names=NameAdjuster(properties.schema_name_adjustment_mode, fields=False),
        )

    def data(self, table: TableId) -> str:
        """``<prefix>.<schema>.<table>``, sanitized as Debezium's default strategies do."""
        return sanitized_topic(self.delimiter.join((self.prefix, table.schema, table.table)))

    @property
    def transaction(self) -> str:
        return f"{self.prefix}{self.delimiter}{self.transaction_suffix}"

    @property
    def heartbeat(self) -> str:
        return f"{self.heartbeat_prefix}{self.delimiter}{self.prefix}"

    def schema_name(self, table: TableId, suffix: str) -> str:
        """Connect schema names: ``<data topic>.Key``, ``.Value`` and ``.Envelope``, adjusted per
        ``schema.name.adjustment.mode`` (Debezium 3.x leaves them as they are by default)."""
        try:
            return self.schema_names(f"{self.data(table)}.{suffix}")
        except NameConflictError as error:
            raise FatalError(str(error)) from None
