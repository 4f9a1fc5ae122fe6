"""Row images read straight from a rows event's bytes, as python-mysql-replication would.

The library's generic per-value dispatch costs more than everything else the connector does
per event. A :class:`_RowDecoder` compiled once per table structure (one reader function per
column, chosen from the TABLE_MAP column types) reads the rows event's bytes instead and yields
the values the library would. Column types it does not know, partial row images
(``binlog_row_image`` other than FULL) and MySQL's partial JSON updates are left to the library
(:meth:`RowDecoders.images` answers None). One of the compiled hot modules.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import MAX_EMAX, MAX_PREC, MIN_EMIN, Context, Decimal
from typing import Any, Final

from pymysqlreplication.constants import BINLOG, FIELD_TYPE
from pymysqlreplication.row_event import RowsEvent

log = logging.getLogger(__name__)

#: Reads the value at an offset of a rows event's bytes: the value and the offset after it.
_Reader = Callable[[bytes, int], tuple[Any, int]]

#: Column attributes besides the type that decide how a value is read.
_LAYOUT: Final = (
    "unsigned",
    "max_length",
    "length_size",
    "precision",
    "decimals",
    "fsp",
    "bits",
    "bytes",
    "size",
    "character_set_name",
)
_INTEGERS: Final = {
    FIELD_TYPE.TINY: "b",
    FIELD_TYPE.SHORT: "h",
    FIELD_TYPE.LONG: "i",
    FIELD_TYPE.LONGLONG: "q",
}
#: Bytes of a packed DECIMAL group, by its digit count (nine digits take four bytes).
_DIGIT_BYTES: Final = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)
_EPOCH: Final = datetime(1970, 1, 1)
_MICROS: Final = 1_000_000
#: Decimal arithmetic that never rounds (a DECIMAL has up to 65 digits).
_EXACT: Final = Context(prec=MAX_PREC, Emax=MAX_EMAX, Emin=MIN_EMIN)


class RowDecoders:
    """The compiled decoder of each table structure seen (a TABLE_MAP event precedes every
    transaction's rows; the structure behind it rarely changes)."""

    def __init__(self) -> None:
        self._compiled: dict[tuple[Any, ...], _RowDecoder | None] = {}

    def images(self, event: RowsEvent, *, per_row: int) -> list[tuple[Any, ...]] | None:
        """Every row image of ``event`` in order (``per_row`` of them a row), or None when the
        library must decode the event."""
        columns = event.columns
        if event.event_type == BINLOG.PARTIAL_UPDATE_ROWS_EVENT or not event.complete:
            return None
        if len(columns) != event.number_of_columns:
            return None
        key = tuple(
            (
                column.type,
                *(getattr(column, name, None) for name in _LAYOUT),
                tuple(getattr(column, "enum_values", None) or ()),
                tuple(getattr(column, "set_values", None) or ()),
            )
            for column in columns
        )
        if key not in self._compiled:
            self._compiled[key] = _compile(columns)
        decoder = self._compiled[key]
        if decoder is None or event.columns_present_bitmap != decoder.every_column:
            return None
        if per_row == 2 and event.columns_present_bitmap2 != decoder.every_column:
            return None
        try:
            unread = _unread(event)
            return None if unread is None else decoder.images(*unread)
        except Exception:  # the library decodes it again, and raises its own error if any
            log.debug("compiled row decoding failed; the library decodes the event", exc_info=True)
            return None


def _unread(event: RowsEvent) -> tuple[bytes, int, int] | None:
    """The packet's bytes and the span of the rows the event has not read yet (the library
    reads an event's header at once, its rows on first use); None when bytes were pushed back
    into the packet wrapper's own buffer."""
    wrapper = event.packet
    if getattr(wrapper, "_BinLogPacketWrapper__data_buffer", b"?"):
        return None
    packet = wrapper.packet  # PyMySQL's MysqlPacket: the whole event payload
    start: int = packet._position
    return packet._data, start, start + event.event_size - wrapper.read_bytes


@dataclass(frozen=True, slots=True)
class _RowDecoder:
    """Reads a table's full row images: a null bitmap, then each non-null column's value."""

    readers: tuple[_Reader, ...]
    every_column: bytes
    """The columns-present bitmap of a full row image (as long as a null bitmap)."""

    def images(self, data: bytes, pos: int, end: int) -> list[tuple[Any, ...]]:
        """Every row image in ``data[pos:end]``."""
        readers, null_bytes = self.readers, len(self.every_column)
        images: list[tuple[Any, ...]] = []
        while pos < end:
            nulls = int.from_bytes(data[pos : pos + null_bytes], "little")
            pos += null_bytes
            values: list[Any] = []
            if nulls:
                for index, read in enumerate(readers):
                    if nulls >> index & 1:
                        values.append(None)
                    else:
                        value, pos = read(data, pos)
                        values.append(value)
            else:
                for read in readers:
                    value, pos = read(data, pos)
                    values.append(value)
            images.append(tuple(values))
        if pos != end:
            raise ValueError(f"the rows end at {pos}, the event at {end}")
        return images


def _compile(columns: list[Any]) -> _RowDecoder | None:
    readers = []
    for column in columns:
        try:
            reader = _reader(column)
        except AttributeError:  # metadata the library did not read: it decodes the table
            reader = None
        if reader is None:
            return None
        readers.append(reader)
    size = (len(columns) + 7) // 8
    return _RowDecoder(tuple(readers), ((1 << len(columns)) - 1).to_bytes(size, "little"))


def _reader(column: Any) -> _Reader | None:
    """How a column of the library's TABLE_MAP reads, yielding what the library's
    ``RowsEvent`` yields for it; None for a type left to the library."""
    kind = column.type
    if kind in _INTEGERS:
        code = _INTEGERS[kind]
        return _fixed("<" + (code.upper() if column.unsigned else code))
    if kind == FIELD_TYPE.INT24:
        return _int24(signed=not column.unsigned)
    if kind == FIELD_TYPE.FLOAT:
        return _fixed("<f")
    if kind == FIELD_TYPE.DOUBLE:
        return _fixed("<d")
    if kind == FIELD_TYPE.YEAR:
        return _year
    if kind in (FIELD_TYPE.VARCHAR, FIELD_TYPE.STRING):
        return _string(2 if column.max_length > 255 else 1, _codec(column.character_set_name))
    if kind == FIELD_TYPE.BLOB:
        return _string(column.length_size, _codec(column.character_set_name))
    if kind == FIELD_TYPE.GEOMETRY:
        return _string(column.length_size, None)
    if kind == FIELD_TYPE.NEWDECIMAL:
        return _decimal(column.precision, column.decimals)
    if kind == FIELD_TYPE.DATE:
        return _date
    if kind in _TEMPORAL and 0 <= column.fsp <= 6:
        return _TEMPORAL[kind](column.fsp)
    if kind == FIELD_TYPE.ENUM:
        return _enum(column.size, column.enum_values)
    if kind == FIELD_TYPE.SET:
        return _set(column.size, column.set_values)
    if kind == FIELD_TYPE.BIT:
        return _bit(column.bits, column.bytes)
    return None  # MySQL's binary JSON, the pre-5.6 temporal types, anything newer


def _fixed(layout: str) -> _Reader:
    unpack_from, size = struct.Struct(layout).unpack_from, struct.calcsize(layout)

    def read(data: bytes, pos: int) -> tuple[Any, int]:
        return unpack_from(data, pos)[0], pos + size

    return read


def _int24(*, signed: bool) -> _Reader:
    def read(data: bytes, pos: int) -> tuple[Any, int]:
        return int.from_bytes(data[pos : pos + 3], "little", signed=signed), pos + 3

    return read


def _year(data: bytes, pos: int) -> tuple[Any, int]:
    return data[pos] + 1900, pos + 1


def _codec(charset: str | None) -> str | None:
    """The codec the library decodes a string column with; None: it leaves the bytes as they
    are (``binary``, and any charset Python has no codec for). An empty value of such a
    column is ``b""`` here where the library's failing decode gives ``""``; the converters
    read both as the empty byte string."""
    if charset is None:
        return "utf-8"
    encoding: str = RowsEvent.charset_to_encoding(charset)
    try:
        "".encode(encoding)
    except LookupError:
        return None
    return encoding


def _string(length_size: int, encoding: str | None) -> _Reader:
    """A length-prefixed string: text decoded strictly (as the library does) or raw bytes."""

    def read(data: bytes, pos: int) -> tuple[Any, int]:
        start = pos + length_size
        end = start + int.from_bytes(data[pos:start], "little")
        raw = data[start:end]
        return (raw if encoding is None else raw.decode(encoding)), end

    def read_short(data: bytes, pos: int) -> tuple[Any, int]:
        end = pos + 1 + data[pos]
        raw = data[pos + 1 : end]
        return (raw if encoding is None else raw.decode(encoding)), end

    return read_short if length_size == 1 else read


def _decimal(precision: int, scale: int) -> _Reader:
    """MySQL's packed DECIMAL: groups of nine digits in four big-endian bytes, a shorter group
    first and last, the sign in the top bit (a negative number has every bit inverted). The
    Decimal has the column's scale as its exponent, as the library's has."""
    whole_groups, whole_rest = divmod(precision - scale, 9)
    fraction_groups, fraction_rest = divmod(scale, 9)
    digits = [whole_rest] + [9] * (whole_groups + fraction_groups) + [fraction_rest]
    size = sum(_DIGIT_BYTES[count] for count in digits)
    fields = []  # (shift, mask, weight) of each group, most significant first
    bytes_after, digits_after = size, precision
    for count in filter(None, digits):
        bytes_after -= _DIGIT_BYTES[count]
        digits_after -= count
        fields.append((8 * bytes_after, (1 << 8 * _DIGIT_BYTES[count]) - 1, 10**digits_after))
    sign_bit = 1 << (8 * size - 1)
    magnitude = sign_bit - 1  # the bits a negative number has inverted

    def read(data: bytes, pos: int) -> tuple[Any, int]:
        number = int.from_bytes(data[pos : pos + size], "big")
        negative = not number & sign_bit
        number ^= magnitude if negative else sign_bit
        unscaled = 0
        for shift, mask, weight in fields:
            unscaled += (number >> shift & mask) * weight
        value = Decimal(unscaled).scaleb(-scale, _EXACT)
        return (value.copy_negate() if negative else value), pos + size

    return read


def _fraction(fsp: int) -> tuple[int, Callable[[bytes, int], int]]:
    """The size of a temporal value's fraction and how it reads as microseconds (signed, an
    odd precision's spare digit dropped, as the library reads it)."""
    size, odd = (fsp + 1) // 2, fsp % 2 == 1
    scale: int = 10 ** (6 - fsp)

    def micros(data: bytes, pos: int) -> int:
        if not size:
            return 0
        value = int.from_bytes(data[pos : pos + size], "big", signed=True)
        if odd:
            value = int(value / 10)
        return value * scale

    return size, micros


def _datetime2(fsp: int) -> _Reader:
    """DATETIME(fsp): 40 bits (sign, year * 13 + month, day, hour, minute, second), then the
    fraction; an impossible date (a zero month or day) is None."""
    size, micros = _fraction(fsp)

    def read(data: bytes, pos: int) -> tuple[Any, int]:
        packed = int.from_bytes(data[pos : pos + 5], "big")
        fraction = micros(data, pos + 5)
        year_month = packed >> 22 & 0x1FFFF
        try:
            value = datetime(
                year_month // 13,
                year_month % 13,
                packed >> 17 & 0x1F,
                packed >> 12 & 0x1F,
                packed >> 6 & 0x3F,
                packed & 0x3F,
                fraction if 0 < fraction < _MICROS else 0,
            )
        except ValueError:
            return None, pos + 5 + size
        if fraction >= _MICROS:
            value = value.replace(microsecond=fraction)  # raises, as in the library
        return value, pos + 5 + size

    return read


def _timestamp2(fsp: int) -> _Reader:
    """TIMESTAMP(fsp): signed big-endian epoch seconds, then the fraction; a naive UTC
    datetime."""
    size, micros = _fraction(fsp)

    def read(data: bytes, pos: int) -> tuple[Any, int]:
        seconds = int.from_bytes(data[pos : pos + 4], "big", signed=True)
        fraction = micros(data, pos + 4)
        value = _EPOCH + timedelta(seconds=seconds)  # datetime.utcfromtimestamp(seconds)
        if fraction > 0:
            value = value.replace(microsecond=fraction)
        return value, pos + 4 + size

    return read


def _time2(fsp: int) -> _Reader:
    """TIME(fsp): 24 bits (sign, hours, minutes, seconds; a negative value in two's complement),
    then the fraction; a timedelta signed as the library signs it."""
    size, micros = _fraction(fsp)

    def read(data: bytes, pos: int) -> tuple[Any, int]:
        packed = int.from_bytes(data[pos : pos + 3], "big", signed=True)
        sign = 1 if packed >> 23 & 1 else -1
        if sign == -1:
            packed = ~packed + 1
        value = (
            timedelta(
                hours=packed >> 12 & 0x3FF,
                minutes=packed >> 6 & 0x3F,
                seconds=packed & 0x3F,
                microseconds=micros(data, pos + 3),
            )
            * sign
        )
        return value, pos + 3 + size

    return read


_TEMPORAL: Final[dict[int, Callable[[int], _Reader]]] = {
    FIELD_TYPE.DATETIME2: _datetime2,
    FIELD_TYPE.TIMESTAMP2: _timestamp2,
    FIELD_TYPE.TIME2: _time2,
}


def _date(data: bytes, pos: int) -> tuple[Any, int]:
    """DATE: 24 bits little-endian (year, month, day); a zero date or part is None."""
    packed = int.from_bytes(data[pos : pos + 3], "little")
    year, month, day = packed >> 9 & 0x7FFF, packed >> 5 & 0xF, packed & 0x1F
    if not (year and month and day):
        return None, pos + 3
    return date(year, month, day), pos + 3


def _enum(size: int, members: list[str] | None) -> _Reader:
    """The member at the stored index (the library's list starts with the invalid ``''``)."""

    def read(data: bytes, pos: int) -> tuple[Any, int]:
        index = int.from_bytes(data[pos : pos + size], "little")
        return (members[index] if members else None), pos + size

    return read


def _set(size: int, members: list[str] | None) -> _Reader:
    """The members whose bits are set; an empty set stays a set (the library's None, told
    apart from NULL only in its none sources; see :func:`_values`)."""
    indexed = tuple(enumerate(members or ()))

    def read(data: bytes, pos: int) -> tuple[Any, int]:
        mask = int.from_bytes(data[pos : pos + size], "little")
        return {member for index, member in indexed if mask >> index & 1}, pos + size

    return read


def _bit(bits: int, size: int) -> _Reader:
    """BIT(n) as the library gives it: n binary digits, the most significant first."""
    mask, layout = (1 << bits) - 1, f"0{bits}b"

    def read(data: bytes, pos: int) -> tuple[Any, int]:
        return format(int.from_bytes(data[pos : pos + size], "big") & mask, layout), pos + size

    return read
