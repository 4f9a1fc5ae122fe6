"""Db2 catalog rows as table structures, the way Debezium's Db2 connector records them.

Debezium reads a Db2 table's columns through the JDBC driver's ``DatabaseMetaData.getColumns``,
so schema history holds the ``java.sql.Types`` code, type name, column size and decimal digits
IBM's JCC driver reports. cdcflow reads ``SYSCAT.COLUMNS`` (:data:`.sql.COLUMNS`) and derives
the same values: ``LENGTH`` is bytes for numbers and dates there but a column size in JDBC
(``INTEGER`` 4 → 10, ``TIMESTAMP(6)`` 10 → 26), ``CODEPAGE`` 0 turns a character type into its
``FOR BIT DATA`` binary form, ``KEYSEQ`` orders the primary key.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from cdcflow.capture.spi import ColumnStructure, TableId, TableStructure

# java.sql.Types codes the Db2 connector meets.
BIT, TINYINT, SMALLINT, INTEGER, BIGINT = -7, -6, 5, 4, -5
REAL, DOUBLE, DECIMAL = 7, 8, 3
CHAR, VARCHAR, LONGVARCHAR, CLOB = 1, 12, -1, 2005
BINARY, VARBINARY, LONGVARBINARY, BLOB = -2, -3, -4, 2004
DATE, TIME, TIMESTAMP = 91, 92, 93
BOOLEAN, SQLXML, OTHER = 16, 2009, 1111


@dataclass(frozen=True, slots=True)
class JdbcType:
    """How JCC reports a Db2 type: its code, name and the column size and decimal digits
    it derives from ``SYSCAT.COLUMNS``' ``LENGTH`` and ``SCALE``."""

    code: int
    name: str
    size: Callable[[int, int], int]
    digits: Callable[[int, int], int | None]


def _length(length: int, _scale: int) -> int:
    return length


def _fixed(size: int) -> Callable[[int, int], int]:
    return lambda _length, _scale: size


def _scale(_length: int, scale: int) -> int:
    return scale


def _none(_length: int, _scale: int) -> None:
    return None


def _zero(_length: int, _scale: int) -> int:
    return 0


def _timestamp_size(_length: int, scale: int) -> int:
    """``yyyy-mm-dd hh:mm:ss`` plus a point and the fraction digits."""
    return 19 + (scale + 1 if scale else 0)


def _decfloat_digits(length: int, _scale: int) -> int:
    """DECFLOAT(16) is 8 bytes, DECFLOAT(34) 16."""
    return 16 if length <= 8 else 34


#: ``SYSCAT.COLUMNS.TYPENAME`` → how JCC reports it.
TYPES: Final[dict[str, JdbcType]] = {
    "SMALLINT": JdbcType(SMALLINT, "SMALLINT", _fixed(5), _zero),
    "INTEGER": JdbcType(INTEGER, "INTEGER", _fixed(10), _zero),
    "BIGINT": JdbcType(BIGINT, "BIGINT", _fixed(19), _zero),
    "DECIMAL": JdbcType(DECIMAL, "DECIMAL", _length, _scale),
    "DECFLOAT": JdbcType(OTHER, "DECFLOAT", _decfloat_digits, _none),
    "REAL": JdbcType(REAL, "REAL", _fixed(24), _none),
    "DOUBLE": JdbcType(DOUBLE, "DOUBLE", _fixed(53), _none),
    "CHARACTER": JdbcType(CHAR, "CHAR", _length, _none),
    "VARCHAR": JdbcType(VARCHAR, "VARCHAR", _length, _none),
    "LONG VARCHAR": JdbcType(LONGVARCHAR, "LONG VARCHAR", _length, _none),
    "CLOB": JdbcType(CLOB, "CLOB", _length, _none),
    "GRAPHIC": JdbcType(CHAR, "GRAPHIC", _length, _none),
    "VARGRAPHIC": JdbcType(VARCHAR, "VARGRAPHIC", _length, _none),
    "DBCLOB": JdbcType(CLOB, "DBCLOB", _length, _none),
    "BINARY": JdbcType(BINARY, "BINARY", _length, _none),
    "VARBINARY": JdbcType(VARBINARY, "VARBINARY", _length, _none),
    "BLOB": JdbcType(BLOB, "BLOB", _length, _none),
    "DATE": JdbcType(DATE, "DATE", _fixed(10), _none),
    "TIME": JdbcType(TIME, "TIME", _fixed(8), _zero),
    "TIMESTAMP": JdbcType(TIMESTAMP, "TIMESTAMP", _timestamp_size, _scale),
    "BOOLEAN": JdbcType(BOOLEAN, "BOOLEAN", _fixed(1), _none),
    "XML": JdbcType(SQLXML, "XML", _zero, _none),
}

#: Character types stored as bytes when declared ``FOR BIT DATA`` (``CODEPAGE`` 0).
_BIT_DATA: Final[dict[str, JdbcType]] = {
    "CHARACTER": JdbcType(BINARY, "CHAR () FOR BIT DATA", _length, _none),
    "VARCHAR": JdbcType(VARBINARY, "VARCHAR () FOR BIT DATA", _length, _none),
    "LONG VARCHAR": JdbcType(LONGVARBINARY, "LONG VARCHAR FOR BIT DATA", _length, _none),
}


def jdbc_type(type_name: str, *, codepage: int) -> JdbcType:
    """How JCC reports a column of catalog type ``type_name`` (a type it does not know,
    e.g. a user-defined distinct type, is ``OTHER`` under its own name)."""
    name = type_name.strip().upper()
    if codepage == 0 and name in _BIT_DATA:
        return _BIT_DATA[name]
    return TYPES.get(name) or JdbcType(OTHER, name, _length, _none)


def _text(value: Any) -> str:
    return "" if value is None else str(value).strip()


def column_structure(row: Sequence[Any]) -> tuple[ColumnStructure, int | None]:
    """A ``SYSCAT.COLUMNS`` row (the columns of :data:`.sql.COLUMNS`) as a column structure,
    with its position in the primary key (None: not a key column)."""
    name, colno, type_name, length, scale, nulls, keyseq, default, identity, generated = row[:10]
    codepage, remarks = row[10], row[11]
    jdbc = jdbc_type(_text(type_name), codepage=int(codepage or 0))
    length, scale = int(length or 0), int(scale or 0)
    default_text = None if default is None else str(default).strip()
    column = ColumnStructure(
        name=str(name),
        jdbc_type=jdbc.code,
        type_name=jdbc.name,
        position=int(colno) + 1,
        optional=_text(nulls) == "Y",
        length=jdbc.size(length, scale),
        scale=jdbc.digits(length, scale),
        auto_incremented=_text(identity) == "Y",
        generated=_text(generated) != "" and _text(identity) != "Y",
        comment=_text(remarks) or None,
        default_value_expression=default_text or None,
    )
    return column, (int(keyseq) if keyseq else None)


def table_structure(table: TableId, rows: Sequence[Sequence[Any]]) -> TableStructure:
    """The structure of ``table`` from its ``SYSCAT.COLUMNS`` rows."""
    columns: list[ColumnStructure] = []
    key: list[tuple[int, str]] = []
    for row in rows:
        column, keyseq = column_structure(row)
        columns.append(column)
        if keyseq is not None:
            key.append((keyseq, column.name))
    columns.sort(key=lambda c: c.position)
    return TableStructure(table, tuple(columns), tuple(name for _, name in sorted(key)))
