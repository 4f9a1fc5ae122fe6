"""Debezium's and Kafka Connect's value encodings and schema builders, for every connector.

One purpose: turn a value already taken apart by a connector (an unscaled integer and a scale,
a civil date, microseconds of the day, epoch microseconds, WKB bytes and an SRID, raw bytes...)
into the JSON-ready form ``JsonConverter`` writes for the Connect schema Debezium gives it, and
build those schemas. Parsing a database's own representation (PostgreSQL's text output, a
MySQL or Db2 driver's Python values) stays in the connector; a few helpers at the end take
plain Python values (``Decimal``, ``date``, ``time``, ``datetime``, ``timedelta``) apart.

Plain Python only: no I/O and no third-party imports, so any connector (and the engine or the
pipeline) may import it.
"""

from __future__ import annotations

import base64
import binascii
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from decimal import ROUND_DOWN, Decimal
from typing import Any, Final, Literal, NamedTuple

from cdcflow.capture.spi import ConnectSchema

#: Converts one column value, as the connector receives it (None for NULL), to its event form.
ValueConverter = Callable[[Any], Any]

# --------------------------------------------------------------------------------------------
# Connect schemas
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ConnectSpec:
    """A Connect schema minus its optionality, plus the converter that fills it."""

    type: str
    convert: ValueConverter
    name: str | None = None
    version: int | None = None
    doc: str | None = None
    parameters: Mapping[str, str] | None = None
    fields: tuple[ConnectSchema, ...] | None = None
    items: ConnectSchema | None = None
    keys: ConnectSchema | None = None
    values: ConnectSchema | None = None
    #: Debezium builds some schemas optional whatever the column's nullability.
    always_optional: bool = False

    def schema(self, optional: bool) -> ConnectSchema:
        """The schema in ``JsonConverter``'s key order: type, nested, optional, name, ..."""
        out: ConnectSchema = {"type": self.type}
        if self.items is not None:
            out["items"] = self.items
        if self.keys is not None:
            out["keys"] = self.keys
        if self.values is not None:
            out["values"] = self.values
        if self.fields is not None:
            out["fields"] = [dict(f) for f in self.fields]
        out["optional"] = optional or self.always_optional
        if self.name is not None:
            out["name"] = self.name
        if self.version is not None:
            out["version"] = self.version
        if self.doc is not None:
            out["doc"] = self.doc
        if self.parameters is not None:
            out["parameters"] = dict(self.parameters)
        return out


def connect_field(name: str, type_: str, optional: bool) -> ConnectSchema:
    """A primitive field of a Connect struct schema, in ``JsonConverter``'s key order."""
    return {"type": type_, "optional": optional, "field": name}


def named_schema(type_: str, name: str, convert: ValueConverter, **params: str) -> ConnectSpec:
    """A version-1 Connect logical type (``io.debezium.time.Date``...), with its parameters."""
    return ConnectSpec(type_, convert, name=name, version=1, parameters=params or None)


def decimal_schema(convert: ValueConverter, scale: int, *, precision: int | None) -> ConnectSpec:
    """``org.apache.kafka.connect.data.Decimal`` of ``scale`` (and precision, when declared)."""
    params = {"scale": str(scale)}
    if precision is not None:
        params["connect.decimal.precision"] = str(precision)
    return ConnectSpec(
        "bytes", convert, name="org.apache.kafka.connect.data.Decimal", version=1, parameters=params
    )


def variable_scale_decimal_schema(convert: ValueConverter) -> ConnectSpec:
    """``io.debezium.data.VariableScaleDecimal``: struct ``{scale: int32, value: bytes}``."""
    return ConnectSpec(
        "struct",
        convert,
        name="io.debezium.data.VariableScaleDecimal",
        version=1,
        doc="Variable scaled decimal",
        fields=(connect_field("scale", "int32", False), connect_field("value", "bytes", False)),
    )


def bits_schema(convert: ValueConverter, length: int) -> ConnectSpec:
    """``io.debezium.data.Bits`` of ``length`` bits (bytes, with a ``length`` parameter)."""
    return named_schema("bytes", "io.debezium.data.Bits", convert, length=str(length))


