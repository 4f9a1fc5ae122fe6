"""PostgreSQL column types mapped to Kafka Connect schemas and converters, the way Debezium does.

Every value arrives as PostgreSQL's *text* rendering of it: the type's output function, which is
what pgoutput sends in text mode and what a text-format query result carries, produced on a
session that applied :data:`SESSION_SETTINGS`. (``SELECT col::text`` is the same text except for
three types: bool casts to ``true``/``false``, which the converter also accepts; ``char(n)``
loses its padding and a host ``inet`` gains ``/32``, which no converter can undo.)

A :class:`~cdcflow.capture.spi.Column` built here carries the column's Connect schema
(Debezium's semantic names, versions and parameters, in the key order Kafka Connect's
``JsonConverter`` writes them) and a converter from that text to the JSON-ready payload value:
bytes become base64 strings, decimals the base64 of their unscaled big-endian two's-complement
integer, dates days since the epoch, and so on. This module holds PostgreSQL's part (the type
catalog, parsing the text forms, choosing a mapping per type); the encodings and schema
builders every connector shares are in :mod:`cdcflow.capture.encoders`.

The target is Debezium 3.x, checked against the real connector by
``tests/integration/test_debezium_parity.py``. Choices where Debezium's behaviour is a quirk, a
bug or version-dependent are documented where they are made (and in docs/postgresql.md); the
main ones:

* ``ZonedTimestamp`` is UTC with ``Z`` and the fraction padded to the column precision
  (``2018-06-20T15:13:16.900Z`` for ``timestamptz(3)``), as Debezium 3.x writes it.
* ``float4``/``float8`` NaN and infinities (and NaN in ``decimal.handling.mode=double``) become the
  strings ``"NaN"``, ``"Infinity"`` and ``"-Infinity"``: that is what ``JsonConverter`` (Jackson
  with ``QUOTE_NON_NUMERIC_NUMBERS``) writes, and a plain float NaN would not survive JSON.
* ``money`` is supported (Debezium 1.8+ behaviour, ``money.fraction.digits`` = 2): a Connect
  Decimal of scale 2 in ``precise`` mode, a float in ``double`` mode and a plain decimal string
  (``"1234.56"``) in ``string`` mode. ``lc_monetary=C`` in the session fixes its text form.
* hstore keys come out in the iteration order of the Java ``HashMap`` pgjdbc parses them into, so
  both the JSON string and the map are byte-for-byte what Debezium writes (short of a HashMap
  tree bin, which takes 11+ keys sharing one Java hash code).
* One-dimensional arrays follow Debezium's list of element types; arrays of ``money``,
  ``name``, ``interval``, ``bit``, ``varbit``, ``xml`` and ``point`` are left out (Debezium has no
  schema for them either), and arrays of other element types (domains included) are opaque
  bytes only with ``include_unknown_datatypes``.
* Kafka Connect's own ``Time`` logical type is INT32 milliseconds (the seed's table says INT64,
  which is wrong for Connect).
* PostGIS ``geometry`` maps to Debezium 3.x's ``Geometry`` (version 2: ``{wkb, srid,
  extensions}``), ``geography`` to ``{wkb, srid}``; the built-in geometric types (box, lseg,
  path, polygon, circle, line) as in :mod:`.geometric`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from functools import partial
from typing import Any, Final, Literal

from cdcflow.capture import encoders
from cdcflow.capture.connectors.postgres import geometric
from cdcflow.capture.encoders import (
    MICROS_PER_DAY,
    MICROS_PER_SECOND,
    ConnectSpec,
    DurationFields,
    connect_field,
    epoch_days,
    millis,
    named_schema,
    rescale,
    unscaled_bytes,
)
from cdcflow.capture.java_order import hashmap_order
from cdcflow.capture.spi import Column, Converter

# --------------------------------------------------------------------------------------------
# Session settings
# --------------------------------------------------------------------------------------------

#: GUCs applied to every connection (replication and snapshot) so the text form of every value
#: is the one the converters parse. Values contain no spaces, so they fit ``-c name=value``.
#:
#: * ``DateStyle=ISO``: ``2018-06-20 15:13:16.945104`` and ``0044-03-15 BC``.
#: * ``IntervalStyle=iso_8601``: ``P1Y2M3DT4H5M6.78S`` with per-field signs, easy to parse.
#: * ``TimeZone=UTC``: timestamptz/timetz print ``+00``; tstzrange strings are in UTC.
#: * ``extra_float_digits=3``: floats print their exact shortest round-trip form.
#: * ``bytea_output=hex``: ``\x0102``.
#: * ``lc_monetary=C``: money prints ``$1,234.56`` / ``-$1,234.56`` with two fraction digits.
SESSION_SETTINGS: Final[Mapping[str, str]] = {
    "DateStyle": "ISO",
    "IntervalStyle": "iso_8601",
    "TimeZone": "UTC",
    "extra_float_digits": "3",
    "bytea_output": "hex",
    "lc_monetary": "C",
}

# --------------------------------------------------------------------------------------------
# The type catalog
# --------------------------------------------------------------------------------------------

#: One row per type: oid, name, namespace, typtype, typbasetype, typelem, typtypmod,
#: enum labels (in sort order, NULL unless an enum) and typcategory.
CATALOG_QUERY: Final[str] = """
SELECT t.oid::int8,
       t.typname::text,
       n.nspname::text,
       t.typtype::text,
       t.typbasetype::int8,
       t.typelem::int8,
       t.typtypmod::int4,
       (SELECT array_agg(e.enumlabel::text ORDER BY e.enumsortorder)
          FROM pg_catalog.pg_enum e
         WHERE e.enumtypid = t.oid) AS enum_labels,
       t.typcategory::text
  FROM pg_catalog.pg_type t
  JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace
 ORDER BY t.oid
