"""MySQL/MariaDB column types mapped to Kafka Connect schemas and converters, the way Debezium does.

A column's structure (:class:`~cdcflow.capture.spi.ColumnStructure`, as Debezium's DDL parser
records it) decides its Connect schema and its converter, following Debezium 3.x's
``BinlogValueConverters``/``JdbcValueConverters``: type names first (JSON, spatial types, YEAR,
ENUM, SET, unsigned integers, FLOAT, UUID, VECTOR), then the JDBC type code. The converter takes
a value in either of the two forms the connector reads and returns what ``JsonConverter`` writes:

* from the binlog: the row values python-mysql-replication 1.0.17 yields (``binlog_row_metadata
  =FULL``): ints, floats, ``Decimal``, ``str``/``bytes``, ``date``/``datetime``/``timedelta``,
  a bit string for BIT, a ``set`` for SET, ``None`` for NULL and for zero dates;
* from a snapshot ``SELECT`` read through PyMySQL with :data:`SNAPSHOT_CONVERSIONS`: the same
  Python types, except that temporal values stay the server's text (zero dates and every
  fractional digit survive), BIT is big-endian bytes and SET the comma-joined members.

Both forms of one value convert to the same result. Where python-mysql-replication loses or
garbles information the converter restores Debezium's value: BINARY(n) is right-padded with
zero bytes (the binlog drops them; Debezium's DBZ-254), a negative TIME with a fraction is
decoded again (the library computes ``-(s + 1) + f`` instead of ``-(s + f)``), YEAR 0000 reads
1900 on both paths (what Debezium's binlog reader makes of it), an empty SET in a NOT NULL
column is ``""``. The binlog's zero TIMESTAMP is epoch second 0, published as the epoch (as
Debezium's binlog reader does); a snapshot reads the zero date itself (null when nullable).

Zero dates (``0000-00-00``, a zero month or day, year 0) are null; in a NOT NULL column, as in
Debezium's ``convertValue``, a null becomes the column default, else the type's zero value
(epoch day, epoch, ``1970-01-01T00:00:00Z``). Column defaults go into the field schema as
Debezium's ``BinlogDefaultValueConverter`` reads them; ``replace_null_with_default`` writes them
where a value is null, as ``JsonConverter`` does.

TIMESTAMP values are instants: the binlog carries UTC, a snapshot's text is in the session's
time zone, :attr:`TypeOptions.connection_time_zone` (None: UTC). FLOAT columns print only six
significant digits in a text result, so a snapshot must read them with
:func:`snapshot_expression` (the exact value as a DOUBLE) to match the binlog.
"""

from __future__ import annotations

import json
import math
import re
import struct
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import MAX_EMAX, MAX_PREC, MIN_EMIN, ROUND_HALF_UP, Context, Decimal
from functools import partial
from typing import Any, Final, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import pymysql.charset
import pymysql.converters
from pymysql.constants import FIELD_TYPE

from cdcflow.capture import encoders
from cdcflow.capture.connectors.mysql import structure
from cdcflow.capture.encoders import (
    MICROS_PER_DAY,
    MICROS_PER_SECOND,
    ConnectSpec,
    epoch_days,
    epoch_micros,
    millis,
    named_schema,
    timedelta_micros,
    unscaled_bytes,
)
from cdcflow.capture.spi import Column, ColumnStructure, Converter, TableSchema, TableStructure

# --------------------------------------------------------------------------------------------
# Options
# --------------------------------------------------------------------------------------------

DecimalMode = Literal["precise", "double", "string"]
TimePrecisionMode = Literal["adaptive_time_microseconds", "connect"]
BigIntUnsignedMode = Literal["long", "precise"]
BinaryMode = Literal["bytes", "base64", "base64-url-safe", "hex"]

_CHOICES: Final[dict[str, tuple[str, ...]]] = {
    "decimal_handling_mode": ("precise", "double", "string"),
    "time_precision_mode": ("adaptive_time_microseconds", "connect"),
    "bigint_unsigned_handling_mode": ("long", "precise"),
    "binary_handling_mode": ("bytes", "base64", "base64-url-safe", "hex"),
}
#: ``database.connectionTimeZone`` values that name no zone of their own; the snapshot's
#: session is then taken to be in UTC.
_SESSION_ZONES: Final = frozenset({"SYSTEM", "LOCAL", "SERVER"})


@dataclass(frozen=True, slots=True)
class TypeOptions:
    """The connector properties that change type mapping; defaults are Debezium's."""

    decimal_handling_mode: DecimalMode = "precise"
    time_precision_mode: TimePrecisionMode = "adaptive_time_microseconds"
    bigint_unsigned_handling_mode: BigIntUnsignedMode = "long"
    binary_handling_mode: BinaryMode = "bytes"
    #: ``database.connectionTimeZone``: the zone of the snapshot session's TIMESTAMP text
    #: (``+05:30``, ``Europe/Berlin``, ``UTC``); None: UTC.
    connection_time_zone: str | None = None
    #: ``enable.time.adjuster``: DATE/DATETIME years 00-69 read as 2000-2069, 70-99 as 1970-1999.
    enable_time_adjuster: bool = True
    #: JsonConverter's ``replace.null.with.default``: a null is written as the column default.
    replace_null_with_default: bool = True

    def __post_init__(self) -> None:
        for option, allowed in _CHOICES.items():
            value = getattr(self, option)
            if value not in allowed:
                raise ValueError(f"{option} must be one of {', '.join(allowed)}; got {value!r}")
        _zone(self.connection_time_zone)  # fail on an unknown zone now, not at the first row


# --------------------------------------------------------------------------------------------
# Snapshot reads
# --------------------------------------------------------------------------------------------


def _snapshot_conversions() -> dict[Any, Any]:
    """PyMySQL's conversions (its encoders stay: chunk queries pass keys as parameters) with
    temporal columns left as the server's text, which keeps zero dates, negative and long
    TIMEs and every fractional digit; BIT and binary columns already arrive as bytes."""
    conversions: dict[Any, Any] = dict(pymysql.converters.conversions)
    for field_type in (
        FIELD_TYPE.DATE,
        FIELD_TYPE.NEWDATE,
        FIELD_TYPE.DATETIME,
        FIELD_TYPE.TIMESTAMP,
        FIELD_TYPE.TIME,
    ):
        conversions[field_type] = pymysql.converters.through
    return conversions


#: The ``conv`` of the PyMySQL connections a snapshot reads rows with.
SNAPSHOT_CONVERSIONS: Final[dict[Any, Any]] = _snapshot_conversions()


