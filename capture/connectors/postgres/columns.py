"""Column mappers and field-name adjustment applied to the event schema of a decoded table.

The catalog decodes a table as the server describes it; this step then gives each column its
configured mapper (:mod:`cdcflow.capture.mapping`, judged on the column's metadata as Debezium
reads it, :mod:`.metadata`) and its field name (``field.name.adjustment.mode``). The SQL
names stay in :attr:`DecodedTable.source_names`, since snapshot and chunk queries still need
them, and renamed columns are registered with the filters so ``column.include.list`` and
``column.exclude.list`` keep matching the names in the database, as in Debezium.

A key column with a mapper keeps its converter, so row tuples (and keys) hold its own value;
its field in the event value gets the mapper (:attr:`Column.value_schema`,
:attr:`Column.value_map`), which the serializer applies, as Debezium maps only that field.

With ``include.schema.comments`` each column's comment (``COMMENT ON COLUMN``) becomes the
``doc`` of its field, in the key and the value, and with source-type propagation also the
``__debezium.source.column.comment`` parameter.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from cdcflow.capture.connectors.postgres.metadata import Origin, source_column
from cdcflow.capture.connectors.postgres.tables import ColumnSpec, DecodedTable
from cdcflow.capture.connectors.postgres.types import TypeRegistry
from cdcflow.capture.filters import Filters
from cdcflow.capture.mapping import (
    ColumnMappers,
    ValueMap,
    apply_rule,
    apply_rule_to_value_field,
    with_doc,
)
from cdcflow.capture.names import NameAdjuster
from cdcflow.capture.spi import Column, TableId, TableSchema

#: Reads the column comments of a table, by column name.
Comments = Callable[[TableId], Mapping[str, str]]


@dataclass
class ColumnMapping:
    """The connector's column mappers, field namer and comment reader; see the module
    docstring."""

    mappers: ColumnMappers
    field_names: NameAdjuster
    filters: Filters
    #: ``include.schema.comments``: where column comments come from (None: not read).
    comments: Comments | None = None

    @property
    def active(self) -> bool:
        """Whether applying changes anything at all."""
        return bool(self.mappers) or self.field_names.mode != "none" or self.comments is not None

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
        comments = self.comments(table) if self.comments is not None else {}
        columns: list[Column] = []
        value_maps: list[ValueMap | None] = []
        for column, spec in zip(decoded.schema.columns, specs, strict=True):
            comment = comments.get(spec.name)
            mapped, value_map = self._map(table, column, spec, registry, origin, keys, comment)
            columns.append(self._rename(table, _documented(mapped, comment)))
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
        comment: str | None,
    ) -> tuple[Column, ValueMap | None]:
        """The column with its mapper, and the value map for values no converter produced
        (None for key columns, whose row values stay unmapped)."""
        if not self.mappers:
            return column, None
        source = source_column(
            name=spec.name,
            type_oid=spec.type_oid,
            typmod=spec.typmod,
            serial=spec.sequence_default,
            registry=registry,
            origin=origin,
            comment=comment,
        )
        rule = self.mappers.rule_for(table, source)
        if rule is None:
            return column, None
        if column.name in keys:
            return apply_rule_to_value_field(column, source, rule), None
        return apply_rule(column, source, rule)

    def _rename(self, table: TableId, column: Column) -> Column:
        name = self.field_names(column.name)
        if name == column.name:
            return column
        self.filters.alias_column(table, field=name, column=column.name)
        return replace(column, name=name)


def _documented(column: Column, comment: str | None) -> Column:
    """The column with its comment as the ``doc`` of its key and value fields."""
    if comment is None:
        return column
    value_schema = column.value_schema
    return replace(
        column,
        schema=with_doc(column.schema, comment),
        value_schema=with_doc(value_schema, comment) if value_schema is not None else None,
    )
