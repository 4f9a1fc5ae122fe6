"""Column mappers and field-name adjustment applied to the event schema of a decoded table.

The catalog decodes a table as the server describes it; this step then gives each column its
configured mapper (:mod:`cdcflow.capture.mapping`, judged on the column's metadata as Debezium
reads it, :mod:`.metadata`) and its field name (``field.name.adjustment.mode``). The SQL
names stay in :attr:`DecodedTable.source_names`, since snapshot and chunk queries still need
them, and renamed columns are registered with the filters so ``column.include.list`` and
``column.exclude.list`` keep matching the names in the database, as in Debezium.

Key columns are never mapped: Debezium builds keys without mappers, and an event row here
is one tuple for key and value alike, so mapping a key column would change the key too. A
warning says so when a rule matches one.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from cdcflow.capture.connectors.postgres.metadata import Origin, source_column
from cdcflow.capture.connectors.postgres.tables import ColumnSpec, DecodedTable
from cdcflow.capture.connectors.postgres.types import TypeRegistry
from cdcflow.capture.filters import Filters
from cdcflow.capture.mapping import ColumnMappers, ValueMap, apply_rule
from cdcflow.capture.names import NameAdjuster
from cdcflow.capture.spi import Column, TableId, TableSchema

log = logging.getLogger(__name__)


@dataclass
class ColumnMapping:
    """The connector's column mappers and field namer; see the module docstring."""

    mappers: ColumnMappers
    field_names: NameAdjuster
    filters: Filters
    _warned: set[tuple[TableId, str]] = field(default_factory=set, repr=False)

    @property
    def active(self) -> bool:
        """Whether applying changes anything at all."""
        return bool(self.mappers) or self.field_names.mode != "none"

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
        if not self.active:
            return decoded
        table = decoded.schema.id
        keys = set(decoded.schema.key_columns)
        columns: list[Column] = []
        value_maps: list[ValueMap | None] = []
        for column, spec in zip(decoded.schema.columns, specs, strict=True):
            mapped, value_map = self._map(table, column, spec, registry, origin, keys)
            columns.append(self._rename(table, mapped))
            value_maps.append(value_map)
        fields = {
            old.name: new.name for old, new in zip(decoded.schema.columns, columns, strict=True)
        }
        schema = TableSchema(
            table, tuple(columns), tuple(fields[name] for name in decoded.schema.key_columns)
        )
        return replace(
            decoded,
            schema=schema,
            converters=tuple(column.convert for column in columns),
            source_names=tuple(column.name for column in decoded.schema.columns),
            value_maps=tuple(value_maps),
        )

    def _map(
        self,
        table: TableId,
        column: Column,
        spec: ColumnSpec,
        registry: TypeRegistry,
        origin: Origin,
        keys: set[str],
    ) -> tuple[Column, ValueMap | None]:
        if not self.mappers:
            return column, None
        source = source_column(
            name=spec.name,
            type_oid=spec.type_oid,
            typmod=spec.typmod,
            serial=spec.sequence_default,
            registry=registry,
            origin=origin,
        )
        rule = self.mappers.rule_for(table, source)
        if rule is None:
            return column, None
        if column.name in keys:
            self._warn_key(table, column.name)
            return column, None
        return apply_rule(column, source, rule)

    def _warn_key(self, table: TableId, name: str) -> None:
        if (table, name) in self._warned:
            return
        self._warned.add((table, name))
        log.warning(
            "column %s.%s is part of the message key: its column mapper is not applied (keys "
            "are never mapped, and the value field of a key column stays as the key has it)",
            table,
            name,
        )

    def _rename(self, table: TableId, column: Column) -> Column:
        name = self.field_names(column.name)
        if name == column.name:
            return column
        self.filters.alias_column(table, field=name, column=column.name)
        return replace(column, name=name)