def snapshot_expression(structure: ColumnStructure) -> str:
    """The select-list expression a snapshot reads ``structure``'s column with.

    A single-precision FLOAT prints only six significant digits in a text result (16777217
    reads ``16777200``); adding a DOUBLE zero yields its exact value, as the binlog has it.
    Every other column is read as it is.
    """
    name = "`" + structure.name.replace("`", "``") + "`"
    return f"({name} + 0E0)" if _is_single_precision(structure) else name


# --------------------------------------------------------------------------------------------
# java.sql.Types codes, as Debezium's MySQL DDL parser assigns them
# --------------------------------------------------------------------------------------------


# One table of java.sql.Types codes for the parser and the converters.
_Jdbc = structure


_STRING_TYPES: Final = frozenset(
    {
        _Jdbc.CHAR,
        _Jdbc.VARCHAR,
        _Jdbc.LONGVARCHAR,
        _Jdbc.CLOB,
        _Jdbc.NCHAR,
        _Jdbc.NVARCHAR,
        _Jdbc.LONGNVARCHAR,
        _Jdbc.NCLOB,
    }
)
_BINARY_TYPES: Final = frozenset({_Jdbc.BLOB, _Jdbc.BINARY, _Jdbc.VARBINARY, _Jdbc.LONGVARBINARY})
#: BinlogDefaultValueConverter trims the defaults of these types (and of number types).
_TRIMMED_DEFAULTS: Final = frozenset(
    {_Jdbc.DATE, _Jdbc.TIMESTAMP, _Jdbc.TIMESTAMP_WITH_TIMEZONE, _Jdbc.TIME, _Jdbc.BOOLEAN}
)
#: ... and reads ``true``/``false`` as 1/0 for these.
_NUMBER_TYPES: Final = frozenset(
    {
        _Jdbc.BIT,
        _Jdbc.TINYINT,
        _Jdbc.SMALLINT,
        _Jdbc.INTEGER,
        _Jdbc.BIGINT,
        _Jdbc.FLOAT,
        _Jdbc.REAL,
        _Jdbc.DOUBLE,
        _Jdbc.NUMERIC,
        _Jdbc.DECIMAL,
    }
)


def _matches(type_name: str, *names: str) -> bool:
    """Debezium's ``matches``: the name itself, or the name followed by ``(``."""
    return any(type_name == name or type_name.startswith(name + "(") for name in names)


def _unsigned(*names: str) -> tuple[str, ...]:
    """The names Debezium lists for unsigned integers: ``X UNSIGNED [ZEROFILL]``."""
    return tuple(
        f"{name} {suffix}" for name in names for suffix in ("UNSIGNED", "UNSIGNED ZEROFILL")
    )


_UNSIGNED_TINYINT: Final = _unsigned("TINYINT", "INT1")
_UNSIGNED_SMALLINT: Final = _unsigned("SMALLINT", "INT2")
_UNSIGNED_MEDIUMINT: Final = _unsigned("MEDIUMINT", "INT3", "MIDDLEINT")
_UNSIGNED_INT: Final = _unsigned("INT", "INTEGER", "INT4")
_UNSIGNED_BIGINT: Final = _unsigned("BIGINT", "INT8")
_FLOAT_NAMES: Final = ("FLOAT", "FLOAT UNSIGNED", "FLOAT UNSIGNED ZEROFILL")
_GEOMETRY_NAMES: Final = (
    "GEOMETRY",
    "LINESTRING",
    "POLYGON",
    "MULTIPOINT",
    "MULTILINESTRING",
    "MULTIPOLYGON",
)
#: The largest FLOAT(p) precision that is still single precision.
_SINGLE_PRECISION_DIGITS: Final = 24


def _is_single_precision(structure: ColumnStructure) -> bool:
    """A FLOAT stored in four bytes: FLOAT, FLOAT(p <= 24) and FLOAT(M,D) (REAL and FLOAT8
    are DOUBLE, FLOAT(p > 24) too)."""
    if structure.jdbc_type != _Jdbc.FLOAT:
        return False
    length = structure.length
    return structure.scale is not None or length is None or length <= _SINGLE_PRECISION_DIGITS


# --------------------------------------------------------------------------------------------
# Numbers
# --------------------------------------------------------------------------------------------


def _wrap(value: int, bits: int) -> int:
    """Java's narrowing of an integer to ``bits`` (``Number.byteValue()``, ``longValue()``...)."""
    half = 1 << (bits - 1)
    return (value + half) % (half << 1) - half


def _to_int(bits: int, value: Any) -> int | None:
    if value is None:
        return None
    if type(value) is int and -(1 << (bits - 1)) <= value < 1 << (bits - 1):
        return value  # already in range: the common case, without the arithmetic
    return _wrap(int(value), bits)


def _to_bool(value: Any) -> bool | None:
    return None if value is None else int(value) != 0


_FLOAT32: Final = struct.Struct("<f")


def _single(value: float) -> float:
    """The nearest single-precision float, widened back (what a FLOAT column stores); past
    the largest single (a candidate decimal form of ±3.4028235e38 rounded up), infinity."""
    try:
        result: float = _FLOAT32.unpack(_FLOAT32.pack(value))[0]
    except OverflowError:
        return math.copysign(math.inf, value)
    return result


def _shortest_single(value: float) -> float:
    """A single-precision value as the double of its shortest decimal form (``1.1`` rather
    than ``1.100000023841858``): ``JsonConverter`` writes a FLOAT32 as ``Float.toString``."""
    single = _single(value)
    if single == 0 or not math.isfinite(single):
        return single
    for digits in range(1, 10):
        candidate = float(f"{single:.{digits}g}")
        if _single(candidate) == single:
            return candidate
    return single


def _to_float32(value: Any) -> float | None:
    return None if value is None else _shortest_single(float(value))


def _to_widened_float32(value: Any) -> float | None:
    """FLOAT(M,D): single precision in a FLOAT64 field, as the binlog's float widens."""
    return None if value is None else _single(float(value))


def _to_double(value: Any) -> float | None:
    return None if value is None else float(value)


def _as_decimal(value: Any) -> Decimal:
    return value if isinstance(value, Decimal) else Decimal(str(value))


def _plain(unscaled: int, scale: int) -> str:
    """``BigDecimal.toPlainString()``: never scientific, no negative zero."""
    digits = str(abs(unscaled)).rjust(scale + 1, "0")
    text = f"{digits[:-scale]}.{digits[-scale:]}" if scale else digits
    return "-" + text if unscaled < 0 else text


#: Decimal arithmetic that never rounds (scaling a DECIMAL(65, 30) keeps every digit).
_EXACT: Final = Context(prec=MAX_PREC, Emax=MAX_EMAX, Emin=MIN_EMIN)


