"""The column step every connector shares: from a table as its database describes it to the
table as events carry it (Debezium's column filters, column mappers and schema builders).

A connector decodes a table into its *full* :class:`~cdcflow.capture.spi.TableSchema` (every
column with its converter) and describes each column as Debezium's ``Column`` does
(:class:`~cdcflow.capture.mapping.SourceColumn`: type name, length, scale, comment). The same
step then applies, for every connector alike:

* ``column.include.list``/``column.exclude.list`` and ``message.key.columns``
  (:meth:`ColumnStep.keep`; key columns always stay);
* the column mappers — ``column.mask.*``, ``column.truncate.*``, ``column.mask.hash.*``,
  ``column.propagate.source.type``, ``datatype.propagate.source.type`` — and, with
  ``include.schema.comments``, each column's comment as the ``doc`` of its fields, then
  ``field.name.adjustment.mode`` (:meth:`ColumnStep.map`);
* ``event.converting.failure.handling.mode`` when a row's values are converted
  (:attr:`ColumnStep.failures`).

A key column with a mapper keeps its converter, so row tuples (and keys) hold its own value;
its field in the event value gets the mapper (:attr:`Column.value_schema`,
:attr:`Column.value_map`), as Debezium maps only that field. Renamed columns are registered
with the filters, so the column lists keep matching the names in the database.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from cdcflow.capture.config import EngineProperties
from cdcflow.capture.converting import ConvertingFailures
from cdcflow.capture.filters import Filters
from cdcflow.capture.mapping import (
    ColumnMappers,
    SourceColumn,
    ValueMap,
    apply_rule,
    apply_rule_to_value_field,
    propagation_rules,
    with_doc,
)
from cdcflow.capture.names import NameAdjuster
from cdcflow.capture.spi import Column, ColumnStructure, TableId, TableSchema

#: ``java.sql.Types`` of the character columns, the only ones masks and hashes change:
#: CHAR, VARCHAR, LONGVARCHAR, NCHAR, NVARCHAR, LONGNVARCHAR, CLOB, NCLOB.
CHARACTER_TYPES = frozenset({1, 12, -1, -15, -9, -16, 2005, 2011})


@dataclass(frozen=True)
class KeptColumns:
    """The columns of a table that events carry: their positions in the full schema and the
    schema of just those columns, keyed by the message key."""

    indexes: tuple[int, ...]
    schema: TableSchema


@dataclass(frozen=True)
class MappedTable:
    """A table's event schema after the mappers, comments and field names."""

    schema: TableSchema
    source_names: tuple[str, ...]
    """The columns' names in the database, in schema order (field names may differ)."""
    value_maps: tuple[ValueMap | None, ...]
    """Per column, its mapper's value map for values no converter produced (a placeholder
    for an unchanged TOASTed value); None for key columns and columns without a mapper."""

    def sql_names(self, fields: Iterable[str]) -> tuple[str, ...]:
        """The database's names of event fields (``field.name.adjustment.mode`` renames), for
        the queries of chunks and snapshots."""
        names = dict(zip([c.name for c in self.schema.columns], self.source_names, strict=True))
        return tuple(names[field] for field in fields)


class ColumnStep:
    """One connector's column filters, mappers, comments, field names and conversion
    failures; see the module docstring."""

    def __init__(
        self,
        *,
        filters: Filters,
        mappers: ColumnMappers,
        field_names: NameAdjuster,
        comments: bool,
        failures: ConvertingFailures,
    ) -> None:
        self.filters = filters
        self.mappers = mappers
        self.field_names = field_names
        self.comments = comments
        self.failures = failures

    @classmethod
    def from_properties(cls, properties: EngineProperties, filters: Filters) -> ColumnStep:
        rules = propagation_rules(
            properties.column_propagate_source_type, properties.datatype_propagate_source_type
        )
        return cls(
            filters=filters,
            mappers=ColumnMappers([*properties.column_rules, *rules]),
            field_names=NameAdjuster(properties.field_name_adjustment_mode, fields=True),
            comments=properties.include_schema_comments,
            failures=ConvertingFailures(properties.event_converting_failure_handling_mode),
        )

    @classmethod
    def plain(cls, filters: Filters) -> ColumnStep:
        """The step with the column lists alone: no mapper, field names as they are."""
        return cls(
            filters=filters,
            mappers=ColumnMappers(()),
            field_names=NameAdjuster("none", fields=True),
            comments=False,
            failures=ConvertingFailures("fail"),
        )

    @property
    def maps(self) -> bool:
        """Whether :meth:`map` changes anything at all."""
        return bool(self.mappers) or self.field_names.mode != "none" or self.comments

    def keep(self, full: TableSchema) -> KeptColumns:
        """The columns the column lists keep (the message key's always) and the message key."""
        table = full.id
        key = self.filters.key_columns(table, full.key_columns)
        indexes = tuple(
            i
            for i, column in enumerate(full.columns)
            if column.name in key or self.filters.keeps_column(table, column.name)
        )
        kept = tuple(full.columns[i] for i in indexes)
        return KeptColumns(indexes, TableSchema(table, kept, key))

    def map(self, schema: TableSchema, sources: Sequence[SourceColumn]) -> MappedTable:
        """``schema`` with each column's mapper, comment and field name (``sources`` describe
        its columns, in order)."""
        names = tuple(column.name for column in schema.columns)
        if not self.maps:
            return MappedTable(schema, names, (None,) * len(names))
        table, keys = schema.id, set(schema.key_columns)
        columns: list[Column] = []
        value_maps: list[ValueMap | None] = []
        for column, source in zip(schema.columns, sources, strict=True):
            comment = source.comment if self.comments else None
            described = replace(source, comment=comment)
            mapped, value_map = self._mapped(table, column, described, key=column.name in keys)
            columns.append(self._renamed(table, _documented(mapped, comment)))
            value_maps.append(value_map)
        fields = {old: new.name for old, new in zip(names, columns, strict=True)}
        key = tuple(fields.get(name, name) for name in schema.key_columns)
        return MappedTable(TableSchema(table, tuple(columns), key), names, tuple(value_maps))

    def _mapped(
        self, table: TableId, column: Column, source: SourceColumn, *, key: bool
    ) -> tuple[Column, ValueMap | None]:
        rule = self.mappers.rule_for(table, source) if self.mappers else None
        if rule is None:
            return column, None
        if key:
            return apply_rule_to_value_field(column, source, rule), None
        return apply_rule(column, source, rule)

    def _renamed(self, table: TableId, column: Column) -> Column:
        name = self.field_names(column.name)
        if name == column.name:
            return column
        self.filters.alias_column(table, field=name, column=column.name)
        return replace(column, name=name)


def source_column(structure: ColumnStructure) -> SourceColumn:
    """A column as schema history records it, described as Debezium's mappers see it."""
    return SourceColumn(
        name=structure.name,
        type_name=structure.type_name,
        length=-1 if structure.length is None else structure.length,
        scale=structure.scale,
        character=structure.jdbc_type in CHARACTER_TYPES,
        comment=structure.comment,
    )


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
