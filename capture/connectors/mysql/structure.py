"""MySQL/MariaDB table structures exactly as Debezium's DDL parser records them.

Debezium builds every MySQL/MariaDB table from DDL text: ``SHOW CREATE TABLE`` during the
snapshot and the binlog's statements afterwards, both read by ``MariaDbAntlrDdlParser`` (and its
MySQL twin). Schema history records and schema-change events carry what that parser made of each
column, so this module writes down its conventions as plain functions:

* a column type's name, JDBC type, length and scale (``DataTypeResolver`` with the entries of
  ``initializeDataTypeResolver`` and ``ColumnDefinitionParserListener.resolveColumnDataType``);
* what a ``DEFAULT`` clause records (``DefaultValueParserListener``);
* how nullability, defaults, primary keys and character sets interact (``ColumnEditorImpl``,
  ``ColumnImpl`` and ``TableEditorImpl``).

:func:`table_from_catalog` builds, from ``information_schema`` rows, the structure Debezium's
parser makes of the ``SHOW CREATE TABLE`` text of the same table; the DDL module
(:mod:`cdcflow.capture.connectors.mysql.ddl`) uses the same functions for binlog statements.

The catalog path expects MariaDB 10.2.7+ ``information_schema``: ``COLUMN_DEFAULT`` is the default
as an SQL expression (``'text'``, ``NULL``, ``current_timestamp()``), printed exactly as
``SHOW CREATE TABLE`` prints it. Pure Python by design: no SQL library is imported here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from cdcflow.capture.spi import ColumnStructure, TableId, TableStructure

# --------------------------------------------------------------------------------------------
# java.sql.Types codes Debezium assigns to MySQL types.

CHAR = 1
NUMERIC = 2
DECIMAL = 3
INTEGER = 4
SMALLINT = 5
FLOAT = 6
REAL = 7
DOUBLE = 8
VARCHAR = 12
BOOLEAN = 16
DATE = 91
TIME = 92
TIMESTAMP = 93
OTHER = 1111
BLOB = 2004
TIMESTAMP_WITH_TIMEZONE = 2014
BIT = -7
TINYINT = -6
BIGINT = -5
BINARY = -2
VARBINARY = -3
NCHAR = -15
NVARCHAR = -9
LONGVARBINARY = -4
LONGVARCHAR = -1
CLOB = 2005
LONGNVARCHAR = -16
NCLOB = 2011

#: ``Column.typeUsesCharset``: the JDBC types whose columns take the table's charset (also
#: LONGVARCHAR -1, CLOB 2005, LONGNVARCHAR -16, NCLOB 2011, DATALINK 70, SQLXML 2009, which
#: the MySQL parser never assigns).
_CHARSET_TYPES = frozenset(
    {CHAR, VARCHAR, NCHAR, NVARCHAR, LONGVARCHAR, CLOB, LONGNVARCHAR, NCLOB, 70, 2009}
)

#: What Debezium records as the default of ``CURRENT_TIMESTAMP``/``NOW()`` columns.
EPOCH_DEFAULT = "1970-01-01 00:00:00"

#: Charset Debezium gives NCHAR/NVARCHAR columns, whatever the table's charset.
NATIONAL_CHARSET = "utf8"


class UnknownTypeError(ValueError):
    """A column type Debezium's grammar does not know (Debezium fails on it too)."""


@dataclass(frozen=True, slots=True)
class ParsedType:
    """A column's data type as Debezium records it.

    ``name`` is both ``typeName`` and ``typeExpression`` (``ColumnEditor.type(name)``).
    ``enum_values`` are ENUM/SET options exactly as written, quotes included: Debezium stores
    them so (see :func:`enum_options` for the values). ``charset`` is the charset the type
    itself declares (``CHARACTER SET``, else the charset of its ``COLLATE``).
    """

    name: str
    jdbc_type: int
    length: int | None = None
    scale: int | None = None
    enum_values: tuple[str, ...] | None = None
    charset: str | None = None
    serial: bool = False
    """``SERIAL``: BIGINT UNSIGNED NOT NULL AUTO_INCREMENT UNIQUE."""


