"""The binlog reader: python-mysql-replication behind a helper thread and a bounded queue.

``BinLogStreamReader`` blocks on its socket, so it runs in one daemon thread that turns each
library event into a plain :data:`BinlogItem` and puts it on a bounded queue: the pipeline
never waits on the socket, a slow Kafka slows the reader down (back-pressure) instead of
growing memory, and :meth:`BinlogReader.close` stops promptly by closing the socket under the
thread. An error in the thread travels through the queue and is raised where the pipeline
reads (:meth:`BinlogReader.next`). This is the only module that imports the library.

Rows are not decoded by the library: its generic per-value dispatch costs more than everything
else the connector does per event. A :class:`_RowDecoder` compiled once per table structure
(one reader function per column, chosen from the TABLE_MAP column types) reads the rows event's
bytes instead and yields the values the library would. Column types it does not know,
partial row images (``binlog_row_image`` other than FULL) and MySQL's partial JSON updates are
left to the library.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import re
import struct
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import MAX_EMAX, MAX_PREC, MIN_EMIN, Context, Decimal
from typing import Any, Final, Protocol

import pymysql
from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.constants import BINLOG, FIELD_TYPE
from pymysqlreplication.event import (
    GtidEvent,
    HeartbeatLogEvent,
    MariadbAnnotateRowsEvent,
    MariadbGtidEvent,
    QueryEvent,
    RotateEvent,
    RowsQueryLogEvent,
    XidEvent,
)
from pymysqlreplication.row_event import (
    DeleteRowsEvent,
    RowsEvent,
    UpdateRowsEvent,
    WriteRowsEvent,
)

from cdcflow.capture.errors import FatalError, RetriableError

log = logging.getLogger(__name__)

#: MariaDB's GTID event flag for a statement outside any transaction (DDL).
MARIADB_STANDALONE = 0x01
#: Server errors that mean the requested position is no longer in the binlog.
PURGED_ERRORS = (1236,)
#: MariaDB's ER_SLAVE_SAME_ID (10.6+): another replica connected with our server id.
SAME_SERVER_ID_ERRORS = (4052,)
#: What the server says to a binlog connection it drops because another replica connected
#: with the same server id. MySQL (error 1236, ER_MASTER_FATAL_ERROR_READING_BINLOG): "A slave
#: with the same server_uuid/server_id as this slave has connected to the master" (8.0.26+:
#: "A replica with the same server_uuid/server_id as this replica has connected to the
#: source"); MariaDB (4052): "A slave with the same server_uuid/server_id is already
#: connected".
_SAME_SERVER_ID: Final = re.compile(
    r"(slave|replica) with the same server_uuid/server_id", re.IGNORECASE
)


@dataclass(frozen=True, slots=True)
class Header:
    """Where and when an event is: its binlog file, its start and end positions, its time."""

    file: str
    pos: int
    next_pos: int
    ts_sec: int
    server_id: int


@dataclass(frozen=True, slots=True)
class Begin:
    """A transaction (or, ``standalone``, one DDL statement) with this GTID starts."""

    header: Header
    gtid: str | None
    standalone: bool = False


@dataclass(frozen=True, slots=True)
class Statement:
    """A QUERY event: ``BEGIN``/``COMMIT`` or DDL, run in database ``schema``."""

    header: Header
    query: str
    schema: str
    thread: int


@dataclass(frozen=True, slots=True)
class RowsQuery:
    """The SQL a following rows event came from (``include.query``)."""

    header: Header
    query: str


@dataclass(frozen=True, slots=True)
class Rows:
    """One rows event: ``kind`` is c, u or d; each row a tuple in column order (updates:
    ``(before, after)`` pairs)."""

    header: Header
    kind: str
    schema: str
    table: str
    rows: tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class Commit:
    """An XID event: the transaction committed."""

    header: Header
    xid: int


@dataclass(frozen=True, slots=True)
class Rotate:
    """The server moved on to binlog ``file`` at ``pos``."""

    file: str
    pos: int


BinlogItem = Begin | Statement | RowsQuery | Rows | Commit | Rotate


@dataclass(frozen=True, slots=True)
class StartAt:
    """Where the reader starts: a GTID set (MariaDB ``slave_connect_state`` or a MySQL
    auto-position set), else ``file``/``pos``."""

    file: str | None = None
    pos: int | None = None
    gtids: str | None = None


class _Failed:
    def __init__(self, error: BaseException) -> None:
        self.error = error


class BinlogItems(Protocol):
    """Where a binlog stream reads its items from: a :class:`BinlogReader` on a server, or a
    scripted one in tests."""

    def next(self, timeout_s: float) -> BinlogItem | None:
        """The next item, or None when none arrived within ``timeout_s``."""
        ...

    def close(self) -> None:
        """Stop reading and release the connection."""
        ...


class BinlogReader:
    """See the module docstring. ``settings`` are PyMySQL connection keyword arguments."""

    def __init__(
        self,
        settings: Mapping[str, Any],
        *,
        server_id: int,
        start: StartAt,
        mariadb: bool,
        queue_size: int,
        heartbeat_s: float = 1.0,
        annotate: bool = False,
    ) -> None:
        gtid_start = start.gtids is not None and (mariadb or bool(start.gtids))
        self._server_id = server_id
        self._reader = BinLogStreamReader(
            connection_settings=dict(settings),
            server_id=server_id,
            blocking=True,
            resume_stream=True,
            log_file=None if gtid_start else start.file,
            log_pos=None if gtid_start else start.pos,
            auto_position=start.gtids if gtid_start else None,
            is_mariadb=mariadb,
            annotate_rows_event=annotate,
            slave_heartbeat=heartbeat_s,
            only_events=[
                MariadbGtidEvent,
                GtidEvent,
                QueryEvent,
                XidEvent,
                WriteRowsEvent,
                UpdateRowsEvent,
                DeleteRowsEvent,
                RotateEvent,
                HeartbeatLogEvent,
                MariadbAnnotateRowsEvent,
                RowsQueryLogEvent,
            ],
        )
        # The bound counts rows (other items count one): a rows event carries up to hundreds,
        # and a reader that decodes faster than the pipeline sends must not hold thousands.
        self._queue: queue.Queue[BinlogItem | _Failed] = queue.Queue()
        self._capacity = queue_size
        self._queued = 0
        self._room = threading.Condition()
        self._stopping = threading.Event()
        # not "_thread": compiled, the attribute becomes a C field "__thread", a C keyword
        self._worker = threading.Thread(target=self._run, name="binlog-reader", daemon=True)
        self._worker.start()

    def next(self, timeout_s: float) -> BinlogItem | None:
        """The next item, or None when none came within ``timeout_s``; re-raises the reader's
        error."""
        try:
            item = self._queue.get(timeout=timeout_s)
        except queue.Empty:
            if not self._worker.is_alive() and not self._stopping.is_set():
                raise RetriableError("the binlog reader stopped unexpectedly") from None
            return None
        with self._room:
            self._queued -= _weight(item)
            if self._queued <= self._capacity // 2:
                self._room.notify()  # the reader waits for half the room (see _put)
        if isinstance(item, _Failed):
            raise item.error
        return item

    def close(self) -> None:
        """Stop the thread: close the socket it blocks on and drain the queue so it can exit."""
        self._stopping.set()
        try:
            self._reader.close()
        except Exception:
            log.debug("closing the binlog connection failed", exc_info=True)
        while self._worker.is_alive():
            with contextlib.suppress(queue.Empty):
                self._queue.get(timeout=0.05)
            self._worker.join(timeout=0.05)

    # -- the helper thread ---------------------------------------------------------------------

    def _run(self) -> None:
        decoders = _RowDecoders()
        try:
            for event in self._reader:
                item = _item(event, self._reader.log_file, decoders)
                if item is not None and not self._put(item):
                    return
        except BaseException as error:
            if not self._stopping.is_set():
                self._put(_Failed(_translated(error, self._server_id)))

    def _put(self, item: BinlogItem | _Failed) -> bool:
        """Queue ``item``; when the queue is full, first wait until the pipeline took half of
        it, so that the two threads take turns in long stretches rather than an item each
        (every turn hands the GIL over). False once stopping."""
        with self._room:
            if self._queued >= self._capacity:
                while self._queued > self._capacity // 2 and not self._stopping.is_set():
                    self._room.wait(0.1)
            if self._stopping.is_set():
                return False
            self._queued += _weight(item)
        self._queue.put(item)
        return True


def _weight(item: BinlogItem | _Failed) -> int:
    """What an item counts for in the queue's bound: its rows, at least one."""
    return max(len(item.rows), 1) if isinstance(item, Rows) else 1