def _decimal_precise(scale: int, value: Any) -> str | None:
    if value is None:
        return None
    if type(value) is Decimal:  # the unscaled number at once, when no digit is cut off
        unscaled = value.scaleb(scale, _EXACT)
        if unscaled.is_finite() and unscaled == unscaled.to_integral_value():
            return encoders.unscaled_bytes(int(unscaled))
    parts, found = encoders.decimal_parts(_as_decimal(value))
    return encoders.decimal_bytes(parts, found, target_scale=scale)


def _decimal_double(value: Any) -> float | None:
    return None if value is None else float(_as_decimal(value))


def _decimal_string(value: Any) -> str | None:
    return None if value is None else _plain(*encoders.decimal_parts(_as_decimal(value)))


_UNSIGNED_BIGINT_SPAN: Final = 1 << 64


def _unsigned_bigint_precise(value: Any) -> str | None:
    """BIGINT UNSIGNED as a Decimal of scale 0; a negative (signed) reading gains 2^64."""
    if value is None:
        return None
    number = int(value)
    return unscaled_bytes(number + _UNSIGNED_BIGINT_SPAN if number < 0 else number)


# --------------------------------------------------------------------------------------------
# Bits
# --------------------------------------------------------------------------------------------


def _bit_number(value: Any) -> int:
    """A BIT value as a number: binlog bit string, snapshot big-endian bytes, or an int."""
    if isinstance(value, str):
        return int(value, 2) if value else 0
    if isinstance(value, bytes | bytearray):
        return int.from_bytes(value, "big")
    return int(value)


def _bit(value: Any) -> bool | None:
    return None if value is None else _bit_number(value) & 1 == 1


def _bits(size: int, value: Any) -> str | None:
    """``io.debezium.data.Bits``: little-endian, always ``ceil(n / 8)`` bytes (Debezium pads
    ``BitSet.toByteArray()`` to the column's size)."""
    if value is None:
        return None
    return encoders.base64_text(_bit_number(value).to_bytes(size, "little"))


# --------------------------------------------------------------------------------------------
# Strings and binary data
# --------------------------------------------------------------------------------------------


def _python_encoding(charset: str | None) -> str:
    """The codec of a MySQL charset, as PyMySQL (and so python-mysql-replication) maps it:
    ``latin1`` is cp1252, ``utf8mb3``/``utf8mb4`` are UTF-8."""
    found = pymysql.charset.charset_by_name(charset.lower()) if charset else None
    encoding = found.encoding if found is not None else "utf8"
    try:
        "".encode(encoding)
    except LookupError:
        return "utf8"
    return encoding


def _string(encoding: str, value: Any) -> str | None:
    """Text as it is; bytes (a reader that did not decode) in the column's charset, bad
    sequences replaced as Java's ``new String(bytes, charset)`` does."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode(encoding, "replace")
    return str(value)


def _raw_bytes(value: Any) -> bytes:
    """Binary data; text (the binlog reader decodes some binary values) as its UTF-8 bytes,
    which is what Debezium does with a String in a binary column."""
    return value.encode("utf-8") if isinstance(value, str) else bytes(value)


def _binary(encode: encoders.BinaryEncoder, pad_to: int | None, value: Any) -> str | None:
    """Binary data per ``binary.handling.mode``; BINARY(n) padded with zero bytes to n, which
    the binlog drops and Debezium restores (DBZ-254)."""
    if value is None:
        return None
    data = _raw_bytes(value)
    if pad_to is not None and len(data) < pad_to:
        data = data.ljust(pad_to, b"\x00")
    return encode(data)


def _json_text(value: Any) -> str | None:
    """MariaDB's JSON is text; MySQL's binary JSON comes out of the binlog library parsed,
    and is written back in MySQL's own text layout (keys in stored order)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", "replace")
    return json.dumps(_json_plain(value), separators=(", ", ": "), ensure_ascii=False)


def _json_plain(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, dict):
        return {_json_plain(key): _json_plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_json_plain(item) for item in value]
    return value


_UUID_BYTES: Final = 16


def _uuid(value: Any) -> str | None:
    """MariaDB UUID: the snapshot's text, or the binlog's 16 bytes (trailing zeros dropped)."""
    if value is None or isinstance(value, str):
        return value
    return str(uuid.UUID(bytes=_raw_bytes(value).ljust(_UUID_BYTES, b"\x00")))


def _vector(value: Any) -> list[float] | None:
    """MariaDB VECTOR: little-endian single-precision floats."""
    if value is None:
        return None
    if isinstance(value, list | tuple):
        return [_shortest_single(float(item)) for item in value]
    data = _raw_bytes(value)
    if len(data) % _FLOAT32.size:
        raise ValueError(f"a VECTOR value of {len(data)} bytes is not a list of floats")
    return [_shortest_single(item) for (item,) in _FLOAT32.iter_unpack(data)]


# --------------------------------------------------------------------------------------------
# ENUM and SET
# --------------------------------------------------------------------------------------------


def _members(values: Sequence[str] | None) -> tuple[str, ...]:
    """ENUM/SET members. The contract gives them unquoted; the quoted form Debezium's parser
    stores is read as its ``extractEnumAndSetOptions`` does (outer quotes off, ``\\'`` and
    ``''`` one quote)."""
    if not values:
        return ()
    quoted = all(len(v) >= 2 and v[0] == v[-1] and v[0] in "'\"" for v in values)
    if not quoted:
        return tuple(values)
    return tuple(v[1:-1].replace("\\'", "'").replace("''", "'") for v in values)


def _allowed(members: Iterable[str]) -> str:
    """``EnumeratedValues.toCommaSeparatedString``: backslashes and commas escaped."""
    return ",".join(m.replace("\\", "\\\\").replace(",", "\\,") for m in members)


def _enum(members: tuple[str, ...], value: Any) -> str | None:
    """The member's text; a 1-based index (0: the invalid value ``''``) is looked up."""
    if value is None or isinstance(value, str):
        return value
    index = int(value)
    if index == 0:
        return ""
    return members[index - 1] if index <= len(members) else None


def _set(members: tuple[str, ...], optional: bool, value: Any) -> str | None:
    """Members comma-joined in definition order (the binlog library gives a Python set, or
    a bit mask). It gives None for the empty set: in a NOT NULL column that can only be it."""
    if value is None:
        return None if optional else ""
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return ",".join(m for i, m in enumerate(members) if value >> i & 1)
    order = {member: index for index, member in enumerate(members)}
    return ",".join(sorted(value, key=lambda m: order.get(m, len(order))))


