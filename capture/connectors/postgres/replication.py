"""The replication connection: slot creation, START_REPLICATION and the COPY BOTH stream.

Uses psycopg 3's low-level ``pq`` connection because the replication protocol is not a
query: after ``START_REPLICATION`` the server streams CopyData frames and expects standby
status updates back. Frames are decoded by the sans-I/O :mod:`pgoutput` module; this module
only moves bytes and waits on the socket.
"""

from __future__ import annotations

import logging
import select
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

import psycopg
from psycopg import pq

from cdcflow.capture.connectors.postgres import checks, pgoutput
from cdcflow.capture.errors import FatalError, RetriableError

log = logging.getLogger(__name__)
#: pgoutput options cdcflow sets itself; slot.stream.params cannot override them.
FIXED_OPTIONS = frozenset({"proto_version", "publication_names", "messages", "streaming"})


class SlotInUseError(FatalError):
    """START_REPLICATION found the slot active for another process."""


@dataclass(frozen=True)
class CreatedSlot:
    """A slot created just now: its start position and the exported snapshot, if any."""

    consistent_point: int
    snapshot_name: str | None


def _quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _quote_literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


class Frames(Protocol):
    """What a slot's stream reader needs of the replication connection: a
    :class:`ReplicationStream`, or a scripted one in tests."""

    def read(self, timeout: float) -> pgoutput.XLogData | pgoutput.Keepalive | None:
        """The next frame, or None when nothing arrived within ``timeout`` seconds."""
        ...

    def send_status(
        self, *, flushed: int, received: int, reply: bool = False, timeout: float | None = None
    ) -> bool:
        """A standby status update; False when it was not sent within ``timeout``."""
        ...

    def close(self) -> None:
        """Close the connection."""
        ...