def _header(event: Any, file: str) -> Header:
    next_pos = int(event.packet.log_pos)
    return Header(
        file=file,
        pos=next_pos - int(event.packet.event_size) if next_pos else 0,
        next_pos=next_pos,
        ts_sec=int(event.timestamp),
        server_id=int(event.packet.server_id),
    )


def _item(event: Any, file: str, decoders: _RowDecoders) -> BinlogItem | None:
    if isinstance(event, RotateEvent):
        return Rotate(file=event.next_binlog, pos=int(event.position))
    if isinstance(event, HeartbeatLogEvent):
        return None
    header = _header(event, file)
    if isinstance(event, MariadbGtidEvent):
        return Begin(header, event.gtid, standalone=bool(event.flags & MARIADB_STANDALONE))
    if isinstance(event, GtidEvent):
        return Begin(header, str(event.gtid))
    if isinstance(event, QueryEvent):
        schema = event.schema.decode() if isinstance(event.schema, bytes) else str(event.schema)
        return Statement(header, event.query, schema, int(event.slave_proxy_id))
    if isinstance(event, XidEvent):
        return Commit(header, int(event.xid))
    if isinstance(event, MariadbAnnotateRowsEvent):
        return RowsQuery(header, bytes(event.sql_statement).decode("utf-8", "replace"))
    if isinstance(event, RowsQueryLogEvent):
        return RowsQuery(header, event.query)
    if isinstance(event, WriteRowsEvent | DeleteRowsEvent):
        kind = "c" if isinstance(event, WriteRowsEvent) else "d"
        return Rows(header, kind, event.schema, event.table, _rows(event, decoders))
    if isinstance(event, UpdateRowsEvent):
        return Rows(header, "u", event.schema, event.table, _rows(event, decoders))
    return None