# --------------------------------------------------------------------------------------------
# Dates and times
# --------------------------------------------------------------------------------------------

#: (year, month, day, microseconds of the day) of a DATE, DATETIME or TIMESTAMP.
_Civil = tuple[int, int, int, int]

_DATE_TEXT: Final = re.compile(r"(\d{4})-(\d\d)-(\d\d)")
_DATETIME_TEXT: Final = re.compile(r"(\d{4})-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?")
#: BinlogValueConverters.TIME_FIELD_PATTERN.
_TIME_TEXT: Final = re.compile(r"(-?[0-9]*):([0-9]*)(?::([0-9]*))?(?:\.([0-9]*))?")
_EPOCH_TIMESTAMP: Final = "1970-01-01T00:00:00Z"
#: The Unix epoch as a naive UTC datetime (the binlog's zero TIMESTAMP reads as it).
_UNIX_EPOCH: Final = datetime(1970, 1, 1)


def _clock(hours: str, minutes: str, seconds: str, fraction: str | None) -> int:
    micros = ((int(hours) * 60 + int(minutes)) * 60 + int(seconds)) * MICROS_PER_SECOND
    return micros + int(fraction.ljust(6, "0")) if fraction else micros


def _valid(civil: _Civil) -> _Civil | None:
    """None for a zero date: Debezium's binlog reader makes zero years, months and days null
    (its snapshot reader checks only months and days; the binlog is followed)."""
    year, month, day, _ = civil
    return civil if year and month and day else None


def _parse_text(pattern: re.Pattern[str], text: str) -> _Civil | None:
    found = pattern.fullmatch(text)
    if found is None:
        raise ValueError(f"unexpected temporal text {text!r}")
    year, month, day, *clock = found.groups()
    micros = _clock(*clock) if clock else 0
    return _valid((int(year), int(month), int(day), micros))


def _civil_date(value: Any) -> _Civil | None:
    """A DATE: the binlog's ``date`` (None for zero dates) or the snapshot's text."""
    if isinstance(value, str):
        return _parse_text(_DATE_TEXT, value)
    return (value.year, value.month, value.day, 0)


def _civil_datetime(value: Any) -> _Civil | None:
    """A DATETIME/TIMESTAMP: the binlog's naive ``datetime`` or the snapshot's text."""
    if isinstance(value, str):
        return _parse_text(_DATETIME_TEXT, value)
    clock = ((value.hour * 60 + value.minute) * 60 + value.second) * MICROS_PER_SECOND
    return (value.year, value.month, value.day, clock + value.microsecond)


def _adjusted(adjust: bool, civil: _Civil) -> _Civil:
    """``enable.time.adjuster``: two-digit years 00-69 are 2000-2069, 70-99 are 1970-1999."""
    year = civil[0]
    if adjust and 0 <= year <= 99:
        return (year + (2000 if year <= 69 else 1900), *civil[1:])
    return civil


def _epoch_micros(civil: _Civil) -> int:
    year, month, day, clock = civil
    return epoch_micros(epoch_days(year, month, day), clock)


def _date_days(adjust: bool, value: Any) -> int | None:
    civil = None if value is None else _civil_date(value)
    if civil is None:
        return None
    year, month, day, _ = _adjusted(adjust, civil)
    return epoch_days(year, month, day)


#: One microsecond: a timedelta floor-divided by it is its exact microsecond count.
_MICROSECOND: Final = timedelta(microseconds=1)


def _datetime_micros(adjust: bool, value: Any) -> int | None:
    """DATETIME: the wall time read as UTC, as Debezium reads a zone-less timestamp."""
    if type(value) is datetime and value.year >= 100 and value.tzinfo is None:
        return (value - _UNIX_EPOCH) // _MICROSECOND  # a binlog value no adjuster touches
    civil = None if value is None else _civil_datetime(value)
    return None if civil is None else _epoch_micros(_adjusted(adjust, civil))


def _datetime_millis(adjust: bool, value: Any) -> int | None:
    micros = _datetime_micros(adjust, value)
    return None if micros is None else millis(micros)


#: Local epoch microseconds (a wall time read as UTC) to UTC epoch microseconds.
_Zone = Callable[[int], int]
_OFFSET: Final = re.compile(r"(?:UTC|GMT)?([+-])(\d{1,2}):?(\d\d)?")


def _zone(name: str | None) -> _Zone:
    """The session time zone of ``database.connectionTimeZone``: an offset or a zone name."""
    if name is None or name.upper() in _SESSION_ZONES | {"UTC", "Z", "GMT"}:
        return _utc
    offset = _OFFSET.fullmatch(name.strip())
    if offset is not None:
        sign, hours, minutes = offset.groups()
        seconds = (int(hours) * 60 + int(minutes or 0)) * 60
        return partial(_shift, -seconds if sign == "-" else seconds)
    try:
        return partial(_in_zone, ZoneInfo(name))
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise ValueError(f"database.connectionTimeZone {name!r} is not a time zone") from None


def _utc(local_micros: int) -> int:
    return local_micros


def _shift(offset_seconds: int, local_micros: int) -> int:
    return local_micros - offset_seconds * MICROS_PER_SECOND


def _in_zone(zone: ZoneInfo, local_micros: int) -> int:
    local = _UNIX_EPOCH + timedelta(microseconds=local_micros)
    offset = local.replace(tzinfo=zone).utcoffset() or timedelta(0)
    return local_micros - timedelta_micros(offset)


def _timestamp_utc_micros(zone: _Zone, value: Any) -> int | None:
    """TIMESTAMP as UTC epoch microseconds. The binlog gives a naive UTC ``datetime`` (the zero
    value is epoch second 0 there, which Debezium's binlog reader publishes as the epoch), an
    aware one is shifted; the snapshot's text is in the session's zone (its zero date: None)."""
    if isinstance(value, str):
        civil = _parse_text(_DATETIME_TEXT, value)
        return None if civil is None else zone(_epoch_micros(civil))
    return encoders.datetime_epoch_micros(value)


def _zoned(zone: _Zone, precision: int, value: Any) -> str | None:
    """``io.debezium.time.ZonedTimestamp`` in UTC, the fraction as wide as the column's."""
    micros = None if value is None else _timestamp_utc_micros(zone, value)
    return None if micros is None else encoders.zoned_timestamp(micros, precision=precision)


