"""The shared column step (:mod:`cdcflow.capture.columns`) applied to a decoded PostgreSQL table.

The catalog decodes a table as the server describes it; the shared step then gives each column
its configured mapper, comment and field name, judged on the column's metadata as Debezium's
PostgreSQL connector reads it (:mod:`.metadata`: type names, lengths and scales differ between
a snapshot and the stream). The SQL names stay in :attr:`DecodedTable.source_names`, since
snapshot and chunk queries still need them. With ``include.schema.comments`` the comments come
from ``COMMENT ON COLUMN``, read when a table is decoded.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from cdcflow.capture.columns import ColumnStep
from cdcflow.capture.connectors.postgres.metadata import Origin, source_column
from cdcflow.capture.connectors.postgres.tables import ColumnSpec, DecodedTable
from cdcflow.capture.connectors.postgres.types import TypeRegistry
from cdcflow.capture.spi import TableId

#: Reads the column comments of a table, by column name.
Comments = Callable[[TableId], Mapping[str, str]]


@dataclass
class ColumnMapping:
    """The connector's column step and where its column comments come from."""

    step: ColumnStep
    comments: Comments

    def apply(
        self,
        decoded: DecodedTable,
        *,
        specs: Sequence[ColumnSpec],
        registry: TypeRegistry,
        origin: Origin,
    ) -> DecodedTable:
        """``decoded`` with mapped columns and adjusted field names (``specs`` align with its
        columns)."""
        if not self.step.maps:
            return decoded
        table = decoded.schema.id
        comments = self.comments(table) if self.step.comments else {}
        sources = [
            source_column(
                name=spec.name,
                type_oid=spec.type_oid,
                typmod=spec.typmod,
                serial=spec.sequence_default,
                registry=registry,
                origin=origin,
                comment=comments.get(spec.name),
            )
            for spec in specs
        ]
        mapped = self.step.map(decoded.schema, sources)
        return replace(
            decoded,
            schema=mapped.schema,
            converters=tuple(column.convert for column in mapped.schema.columns),
            source_names=mapped.source_names,
            value_maps=mapped.value_maps,
        )
