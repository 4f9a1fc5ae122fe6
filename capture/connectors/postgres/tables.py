"""Table schemas of captured PostgreSQL tables, from Relation messages and the catalog.

pgoutput tells column names and types but not which columns form the primary key or which
are NOT NULL, so both come from the catalog (the side channel the seed document describes).
A :class:`DecodedTable` pairs the event schema with the per-column converters and the
positions of supported columns inside pgoutput's tuples; unsupported types are left out with
a warning, as Debezium does unless ``include.unknown.datatypes`` is set.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import psycopg

from cdcflow.capture.connectors.postgres import defaults, types
from cdcflow.capture.errors import FatalError
from cdcflow.capture.filters import Filters
from cdcflow.capture.mapping import ValueMap
from cdcflow.capture.names import NameConflictError
from cdcflow.capture.spi import Column, Converter, TableId, TableSchema

if TYPE_CHECKING:
    from cdcflow.capture.connectors.postgres.columns import ColumnMapping
    from cdcflow.capture.connectors.postgres.metadata import Origin

log = logging.getLogger(__name__)

COLUMNS_SQL = """
SELECT a.attname, a.atttypid, a.atttypmod, a.attnotnull, pg_get_expr(d.adbin, d.adrelid)
FROM pg_attribute a
LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
WHERE a.attrelid = %s AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY a.attnum
"""
PRIMARY_KEY_SQL = """
SELECT a.attname
FROM pg_index i
CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord)
JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
WHERE i.indrelid = %s AND i.indisprimary
ORDER BY k.ord
"""
IDENTITY_INDEX_SQL = """
SELECT a.attname
FROM pg_index i
CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord)
JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
WHERE i.indrelid = %s AND i.indisreplident
ORDER BY k.ord
"""
RELATION_SQL = """
SELECT c.oid, c.relreplident
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = %s AND c.relname = %s
"""


@dataclass(frozen=True)
class ColumnSpec:
    """A column as the server describes it."""

    name: str
    type_oid: int
    typmod: int
    not_null: bool
    #: The ``DEFAULT`` expression as ``pg_get_expr`` prints it, if the column has one.
    default_expression: str | None = None

    @property
    def sequence_default(self) -> bool:
        """``NOT NULL DEFAULT nextval(…)``: a serial column."""
        return self.not_null and (self.default_expression or "").startswith("nextval(")


@dataclass(frozen=True)
class DecodedTable:
    """Everything needed to turn pgoutput tuples of one relation into event rows."""

    schema: TableSchema
    positions: tuple[int, ...]
    converters: tuple[Converter, ...]
    binary: tuple[bool, ...]
    identity: str
    #: The columns' SQL names, when events name them otherwise (field.name.adjustment.mode).
    source_names: tuple[str, ...] = ()
    #: Per column, the column mapper's value map, for values no converter produced
    #: (the unavailable-value placeholder); None where no mapper applies.
    value_maps: tuple[ValueMap | None, ...] = ()

    @property
    def sql_names(self) -> tuple[str, ...]:
        """The columns' names as SQL knows them, in schema order."""
        return self.source_names or tuple(column.name for column in self.schema.columns)


