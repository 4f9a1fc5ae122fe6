"""Binlog DDL statements turned into table structure changes, as Debezium's MySQL parser does.

:func:`apply_ddl` reads one statement of a binlog QUERY event and returns what it does to the
captured tables' structures, following ``MariaDbAntlrDdlParser`` and its listeners (create, alter,
drop, rename, truncate, index, database, SET), so that schema history records and schema-change
events equal Debezium's. Column types, defaults and the column/table editing rules live in
:mod:`cdcflow.capture.connectors.mysql.structure`; this module finds them in statement text.

sqlglot (MySQL dialect) tokenises every statement and parses each column definition into an AST
(nullability, DEFAULT, AUTO_INCREMENT, PRIMARY KEY, UNIQUE, COMMENT, ON UPDATE, generated
columns). sqlglot's grammar cannot carry the rest faithfully: it normalises type names
(``INTEGER``, ``int8``, ``LONG``, ``DEC``), does not know spatial types, ``MIDDLEINT`` or
``NATIONAL CHAR`` and falls back to an unparsed command on many MariaDB clauses (``ALTER IGNORE``,
``CONVERT TO``, partitions, ``ALTER DATABASE``, ``RENAME TABLE``). So the statement's outline
(which statement, which table, which clause or element) is read from the tokens, each type from
the text with Debezium's type grammar, and only the column attributes go through sqlglot's
parser. MariaDB's executable comments (``/*!40101 ... */``, ``/*M!100100 ... */``) are opened,
as the server runs their content.

Only this module imports sqlglot.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import ClassVar

import sqlglot
from sqlglot import exp
from sqlglot.dialects.mysql import MySQL
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokenizer_core import Token, TokenType

from cdcflow.capture.connectors.mysql.structure import (
    EPOCH_DEFAULT,
    DefaultValue,
    UnknownTypeError,
    as_key_member,
    new_column,
    parse_type_prefix,
    with_default,
    with_optional,
    with_table_charset,
    with_type,
    without_default,
    without_quotes,
)
from cdcflow.capture.spi import (
    ColumnStructure,
    TableChange,
    TableChangeType,
    TableId,
    TableStructure,
)

_DIALECT = MySQL()


class _Tokenizer(MySQL.Tokenizer):
    """MySQL's tokenizer without "command" keywords: it would swallow everything after a
    leading RENAME or REPLACE into one string."""

    COMMANDS: ClassVar[set[TokenType]] = set()


_TOKENIZER = _Tokenizer()
_STATEMENT_PREVIEW = 120


class UnparseableDdl(Exception):  # noqa: N818 - the name is the connector contract's
    """A structural statement this parser cannot read; the message names it and why."""

    def __init__(self, statement: str, reason: str) -> None:
        preview = " ".join(statement.split())
        if len(preview) > _STATEMENT_PREVIEW:
            preview = preview[: _STATEMENT_PREVIEW - 3] + "..."
        super().__init__(f"cannot parse DDL {preview!r}: {reason}")
        self.statement = statement
        self.reason = reason


class _Unsupported(Exception):  # noqa: N818 - internal signal, becomes UnparseableDdl
    """Raised inside the parser; :func:`apply_ddl` adds the statement to it."""


@dataclass(frozen=True)
class Charsets:
    """The character sets Debezium's parser remembers between statements.

    A table created without a charset takes its database's (``CREATE DATABASE ... CHARACTER SET``
    or ``SET character_set_database``), else the server's (``SET character_set_server``, which
    Debezium's snapshot records first). Pass the current value to :func:`apply_ddl` and keep
    :attr:`DdlOutcome.charsets` when a statement returns one.
    """

    server: str | None = None
    databases: Mapping[str, str] = field(default_factory=dict)

    def for_database(self, database: str) -> str | None:
        """``MariaDbAntlrDdlParser.charsetForTable``."""
        return self.databases.get(database) or self.server

    def with_database(self, database: str, charset: str | None) -> Charsets:
        databases = {name: value for name, value in self.databases.items() if name != database}
        if charset is not None:
            databases[database] = charset
        return Charsets(self.server, databases)


@dataclass(frozen=True)
class DdlOutcome:
    """What one statement does to the table structures.

    ``statements`` holds, for each change, the DDL text Debezium records with it: the statement
    itself, except that ``DROP TABLE a, b`` and ``RENAME TABLE a TO b, c TO d`` are recorded once
    per table (``DROP TABLE `db`.`a```, ``RENAME TABLE a TO b``).
    """

    changes: tuple[TableChange, ...]
    database: str | None
    """The database the statement applies to (the schema-change event's ``databaseName``)."""
    statements: tuple[str, ...] = ()
    charsets: Charsets | None = None
    """The charsets after this statement, when it changed them."""
    dropped_database: str | None = None
    """``DROP DATABASE``: forget every table of it (Debezium records no table change)."""


def apply_ddl(
    statement: str,
    *,
    database: str | None,
    tables: Mapping[TableId, TableStructure],
    charsets: Charsets | None = None,
) -> DdlOutcome:
    """The table changes ``statement`` makes, given the current structures (not mutated).

    ``database`` is the QUERY event's default schema (None or empty: none); qualified names
    override it. Statements that do not touch tables (GRANT, SET, views, routines...) give no
    change. Raises :class:`UnparseableDdl` for a structural statement it cannot read.
    """
    context = _Context(database or None, tables, charsets or Charsets())
    try:
        source = _without_statement_variables(_Source.of(statement))
    except TokenError as error:
        if _STRUCTURAL_START.match(statement.lstrip()):
            raise UnparseableDdl(statement, f"cannot tokenize it ({error})") from None
        return DdlOutcome((), context.database)
    try:
        return _route(source)(source, context)
    except (_Unsupported, UnknownTypeError) as error:
        raise UnparseableDdl(statement, str(error)) from None
    except (ParseError, TokenError) as error:
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise UnparseableDdl(statement, f"sqlglot: {reason}") from None


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_STRUCTURAL_START = re.compile(r"(?:CREATE|ALTER|DROP|RENAME|TRUNCATE)\b", re.IGNORECASE)


# --------------------------------------------------------------------------------------------
# Statement text and tokens.


def _open_comments(sql: str) -> tuple[str, list[tuple[int, int]]]:
    """``sql`` with comments blanked and executable comments opened, at the same offsets, and
    the spans of the executable comments."""
    chars = list(sql)
    spans: list[tuple[int, int]] = []
    opened: int | None = None
    index, size = 0, len(sql)

    def blank(start: int, end: int) -> None:
        chars[start:end] = " " * (end - start)

    while index < size:
        char = sql[index]
        if char in "'\"`":
            index = _after_quoted(sql, index)
        elif sql.startswith(("/*!", "/*M!"), index):
            end = index + (3 if sql[index + 2] == "!" else 4)
            while end < size and sql[end].isdigit():
                end += 1
            blank(index, end)
            opened, index = index, end
        elif opened is not None and sql.startswith("*/", index):
            blank(index, index + 2)
            spans.append((opened, index + 2))
            opened, index = None, index + 2
        elif sql.startswith("/*", index):
            end = sql.find("*/", index + 2)
            end = size if end < 0 else end + 2
            blank(index, end)
            index = end
        elif char == "#" or (
            sql.startswith("--", index)
            and sql[index + 2 : index + 3] in ("", " ", "\t", "\n", "\r")
        ):
            end = sql.find("\n", index)
            end = size if end < 0 else end
            blank(index, end)
            index = end
        else:
            index += 1
    return "".join(chars), spans


def _after_quoted(sql: str, index: int) -> int:
    """The offset after the quoted string or identifier starting at ``index``."""
    quote = sql[index]
    index += 1
    while index < len(sql):
        char = sql[index]
        if char == "\\" and quote != "`":
            index += 2
        elif char == quote:
            if sql[index + 1 : index + 2] == quote:
                index += 2
            else:
                return index + 1
        else:
            index += 1
    return index


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")
_TEXT_TOKENS = frozenset({TokenType.IDENTIFIER, TokenType.STRING, TokenType.NATIONAL_STRING})


def _word(token: Token) -> str | None:
    """The upper-cased keyword or bare name a token spells; None for quoted text."""
    if token.token_type in _TEXT_TOKENS or not _WORD.fullmatch(token.text):
        return None
    return token.text.upper()


def _is_name(token: Token) -> bool:
    return token.token_type == TokenType.IDENTIFIER or _word(token) is not None


def _tokenize(text: str) -> list[Token]:
    """sqlglot's tokens, with its multi-word keywords (``PRIMARY KEY``, ``DOUBLE PRECISION``,
    ``ORDER BY``...) split into one token per word, as the statement outline reads words."""
    tokens: list[Token] = []
    for token in _TOKENIZER.tokenize(text):
        if token.token_type in _TEXT_TOKENS or " " not in token.text:
            tokens.append(token)
            continue
        for match in re.finditer(r"\S+", text[token.start : token.end + 1]):
            start = token.start + match.start()
            tokens.append(
                Token(TokenType.VAR, match.group(), start=start, end=start + len(match.group()) - 1)
            )
    return tokens


def _without_statement_variables(source: _Source) -> _Source:
    """The statement of MariaDB's ``SET STATEMENT var=value [, ...] FOR statement``."""
    cursor = _Cursor(source)
    if not cursor.accept_all("SET", "STATEMENT"):
        return source
    for index, word in cursor.words_at_depth_zero():
        if word == "FOR":
            return _Source.of(source.original[source.tokens[index].end + 1 :])
    return source


@dataclass(frozen=True)
class _Source:
    """A statement: the original text, the text with comments handled, and its tokens."""

    original: str
    text: str
    tokens: tuple[Token, ...]
    executable_comments: tuple[tuple[int, int], ...]

    @classmethod
    def of(cls, statement: str) -> _Source:
        text, spans = _open_comments(statement)
        tokens = _tokenize(text)
        while tokens and tokens[-1].token_type == TokenType.SEMICOLON:
            tokens.pop()
        return cls(statement, text, tuple(tokens), tuple(spans))

    def raw(self, start: int, end: int) -> str:
        """Original text from token ``start`` through token ``end - 1``."""
        return self.original[self.tokens[start].start : self.tokens[end - 1].end + 1]

    def statement_text(self) -> str:
        """What Debezium records for the whole statement: first to last token, widened to
        whole executable comments where it starts or ends inside one."""
        start, stop = self.tokens[0].start, self.tokens[-1].end + 1
        for comment_start, comment_end in self.executable_comments:
            if comment_start <= start < comment_end:
                start = comment_start
            if comment_start < stop <= comment_end:
                stop = comment_end
        return self.original[start:stop]


class _Cursor:
    """Tokens ``[index, end)`` of a statement, read left to right."""

    def __init__(self, source: _Source, index: int = 0, end: int | None = None) -> None:
        self.source = source
        self.index = index
        self.end = len(source.tokens) if end is None else end

    def peek(self, ahead: int = 0) -> Token | None:
        index = self.index + ahead
        return self.source.tokens[index] if index < self.end else None

    def word(self, ahead: int = 0) -> str | None:
        token = self.peek(ahead)
        return None if token is None else _word(token)

    def at(self, token_type: TokenType, ahead: int = 0) -> bool:
        token = self.peek(ahead)
        return token is not None and token.token_type == token_type

    def done(self) -> bool:
        return self.index >= self.end

    def take(self) -> Token:
        token = self.peek()
        if token is None:
            raise _Unsupported("the statement ends too early")
        self.index += 1
        return token

    def accept(self, *words: str) -> str | None:
        """Consume the next token when it is one of ``words``."""
        word = self.word()
        if word is not None and word in words:
            self.index += 1
            return word
        return None

    def accept_all(self, *words: str) -> bool:
        """Consume ``words`` when they come next, in order (e.g. IF NOT EXISTS)."""
        if all(self.word(ahead) == word for ahead, word in enumerate(words)):
            self.index += len(words)
            return True
        return False

    def expect(self, *words: str) -> str:
        word = self.accept(*words)
        if word is None:
            found = self.peek()
            raise _Unsupported(
                f"expected {' or '.join(words)}, found {found.text if found else 'the end'!r}"
            )
        return word

    def name(self) -> str:
        token = self.take()
        if not _is_name(token):
            raise _Unsupported(f"expected a name, found {token.text!r}")
        return token.text

    def table(self, database: str | None) -> TableId:
        """``[db.]table``; an unqualified name is in ``database``."""
        first = self.name()
        if self.at(TokenType.DOT):
            self.take()
            return TableId(first, self.name())
        return TableId(database or "", first)

    def group(self) -> _Cursor:
        """The tokens inside the parenthesised group starting here; moves past it."""
        if not self.at(TokenType.L_PAREN):
            found = self.peek()
            raise _Unsupported(f"expected '(', found {found.text if found else 'the end'!r}")
        start = self.index + 1
        depth = 0
        while not self.done():
            token = self.take()
            if token.token_type == TokenType.L_PAREN:
                depth += 1
            elif token.token_type == TokenType.R_PAREN:
                depth -= 1
                if depth == 0:
                    return _Cursor(self.source, start, self.index - 1)
        raise _Unsupported("unbalanced parentheses")

    def split(self) -> list[_Cursor]:
        """The comma-separated parts of the remaining tokens (commas inside parentheses kept)."""
        parts: list[_Cursor] = []
        depth, start = 0, self.index
        for index in range(self.index, self.end):
            token_type = self.source.tokens[index].token_type
            if token_type == TokenType.L_PAREN:
                depth += 1
            elif token_type == TokenType.R_PAREN:
                depth -= 1
            elif token_type == TokenType.COMMA and depth == 0:
                parts.append(_Cursor(self.source, start, index))
                start = index + 1
        parts.append(_Cursor(self.source, start, self.end))
        self.index = self.end
        return [part for part in parts if not part.done()]

    def text_from(self, index: int) -> str:
        """Text (comments handled) from token ``index`` to the end of this cursor."""
        tokens = self.source.tokens
        if index >= self.end:
            return ""
        return self.source.text[tokens[index].start : tokens[self.end - 1].end + 1]

    def words_at_depth_zero(self) -> list[tuple[int, str]]:
        """(token index, word) of the words not inside parentheses, from here to the end."""
        found: list[tuple[int, str]] = []
        depth = 0
        for index in range(self.index, self.end):
            token = self.source.tokens[index]
            if token.token_type == TokenType.L_PAREN:
                depth += 1
            elif token.token_type == TokenType.R_PAREN:
                depth -= 1
            elif depth == 0 and (word := _word(token)) is not None:
                found.append((index, word))
        return found


@dataclass(frozen=True)
class _Context:
    database: str | None
    tables: Mapping[TableId, TableStructure]
    charsets: Charsets

    def outcome(self, database: str | None = None) -> DdlOutcome:
        """No table change; ``database`` defaults to the event's."""
        return DdlOutcome((), database or self.database)


_Handler = Callable[[_Source, _Context], DdlOutcome]


def _route(source: _Source) -> _Handler:
    """The handler of a statement from its leading keywords; others change nothing."""
    cursor = _Cursor(source)
    first = cursor.accept("CREATE", "ALTER", "DROP", "RENAME", "TRUNCATE", "SET", "USE")
    if first == "CREATE":
        cursor.accept_all("OR", "REPLACE")
        cursor.accept("TEMPORARY", "ONLINE", "OFFLINE")
        cursor.accept("UNIQUE", "FULLTEXT", "SPATIAL")
        return _CREATE_ROUTES.get(cursor.word() or "", _no_change)
    if first == "ALTER":
        cursor.accept("ONLINE", "OFFLINE")
        cursor.accept("IGNORE")
        return _ALTER_ROUTES.get(cursor.word() or "", _no_change)
    if first == "DROP":
        cursor.accept("TEMPORARY")
        return _DROP_ROUTES.get(cursor.word() or "", _no_change)
    if first == "RENAME":
        return _rename_tables if cursor.word() in ("TABLE", "TABLES") else _no_change
    return {"TRUNCATE": _truncate, "SET": _set_variables, "USE": _use}.get(first or "", _no_change)


def _no_change(source: _Source, context: _Context) -> DdlOutcome:
    return context.outcome()


def _skip_to(cursor: _Cursor, *words: str) -> None:
    """Move past the first of ``words`` (the statement's keyword, e.g. TABLE)."""
    while not cursor.done():
        if _word(cursor.take()) in words:
            return
    raise _Unsupported(f"expected {' or '.join(words)}")


# --------------------------------------------------------------------------------------------
# Table editing (TableEditorImpl).


class _TableEditor:
    """A table being edited with Debezium's rules: column names match case-insensitively, a
    replaced column keeps its position, positions are renumbered after every change."""

    def __init__(self, structure: TableStructure) -> None:
        self.id = structure.id
        self.columns = list(structure.columns)
        self.primary_key = list(structure.primary_key)
        self.charset = structure.default_charset_name
        self.comment = structure.comment

    def column(self, name: str) -> ColumnStructure | None:
        folded = name.lower()
        return next((column for column in self.columns if column.name.lower() == folded), None)

    def _index(self, name: str) -> int | None:
        folded = name.lower()
        return next(
            (index for index, column in enumerate(self.columns) if column.name.lower() == folded),
            None,
        )

    def add(self, column: ColumnStructure) -> None:
        index = self._index(column.name)
        if index is None:
            self.columns.append(column)
        else:
            self.columns[index] = column

    def remove(self, name: str) -> None:
        index = self._index(name)
        if index is not None:
            removed = self.columns.pop(index)
            self.primary_key = [key for key in self.primary_key if key != removed.name]

    def reorder(self, name: str, after: str | None) -> None:
        """Move ``name`` after ``after``; first when ``after`` is None or unknown."""
        index = self._index(name)
        if index is None:
            raise _Unsupported(f"no column {name!r} in {self.id}")
        column = self.columns.pop(index)
        target = None if after is None else self._index(after)
        self.columns.insert(0 if target is None else target + 1, column)

    def rename(self, old: str, new: str) -> None:
        index = self._index(old)
        if index is None:
            raise _Unsupported(f"no column {old!r} in {self.id}")
        current = self.columns[index]
        self.primary_key = [new if key == current.name else key for key in self.primary_key]
        self.columns[index] = replace(current, name=new)

    def set_primary_key(self, names: Sequence[str]) -> None:
        self.primary_key = list(names)

    def primary_key_columns(self, names: Sequence[str]) -> None:
        """A PRIMARY KEY constraint: its columns become required."""
        resolved = []
        for name in names:
            column = self.column(name)
            if column is not None:
                self.add(as_key_member(column))
            resolved.append(column.name if column is not None else name)
        self.set_primary_key(resolved)

    def unique_key_columns(self, names: Sequence[str]) -> None:
        """A UNIQUE constraint stands for the primary key while there is none, when all its
        columns exist and none is optional."""
        if self.primary_key:
            return
        columns = [self.column(name) for name in names]
        if all(column is not None and not column.optional for column in columns):
            self.set_primary_key([column.name for column in columns if column is not None])

    def convert_charset(self, charset: str) -> None:
        self.charset = charset
        self.columns = [
            replace(column, charset_name=charset) if column.charset_name is not None else column
            for column in self.columns
        ]

    def build(self) -> TableStructure:
        for key in self.primary_key:
            if self.column(key) is None:
                raise _Unsupported(f"primary key column {key!r} is not a column of {self.id}")
        columns = tuple(
            replace(with_table_charset(column, self.charset), position=position)
            for position, column in enumerate(self.columns, start=1)
        )
        return TableStructure(self.id, columns, tuple(self.primary_key), self.charset, self.comment)


# --------------------------------------------------------------------------------------------
# Column definitions (ColumnDefinitionParserListener, DefaultValueParserListener).


@dataclass(frozen=True)
class _ColumnDefinition:
    column: ColumnStructure
    primary_key: bool
    unique: bool


_EPOCH_FUNCTIONS = frozenset({"CURRENT_TIMESTAMP", "NOW"})
_TEXT_FUNCTIONS = frozenset({"LOCALTIME", "LOCALTIMESTAMP", "CURDATE", "CURTIME"})
_TIME_FUNCTION_NODES = (
    exp.CurrentTimestamp,
    exp.CurrentDate,
    exp.CurrentTime,
    exp.Localtime,
    exp.Localtimestamp,
    exp.Anonymous,
)
#: Column attributes sqlglot cannot parse and Debezium ignores: (leading words, words to drop
#: after them, replacement). ``PERSISTENT`` is MariaDB's ``STORED``; ``SRID n`` is MySQL 8's.
_ATTRIBUTE_REWRITES: tuple[tuple[tuple[str, ...], int, str], ...] = (
    (("PERSISTENT",), 0, "STORED"),
    (("COLUMN_FORMAT",), 1, ""),
    (("STORAGE",), 1, ""),
    (("WITH", "SYSTEM", "VERSIONING"), 0, ""),
    (("WITHOUT", "SYSTEM", "VERSIONING"), 0, ""),
    (("SERIAL", "DEFAULT", "VALUE"), 0, ""),
    (("SRID",), 1, ""),
)
_VALUED_ATTRIBUTES = frozenset({"COMPRESSED", "REF_SYSTEM_ID", "ENGINE_ATTRIBUTE"})


def _column_definition(
    cursor: _Cursor, name: str, base: ColumnStructure | None = None
) -> _ColumnDefinition:
    """The column ``cursor`` defines (type then attributes). ``base`` is the column a CHANGE
    COLUMN edits: Debezium keeps its other attributes but not its default, length or scale."""
    text = cursor.text_from(cursor.index)
    try:
        parsed, used = parse_type_prefix(text)
    except UnknownTypeError as error:
        raise _Unsupported(f"column {name!r}: {error}") from None
    attributes, serial_default = _clean_attributes(text[used:])
    sql = f"CREATE TABLE _t (_c INT {attributes})"
    definition = _parse_column_sql(sql, name)
    if base is None:
        column = new_column(name, parsed)
    else:
        column = with_type(replace(without_default(base), length=None, scale=None), parsed)
    serial = parsed.serial or serial_default
    # SERIAL is NOT NULL AUTO_INCREMENT UNIQUE unless an attribute says otherwise.
    state = _AttributeState(sql, _tokenize(sql), column, False if serial else None, serial)
    for constraint in definition.constraints:
        state.apply(constraint.args.get("kind"))
    if serial:
        state.column = replace(state.column, auto_incremented=True, generated=True)
    optional = True if state.nullable is None else state.nullable
    return _ColumnDefinition(with_optional(state.column, optional), state.primary_key, state.unique)


def _parse_column_sql(sql: str, name: str) -> exp.ColumnDef:
    try:
        tree = sqlglot.parse_one(sql, read=_DIALECT)
    except ParseError as error:
        reason = str(error).splitlines()[0]
        raise _Unsupported(
            f"column {name!r}: sqlglot cannot parse its attributes ({reason})"
        ) from None
    definition = tree.find(exp.ColumnDef) if isinstance(tree, exp.Create) else None
    if definition is None:
        raise _Unsupported(f"column {name!r}: cannot read its attributes")
    return definition


def _clean_attributes(text: str) -> tuple[str, bool]:
    """Column attributes without those sqlglot cannot parse (Debezium ignores them), and
    whether ``SERIAL DEFAULT VALUE`` (NOT NULL AUTO_INCREMENT UNIQUE) was among them."""
    tokens = _tokenize(text)
    pieces: list[str] = []
    serial = False
    position = index = 0
    while index < len(tokens):
        cut = _attribute_rewrite(tokens, index)
        if cut is None:
            index += 1
            continue
        count, replacement = cut
        serial = serial or _word(tokens[index]) == "SERIAL"
        last = tokens[min(index + count, len(tokens)) - 1]
        pieces.extend((text[position : tokens[index].start], f" {replacement} "))
        position = last.end + 1
        index += count
    pieces.append(text[position:])
    return "".join(pieces), serial


def _attribute_rewrite(tokens: Sequence[Token], index: int) -> tuple[int, str] | None:
    """(tokens to replace, replacement) for an attribute sqlglot cannot parse at ``index``."""
    words = tuple(_word(token) for token in tokens[index : index + 3])
    for leading, extra, replacement in _ATTRIBUTE_REWRITES:
        if words[: len(leading)] == leading:
            return len(leading) + extra, replacement
    if words[0] in _VALUED_ATTRIBUTES:
        has_equals = index + 1 < len(tokens) and tokens[index + 1].token_type == TokenType.EQ
        # COMPRESSED may stand alone; the others always take a value.
        if has_equals:
            return 3, ""
        return (1 if words[0] == "COMPRESSED" else 2), ""
    return None


@dataclass
class _AttributeState:
    """A column while its attributes are read in order (``sql`` holds them, with ``tokens``)."""

    sql: str
    tokens: Sequence[Token]
    column: ColumnStructure
    nullable: bool | None
    unique: bool
    primary_key: bool = False
    on_update_in_default: bool = False
    defaults_seen: int = 0

    def apply(self, kind: exp.Expression | None) -> None:
        if isinstance(kind, exp.NotNullColumnConstraint):
            self.nullable = bool(kind.args.get("allow_null"))
        elif isinstance(kind, exp.DefaultColumnConstraint):
            default, self.on_update_in_default = _default_of(
                kind.this, self.sql, self.tokens, self._next_default_token()
            )
            self.column = with_default(self.column, default)
        elif isinstance(kind, exp.AutoIncrementColumnConstraint) or (
            # Debezium's grammar reads ON UPDATE as an AUTO_INCREMENT-like attribute, unless
            # it directly follows a DEFAULT CURRENT_TIMESTAMP, whose part it then is.
            isinstance(kind, exp.OnUpdateColumnConstraint) and not self.on_update_in_default
        ):
            self.column = replace(self.column, auto_incremented=True, generated=True)
        elif isinstance(kind, exp.PrimaryKeyColumnConstraint):
            self.nullable, self.primary_key = False, True
        elif isinstance(kind, exp.UniqueColumnConstraint):
            self.unique = True
        elif isinstance(kind, exp.CommentColumnConstraint):
            self.column = replace(self.column, comment=without_quotes(_raw(self.sql, kind.this)))

    def _next_default_token(self) -> int | None:
        """The index of the DEFAULT keyword of the next DEFAULT attribute."""
        indexes = [
            i for i, token in enumerate(self.tokens) if token.token_type == TokenType.DEFAULT
        ]
        self.defaults_seen += 1
        return indexes[self.defaults_seen - 1] if self.defaults_seen <= len(indexes) else None


def _raw(sql: str, node: exp.Expression) -> str:
    """The text a literal was written as (sqlglot keeps its position, not its escapes)."""
    meta = node.meta
    if "start" not in meta or "end" not in meta:
        raise _Unsupported(f"cannot locate {node.sql(dialect=_DIALECT)!r} in the statement")
    return sql[int(meta["start"]) : int(meta["end"]) + 1]


def _default_of(
    value: exp.Expression, sql: str, tokens: Sequence[Token], at: int | None
) -> tuple[DefaultValue | None, bool]:
    """What Debezium records for ``DEFAULT value`` (token ``at`` is the DEFAULT keyword), and
    whether an ``ON UPDATE`` right after it is part of the default."""
    if at is None or at + 1 >= len(tokens):
        return _literal_default(value, sql, None), False
    following = tokens[at + 1]
    function = _word(following)
    if isinstance(value, _TIME_FUNCTION_NODES) and function in _EPOCH_FUNCTIONS | _TEXT_FUNCTIONS:
        end = _call_end(tokens, at + 1)
        absorbs = _word(tokens[end + 1]) == "ON" if end + 1 < len(tokens) else False
        if function in _EPOCH_FUNCTIONS:
            return DefaultValue(EPOCH_DEFAULT), absorbs
        text = "".join(sql[token.start : token.end + 1] for token in tokens[at + 1 : end + 1])
        return DefaultValue(text), absorbs
    return _literal_default(value, sql, following), False


def _call_end(tokens: Sequence[Token], index: int) -> int:
    """The index of the last token of a function call (or bare keyword) at ``index``."""
    if index + 1 >= len(tokens) or tokens[index + 1].token_type != TokenType.L_PAREN:
        return index
    end = index + 1
    while end < len(tokens) and tokens[end].token_type != TokenType.R_PAREN:
        end += 1
    return end


def _literal_default(
    value: exp.Expression, sql: str, following: Token | None
) -> DefaultValue | None:
    """Constants as ``DefaultValueParserListener`` reads them; anything else is computed."""
    if isinstance(value, exp.Null | exp.HexString):
        return None  # NULL records nothing; Debezium has no branch for hex literals either
    sign = ""
    if isinstance(value, exp.Neg):
        sign, value = "-", value.this
    elif following is not None and following.token_type == TokenType.PLUS:
        sign = "+"
    if isinstance(value, exp.Collate):
        value = value.this
    if isinstance(value, exp.Literal):
        raw = _raw(sql, value)
        return DefaultValue(sign + (without_quotes(raw) if value.is_string else raw))
    if isinstance(value, exp.Introducer):
        return DefaultValue(sign + _raw(sql, value) + _raw(sql, value.expression))
    if isinstance(value, exp.BitString):
        return DefaultValue(_raw(sql, value)[2:-1])
    if isinstance(value, exp.Boolean) and following is not None:
        return DefaultValue(sql[following.start : following.end + 1])
    if isinstance(value, exp.Concat) and all(
        isinstance(part, exp.Literal) and part.is_string for part in value.expressions
    ):
        return DefaultValue(without_quotes("".join(_raw(sql, part) for part in value.expressions)))
    return DefaultValue(None)


# --------------------------------------------------------------------------------------------
# CREATE TABLE (CreateTableParserListener, TableCommonParserListener).


def _create_table(source: _Source, context: _Context) -> DdlOutcome:
    cursor = _Cursor(source)
    cursor.expect("CREATE")
    replaces = cursor.accept_all("OR", "REPLACE")
    _skip_to(cursor, "TABLE")
    cursor.accept_all("IF", "NOT", "EXISTS")
    table = cursor.table(context.database)
    if cursor.accept("LIKE") or (cursor.at(TokenType.L_PAREN) and cursor.word(1) == "LIKE"):
        return _create_table_like(source, context, table, cursor)
    # Debezium keeps a table it knows (IF NOT EXISTS or not); CREATE OR REPLACE replaces it.
    if (table in context.tables and not replaces) or not cursor.at(TokenType.L_PAREN):
        return context.outcome(table.schema)
    definitions = cursor.group()
    if _creates_from_query(cursor):
        return context.outcome(table.schema)  # CREATE ... SELECT: Debezium records nothing
    editor = _TableEditor(TableStructure(table, ()))
    for element in definitions.split():
        _apply_element(editor, element)
    charset, comment = _table_options(cursor)
    if charset is None or charset.upper() == "DEFAULT":
        charset = context.charsets.for_database(table.schema)
    editor.charset = charset
    editor.comment = comment
    return _changed(source, TableChange(TableChangeType.CREATE, editor.build()))


def _create_table_like(
    source: _Source, context: _Context, table: TableId, cursor: _Cursor
) -> DdlOutcome:
    """``CREATE TABLE t LIKE o``: o's columns, key and charset (not its comment)."""
    if cursor.at(TokenType.L_PAREN):
        cursor = cursor.group()
        cursor.expect("LIKE")
    original = context.tables.get(cursor.table(context.database))
    if original is None:
        return context.outcome(table.schema)
    copy = replace(original, id=table, comment=None)
    return _changed(source, TableChange(TableChangeType.CREATE, copy))


def _creates_from_query(cursor: _Cursor) -> bool:
    words = {word for _, word in cursor.words_at_depth_zero()}
    return bool(words & {"SELECT", "AS", "IGNORE", "REPLACE"})


def _changed(source: _Source, change: TableChange) -> DdlOutcome:
    return DdlOutcome((change,), change.table.id.schema or None, (source.statement_text(),))


_IGNORED_ELEMENTS = frozenset({"INDEX", "KEY", "FULLTEXT", "SPATIAL", "FOREIGN", "CHECK"})


def _apply_element(editor: _TableEditor, element: _Cursor) -> None:
    """One create definition: a column, a PRIMARY KEY or UNIQUE key, or something ignored
    (indexes, foreign keys, checks, periods)."""
    if element.accept("CONSTRAINT") and element.word() not in (
        "PRIMARY",
        "UNIQUE",
        "FOREIGN",
        "CHECK",
    ):
        element.take()  # the constraint's name
    word = element.word()
    if word == "PRIMARY":
        element.take()
        element.expect("KEY")
        editor.primary_key_columns(_key_columns(element))
    elif word == "UNIQUE":
        editor.unique_key_columns(_key_columns(element))
    elif word in _IGNORED_ELEMENTS or _adds_no_column(element):
        return
    else:
        _add_column(editor, element)


def _add_column(editor: _TableEditor, element: _Cursor) -> None:
    """A column declaration ``name definition``: added, and its inline keys applied."""
    name = element.name()
    _place_column(editor, _column_definition(element, name), name)


def _place_column(editor: _TableEditor, definition: _ColumnDefinition, key_name: str) -> None:
    editor.add(definition.column)
    if definition.primary_key or (definition.unique and not editor.primary_key):
        editor.set_primary_key([key_name])


def _key_columns(cursor: _Cursor) -> list[str]:
    """The column names of ``KEY [name] [USING x] (a, b(10) DESC, ...)``."""
    while not cursor.done() and not cursor.at(TokenType.L_PAREN):
        cursor.take()
    return [_key_column(part) for part in cursor.group().split()]


def _key_column(part: _Cursor) -> str:
    token = part.peek()
    if token is None:
        raise _Unsupported("an empty key part")
    if _is_name(token):
        return token.text
    if token.token_type == TokenType.STRING:
        return without_quotes(part.source.raw(part.index, part.index + 1))
    # A functional key part: Debezium uses its text without spaces.
    return "".join(
        part.source.text[t.start : t.end + 1] for t in part.source.tokens[part.index : part.end]
    )


def _table_options(cursor: _Cursor) -> tuple[str | None, str | None]:
    """(charset, comment) of table or database options, up to any PARTITION clause; the
    charset may be ``DEFAULT``."""
    charset = comment = None
    words = cursor.words_at_depth_zero()
    for position, (index, word) in enumerate(words):
        if word == "PARTITION":
            break
        option = _Cursor(cursor.source, index, cursor.end)
        if word == "COMMENT":
            comment = _first(_option_string(option), comment)
        elif word in ("CHARSET", "CHARACTER", "CHAR") and _is_charset_keyword(words, position):
            charset = _first(_option_value(option, skip=1 if word == "CHARSET" else 2), charset)
    return charset, comment


def _first(value: str | None, otherwise: str | None) -> str | None:
    return otherwise if value is None else value


def _is_charset_keyword(words: Sequence[tuple[int, str]], position: int) -> bool:
    index, word = words[position]
    if word == "CHARSET":
        return True
    following = words[position + 1] if position + 1 < len(words) else None
    return following is not None and following == (index + 1, "SET")


def _option_value(option: _Cursor, *, skip: int) -> str | None:
    """The value of ``KEY [=] value`` (KEY being ``skip`` tokens), quotes dropped."""
    option.index += skip
    if option.at(TokenType.EQ):
        option.take()
    if option.done():
        return None
    return without_quotes(option.source.raw(option.index, option.index + 1))


def _option_string(option: _Cursor) -> str | None:
    """``COMMENT [=] 'text'`` as Debezium keeps it: outer quotes dropped, nothing unescaped."""
    option.index += 1
    if option.at(TokenType.EQ):
        option.take()
    if option.at(TokenType.STRING):
        return without_quotes(option.source.raw(option.index, option.index + 1))
    return None


# --------------------------------------------------------------------------------------------
# ALTER TABLE (AlterTableParserListener).


def _alter_table(source: _Source, context: _Context) -> DdlOutcome:
    cursor = _Cursor(source)
    _skip_to(cursor, "TABLE")
    cursor.accept_all("IF", "EXISTS")
    table = cursor.table(context.database)
    if cursor.accept("WAIT"):
        cursor.take()  # MariaDB's WAIT n: how long to wait for the table's lock
    cursor.accept("NOWAIT")
    current = context.tables.get(table)
    if current is None:
        return context.outcome(table.schema)  # Debezium ignores tables it does not know
    editor = _TableEditor(current)
    for clause in cursor.split():
        _alter_clause(editor, clause, context)
    structure = editor.build()
    previous = table if structure.id != table else None
    return _changed(source, TableChange(TableChangeType.ALTER, structure, previous))


_IGNORED_CLAUSES = _words(
    "ALGORITHM LOCK FORCE ORDER ENABLE DISABLE DISCARD IMPORT WITH WITHOUT PARTITION REMOVE "
    "UPGRADE COALESCE REORGANIZE EXCHANGE ANALYZE CHECK OPTIMIZE REBUILD REPAIR TRUNCATE"
)
#: Table options an ALTER TABLE may set; only COMMENT changes the recorded structure.
_TABLE_OPTIONS = _words(
    "ENGINE AUTO_INCREMENT AVG_ROW_LENGTH DEFAULT CHARACTER CHARSET CHECKSUM PAGE_CHECKSUM "
    "COLLATE COMMENT COMPRESSION CONNECTION DATA INDEX DELAY_KEY_WRITE ENCRYPTION ENCRYPTED "
    "ENCRYPTION_KEY_ID ENGINE_ATTRIBUTE IETF_QUOTES INSERT_METHOD KEY_BLOCK_SIZE MAX_ROWS "
    "MIN_ROWS PACK_KEYS PAGE_COMPRESSED PAGE_COMPRESSION_LEVEL PASSWORD ROW_FORMAT "
    "SECONDARY_ENGINE_ATTRIBUTE SEQUENCE STATS_AUTO_RECALC STATS_PERSISTENT "
    "STATS_SAMPLE_PAGES TABLESPACE TRANSACTIONAL UNION AUTOEXTEND_SIZE START STORAGE"
)


def _alter_clause(editor: _TableEditor, clause: _Cursor, context: _Context) -> None:
    word = clause.word()
    handler = _CLAUSES.get(word or "")
    if handler is not None:
        handler(editor, clause, context)
    elif word in _IGNORED_CLAUSES:
        return
    elif word in _TABLE_OPTIONS:
        _, comment = _table_options(clause)
        editor.comment = comment if comment is not None else editor.comment
    else:
        raise _Unsupported(f"unknown ALTER TABLE clause {clause.text_from(clause.index)!r}")


_KEY_WORDS = frozenset(
    {"CONSTRAINT", "PRIMARY", "UNIQUE", "INDEX", "KEY", "FULLTEXT", "SPATIAL", "FOREIGN", "CHECK"}
)


def _alter_add(editor: _TableEditor, clause: _Cursor, context: _Context) -> None:
    """ADD [COLUMN] [IF NOT EXISTS] col def [FIRST|AFTER c] | ADD (defs...) | ADD key..."""
    clause.expect("ADD")
    column = clause.accept("COLUMN") is not None
    clause.accept_all("IF", "NOT", "EXISTS")
    if clause.at(TokenType.L_PAREN):
        for element in clause.group().split():
            _apply_element(editor, element)
    elif not column and _adds_no_column(clause):
        _apply_element(editor, clause)
    else:
        name = clause.name()
        first, after = _position(clause)
        _place_column(editor, _column_definition(clause, name), name)
        _move(editor, name, first, after)


def _adds_no_column(clause: _Cursor) -> bool:
    """Whether ADD (without COLUMN) adds a key, constraint, partition or period."""
    word, following = clause.word(), clause.word(1)
    return (
        word in _KEY_WORDS
        or word in _ADD_IGNORED
        or (word == "PERIOD" and following == "FOR")
        or (word == "VECTOR" and following in ("INDEX", "KEY"))
        or (word == "SYSTEM" and following == "VERSIONING")
    )


_ADD_IGNORED = frozenset({"PARTITION"})


def _position(clause: _Cursor) -> tuple[bool, str | None]:
    """A trailing ``FIRST`` or ``AFTER col``, taken off the clause: (first, after)."""
    tokens = clause.source.tokens
    if clause.end > clause.index and _word(tokens[clause.end - 1]) == "FIRST":
        clause.end -= 1
        return True, None
    if clause.end - 2 > clause.index and _word(tokens[clause.end - 2]) == "AFTER":
        after = tokens[clause.end - 1]
        if _is_name(after):
            clause.end -= 2
            return False, after.text
    return False, None


def _move(editor: _TableEditor, name: str, first: bool, after: str | None) -> None:
    if first or after is not None:
        editor.reorder(name, after)


def _alter_modify(editor: _TableEditor, clause: _Cursor, context: _Context) -> None:
    """MODIFY [COLUMN] [IF EXISTS] col def: a new definition at the same position."""
    clause.expect("MODIFY")
    clause.accept("COLUMN")
    clause.accept_all("IF", "EXISTS")
    name = clause.name()
    if editor.column(name) is None:
        raise _Unsupported(f"MODIFY of unknown column {name!r} in {editor.id}")
    first, after = _position(clause)
    _place_column(editor, _column_definition(clause, name), name)
    _move(editor, name, first, after)


def _alter_change(editor: _TableEditor, clause: _Cursor, context: _Context) -> None:
    """CHANGE [COLUMN] [IF EXISTS] old new def: Debezium edits the old column."""
    clause.expect("CHANGE")
    clause.accept("COLUMN")
    clause.accept_all("IF", "EXISTS")
    old, new = clause.name(), clause.name()
    existing = editor.column(old)
    if existing is None:
        raise _Unsupported(f"CHANGE of unknown column {old!r} in {editor.id}")
    first, after = _position(clause)
    _place_column(editor, _column_definition(clause, existing.name, existing), existing.name)
    if new != existing.name:
        editor.rename(existing.name, new)
    _move(editor, new, first, after)


def _alter_drop(editor: _TableEditor, clause: _Cursor, context: _Context) -> None:
    clause.expect("DROP")
    if clause.accept_all("PRIMARY", "KEY"):
        editor.set_primary_key([])
        return
    word = clause.word()
    if word in ("INDEX", "KEY", "FOREIGN", "CONSTRAINT", "CHECK", "PARTITION", "SYSTEM", "PERIOD"):
        return
    clause.accept("COLUMN")
    clause.accept_all("IF", "EXISTS")
    editor.remove(clause.name())


def _alter_alter(editor: _TableEditor, clause: _Cursor, context: _Context) -> None:
    """ALTER [COLUMN] col SET DEFAULT v | DROP DEFAULT; ALTER INDEX/KEY ... is ignored."""
    clause.expect("ALTER")
    if clause.word() in ("INDEX", "KEY"):
        return
    clause.accept("COLUMN")
    column = editor.column(clause.name())
    if column is None:
        return  # Debezium ignores a default change of an unknown column
    if clause.accept_all("DROP", "DEFAULT"):
        editor.add(without_default(column))
    elif clause.accept_all("SET", "DEFAULT"):
        sql = f"CREATE TABLE _t (_c INT DEFAULT {clause.text_from(clause.index)})"
        state = _AttributeState(sql, _tokenize(sql), column, column.optional, False)
        for constraint in _parse_column_sql(sql, column.name).constraints:
            if isinstance(constraint.args.get("kind"), exp.DefaultColumnConstraint):
                state.apply(constraint.args.get("kind"))
        editor.add(state.column)


def _alter_rename(editor: _TableEditor, clause: _Cursor, context: _Context) -> None:
    """RENAME COLUMN a TO b | RENAME [TO|AS] table; RENAME INDEX/KEY is ignored."""
    clause.expect("RENAME")
    if clause.word() in ("INDEX", "KEY"):
        return
    if clause.accept("COLUMN"):
        old = clause.name()
        clause.expect("TO")
        if editor.column(old) is None:
            raise _Unsupported(f"RENAME of unknown column {old!r} in {editor.id}")
        editor.rename(old, clause.name())
        return
    clause.accept("TO", "AS")
    # An unqualified new name is in the event's database (Debezium's currentSchema).
    editor.id = clause.table(context.database or editor.id.schema)


def _alter_convert(editor: _TableEditor, clause: _Cursor, context: _Context) -> None:
    """CONVERT TO CHARACTER SET x [COLLATE y]: the table's charset and that of every column
    that has one (AlterTableParserListener.enterAlterByConvertCharacterset)."""
    clause.expect("CONVERT")
    clause.expect("TO")
    charset = _option_value(clause, skip=1 if clause.word() == "CHARSET" else 2)
    if charset is not None:
        editor.convert_charset(charset)


_Clause = Callable[[_TableEditor, _Cursor, _Context], None]
_CLAUSES: dict[str, _Clause] = {
    "ADD": _alter_add,
    "MODIFY": _alter_modify,
    "CHANGE": _alter_change,
    "DROP": _alter_drop,
    "ALTER": _alter_alter,
    "RENAME": _alter_rename,
    "CONVERT": _alter_convert,
}


# --------------------------------------------------------------------------------------------
# DROP TABLE, RENAME TABLE, TRUNCATE, indexes.


def _drop_tables(source: _Source, context: _Context) -> DdlOutcome:
    """DROP [TEMPORARY] TABLE [IF EXISTS] a, b ...: one DROP per table, each recorded with its
    own statement text as Debezium's DropTableParserListener writes it."""
    cursor = _Cursor(source)
    _skip_to(cursor, "TABLE", "TABLES")
    cursor.accept_all("IF", "EXISTS")
    prefix = _prefix(cursor)
    ids = [cursor.table(context.database)]
    while cursor.at(TokenType.COMMA):
        cursor.take()
        ids.append(cursor.table(context.database))
    drop_type = next(
        (
            source.raw(index, index + 1)
            for index, word in cursor.words_at_depth_zero()
            if word in ("RESTRICT", "CASCADE")
        ),
        None,
    )
    suffix = "" if drop_type is None else " " + drop_type
    changes = tuple(
        TableChange(TableChangeType.DROP, context.tables.get(table) or TableStructure(table, ()))
        for table in ids
    )
    statements = tuple(prefix + _backquoted(table) + suffix for table in ids)
    return DdlOutcome(changes, ids[0].schema or context.database, statements)


def _prefix(cursor: _Cursor) -> str:
    """The statement's original text before the cursor (e.g. ``DROP TABLE IF EXISTS ``)."""
    start = cursor.peek()
    if start is None:
        raise _Unsupported("the statement ends too early")
    return cursor.source.original[cursor.source.tokens[0].start : start.start]


def _backquoted(table: TableId) -> str:
    """``TableId.toQuotedString('`')``."""
    return ".".join(_quote(part) for part in (table.schema, table.table) if part)


def _quote(part: str) -> str:
    if part[0] != "`" and part[-1] != "`":
        return "`" + part.replace("`", "``") + "`"
    return part


def _rename_tables(source: _Source, context: _Context) -> DdlOutcome:
    """RENAME TABLE a TO b, c TO d: an ALTER per known table, applied in order (so swaps
    through a temporary name work), each recorded as ``RENAME TABLE a TO b``."""
    cursor = _Cursor(source)
    _skip_to(cursor, "TABLE", "TABLES")
    cursor.accept_all("IF", "EXISTS")
    prefix = _prefix(cursor)
    tables = dict(context.tables)
    changes: list[TableChange] = []
    statements: list[str] = []
    for clause in cursor.split():
        start = clause.index
        old = clause.table(context.database)
        _skip_to(clause, "TO")
        new = clause.table(context.database)
        current = tables.pop(old, None)
        if current is None:
            continue  # Debezium has nothing to rename either
        tables[new] = replace(current, id=new)
        changes.append(TableChange(TableChangeType.ALTER, tables[new], old))
        statements.append(prefix + source.raw(start, clause.index))
    database = changes[0].table.id.schema if changes else context.database
    return DdlOutcome(tuple(changes), database or context.database, tuple(statements))


def _truncate(source: _Source, context: _Context) -> DdlOutcome:
    cursor = _Cursor(source, 1)
    cursor.accept("TABLE")
    return context.outcome(cursor.table(context.database).schema)


def _create_index(source: _Source, context: _Context) -> DdlOutcome:
    """Only CREATE UNIQUE INDEX can change a structure: on a table without primary key whose
    columns it names all exist, Debezium records it (and takes it as the primary key when none
    of them is optional; CreateUniqueIndexParserListener)."""
    cursor = _Cursor(source)
    unique = any(word == "UNIQUE" for _, word in cursor.words_at_depth_zero()[:5])
    _skip_to(cursor, "ON")
    table = cursor.table(context.database)
    current = context.tables.get(table)
    if not unique or current is None or current.primary_key:
        return context.outcome(table.schema)
    editor = _TableEditor(current)
    names = _key_columns(cursor)
    if any(editor.column(name) is None for name in names):
        return context.outcome(table.schema)
    editor.unique_key_columns(names)
    return _changed(source, TableChange(TableChangeType.ALTER, editor.build()))


def _drop_index(source: _Source, context: _Context) -> DdlOutcome:
    cursor = _Cursor(source)
    _skip_to(cursor, "ON")
    return context.outcome(cursor.table(context.database).schema)


# --------------------------------------------------------------------------------------------
# Databases, SET and USE (CreateAndAlterDatabaseParserListener, SetStatementParserListener).


def _create_database(source: _Source, context: _Context) -> DdlOutcome:
    cursor = _Cursor(source)
    _skip_to(cursor, "DATABASE", "SCHEMA")
    cursor.accept_all("IF", "NOT", "EXISTS")
    return _database_options(context, cursor.name(), cursor)


def _alter_database(source: _Source, context: _Context) -> DdlOutcome:
    cursor = _Cursor(source)
    _skip_to(cursor, "DATABASE", "SCHEMA")
    starts_options = cursor.word() in ("DEFAULT", "CHARACTER", "CHARSET", "CHAR", "COLLATE")
    name = context.database if starts_options or cursor.done() else cursor.name()
    if name is None:
        return context.outcome()
    return _database_options(context, name, cursor)


def _database_options(context: _Context, name: str, cursor: _Cursor) -> DdlOutcome:
    """A database charset option; ``DEFAULT`` is the server's. A collation alone changes
    nothing (Debezium only reads the charset name)."""
    charset, _ = _table_options(cursor)
    if charset is not None and charset.upper() == "DEFAULT":
        charset = context.charsets.server
    if charset is None:
        return DdlOutcome((), name)
    return DdlOutcome((), name, charsets=context.charsets.with_database(name, charset))


def _drop_database(source: _Source, context: _Context) -> DdlOutcome:
    cursor = _Cursor(source)
    _skip_to(cursor, "DATABASE", "SCHEMA")
    cursor.accept_all("IF", "EXISTS")
    name = cursor.name()
    return DdlOutcome(
        (), name, charsets=context.charsets.with_database(name, None), dropped_database=name
    )


_SERVER_CHARSET = "CHARACTER_SET_SERVER"
_DATABASE_CHARSET = "CHARACTER_SET_DATABASE"


def _set_variables(source: _Source, context: _Context) -> DdlOutcome:
    """SET character_set_server / character_set_database (the latter for the current
    database); other variables change nothing here."""
    cursor = _Cursor(source, 1)
    charsets = context.charsets
    for item in cursor.split():
        assignment = _assignment(item)
        if assignment is None:
            continue
        variable, value = assignment
        if variable == _SERVER_CHARSET:
            charsets = Charsets(value, charsets.databases)
        elif variable == _DATABASE_CHARSET and context.database:
            charsets = charsets.with_database(context.database, value)
    changed = charsets if charsets != context.charsets else None
    return DdlOutcome((), context.database, charsets=changed)


def _assignment(item: _Cursor) -> tuple[str, str] | None:
    """(VARIABLE, value) of ``[GLOBAL|SESSION|LOCAL] name = value`` or ``@@[scope.]name``."""
    item.accept("GLOBAL", "SESSION", "LOCAL", "PERSIST")
    if item.at(TokenType.SESSION_PARAMETER):
        item.take()
        if item.word(1) is None and item.at(TokenType.DOT, 1):
            item.index += 2
    elif item.at(TokenType.PARAMETER):
        return None  # a user variable
    token = item.peek()
    if token is None or _word(token) is None:
        return None
    item.take()
    if not (item.at(TokenType.EQ) or item.at(TokenType.COLON_EQ)) or item.peek(1) is None:
        return None
    item.take()
    return token.text.upper(), without_quotes(item.source.raw(item.index, item.end))


def _use(source: _Source, context: _Context) -> DdlOutcome:
    cursor = _Cursor(source, 1)
    return context.outcome(cursor.name() if not cursor.done() else None)


_CREATE_ROUTES: dict[str, _Handler] = {
    "TABLE": _create_table,
    "INDEX": _create_index,
    "DATABASE": _create_database,
    "SCHEMA": _create_database,
}
_ALTER_ROUTES: dict[str, _Handler] = {
    "TABLE": _alter_table,
    "DATABASE": _alter_database,
    "SCHEMA": _alter_database,
}
_DROP_ROUTES: dict[str, _Handler] = {
    "TABLE": _drop_tables,
    "TABLES": _drop_tables,
    "INDEX": _drop_index,
    "DATABASE": _drop_database,
    "SCHEMA": _drop_database,
}