@dataclass(frozen=True, slots=True)
class DefaultValue:
    """What a ``DEFAULT`` clause records; ``expression`` None: a computed default (an
    expression or function call) that Debezium keeps without a value."""

    expression: str | None


# --------------------------------------------------------------------------------------------
# A small lexer for type text (COLUMN_TYPE, or the start of a column definition).

_LEXEME = re.compile(
    r"""(?P<space>\s+)
    | (?P<string>'(?:[^'\\]|\\.|'')*'|"(?:[^"\\]|\\.|"")*")
    | (?P<quoted>`(?:[^`]|``)*`)
    | (?P<number>\d+(?:\.\d*)?|\.\d+)
    | (?P<word>[A-Za-z_$][A-Za-z0-9_$]*)
    | (?P<punct>[(),=])""",
    re.VERBOSE | re.DOTALL,
)


@dataclass(frozen=True, slots=True)
class _Lexeme:
    kind: str
    text: str
    end: int

    @property
    def word(self) -> str | None:
        return self.text.upper() if self.kind == "word" else None


def _lex(text: str) -> Iterator[_Lexeme]:
    position = 0
    while position < len(text):
        match = _LEXEME.match(text, position)
        if match is None:
            yield _Lexeme("other", text[position], position + 1)
            return
        position = match.end()
        if match.lastgroup != "space":
            yield _Lexeme(str(match.lastgroup), match.group(), position)


class _Reader:
    """Lexemes with one-step lookahead; ``end`` is where the last consumed one ends."""

    def __init__(self, text: str) -> None:
        self._lexemes = list(_lex(text))
        self._index = 0
        self.end = 0

    def peek(self, ahead: int = 0) -> _Lexeme | None:
        index = self._index + ahead
        return self._lexemes[index] if index < len(self._lexemes) else None

    def word(self, ahead: int = 0) -> str | None:
        lexeme = self.peek(ahead)
        return lexeme.word if lexeme is not None else None

    def take(self) -> _Lexeme:
        if self._index >= len(self._lexemes):
            raise UnknownTypeError("the type ends too early")
        lexeme = self._lexemes[self._index]
        self._index += 1
        self.end = lexeme.end
        return lexeme

    def accept(self, *words: str) -> str | None:
        """Consume the next lexeme when it is one of ``words``; return it upper-cased."""
        word = self.word()
        if word is not None and word in words:
            self.take()
            return word
        return None

    def at_punct(self, text: str) -> bool:
        lexeme = self.peek()
        return lexeme is not None and lexeme.kind == "punct" and lexeme.text == text

    def finished(self) -> bool:
        return self.peek() is None


# --------------------------------------------------------------------------------------------
# Debezium's data type grammar (MariaDBParser.dataType) and resolver entries.