class TableCatalog:
    """Builds and caches table schemas; owns the type registry."""

    def __init__(
        self,
        connection: psycopg.Connection[tuple[object, ...]],
        *,
        options: types.TypeOptions,
        filters: Filters,
        mapping: ColumnMapping | None = None,
    ) -> None:
        self._conn = connection
        self._options = options
        self._filters = filters
        self._mapping = mapping
        self._registry = self._load_registry()

    def _load_registry(self) -> types.TypeRegistry:
        rows = self._conn.execute(types.CATALOG_QUERY).fetchall()
        return types.TypeRegistry.from_rows(rows)

    def type_oids(self) -> list[int]:
        """Every type oid the server knows (for raw-text loaders on the snapshot connection)."""
        return self._registry.oids()

    def relation_oid(self, table: TableId) -> tuple[int, str] | None:
        """The relation oid and replica identity of ``table``, or None if it does not exist."""
        row = self._conn.execute(RELATION_SQL, (table.schema, table.table)).fetchone()
        if row is None:
            return None
        return int(str(row[0])), str(row[1])

    def from_catalog(self, table: TableId) -> DecodedTable | None:
        """The current schema of ``table`` read from the catalog (used by the snapshot)."""
        found = self.relation_oid(table)
        if found is None:
            return None
        relid, identity = found
        rows = self._conn.execute(COLUMNS_SQL, (relid,)).fetchall()
        columns = [
            ColumnSpec(str(name), int(str(oid)), int(str(mod)), bool(nn), _text(default))
            for name, oid, mod, nn, default in rows
        ]
        return self._build(table, relid=relid, columns=columns, identity=identity)

    def from_relation(
        self, table: TableId, *, relid: int, columns: Sequence[ColumnSpec], identity: str
    ) -> DecodedTable:
        """The schema announced by a Relation message, completed from the catalog."""
        catalog = {
            str(name): (bool(nn), _text(default))
            for name, _oid, _mod, nn, default in self._conn.execute(
                COLUMNS_SQL, (relid,)
            ).fetchall()
        }
        completed = [
            ColumnSpec(c.name, c.type_oid, c.typmod, *catalog.get(c.name, (False, None)))
            for c in columns
        ]
        return self._build(
            table, relid=relid, columns=completed, identity=identity, origin="stream"
        )

    def _build(
        self,
        table: TableId,
        *,
        relid: int,
        columns: Sequence[ColumnSpec],
        identity: str,
        origin: Origin = "snapshot",
    ) -> DecodedTable:
        kept: list[Column] = []
        positions: list[int] = []
        for position, spec in enumerate(columns):
            column = self._column(table, spec)
            if column is not None:
                kept.append(column)
                positions.append(position)
        names = [column.name for column in kept]
        key = self._filters.key_columns(table, self._primary_key(relid, identity))
        missing = [name for name in key if name not in names]
        if missing:
            log.warning("key column(s) %s of %s are not captured; using no key", missing, table)
            key = ()
        schema = TableSchema(table, tuple(kept), tuple(key))
        decoded = DecodedTable(
            schema=schema,
            positions=tuple(positions),
            converters=tuple(column.convert for column in kept),
            binary=tuple(column.schema.get("type") == "bytes" for column in kept),
            identity=identity,
        )
        if self._mapping is None:
            return decoded
        specs = [columns[position] for position in positions]
        try:
            return self._mapping.apply(decoded, specs=specs, registry=self._registry, origin=origin)
        except NameConflictError as error:
            raise FatalError(str(error)) from None

    def _column(self, table: TableId, spec: ColumnSpec) -> Column | None:
        column = types.column_for(
            name=spec.name,
            type_oid=spec.type_oid,
            typmod=spec.typmod,
            optional=not spec.not_null,
            registry=self._registry,
            options=self._options,
        )
        if column is None and self._registry.get(spec.type_oid) is None:
            self._registry = self._load_registry()  # a type created after we started
            column = types.column_for(
                name=spec.name,
                type_oid=spec.type_oid,
                typmod=spec.typmod,
                optional=not spec.not_null,
                registry=self._registry,
                options=self._options,
            )
        if column is not None:
            column = self._with_default(column, spec)
        if column is None:
            log.warning(
                "column %s.%s has a type cdcflow does not map (oid %s); it is left out of events. "
                "Set include.unknown.datatypes=true to emit it as opaque bytes.",
                table,
                spec.name,
                spec.type_oid,
            )
        return column

    def _with_default(self, column: Column, spec: ColumnSpec) -> Column:
        """The column with its ``DEFAULT`` in the schema, as Debezium describes it."""
        declared = self._registry.get(spec.type_oid)
        if declared is None or spec.default_expression is None:
            return column
        text = defaults.literal(declared.name, spec.default_expression, enum=declared.is_enum)
        return defaults.with_default(
            column, text, replace_nulls=self._options.replace_null_with_default
        )

    def _primary_key(self, relid: int, identity: str) -> tuple[str, ...]:
        """The primary key, else the columns of a ``REPLICA IDENTITY USING INDEX`` index.

        Both come from the catalog, so snapshot and streamed events of a table get one key.
        """
        rows = self._conn.execute(PRIMARY_KEY_SQL, (relid,)).fetchall()
        if not rows and identity == "i":
            rows = self._conn.execute(IDENTITY_INDEX_SQL, (relid,)).fetchall()
        return tuple(str(row[0]) for row in rows)


def _text(value: object) -> str | None:
    return None if value is None else str(value)
