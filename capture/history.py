"""Schema history as Debezium keeps it: its history record documents, in memory or in a file.

A record is the JSON document Debezium's ``HistoryRecord`` holds, with ``tableChanges`` as its
``JsonTableChangeSerializer`` writes them, so a history written here reads in Debezium and the
other way round. :class:`FileSchemaHistory` writes one compact document per line, like
Debezium's ``FileSchemaHistory``, appended and fsynced per record.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from cdcflow.capture.errors import FatalError
from cdcflow.capture.spi import (
    ColumnStructure,
    Offset,
    SchemaChange,
    TableChange,
    TableChangeType,
    TableId,
    TableStructure,
)

QUOTE = '"'


# --------------------------------------------------------------------------------------------
# Table ids in Debezium's double-quoted form (TableId.toDoubleQuotedString / TableIdParser).


def _quote(part: str) -> str:
    """TableId.quote: a part already starting or ending with a quote is left as it is."""
    if not part:
        return QUOTE * 2
    if part[0] != QUOTE and part[-1] != QUOTE:
        return QUOTE + part.replace(QUOTE, QUOTE * 2) + QUOTE
    return part


def quoted_id(table: TableId, *, database: str, schema: str | None) -> str:
    """Debezium's ``TableId.toDoubleQuotedString()`` of ``table`` in a change of ``database``.

    Without a schema (MySQL, MariaDB) Debezium's id is ``catalog.table`` and the catalog is our
    ``TableId.schema`` (the MySQL database): ``"inventory"."customers"``. With one (Db2) it is
    ``"database"."schema"."table"``. Empty parts before the table are left out, as in Java.
    """
    prefix = (table.schema,) if schema is None else (database, table.schema)
    return ".".join([*(_quote(part) for part in prefix if part), _quote(table.table)])


def parse_quoted_id(text: str) -> TableId:
    """The :class:`TableId` of a Debezium id: ``"db"."table"`` (MySQL), ``"db"."schema"."table"``
    (Db2: the database is dropped, as :meth:`TableId.parse` does) or ``"table"``."""
    parts = _split_id(text)
    if not 1 <= len(parts) <= 3:
        raise ValueError(f"{text!r} is not a table id: expected 1 to 3 parts")
    return TableId(parts[-2] if len(parts) > 1 else "", parts[-1])


def _split_id(text: str) -> list[str]:
    """TableIdParser for double quotes: quoted parts (``""`` escapes a quote) or bare ones."""
    parts: list[str] = []
    index, size = 0, len(text)
    while True:
        while index < size and text[index].isspace():
            index += 1
        if index < size and text[index] == QUOTE:
            part, index = _quoted_part(text, index + 1)
        else:
            start = index
            while index < size and text[index] != "." and not text[index].isspace():
                index += 1
            part = text[start:index]
            if not part:
                raise ValueError(f"{text!r} is not a table id: empty part at {start}")
        parts.append(part)
        while index < size and text[index].isspace():
            index += 1
        if index == size:
            return parts
        if text[index] != ".":
            raise ValueError(f"{text!r} is not a table id: unexpected {text[index]!r} at {index}")
        index += 1


def _quoted_part(text: str, index: int) -> tuple[str, int]:
    chars: list[str] = []
    while index < len(text):
        char = text[index]
        if char == QUOTE:
            if text.startswith(QUOTE, index + 1):
                chars.append(QUOTE)
                index += 2
                continue
            return "".join(chars), index + 1
        chars.append(char)
        index += 1
    raise ValueError(f"{text!r} is not a table id: unterminated quote")


# --------------------------------------------------------------------------------------------
# History record documents (HistoryRecord + JsonTableChangeSerializer).


def history_document(
    change: SchemaChange, *, server: str, ts_ms: int | None = None
) -> dict[str, Any]:
    """Debezium's history record of ``change``: fields, order and presence as Java writes them.

    ``source`` is the source partition (``{"server": topic.prefix}``), ``position`` the offset.
    An empty ``database`` or ``ddl`` stands for Java's null and is left out. ``ts_ms`` defaults
    to now.
    """
    document: dict[str, Any] = {
        "source": {"server": server},
        "position": change.offset.to_dict(),
        "ts_ms": time.time_ns() // 1_000_000 if ts_ms is None else ts_ms,
    }
    if change.database:
        document["databaseName"] = change.database
    if change.schema is not None:
        document["schemaName"] = change.schema
    if change.ddl:
        document["ddl"] = change.ddl
    document["tableChanges"] = [
        _change_document(table_change, database=change.database, schema=change.schema)
        for table_change in change.changes
    ]
    return document


def _change_document(change: TableChange, *, database: str, schema: str | None) -> dict[str, Any]:
    """One table change. A drop carries no table (Java's ``TableChange(DROP, id)``), and the
    table's comment sits beside ``table``, not in it, exactly as Debezium writes it."""
    document: dict[str, Any] = {
        "type": change.type.value,
        "id": quoted_id(change.table.id, database=database, schema=schema),
    }
    if change.previous_id is not None:
        document["previousId"] = quoted_id(change.previous_id, database=database, schema=schema)
    if change.type is not TableChangeType.DROP:
        table = change.table
        document["table"] = {
            "defaultCharsetName": table.default_charset_name,
            "primaryKeyColumnNames": list(table.primary_key),
            "columns": [_column_document(column) for column in table.columns],
            "attributes": [],
        }
        document["comment"] = table.comment
    return document


def _column_document(column: ColumnStructure) -> dict[str, Any]:
    document: dict[str, Any] = {"name": column.name, "jdbcType": column.jdbc_type}
    if column.native_type is not None:
        document["nativeType"] = column.native_type
    document["typeName"] = column.type_name
    document["typeExpression"] = column.type_expression
    document["charsetName"] = column.charset_name
    if column.length is not None:
        document["length"] = column.length
    if column.scale is not None:
        document["scale"] = column.scale
    document["position"] = column.position
    document["optional"] = column.optional
    document["autoIncremented"] = column.auto_incremented
    document["generated"] = column.generated
    document["comment"] = column.comment
    document["hasDefaultValue"] = (
        column.default_value_expression is not None
        if column.has_default_value is None
        else column.has_default_value
    )
    if column.default_value_expression is not None:
        document["defaultValueExpression"] = column.default_value_expression
    document["enumValues"] = list(column.enum_values or ())
    return document


def change_from_document(document: Mapping[str, Any]) -> SchemaChange:
    """The :class:`SchemaChange` a history record holds (``source`` is not kept: empty).

    Raises ValueError naming what is wrong when ``document`` is not a history record.
    """
    try:
        position = document["position"]
        if not isinstance(position, Mapping):
            raise TypeError("position is not an object")
        database = document.get("databaseName") or ""
        schema = document.get("schemaName")
        changes = tuple(_change_from_document(item) for item in document.get("tableChanges") or ())
        return SchemaChange(
            database=_text(database, "databaseName"),
            schema=None if schema is None else _text(schema, "schemaName"),
            ddl=_text(document.get("ddl") or "", "ddl"),
            changes=changes,
            source={},
            offset=Offset.from_dict(position),
        )
    except (KeyError, TypeError, AttributeError, ValueError) as error:
        raise ValueError(f"not a Debezium schema history record: {_reason(error)}") from None


def _reason(error: Exception) -> str:
    return f"missing {error}" if isinstance(error, KeyError) else str(error)


def _text(value: Any, name: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} is not a string")
    return value


def _change_from_document(document: Mapping[str, Any]) -> TableChange:
    change_type = TableChangeType(document["type"])
    table_id = parse_quoted_id(_text(document["id"], "id"))
    previous = document.get("previousId")
    previous_id = None if previous is None else parse_quoted_id(_text(previous, "previousId"))
    table = document.get("table")
    if change_type is TableChangeType.DROP or table is None:
        return TableChange(change_type, TableStructure(table_id, ()), previous_id)
    comment = document.get("comment", table.get("comment"))
    structure = TableStructure(
        id=table_id,
        columns=tuple(_column_from_document(column) for column in table["columns"]),
        primary_key=tuple(table.get("primaryKeyColumnNames") or ()),
        default_charset_name=table.get("defaultCharsetName"),
        comment=comment,
    )
    return TableChange(change_type, structure, previous_id)


def _column_from_document(document: Mapping[str, Any]) -> ColumnStructure:
    enum_values: Sequence[str] | None = document.get("enumValues")
    return ColumnStructure(
        name=_text(document["name"], "column name"),
        jdbc_type=int(document["jdbcType"]),
        type_name=_text(document["typeName"], "typeName"),
        position=int(document["position"]),
        optional=bool(document.get("optional", True)),
        type_expression=document.get("typeExpression"),
        native_type=document.get("nativeType"),
        charset_name=document.get("charsetName"),
        length=document.get("length"),
        scale=document.get("scale"),
        auto_incremented=bool(document.get("autoIncremented", False)),
        generated=bool(document.get("generated", False)),
        comment=document.get("comment"),
        default_value_expression=document.get("defaultValueExpression"),
        has_default_value=_has_default(document),
        enum_values=tuple(enum_values) if enum_values else None,
    )


def encode(change: SchemaChange, *, server: str) -> bytes:
    """One history record as compact JSON (Debezium's default DocumentWriter)."""
    return orjson.dumps(history_document(change, server=server))


def decode(data: bytes | str) -> SchemaChange:
    """The change one encoded history record holds; ValueError when it is not one."""
    try:
        document = orjson.loads(data)
    except orjson.JSONDecodeError as error:
        raise ValueError(f"not JSON ({error})") from None
    if not isinstance(document, dict):
        raise ValueError("not a JSON object")
    return change_from_document(document)


# --------------------------------------------------------------------------------------------
# Stores.


class MemorySchemaHistory:
    """History kept in memory (Debezium's ``MemorySchemaHistory``), for tests.

    Changes are kept as encoded documents, so what comes back is what a durable store returns.
    """

    def __init__(self, *, server: str = "") -> None:
        self._server = server
        self.records: list[bytes] = []

    def start(self) -> None:
        return None

    def exists(self) -> bool:
        return bool(self.records)

    def record(self, change: SchemaChange) -> None:
        self.records.append(encode(change, server=self._server))

    def changes(self) -> Iterator[SchemaChange]:
        return iter([decode(record) for record in self.records])

    def close(self) -> None:
        return None


class FileSchemaHistory:
    """One history record per line of a local file (Debezium's ``FileSchemaHistory``).

    A record is appended, flushed and fsynced before :meth:`record` returns. A line that is not
    a history record, such as the partial last line a crash while recording leaves, stops the
    start with the file and line named: nothing is skipped silently.
    """

    def __init__(self, path: Path, *, server: str) -> None:
        self.path = path
        self._server = server

    def start(self) -> None:
        """Create the folder and the file; check every line; end a complete last line that a
        crash left without its newline, so the next record starts a line of its own."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if not self.path.exists():
            self.path.touch()
            _fsync_folder(self.path.parent)
        for _ in self._read():
            pass
        data = self.path.read_bytes()
        if data and not data.endswith(b"\n"):
            self._append(b"\n")

    def exists(self) -> bool:
        return self.path.exists() and bool(self.path.read_bytes().strip())

    def record(self, change: SchemaChange) -> None:
        self._append(encode(change, server=self._server) + b"\n")

    def _append(self, data: bytes) -> None:
        with self.path.open("ab") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())

    def changes(self) -> Iterator[SchemaChange]:
        return iter(list(self._read()))

    def _read(self) -> Iterator[SchemaChange]:
        if not self.path.exists():
            return
        lines = self.path.read_bytes().split(b"\n")
        last = max((n for n, line in enumerate(lines) if line.strip()), default=-1)
        for number, line in enumerate(lines):
            if not line.strip():
                continue
            try:
                yield decode(line)
            except ValueError as error:
                raise FatalError(self._damaged(number + 1, error, last=number == last)) from None

    def _damaged(self, line: int, error: ValueError, *, last: bool) -> str:
        problem = f"the schema history file {self.path} is damaged at line {line} ({error})"
        if last:
            return (
                f"{problem}. It is the last line, as a crash while recording a schema change "
                "leaves it; that change was never confirmed and is read again from the "
                f"database log, so remove line {line} (e.g. `sed -i '{line}d' {self.path}`) "
                "and start again"
            )
        return (
            f"{problem}. Restore the file from a backup, or move it away and rebuild the "
            "history with snapshot.mode=recovery (the structure as it is now), or reset the "
            "offsets (`cdcflow offsets reset`) to snapshot again"
        )

    def close(self) -> None:
        return None


def _fsync_folder(folder: Path) -> None:
    """Make a new file's directory entry durable."""
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _has_default(document: Mapping[str, Any]) -> bool | None:
    """``hasDefaultValue`` where it says more than the expression does (``DEFAULT NULL``)."""
    has = bool(document.get("hasDefaultValue", False))
    return None if has == (document.get("defaultValueExpression") is not None) else has
