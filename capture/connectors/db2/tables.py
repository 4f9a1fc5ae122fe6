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

from cdcflow.capture.columns import ColumnStep, MappedTable, source_column
from cdcflow.capture.connectors.db2 import sql, structure, types
from cdcflow.capture.connectors.db2.connection import Connection
from cdcflow.capture.connectors.db2.lsn import Lsn
from cdcflow.capture.converting import ConvertingFailures
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
    """Where the agent started capturing the table (``CD_OLD_SYNCHPOINT``): its CD table
    holds every change from there on. It is not a stop LSN, though Debezium reads it as one
    (and ships ``z.stop.lsn.ignore`` for the changes that drops); None until the agent
    captures the table."""
    updates_split: bool = True
    """``CHG_UPD_TO_DEL_INS='Y'``: an update is a ``D`` and an ``I`` row (before and after
    image); otherwise one ``U`` row with the after image alone."""


def registrations(conn: Connection, statements: sql.AsnStatements) -> dict[TableId, Registration]:
    """Every table in capture mode, by source table."""
    found: dict[TableId, Registration] = {}
    for owner, name, cd_owner, cd_table, state, start, split in conn.query(
        statements.registrations
    ):
        table = TableId(str(owner).strip(), str(name).strip())
        found[table] = Registration(
            table=table,
            cd_schema=str(cd_owner).strip(),
            cd_table=str(cd_table).strip(),
            active=str(state or "").strip() == "A",
            start=Lsn.of(start) if start is not None else None,
            updates_split=str(split or "Y").strip().upper() != "N",
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


#: Types whose values ASN does not copy into change-data tables (it logs only that a LOB
#: changed): streamed events carry the unavailable-value placeholder for them.
NOT_IN_CHANGE_TABLES = frozenset({"CLOB", "DBCLOB", "BLOB", "XML"})


class Decoder:
    """Turns a row of a change-data table or a snapshot query into a row tuple."""

    def __init__(
        self, mapped: MappedTable, failures: ConvertingFailures, *, placeholder: str
    ) -> None:
        self.mapped = mapped
        self.schema = mapped.schema
        self.names = mapped.source_names
        """The columns' names in the database, in schema order (field names may differ)."""
        self._failures = failures
        self._converters = tuple(column.convert for column in mapped.schema.columns)
        self._layouts: dict[tuple[str, ...], tuple[int | None, ...]] = {}
        #: (position, raw placeholder) of the columns a change-data row never has a value for
        self._unavailable = tuple(
            (index, placeholder.encode() if column.type_name == "BLOB" else placeholder)
            for index, column in enumerate(mapped.schema.columns)
            if column.type_name in NOT_IN_CHANGE_TABLES
        )

    def layout(self, names: Sequence[str]) -> tuple[int | None, ...]:
        """Where each column of the schema is in a result with columns ``names`` (None: the
        result lacks it, e.g. a CD table created before the column was added)."""
        key = tuple(names)
        cached = self._layouts.get(key)
        if cached is None:
            index = {name: i for i, name in enumerate(key)}
            cached = self._layouts[key] = tuple(index.get(n) for n in self.names)
        return cached

    def streamed(self, row: Sequence[Any], layout: tuple[int | None, ...]) -> tuple[Any, ...]:
        """A change-data row's values, its columns found by ``layout``; LOB and XML columns
        hold the unavailable-value placeholder (:data:`NOT_IN_CHANGE_TABLES`)."""
        values = [row[i] if i is not None else None for i in layout]
        for index, placeholder in self._unavailable:
            values[index] = placeholder
        return self.ordered(values)

    def ordered(self, row: Sequence[Any]) -> tuple[Any, ...]:
        """A row whose columns are the schema's, in order (a snapshot or chunk read)."""
        values = tuple(row)
        return self._failures.convert(self.schema.id, self.schema.columns, self._converters, values)


class Structures:
    """Table structures by table, and the decoders of the captured ones."""

    def __init__(
        self,
        *,
        filters: Filters,
        options: types.TypeOptions,
        columns: ColumnStep | None = None,
        placeholder: str = "__debezium_unavailable_value",
    ) -> None:
        self._filters = filters
        self._options = options
        self._placeholder = placeholder
        self._columns = columns or ColumnStep.plain(filters)
        self._tables: dict[TableId, TableStructure] = {}
        self._decoders: dict[TableId, Decoder] = {}

    def __contains__(self, table: TableId) -> bool:
        return table in self._tables

    def structure(self, table: TableId) -> TableStructure | None:
        return self._tables.get(table)

    def decoder(self, table: TableId) -> Decoder | None:
        """The decoder of ``table`` (None when its structure is unknown), made by the shared
        column step: column lists, message key, mappers, field names."""
        cached = self._decoders.get(table)
        if cached is None and table in self._tables:
            structure_ = self._tables[table]
            kept = self._columns.keep(types.table_schema(structure_, self._options))
            by_name = {column.name: column for column in structure_.columns}
            described = [source_column(by_name[c.name]) for c in kept.schema.columns]
            mapped = self._columns.map(kept.schema, described)
            cached = self._decoders[table] = Decoder(
                mapped, self._columns.failures, placeholder=self._placeholder
            )
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
