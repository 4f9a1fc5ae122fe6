"""In-progress transactions streamed by the server, kept on local disk until they commit.

With pgoutput protocol version 2 and ``streaming 'on'``, a transaction that outgrows the
server's ``logical_decoding_work_mem`` is not spilled to the server's disk and sent at commit:
it arrives as it happens, in blocks (Stream Start … Stream Stop) interleaved with other
transactions, and ends with Stream Commit or Stream Abort. Inside a block every data message
carries the xid of the (sub)transaction that made it.

:class:`TransactionSpool` appends each block's messages to one file per top-level transaction
(the xid field taken out, so they decode as protocol 1 messages, and with their own LSN and
subtransaction), forgets an aborted subtransaction's messages and an aborted transaction's
file, and at Stream Commit plays the transaction back as the server would have sent it
unstreamed: BEGIN, the changes with their LSNs, COMMIT. Events are therefore emitted in commit
order as ever, and the capture's memory does not grow with the transaction. Sans-I/O but for
the spool files.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import struct
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from cdcflow.capture.connectors.postgres.pgoutput import ProtocolError, XLogData

log = logging.getLogger(__name__)

STREAM_START, STREAM_STOP, STREAM_COMMIT, STREAM_ABORT = 0x53, 0x45, 0x63, 0x41
#: Message tags that carry a streamed (sub)transaction's xid after the tag byte.
WITH_XID = frozenset(b"RYIUDTM")
#: A spooled message: its LSN, the subtransaction that made it, its length.
_RECORD = struct.Struct(">qII")
_STREAM_COMMIT = struct.Struct(">IBqqq")
_BEGIN = struct.Struct(">qqi")
_COMMIT = struct.Struct(">bqqq")
BUFFER_BYTES = 1 << 20
LOCK = "lock"
#: A spool folder younger than this may be one another capture is making: left alone.
SETTLED_S = 60.0


@dataclass
class _Spooled:
    """One in-progress transaction's file."""

    path: Path
    file: BinaryIO
    first_lsn: int
    aborted: set[int] = field(default_factory=set)
    messages: int = 0


class TransactionSpool:
    """See the module docstring. Each spool has a folder of its own under ``directory``
    (``$TMPDIR/cdcflow-spool`` by default), locked while it lives; folders nobody holds —
    left by a killed run, whose container restarts with the same ``/tmp`` — are removed."""

    def __init__(self, directory: Path | None = None) -> None:
        base = directory or Path(tempfile.gettempdir()) / "cdcflow-spool"
        base.mkdir(parents=True, exist_ok=True)
        _remove_abandoned(base)
        self._directory = Path(tempfile.mkdtemp(prefix=f"{os.getpid()}-", dir=base))
        self._lock = (self._directory / LOCK).open("a")
        fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        self._open: dict[int, _Spooled] = {}
        #: the top-level xid of the block being received, None outside blocks
        self.block: int | None = None

    def feed(self, frame: XLogData) -> Iterator[XLogData]:
        """Take one frame that belongs to streaming (a stream message, or any message inside
        a block); yield the frames of a transaction that committed, ready to decode."""
        payload = frame.payload
        tag = payload[0]
        if tag == STREAM_START:
            self._start(_xid(payload, 1), frame.data_start)
        elif tag == STREAM_STOP:
            self.block = None
        elif tag == STREAM_COMMIT:
            yield from self._commit(payload, frame)
        elif tag == STREAM_ABORT:
            self._abort(_xid(payload, 1), _xid(payload, 5))
        elif self.block is not None:
            self._append(payload, frame.data_start)
        else:
            raise ProtocolError(f"streamed message {chr(tag)!r} outside a stream block")

    def close(self) -> None:
        """Drop every file (an open transaction is sent again by the server on restart)."""
        for spooled in self._open.values():
            spooled.file.close()
        self._open.clear()
        self._lock.close()
        shutil.rmtree(self._directory, ignore_errors=True)

    @property
    def transactions(self) -> int:
        """In-progress transactions on disk now."""
        return len(self._open)

    def _start(self, xid: int, lsn: int) -> None:
        self.block = xid
        if xid not in self._open:
            path = self._directory / f"{xid}.spool"
            self._open[xid] = _Spooled(path, path.open("w+b", buffering=BUFFER_BYTES), lsn)

    def _append(self, payload: bytes, lsn: int) -> None:
        assert self.block is not None
        spooled = self._open[self.block]
        if payload[0] in WITH_XID:
            subxid, message = _xid(payload, 1), payload[:1] + payload[5:]
        else:  # an origin message: the transaction's own
            subxid, message = self.block, payload
        spooled.file.write(_RECORD.pack(lsn, subxid, len(message)))
        spooled.file.write(message)
        spooled.messages += 1

    def _abort(self, xid: int, subxid: int) -> None:
        spooled = self._open.get(xid)
        if spooled is None:
            return
        if subxid != xid:  # a rolled-back savepoint: its changes are left out at commit
            spooled.aborted.add(subxid)
            return
        del self._open[xid]
        spooled.file.close()
        spooled.path.unlink(missing_ok=True)
        log.debug("streamed transaction %d aborted (%d messages dropped)", xid, spooled.messages)

    def _commit(self, payload: bytes, frame: XLogData) -> Iterator[XLogData]:
        xid, flags, commit_lsn, end_lsn, commit_time = _STREAM_COMMIT.unpack_from(payload, 1)
        spooled = self._open.pop(xid, None)
        if spooled is None:
            raise ProtocolError(f"stream commit of transaction {xid}, which was never streamed")
        log.debug("streamed transaction %d committed: %d messages", xid, spooled.messages)
        try:
            begin = b"B" + _BEGIN.pack(commit_lsn, commit_time, xid)
            yield XLogData(spooled.first_lsn, frame.wal_end, frame.send_time_us, begin)
            yield from self._replay(spooled, frame)
            commit = b"C" + _COMMIT.pack(flags, commit_lsn, end_lsn, commit_time)
            yield XLogData(commit_lsn, frame.wal_end, frame.send_time_us, commit)
        finally:
            spooled.file.close()
            spooled.path.unlink(missing_ok=True)

    @staticmethod
    def _replay(spooled: _Spooled, frame: XLogData) -> Iterator[XLogData]:
        source = spooled.file
        source.flush()
        source.seek(0)
        header_size, aborted = _RECORD.size, spooled.aborted
        while header := source.read(header_size):
            lsn, subxid, length = _RECORD.unpack(header)
            message = source.read(length)
            if subxid not in aborted:
                yield XLogData(lsn, frame.wal_end, frame.send_time_us, message)


def _remove_abandoned(base: Path) -> None:
    """Remove the spool folders under ``base`` whose lock no process holds (and that are not
    being made right now: a minute old at least)."""
    settled = time.time() - SETTLED_S
    for folder in base.iterdir():
        try:
            if folder.stat().st_mtime > settled:
                continue
        except OSError:
            continue
        try:
            with (folder / LOCK).open("a") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            continue  # a running spool's
        except OSError:
            pass  # not a spool folder of ours, or half made: nobody's either
        log.info("removing %s, left by a capture that did not stop", folder)
        shutil.rmtree(folder, ignore_errors=True)


def _xid(payload: bytes, pos: int) -> int:
    return int.from_bytes(payload[pos : pos + 4], "big")