""".strip()


@dataclass(frozen=True, slots=True)
class PgType:
    """One ``pg_type`` row, reduced to what the mapping needs."""

    oid: int
    name: str
    namespace: str
    typtype: str
    base_oid: int = 0
    elem_oid: int = 0
    typmod: int = -1
    enum_labels: tuple[str, ...] = ()
    category: str = "U"

    @property
    def is_domain(self) -> bool:
        return self.typtype == "d"

    @property
    def is_enum(self) -> bool:
        return self.typtype == "e"

    @property
    def is_array(self) -> bool:
        """A true array (``_int4``); int2vector and oidvector share the category, not the form."""
        return self.category == "A" and self.elem_oid != 0 and self.name.startswith("_")


class TypeRegistry:
    """Every type of the database by oid, with domain and array resolution."""

    def __init__(self, types: Iterable[PgType]) -> None:
        self._by_oid: dict[int, PgType] = {t.oid: t for t in types}

    @classmethod
    def from_rows(cls, rows: Iterable[Sequence[Any]]) -> TypeRegistry:
        """Build from :data:`CATALOG_QUERY` rows (plain tuples, no driver types needed)."""
        return cls(_type_from_row(row) for row in rows)

    def __len__(self) -> int:
        return len(self._by_oid)

    def oids(self) -> list[int]:
        """Every known type oid."""
        return list(self._by_oid)

    def get(self, oid: int) -> PgType | None:
        return self._by_oid.get(oid)

    def resolve(self, oid: int, typmod: int = -1) -> tuple[PgType, int] | None:
        """The non-domain type under ``oid`` and the typmod that applies to it.

        A domain lends the column its length/scale (``CREATE DOMAIN money2 AS
        numeric(10,2)``), also through a domain over it: the nearest declared typmod on the
        way down applies, as Debezium 3.x resolves it.
        """
        found = self._by_oid.get(oid)
        while found is not None and found.is_domain:
            if typmod == -1:
                typmod = found.typmod
            found = self._by_oid.get(found.base_oid)
        return None if found is None else (found, typmod)

    def element(self, array: PgType) -> PgType | None:
        """The element type of an array type."""
        return self._by_oid.get(array.elem_oid) if array.is_array else None


def _type_from_row(row: Sequence[Any]) -> PgType:
    oid, name, namespace, typtype, base, elem, typmod, labels, category = row
    return PgType(
        oid=int(oid),
        name=str(name),
        namespace=str(namespace),
        typtype=str(typtype),
        base_oid=int(base or 0),
        elem_oid=int(elem or 0),
        typmod=-1 if typmod is None else int(typmod),
        enum_labels=tuple(str(label) for label in labels or ()),
        category=str(category),
    )


# --------------------------------------------------------------------------------------------
# Options
# --------------------------------------------------------------------------------------------

DecimalMode = Literal["precise", "double", "string"]
TimePrecisionMode = Literal["adaptive", "adaptive_time_microseconds", "connect"]
HstoreMode = Literal["json", "map"]
IntervalMode = Literal["numeric", "string"]
BinaryMode = Literal["bytes", "base64", "hex"]

_CHOICES: Final[dict[str, tuple[str, ...]]] = {
    "decimal_handling_mode": ("precise", "double", "string"),
    "time_precision_mode": ("adaptive", "adaptive_time_microseconds", "connect"),
    "hstore_handling_mode": ("json", "map"),
    "interval_handling_mode": ("numeric", "string"),
    "binary_handling_mode": ("bytes", "base64", "hex"),
}


@dataclass(frozen=True, slots=True)
class TypeOptions:
    """The connector properties that change type mapping; defaults are Debezium's."""

    decimal_handling_mode: DecimalMode = "precise"
    time_precision_mode: TimePrecisionMode = "adaptive"
    hstore_handling_mode: HstoreMode = "json"
    interval_handling_mode: IntervalMode = "numeric"
    binary_handling_mode: BinaryMode = "bytes"
    include_unknown_datatypes: bool = False
    money_fraction_digits: int = 2
    #: JsonConverter's ``replace.null.with.default``: a null is written as the column default.
    replace_null_with_default: bool = True

    def __post_init__(self) -> None:
        for option, allowed in _CHOICES.items():
            value = getattr(self, option)
            if value not in allowed:
                raise ValueError(f"{option} must be one of {', '.join(allowed)}; got {value!r}")


# --------------------------------------------------------------------------------------------
# Simple converters. Each takes the text form (None for NULL) and is chosen once per column.
# --------------------------------------------------------------------------------------------


def _passthrough(text: str | None) -> str | None:
    return text


def _to_int(text: str | None) -> int | None:
    if text is None:
        return None
    if len(text) <= _SHORT_NUMERIC:  # digit by digit, in place
        return -_digits(text, 1, len(text)) if text.startswith("-") else _digits(text, 0, len(text))
    return int(text)


def _to_bool(text: str | None) -> bool | None:
    """``t``/``f`` from the output function; ``true``/``false`` (a ``::text`` cast) also work."""
    return None if text is None else text[0] == "t"


_FLOAT_SPECIALS: Final[dict[str, str]] = {
    "NaN": "NaN",
    "Infinity": "Infinity",
    "-Infinity": "-Infinity",
}


def _to_float(text: str | None) -> float | str | None:
    """A float, or JsonConverter's quoted ``"NaN"``/``"Infinity"``/``"-Infinity"``."""
    if text is None:
        return None
    special = _FLOAT_SPECIALS.get(text)
    return special if special is not None else float(text)


def _bytea(encode: encoders.BinaryEncoder, text: str | None) -> str | None:
    return None if text is None else encode(bytes.fromhex(text[2:]))


def _bytea_hex(text: str | None) -> str | None:
    """PostgreSQL's hex output is already lowercase hex, as Debezium's HexConverter writes."""
    return None if text is None else text[2:]


def _opaque(encode: encoders.BinaryEncoder, text: str | None) -> str | None:
    """Unknown types: the UTF-8 bytes of the text form (Debezium's ``String.getBytes()``)."""
    return None if text is None else encode(text.encode("utf-8"))