def point_schema(convert: ValueConverter) -> ConnectSpec:
    """``io.debezium.data.geometry.Point``: struct ``{x, y, wkb, srid}``."""
    return ConnectSpec(
        "struct",
        convert,
        name="io.debezium.data.geometry.Point",
        version=1,
        doc="Geometry (POINT)",
        fields=(
            connect_field("x", "double", False),
            connect_field("y", "double", False),
            connect_field("wkb", "bytes", True),
            connect_field("srid", "int32", True),
        ),
    )


_EXTENSIONS_FIELD: Final[ConnectSchema] = {
    "type": "map",
    "keys": {"type": "string", "optional": False},
    "values": {"type": "string", "optional": False},
    "optional": True,
    "field": "extensions",
}


def geometry_schema(convert: ValueConverter) -> ConnectSpec:
    """Debezium 3.x's ``io.debezium.data.geometry.Geometry`` (version 2: ``{wkb, srid,
    extensions}``), always optional."""
    return ConnectSpec(
        "struct",
        convert,
        name="io.debezium.data.geometry.Geometry",
        version=2,
        doc="Geometry",
        fields=(
            connect_field("wkb", "bytes", False),
            connect_field("srid", "int32", True),
            _EXTENSIONS_FIELD,
        ),
        always_optional=True,
    )


def geography_schema(convert: ValueConverter) -> ConnectSpec:
    """``io.debezium.data.geometry.Geography`` (version 1): struct ``{wkb, srid}``."""
    return ConnectSpec(
        "struct",
        convert,
        name="io.debezium.data.geometry.Geography",
        version=1,
        doc="Geography",
        fields=(connect_field("wkb", "bytes", False), connect_field("srid", "int32", True)),
    )


# --------------------------------------------------------------------------------------------
# Binary data
# --------------------------------------------------------------------------------------------

#: Debezium's ``binary.handling.mode`` values.
BinaryHandlingMode = Literal["bytes", "base64", "base64-url-safe", "hex"]
#: Turns raw bytes into their JSON form per binary.handling.mode.
BinaryEncoder = Callable[[bytes], str]


def base64_text(data: bytes) -> str:
    """Standard base64 with padding: how ``JsonConverter`` writes a Connect ``BYTES`` value."""
    # binascii directly: base64.b64encode is a Python function around this very call
    return binascii.b2a_base64(data, newline=False).decode("ascii")


def _base64_url_safe(data: bytes) -> str:
    """``Base64.getUrlEncoder()``: the URL-safe alphabet, padding kept."""
    return base64.urlsafe_b64encode(data).decode("ascii")


_BINARY_ENCODERS: Final[dict[str, BinaryEncoder]] = {
    "bytes": base64_text,  # JsonConverter writes BYTES as base64
    "base64": base64_text,
    "base64-url-safe": _base64_url_safe,
    "hex": bytes.hex,  # lowercase, as Debezium's HexConverter writes
}


def binary_encoder(mode: BinaryHandlingMode) -> BinaryEncoder:
    """The encoder of raw bytes for a ``binary.handling.mode`` (Connect ``BYTES`` or string)."""
    return _BINARY_ENCODERS[mode]


def binary_schema_type(mode: BinaryHandlingMode) -> str:
    """The Connect type of binary data: ``bytes`` in ``bytes`` mode, else ``string``."""
    return "bytes" if mode == "bytes" else "string"


# --------------------------------------------------------------------------------------------
# Decimals
# --------------------------------------------------------------------------------------------


def rescale(unscaled: int, scale: int, target: int) -> int:
    """Change the scale without rounding (Java's ``setScale(n)`` throws if it would round)."""
    factor: int = 10 ** abs(target - scale)
    if scale <= target:
        return unscaled * factor
    quotient, remainder = divmod(unscaled, factor)
    if remainder:
        raise ValueError(f"{unscaled}E-{scale} does not fit scale {target} without rounding")
    return quotient


