"""The table structures a MySQL connector decodes rows with, and where they come from.

:class:`Structures` is the in-memory model Debezium keeps: filled by the snapshot from the
catalog, rebuilt from the schema history on a restart, and changed by each DDL statement read
from the binlog. Event schemas (:class:`~cdcflow.capture.spi.TableSchema`) are derived from the
structures per table and cached until the table's structure changes.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from cdcflow.capture.columns import ColumnStep, MappedTable, source_column
from cdcflow.capture.connectors.mysql import ddl, structure, types
from cdcflow.capture.connectors.mysql.connection import Connection, query, quote
from cdcflow.capture.converting import CONVERSION_ERRORS, ConvertingFailures
from cdcflow.capture.errors import FatalError
from cdcflow.capture.filters import Filters
from cdcflow.capture.spi import (
    SchemaChange,
    TableChange,
    TableChangeType,
    TableId,
    TableSchema,
    TableStructure,
)

log = logging.getLogger(__name__)

TABLES_SQL = """
SELECT TABLE_SCHEMA, TABLE_NAME, TABLE_ROWS FROM information_schema.TABLES
WHERE TABLE_TYPE = 'BASE TABLE'
  AND TABLE_SCHEMA NOT IN ('mysql', 'performance_schema', 'information_schema', 'sys')
ORDER BY TABLE_SCHEMA, TABLE_NAME
"""


@dataclass(frozen=True)
class RowDecoder:
    """A table's event schema and how a binlog row (every column) or a snapshot row (the kept
    columns) becomes its values."""

    schema: TableSchema
    kept: tuple[int, ...]
    """Positions in a binlog row of the schema's columns."""
    width: int
    """Columns a binlog row of this structure has."""
    select_list: str
    """The snapshot's select list: the kept columns only."""
    mapped: MappedTable
    """The kept columns after the column step, with their names in the database."""
    failures: ConvertingFailures
    """``event.converting.failure.handling.mode``: a value that fails to convert."""

    def values(self, row: tuple[Any, ...]) -> tuple[Any, ...]:
        """The event values of a binlog row."""
        if len(row) != self.width:
            raise FatalError(
                f"a row event of {self.schema.id} has {len(row)} columns but its structure in "
                f"the schema history has {self.width}: the history does not match the binlog. "
                "Rebuild it with snapshot.mode=recovery"
            )
        # Indexed, not zip(strict=True): compiled, a C loop without a tuple per column (the
        # schema's columns and ``kept`` are built together, equally long).
        columns = self.schema.columns
        kept = self.kept
        try:
            if len(columns) == self.width:
                return tuple([column.convert(row[i]) for i, column in enumerate(columns)])
            return tuple([column.convert(row[kept[i]]) for i, column in enumerate(columns)])
        except CONVERSION_ERRORS:
            return self._one_by_one(tuple([row[i] for i in kept]))

    def convert(self, row: tuple[Any, ...]) -> tuple[Any, ...]:
        """The event values of a snapshot or chunk row (the select list's columns)."""
        columns = self.schema.columns
        if len(row) != len(columns):
            raise ValueError(f"{self.schema.id}: {len(row)} values for {len(columns)} columns")
        try:
            return tuple([column.convert(row[i]) for i, column in enumerate(columns)])
        except CONVERSION_ERRORS:
            return self._one_by_one(row)

    def _one_by_one(self, row: tuple[Any, ...]) -> tuple[Any, ...]:
        """A row one of whose values failed: column by column, as the failure mode says."""
        columns = self.schema.columns
        converters = [column.convert for column in columns]
        return self.failures.row(self.schema.id, columns, converters, row)


@dataclass(frozen=True)
class Applied:
    """One table change a binlog DDL statement made, with the DDL text recorded for it."""

    database: str
    ddl: str
    change: TableChange