# --------------------------------------------------------------------------------------------
# Bits
# --------------------------------------------------------------------------------------------

#: Length Debezium reports for ``bit varying`` without a declared length.
_VARBIT_UNBOUNDED_LENGTH: Final = 2_147_483_647


def _bit_to_bool(text: str | None) -> bool | None:
    return None if text is None else "1" in text


def _bits(text: str | None) -> str | None:
    """``io.debezium.data.Bits`` of a ``bit``/``bit varying`` value."""
    return None if text is None else encoders.bit_string(text)


# --------------------------------------------------------------------------------------------
# Decimals
# --------------------------------------------------------------------------------------------

_NUMERIC_SPECIALS: Final = frozenset({"NaN", "Infinity", "-Infinity"})
_STRING_SPECIALS: Final[dict[str, str]] = {
    "NaN": "NAN",
    "Infinity": "POSITIVE_INFINITY",
    "-Infinity": "NEGATIVE_INFINITY",
}


#: Numerics up to this many characters are parsed digit by digit (their unscaled value fits
#: a machine word, which a compiled loop multiplies without allocating).
_SHORT_NUMERIC: Final = 18
_POWERS_OF_TEN: Final = tuple(10**n for n in range(_SHORT_NUMERIC))


def _parse_numeric(text: str) -> tuple[int, int]:
    """``"-12.340"`` -> ``(-12340, 3)``: the unscaled integer and the scale, exactly."""
    if text in _NUMERIC_SPECIALS:
        raise ValueError(
            f"numeric {text} has no Connect Decimal form; Debezium fails the same way. "
            "Set decimal.handling.mode to 'string' or 'double' to capture it."
        )
    point = text.find(".")
    if len(text) <= _SHORT_NUMERIC:  # digit by digit, in place
        negative = text.startswith("-")
        start = 1 if negative else 0
        if point < 0:
            unscaled, scale = _digits(text, start, len(text)), 0
        else:
            fraction = _digits(text, point + 1, len(text))
            scale = len(text) - point - 1
            unscaled = _digits(text, start, point) * _POWERS_OF_TEN[scale] + fraction
        return (-unscaled if negative else unscaled), scale
    if point < 0:
        return int(text), 0
    return int(text[:point] + text[point + 1 :]), len(text) - point - 1


def _decimal_fixed(scale: int, text: str | None) -> str | None:
    if text is None:
        return None
    unscaled, found = _parse_numeric(text)
    if found != scale:
        unscaled = rescale(unscaled, found, scale)
    return unscaled_bytes(unscaled)


def _decimal_variable(text: str | None) -> dict[str, Any] | None:
    return None if text is None else encoders.variable_scale_decimal(*_parse_numeric(text))


def _decimal_string(scale: int | None, text: str | None) -> str | None:
    """``BigDecimal.toString()``: Python's Decimal follows the same scientific-string rules."""
    if text is None:
        return None
    special = _STRING_SPECIALS.get(text)
    if special is not None:
        return special
    if scale is None:
        return str(Decimal(text))
    unscaled, found = _parse_numeric(text)
    return encoders.decimal_string(unscaled, found, target_scale=scale)


#: Debezium's default money.fraction.digits, and what ``lc_monetary=C`` prints.
_MONEY_SCALE: Final = 2
_NOT_MONEY_DIGITS: Final = re.compile(r"[^0-9.]")


def _money_unscaled(text: str) -> int:
    """``-$1,234.56`` (``lc_monetary=C``) -> ``-123456`` at scale 2."""
    negative = text.startswith(("-", "("))
    unscaled, scale = _parse_numeric(_NOT_MONEY_DIGITS.sub("", text))
    unscaled = rescale(unscaled, scale, _MONEY_SCALE)
    return -unscaled if negative else unscaled


def _money_precise(scale: int, text: str | None) -> str | None:
    """A Decimal of ``money.fraction.digits``, rounded half up as ``BigDecimal.setScale``."""
    if text is None:
        return None
    unscaled = _money_unscaled(text)
    if scale >= _MONEY_SCALE:
        return unscaled_bytes(unscaled * 10 ** (scale - _MONEY_SCALE))
    quotient, remainder = divmod(abs(unscaled), 10 ** (_MONEY_SCALE - scale))
    rounded = quotient + (2 * remainder >= 10 ** (_MONEY_SCALE - scale))
    return unscaled_bytes(-rounded if unscaled < 0 else rounded)


def _money_double(text: str | None) -> float | None:
    return None if text is None else _money_unscaled(text) / 100


def _money_string(text: str | None) -> str | None:
    return None if text is None else str(Decimal(f"{_money_unscaled(text)}E-{_MONEY_SCALE}"))


def _numeric_typmod(typmod: int) -> tuple[int, int] | None:
    """``numeric(p, s)`` from the typmod; s may be negative since PostgreSQL 15."""
    if typmod < 4:
        return None
    packed = typmod - 4
    return (packed >> 16) & 0xFFFF, ((packed & 0x7FF) ^ 1024) - 1024


def _numeric_spec(typmod: int, options: TypeOptions) -> ConnectSpec:
    declared = _numeric_typmod(typmod)
    mode = options.decimal_handling_mode
    if mode == "double":
        return ConnectSpec("double", _to_float)
    if mode == "string":
        return ConnectSpec("string", partial(_decimal_string, declared[1] if declared else None))
    if declared is None:  # numeric without (p, s): Debezium's VariableScaleDecimal
        return encoders.variable_scale_decimal_schema(_decimal_variable)
    precision, scale = declared
    return encoders.decimal_schema(partial(_decimal_fixed, scale), scale, precision=precision)


