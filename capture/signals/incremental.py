"""Incremental snapshots by DBLog watermarks, and blocking snapshots, driven by signals.

For each chunk the snapshotter writes an *open* watermark into the signal table, reads the
next ``incremental.snapshot.chunk.size`` rows by key into an in-memory window, and writes a
*close* watermark (``insert_insert``) or deletes the open one (``insert_delete``). The
watermarks come back through the log in order with the data: between open and close every
streamed change of the table drops the window row with the same key (the log is at least as
new), and at close the remaining rows are emitted as ``op: r`` with ``source.snapshot =
"incremental"``, before anything that follows in the log. Progress (tables left, last key
emitted, maximum key) rides in the offsets, so a restart resumes after the last closed chunk.

Everything runs on the streaming thread, between events, which is DBLog's "pause log
processing": no locks, and a bad ``additional-condition`` only aborts that table's snapshot.

``read.only`` replaces the watermark rows with log positions
(:class:`~cdcflow.capture.capabilities.PositionWatermarks`): the position read right after
the chunk closes the window once streaming passes it (:meth:`on_position`), and nothing is
written to the database.

``snapshot.strategy=chunked`` runs the *initial* snapshot the same way (:meth:`begin_initial`):
its tables go first in the queue, their rows are marked ``source.snapshot`` as an exported
snapshot's are (``first`` … ``last``), notifications use the ``Initial Snapshot`` aggregate,
progress is reported to the engine's statistics, and a table it cannot read stops the
connector instead of being skipped (an initial snapshot must not lose a table silently).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import orjson

from cdcflow.capture import faults
from cdcflow.capture.capabilities import PositionWatermarks
from cdcflow.capture.errors import FatalError, SnapshotQueryError, SnapshotSchemaChangedError
from cdcflow.capture.signals import commands
from cdcflow.capture.spi import ChunkRow, ChunkSource, Offset, Op, RowChange, TableId, TableSchema
from cdcflow.capture.stats import Stats

log = logging.getLogger(__name__)

STATE_KEY = "incremental_snapshot"
#: Re-reads of a chunk whose table changed meanwhile, before the table is abandoned.
SCHEMA_CHANGE_RETRIES = 3
INCREMENTAL = "Incremental Snapshot"
BLOCKING = "Blocking Snapshot"
INITIAL = "Initial Snapshot"


@dataclass(frozen=True)
class Notification:
    """Debezium's notification: aggregate type, type and string-valued details."""

    aggregate_type: str
    type: str
    additional_data: dict[str, str]
    id: str = field(default_factory=lambda: str(uuid.uuid4()))
    timestamp: int = field(default_factory=lambda: time.time_ns() // 1_000_000)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "aggregate_type": self.aggregate_type,
            "type": self.type,
            "additional_data": self.additional_data,
            "timestamp": self.timestamp,
        }


@dataclass
class _Collection:
    table: str
    signal_id: str
    condition: str | None = None
    surrogate_key: str | None = None
    rows: int = 0
    #: a table of the chunked initial snapshot (not of a signal)
    initial: bool = False
    #: the table's estimated rows when the initial snapshot began (for its percentage)
    estimate: int = 0
    #: the last key emitted and the largest key to read (None until the table's first chunk)
    last_key: list[str | None] | None = None
    max_key: list[str | None] | None = None


