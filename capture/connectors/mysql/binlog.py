"""The binlog reader: python-mysql-replication behind a helper thread and a bounded queue.

``BinLogStreamReader`` blocks on its socket, so it runs in one daemon thread that turns each
library event into a plain :data:`BinlogItem` and puts it on a bounded queue: the pipeline
never waits on the socket, a slow Kafka slows the reader down (back-pressure) instead of
growing memory, and :meth:`BinlogReader.close` stops promptly by closing the socket under the
thread. An error in the thread travels through the queue and is raised where the pipeline
reads (:meth:`BinlogReader.next`). With :mod:`.rowimages` (the row decoder), the only module
that imports the library.

Rows are not decoded by the library: its generic per-value dispatch costs more than everything
else the connector does per event; :class:`~.rowimages.RowDecoders` reads the rows events'
bytes instead, and only what it does not cover is left to the library.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

import pymysql
from pymysqlreplication import BinLogStreamReader
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

from cdcflow.capture.connectors.mysql.rowimages import RowDecoders
from cdcflow.capture.errors import FatalError, PositionLostError, RetriableError, position_lost

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
        decoders = RowDecoders()
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


def _item(event: Any, file: str, decoders: RowDecoders) -> BinlogItem | None:
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


def _rows(event: RowsEvent, decoders: RowDecoders) -> tuple[Any, ...]:
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


def purged(what: str) -> PositionLostError:
    """The error for a position in binlog the server purged."""
    return position_lost(
        f"{what}, which the server no longer has: it purged that binlog, and the changes "
        "since the connector stopped with it",
        prevent="keep binlogs longer than the connector may be stopped "
        "(binlog_expire_logs_seconds, expire_logs_days); the LogSafe condition warns while "
        "the oldest binlog the server keeps is the one the connector needs",
    )


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
            return purged(f"the stored offset resumes in a binlog position ({message})")
        return RetriableError(f"binlog connection failed: {message}")
    if isinstance(error, OSError | EOFError):
        return RetriableError(f"binlog connection failed: {error}")
    return error