def _money_spec(options: TypeOptions) -> ConnectSpec:
    mode = options.decimal_handling_mode
    if mode == "double":
        return ConnectSpec("double", _money_double)
    if mode == "string":
        return ConnectSpec("string", _money_string)
    digits = options.money_fraction_digits
    return encoders.decimal_schema(partial(_money_precise, digits), digits, precision=None)


# --------------------------------------------------------------------------------------------
# Dates and times
# --------------------------------------------------------------------------------------------

#: TIMESTAMP 'infinity' / '-infinity' as Debezium 3.x writes them: pgjdbc's
#: DATE_POSITIVE/NEGATIVE_INFINITY constants, unscaled, whatever the unit; a microsecond
#: timestamp's '-infinity' is Long.MIN_VALUE (checked against the real connector).
_POSITIVE_INFINITY: Final = 9_223_372_036_825_200_000
_NEGATIVE_INFINITY_MILLIS: Final = -9_223_372_036_832_400_000
_NEGATIVE_INFINITY_MICROS: Final = -(2**63)


#: DATE 'infinity' / '-infinity': Debezium's LocalDate constants (pgjdbc's odd values).
_POSITIVE_INFINITY_DAYS: Final = epoch_days(-5877611, 6, 21)
_NEGATIVE_INFINITY_DAYS: Final = epoch_days(-5877611, 6, 22)

_DATE = r"(\d{4,})-(\d\d)-(\d\d)"
_TIME = r"(\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?"
_OFFSET = r"([+-])(\d\d)(?::(\d\d))?(?::(\d\d))?"
_DATE_RE: Final = re.compile(_DATE + r"( BC)?")
_TIME_RE: Final = re.compile(_TIME)
_TIMETZ_RE: Final = re.compile(_TIME + _OFFSET)
_TIMESTAMP_RE: Final = re.compile(_DATE + " " + _TIME + r"( BC)?")
_TIMESTAMPTZ_RE: Final = re.compile(_DATE + " " + _TIME + _OFFSET + r"( BC)?")


def _match(pattern: re.Pattern[str], text: str, what: str) -> re.Match[str]:
    found = pattern.fullmatch(text)
    if found is None:
        raise ValueError(f"unexpected {what} text {text!r}; is the session using SESSION_SETTINGS?")
    return found


def _year(digits: str, bc: str | None) -> int:
    """BC years count back from 1 BC = year 0, as Java's proleptic ISO years do."""
    return 1 - int(digits) if bc else int(digits)


def _micros_of_day(hours: str, minutes: str, seconds: str, fraction: str | None) -> int:
    micros = ((int(hours) * 60 + int(minutes)) * 60 + int(seconds)) * MICROS_PER_SECOND
    return micros + int(fraction.ljust(6, "0")) if fraction else micros


def _digits(text: str, start: int, end: int) -> int:
    """The unsigned decimal number ``text[start:end]``, read in place: compiled, a C loop
    without the slice and the ``int()`` parse per field (ValueError on a non-digit)."""
    if start >= end:
        raise ValueError(f"a number is missing in {text!r}")
    value = 0
    for index in range(start, end):
        digit = ord(text[index]) - 48
        if digit < 0 or digit > 9:
            raise ValueError(f"unexpected character in {text!r} at {index}")
        value = value * 10 + digit
    return value


#: Microseconds per unit of the last digit of a fraction with 0-6 digits.
_FRACTION_UNIT: Final = (0, 100_000, 10_000, 1_000, 100, 10, 1)


def _fixed_layout_micros(text: str) -> int:
    """Microseconds since the epoch of ``YYYY-MM-DD HH:MM:SS[.ffffff]``, PostgreSQL's usual
    timestamp text (checked by the caller), digit by digit."""
    days = epoch_days(_digits(text, 0, 4), _digits(text, 5, 7), _digits(text, 8, 10))
    seconds = (_digits(text, 11, 13) * 60 + _digits(text, 14, 16)) * 60 + _digits(text, 17, 19)
    micros = days * MICROS_PER_DAY + seconds * MICROS_PER_SECOND
    fraction_digits = len(text) - 20
    if fraction_digits <= 0:
        return micros
    if fraction_digits > 6 or text[19] != ".":
        raise ValueError(f"unexpected timestamp text {text!r}")
    return micros + _digits(text, 20, len(text)) * _FRACTION_UNIT[fraction_digits]


def _offset_seconds(sign: str, hours: str, minutes: str | None, seconds: str | None) -> int:
    total = int(hours) * 3600 + int(minutes or 0) * 60 + int(seconds or 0)
    return -total if sign == "-" else total


def _epoch_days(text: str | None) -> int | None:
    if text is None:
        return None
    if text == "infinity":
        return _POSITIVE_INFINITY_DAYS
    if text == "-infinity":
        return _NEGATIVE_INFINITY_DAYS
    if len(text) == 10:  # the common fixed layout, YYYY-MM-DD
        return epoch_days(int(text[:4]), int(text[5:7]), int(text[8:10]))
    y, m, d, bc = _match(_DATE_RE, text, "date").groups()
    return epoch_days(_year(y, bc), int(m), int(d))


def _time_micros(text: str | None) -> int | None:
    """Microseconds past midnight; ``24:00:00`` is a legal PostgreSQL time (86400000000)."""
    if text is None:
        return None
    return _micros_of_day(*_match(_TIME_RE, text, "time").groups())


def _time_millis(text: str | None) -> int | None:
    micros = _time_micros(text)
    return None if micros is None else millis(micros)


def _timestamp_micros(text: str | None) -> int | None:
    """Microseconds since the epoch; TIMESTAMP without zone is read as UTC, as Debezium does."""
    if text is None:
        return None
    if text == "infinity":
        return _POSITIVE_INFINITY
    if text == "-infinity":
        return _NEGATIVE_INFINITY_MICROS
    if len(text) >= 19 and text[4] == "-" and text[-1] != "C":  # the common fixed layout
        return _fixed_layout_micros(text)
    y, mo, d, h, mi, s, frac, bc = _match(_TIMESTAMP_RE, text, "timestamp").groups()
    days = epoch_days(_year(y, bc), int(mo), int(d))
    return days * MICROS_PER_DAY + _micros_of_day(h, mi, s, frac)


