"""The connector-agnostic event path: dispatch events to the sink, commit positions safely.

:class:`Dispatcher` turns spi events into records (filters, skipped operations, transaction
metadata, tombstones, key changes). :class:`Pipeline` drives a streaming source and owns the
one rule that makes cdcflow lose nothing: a position is saved and confirmed to the database
only after ``sink.flush()`` returned, i.e. after Kafka acknowledged every record before it.
Offsets are committed every ``offset.flush.interval.ms`` and on a clean stop, as Kafka
Connect does; a crash in between replays at most that window (at-least-once).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any, assert_never

from cdcflow.capture import faults
from cdcflow.capture.capabilities import ResumableTransactions
from cdcflow.capture.config import EngineProperties
from cdcflow.capture.envelope import Framing, SideRecords, TableSerializer
from cdcflow.capture.errors import CaptureError, RetriableError
from cdcflow.capture.filters import Filters
from cdcflow.capture.signals.channels import Signalling
from cdcflow.capture.spi import (
    TRANSACTION_OFFSET_PREFIX,
    Idle,
    LogMessage,
    Offset,
    OffsetStore,
    Op,
    Record,
    RowChange,
    SchemaChange,
    SchemaHistory,
    Sink,
    StreamingSource,
    TableId,
    TableSchema,
    Truncate,
    TxBegin,
    TxCommit,
)
from cdcflow.capture.stats import Stats

log = logging.getLogger(__name__)


#: How often the stream loop checks the stop flag, heartbeats and the signal channel.
CHECK_INTERVAL_S = 0.01
#: How often (in rows) a snapshot checks the stop flag.
STOP_CHECK_ROWS = 256
CAPTURED = 1
SIGNALS = 2

#: Builds the record of a logical decoding message, given its ``transaction`` block (or None).
MessageRecord = Callable[[LogMessage, dict[str, Any] | None], Record]


#: The data collection Debezium counts logical decoding messages under in END events.
MESSAGE_COLLECTION = "LOGICAL_DECODING_MESSAGE"


#: The offset keys of the open transaction's metadata (Debezium's names).
TRANSACTION_ID_KEY = TRANSACTION_OFFSET_PREFIX + "id"
COLLECTION_ORDER_PREFIX = TRANSACTION_OFFSET_PREFIX + "data_collection_order_"


class _Transaction:
    """Counters for the ``transaction`` block and the END event of one source transaction."""

    def __init__(self, tx_id: str, counts: Mapping[str, int] | None = None) -> None:
        self.tx_id = tx_id
        self.per_collection: Counter[str] = Counter(counts or {})
        self.total = sum(self.per_collection.values())

    def blocks(self, collection: str, tx_id: str | None) -> Callable[[], dict[str, Any]]:
        """A maker of the next ``transaction`` block of ``collection``: each call counts one
        event (a primary-key change is two, its delete and its create, as in Debezium)."""

        def block() -> dict[str, Any]:
            self.total += 1
            self.per_collection[collection] += 1
            return {
                "id": tx_id,
                "total_order": self.total,
                "data_collection_order": self.per_collection[collection],
            }

        return block


class Dispatcher:
    """Turns events into records and writes them to the sink."""

    def __init__(
        self,
        *,
        properties: EngineProperties,
        framing: Framing,
        filters: Filters,
        sink: Sink,
        stats: Stats,
    ) -> None:
        self._properties = properties
        self._framing = framing
        self._filters = filters
        self._sink = sink
        self._stats = stats
        self._side = SideRecords(framing)
        self._tombstones = properties.tombstones_on_delete
        self._skipped = properties.skipped
        # Members, not codes: ``op in tuple`` is an identity test, ``op.value`` a Python call.
        self._skipped_ops = tuple(op for op in Op if op.value in self._skipped)
        self._tx_metadata = properties.provide_transaction_metadata
        self._tables: dict[int, tuple[TableSchema, int, TableSerializer | None]] = {}
        #: The entry of the last table seen: rows of one table mostly come in runs.
        self._last: tuple[TableSchema, int, TableSerializer | None] | None = None
        self._tx: _Transaction | None = None
        self._resumed: _Transaction | None = None
        signal = properties.signal_data_collection
        self._signal_table = TableId.parse(signal) if signal else None
        self.signalling: Signalling | None = None

    def _flags_of(self, table: TableId) -> int:
        return (CAPTURED if self._filters.captures(table) else 0) | (
            SIGNALS if table == self._signal_table else 0
        )

    def serializer(self, table: TableSchema) -> TableSerializer:
        """The serializer of ``table``, built once per schema version of a captured table."""
        serializer = self._entry(table)[2]
        return serializer if serializer is not None else self._serializer(table)

    def _entry(self, table: TableSchema) -> tuple[TableSchema, int, TableSerializer | None]:
        """``table`` (to tell a reused id), its flags and, when captured, its serializer; once
        per schema version, looked up by identity (a TableId's dataclass hash is a Python
        call)."""
        entry = self._last
        if entry is not None and entry[0] is table:
            return entry
        entry = self._tables.get(id(table))
        if entry is None or entry[0] is not table:
            flags = self._flags_of(table.id)
            entry = (table, flags, self._serializer(table) if flags & CAPTURED else None)
            self._tables[id(table)] = entry
        self._last = entry
        return entry

    def _serializer(self, table: TableSchema) -> TableSerializer:
        value_columns = [
            column.name
            for column in table.columns
            if self._filters.keeps_column(table.id, column.name)
        ]
        serializer = TableSerializer(table, framing=self._framing, value_columns=value_columns)
        self._stats.topics.add(serializer.topic)
        return serializer

    def row(self, change: RowChange) -> None:
        """Emit one row change unless its operation is skipped or its table not captured."""
        table = change.table
        _, flags, serializer = self._entry(table)
        signalling = self.signalling
        if signalling is not None:
            if flags & SIGNALS:
                signalling.on_signal_row(change)
            signalling.on_change(change)
        if serializer is None or change.op in self._skipped_ops:  # not captured, or skipped
            self._stats.events_filtered += 1
            return
        tx = self._tx
        blocks = tx.blocks(str(table.id), change.tx_id) if tx is not None else None
        write = self._sink.write
        for record in serializer.records(change, tombstones=self._tombstones, transaction=blocks):
            write(record)
        self._stats.saw_event(change.source["ts_ms"])

    def resume(self, offset: Offset | None) -> None:
        """A start from ``offset``: when it was taken inside a transaction, that transaction's
        metadata continues from its counts (its BEGIN was written before the restart)."""
        values = offset.values if offset is not None else {}
        tx_id = values.get(TRANSACTION_ID_KEY)
        self._resumed = None
        if tx_id is not None:
            counts = {
                key[len(COLLECTION_ORDER_PREFIX) :]: int(count)
                for key, count in values.items()
                if key.startswith(COLLECTION_ORDER_PREFIX)
            }
            self._resumed = _Transaction(str(tx_id), counts)

    def with_transaction(self, offset: Offset) -> Offset:
        """``offset``, taken inside the open transaction, with where its metadata stands."""
        tx = self._tx
        if tx is None:
            return offset
        values = {**offset.values, TRANSACTION_ID_KEY: tx.tx_id}
        for collection, count in tx.per_collection.items():
            values[COLLECTION_ORDER_PREFIX + collection] = count
        return Offset(values)

    def begin(self, event: TxBegin) -> None:
        if not self._tx_metadata:
            return
        resumed, self._resumed = self._resumed, None
        if resumed is not None and resumed.tx_id == event.tx_id:
            self._tx = resumed  # its BEGIN is in Kafka already
            return
        self._tx = _Transaction(event.tx_id)
        self._sink.write(
            self._side.transaction(
                status="BEGIN", tx_id=event.tx_id, counts=None, ts_ms=event.source["ts_ms"]
            )
        )

    def commit(self, event: TxCommit) -> None:
        self._stats.committed_transactions += 1
        self._stats.last_transaction_id = event.tx_id
        if self._tx is None:
            return
        counts = dict(self._tx.per_collection)
        self._tx = None
        self._sink.write(
            self._side.transaction(
                status="END", tx_id=event.tx_id, counts=counts, ts_ms=event.source["ts_ms"]
            )
        )

    def truncate(self, event: Truncate) -> None:
        if "t" in self._skipped:
            self._stats.events_filtered += len(event.tables)
            return
        for table, source in zip(event.tables, event.sources, strict=True):
            if not self._filters.captures(table.id):
                continue
            tx = self._tx
            block = tx.blocks(str(table.id), event.tx_id)() if tx is not None else None
            self._sink.write(self.serializer(table).truncate(source, block))
            self._stats.saw_event(event.source["ts_ms"])

    def message(self, event: LogMessage, record_for: MessageRecord) -> None:
        """Emit a logical decoding message unless its prefix is filtered out.

        A transactional message is an event of its transaction: it gets a ``transaction``
        block and counts in the END event.
        """
        if not self._filters.keeps_message(event.prefix):
            self._stats.events_filtered += 1
            return
        tx = self._tx
        in_tx = tx is not None and event.transactional
        block = tx.blocks(MESSAGE_COLLECTION, event.tx_id)() if in_tx and tx else None
        self._sink.write(record_for(event, block))
        self._stats.saw_event(event.source["ts_ms"])

    def heartbeat(self) -> None:
        self._sink.write(self._side.heartbeat())


class Pipeline:
    """Runs a streaming source through the dispatcher and commits offsets after Kafka acks."""

    def __init__(
        self,
        *,
        dispatcher: Dispatcher,
        sink: Sink,
        offsets: OffsetStore,
        properties: EngineProperties,
        stats: Stats,
        stop: threading.Event,
        on_heartbeat: Callable[[], None] | None = None,
        message_record: MessageRecord | None = None,
        history: SchemaHistory | None = None,
        schema_change_record: Callable[[SchemaChange], Record] | None = None,
    ) -> None:
        self.dispatcher = self._dispatcher = dispatcher
        self._sink = sink
        self._offsets = offsets
        self._stats = stats
        self._stop = stop
        self._flush_interval = properties.offset_flush_interval_ms / 1000
        self._heartbeat_interval = properties.effective_heartbeat_interval_ms / 1000
        self._signal_poll_interval = properties.signal_poll_interval_ms / 1000
        self._on_heartbeat = on_heartbeat
        self._message_record = message_record
        self._history = history
        self._schema_change_record = schema_change_record

    def commit(self, offset: Offset, source: StreamingSource | None) -> None:
        """Make ``offset`` durable: flush the sink, save the offset, then tell the database.

        The incremental snapshot's progress is added here: what was emitted before this
        position is exactly what the flush made durable.
        """
        signalling = self._dispatcher.signalling
        if signalling is not None:
            offset = signalling.decorate(offset)
            self._stats.incremental = signalling.snapshotter.progress()
        self._sink.flush()
        faults.crash_point("after-flush")
        self._offsets.save(offset)
        faults.crash_point("after-offset-save")
        self._stats.offset = offset.to_dict()
        self._stats.offsets_committed += 1
        if source is not None:
            source.acknowledge(offset)

    def stream(
        self, source: StreamingSource, *, delivered: Callable[[Offset], bool] | None = None
    ) -> None:
        """Dispatch events until the stop flag is set; commit what is durable on the way out.

        ``delivered`` tells, from a transaction's ``commits_at``, whether it was delivered
        before a restart: such a transaction's events are dropped up to its commit.
        """
        dispatcher, signalling = self._dispatcher, self._dispatcher.signalling
        within = source.offset_in_transaction if isinstance(source, ResumableTransactions) else None
        # read.only incremental snapshots close their windows by streamed positions
        watching = signalling is not None and signalling.watches_positions
        positions = signalling.on_position if signalling is not None and watching else None
        pending: Offset | None = None
        skipping = False
        last_commit = last_beat = last_poll = next_check = time.monotonic()
        # The first position read is made durable at once, not an interval later: a run that
        # dies young (a crash loop) must not send the whole backlog behind it again each time.
        last_commit -= self._flush_interval
        self._stats.phase = "streaming"
        if signalling is not None:
            signalling.start()
        try:
            for event in source.events():
                if skipping:  # the rest of a transaction delivered before the restart
                    skipping = type(event) is not TxCommit
                    continue
                match event:  # exhaustive: a new event type fails mypy here, never drops silently
                    case RowChange():
                        dispatcher.row(event)
                    case TxCommit():
                        dispatcher.commit(event)
                        pending = event.offset
                        if positions is not None:
                            positions(pending)
                    case TxBegin():
                        if delivered is not None and event.commits_at is not None:
                            if delivered(event.commits_at):
                                skipping = True
                                continue
                            delivered = None  # the log is in commit order: nothing later was
                        if positions is not None and event.commits_at is not None:
                            positions(event.commits_at)
                        dispatcher.begin(event)
                    case Idle():
                        pending = event.offset or pending
                        self._stats.caught_up()
                        if positions is not None and event.offset is not None:
                            positions(event.offset)
                    case Truncate():
                        dispatcher.truncate(event)
                    case LogMessage():
                        self._message(event)
                    case SchemaChange():
                        self.schema_change(event)
                    case _:
                        assert_never(event)
                now = time.monotonic()
                # Durability work (a producer flush, an offsets write) runs on the
                # offset.flush.interval.ms cadence only, never per keepalive or per transaction:
                # records reach Kafka on their own; committing is only for the positions.
                # A closed snapshot chunk is committed at once: a restart reads at most the chunk
                # in flight again, never the ones before it.
                chunk_closed = signalling is not None and signalling.chunk_closed
                if chunk_closed or now - last_commit >= self._flush_interval:
                    # Inside a transaction, the position after its last event read: a restart
                    # then sends again only what was read since this commit, not the whole
                    # transaction.
                    inside = within() if within is not None else None
                    if inside is not None:
                        pending = dispatcher.with_transaction(inside)
                    if pending is not None:
                        self.commit(pending, source)
                        pending, last_commit = None, now
                        if inside is not None:
                            faults.crash_point("inside-transaction")
                if now < next_check:  # the rest is per CHECK_INTERVAL_S, not per event
                    continue
                next_check = now + CHECK_INTERVAL_S
                if self._heartbeat_interval and now - last_beat >= self._heartbeat_interval:
                    self._heartbeat()
                    last_beat = now
                if signalling is not None and now - last_poll >= self._signal_poll_interval:
                    signalling.poll()  # the Kafka channel, every signal.poll.interval.ms
                    last_poll = now
                if self._stop.is_set():  # threading.Event.is_set is a Python call: not per event
                    break
        except RetriableError:
            # The source went away mid-stream (a crash, a failover): what it gave before is
            # complete, so make it durable now, or the restart would send it all again.
            inside = within() if within is not None else None
            position = dispatcher.with_transaction(inside) if inside is not None else pending
            if position is not None:
                with contextlib.suppress(CaptureError):  # Kafka may be why: then it repeats
                    self.commit(position, None)
            raise
        if pending is not None:
            self.commit(pending, source)

    def schema_change(self, event: SchemaChange) -> None:
        """Record a DDL to schema history (durable before any later offset is committed, as
        every commit follows it), then emit it on the schema-change topic when enabled."""
        if self._history is not None:
            self._history.record(event)
        if self._schema_change_record is not None:
            self._sink.write(self._schema_change_record(event))

    def _message(self, event: LogMessage) -> None:
        if self._message_record is None:
            raise TypeError("the connector yields log messages but does not implement LogMessages")
        self._dispatcher.message(event, self._message_record)

    def _heartbeat(self) -> None:
        self._dispatcher.heartbeat()
        if self._on_heartbeat is not None:
            self._on_heartbeat()

    def snapshot(self, changes: Iterable[RowChange], *, checkpoint: Offset | None = None) -> None:
        """Emit snapshot rows (the caller commits the snapshot's offset afterwards). With a
        ``checkpoint`` (exactly-once), what was emitted is committed with it every
        ``offset.flush.interval.ms``, so no Kafka transaction outgrows the broker's timeout."""
        dispatcher, tables = self._dispatcher, self._stats.tables
        table: TableSchema | None = None
        progress = None
        last_commit = time.monotonic()
        for rows, change in enumerate(changes, 1):
            dispatcher.row(change)
            if change.table is not table:  # a table's rows come together: look it up once
                table = change.table
                progress = tables.get(str(table.id))
            if progress is not None:
                progress.rows_scanned += 1
            if rows % STOP_CHECK_ROWS == 0:
                faults.crash_point("snapshot-rows")  # every STOP_CHECK_ROWS rows
                if self._stop.is_set():
                    raise InterruptedError("stopped during the snapshot")
                now = time.monotonic()
                if checkpoint is not None and now - last_commit >= self._flush_interval:
                    self._sink.flush()
                    self._offsets.save(checkpoint)
                    last_commit = now
