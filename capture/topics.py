"""Topic names, exactly as Debezium derives them from ``topic.prefix``."""

from __future__ import annotations

from dataclasses import dataclass, field

from cdcflow.capture.config import ConnectorProperties
from cdcflow.capture.errors import FatalError
from cdcflow.capture.names import NameAdjuster, NameConflictError
from cdcflow.capture.spi import TableId


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
    def from_properties(cls, properties: ConnectorProperties) -> TopicNames:
        return cls(
            prefix=properties.topic_prefix,
            delimiter=properties.topic_delimiter,
            transaction_suffix=properties.topic_transaction,
            heartbeat_prefix=properties.heartbeat_topics_prefix,
            schema_names=NameAdjuster(properties.schema_name_adjustment_mode, fields=False),
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
        """Connect schema names: ``<data topic>.Key``, ``.Value`` and ``.Envelope``, adjusted per
        ``schema.name.adjustment.mode`` (Debezium 3.x leaves them as they are by default)."""
        try:
            return self.schema_names(f"{self.data(table)}.{suffix}")
        except NameConflictError as error:
            raise FatalError(str(error)) from None
