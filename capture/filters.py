"""Which tables, columns and operations are captured, and which columns form the message key.

Debezium matches include/exclude regular expressions against the whole fully-qualified name
(anchored, case-insensitive). Decisions are computed once per table, never per event.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NoReturn

from cdcflow.capture.config import EngineProperties
from cdcflow.capture.errors import FatalError
from cdcflow.capture.spi import TableId

SYSTEM_SCHEMAS = frozenset({"pg_catalog", "information_schema", "pg_toast"})
#: Tables extensions install into user schemas that Debezium treats as built-in (PostGIS).
BUILTIN_TABLES = frozenset({"spatial_ref_sys"})
#: Schemas of temporary tables (``pg_temp_<n>``), built-in too.
TEMP_SCHEMA_PREFIX = "pg_temp"


def compile_patterns(patterns: Sequence[str]) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(pattern, re.IGNORECASE) for pattern in patterns)


def _matches(patterns: tuple[re.Pattern[str], ...], text: str) -> bool:
    return any(pattern.fullmatch(text) for pattern in patterns)


@dataclass(frozen=True)
class Filters:
    """Compiled include/exclude lists and key overrides of one connector."""

    schema_include: tuple[re.Pattern[str], ...]
    schema_exclude: tuple[re.Pattern[str], ...]
    table_include: tuple[re.Pattern[str], ...]
    table_exclude: tuple[re.Pattern[str], ...]
    column_include: tuple[re.Pattern[str], ...]
    column_exclude: tuple[re.Pattern[str], ...]
    snapshot_include: tuple[re.Pattern[str], ...]
    message_prefix_include: tuple[re.Pattern[str], ...]
    message_prefix_exclude: tuple[re.Pattern[str], ...]
    key_overrides: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...]
    signal_table: str
    #: ``table.ignore.builtin``: leave out built-in tables (``spatial_ref_sys``, temporary
    #: tables); system catalogs are never captured.
    ignore_builtin: bool = True
    #: Event field name -> column name, per table, for fields renamed by
    #: field.name.adjustment.mode: column filters match the names in the database.
    renamed: dict[tuple[TableId, str], str] = field(default_factory=dict, compare=False)

    @classmethod
    def from_properties(cls, properties: EngineProperties) -> Filters:
        return cls(
            schema_include=compile_patterns(properties.schema_include_list),
            schema_exclude=compile_patterns(properties.schema_exclude_list),
            table_include=compile_patterns(properties.table_include_list),
            table_exclude=compile_patterns(properties.table_exclude_list),
            column_include=compile_patterns(properties.column_include_list),
            column_exclude=compile_patterns(properties.column_exclude_list),
            snapshot_include=compile_patterns(properties.snapshot_include_collection_list),
            message_prefix_include=compile_patterns(properties.message_prefix_include_list),
            message_prefix_exclude=compile_patterns(properties.message_prefix_exclude_list),
            key_overrides=parse_key_columns(properties.message_key_columns),
            signal_table=properties.signal_data_collection,
            ignore_builtin=properties.table_ignore_builtin,
        )

    def reads(self, table: TableId) -> bool:
        """Whether the connector decodes ``table`` at all: captured, or the signal table."""
        return self.captures(table) or str(table) == self.signal_table

    def captures(self, table: TableId) -> bool:
        """Whether changes of ``table`` are emitted as events."""
        name = str(table)
        if table.schema in SYSTEM_SCHEMAS:
            return False
        if self.ignore_builtin and is_builtin(table):
            return False
        if self.schema_include and not _matches(self.schema_include, table.schema):
            return False
        if _matches(self.schema_exclude, table.schema):
            return False
        if self.table_include and not _matches(self.table_include, name):
            return False
        return not _matches(self.table_exclude, name)

    def captures_database(self, database: str) -> bool:
        """Whether ``database`` (a MySQL database, a PostgreSQL schema) passes the database
        filters: its tables' DDL is recorded unless only captured tables' is asked for."""
        if database in SYSTEM_SCHEMAS:
            return False
        if self.schema_include and not _matches(self.schema_include, database):
            return False
        return not _matches(self.schema_exclude, database)

    def snapshots(self, table: TableId) -> bool:
        """Whether the initial snapshot reads ``table``."""
        if not self.captures(table):
            return False
        return not self.snapshot_include or _matches(self.snapshot_include, str(table))

    def snapshot_order(self, tables: Sequence[TableId]) -> list[TableId]:
        """``tables`` in Debezium's snapshot order: by ``table.include.list`` pattern, then name.

        Each table comes once, under the first pattern that matches it; without an include
        list (or for the signal table, which Debezium appends) name order is kept.
        """
        ordered: dict[TableId, None] = {}
        for pattern in self.table_include:
            for table in sorted(tables):
                if pattern.fullmatch(str(table)):
                    ordered.setdefault(table)
        for table in sorted(tables):
            ordered.setdefault(table)
        return list(ordered)

    def keeps_column(self, table: TableId, column: str) -> bool:
        """Whether ``column`` appears in event values (key columns are kept by the caller)."""
        name = f"{table}.{self.renamed.get((table, column), column)}"
        if self.column_include:
            return _matches(self.column_include, name)
        return not _matches(self.column_exclude, name)

    def alias_column(self, table: TableId, *, field: str, column: str) -> None:
        """Record that events name ``column`` of ``table`` ``field``."""
        self.renamed[(table, field)] = column

    def keeps_message(self, prefix: str) -> bool:
        """Whether a logical decoding message with ``prefix`` is emitted."""
        if self.message_prefix_include:
            return _matches(self.message_prefix_include, prefix)
        return not _matches(self.message_prefix_exclude, prefix)

    def key_columns(self, table: TableId, default: tuple[str, ...]) -> tuple[str, ...]:
        """``message.key.columns`` for ``table`` if one matches, else the primary key."""
        for pattern, columns in self.key_overrides:
            if pattern.fullmatch(str(table)):
                return columns
        return default


def is_builtin(table: TableId) -> bool:
    """Debezium's built-in PostgreSQL tables: system schemas, ``spatial_ref_sys`` and
    temporary tables (compared case-insensitively)."""
    schema = table.schema.lower()
    return (
        schema in SYSTEM_SCHEMAS
        or table.table.lower() in BUILTIN_TABLES
        or table.schema.startswith(TEMP_SCHEMA_PREFIX)
    )


def parse_key_columns(text: str) -> tuple[tuple[re.Pattern[str], tuple[str, ...]], ...]:
    """Parse ``tbl:c1,c2;tbl2:c3`` into (table pattern, columns) pairs."""
    pairs = []
    for entry in filter(None, (part.strip() for part in text.split(";"))):
        table, _, columns = entry.partition(":")
        names = tuple(column.strip() for column in columns.split(",") if column.strip())
        if not table or not names:
            raise ValueError(f"message.key.columns entry {entry!r} is not <table>:<col>[,<col>]")
        pairs.append((re.compile(table.strip(), re.IGNORECASE), names))
    return tuple(pairs)


def refuse_capturing_nothing(
    lists: Mapping[str, Sequence[str]], *, present: Iterable[TableId], containers: str
) -> NoReturn:
    """Stop a connector whose filters match no table: it would stream nothing and look
    healthy. Names the lists given (:meth:`EngineProperties.table_filters`) and the
    ``containers`` (the server's databases, the database's schemas) that have tables, so a
    typo shows."""
    given = "; ".join(f"{name}={','.join(value)}" for name, value in lists.items() if value)
    found = sorted({table.schema for table in present})
    raise FatalError(
        f"no table matches the filters ({given or 'none set'}), so there is nothing to capture. "
        "Check the include/exclude lists (regular expressions matched against the whole "
        "qualified name, case-insensitive); the "
        f"{containers} with tables: {', '.join(found) or 'none'}"
    )