def _duration_micros(text: str) -> int:
    """``stringToDuration``: ``[-]h:m[:s[.f]]`` as microseconds (``-00:00:01.5`` included)."""
    found = _TIME_TEXT.fullmatch(text)
    if found is None:
        raise ValueError(f"unexpected TIME text {text!r}")
    hours, minutes, seconds, fraction = found.groups()
    magnitude = (abs(int(hours)) * 60 + int(minutes)) * 60 * MICROS_PER_SECOND
    if seconds is not None:
        magnitude += int(seconds) * MICROS_PER_SECOND
        magnitude += int(fraction.ljust(9, "0")) // 1000 if fraction else 0
    return -magnitude if text.startswith("-") else magnitude


def _binlog_time_micros(value: timedelta) -> int:
    """A binlog TIME. python-mysql-replication 1.0.17 decodes a negative TIME2 with a fraction
    ``s.f`` as ``-(s + 1) + f``; the whole seconds and the fraction are recovered from that."""
    micros = timedelta_micros(value)
    if micros < 0 and micros % MICROS_PER_SECOND:
        seconds = -(micros // MICROS_PER_SECOND) - 1
        return -(seconds * MICROS_PER_SECOND + micros % MICROS_PER_SECOND)
    return micros


def _time_micros(value: Any) -> int | None:
    """MicroTime: microseconds, negative and beyond 24 hours as MySQL allows."""
    if value is None:
        return None
    if isinstance(value, str):
        return _duration_micros(value)
    return _binlog_time_micros(value)


def _time_millis(value: Any) -> int | None:
    """Connect's Time: only 00:00:00 to 24:00:00 (Debezium's converter rejects the rest)."""
    micros = _time_micros(value)
    if micros is None:
        return None
    if not 0 <= micros <= MICROS_PER_DAY:
        raise ValueError("time.precision.mode=connect takes TIME values from 00:00 to 24:00 only")
    return millis(micros)


_BINLOG_ZERO_YEAR: Final = 1900


def _java_year(year: int) -> int:
    """``adjustTemporal`` on a YEAR, which Debezium applies whatever ``enable.time.adjuster``."""
    if 0 <= year <= 69:
        return year + 2000
    return year + 1900 if 70 <= year <= 99 else year


def _year(value: Any) -> int | None:
    """YEAR: the binlog reads 0000 as 1900 (a byte plus 1900), the snapshot as 0; both 1900."""
    if value is None:
        return None
    year = int(value)
    return _BINLOG_ZERO_YEAR if year == 0 else _java_year(year)


# --------------------------------------------------------------------------------------------
# Geometry
# --------------------------------------------------------------------------------------------

_WKB_POINT_SIZE: Final = 21
_EMPTY_COLLECTION: Final = bytes.fromhex("010700000000000000")


def _srid_and_wkb(value: Any) -> tuple[int | None, bytes]:
    """MySQL's internal geometry: a little-endian SRID (0 is none) and the WKB."""
    data = _raw_bytes(value)
    srid = int.from_bytes(data[:4], "little", signed=True)
    return srid or None, data[4:]


def _geometry(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    srid, wkb = _srid_and_wkb(value)
    return encoders.geometry(wkb, srid)


def _point(value: Any) -> dict[str, Any] | None:
    """``io.debezium.data.geometry.Point``: x and y from the WKB, which is kept as it is."""
    if value is None:
        return None
    srid, wkb = _srid_and_wkb(value)
    if len(wkb) != _WKB_POINT_SIZE:
        raise ValueError(f"a POINT value has {len(wkb)} bytes of WKB, not {_WKB_POINT_SIZE}")
    order = "<" if wkb[0] else ">"
    (kind,) = struct.unpack_from(order + "I", wkb, 1)
    if kind != 1:
        raise ValueError(f"a POINT value holds WKB geometry type {kind}")
    x, y = struct.unpack_from(order + "dd", wkb, 5)
    return {"x": x, "y": y, "wkb": encoders.base64_text(wkb), "srid": srid}


def _point_spec() -> ConnectSpec:
    """Debezium's Point (MySQL's POINT keeps it for backwards compatibility)."""
    return encoders.point_schema(_point)


# --------------------------------------------------------------------------------------------
# Column mappings: a schema, a converter, the value of a NOT NULL null, and the default reader
# --------------------------------------------------------------------------------------------

#: Reads a default (the text Debezium's DDL parser recorded) into the field's value; None or
#: an exception: Debezium gives the field no default.
_DefaultReader = Callable[[str], Any]


@dataclass(frozen=True, slots=True)
class _Mapping:
    spec: ConnectSpec
    #: What a null becomes in a NOT NULL column without a default (``convertValue``'s fallback).
    fallback: Any
    default: _DefaultReader | None = None


def _map_structure(structure: ColumnStructure, options: TypeOptions) -> _Mapping:
    """The mapping of a column: Debezium's type-name rules, then its JDBC-type rules."""
    name = structure.type_name.upper()
    for matcher, build in _BY_NAME:
        if matcher(name):
            return build(structure, options)
    build_jdbc = _BY_JDBC.get(structure.jdbc_type)
    if build_jdbc is None:
        raise ValueError(
            f"column {structure.name} has type {structure.type_name} (JDBC type "
            f"{structure.jdbc_type}), which Debezium's MySQL connector does not map"
        )
    return build_jdbc(structure, options)


_Builder = Callable[[ColumnStructure, TypeOptions], _Mapping]


# -- integers and floats -----------------------------------------------------------------------


def _integer(bits: int) -> _Builder:
    """int8/int16/int32/int64 of a Java integer type of ``bits``."""
    schema_type = f"int{bits}"

    def build(structure: ColumnStructure, options: TypeOptions) -> _Mapping:
        return _Mapping(
            ConnectSpec(schema_type, partial(_to_int, bits)),
            0,
            partial(_integer_default, bits),
        )

    return build


def _to_unsigned(bits: int, stored: int, value: Any) -> int | None:
    """An unsigned column's value: a negative one is the binlog's signed reading of the
    ``stored``-bit number (the library reads every integer signed when the TABLE_MAP's
    signedness is not applied, as with MySQL 8's default ``binlog_row_metadata=MINIMAL``),
    corrected as Debezium's ``MySqlUnsignedIntegerConverter`` corrects it."""
    if value is None:
        return None
    if type(value) is int and 0 <= value < 1 << stored:
        return value
    number = int(value)
    return _to_int(bits, number + (1 << stored) if number < 0 else number)


def _unsigned_integer(bits: int, *, stored: int) -> _Builder:
    """int16/int32/int64 of an unsigned TINYINT/SMALLINT/MEDIUMINT/INT of ``stored`` bits."""
    schema_type = f"int{bits}"

    def build(structure: ColumnStructure, options: TypeOptions) -> _Mapping:
        return _Mapping(
            ConnectSpec(schema_type, partial(_to_unsigned, bits, stored)),
            0,
            partial(_integer_default, bits),
        )

    return build


def _unsigned_bigint(structure: ColumnStructure, options: TypeOptions) -> _Mapping:
    if options.bigint_unsigned_handling_mode == "precise":
        spec = encoders.decimal_schema(_unsigned_bigint_precise, 0, precision=20)
        return _Mapping(spec, unscaled_bytes(0), _unsigned_bigint_default)
    # long mode: Java's long, so values beyond 2^63 - 1 wrap to negative numbers.
    return _integer(64)(structure, options)


def _float32(structure: ColumnStructure, options: TypeOptions) -> _Mapping:
    return _Mapping(ConnectSpec("float", _to_float32), 0.0, _float32_default)


def _float64(structure: ColumnStructure, options: TypeOptions) -> _Mapping:
    convert = _to_widened_float32 if _is_single_precision(structure) else _to_double
    return _Mapping(ConnectSpec("double", convert), 0.0, _double_default)


def _decimal(structure: ColumnStructure, options: TypeOptions) -> _Mapping:
    scale = structure.scale or 0
    mode = options.decimal_handling_mode
    reader = partial(_decimal_default, scale)
    if mode == "double":
        return _Mapping(ConnectSpec("double", _decimal_double), 0.0, _then(reader, _decimal_double))
    if mode == "string":
        return _Mapping(
            ConnectSpec("string", _decimal_string),
            _plain(0, scale),
            _then(reader, _decimal_string),
        )
    convert = partial(_decimal_precise, scale)
    spec = encoders.decimal_schema(convert, scale, precision=structure.length)
    return _Mapping(spec, unscaled_bytes(0), _then(reader, convert))


def _bit_type(structure: ColumnStructure, options: TypeOptions) -> _Mapping:
    length = structure.length if structure.length is not None else 1
    if length > 1:
        size = (length + 7) // 8
        convert = partial(_bits, size)
        return _Mapping(encoders.bits_schema(convert, length), "", _then(_bits_default, convert))
    return _Mapping(ConnectSpec("boolean", _bit), False, _boolean_default)


def _boolean(structure: ColumnStructure, options: TypeOptions) -> _Mapping:
    return _Mapping(ConnectSpec("boolean", _to_bool), False, _boolean_default)


# -- text, binary and semantic strings ----------------------------------------------------------


def _text(structure: ColumnStructure, options: TypeOptions) -> _Mapping:
    encoding = _python_encoding(structure.charset_name)
    return _Mapping(ConnectSpec("string", partial(_string, encoding)), "", _as_is)


def _binary_type(structure: ColumnStructure, options: TypeOptions) -> _Mapping:
    mode = options.binary_handling_mode
    encode = encoders.binary_encoder(mode)
    pad_to = structure.length if structure.jdbc_type == _Jdbc.BINARY else None
    spec = ConnectSpec(encoders.binary_schema_type(mode), partial(_binary, encode, pad_to))
    # A default is the UTF-8 bytes of its text, unpadded (Debezium's String branch).
    return _Mapping(spec, encode(b""), lambda text: encode(text.encode("utf-8")))


def _json_type(structure: ColumnStructure, options: TypeOptions) -> _Mapping:
    return _Mapping(named_schema("string", "io.debezium.data.Json", _json_text), "{}", _as_is)


def _enum_type(structure: ColumnStructure, options: TypeOptions) -> _Mapping:
    members = _members(structure.enum_values)
    spec = named_schema(
        "string", "io.debezium.data.Enum", partial(_enum, members), allowed=_allowed(members)
    )
    return _Mapping(spec, "", _as_is)


def _set_type(structure: ColumnStructure, options: TypeOptions) -> _Mapping:
    members = _members(structure.enum_values)
    convert = partial(_set, members, structure.optional)
    spec = named_schema("string", "io.debezium.data.EnumSet", convert, allowed=_allowed(members))
    return _Mapping(spec, "", _as_is)


def _uuid_type(structure: ColumnStructure, options: TypeOptions) -> _Mapping:
    # No default: Debezium's UUID converter takes bytes or a UUID, never the default's text.
    return _Mapping(named_schema("string", "io.debezium.data.Uuid", _uuid), "")


def _vector_type(structure: ColumnStructure, options: TypeOptions) -> _Mapping:
    spec = ConnectSpec(
        "array",
        _vector,
        name="io.debezium.data.FloatVector",
        version=1,
        items={"type": "float", "optional": False},
    )
    return _Mapping(spec, [])


def _geometry_type(structure: ColumnStructure, options: TypeOptions) -> _Mapping:
    fallback = encoders.geometry(_EMPTY_COLLECTION, None)
    return _Mapping(encoders.geometry_schema(_geometry), fallback)


def _point_type(structure: ColumnStructure, options: TypeOptions) -> _Mapping:
    return _Mapping(_point_spec(), None)


# -- dates and times ---------------------------------------------------------------------------


def _date_type(structure: ColumnStructure, options: TypeOptions) -> _Mapping:
    name = "org.apache.kafka.connect.data.Date"
    if options.time_precision_mode != "connect":
        name = "io.debezium.time.Date"
    convert = partial(_date_days, options.enable_time_adjuster)
    reader = partial(_date_default, structure.optional)
    return _Mapping(named_schema("int32", name, convert), 0, _then(reader, convert))


def _time_type(structure: ColumnStructure, options: TypeOptions) -> _Mapping:
    if options.time_precision_mode == "connect":
        spec = named_schema("int32", "org.apache.kafka.connect.data.Time", _time_millis)
    else:
        spec = named_schema("int64", "io.debezium.time.MicroTime", _time_micros)
    return _Mapping(spec, 0, _then(_time_default, spec.convert))


def _datetime_type(structure: ColumnStructure, options: TypeOptions) -> _Mapping:
    adjust = options.enable_time_adjuster
    precision = structure.length if structure.length is not None else -1
    if options.time_precision_mode == "connect":
        name, convert = "org.apache.kafka.connect.data.Timestamp", partial(_datetime_millis, adjust)
    elif precision <= 3:
        name, convert = "io.debezium.time.Timestamp", partial(_datetime_millis, adjust)
    else:
        name, convert = "io.debezium.time.MicroTimestamp", partial(_datetime_micros, adjust)
    reader = partial(_datetime_default, structure.optional)
    return _Mapping(named_schema("int64", name, convert), 0, _then(reader, convert))


def _timestamp_type(structure: ColumnStructure, options: TypeOptions) -> _Mapping:
    precision = max(structure.length or 0, 0)
    convert = partial(_zoned, _zone(options.connection_time_zone), precision)
    spec = named_schema("string", "io.debezium.time.ZonedTimestamp", convert)
    reader = partial(_timestamp_default, structure.optional, precision)
    return _Mapping(spec, _EPOCH_TIMESTAMP, reader)


def _year_type(structure: ColumnStructure, options: TypeOptions) -> _Mapping:
    spec = named_schema("int32", "io.debezium.time.Year", _year)
    # A default goes straight through adjustTemporal: DEFAULT '0000' is 2000 in Debezium.
    return _Mapping(spec, 0, lambda text: _java_year(int(text)))


def _name_is(*names: str) -> Callable[[str], bool]:
    return lambda type_name: _matches(type_name, *names)


def _is_float32(type_name: str) -> bool:
    return _matches(type_name, *_FLOAT_NAMES)


def _is_geometry(type_name: str) -> bool:
    return _matches(type_name, *_GEOMETRY_NAMES) or type_name in (
        "GEOMETRYCOLLECTION",
        "GEOMCOLLECTION",
    )


def _float_by_name(structure: ColumnStructure, options: TypeOptions) -> _Mapping:
    """FLOAT, FLOAT(p <= 24): FLOAT32; FLOAT(p > 24) and FLOAT(M,D): FLOAT64."""
    length = structure.length if structure.length is not None else -1
    if structure.scale is None and length <= _SINGLE_PRECISION_DIGITS:
        return _float32(structure, options)
    return _float64(structure, options)


#: Debezium's type-name rules, in its order (BinlogValueConverters and MariaDbValueConverters).
_BY_NAME: Final[tuple[tuple[Callable[[str], bool], _Builder], ...]] = (
    (_name_is("JSON"), _json_type),
    (_name_is("POINT"), _point_type),
    (_is_geometry, _geometry_type),
    (_name_is("YEAR"), _year_type),
    (_name_is("ENUM"), _enum_type),
    (_name_is("SET"), _set_type),
    (_name_is(*_UNSIGNED_TINYINT), _unsigned_integer(16, stored=8)),
    (_name_is(*_UNSIGNED_SMALLINT), _unsigned_integer(32, stored=16)),
    (_name_is(*_UNSIGNED_MEDIUMINT), _unsigned_integer(32, stored=24)),
    (_name_is(*_UNSIGNED_INT), _unsigned_integer(64, stored=32)),
    (_name_is(*_UNSIGNED_BIGINT), _unsigned_bigint),
    (_is_float32, _float_by_name),
    (_name_is("VECTOR"), _vector_type),
    (_name_is("UUID"), _uuid_type),
)

#: JdbcValueConverters' rules by JDBC type, for every other type name.
_BY_JDBC: Final[dict[int, _Builder]] = {
    _Jdbc.BIT: _bit_type,
    _Jdbc.BOOLEAN: _boolean,
    _Jdbc.TINYINT: _integer(8),
    _Jdbc.SMALLINT: _integer(16),
    _Jdbc.INTEGER: _integer(32),
    _Jdbc.BIGINT: _integer(64),
    _Jdbc.REAL: _float32,
    _Jdbc.FLOAT: _float64,
    _Jdbc.DOUBLE: _float64,
    _Jdbc.NUMERIC: _decimal,
    _Jdbc.DECIMAL: _decimal,
    _Jdbc.DATE: _date_type,
    _Jdbc.TIME: _time_type,
    _Jdbc.TIMESTAMP: _datetime_type,
    _Jdbc.TIMESTAMP_WITH_TIMEZONE: _timestamp_type,
    **dict.fromkeys(_STRING_TYPES, _text),
    **dict.fromkeys(_BINARY_TYPES, _binary_type),
}


# --------------------------------------------------------------------------------------------
# Defaults (BinlogDefaultValueConverter)
# --------------------------------------------------------------------------------------------

_CHARSET_INTRODUCER: Final = re.compile(r"_[A-Za-z0-9]+'(.*)'")
_JAVA_DOUBLE: Final = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_EPOCH_DATE_TEXT: Final = "1970-01-01"
_EPOCH_DATETIME_TEXT: Final = "1970-01-01 00:00:00"
_ZERO_DATE: Final = r"(?:\d{4}-\d{2}-00|\d{4}-00-\d{2}|0000-\d{2}-\d{2})"
_ZERO_DATE_TEXT: Final = re.compile(_ZERO_DATE)
_ZERO_DATETIME_TEXT: Final = re.compile(_ZERO_DATE + r" 00:00:00(?:\.\d{1,6})?")
#: ISO_LOCAL_DATE with an optional ISO_LOCAL_TIME after a space.
_DEFAULT_DATETIME: Final = re.compile(
    r"(\d{4,})-(\d\d)-(\d\d)(?: (\d\d):(\d\d)(?::(\d\d)(?:\.(\d{1,9}))?)?)?"
)
#: What ``cleanTimestamp`` + ``Timestamp.valueOf`` accept: any separators between the fields.
_LENIENT_TIMESTAMP: Final = re.compile(
    r"(\d+)\D+(\d+)\D+(\d+)(?:\D+(\d+)(?:\D+(\d+)(?:\D+(\d+)(?:\.(\d+))?)?)?)?"
)
#: BinlogDefaultValueConverter's TIMESTAMP_PATTERN: a TIME default may carry a date.
_DATE_AND_TIME: Final = re.compile(r"[0-9]*-[0-9]*-[0-9]* ([0-9]*:[0-9]*:[0-9]*(?:\.[0-9]*)?)")
_MAX_MONTH: Final = 12
_MAX_DAY: Final = 31


def _then(reader: Callable[[str], Any], convert: Converter) -> _DefaultReader:
    """Read a default, then convert it like a value (None stays None: no default)."""

    def read(text: str) -> Any:
        value = reader(text)
        return None if value is None else convert(value)

    return read


def _as_is(text: str) -> str:
    return text


def _java_double(text: str) -> float:
    """``Double.parseDouble`` of a plain decimal number (Python's float() takes more)."""
    if _JAVA_DOUBLE.fullmatch(text) is None:
        raise ValueError(f"{text!r} is not a number")
    return float(text)


def _java_round(value: float) -> int:
    """``Math.round(double)``: half up, NaN 0, clamped to the long range."""
    if math.isnan(value):
        return 0
    if math.isinf(value):
        return (1 << 63) - 1 if value > 0 else -(1 << 63)
    return max(-(1 << 63), min((1 << 63) - 1, math.floor(value + 0.5)))


def _integer_default(bits: int, text: str) -> int:
    """Debezium rounds a decimal default through a double (``Math.round(parseDouble)``)."""
    return _wrap(_java_round(_java_double(text)), bits)


def _unsigned_bigint_default(text: str) -> str:
    value = Decimal(text)
    if value != value.to_integral_value():
        raise ValueError(f"BIGINT UNSIGNED default {text!r} has a fraction")
    converted = _unsigned_bigint_precise(int(value))
    assert converted is not None
    return converted


def _float32_default(text: str) -> float:
    return _shortest_single(_java_double(text))


def _double_default(text: str) -> float:
    """A FLOAT64 default stays the double parsed (Debezium does not narrow it, even for a
    FLOAT(M,D) whose values are single precision)."""
    return _java_double(text)


def _decimal_default(scale: int, text: str) -> Decimal:
    """``new BigDecimal(text).setScale(scale, HALF_UP)``."""
    return Decimal(text).quantize(Decimal(1).scaleb(-scale), rounding=ROUND_HALF_UP)


def _boolean_default(text: str) -> bool:
    """``Integer.parseInt(text) != 0``, else ``Boolean.parseBoolean(text)``."""
    try:
        return int(text) != 0
    except ValueError:
        return text.lower() == "true"


def _bits_default(text: str) -> int:
    if re.fullmatch(r"[01]+", text) is None:
        raise ValueError(f"{text!r} is not a bit string")
    return int(text, 2)


def _date_default(optional: bool, text: str) -> date | str | None:
    """A zero date is no default in a nullable column, the epoch otherwise; so is text that
    does not parse (CURDATE())."""
    zero = bool(_ZERO_DATE_TEXT.fullmatch(text) or _ZERO_DATETIME_TEXT.fullmatch(text))
    if zero or text == "0":
        return None if optional else _EPOCH_DATE_TEXT
    found = _DEFAULT_DATETIME.fullmatch(text)
    try:
        if found is None:
            raise ValueError(text)
        return date(int(found.group(1)), int(found.group(2)), int(found.group(3)))
    except ValueError:
        return None if optional else _EPOCH_DATE_TEXT


def _datetime_default(optional: bool, text: str) -> datetime | str | None:
    """A zero DATETIME is no default in a nullable column, the epoch otherwise; so is text
    that does not parse. CURRENT_TIMESTAMP was recorded as the epoch itself."""
    if _ZERO_DATETIME_TEXT.fullmatch(text) or text == "0":
        return None if optional else _EPOCH_DATETIME_TEXT
    found = _DEFAULT_DATETIME.fullmatch(text)
    try:
        if found is None:
            raise ValueError(text)
        year, month, day, hour, minute, second, fraction = found.groups()
        micros = int((fraction or "").ljust(9, "0")[:6])
        clock = (int(hour or 0), int(minute or 0), int(second or 0), micros)
        return datetime(int(year), int(month), int(day), *clock)
    except ValueError:
        return None if optional else _EPOCH_DATETIME_TEXT


def _timestamp_default(optional: bool, precision: int, text: str) -> str | None:
    """The epoch (CURRENT_TIMESTAMP's record) or a zero value: no default when nullable, else
    ``1970-01-01T00:00:00Z`` (a java.sql.Timestamp, so no padded fraction). Other text is a
    wall time in the JVM's zone, taken to be UTC."""
    zero = _ZERO_DATETIME_TEXT.fullmatch(text) is not None
    if zero or text in ("0", _EPOCH_DATETIME_TEXT):
        return None if optional else _EPOCH_TIMESTAMP
    found = _LENIENT_TIMESTAMP.fullmatch(text)
    if found is None:
        raise ValueError(f"cannot parse the TIMESTAMP default {text!r}")
    year, month, day, hour, minute, second, fraction = found.groups()
    if not (1 <= int(month) <= _MAX_MONTH and 1 <= int(day) <= _MAX_DAY):
        raise ValueError(f"cannot parse the date of the TIMESTAMP default {text!r}")
    clock = _clock(hour or "0", minute or "0", second or "0", (fraction or "")[:6] or None)
    micros = _epoch_micros((int(year), int(month), int(day), clock))
    return encoders.zoned_timestamp(micros, precision=precision)


def _time_default(text: str) -> str:
    """A TIME default, its date (if any) dropped."""
    found = _DATE_AND_TIME.fullmatch(text)
    return found.group(1) if found else text


def _default_text(structure: ColumnStructure, text: str) -> str:
    """The text BinlogDefaultValueConverter reads: trimmed for number and temporal types,
    a charset introducer (``_utf8mb4'x'``) dropped, ``true``/``false`` as 1/0 for numbers."""
    jdbc = structure.jdbc_type
    if jdbc in _TRIMMED_DEFAULTS or jdbc in _NUMBER_TYPES:
        text = text.strip()
    introduced = _CHARSET_INTRODUCER.fullmatch(text)
    if introduced is not None:
        text = introduced.group(1)
    if jdbc in _NUMBER_TYPES and text.lower() in ("true", "false"):
        if jdbc == _Jdbc.BIT and (structure.length or 1) > 1:
            raise ValueError("a boolean is no default of a multi-bit BIT column")
        return "1" if text.lower() == "true" else "0"
    return text


def _default_value(structure: ColumnStructure, mapping: _Mapping) -> Any:
    """The column's default as its field carries it, or None (no default, or one Debezium
    fails to convert; it then logs a warning and leaves the default out)."""
    text = structure.default_value_expression
    if text is None or mapping.default is None:
        return None
    try:
        value = mapping.default(_default_text(structure, text))
    except (ValueError, TypeError, ArithmeticError):
        return None
    # Kafka Connect cannot carry a struct default (KAFKA-12694).
    return None if isinstance(value, dict) else value


# --------------------------------------------------------------------------------------------
# Columns and tables
# --------------------------------------------------------------------------------------------


def column(structure: ColumnStructure, options: TypeOptions) -> Column:
    """The captured column of ``structure``: its Connect schema (with the column default) and
    the converter of its binlog and snapshot values. Raises ValueError for a type Debezium's
    MySQL connector does not map."""
    mapping = _map_structure(structure, options)
    default = _default_value(structure, mapping)
    schema = mapping.spec.schema(structure.optional)
    if default is not None:
        schema["default"] = default
    convert = encoders.with_null_fill(
        mapping.spec.convert,
        optional=structure.optional,
        default=default,
        fallback=mapping.fallback,
        replace=options.replace_null_with_default,
    )
    return Column(structure.name, structure.type_name, schema, convert, structure.optional)


def table_schema(table: TableStructure, options: TypeOptions) -> TableSchema:
    """The event schema of ``table``: its columns in order, keyed by its primary key."""
    columns = tuple(column(structure, options) for structure in table.columns)
    return TableSchema(table.id, columns, table.primary_key)
