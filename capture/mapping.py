"""Debezium's column mappers (``io.debezium.relational.mapping``): truncate, mask, hash, and
source-type propagation, configured by property names that carry their own arguments.

* ``column.truncate.to.<n>.chars`` truncates string values (and the bytes of plain binary
  columns) of the listed columns to ``n`` characters; the field schema gets the parameter
  ``truncateLength``. Columns whose declared length is at most ``n`` are left alone.
* ``column.mask.with.<n>.chars`` replaces the values of character columns with ``n`` ``*``
  (NULL too, as Debezium does); the field schema gets ``masked: "true"``.
* ``column.mask.hash.<algorithm>.with.salt.<salt>`` replaces the values of character columns
  with the lowercase hex digest of ``salt`` followed by the value serialized as Java's
  ``ObjectOutputStream`` writes a ``String``; ``column.mask.hash.v2.…`` hashes the value's
  UTF-8 bytes instead. The hex is cut to the column's declared length when it has one
  (``varchar(10)`` gets 10 hex digits). NULL stays NULL. ``<algorithm>`` is a Java
  ``MessageDigest`` name (``SHA-256``, ``MD5``, ``SHA3-512``, …).
* ``column.propagate.source.type`` (regexes over ``schema.table.column``) and
  ``datatype.propagate.source.type`` (over ``schema.table.<type name>``) add the parameters
  ``__debezium.source.column.type`` (the type name upper-cased), ``…length`` (when the
  column has one), ``…scale`` (when it has one) and ``…name`` to the field schema.

Regexes are comma-separated, matched case-insensitively against the whole name. Each column
gets at most one mapper: the first rule that matches, in the order Debezium builds them
(truncate, mask, column propagation, datatype propagation, hash, hash v2; in configuration
order within each kind). Mappers change event *values* only: Debezium builds keys without
them, so a key column keeps its value in the key and is mapped in the event value alone
(:func:`apply_rule_to_value_field`). Everything here works on the JSON-ready values
connectors produce, so it is the same for every connector; what a column's length, scale
and type name are is the connector's business (:class:`SourceColumn`).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import struct
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final, Literal

from cdcflow.capture.spi import Column, ConnectSchema, TableId

RuleKind = Literal["truncate", "mask", "propagate", "propagate_datatype", "hash", "hash_v2"]
#: Rule kinds in the order Debezium's ColumnMappers adds them; the first matching rule wins.
RULE_ORDER: Final[tuple[RuleKind, ...]] = (
    "truncate",
    "mask",
    "propagate",
    "propagate_datatype",
    "hash",
    "hash_v2",
)
#: Names of the properties whose name carries an argument, for docs and error messages.
RULE_PROPERTIES: Final[tuple[str, ...]] = (
    "column.truncate.to.<n>.chars",
    "column.mask.with.<n>.chars",
    "column.mask.hash.<algorithm>.with.salt.<salt>",
    "column.mask.hash.v2.<algorithm>.with.salt.<salt>",
)
_PATTERNS: Final[tuple[tuple[RuleKind, re.Pattern[str]], ...]] = (
    ("truncate", re.compile(r"column\.truncate\.to\.(\d+)\.chars")),
    ("mask", re.compile(r"column\.mask\.with\.(\d+)\.chars")),
    ("hash_v2", re.compile(r"column\.mask\.hash\.v2\.([^.]+)\.with\.salt\.(.+)", re.S)),
    ("hash", re.compile(r"column\.mask\.hash\.([^.]+)\.with\.salt\.(.+)", re.S)),
)
#: Java ``MessageDigest`` names (the SUN provider's, with its aliases) -> hashlib names.
_DIGESTS: Final[dict[str, str]] = {
    "md5": "md5",
    "sha": "sha1",
    "sha1": "sha1",
    "sha-1": "sha1",
    "sha224": "sha224",
    "sha-224": "sha224",
    "sha256": "sha256",
    "sha-256": "sha256",
    "sha384": "sha384",
    "sha-384": "sha384",
    "sha512": "sha512",
    "sha-512": "sha512",
    "sha512/224": "sha512_224",
    "sha-512/224": "sha512_224",
    "sha512/256": "sha512_256",
    "sha-512/256": "sha512_256",
    "sha3-224": "sha3_224",
    "sha3-256": "sha3_256",
    "sha3-384": "sha3_384",
    "sha3-512": "sha3_512",
}
TYPE_PARAMETER = "__debezium.source.column.type"
LENGTH_PARAMETER = "__debezium.source.column.length"
SCALE_PARAMETER = "__debezium.source.column.scale"
COMMENT_PARAMETER = "__debezium.source.column.comment"
NAME_PARAMETER = "__debezium.source.column.name"
#: Java's ``ObjectOutputStream`` stream header, and its string and long-string tags.
_JAVA_STREAM_HEADER: Final = b"\xac\xed\x00\x05"
_TC_STRING: Final = 0x74
_TC_LONGSTRING: Final = 0x7C

ValueMap = Callable[[Any], Any]


@dataclass(frozen=True)
class SourceColumn:
    """What a mapper needs to know of a column, as Debezium's ``Column`` describes it.

    ``type_name`` is the name the database driver reports (``varchar``, ``int4``, ``serial``);
    ``length`` is -1 when the column has none; ``character`` marks the character types (JDBC
    CHAR/VARCHAR and kin), the only ones masking and hashing change.
    """

    name: str
    type_name: str
    length: int
    scale: int | None
    character: bool
    #: The column's comment, when ``include.schema.comments`` reads them.
    comment: str | None = None


@dataclass(frozen=True)
class ColumnRule:
    """One configured mapper: its kind, its column (or type) regexes and its arguments."""

    kind: RuleKind
    patterns: tuple[str, ...]
    length: int = 0
    algorithm: str = ""
    salt: str = ""

    def matches(self, table: TableId, column: SourceColumn) -> bool:
        """Whether the rule applies to ``column`` of ``table`` (a full, case-insensitive match)."""
        last = column.type_name if self.kind == "propagate_datatype" else column.name
        subject = f"{table.schema}.{table.table}.{last}"
        return any(re.fullmatch(p, subject, re.IGNORECASE) for p in self.patterns)


def split_patterns(value: object) -> tuple[str, ...]:
    """A comma-separated list of regexes (a YAML list works too), blanks dropped."""
    if value is None:
        return ()
    items = value if isinstance(value, list | tuple) else str(value).split(",")
    return tuple(str(item).strip() for item in items if str(item).strip())


def parse_rule(name: str, value: object) -> ColumnRule | None:
    """The rule a prefixed property such as ``column.mask.with.8.chars`` defines, or None.

    Raises ValueError for a well-formed name with a bad argument (an unknown digest, a regex
    that does not compile).
    """
    for kind, pattern in _PATTERNS:
        found = pattern.fullmatch(name)
        if found is None:
            continue
        patterns = split_patterns(value)
        _compile_all(name, patterns)
        if kind in ("truncate", "mask"):
            return ColumnRule(kind, patterns, length=int(found.group(1)))
        algorithm, salt = found.group(1), found.group(2)
        digest_name(algorithm)
        return ColumnRule(kind, patterns, algorithm=algorithm, salt=salt)
    return None


def propagation_rules(columns: Sequence[str], datatypes: Sequence[str]) -> tuple[ColumnRule, ...]:
    """The rules of ``column.propagate.source.type`` and ``datatype.propagate.source.type``."""
    _compile_all("column.propagate.source.type", columns)
    _compile_all("datatype.propagate.source.type", datatypes)
    rules = [ColumnRule("propagate", tuple(columns))] if columns else []
    if datatypes:
        rules.append(ColumnRule("propagate_datatype", tuple(datatypes)))
    return tuple(rules)


def _compile_all(name: str, patterns: Iterable[str]) -> None:
    for pattern in patterns:
        try:
            re.compile(pattern)
        except re.error as error:
            raise ValueError(f"{name}: {pattern!r} is not a regular expression: {error}") from None


def digest_name(algorithm: str) -> str:
    """The hashlib name of a Java ``MessageDigest`` algorithm; ValueError if unsupported."""
    name = _DIGESTS.get(algorithm.lower())
    if name is None:
        known = "SHA-256, SHA-512, SHA-1, MD5, SHA3-256, …"
        raise ValueError(f"unsupported hash algorithm {algorithm!r}; use one of {known}")
    return name


class ColumnMappers:
    """The configured rules, ordered as Debezium tries them."""

    def __init__(self, rules: Iterable[ColumnRule]) -> None:
        listed = list(rules)
        self.rules = tuple(r for kind in RULE_ORDER for r in listed if r.kind == kind)

    def __bool__(self) -> bool:
        return bool(self.rules)

    def rule_for(self, table: TableId, column: SourceColumn) -> ColumnRule | None:
        """The first rule matching ``column``, or None."""
        return next((rule for rule in self.rules if rule.matches(table, column)), None)


def apply_rule(column: Column, source: SourceColumn, rule: ColumnRule) -> tuple[Column, ValueMap]:
    """``column`` with the rule's schema parameters and its values mapped.

    Returns the new column and the value map alone (for values that do not come from the
    column's converter, such as the unavailable-value placeholder).
    """
    parameters, value_map = _mapper(rule, source, column.schema)
    schema = _with_parameters(column.schema, parameters)
    convert = column.convert
    if value_map is _identity:
        return replace(column, schema=schema), value_map
    return replace(column, schema=schema, convert=lambda text: value_map(convert(text))), value_map


def apply_rule_to_value_field(column: Column, source: SourceColumn, rule: ColumnRule) -> Column:
    """A key column with a mapper: Debezium builds keys without mappers, so the key keeps the
    column as it is and only its field in the event value gets the rule's schema parameters
    and mapped values (``value_schema``, ``value_map``)."""
    parameters, value_map = _mapper(rule, source, column.schema)
    return replace(
        column,
        value_schema=_with_parameters(column.schema, parameters),
        value_map=None if value_map is _identity else value_map,
    )


def _identity(value: Any) -> Any:
    return value


def _mapper(
    rule: ColumnRule, source: SourceColumn, schema: ConnectSchema
) -> tuple[dict[str, str], ValueMap]:
    """The schema parameters and the value map of ``rule`` for one column."""
    if rule.kind == "truncate":
        if not (source.length < 0 or source.length > rule.length):
            return {}, _identity
        return {"truncateLength": str(rule.length)}, _truncator(rule.length, schema)
    if rule.kind == "mask":
        mask = "*" * rule.length
        return {"masked": "true"}, (lambda _value: mask) if source.character else _identity
    if rule.kind in ("hash", "hash_v2"):
        if not source.character:
            return {"masked": "true"}, _identity
        return {"masked": "true"}, _hasher(rule, source.length)
    return propagated_parameters(source), _identity


def propagated_parameters(source: SourceColumn) -> dict[str, str]:
    """The ``__debezium.source.column.*`` parameters, in Debezium's order."""
    parameters = {TYPE_PARAMETER: source.type_name.upper()}
    if source.length != -1:
        parameters[LENGTH_PARAMETER] = str(source.length)
    if source.scale is not None:
        parameters[SCALE_PARAMETER] = str(source.scale)
    if source.comment:
        parameters[COMMENT_PARAMETER] = source.comment
    parameters[NAME_PARAMETER] = source.name
    return parameters


def with_doc(schema: ConnectSchema, doc: str) -> ConnectSchema:
    """The schema with ``doc`` where JsonConverter writes it: before ``parameters`` and
    ``default`` (``include.schema.comments``: a column's comment documents its field)."""
    trailing = ("parameters", "default")
    out = {key: value for key, value in schema.items() if key not in trailing}
    out["doc"] = doc
    out.update({key: value for key, value in schema.items() if key in trailing})
    return out


def _with_parameters(schema: ConnectSchema, parameters: dict[str, str]) -> ConnectSchema:
    """The schema with ``parameters`` appended (``parameters`` stays JsonConverter's last key)."""
    if not parameters:
        return schema
    out = {key: value for key, value in schema.items() if key != "parameters"}
    out["parameters"] = {**schema.get("parameters", {}), **parameters}
    return out


# -- truncation ----------------------------------------------------------------------------


def _truncator(length: int, schema: ConnectSchema) -> ValueMap:
    """Truncate strings to ``length`` UTF-16 units and plain binary values to ``length`` bytes.

    Other values (numbers, structs, arrays, decimals as bytes) pass through, as in Debezium,
    whose truncation only touches ``String`` and ``ByteBuffer`` values.
    """
    if schema.get("type") == "string":
        return lambda value: truncate_string(value, length)
    if schema.get("type") == "bytes" and "name" not in schema:
        return lambda value: _truncate_base64(value, length)
    return _identity


def truncate_string(value: Any, length: int) -> Any:
    """Java's ``substring(0, length)``: counted in UTF-16 code units."""
    if not isinstance(value, str) or len(value) <= length // 2:
        return value
    units = value.encode("utf-16-le", "surrogatepass")
    if len(units) <= 2 * length:
        return value
    cut = units[: 2 * length]
    if 0xD8 <= cut[-1] <= 0xDB:  # half a surrogate pair: JSON cannot carry it
        cut = cut[:-2]
    return cut.decode("utf-16-le")


def _truncate_base64(value: Any, length: int) -> Any:
    if not isinstance(value, str):
        return value
    try:
        data = base64.b64decode(value, validate=True)
    except binascii.Error:
        return truncate_string(value, length)  # the unavailable-value placeholder
    return value if len(data) <= length else base64.b64encode(data[:length]).decode("ascii")


# -- hashing -------------------------------------------------------------------------------


def _hasher(rule: ColumnRule, length: int) -> ValueMap:
    algorithm = digest_name(rule.algorithm)
    salt = rule.salt.encode("utf-8")
    serialize = java_serialized if rule.kind == "hash" else _utf8

    def mapped(value: Any) -> Any:
        if value is None:
            return None
        digest = hashlib.new(algorithm, salt + serialize(str(value))).hexdigest()
        return digest[:length] if length > 0 else digest

    return mapped


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def java_serialized(text: str) -> bytes:
    """``ObjectOutputStream.writeObject(String)``: header, tag, length, modified UTF-8."""
    data = modified_utf8(text)
    if len(data) <= 0xFFFF:
        return _JAVA_STREAM_HEADER + struct.pack(">BH", _TC_STRING, len(data)) + data
    return _JAVA_STREAM_HEADER + struct.pack(">BQ", _TC_LONGSTRING, len(data)) + data


def modified_utf8(text: str) -> bytes:
    """Java's modified UTF-8: UTF-16 units encoded one by one, NUL as ``C0 80``."""
    units = text.encode("utf-16-le", "surrogatepass")
    out = bytearray()
    for (unit,) in struct.iter_unpack("<H", units):
        if 0 < unit < 0x80:
            out.append(unit)
        elif unit < 0x800:
            out += bytes((0xC0 | unit >> 6, 0x80 | unit & 0x3F))
        else:
            out += bytes((0xE0 | unit >> 12, 0x80 | unit >> 6 & 0x3F, 0x80 | unit & 0x3F))
    return bytes(out)