def _timestamp_millis(text: str | None) -> int | None:
    """Milliseconds since the epoch, floored like ``Instant.toEpochMilli``."""
    if text == "infinity":
        return _POSITIVE_INFINITY
    if text == "-infinity":
        return _NEGATIVE_INFINITY_MILLIS
    micros = _timestamp_micros(text)
    return None if micros is None else millis(micros)


def _zoned_timestamp(precision: int, text: str | None) -> str | None:
    """ISO-8601 in UTC with the fraction padded to the column's precision, as Debezium 3.x
    writes it (``2018-06-20T15:13:16.900Z`` for ``timestamptz(3)``); infinities stay words."""
    if text is None or text == "infinity" or text == "-infinity":
        return text
    found = _match(_TIMESTAMPTZ_RE, text, "timestamptz")
    y, mo, d, h, mi, s, frac, sign, oh, om, os_, bc = found.groups()
    if len(y) == 4 and not bc and oh == "00" and not om and not os_:
        return f"{y}-{mo}-{d}T{h}:{mi}:{s}{encoders.padded_fraction(frac or '', precision)}Z"
    days = epoch_days(_year(y, bc), int(mo), int(d))
    micros = days * MICROS_PER_DAY + _micros_of_day(h, mi, s, frac)
    micros -= _offset_seconds(sign, oh, om, os_) * MICROS_PER_SECOND
    return encoders.zoned_timestamp(micros, precision=precision)


def _zoned_time(text: str | None) -> str | None:
    """The time shifted to UTC, e.g. ``10:00:00+05:30`` -> ``04:30:00Z``."""
    if text is None:
        return None
    h, mi, s, frac, sign, oh, om, os_ = _match(_TIMETZ_RE, text, "timetz").groups()
    return encoders.zoned_time(_micros_of_day(h, mi, s, frac), _offset_seconds(sign, oh, om, os_))


def _time_precision(typmod: int) -> int:
    """TIME(p)/TIMESTAMP(p): the typmod is p; no typmod means 6."""
    return 6 if typmod < 0 else typmod


def _date_spec(options: TypeOptions) -> ConnectSpec:
    if options.time_precision_mode == "connect":
        return named_schema("int32", "org.apache.kafka.connect.data.Date", _epoch_days)
    return named_schema("int32", "io.debezium.time.Date", _epoch_days)


def _time_spec(typmod: int, options: TypeOptions) -> ConnectSpec:
    mode = options.time_precision_mode
    if mode == "connect":
        return named_schema("int32", "org.apache.kafka.connect.data.Time", _time_millis)
    if mode == "adaptive" and _time_precision(typmod) <= 3:
        return named_schema("int32", "io.debezium.time.Time", _time_millis)
    return named_schema("int64", "io.debezium.time.MicroTime", _time_micros)


def _timestamp_spec(typmod: int, options: TypeOptions) -> ConnectSpec:
    if options.time_precision_mode == "connect":
        return named_schema("int64", "org.apache.kafka.connect.data.Timestamp", _timestamp_millis)
    if _time_precision(typmod) <= 3:
        return named_schema("int64", "io.debezium.time.Timestamp", _timestamp_millis)
    return named_schema("int64", "io.debezium.time.MicroTimestamp", _timestamp_micros)


# --------------------------------------------------------------------------------------------
# Intervals
# --------------------------------------------------------------------------------------------

_INTERVAL_RE: Final = re.compile(
    r"P(?:(-?\d+)Y)?(?:(-?\d+)M)?(?:(-?\d+)D)?"
    r"(?:T(?:(-?\d+)H)?(?:(-?\d+)M)?(?:(-?)(\d+)(?:\.(\d{1,6}))?S)?)?"
)


def _interval_fields(text: str) -> DurationFields:
    """Years, months, days, hours, minutes and pgjdbc's ``PGInterval.getSeconds()`` double."""
    y, mo, d, h, mi, sign, whole, frac = _match(_INTERVAL_RE, text, "interval").groups()
    whole_seconds = int(whole or 0)
    micros = int(frac.ljust(6, "0")) if frac else 0
    if sign:
        whole_seconds, micros = -whole_seconds, -micros
    seconds = whole_seconds + micros / 1_000_000
    return DurationFields(
        int(y or 0), int(mo or 0), int(d or 0), int(h or 0), int(mi or 0), seconds
    )


def _interval_micros(text: str | None) -> int | None:
    """``MicroDuration.durationMicros``: double arithmetic then a truncating cast, as in Java."""
    return None if text is None else encoders.micro_duration(_interval_fields(text))


def _interval_string(text: str | None) -> str | None:
    """``Interval.toIsoString``: every field present, e.g. ``P1Y2M3DT4H5M6.78S``."""
    return None if text is None else encoders.interval_string(_interval_fields(text))


def _interval_spec(options: TypeOptions) -> ConnectSpec:
    if options.interval_handling_mode == "string":
        return named_schema("string", "io.debezium.time.Interval", _interval_string)
    return named_schema("int64", "io.debezium.time.MicroDuration", _interval_micros)


# --------------------------------------------------------------------------------------------
# Geometry
# --------------------------------------------------------------------------------------------

_POINT_RE: Final = re.compile(r"\(([^,]+),([^)]+)\)")


def _point(text: str | None) -> dict[str, Any] | None:
    """Debezium's Point struct: x, y, the little-endian WKB of the point, and no SRID."""
    if text is None:
        return None
    found = _match(_POINT_RE, text, "point")
    return encoders.point(float(found.group(1)), float(found.group(2)))