class Structures:
    """See the module docstring."""

    def __init__(
        self,
        *,
        filters: Filters,
        options: types.TypeOptions,
        skip_unparseable: bool,
        only_captured: bool = False,
        columns: ColumnStep | None = None,
    ) -> None:
        self._filters = filters
        self._columns = columns or ColumnStep.plain(filters)
        self._only_captured = only_captured
        self._options = options
        self._skip_unparseable = skip_unparseable
        self._charsets = ddl.Charsets()
        self._tables: dict[TableId, TableStructure] = {}
        self._decoders: dict[TableId, RowDecoder] = {}

    def __contains__(self, table: TableId) -> bool:
        return table in self._tables

    def structure(self, table: TableId) -> TableStructure | None:
        return self._tables.get(table)

    def schema(self, table: TableId) -> TableSchema | None:
        """The event schema of ``table`` (None when its structure is unknown)."""
        decoder = self.decoder(table)
        return decoder.schema if decoder is not None else None

    def decoder(self, table: TableId) -> RowDecoder | None:
        """How rows of ``table`` become event values (None when its structure is unknown)."""
        cached = self._decoders.get(table)
        if cached is None and table in self._tables:
            cached = self._decoders[table] = self._decoder(self._tables[table])
        return cached

    def _decoder(self, table: TableStructure) -> RowDecoder:
        """The shared column step: column lists, message key, mappers, field names."""
        full = types.table_schema(table, self._options)
        kept = self._columns.keep(full)
        described = [source_column(table.columns[i]) for i in kept.indexes]
        mapped = self._columns.map(kept.schema, described)
        select = ", ".join(types.snapshot_expression(table.columns[i]) for i in kept.indexes)
        return RowDecoder(
            mapped.schema,
            kept.indexes,
            len(full.columns),
            select,
            mapped,
            self._columns.failures,
        )

    def select_list(self, table: TableId) -> str:
        """The kept columns of ``table`` as a snapshot or chunk reads them (exact FLOATs)."""
        decoder = self.decoder(table)
        assert decoder is not None, f"no structure for {table}"
        return decoder.select_list

    def replay(self, changes: Iterable[TableChange]) -> None:
        """Apply recorded (or just made) table changes to the model."""
        for change in changes:
            if change.previous_id is not None:
                self._forget(change.previous_id)
            if change.type is TableChangeType.DROP:
                self._forget(change.table.id)
            else:
                self._forget(change.table.id)
                self._tables[change.table.id] = change.table

    def recover(self, changes: Iterable[SchemaChange]) -> None:
        """Rebuild the model from recorded schema changes."""
        for change in changes:
            self.replay(change.changes)

    def use_charsets(self, charsets: ddl.Charsets) -> None:
        """The server's and databases' default charsets, for tables created without one."""
        self._charsets = charsets

    def apply(self, statement: str, *, database: str) -> list[Applied]:
        """Apply a DDL statement from the binlog; what to record of it: one entry per DDL text
        Debezium records (``DROP TABLE a, b`` is two), captured tables only."""
        try:
            outcome = ddl.apply_ddl(
                statement, database=database or None, tables=self._tables, charsets=self._charsets
            )
        except ddl.UnparseableDdl as error:
            if self._skip_unparseable:
                log.warning("skipping DDL the parser cannot read: %s", error)
                return []
            raise FatalError(
                f"{error}. Set schema.history.internal.skip.unparseable.ddl=true to skip "
                "statements the parser cannot read (their tables' structures may then be stale)"
            ) from None
        if outcome.charsets is not None:
            self._charsets = outcome.charsets
        if outcome.dropped_database is not None:
            for table in [t for t in self._tables if t.schema == outcome.dropped_database]:
                self._forget(table)
        self.replay(outcome.changes)
        texts = outcome.statements or (statement,) * len(outcome.changes)
        return [
            Applied(outcome.database or database, text, change)
            for text, change in zip(texts, outcome.changes, strict=False)
            if self._captured(change)
        ]

    def recorded(self, table: TableId) -> bool:
        """Whether DDL of ``table`` is recorded and announced: a captured table's, or (unless
        ``schema.history.internal.store.only.captured.tables.ddl``) any table's of a database
        the database filters pass, as Debezium records them."""
        if self._filters.captures(table):
            return True
        return not self._only_captured and self._filters.captures_database(table.schema)

    def _captured(self, change: TableChange) -> bool:
        previous = change.previous_id
        return self.recorded(change.table.id) or (previous is not None and self.recorded(previous))

    def _forget(self, table: TableId) -> None:
        self._tables.pop(table, None)
        self._decoders.pop(table, None)


def all_tables(conn: Connection) -> dict[TableId, int]:
    """Every base table outside the system databases, with the server's row estimates."""
    return {TableId(str(s), str(t)): int(rows or 0) for s, t, rows in query(conn, TABLES_SQL)}


def read_structure(conn: Connection, table: TableId) -> TableStructure:
    """``table``'s structure from information_schema, as the snapshot records it."""
    args = (table.schema, table.table)
    rows = query(conn, structure.CATALOG_COLUMNS_SQL, args)
    columns = [structure.CatalogColumn(*row) for row in rows]
    if not columns:
        raise FatalError(f"table {table} vanished while the snapshot read its structure")
    key = [str(row[0]) for row in query(conn, structure.PRIMARY_KEY_SQL, args)]
    return structure.table_from_catalog(
        table,
        columns,
        primary_key=key,
        default_charset=_first(query(conn, structure.TABLE_CHARSET_SQL, args)),
        comment=_first(query(conn, structure.TABLE_COMMENT_SQL, args)),
    )


def charsets(conn: Connection) -> ddl.Charsets:
    """The server's and every database's default charset now."""
    server = _first(query(conn, "SELECT @@character_set_server"))
    rows = query(
        conn, "SELECT SCHEMA_NAME, DEFAULT_CHARACTER_SET_NAME FROM information_schema.SCHEMATA"
    )
    return ddl.Charsets(server, {str(name): str(charset) for name, charset in rows})


def _first(rows: list[Any]) -> str | None:
    return str(rows[0][0]) if rows and rows[0][0] is not None else None


def show_create(conn: Connection, table: TableId) -> str:
    """The server's own DDL for ``table`` (``SHOW CREATE TABLE``), recorded to history."""
    rows = query(conn, f"SHOW CREATE TABLE {quote(table.schema)}.{quote(table.table)}")
    return str(rows[0][1])