_STRING_TYPES = {
    "CHAR": CHAR,
    "CHARACTER": CHAR,
    "VARCHAR": VARCHAR,
    "TINYTEXT": VARCHAR,
    "TEXT": VARCHAR,
    "MEDIUMTEXT": VARCHAR,
    "LONGTEXT": VARCHAR,
    "NCHAR": NCHAR,
    "NVARCHAR": NVARCHAR,
    "LONG": VARCHAR,
}
#: Entries (X, VARYING): the jdbc type of ``X VARYING``.
_VARYING = {"CHAR": VARCHAR, "CHARACTER": VARCHAR, "NCHAR": NVARCHAR}
#: Entries (X, BINARY): their name keeps the BINARY keyword.
_BINARY_NAMED = {
    "CHAR",
    "VARCHAR",
    "TINYTEXT",
    "TEXT",
    "MEDIUMTEXT",
    "LONGTEXT",
    "NCHAR",
    "NVARCHAR",
}
_INTEGER_TYPES = {
    "TINYINT": TINYINT,
    "INT1": TINYINT,
    "SMALLINT": SMALLINT,
    "INT2": SMALLINT,
    "MEDIUMINT": INTEGER,
    "INT3": INTEGER,
    "MIDDLEINT": INTEGER,
    "INT": INTEGER,
    "INTEGER": INTEGER,
    "INT4": INTEGER,
    "BIGINT": BIGINT,
    "INT8": BIGINT,
}
#: (jdbc type, default length, default scale) of types with an optional (length[,scale]).
_DECIMAL_TYPES = {
    "DECIMAL": (DECIMAL, 10, 0),
    "DEC": (DECIMAL, 10, 0),
    "FIXED": (DECIMAL, 10, 0),
    "NUMERIC": (NUMERIC, 10, 0),
    "FLOAT": (FLOAT, None, None),
    "FLOAT4": (FLOAT, None, None),
    "FLOAT8": (DOUBLE, None, None),
}
_SIMPLE_TYPES = {
    "DATE": DATE,
    "TINYBLOB": BLOB,
    "MEDIUMBLOB": BLOB,
    "LONGBLOB": BLOB,
    "BOOL": BOOLEAN,
    "BOOLEAN": BOOLEAN,
}
#: (jdbc type, default length) of types with an optional (length).
_DIMENSION_TYPES = {
    "BIT": (BIT, 1),
    "TIME": (TIME, None),
    "TIMESTAMP": (TIMESTAMP_WITH_TIMEZONE, None),
    "DATETIME": (TIMESTAMP, None),
    "BINARY": (BINARY, None),
    "VARBINARY": (VARBINARY, None),
    "BLOB": (BLOB, None),
    "YEAR": (INTEGER, None),
}
_OTHER_TYPES = frozenset(
    {
        "GEOMETRYCOLLECTION",
        "GEOMCOLLECTION",
        "LINESTRING",
        "MULTILINESTRING",
        "MULTIPOINT",
        "MULTIPOLYGON",
        "POINT",
        "POLYGON",
        "JSON",
        "GEOMETRY",
        "UUID",
    }
)
_NUMBER_SUFFIXES = ("SIGNED", "UNSIGNED", "ZEROFILL")


def parse_column_type(column_type: str) -> ParsedType:
    """The type of ``information_schema.COLUMNS.COLUMN_TYPE`` text (``int(10) unsigned``,
    ``enum('a','b''c')``, ``decimal(10,2)``, ``point``...) as Debezium records it.

    Raises :class:`UnknownTypeError` for a type Debezium does not know or trailing text.
    """
    parsed, consumed = parse_type_prefix(column_type)
    if column_type[consumed:].strip():
        raise UnknownTypeError(f"unexpected {column_type[consumed:].strip()!r} after the type")
    return parsed


def parse_type_prefix(text: str) -> tuple[ParsedType, int]:
    """The data type that starts ``text`` (a column definition after the column's name) and
    the number of characters it takes, including the ``CHARACTER SET``/``COLLATE`` that
    Debezium's grammar reads as part of a string type."""
    reader = _Reader(text)
    first = reader.word()
    if first is None:
        found = reader.peek()
        raise UnknownTypeError(f"expected a type, found {found.text if found else 'nothing'!r}")
    parsed = _parse_type(reader, first)
    return parsed, reader.end


def _parse_type(reader: _Reader, first: str) -> ParsedType:
    for parser in _TYPE_PARSERS:
        parsed = parser(reader, first)
        if parsed is not None:
            return parsed
    raise UnknownTypeError(f"unknown column type {first!r}")


def _national_type(reader: _Reader, first: str) -> ParsedType | None:
    """NATIONAL CHAR [VARYING] / NATIONAL VARCHAR / NCHAR VARCHAR: always utf8."""
    second, third = reader.word(1), reader.word(2)
    if first == "NATIONAL" and second in ("CHAR", "CHARACTER") and third == "VARYING":
        words, jdbc = 3, NVARCHAR
    elif (first == "NATIONAL" and second in ("CHAR", "CHARACTER", "VARCHAR")) or (
        first == "NCHAR" and second == "VARCHAR"
    ):
        words, jdbc = 2, NVARCHAR if second == "VARCHAR" else NCHAR
    else:
        return None
    name = " ".join(reader.take().text.upper() for _ in range(words))
    length = _length(reader)
    # Only the non-VARYING entries list BINARY as a suffix of the name.
    if reader.accept("BINARY") and words == 2:
        name = f"{name} BINARY"
    if jdbc == NCHAR and length is None:
        length = 1
    return ParsedType(name, jdbc, length, charset=NATIONAL_CHARSET)