def _ewkb_parts(text: str) -> tuple[bytes, int]:
    """PostGIS hex EWKB -> the EWKB kept whole and its SRID (0 if none)."""
    ewkb = bytes.fromhex(text)
    order: Literal["little", "big"] = "little" if ewkb[0] else "big"
    srid = 0
    if int.from_bytes(ewkb[1:5], order) & 0x20000000:
        srid = int.from_bytes(ewkb[5:9], order, signed=True)
    return ewkb, srid


def _ewkb_geography(text: str | None) -> dict[str, Any] | None:
    """PostGIS geography as Debezium's Geography: ``{wkb, srid}``."""
    return None if text is None else encoders.geography(*_ewkb_parts(text))


def _point_spec() -> ConnectSpec:
    return encoders.point_schema(_point)


def _ewkb_geometry(text: str | None) -> dict[str, Any] | None:
    """PostGIS geometry as Debezium 3.x's Geometry: ``{wkb, srid}`` and no extensions."""
    return None if text is None else encoders.geometry(*_ewkb_parts(text))


def _geometry_spec(kind: str, convert: Converter = _ewkb_geometry) -> ConnectSpec:
    """Debezium 3.x's Geometry (version 2, with ``extensions``) or Geography (version 1)."""
    if kind == "Geography":
        return encoders.geography_schema(_ewkb_geography)
    return encoders.geometry_schema(convert)


def _circle_spec() -> ConnectSpec:
    return ConnectSpec(
        "struct",
        geometric.circle,
        name="io.debezium.data.geometry.Circle",
        version=1,
        doc="Geometry (CIRCLE)",
        fields=(
            {**_point_spec().schema(False), "field": "center"},
            connect_field("radius", "double", False),
        ),
        always_optional=True,
    )


def _line_spec() -> ConnectSpec:
    return ConnectSpec(
        "struct",
        geometric.line,
        name="io.debezium.data.geometry.Line",
        version=1,
        doc="Geometry (LINE)",
        fields=tuple(connect_field(name, "double", False) for name in ("a", "b", "c")),
        always_optional=True,
    )


# --------------------------------------------------------------------------------------------
# hstore
# --------------------------------------------------------------------------------------------

_HSTORE_PAIR: Final = re.compile(
    r'\s*"((?:[^"\\]|\\.)*)"\s*=>\s*(?:"((?:[^"\\]|\\.)*)"|(NULL))\s*(,|$)', re.S | re.I
)
_UNESCAPE: Final = re.compile(r"\\(.)", re.S)


def _unescape(text: str) -> str:
    return _UNESCAPE.sub(r"\1", text) if "\\" in text else text


def _parse_hstore(text: str) -> list[tuple[str, str | None]]:
    """``"a"=>"1", "b"=>NULL`` -> ``[("a", "1"), ("b", None)]`` in text order."""
    pairs: list[tuple[str, str | None]] = []
    position, end = 0, len(text)
    while position < end:
        found = _HSTORE_PAIR.match(text, position)
        if found is None:
            raise ValueError(f"unexpected hstore text {text!r}")
        key, value, null, _ = found.groups()
        pairs.append((_unescape(key), None if null else _unescape(value)))
        position = found.end()
    return pairs


_JSON_ESCAPES: Final[dict[int, str]] = {
    **{c: f"\\u{c:04X}" for c in range(32)},
    ord("\b"): "\\b",
    ord("\t"): "\\t",
    ord("\n"): "\\n",
    ord("\f"): "\\f",
    ord("\r"): "\\r",
    ord('"'): '\\"',
    ord("\\"): "\\\\",
}


def _json_string(value: str | None) -> str:
    """A JSON string literal escaped as Jackson escapes it (uppercase ``\\u00XX``)."""
    return "null" if value is None else '"' + value.translate(_JSON_ESCAPES) + '"'


def _hstore_pairs_in_java_order(text: str) -> list[tuple[str, str | None]]:
    pairs = _parse_hstore(text)
    if len(pairs) < 2:
        return pairs
    return [pairs[i] for i in hashmap_order([key for key, _ in pairs])]


def _hstore_json(text: str | None) -> str | None:
    """Compact JSON object text, as Debezium's Jackson generator writes it."""
    if text is None:
        return None
    pairs = _hstore_pairs_in_java_order(text)
    return "{" + ",".join(f"{_json_string(k)}:{_json_string(v)}" for k, v in pairs) + "}"


def _hstore_map(text: str | None) -> dict[str, str | None] | None:
    return None if text is None else dict(_hstore_pairs_in_java_order(text))


def _hstore_spec(options: TypeOptions) -> ConnectSpec:
    if options.hstore_handling_mode == "map":
        return ConnectSpec(
            "map",
            _hstore_map,
            keys={"type": "string", "optional": False},
            values={"type": "string", "optional": True},
        )
    return named_schema("string", "io.debezium.data.Json", _hstore_json)


# --------------------------------------------------------------------------------------------
# Arrays
# --------------------------------------------------------------------------------------------

#: Element separator by element type oid: ``box`` is the only built-in that is not a comma.
_ARRAY_DELIMITERS: Final[dict[int, str]] = {603: ";"}
_ARRAY_ITEMS: Final[dict[str, re.Pattern[str]]] = {
    delimiter: re.compile(r'"((?:[^"\\]|\\.)*)"|([^' + delimiter + r'"{}]*)', re.S)
    for delimiter in (",", ";")
}


def _split_array(text: str, delimiter: str = ",") -> list[str | None]:
    """PostgreSQL's one-dimensional array text -> element texts (None for NULL)."""
    if text.startswith("["):  # explicit bounds: [0:1]={1,2}
        text = text[text.index("=") + 1 :]
    inner = text[1:-1]
    if not inner:
        return []
    if '"' not in inner:
        if "{" in inner:
            raise ValueError(f"only one-dimensional arrays are supported, got {text!r}")
        return [None if item == "NULL" else item for item in inner.split(delimiter)]
    return _split_quoted(inner, text, delimiter)


