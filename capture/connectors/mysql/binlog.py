"""The binlog reader: python-mysql-replication behind a helper thread and a bounded queue.

``BinLogStreamReader`` blocks on its socket, so it runs in one daemon thread that turns each
library event into a plain :data:`BinlogItem` and puts it on a bounded queue: the pipeline
never waits on the socket, a slow Kafka slows the reader down (back-pressure) instead of
growing memory, and :meth:`BinlogReader.close` stops promptly by closing the socket under the
thread. An error in the thread travels through the queue and is raised where the pipeline
reads (:meth:`BinlogReader.next`). This is the only module that imports the library.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

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
from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent

from cdcflow.capture.errors import FatalError, RetriableError

log = logging.getLogger(__name__)

#: MariaDB's GTID event flag for a statement outside any transaction (DDL).
MARIADB_STANDALONE = 0x01
#: Server errors that mean the requested position is no longer in the binlog.
PURGED_ERRORS = (1236,)


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
        self._queue: queue.Queue[BinlogItem | _Failed] = queue.Queue(maxsize=queue_size)
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="binlog-reader", daemon=True)
        self._thread.start()

    def next(self, timeout_s: float) -> BinlogItem | None:
        """The next item, or None when none came within ``timeout_s``; re-raises the reader's
        error."""
        try:
            item = self._queue.get(timeout=timeout_s)
        except queue.Empty:
            if not self._thread.is_alive() and not self._stopping.is_set():
                raise RetriableError("the binlog reader stopped unexpectedly") from None
            return None
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
        while self._thread.is_alive():
            with contextlib.suppress(queue.Empty):
                self._queue.get(timeout=0.05)
            self._thread.join(timeout=0.05)

    # -- the helper thread ---------------------------------------------------------------------

    def _run(self) -> None:
        try:
            for event in self._reader:
                item = _item(event, self._reader.log_file)
                if item is not None and not self._put(item):
                    return
        except BaseException as error:
            if not self._stopping.is_set():
                self._put(_Failed(_translated(error)))

    def _put(self, item: BinlogItem | _Failed) -> bool:
        """Queue ``item``, waiting while the queue is full; False once stopping."""
        while not self._stopping.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False


def _header(event: Any, file: str) -> Header:
    next_pos = int(event.packet.log_pos)
    return Header(
        file=file,
        pos=next_pos - int(event.packet.event_size) if next_pos else 0,
        next_pos=next_pos,
        ts_sec=int(event.timestamp),
        server_id=int(event.packet.server_id),
    )


def _item(event: Any, file: str) -> BinlogItem | None:
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
        rows = tuple(_values(row, "values") for row in event.rows)
        kind = "c" if isinstance(event, WriteRowsEvent) else "d"
        return Rows(header, kind, event.schema, event.table, rows)
    if isinstance(event, UpdateRowsEvent):
        pairs = tuple(
            (_values(row, "before_values"), _values(row, "after_values")) for row in event.rows
        )
        return Rows(header, "u", event.schema, event.table, pairs)
    return None


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


def _translated(error: BaseException) -> BaseException:
    """The reader's failure as the engine's error: a purged position is fatal and names the
    snapshot mode that recovers; a lost connection is retriable."""
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