def _string_type(reader: _Reader, first: str) -> ParsedType | None:
    """CHAR/VARCHAR/TEXT... [VARYING] [(n)] [BINARY] [CHARACTER SET x] [COLLATE y | BINARY]."""
    if first not in _STRING_TYPES or (
        first == "LONG" and reader.word(1) in ("VARCHAR", "VARBINARY")
    ):
        return None
    reader.take()
    name, jdbc = first, _STRING_TYPES[first]
    if first in _VARYING and reader.accept("VARYING"):
        name, jdbc = f"{first} VARYING", _VARYING[first]
    length = _length(reader)
    binary = reader.accept("BINARY") is not None
    charset = _charset_clause(reader)
    collation = _collate_clause(reader)
    binary = reader.accept("BINARY") is not None or binary
    if binary and first in _BINARY_NAMED and " " not in name:
        name = f"{name} BINARY"
    if charset is None and collation is not None:
        charset = charset_of_collation(collation)
    if jdbc in (NCHAR, NVARCHAR):
        # NCHAR and NVARCHAR always use utf8; an NCHAR without a length holds one character.
        if jdbc == NCHAR and length is None:
            length = 1
        charset = NATIONAL_CHARSET
    return ParsedType(name, jdbc, length, charset=charset)


def _long_type(reader: _Reader, first: str) -> ParsedType | None:
    """LONG VARCHAR (a LONG with charset options) and LONG VARBINARY."""
    if first != "LONG":
        return None
    second = reader.word(1)
    reader.take()
    reader.take()
    if second == "VARBINARY":
        return ParsedType("LONG VARBINARY", BLOB)
    reader.accept("BINARY")
    charset = _charset_clause(reader)
    collation = _collate_clause(reader)
    if charset is None and collation is not None:
        charset = charset_of_collation(collation)
    return ParsedType("LONG VARCHAR", VARCHAR, charset=charset)


def _integer_type(reader: _Reader, first: str) -> ParsedType | None:
    if first not in _INTEGER_TYPES:
        return None
    reader.take()
    length = _length(reader)
    return ParsedType(_with_suffixes(first, reader), _INTEGER_TYPES[first], length)


def _float_type(reader: _Reader, first: str) -> ParsedType | None:
    """REAL/DOUBLE [PRECISION] [(m,d)], and DECIMAL/NUMERIC/FLOAT [(m[,d])] with defaults."""
    if first in ("REAL", "DOUBLE"):
        reader.take()
        precision = first == "DOUBLE" and reader.accept("PRECISION") is not None
        length, scale = _dimensions(reader)
        name = _with_suffixes(f"{first} PRECISION" if precision else first, reader)
        return ParsedType(name, REAL if first == "REAL" else DOUBLE, length, scale)
    if first not in _DECIMAL_TYPES:
        return None
    reader.take()
    jdbc, default_length, default_scale = _DECIMAL_TYPES[first]
    length, scale = _dimensions(reader)
    return ParsedType(
        _with_suffixes(first, reader),
        jdbc,
        default_length if length is None else length,
        default_scale if scale is None else scale,
    )


def _simple_type(reader: _Reader, first: str) -> ParsedType | None:
    if first == "SERIAL":
        reader.take()
        return ParsedType("BIGINT UNSIGNED", BIGINT, serial=True)
    if first in _SIMPLE_TYPES:
        reader.take()
        return ParsedType(first, _SIMPLE_TYPES[first])
    if first in _OTHER_TYPES:
        reader.take()
        return ParsedType(first, OTHER)
    if first == "VECTOR":
        reader.take()
        length = _length(reader)
        return ParsedType(first, OTHER, 2048 if length is None else length)
    if first in _DIMENSION_TYPES:
        reader.take()
        jdbc, default_length = _DIMENSION_TYPES[first]
        length = _length(reader)
        return ParsedType(first, jdbc, default_length if length is None else length)
    return None


