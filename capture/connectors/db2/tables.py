"""The Db2 connector's table structures: the catalog reads and the model rows decode with.

Structures come from the catalog (``SYSCAT.COLUMNS``) when a table is snapshotted or enters
capture mode and from schema history on a restart; change-data rows decode with them by
column name, so a CD table that gained a column (the online schema-update procedure) decodes
with the recorded structure until the connector records the new one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from cdcflow.capture.connectors.db2 import sql, structure, types
from cdcflow.capture.connectors.db2.connection import Connection
from cdcflow.capture.connectors.db2.lsn import Lsn
from cdcflow.capture.filters import Filters
from cdcflow.capture.spi import TableChange, TableChangeType, TableId, TableSchema, TableStructure


@dataclass(frozen=True)
class Registration:
    """A table in capture mode: its row of ``IBMSNAP_REGISTER``."""

    table: TableId
    cd_schema: str
    cd_table: str
    active: bool
    start: Lsn | None
    stop: Lsn | None


def registrations(conn: Connection, statements: sql.AsnStatements) -> dict[TableId, Registration]:
    """Every table in capture mode, by source table."""
    found: dict[TableId, Registration] = {}
    for owner, name, cd_owner, cd_table, state, start, stop in conn.query(statements.registrations):
        table = TableId(str(owner).strip(), str(name).strip())
        found[table] = Registration(
            table=table,
            cd_schema=str(cd_owner).strip(),
            cd_table=str(cd_table).strip(),
            active=str(state or "").strip() == "A",
            start=Lsn.of(start) if start is not None else None,
            stop=Lsn.of(stop) if stop is not None else None,
        )
    return found


def all_tables(conn: Connection) -> dict[TableId, int]:
    """Every regular table outside the catalog schemas, with its row estimate."""
    return {
        TableId(str(schema).strip(), str(name).strip()): max(int(card or 0), 0)
        for schema, name, card in conn.query(sql.TABLES)
    }


def read_structure(conn: Connection, table: TableId) -> TableStructure | None:
    """The table's structure as the catalog describes it now (None if it does not exist)."""
    rows = conn.query(sql.COLUMNS, (table.schema, table.table))
    return structure.table_structure(table, rows) if rows else None


class Decoder:
    """Turns a row of a change-data table or a snapshot query into a row tuple."""

    def __init__(self, schema: TableSchema) -> None:
        self.schema = schema
        self.names = tuple(column.name for column in schema.columns)
        self._converters = tuple(column.convert for column in schema.columns)
        self._layouts: dict[tuple[str, ...], tuple[int | None, ...]] = {}

    def layout(self, names: Sequence[str]) -> tuple[int | None, ...]:
        """Where each column of the schema is in a result with columns ``names`` (None: the
        result lacks it, e.g. a CD table created before the column was added)."""
        key = tuple(names)
        cached = self._layouts.get(key)
        if cached is None:
            index = {name: i for i, name in enumerate(key)}
            cached = self._layouts[key] = tuple(index.get(n) for n in self.names)
        return cached

    def values(self, row: Sequence[Any], layout: tuple[int | None, ...]) -> tuple[Any, ...]:
        return tuple(
            convert(row[i] if i is not None else None)
            for convert, i in zip(self._converters, layout, strict=True)
        )

    def ordered(self, row: Sequence[Any]) -> tuple[Any, ...]:
        """A row whose columns are the schema's, in order (a snapshot read)."""
        return tuple(convert(v) for convert, v in zip(self._converters, row, strict=True))


class Structures:
    """Table structures by table, and the decoders of the captured ones."""

    def __init__(self, *, filters: Filters, options: types.TypeOptions) -> None:
        self._filters = filters
        self._options = options
        self._tables: dict[TableId, TableStructure] = {}
        self._decoders: dict[TableId, Decoder] = {}

    def __contains__(self, table: TableId) -> bool:
        return table in self._tables

    def structure(self, table: TableId) -> TableStructure | None:
        return self._tables.get(table)

    def decoder(self, table: TableId) -> Decoder | None:
        """The decoder of ``table`` (None when its structure is unknown); kept columns per
        ``column.include/exclude.list``, the key per ``message.key.columns``."""
        cached = self._decoders.get(table)
        if cached is None and table in self._tables:
            full = types.table_schema(self._tables[table], self._options)
            key = self._filters.key_columns(table, full.key_columns)
            kept = tuple(
                c
                for c in full.columns
                if c.name in key or self._filters.keeps_column(table, c.name)
            )
            cached = self._decoders[table] = Decoder(TableSchema(table, kept, key))
        return cached

    def schema(self, table: TableId) -> TableSchema | None:
        decoder = self.decoder(table)
        return decoder.schema if decoder is not None else None

    def replay(self, changes: Iterable[TableChange]) -> None:
        """Apply recorded (or just made) table changes."""
        for change in changes:
            for table in {change.table.id, change.previous_id} - {None}:
                assert table is not None
                self._tables.pop(table, None)
                self._decoders.pop(table, None)
            if change.type is not TableChangeType.DROP:
                self._tables[change.table.id] = change.table