def _rows(event: RowsEvent, decoders: _RowDecoders) -> tuple[Any, ...]:
    """The event's rows (updates: ``(before, after)`` pairs), by a compiled decoder where one
    applies, else by the library."""
    update = isinstance(event, UpdateRowsEvent)
    images = decoders.images(event, per_row=2 if update else 1)
    if images is not None:
        return tuple(zip(images[::2], images[1::2], strict=True)) if update else tuple(images)
    if update:
        return tuple(
            (_values(row, "before_values"), _values(row, "after_values")) for row in event.rows
        )
    return tuple(_values(row, "values") for row in event.rows)


def _values(row: dict[str, Any], image: str) -> tuple[Any, ...]:
    """A row image in column order. The library decodes an empty SET as None, like NULL, and
    tells them apart only in ``none_sources``: give it back as the empty set it is."""
    values: dict[str, Any] = row[image]
    # "values" → "none_sources", "before_values" → "before_none_sources", …
    empty = row.get(image.replace("values", "none_sources"))
    if not empty:
        return tuple(values.values())
    return tuple(
        set() if value is None and empty.get(name) == "empty set" else value
        for name, value in values.items()
    )


# -- row decoding ----------------------------------------------------------------------------

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


class _RowDecoders:
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


def server_id_clash(message: str) -> bool:
    """Whether the server dropped the binlog connection because another replica connected
    with our server id."""
    return _SAME_SERVER_ID.search(message) is not None


def _translated(error: BaseException, server_id: int) -> BaseException:
    """The reader's failure as the engine's error: another replica with our server id and a
    purged position are fatal and name their fix; a lost connection is retriable."""
    if isinstance(error, pymysql.err.MySQLError):
        code = error.args[0] if error.args else None
        message = str(error.args[1]) if len(error.args) > 1 else str(error)
        if code in SAME_SERVER_ID_ERRORS or server_id_clash(message):
            return FatalError(
                f"the server dropped the binlog connection because another replica connected "
                f"with the same server id, database.server.id={server_id} ({code}: {message}). "
                "Give this connector a database.server.id unique among all of the server's "
                "replicas (and other connectors): two of them would keep disconnecting each "
                "other"
            )
    if isinstance(error, pymysql.err.OperationalError | pymysql.err.InternalError):
        code = error.args[0] if error.args else None
        message = str(error.args[1]) if len(error.args) > 1 else str(error)
        if code in PURGED_ERRORS:
            return FatalError(
                f"the binlog no longer holds the stored position ({message}): the server "
                "purged it. Use snapshot.mode=when_needed to take a new snapshot, or reset the "
                "offsets (`cdcflow offsets reset`)"
            )
        return RetriableError(f"binlog connection failed: {message}")
    if isinstance(error, OSError | EOFError):
        return RetriableError(f"binlog connection failed: {error}")
    return error