def _collection_type(reader: _Reader, first: str) -> ParsedType | None:
    """ENUM/SET ('a',...) [BINARY] [CHARACTER SET x]; options kept as written."""
    if first not in ("ENUM", "SET") or not _punct_at(reader.peek(1), "("):
        return None
    reader.take()
    options = _options(reader)
    name = f"{first} BINARY" if reader.accept("BINARY") else first
    # Debezium keeps the charset name of ENUM/SET as written (getText, quotes included).
    charset = _charset_clause(reader, unquote=False)
    if name == "ENUM":
        return ParsedType(name, CHAR, 1, None, options, charset)
    if name == "SET":
        return ParsedType(name, CHAR, max(0, len(options) * 2 - 1), None, options, charset)
    # ENUM BINARY / SET BINARY: Debezium's name check fails, so no options and length 1.
    return ParsedType(name, CHAR, 1, charset=charset)


_TYPE_PARSERS: tuple[Callable[[_Reader, str], ParsedType | None], ...] = (
    _national_type,
    _string_type,
    _long_type,
    _integer_type,
    _float_type,
    _collection_type,
    _simple_type,
)


def _punct_at(lexeme: _Lexeme | None, text: str) -> bool:
    return lexeme is not None and lexeme.kind == "punct" and lexeme.text == text


def _with_suffixes(name: str, reader: _Reader) -> str:
    """Number types: SIGNED/UNSIGNED/ZEROFILL join the name once each, in this order."""
    seen: set[str] = set()
    while (word := reader.accept(*_NUMBER_SUFFIXES)) is not None:
        seen.add(word)
    return " ".join([name, *(suffix for suffix in _NUMBER_SUFFIXES if suffix in seen)])


def _length(reader: _Reader) -> int | None:
    length, _ = _dimensions(reader)
    return length


def _dimensions(reader: _Reader) -> tuple[int | None, int | None]:
    """(m) or (m,d); a real-number m (FLOAT(7.3)) counts its integer part, 0 meaning 10."""
    if not reader.at_punct("("):
        return None, None
    reader.take()
    numbers: list[str] = []
    while not reader.at_punct(")"):
        lexeme = reader.take()
        if lexeme.kind == "number":
            numbers.append(lexeme.text)
        elif not (lexeme.kind == "punct" and lexeme.text == ","):
            raise UnknownTypeError(f"unexpected {lexeme.text!r} in a type's dimensions")
    reader.take()
    if not numbers:
        raise UnknownTypeError("empty type dimensions")
    length = int(numbers[0].split(".")[0] or 0)
    if "." in numbers[0] and length == 0:
        length = 10  # as the MariaDB engine does for FLOAT(0.x)
    scale = int(numbers[1].split(".")[0] or 0) if len(numbers) > 1 else None
    # Debezium truncates lengths beyond a Java int.
    return min(length, 2**31 - 1), scale


def _options(reader: _Reader) -> tuple[str, ...]:
    reader.take()  # (
    options: list[str] = []
    while not reader.at_punct(")"):
        lexeme = reader.take()
        if lexeme.kind == "string":
            options.append(lexeme.text)
        elif not (lexeme.kind == "punct" and lexeme.text == ","):
            raise UnknownTypeError(f"unexpected {lexeme.text!r} in ENUM/SET options")
    reader.take()
    return tuple(options)


def _charset_clause(reader: _Reader, *, unquote: bool = True) -> str | None:
    """CHARACTER SET x / CHARSET x / CHAR SET x."""
    if reader.word() == "CHARSET":
        reader.take()
    elif reader.word() in ("CHARACTER", "CHAR") and reader.word(1) == "SET":
        reader.take()
        reader.take()
    else:
        return None
    name = reader.take().text
    return without_quotes(name) if unquote else name


def _collate_clause(reader: _Reader) -> str | None:
    if reader.accept("COLLATE") is None:
        return None
    return without_quotes(reader.take().text)


def charset_of_collation(collation: str) -> str:
    """The charset a collation belongs to: every MySQL/MariaDB collation is named
    ``<charset>_<rest>`` (``utf8mb4_bin``), except ``binary``."""
    name = without_quotes(collation).lower()
    return name.split("_", 1)[0]


# --------------------------------------------------------------------------------------------
# Quoting as Debezium does it (AbstractDdlParser.withoutQuotes, MariaDbAntlrDdlParser).


def without_quotes(text: str) -> str:
    """``AbstractDdlParser.withoutQuotes``: the outer quotes dropped, nothing unescaped."""
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"`":
        return text[1:-1]
    return text