class ReplicationStream:
    """One replication connection; not thread-safe."""

    def __init__(self, pgconn: pq.abc.PGconn) -> None:
        self._pg = pgconn

    def _command(self, sql: str) -> pq.abc.PGresult:
        result = self._pg.exec_(sql.encode())
        if result.status not in (pq.ExecStatus.TUPLES_OK, pq.ExecStatus.COMMAND_OK):
            message = result.error_message.decode(errors="replace").strip()
            raise FatalError(f"replication command failed: {sql.split()[0]}: {message}")
        return result

    def create_slot(
        self, name: str, *, export_snapshot: bool, failover: bool = False
    ) -> CreatedSlot:
        """CREATE_REPLICATION_SLOT; an exported snapshot lives until the next command here.

        ``failover`` (``slot.failover``, PostgreSQL 17+) creates a slot that is synchronized
        to standbys; it needs the parenthesized option syntax.
        """
        result = self._command(create_slot_command(name, export=export_snapshot, failover=failover))
        point = pgoutput.parse_lsn((result.get_value(0, 1) or b"0/0").decode())
        snapshot = result.get_value(0, 2)
        return CreatedSlot(point, snapshot.decode() if snapshot else None)

    def start(
        self,
        *,
        slot: str,
        publication: str,
        start_lsn: int,
        messages: bool,
        streaming: bool = False,
        extra: Mapping[str, str] | None = None,
    ) -> None:
        """START_REPLICATION with pgoutput protocol 1 for ``publication``; with ``streaming``,
        protocol 2 streaming in-progress transactions (PostgreSQL 14 and newer).

        ``extra`` (``slot.stream.params``) adds plugin options; the ones cdcflow sets itself
        win, as Debezium's defaults do.
        """
        options = [
            "proto_version '2'" if streaming else "proto_version '1'",
            f"publication_names {_quote_literal(_quote_ident(publication))}",
        ]
        if streaming:
            options.append("streaming 'on'")
        if messages:
            options.append("messages 'true'")
        for name, value in (extra or {}).items():
            if name in FIXED_OPTIONS:
                log.warning("slot.stream.params: %s is set by cdcflow; ignoring %s", name, value)
                continue
            options.append(f"{_quote_ident(name)} {_quote_literal(value)}")
        sql = (
            f"START_REPLICATION SLOT {_quote_ident(slot)} LOGICAL "
            f"{pgoutput.format_lsn(start_lsn)} ({', '.join(options)})"
        )
        self._pg.send_query(sql.encode())
        result = self._pg.get_result()
        if result is None or result.status != pq.ExecStatus.COPY_BOTH:
            message = result.error_message.decode(errors="replace") if result else "no result"
            raise _start_error(message.strip(), slot)
        self._pg.nonblocking = 1  # status updates must not hang on a stalled socket

    def read(self, timeout: float) -> pgoutput.XLogData | pgoutput.Keepalive | None:
        """The next frame, or None when nothing arrived within ``timeout`` seconds."""
        pg = self._pg
        while True:
            size, data = pg.get_copy_data(1)
            if size > 0:
                return pgoutput.decode_copy_data(bytes(data))
            if size == 0:
                ready, _, _ = select.select([pg.socket], [], [], timeout)
                if not ready:
                    return None
                try:
                    pg.consume_input()
                except psycopg.OperationalError as error:
                    raise RetriableError(f"replication connection lost: {error}") from None
                continue
            raise RetriableError(f"replication stream ended: {self._end_reason()}")

    def _end_reason(self) -> str:
        result = self._pg.get_result()
        if result is not None and result.error_message:
            return result.error_message.decode(errors="replace").strip()
        return self._pg.get_error_message().strip() or "server closed the stream"

    def send_status(
        self, *, flushed: int, received: int, reply: bool = False, timeout: float | None = None
    ) -> bool:
        """Standby status update: ``flushed`` becomes the slot's confirmed_flush_lsn (0 leaves
        it alone). False when the frame was not sent within ``timeout`` seconds; libpq keeps
        what it queued and sends it with the next update."""
        frame = pgoutput.standby_status(
            written=received, flushed=flushed, applied=flushed, reply=reply
        )
        pg = self._pg
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            while not pg.put_copy_data(frame):  # 0: libpq's buffer is full, wait to write
                if not _writable(pg.socket, deadline):
                    return False
            while pg.flush():  # 1: data left to send
                if not _writable(pg.socket, deadline):
                    return False
        except psycopg.OperationalError as error:
            raise RetriableError(f"replication connection lost: {error}") from None
        return True

    def close(self) -> None:
        self._pg.finish()


def _writable(socket: int, deadline: float | None) -> bool:
    """Wait until ``socket`` takes more data; False once ``deadline`` passed."""
    remaining = None if deadline is None else deadline - time.monotonic()
    if remaining is not None and remaining <= 0:
        return False
    _, ready, _ = select.select([], [socket], [], remaining)
    return bool(ready)


def create_slot_command(name: str, *, export: bool, failover: bool) -> str:
    """The CREATE_REPLICATION_SLOT command; failover slots need the option list syntax."""
    if failover:
        snapshot = "export" if export else "nothing"
        return (
            f"CREATE_REPLICATION_SLOT {_quote_ident(name)} LOGICAL pgoutput "
            f"(SNAPSHOT '{snapshot}', FAILOVER)"
        )
    mode = "EXPORT_SNAPSHOT" if export else "NOEXPORT_SNAPSHOT"
    return f"CREATE_REPLICATION_SLOT {_quote_ident(name)} LOGICAL pgoutput {mode}"


def _start_error(message: str, slot: str) -> FatalError | RetriableError:
    if "is active for PID" in message:
        return SlotInUseError(
            f"replication slot {slot} is in use by another process ({message}). Stop the other "
            "connector, or give this one its own slot.name."
        )
    if "can no longer get changes" in message or "has been invalidated" in message:
        return checks.slot_invalidated(slot)
    if "does not exist" in message and "publication" in message:
        return FatalError(f"{message}. Create the publication or set publication.autocreate.mode.")
    return RetriableError(f"START_REPLICATION failed: {message}")