def unscaled_bytes(unscaled: int) -> str:
    """Base64 of Java's ``BigInteger.toByteArray()``: minimal big-endian two's complement,
    the payload of ``org.apache.kafka.connect.data.Decimal``."""
    bits = unscaled.bit_length() if unscaled >= 0 else (~unscaled).bit_length()
    return base64_text(unscaled.to_bytes(bits // 8 + 1, "big", signed=True))


def decimal_bytes(unscaled: int, scale: int, *, target_scale: int) -> str:
    """``org.apache.kafka.connect.data.Decimal`` of ``target_scale``: ``unscaled``E-``scale``
    rescaled without rounding, as the base64 of its unscaled two's-complement bytes."""
    if scale != target_scale:
        unscaled = rescale(unscaled, scale, target_scale)
    return unscaled_bytes(unscaled)


def strip_zeros(unscaled: int, scale: int) -> tuple[int, int]:
    """``BigDecimal.stripTrailingZeros()`` floored at scale 0, as VariableScaleDecimal does."""
    if unscaled == 0:
        return 0, 0
    while scale > 0 and unscaled % 10 == 0:
        unscaled //= 10
        scale -= 1
    return unscaled, scale


def variable_scale_decimal(unscaled: int, scale: int) -> dict[str, Any]:
    """``io.debezium.data.VariableScaleDecimal``: ``{scale, value}``, trailing zeros stripped."""
    unscaled, scale = strip_zeros(unscaled, scale)
    return {"scale": scale, "value": unscaled_bytes(unscaled)}


def decimal_string(unscaled: int, scale: int, *, target_scale: int) -> str:
    """``decimal.handling.mode=string``: ``BigDecimal.toString()`` at ``target_scale`` (Python's
    Decimal follows the same scientific-string rules)."""
    if scale != target_scale:
        unscaled = rescale(unscaled, scale, target_scale)
    return str(Decimal(f"{unscaled}E{-target_scale}"))


# --------------------------------------------------------------------------------------------
# Bits
# --------------------------------------------------------------------------------------------


def bits(value: int) -> str:
    """``io.debezium.data.Bits``: bit i of ``value`` as bit i of little-endian bytes
    (``BitSet.toByteArray``), as many bytes as the highest set bit needs, in base64."""
    return base64_text(value.to_bytes((value.bit_length() + 7) // 8, "little"))


def bit_string(text: str) -> str:
    """``io.debezium.data.Bits`` of a bit string written most significant bit first."""
    return bits(int(text, 2) if text else 0)


# --------------------------------------------------------------------------------------------
# Dates and times
# --------------------------------------------------------------------------------------------

MICROS_PER_SECOND: Final = 1_000_000
MICROS_PER_DAY: Final = 86_400_000_000


def epoch_days(year: int, month: int, day: int) -> int:
    """``io.debezium.time.Date`` (and Connect ``Date``): days since 1970-01-01 in the proleptic
    Gregorian calendar, astronomical years (1 BC is year 0)."""
    year -= month <= 2
    era = year // 400
    year_of_era = year - era * 400
    day_of_year = (153 * ((month + 9) % 12) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146097 + day_of_era - 719468


def civil_from_days(days: int) -> tuple[int, int, int]:
    """Inverse of :func:`epoch_days`: (year, month, day)."""
    days += 719468
    era = days // 146097
    day_of_era = days - era * 146097
    year_of_era = (
        day_of_era - day_of_era // 1460 + day_of_era // 36524 - day_of_era // 146096
    ) // 365
    day_of_year = day_of_era - (365 * year_of_era + year_of_era // 4 - year_of_era // 100)
    shifted_month = (5 * day_of_year + 2) // 153
    day = day_of_year - (153 * shifted_month + 2) // 5 + 1
    month = shifted_month + 3 if shifted_month < 10 else shifted_month - 9
    return year_of_era + era * 400 + (month <= 2), month, day


def epoch_micros(days: int, micros_of_day: int) -> int:
    """``io.debezium.time.MicroTimestamp``: microseconds since the epoch of a day and a time."""
    return days * MICROS_PER_DAY + micros_of_day


def millis(micros: int) -> int:
    """Microseconds to milliseconds, floored like ``Instant.toEpochMilli``: the value of
    ``io.debezium.time.Timestamp``/``Time`` and Connect ``Timestamp``/``Time``."""
    return micros // 1000


def _fraction(micros: int) -> str:
    """Java's ISO_LOCAL_TIME fraction: trailing zeros trimmed, nothing at all when zero."""
    return "." + f"{micros:06d}".rstrip("0") if micros else ""


def _java_year(year: int) -> str:
    """ISO_LOCAL_DATE's year: four digits, '+' above 9999, '-' below year 0."""
    if year > 9999:
        return f"+{year}"
    return f"-{-year:04d}" if year < 0 else f"{year:04d}"


def padded_fraction(digits: str, precision: int) -> str:
    """``.`` and ``digits`` padded (or cut) to ``precision`` places; nothing at precision 0."""
    return "." + digits.ljust(precision, "0")[:precision] if precision else ""


def zoned_timestamp(utc_micros: int, *, precision: int) -> str:
    """``io.debezium.time.ZonedTimestamp``: ISO-8601 in UTC with the fraction padded to the
    column's precision, as Debezium 3.x writes it (``2018-06-20T15:13:16.900Z`` at precision
    3), years as ``ISO_LOCAL_DATE`` writes them (``0000``, ``-0001``, ``+10000``)."""
    days, micros = divmod(utc_micros, MICROS_PER_DAY)
    year, month, day = civil_from_days(days)
    seconds, fraction = divmod(micros, MICROS_PER_SECOND)
    minutes, second = divmod(seconds, 60)
    hour, minute = divmod(minutes, 60)
    clock = f"{hour:02d}:{minute:02d}:{second:02d}{padded_fraction(f'{fraction:06d}', precision)}"
    return f"{_java_year(year)}-{month:02d}-{day:02d}T{clock}Z"


def _clock(micros: int) -> str:
    seconds, fraction = divmod(micros, MICROS_PER_SECOND)
    minutes, second = divmod(seconds, 60)
    hour, minute = divmod(minutes, 60)
    return f"{hour:02d}:{minute:02d}:{second:02d}{_fraction(fraction)}"


def zoned_time(micros_of_day: int, offset_seconds: int) -> str:
    """``io.debezium.time.ZonedTime``: the time shifted to UTC, e.g. 10:00 at +05:30 ->
    ``04:30:00Z``, the fraction as ``ISO_LOCAL_TIME`` trims it."""
    micros = micros_of_day - offset_seconds * MICROS_PER_SECOND
    if micros == MICROS_PER_DAY:
        return "24:00:00Z"  # PostgreSQL's end-of-day boundary, kept as newer Debezium does
    return _clock(micros % MICROS_PER_DAY) + "Z"


# --------------------------------------------------------------------------------------------
# Durations
# --------------------------------------------------------------------------------------------

#: Debezium's MicroDuration approximation of a month.
_DAYS_PER_MONTH_AVG: Final = 365.25 / 12.0


class DurationFields(NamedTuple):
    """An interval's fields; ``seconds`` is a double, as pgjdbc's ``PGInterval`` holds it."""

    years: int
    months: int
    days: int
    hours: int
    minutes: int
    seconds: float


def micro_duration(fields: DurationFields) -> int:
    """``io.debezium.time.MicroDuration`` (``durationMicros``): double arithmetic with a month
    of 365.25/12 days, then a truncating cast, as in Java."""
    years, months, days, hours, minutes, seconds = fields
    number_of_days = (years * 12 + months) * _DAYS_PER_MONTH_AVG + days
    number_of_seconds = ((number_of_days * 24 + hours) * 60 + minutes) * 60 + seconds
    return int(number_of_seconds * 1e6)


def interval_string(fields: DurationFields) -> str:
    """``io.debezium.time.Interval`` (``Interval.toIsoString``): every field present, e.g.
    ``P1Y2M3DT4H5M6.78S``."""
    years, months, days, hours, minutes, seconds = fields
    return f"P{years}Y{months}M{days}DT{hours}H{minutes}M{_java_seconds(seconds)}S"


def _java_seconds(seconds: float) -> str:
    """``BigDecimal.valueOf(d)`` cut to 6 places, ``stripTrailingZeros().toPlainString()``."""
    value = Decimal(repr(seconds))
    exponent = value.as_tuple().exponent
    if isinstance(exponent, int) and exponent < -6:
        value = value.quantize(Decimal("0.000001"), rounding=ROUND_DOWN)
    return "0" if value == 0 else format(value.normalize(), "f")


# --------------------------------------------------------------------------------------------
# Geometry
# --------------------------------------------------------------------------------------------

_WKB_POINT_HEADER: Final = b"\x01\x01\x00\x00\x00"


def point(x: float, y: float) -> dict[str, Any]:
    """``io.debezium.data.geometry.Point``: x, y, the little-endian WKB of the point, no SRID."""
    wkb = _WKB_POINT_HEADER + struct.pack("<dd", x, y)
    return {"x": x, "y": y, "wkb": base64_text(wkb), "srid": None}


def geometry(
    wkb: bytes, srid: int | None, *, extensions: dict[str, str] | None = None
) -> dict[str, Any]:
    """``io.debezium.data.geometry.Geometry`` (version 2): ``{wkb, srid, extensions}``."""
    return {"wkb": base64_text(wkb), "srid": srid, "extensions": extensions}


def geography(wkb: bytes, srid: int | None) -> dict[str, Any]:
    """``io.debezium.data.geometry.Geography``: ``{wkb, srid}``."""
    return {"wkb": base64_text(wkb), "srid": srid}


# --------------------------------------------------------------------------------------------
# Python values taken apart (for connectors whose driver returns them)
# --------------------------------------------------------------------------------------------


def decimal_parts(value: Decimal) -> tuple[int, int]:
    """A finite ``Decimal`` as (unscaled, scale), scale >= 0: ``Decimal('-1.5')`` -> (-15, 1)."""
    sign, digits, exponent = value.as_tuple()
    if not isinstance(exponent, int):
        raise ValueError(f"{value} has no Connect Decimal form")
    unscaled = int("".join(map(str, digits)) or "0")
    if exponent > 0:
        unscaled, exponent = unscaled * 10**exponent, 0
    return -unscaled if sign else unscaled, -exponent


def date_epoch_days(value: date) -> int:
    """``io.debezium.time.Date`` of a ``date``."""
    return epoch_days(value.year, value.month, value.day)


def time_micros(value: time) -> int:
    """Microseconds past midnight of a ``time`` (its offset, if any, ignored)."""
    seconds = (value.hour * 60 + value.minute) * 60 + value.second
    return seconds * MICROS_PER_SECOND + value.microsecond


def timedelta_micros(value: timedelta) -> int:
    """Microseconds of a ``timedelta`` (negative or over a day, as MySQL's TIME can be)."""
    seconds = value.days * 86_400 + value.seconds
    return seconds * MICROS_PER_SECOND + value.microseconds


def datetime_epoch_micros(value: datetime) -> int:
    """Microseconds since the epoch of a ``datetime``: a naive one read as UTC, as Debezium
    reads a zone-less timestamp; an aware one shifted to UTC."""
    days = epoch_days(value.year, value.month, value.day)
    micros = epoch_micros(days, time_micros(value.time()))
    offset = value.utcoffset()
    return micros if offset is None else micros - timedelta_micros(offset)


# --------------------------------------------------------------------------------------------
# Nulls
# --------------------------------------------------------------------------------------------


def with_null_fill(
    convert: Callable[[Any], Any], *, optional: bool, default: Any, fallback: Any, replace: bool
) -> Callable[[Any], Any]:
    """Debezium's ``convertValue`` null rule around ``convert``: a NOT NULL column's null is
    its default, else the type's zero value (``fallback``); a nullable column's null is its
    default when JsonConverter replaces nulls (``replace.null.with.default``)."""
    if optional:
        fill = default if replace else None
    else:
        fill = default if default is not None else fallback
    if fill is None:
        return convert

    def or_fill(value: Any) -> Any:
        converted = convert(value)
        return fill if converted is None else converted

    return or_fill