@dataclass
class _State:
    """What survives a restart (stored in the offset under ``incremental_snapshot``)."""

    collections: list[_Collection]
    paused: bool = False
    #: tables of the chunked initial snapshot already read: rows and estimate of each
    initial_done: dict[str, list[int]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "collections": [vars(c) for c in self.collections],
            "paused": self.paused,
            "initial_done": self.initial_done,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> _State:
        collections = [_Collection(**c) for c in data.get("collections", [])]
        if collections and data.get("max_key") is not None:
            # stored by cdcflow 0.1, where the keys of the table being read sat on the state
            collections[0].last_key, collections[0].max_key = data.get("last_key"), data["max_key"]
        return cls(collections, data.get("paused", False), dict(data.get("initial_done") or {}))

    @property
    def initial_running(self) -> bool:
        return any(c.initial for c in self.collections)


@dataclass
class _Part:
    """One table's chunk in a window, read on its own connection."""

    collection: _Collection
    table: TableSchema
    key: tuple[str, ...]
    reader: ChunkSource
    rows: dict[bytes, ChunkRow] = field(default_factory=dict)
    last_key: tuple[str | None, ...] | None = None
    full: bool = False


@dataclass
class _Window:
    """The chunks read between one pair of watermarks: one table's, or under
    ``snapshot.max.threads`` > 1 one chunk of each of that many initial-snapshot tables."""

    chunk_id: str
    parts: dict[TableId, _Part]
    open: bool = False
    #: ``read.only``: the log position after the read, which streaming must pass to close
    closes_at: tuple[Any, ...] | None = None


class _ChunkReadError(SnapshotQueryError):
    """A chunk query of one table failed: that table's snapshot is abandoned, unless the
    table's schema changed and ``incremental.snapshot.allow.schema.changes`` reads again."""

    def __init__(self, collection: _Collection, error: SnapshotQueryError) -> None:
        super().__init__(str(error))
        self.collection = collection
        self.schema_changed = isinstance(error, SnapshotSchemaChangedError)


Emit = Callable[[RowChange], None]
Notify = Callable[[Notification], None]


def _key_bytes(table: TableSchema, key: tuple[str, ...], row: tuple[Any, ...]) -> bytes:
    names = [column.name for column in table.columns]
    return orjson.dumps([row[names.index(name)] for name in key])


class IncrementalSnapshotter:
    """See the module docstring."""

    def __init__(
        self,
        *,
        source: ChunkSource,
        chunk_size: int,
        strategy: str,
        connector_name: str,
        emit: Emit,
        notify: Notify,
        allow_schema_changes: bool = False,
        stats: Stats | None = None,
        readers: Sequence[ChunkSource] = (),
        positions: PositionWatermarks | None = None,
    ) -> None:
        """``readers``: more chunk sources (connections), so that a window of the chunked
        initial snapshot reads one chunk of each of that many more tables at once.
        ``positions`` (``read.only``): windows are bracketed by log positions, and nothing
        is written."""
        self._positions = positions
        self._readers = [source, *readers]
        self._pool: ThreadPoolExecutor | None = None
        self._allow_schema_changes = allow_schema_changes
        self._stats = stats
        self._source = source
        self._chunk_size = chunk_size
        self._strategy = strategy
        self._connector = connector_name
        self._emit = emit
        self._notify = notify
        self._state: _State | None = None
        self._window: _Window | None = None
        self._key_positions: dict[int, tuple[TableSchema, list[int]]] = {}
        self._last_signal = ""
        self._last_source: dict[str, Any] = {}
        #: a window closed since the last commit: its rows and progress want committing now
        self.chunk_closed = False

    # -- persistence -------------------------------------------------------------------------

    def decorate(self, offset: Offset) -> Offset:
        """``offset`` plus the snapshot progress that is durable with it."""
        self.chunk_closed = False
        values = {k: v for k, v in offset.values.items() if k != STATE_KEY}
        if self._state is not None:
            values[STATE_KEY] = self._state.to_dict()
        return Offset(values)

    def restore(self, offset: Offset | None) -> None:
        """Pick up an interrupted snapshot from a stored offset (call before streaming)."""
        if offset is not None and isinstance(offset.get(STATE_KEY), dict):
            self._state = _State.from_dict(offset.get(STATE_KEY))
            log.info("resuming incremental snapshot of %s", self._tables())
            if self._state.initial_running:
                self._report_initial()

    def begin_initial(self, tables: Mapping[TableId, int]) -> None:
        """Queue the chunked initial snapshot of ``tables`` (with their row estimates) ahead
        of any signalled snapshot; the first chunk opens when streaming starts."""
        keyless = []
        for table in tables:
            schema = self._source.snapshot_schema(table)
            if schema is None or not schema.key_columns:
                keyless.append(str(table))
        if keyless:
            raise FatalError(
                f"snapshot.strategy=chunked reads tables in primary-key order, and "
                f"{', '.join(keyless)} has no primary key: add one, leave the table out of "
                "snapshot.include.collection.list, or use snapshot.strategy=exported"
            )
        initial = [
            _Collection(str(table), "", estimate=rows, initial=True)
            for table, rows in tables.items()
        ]
        signalled = [c for c in self._state.collections if not c.initial] if self._state else []
        self._state = _State([*initial, *signalled])
        self._window = None
        self._announce(
            "STARTED", "", aggregate=INITIAL, data_collections=",".join(map(str, tables))
        )
        self._report_initial()
        if not initial:
            self._initial_finished()

    def _report_initial(self) -> None:
        """The chunked initial snapshot's per-table progress, for ``/status`` and the
        CdcConnector's SNAPSHOT column (after a restart too)."""
        if self._stats is None or self._state is None:
            return
        progress = {
            table: (rows, estimate, True)
            for table, (rows, estimate) in self._state.initial_done.items()
        }
        for c in self._state.collections:
            if c.initial:
                progress[c.table] = (c.rows, c.estimate, False)
        self._stats.chunked_snapshot_progress(progress)

    def start(self) -> None:
        """Open the first (or next, after a restart) chunk if there is work and no window."""
        if self._window is None:
            self._next_chunk()

    def close(self) -> None:
        """Stop the chunk-reading threads (the readers' connections are the connector's)."""
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None

    @property
    def active(self) -> bool:
        return self._state is not None

    def progress(self) -> dict[str, Any]:
        """For ``/status``: tables left, current table, rows so far, paused."""
        if self._state is None:
            return {}
        return {
            "tables": self._tables(),
            "current": self._state.collections[0].table if self._state.collections else None,
            "paused": self._state.paused,
            "rowsScanned": {c.table: c.rows for c in self._state.collections},
        }

    def _tables(self) -> list[str]:
        return [c.table for c in self._state.collections] if self._state else []

    # -- signals -----------------------------------------------------------------------------

    def on_signal(self, signal: commands.Signal, change: RowChange | None) -> None:
        """Act on a signal; window watermarks need the change that carried them."""
        if signal.type == "snapshot-window-open":
            if self._window is not None and signal.id == f"{self._window.chunk_id}-open":
                self._window.open = True
        elif signal.type == "snapshot-window-close":
            if self._window is not None and signal.id == f"{self._window.chunk_id}-close":
                self._close_window(change)
        elif signal.type == "execute-snapshot":
            self._execute(signal, change)
        elif signal.type == "stop-snapshot":
            self._stop(signal)
        elif signal.type == "pause-snapshot":
            self._pause(signal)
        elif signal.type == "resume-snapshot":
            self._resume(signal)

    def on_position(self, offset: Offset) -> None:
        """Streaming reached ``offset`` (``read.only``): close the window once it passed the
        position read after the chunk."""
        window, positions = self._window, self._positions
        if window is None or positions is None or window.closes_at is None:
            return
        if positions.position_key(offset) >= window.closes_at:
            self._close_window(None, source=positions.source_at(offset))

    def on_watermark_deleted(self, signal_id: str, change: RowChange) -> None:
        """``insert_delete``: deleting the open watermark closes the window."""
        if self._window is not None and signal_id == f"{self._window.chunk_id}-open":
            self._close_window(change)

    def _execute(self, signal: commands.Signal, change: RowChange | None) -> None:
        request = commands.snapshot_request(signal)
        tables = self._source.matching_tables(request.collections)
        if not tables:
            raise commands.SignalError(
                signal.id,
                f"no captured table matches {list(request.collections)}; check the names "
                "(schema.table) and table.include.list",
            )
        if request.kind == "blocking":
            base = change.source if change is not None else self._last_source
            self._blocking(signal, tables, request, base)
            return
        collections = [
            _Collection(
                str(table),
                signal.id,
                _condition_for(table, request.conditions),
                request.surrogate_key,
            )
            for table in tables
        ]
        if self._state is None:
            self._state = _State(collections)
        else:
            self._state.collections.extend(collections)
        self._announce("STARTED", signal.id, data_collections=",".join(map(str, tables)))
        if self._window is None:
            self._next_chunk()

    def _stop(self, signal: commands.Signal) -> None:
        """Stop signalled snapshots (of some tables, or all); the initial snapshot is not one."""
        request = commands.snapshot_request(signal, stopping=True)
        state = self._state
        signalled = [c.table for c in state.collections if not c.initial] if state else []
        if state is None or not signalled:
            self._announce("IGNORED", signal.id, reason="no incremental snapshot is running")
            return
        before = list(state.collections)
        matches = (
            {str(t) for t in self._source.matching_tables(request.collections)}
            if request.collections
            else set(signalled)
        )
        current = state.collections[0]
        state.collections = [c for c in state.collections if c.initial or c.table not in matches]
        if current.table in matches and not current.initial:
            self._window = None
        self._aborted(before, state.collections, stop_id=signal.id)
        if not state.collections:
            self._state, self._window = None, None
            self._announce("ABORTED", signal.id)
            return
        self._announce("ABORTED", signal.id, data_collections=",".join(sorted(matches)))
        if self._window is None:
            self._next_chunk()

    def _aborted(
        self, before: list[_Collection], after: list[_Collection], *, stop_id: str
    ) -> None:
        """ABORTED for each execute signal a stop left without tables (as Debezium's
        notification carries the snapshot's correlation id), so none waits for ever."""
        left = {c.signal_id for c in after}
        for signal_id in dict.fromkeys(c.signal_id for c in before):
            if signal_id not in left and signal_id != stop_id:
                tables = ",".join(c.table for c in before if c.signal_id == signal_id)
                self._announce("ABORTED", signal_id, data_collections=tables)

    def _pause(self, signal: commands.Signal) -> None:
        if self._state is None or self._state.paused:
            self._announce("IGNORED", signal.id, reason="no running snapshot to pause")
            return
        self._state.paused = True
        self._announce("PAUSED", signal.id)

    def _resume(self, signal: commands.Signal) -> None:
        if self._state is None or not self._state.paused:
            self._announce("IGNORED", signal.id, reason="no paused snapshot to resume")
            return
        self._state.paused = False
        self._announce("RESUMED", signal.id)
        if self._window is None:
            self._next_chunk()

    # -- the DBLog window --------------------------------------------------------------------

    def on_change(self, change: RowChange) -> None:
        """A streamed change inside the window drops the chunk row with the same key; so does
        one before the window that the chunk read could not see (DBLog's window assumes WAL
        order equals visibility order, which PostgreSQL does not promise)."""
        self._last_source = change.source
        window = self._window
        if window is None:
            return
        part = window.parts.get(change.table.id)
        if part is None:
            return
        if not window.open and not part.reader.missed(change):
            return  # committed before the open watermark and seen by the chunk read
        for row in (change.before, change.after):
            if row is not None:
                part.rows.pop(self._stream_key(change.table, part.key, row), None)

    def _stream_key(self, table: TableSchema, key: tuple[str, ...], row: tuple[Any, ...]) -> bytes:
        cached = self._key_positions.get(id(table))
        if cached is None or cached[0] is not table:
            names = [column.name for column in table.columns]
            cached = (table, [names.index(name) for name in key if name in names])
            self._key_positions[id(table)] = cached
        return orjson.dumps([row[i] for i in cached[1]])

    def _next_chunk(self) -> None:
        """Open, read and close the next window, moving past finished or broken tables."""
        while self._state is not None and not self._state.paused:
            if not self._state.collections:
                self._finish()
                return
            try:
                if self._open_window_allowing_schema_changes(self._batch()):
                    return
            except _ChunkReadError as failed:
                self._abandon(failed.collection, str(failed))

    def _batch(self) -> list[_Collection]:
        """The tables of the next window: the head of the queue, or as many tables of the
        initial snapshot (which lead the queue) as there are readers."""
        assert self._state is not None
        head = self._state.collections[0]
        if not head.initial:
            return [head]
        initial = [c for c in self._state.collections if c.initial]
        return initial[: len(self._readers)]

    def _open_window_allowing_schema_changes(self, batch: list[_Collection]) -> bool:
        """:meth:`_open_window`; with ``incremental.snapshot.allow.schema.changes`` a window
        whose table changed while it was read is read again (on the table's new schema)."""
        for _ in range(SCHEMA_CHANGE_RETRIES):
            try:
                return self._open_window(batch)
            except _ChunkReadError as error:
                if not (error.schema_changed and self._allow_schema_changes):
                    raise
                log.info("%s; reading the chunk again", error)
                assert self._state is not None
                left = {id(c) for c in self._state.collections}
                batch = [c for c in batch if id(c) in left]
        return self._open_window(batch)

    def _open_window(self, batch: list[_Collection]) -> bool:
        """Write the open watermark, read the next chunk of each table of ``batch`` and write
        the close watermark; False when none of them needs another chunk."""
        parts = [
            part
            for collection, reader in zip(batch, self._readers, strict=False)
            if (part := self._part(collection, reader)) is not None
        ]
        if not parts:
            return False
        chunk_id = str(uuid.uuid4())
        positions = self._positions
        if positions is None:
            self._source.write_signal(
                signal_id=f"{chunk_id}-open", signal_type="snapshot-window-open", data="{}"
            )
        if len(parts) == 1:
            self._read(parts[0])
        else:
            list(self._reading_pool().map(self._read, parts))
        self._window = _Window(chunk_id, {part.table.id: part for part in parts})
        if positions is not None:
            # what the read saw committed before this position: once streaming passed it,
            # every change the chunk could not see has dropped its row
            self._window.closes_at = positions.position_key(positions.log_position())
            self._window.open = not positions.sees_visibility
        elif self._strategy == "insert_delete":
            self._source.delete_signal(signal_id=f"{chunk_id}-open")
        else:
            self._source.write_signal(
                signal_id=f"{chunk_id}-close", signal_type="snapshot-window-close", data="{}"
            )
        return True

    def _reading_pool(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(len(self._readers), thread_name_prefix="chunk-read")
        return self._pool

    def _part(self, collection: _Collection, reader: ChunkSource) -> _Part | None:
        """What reading the next chunk of ``collection`` needs; None when the table has no
        rows to read (it is then done)."""
        table = reader.snapshot_schema(TableId.parse(collection.table))
        key = (
            (collection.surrogate_key,)
            if collection.surrogate_key
            else (table.key_columns if table else ())
        )
        if table is None or not key:
            raise _ChunkReadError(
                collection,
                SnapshotQueryError(
                    f"{collection.table} has no primary key; give a surrogate-key in the signal"
                    if table is not None
                    else f"{collection.table} does not exist"
                ),
            )
        if collection.max_key is None:
            try:
                found = reader.max_key(table, key=key, condition=collection.condition)
            except SnapshotQueryError as error:
                raise _ChunkReadError(collection, error) from None
            if found is None:
                self._table_done(collection)
                return None
            collection.max_key = list(found)
        return _Part(collection, table, key, reader)

    def _read(self, part: _Part) -> None:
        collection = part.collection
        assert collection.max_key is not None
        try:
            rows = part.reader.read_chunk(
                part.table,
                key=part.key,
                after=tuple(collection.last_key) if collection.last_key is not None else None,
                up_to=tuple(collection.max_key),
                condition=collection.condition,
                limit=self._chunk_size,
            )
        except SnapshotQueryError as error:
            raise _ChunkReadError(collection, error) from None
        part.rows = {_key_bytes(part.table, part.key, row.values): row for row in rows}
        part.last_key = rows[-1].key if rows else None
        # a full chunk ending at the largest key is the table's last too: its last row is
        # then marked as the table's last, not left for an empty chunk after it
        at_end = part.last_key is not None and list(part.last_key) == collection.max_key
        part.full = len(rows) >= self._chunk_size and not at_end

    def _close_window(
        self, change: RowChange | None, *, source: Mapping[str, Any] | None = None
    ) -> None:
        window, state = self._window, self._state
        if window is None or state is None:
            return
        self._window = None
        source = dict(change.source if change is not None else source or {})
        parts = list(window.parts.values())
        first = not state.initial_done and not any(c.rows for c in state.collections if c.initial)
        last = self._last_part(parts)
        for part in parts:
            collection = part.collection
            markers = self._markers(part, first=first, last=part is last)
            first = first and not part.rows
            for row, marker in zip(part.rows.values(), markers, strict=True):
                row_source = self._source.source_for(source, part.table.id, snapshot=marker)
                self._emit(RowChange(part.table, Op.READ, None, row.values, row_source))
            collection.rows += len(part.rows)
            if part.last_key is not None:
                collection.last_key = list(part.last_key)
        if any(part.collection.initial for part in parts):
            self._report_initial()
        self.chunk_closed = True
        faults.crash_point("chunk-closed")  # rows emitted, the offset covering them not saved
        for part in parts:
            collection = part.collection
            self._announce(
                "IN_PROGRESS",
                collection.signal_id,
                aggregate=INITIAL if collection.initial else INCREMENTAL,
                data_collections=",".join(self._tables()),
                current_collection_in_progress=collection.table,
                maximum_key=orjson.dumps(collection.max_key).decode(),
                last_processed_key=orjson.dumps(collection.last_key).decode(),
            )
            if not part.full:
                self._table_done(collection)
        self._next_chunk()

    def _last_part(self, parts: list[_Part]) -> _Part | None:
        """The part holding the initial snapshot's very last row: the last one finishing its
        table when no other table of the initial snapshot is left."""
        assert self._state is not None
        finishing = [p for p in parts if p.collection.initial and not p.full and p.rows]
        ending = {id(p.collection) for p in parts if not p.full}
        others = [c for c in self._state.collections if c.initial and id(c) not in ending]
        return finishing[-1] if finishing and not others else None

    @staticmethod
    def _markers(part: _Part, *, first: bool, last: bool) -> list[str]:
        """``source.snapshot`` of a closing window's rows: ``incremental`` for a signalled
        snapshot; for the chunked initial one, as an exported snapshot marks them."""
        rows = len(part.rows)
        if not part.collection.initial:
            return ["incremental"] * rows
        markers = ["true"] * rows
        if rows and not part.full:
            markers[-1] = "last" if last else "last_in_data_collection"
        if rows and part.collection.rows == 0:
            markers[0] = "first" if first else "first_in_data_collection"
        return markers

    def _drop(self, collection: _Collection) -> None:
        assert self._state is not None
        self._state.collections = [c for c in self._state.collections if c is not collection]

    def _table_done(self, collection: _Collection) -> None:
        assert self._state is not None
        self._last_signal = collection.signal_id
        self._drop(collection)
        self._announce(
            "TABLE_SCAN_COMPLETED",
            collection.signal_id,
            aggregate=INITIAL if collection.initial else INCREMENTAL,
            data_collection=collection.table,
            total_rows_scanned=str(collection.rows),
            status="SUCCEEDED",
        )
        if collection.initial:
            self._state.initial_done[collection.table] = [collection.rows, collection.estimate]
            self._report_initial()
            if not self._state.initial_running:
                self._initial_finished()
            return
        self._signal_done(collection.signal_id)

    def _initial_finished(self) -> None:
        assert self._state is not None
        self._state.initial_done = {}
        self._announce("COMPLETED", "", aggregate=INITIAL)
        if self._stats is not None:
            self._stats.finish_snapshot()
        log.info("chunked initial snapshot completed")

    def _signal_done(self, signal_id: str) -> None:
        """COMPLETED for a signal whose last table is done while others' tables remain (the
        snapshot's own COMPLETED, in :meth:`_finish`, covers the last signal), so every
        execute signal reaches an end even when several run at once."""
        remaining = self._state.collections if self._state is not None else []
        if remaining and all(c.signal_id != signal_id for c in remaining):
            self._announce("COMPLETED", signal_id)

    def _abandon(self, collection: _Collection, reason: str) -> None:
        assert self._state is not None
        if collection.initial:  # skipping it would leave the table out of the topics for good
            raise FatalError(
                f"the chunked initial snapshot cannot read {collection.table}: {reason}. "
                "Fix the cause and restart: it resumes at the chunk it could not read"
            )
        log.error("incremental snapshot of %s abandoned: %s", collection.table, reason)
        self._last_signal = collection.signal_id
        self._drop(collection)
        self._window = None
        self._announce(
            "TABLE_SCAN_COMPLETED",
            collection.signal_id,
            data_collection=collection.table,
            total_rows_scanned=str(collection.rows),
            status="SQL_EXCEPTION",
            reason=reason,
        )
        self._signal_done(collection.signal_id)

    def _finish(self) -> None:
        self._state, self._window = None, None
        if self._last_signal:  # not after the initial snapshot alone: it announced its end
            self._announce("COMPLETED", self._last_signal)

    # -- blocking snapshots ------------------------------------------------------------------

    def _blocking(
        self,
        signal: commands.Signal,
        tables: list[TableId],
        request: commands.SnapshotRequest,
        base: dict[str, Any],
    ) -> None:
        """Read ``tables`` whole while streaming waits (we are on the streaming thread)."""
        self._announce(
            "STARTED", signal.id, aggregate=BLOCKING, data_collections=",".join(map(str, tables))
        )
        for table_id in tables:
            schema = self._source.snapshot_schema(table_id)
            key = (
                (request.surrogate_key,)
                if request.surrogate_key
                else (schema.key_columns if schema else ())
            )
            if schema is None or not key:
                self._announce(
                    "TABLE_SCAN_COMPLETED",
                    signal.id,
                    aggregate=BLOCKING,
                    data_collection=str(table_id),
                    status="SKIPPED",
                )
                continue
            condition = _condition_for(table_id, request.conditions)
            rows = self._read_whole(schema, key, condition, base)
            self._announce(
                "TABLE_SCAN_COMPLETED",
                signal.id,
                aggregate=BLOCKING,
                data_collection=str(table_id),
                total_rows_scanned=str(rows),
                status="SUCCEEDED",
            )
        self._announce("COMPLETED", signal.id, aggregate=BLOCKING)

    def _read_whole(
        self,
        schema: TableSchema,
        key: tuple[str, ...],
        condition: str | None,
        base: dict[str, Any],
    ) -> int:
        top = self._source.max_key(schema, key=key, condition=condition)
        after: tuple[str | None, ...] | None = None
        count = 0
        while top is not None:
            rows = self._source.read_chunk(
                schema, key=key, after=after, up_to=top, condition=condition, limit=self._chunk_size
            )
            source = self._source.source_for(base, schema.id, snapshot="true")
            for row in rows:
                self._emit(RowChange(schema, Op.READ, None, row.values, dict(source)))
            count += len(rows)
            if len(rows) < self._chunk_size:
                break
            after = rows[-1].key
        return count

    def _announce(
        self, kind: str, signal_id: str, *, aggregate: str = INCREMENTAL, **data: str
    ) -> None:
        details = {"connector_name": self._connector, "signal_id": signal_id, **data}
        self._notify(Notification(aggregate, kind, details))


def _condition_for(table: TableId, conditions: dict[str, str] | Any) -> str | None:
    import re

    for pattern, condition in conditions.items():
        if re.fullmatch(pattern, str(table), re.IGNORECASE):
            return str(condition)
    return None