def enum_options(enum_values: Sequence[str]) -> tuple[str, ...]:
    """ENUM/SET values from :attr:`ColumnStructure.enum_values` (Debezium's
    ``extractEnumAndSetOptions``): unquoted, ``\\'`` and ``''`` read as one quote."""
    return tuple(
        without_quotes(value).replace("\\'", "'").replace("''", "'") for value in enum_values
    )


_ESCAPES = {"\0": "\\0", "\n": "\\n", "\r": "\\r", "\\": "\\\\", "'": "''"}


def escaped_comment(text: str) -> str:
    """``text`` escaped as MariaDB prints a comment in ``SHOW CREATE TABLE``
    (``append_unescaped``); Debezium records comments so, without unescaping them."""
    return "".join(_ESCAPES.get(char, char) for char in text)


# --------------------------------------------------------------------------------------------
# Defaults (DefaultValueParserListener).

_NUMBER = re.compile(r"[+-]?\s*(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_EPOCH_FUNCTION = re.compile(
    r"(?:current_timestamp(?:\s*\(\s*\d*\s*\))?|now\s*\(\s*\d*\s*\))", re.I
)
_TEXT_FUNCTION = re.compile(
    r"(?:localtime|localtimestamp|curdate|curtime)(?:\s*\(\s*\d*\s*\))?", re.I
)
_SINGLE_STRING = re.compile(r"'(?:[^'\\]|\\.|'')*'|\"(?:[^\"\\]|\\.|\"\")*\"", re.DOTALL)
_HEX = re.compile(r"[xX]'[0-9a-fA-F]*'|0x[0-9a-fA-F]+")
_BITS = re.compile(r"[bB]'[01]*'")


def default_of_expression(text: str | None) -> DefaultValue | None:
    """What Debezium records for ``DEFAULT <text>`` (MariaDB's ``COLUMN_DEFAULT`` is this
    text); None when it records nothing (no default, ``NULL``, a hex literal)."""
    if text is None:
        return None
    text = text.strip()
    if text.upper() == "NULL" or _HEX.fullmatch(text):
        return None
    if _SINGLE_STRING.fullmatch(text):
        return DefaultValue(text[1:-1])
    if _NUMBER.fullmatch(text):
        return DefaultValue(re.sub(r"\s+", "", text))
    if _BITS.fullmatch(text):
        return DefaultValue(text[2:-1])
    if text.upper() in ("TRUE", "FALSE"):
        return DefaultValue(text)
    if _EPOCH_FUNCTION.fullmatch(text):
        return DefaultValue(EPOCH_DEFAULT)
    if _TEXT_FUNCTION.fullmatch(text):
        return DefaultValue(re.sub(r"\s+", "", text))
    return DefaultValue(None)


def is_current_timestamp(text: str | None) -> bool:
    """Whether a default is one of the grammar's ``currentTimestamp`` forms; only then does an
    ``ON UPDATE`` right after it belong to the default rather than flag the column."""
    return text is not None and bool(
        _EPOCH_FUNCTION.fullmatch(text.strip()) or _TEXT_FUNCTION.fullmatch(text.strip())
    )


# --------------------------------------------------------------------------------------------
# Column and table editing rules (ColumnEditorImpl, ColumnImpl, TableEditorImpl).


def uses_charset(jdbc_type: int) -> bool:
    """``Column.typeUsesCharset``."""
    return jdbc_type in _CHARSET_TYPES


def new_column(name: str, parsed: ParsedType, *, position: int = 1) -> ColumnStructure:
    """A fresh column of ``parsed`` type (``Column.editor()`` + ``resolveColumnDataType``)."""
    column = ColumnStructure(
        name=name, jdbc_type=INTEGER, type_name="", position=position, has_default_value=False
    )
    return with_type(column, parsed)


def with_type(column: ColumnStructure, parsed: ParsedType) -> ColumnStructure:
    """``resolveColumnDataType`` on an editor: type, length, scale, charset; ENUM/SET options
    replace the previous ones, other types keep them (as CHANGE COLUMN does in Debezium)."""
    column = replace(
        column,
        type_name=parsed.name,
        type_expression=parsed.name,
        jdbc_type=parsed.jdbc_type,
        length=parsed.length,
        scale=parsed.scale,
        charset_name=parsed.charset,
    )
    if parsed.enum_values is not None:
        column = replace(column, enum_values=parsed.enum_values)
    if parsed.serial:
        column = replace(column, auto_incremented=True, generated=True)
    return column