def _split_quoted(inner: str, text: str, delimiter: str) -> list[str | None]:
    """The slow path: some elements are quoted (and may hold escapes or delimiters)."""
    pattern = _ARRAY_ITEMS[delimiter]
    items: list[str | None] = []
    position, end = 0, len(inner)
    while True:
        found = pattern.match(inner, position)
        assert found is not None  # the pattern also matches the empty string
        quoted, bare = found.groups()
        if quoted is not None:
            items.append(_unescape(quoted))
        else:
            items.append(None if bare == "NULL" else bare)
        position = found.end()
        if position >= end:
            return items
        if inner[position] != delimiter:
            raise ValueError(f"only one-dimensional arrays are supported, got {text!r}")
        position += 1


def _array(element: Converter, delimiter: str, text: str | None) -> list[Any] | None:
    if text is None:
        return None
    return [element(item) for item in _split_array(text, delimiter)]


# --------------------------------------------------------------------------------------------
# Dispatch
# --------------------------------------------------------------------------------------------


class _Oid:
    """Built-in type oids (fixed in PostgreSQL's catalog, the same in every database)."""

    BOOL: Final = 16
    BYTEA: Final = 17
    CHAR: Final = 18
    NAME: Final = 19
    INT8: Final = 20
    INT2: Final = 21
    INT4: Final = 23
    TEXT: Final = 25
    OID: Final = 26
    JSON: Final = 114
    TSVECTOR: Final = 3614
    XML: Final = 142
    POINT: Final = 600
    LSEG: Final = 601
    PATH: Final = 602
    BOX: Final = 603
    POLYGON: Final = 604
    LINE: Final = 628
    CIRCLE: Final = 718
    CIDR: Final = 650
    FLOAT4: Final = 700
    FLOAT8: Final = 701
    MACADDR8: Final = 774
    MONEY: Final = 790
    MACADDR: Final = 829
    INET: Final = 869
    BPCHAR: Final = 1042
    VARCHAR: Final = 1043
    DATE: Final = 1082
    TIME: Final = 1083
    TIMESTAMP: Final = 1114
    TIMESTAMPTZ: Final = 1184
    INTERVAL: Final = 1186
    TIMETZ: Final = 1266
    BIT: Final = 1560
    VARBIT: Final = 1562
    NUMERIC: Final = 1700
    UUID: Final = 2950
    JSONB: Final = 3802
    INT4RANGE: Final = 3904
    NUMRANGE: Final = 3906
    TSRANGE: Final = 3908
    TSTZRANGE: Final = 3910
    DATERANGE: Final = 3912
    INT8RANGE: Final = 3926


_PLAIN: Final[dict[int, tuple[str, Converter]]] = {
    _Oid.BOOL: ("boolean", _to_bool),
    _Oid.INT2: ("int16", _to_int),
    _Oid.INT4: ("int32", _to_int),
    _Oid.INT8: ("int64", _to_int),
    _Oid.OID: ("int64", _to_int),
    _Oid.FLOAT4: ("float", _to_float),
    _Oid.FLOAT8: ("double", _to_float),
    **dict.fromkeys(
        (
            _Oid.CHAR,
            _Oid.NAME,
            _Oid.TEXT,
            _Oid.BPCHAR,
            _Oid.VARCHAR,
            _Oid.INET,
            _Oid.CIDR,
            _Oid.MACADDR,
            _Oid.MACADDR8,
            _Oid.INT4RANGE,
            _Oid.INT8RANGE,
            _Oid.NUMRANGE,
            _Oid.TSRANGE,
            _Oid.TSTZRANGE,
            _Oid.DATERANGE,
        ),
        ("string", _passthrough),
    ),
}

_SEMANTIC_STRINGS: Final[dict[int, str]] = {
    _Oid.JSON: "io.debezium.data.Json",
    _Oid.JSONB: "io.debezium.data.Json",
    _Oid.XML: "io.debezium.data.Xml",
    _Oid.UUID: "io.debezium.data.Uuid",
    _Oid.TIMETZ: "io.debezium.time.ZonedTime",
    _Oid.TSVECTOR: "io.debezium.data.Tsvector",
}
_SEMANTIC_CONVERTERS: Final[dict[int, Converter]] = {
    _Oid.TIMETZ: _zoned_time,
}

#: Array element types Debezium gives an array schema (by oid, plus the extension names below).
_ARRAY_ELEMENTS: Final = frozenset(
    {
        _Oid.BOOL,
        _Oid.BYTEA,
        _Oid.CHAR,
        _Oid.INT2,
        _Oid.INT4,
        _Oid.INT8,
        _Oid.OID,
        _Oid.TEXT,
        _Oid.BPCHAR,
        _Oid.VARCHAR,
        _Oid.JSON,
        _Oid.JSONB,
        _Oid.UUID,
        _Oid.FLOAT4,
        _Oid.FLOAT8,
        _Oid.NUMERIC,
        _Oid.DATE,
        _Oid.TIME,
        _Oid.TIMETZ,
        _Oid.TIMESTAMP,
        _Oid.TIMESTAMPTZ,
        _Oid.INET,
        _Oid.CIDR,
        _Oid.MACADDR,
        _Oid.MACADDR8,
        _Oid.INT4RANGE,
        _Oid.INT8RANGE,
        _Oid.NUMRANGE,
        _Oid.TSRANGE,
        _Oid.TSTZRANGE,
        _Oid.DATERANGE,
    }
)
#: Array element types for which Debezium has no schema even with include.unknown.datatypes.
_ARRAY_EXCLUDED: Final = frozenset(
    {_Oid.MONEY, _Oid.NAME, _Oid.INTERVAL, _Oid.BIT, _Oid.VARBIT, _Oid.XML, _Oid.POINT}
)
_EXTENSION_NAMES: Final = frozenset({"citext", "ltree", "hstore", "geometry", "geography"})


