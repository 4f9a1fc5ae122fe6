"""Column defaults in event schemas, read from ``DEFAULT`` expressions as Debezium reads them.

Debezium puts a column's default into its Connect schema (``"default"``): the expression that
``pg_get_expr`` prints is reduced to a literal — the text inside its quotes, or the bare value
(``12``, ``true``), or, for a function call or ``CURRENT_TIMESTAMP``, a per-type placeholder
such as ``0`` or ``1970-01-01`` — and converted like a value of the column. Types Debezium has
no rule for (bytea, arrays, domains, geometric types, …) and values that come out as structs
get no default. :func:`literal` gives that text; the caller converts it with the column's own
converter, which parses the same text form a value has.

Kafka Connect's ``JsonConverter`` then writes a field's default where the value is null
(``replace.null.with.default``, on by default), and Debezium's events are what it writes:
:func:`with_default` does the same to a converter.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Final

from cdcflow.capture.encoders import with_null_fill
from cdcflow.capture.spi import Column

_LITERAL: Final = re.compile(r"'(.*?)'")
_FUNCTION: Final = re.compile(r"^[(]?[A-Za-z0-9_.]+\((?:.+(?:, ?.+)*)?\)")
_CURRENT: Final = frozenset(
    {"current_timestamp", "current_time", "current_date", "localtime", "localtimestamp"}
)
#: Per type: the placeholder for generated defaults, and whether ``NULL::…`` means no default.
_RULES: Final[dict[str, tuple[str, bool]]] = {
    "bit": ("00", False),
    "varbit": ("0", False),
    "bool": ("false", True),
    "bpchar": ("", False),
    "varchar": ("", False),
    "text": ("", False),
    "numeric": ("0.0", True),
    "float4": ("0.0", True),
    "float8": ("0.0", True),
    "int2": ("0", True),
    "int4": ("0", True),
    "int8": ("0", True),
    "json": ("{}", False),
    "jsonb": ("{}", False),
    "xml": ("", False),
    "uuid": ("00000000-0000-0000-0000-000000000000", False),
    "date": ("1970-01-01", False),
    "time": ("00:00", False),
    "timestamp": ("1970-01-01", False),
    "timestamptz": ("1970-01-01", False),
}
#: Debezium trims these types' expressions before reading them.
_TRIMMED: Final = frozenset(
    {"bit", "varbit", "bool", "numeric", "float4", "float8", "int2", "int4", "int8", "uuid"}
    | {"date", "time", "timestamp", "timestamptz"}
)
#: Completes a date-only placeholder into the text form the converters parse.
_FULL_FORM: Final[dict[str, str]] = {
    "time": "{}:00",
    "timestamp": "{} 00:00:00",
    "timestamptz": "{} 00:00:00+00",
}


def literal(type_name: str, expression: str | None, *, enum: bool = False) -> str | None:
    """The text form of the default of a column of ``type_name``, or None for no default."""
    if expression is None:
        return None
    if enum:
        return _enum_literal(type_name, expression)
    rule = _RULES.get(type_name)
    if rule is None:
        return None
    placeholder, null_means_none = rule
    text = expression.strip() if type_name in _TRIMMED else expression
    generated = bool(_FUNCTION.match(text)) or text.lower() in _CURRENT
    if generated:
        return _complete(type_name, placeholder)
    if null_means_none and text.startswith("NULL::"):
        return None
    if "'" not in text:
        return None if text.startswith("NULL::") else text
    found = _LITERAL.search(text)
    return found.group(1) if found else None


def _complete(type_name: str, placeholder: str) -> str:
    form = _FULL_FORM.get(type_name)
    return placeholder if form is None else form.format(placeholder)


def _enum_literal(type_name: str, expression: str) -> str | None:
    """``'happy'::mood`` -> ``happy``, only when the cast names the column's own enum type."""
    value, cast, suffix = expression.rpartition("::")
    if not cast or suffix.strip('"').rpartition(".")[2] != type_name.rpartition(".")[2]:
        return None
    if len(value) >= 2 and value.startswith("'") and value.endswith("'"):
        return value[1:-1]
    return None


def with_default(column: Column, text: str | None, *, replace_nulls: bool = True) -> Column:
    """``column`` with the default that ``text`` converts to in its schema, and written where
    values are null — unless ``replace_nulls`` is off (``replace.null.with.default=false``)
    and the column is nullable.

    No default when the text does not convert or converts to a struct (Kafka Connect cannot
    carry a struct default, KAFKA-12694), as in Debezium.
    """
    if text is None:
        return column
    try:
        default = column.convert(text)
    except (ValueError, TypeError, ArithmeticError):
        return column
    if default is None or isinstance(default, dict):
        return column
    # A NOT NULL column's null (a key-only before image) takes the default even without
    # replace.null.with.default: Debezium fills it in before any converter sees the record.
    convert = with_null_fill(
        column.convert,
        optional=column.optional,
        default=default,
        fallback=None,
        replace=replace_nulls,
    )
    return replace(column, schema={**column.schema, "default": default}, convert=convert)