def with_default(column: ColumnStructure, default: DefaultValue | None) -> ColumnStructure:
    """``ColumnEditor.defaultValueExpression``; None (a ``NULL`` default) changes nothing."""
    if default is None:
        return column
    return replace(column, has_default_value=True, default_value_expression=default.expression)


def without_default(column: ColumnStructure) -> ColumnStructure:
    """``ColumnEditor.unsetDefaultValueExpression``."""
    return replace(column, has_default_value=False, default_value_expression=None)


def with_optional(column: ColumnStructure, optional: bool) -> ColumnStructure:
    """``ColumnEditor.optional``: an optional column without a default gets the implicit
    ``NULL`` default (``hasDefaultValue`` true, no expression)."""
    column = replace(column, optional=optional)
    if optional and not column.has_default_value:
        column = replace(column, has_default_value=True, default_value_expression=None)
    return column


def as_key_member(column: ColumnStructure) -> ColumnStructure:
    """A primary key column (``parsePrimaryIndexColumnNames``): not optional, and the implicit
    ``NULL`` default it had as an optional column is dropped."""
    if not column.optional:
        return column
    column = replace(column, optional=False)
    if column.has_default_value and column.default_value_expression is None:
        column = without_default(column)
    return column


def with_table_charset(column: ColumnStructure, charset: str | None) -> ColumnStructure:
    """``ColumnImpl``: a character column without its own charset takes the table's."""
    own = column.charset_name
    if uses_charset(column.jdbc_type) and (own is None or own.upper() == "DEFAULT"):
        return replace(column, charset_name=charset)
    return column


# --------------------------------------------------------------------------------------------
# Structures from information_schema.


@dataclass(frozen=True, slots=True)
class CatalogColumn:
    """One ``information_schema.COLUMNS`` row (see :data:`CATALOG_COLUMNS_SQL`)."""

    name: str
    ordinal: int
    column_type: str
    """``COLUMN_TYPE``, e.g. ``int(10) unsigned zerofill``."""
    data_type: str
    nullable: bool
    default: str | None
    """``COLUMN_DEFAULT`` as MariaDB 10.2.7+ returns it: an SQL expression (``'x'``, ``NULL``,
    ``current_timestamp()``), None when the column has no default."""
    extra: str
    """``EXTRA``: ``auto_increment``, ``on update current_timestamp()``, ``VIRTUAL GENERATED``..."""
    charset: str | None
    comment: str | None
    generation_expression: str | None

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> CatalogColumn:
        """A row of :data:`CATALOG_COLUMNS_SQL`."""
        name, ordinal, column_type, data_type, nullable, default, extra = row[:7]
        charset, comment, generation = row[7:10]
        return cls(
            name=str(name),
            ordinal=int(ordinal),
            column_type=str(column_type),
            data_type=str(data_type),
            nullable=nullable.upper() == "YES" if isinstance(nullable, str) else bool(nullable),
            default=None if default is None else str(default),
            extra=str(extra or ""),
            charset=None if charset is None else str(charset),
            comment=str(comment) if comment else None,
            generation_expression=str(generation) if generation else None,
        )


#: The columns of a table in ordinal order (params: database, table). A row holds the fields
#: of :class:`CatalogColumn` in order, ``nullable`` as 1/0 (see :meth:`CatalogColumn.from_row`).
CATALOG_COLUMNS_SQL = (
    "SELECT COLUMN_NAME, ORDINAL_POSITION, COLUMN_TYPE, DATA_TYPE, IS_NULLABLE = 'YES', "
    "COLUMN_DEFAULT, "
    "EXTRA, CHARACTER_SET_NAME, COLUMN_COMMENT, GENERATION_EXPRESSION "
    "FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s "
    "ORDER BY ORDINAL_POSITION"
)