def _scalar_spec(pg_type: PgType, typmod: int, options: TypeOptions) -> ConnectSpec | None:
    """The mapping of a non-domain, non-array type, or None if Debezium has none."""
    oid = pg_type.oid
    plain = _PLAIN.get(oid)
    if plain is not None:
        return ConnectSpec(plain[0], plain[1])
    semantic = _SEMANTIC_STRINGS.get(oid)
    if semantic is not None:
        return named_schema("string", semantic, _SEMANTIC_CONVERTERS.get(oid, _passthrough))
    if pg_type.is_enum:
        return named_schema(
            "string", "io.debezium.data.Enum", _passthrough, allowed=",".join(pg_type.enum_labels)
        )
    builder = _BUILDERS.get(oid)
    if builder is not None:
        return builder(typmod, options)
    if pg_type.namespace != "pg_catalog" and pg_type.name in _EXTENSION_NAMES:
        return _extension_spec(pg_type.name, options)
    return None


def _bit_spec(typmod: int, options: TypeOptions) -> ConnectSpec:
    if typmod > 1:
        return encoders.bits_schema(_bits, typmod)
    return ConnectSpec("boolean", _bit_to_bool)


def _varbit_spec(typmod: int, options: TypeOptions) -> ConnectSpec:
    length = _VARBIT_UNBOUNDED_LENGTH if typmod < 0 else typmod
    if length > 1:
        return encoders.bits_schema(_bits, length)
    return ConnectSpec("boolean", _bit_to_bool)


def _bytea_spec(typmod: int, options: TypeOptions) -> ConnectSpec:
    mode = options.binary_handling_mode
    if mode == "hex":
        return ConnectSpec("string", _bytea_hex)
    return ConnectSpec(
        encoders.binary_schema_type(mode), partial(_bytea, encoders.binary_encoder(mode))
    )


def _extension_spec(name: str, options: TypeOptions) -> ConnectSpec:
    if name == "citext":
        return ConnectSpec("string", _passthrough)
    if name == "ltree":
        return named_schema("string", "io.debezium.data.Ltree", _passthrough)
    if name == "hstore":
        return _hstore_spec(options)
    return _geometry_spec("Geometry" if name == "geometry" else "Geography")


_BUILDERS: Final[dict[int, Callable[[int, TypeOptions], ConnectSpec]]] = {
    _Oid.BIT: _bit_spec,
    _Oid.VARBIT: _varbit_spec,
    _Oid.BYTEA: _bytea_spec,
    _Oid.NUMERIC: _numeric_spec,
    _Oid.MONEY: lambda typmod, options: _money_spec(options),
    _Oid.DATE: lambda typmod, options: _date_spec(options),
    _Oid.TIME: _time_spec,
    _Oid.TIMESTAMP: _timestamp_spec,
    _Oid.INTERVAL: lambda typmod, options: _interval_spec(options),
    _Oid.POINT: lambda typmod, options: _point_spec(),
    _Oid.BOX: lambda typmod, options: _geometry_spec("Geometry", geometric.box),
    _Oid.LSEG: lambda typmod, options: _geometry_spec("Geometry", geometric.lseg),
    _Oid.PATH: lambda typmod, options: _geometry_spec("Geometry", geometric.path),
    _Oid.POLYGON: lambda typmod, options: _geometry_spec("Geometry", geometric.polygon),
    _Oid.CIRCLE: lambda typmod, options: _circle_spec(),
    _Oid.LINE: lambda typmod, options: _line_spec(),
    _Oid.TIMESTAMPTZ: lambda typmod, options: named_schema(
        "string",
        "io.debezium.time.ZonedTimestamp",
        partial(_zoned_timestamp, _time_precision(typmod)),
    ),
}


def _unknown_spec(options: TypeOptions) -> ConnectSpec:
    """Opaque bytes of the text form, per binary.handling.mode."""
    mode = options.binary_handling_mode
    return ConnectSpec(
        encoders.binary_schema_type(mode), partial(_opaque, encoders.binary_encoder(mode))
    )


def _array_spec(
    array: PgType, typmod: int, registry: TypeRegistry, options: TypeOptions
) -> ConnectSpec | None:
    element = registry.element(array)
    if element is None or element.oid in _ARRAY_EXCLUDED:
        return None
    supported = (
        element.oid in _ARRAY_ELEMENTS
        or element.is_enum
        or (element.namespace != "pg_catalog" and element.name in _EXTENSION_NAMES)
    )
    spec = _scalar_spec(element, typmod, options) if supported else None
    if spec is None:
        if not options.include_unknown_datatypes:
            return None
        spec = _unknown_spec(options)
    # Debezium declares enum and unknown elements required, every other element optional.
    items_optional = supported and not element.is_enum
    delimiter = _ARRAY_DELIMITERS.get(element.oid, ",")
    convert = partial(_array, spec.convert, delimiter)
    return ConnectSpec("array", convert, items=spec.schema(items_optional))


def column_for(
    *,
    name: str,
    type_oid: int,
    typmod: int,
    optional: bool,
    registry: TypeRegistry,
    options: TypeOptions,
) -> Column | None:
    """The captured column for a table column of type ``type_oid``/``typmod``.

    Domains resolve to their base type, arrays to their element type. Returns None for a type
    Debezium does not map, unless ``include_unknown_datatypes`` asks for opaque bytes.
    """
    declared = registry.get(type_oid)
    resolved = registry.resolve(type_oid, typmod)
    spec: ConnectSpec | None = None
    if resolved is not None:
        base, typmod = resolved
        if base.is_array:
            spec = _array_spec(base, typmod, registry, options)
        else:
            spec = _scalar_spec(base, typmod, options)
            if spec is None and options.include_unknown_datatypes:
                spec = _unknown_spec(options)
    elif options.include_unknown_datatypes:
        spec = _unknown_spec(options)
    if spec is None:
        return None
    type_name = declared.name if declared is not None else str(type_oid)
    return Column(name, type_name, spec.schema(optional), spec.convert, optional)