#: The key Debezium takes as the primary key, its columns in key order (params: database,
#: table): the PRIMARY KEY, else (as Debezium reads SHOW CREATE TABLE) the first UNIQUE key
#: without nullable columns. SHOW CREATE TABLE lists unique keys NOT NULL first, whole-column
#: before prefix keys; among equals the server's own choice (COLUMN_KEY 'PRI') comes first.
PRIMARY_KEY_SQL = (
    "SELECT k.COLUMN_NAME FROM information_schema.STATISTICS k "
    "WHERE k.TABLE_SCHEMA = %s AND k.TABLE_NAME = %s AND k.INDEX_NAME = ("
    "SELECT s.INDEX_NAME FROM information_schema.STATISTICS s "
    "JOIN information_schema.COLUMNS c ON c.TABLE_SCHEMA = s.TABLE_SCHEMA "
    "AND c.TABLE_NAME = s.TABLE_NAME AND c.COLUMN_NAME = s.COLUMN_NAME "
    "WHERE s.TABLE_SCHEMA = k.TABLE_SCHEMA AND s.TABLE_NAME = k.TABLE_NAME AND s.NON_UNIQUE = 0 "
    "GROUP BY s.INDEX_NAME HAVING SUM(c.IS_NULLABLE = 'YES') = 0 "
    "ORDER BY s.INDEX_NAME <> 'PRIMARY', MAX(s.SUB_PART IS NOT NULL), "
    "MAX(c.COLUMN_KEY <> 'PRI'), s.INDEX_NAME LIMIT 1) "
    "ORDER BY k.SEQ_IN_INDEX"
)

#: The table's default charset (params: database, table); every collation is named
#: ``<charset>_...`` (MariaDB 10.10+'s ``utf8mb4_uca1400_ai_ci`` has no short CCSA row).
TABLE_CHARSET_SQL = (
    "SELECT SUBSTRING_INDEX(TABLE_COLLATION, '_', 1) FROM information_schema.TABLES "
    "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s"
)

#: The table's comment as stored (params: database, table).
TABLE_COMMENT_SQL = (
    "SELECT TABLE_COMMENT FROM information_schema.TABLES "
    "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s"
)

#: A database's default charset (param: database).
DATABASE_CHARSET_SQL = (
    "SELECT DEFAULT_CHARACTER_SET_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = %s"
)


def table_from_catalog(
    table: TableId,
    columns: Sequence[CatalogColumn],
    *,
    primary_key: Sequence[str],
    default_charset: str | None,
    comment: str | None = None,
) -> TableStructure:
    """The structure Debezium's parser makes of this table's ``SHOW CREATE TABLE``.

    ``primary_key`` comes from :data:`PRIMARY_KEY_SQL`, ``default_charset`` from
    :data:`TABLE_CHARSET_SQL` and ``comment`` is the raw ``TABLE_COMMENT`` (empty: none).
    Raises :class:`UnknownTypeError` for a column type Debezium does not know.
    """
    ordered = sorted(columns, key=lambda column: column.ordinal)
    built = [
        _column_from_catalog(column, position, default_charset)
        for position, column in enumerate(ordered, start=1)
    ]
    key = set(primary_key)
    built = [as_key_member(column) if column.name in key else column for column in built]
    return TableStructure(
        id=table,
        columns=tuple(built),
        primary_key=tuple(primary_key),
        default_charset_name=default_charset,
        comment=escaped_comment(comment) if comment else None,
    )


def _column_from_catalog(
    column: CatalogColumn, position: int, default_charset: str | None
) -> ColumnStructure:
    parsed = parse_column_type(column.column_type)
    built = new_column(column.name, parsed, position=position)
    if uses_charset(parsed.jdbc_type):
        built = replace(built, charset_name=column.charset or default_charset)
    built = with_default(built, default_of_expression(column.default))
    extra = (column.extra or "").lower()
    # The grammar reads ON UPDATE as a column attribute flagging the column (as AUTO_INCREMENT
    # does) unless it follows a DEFAULT CURRENT_TIMESTAMP, where it belongs to the default.
    on_update = "on update" in extra and not is_current_timestamp(column.default)
    if "auto_increment" in extra or on_update:
        built = replace(built, auto_incremented=True, generated=True)
    if column.comment:
        built = replace(built, comment=escaped_comment(column.comment))
    return with_optional(built, bool(column.nullable))
