"""The PostgreSQL streaming source: pgoutput frames in, spi events out, positions confirmed.

Holds the per-connection decoding state (relations by oid, the open transaction, the last
commit LSN for ``source.sequence``) and answers the server: a standby status update at least
every ``status.update.interval.ms`` and immediately when a keepalive asks for one. The flushed
LSN it reports moves only through :meth:`acknowledge`, which the pipeline calls after Kafka
acknowledged everything up to that position.
"""

from __future__ import annotations

import base64
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any, Final

from cdcflow.capture.connectors.postgres import pgoutput
from cdcflow.capture.connectors.postgres.replication import Frames
from cdcflow.capture.connectors.postgres.spool import (
    STREAM_ABORT,
    STREAM_COMMIT,
    STREAM_START,
    STREAM_STOP,
    TransactionSpool,
)
from cdcflow.capture.connectors.postgres.tables import ColumnSpec, DecodedTable, TableCatalog
from cdcflow.capture.converting import CONVERSION_ERRORS, ConvertingFailures
from cdcflow.capture.errors import FatalError, sentence
from cdcflow.capture.filters import Filters
from cdcflow.capture.spi import (
    Event,
    Idle,
    LogMessage,
    Offset,
    Op,
    RowChange,
    TableId,
    Truncate,
    TxBegin,
    TxCommit,
)

log = logging.getLogger(__name__)
#: The first byte of the messages that frame a streamed transaction (protocol 2).
STREAMING = frozenset({STREAM_START, STREAM_STOP, STREAM_COMMIT, STREAM_ABORT})
UNCHANGED: Final = pgoutput.UNCHANGED_TOAST


class SourceBlock:
    """Builds the ``source`` block of PostgreSQL events (``…postgresql.Source``)."""

    def __init__(
        self, *, version: str, server: str, database: str, streaming_snapshot: str | None = "false"
    ) -> None:
        self.base = {"version": version, "connector": "postgresql", "name": server}
        self.database = database
        #: ``source.snapshot`` of streamed events. Debezium leaves it null and JsonConverter
        #: writes the schema default, ``false``, unless replace.null.with.default is off.
        self.streaming_snapshot = streaming_snapshot

    def build(
        self,
        *,
        ts_us: int,
        table: TableId | None,
        tx_id: int | None,
        lsn: int | None,
        last_commit_lsn: int | None,
        snapshot: str | None = None,
    ) -> dict[str, Any]:
        last = "null" if last_commit_lsn is None else f'"{last_commit_lsn}"'
        current = "null" if lsn is None else f'"{lsn}"'
        return {
            **self.base,
            "ts_ms": ts_us // 1000,
            "snapshot": self.streaming_snapshot if snapshot is None else snapshot,
            "db": self.database,
            "sequence": f"[{last},{current}]",
            "ts_us": ts_us,
            "ts_ns": ts_us * 1000,
            "schema": table.schema if table else "",
            "table": table.table if table else "",
            "txId": tx_id,
            "lsn": lsn,
            "xmin": None,
            "origin": None,
            "origin_lsn": None,
        }


class XminTracker:
    """``xmin.fetch.interval.ms``: the slot's ``catalog_xmin``, read at most once an interval."""

    def __init__(self, fetch: Callable[[], int | None], *, interval_s: float) -> None:
        self._fetch = fetch
        self._interval = interval_s
        self._value: int | None = None
        self._read_at: float | None = None

    def __call__(self) -> int | None:
        now = time.monotonic()
        if self._read_at is None or now - self._read_at >= self._interval:
            self._value, self._read_at = self._fetch(), now
        return self._value


@dataclass(frozen=True)
class LsnFlushing:
    """How confirmed positions reach the server (``lsn.flush.*``).

    ``confirm`` is false under ``lsn.flush.mode=manual`` (``flush.lsn.source=false``): the
    status updates then report no flushed position, so the slot stays where something else
    moves it. A status update not sent within ``timeout_s`` fails the connector
    (``action=fail``), or is logged (``warn``) or ignored (``ignore``) and retried with the
    next one.
    """

    confirm: bool = True
    timeout_s: float = 30.0
    action: str = "fail"

    def timed_out(self, lsn: int) -> None:
        """Act on a flush of ``lsn`` that did not complete in time."""
        where = pgoutput.format_lsn(lsn)
        timeout_ms = round(self.timeout_s * 1000)
        if self.action == "fail":
            raise FatalError(
                f"LSN flush operation timed out for LSN '{where}' after {timeout_ms} ms "
                "(lsn.flush.timeout.ms); the server does not take the replication connection's "
                "status updates. Check the connection, or set lsn.flush.timeout.action=warn."
            )
        level = logging.WARNING if self.action == "warn" else logging.DEBUG
        log.log(
            level,
            "LSN flush operation for LSN '%s' did not complete within the configured timeout "
            "of %d ms; continuing (lsn.flush.timeout.action=%s)",
            where,
            timeout_ms,
            self.action,
        )


@dataclass(init=False, slots=True)
class PostgresPosition:
    """The PostgreSQL connector's offset, as Debezium's stores it: the LSN of the last event
    (``lsn``, ``lsn_proc``), of the last commit (``lsn_commit``, None right after a snapshot:
    no transaction was streamed yet), the transaction, the commit time and, when
    ``xmin.fetch.interval.ms`` tracks it, the slot's ``xmin``.

    Made twice per transaction: Final fields and an explicit __init__, not frozen=True (see
    :mod:`.pgoutput` for the measured difference)."""

    lsn: Final[int]
    lsn_commit: Final[int | None]
    lsn_proc: Final[int | None]
    tx_id: Final[int | None]
    ts_usec: Final[int]
    xmin: Final[int | None]

    def __init__(
        self,
        lsn: int,
        lsn_commit: int | None = None,
        lsn_proc: int | None = None,
        tx_id: int | None = None,
        ts_usec: int = 0,
        xmin: int | None = None,
    ) -> None:
        self.lsn = lsn
        self.lsn_commit = lsn_commit
        self.lsn_proc = lsn_proc
        self.tx_id = tx_id
        self.ts_usec = ts_usec
        self.xmin = xmin

    def to_dict(self) -> dict[str, Any]:
        values: dict[str, Any] = {
            "lsn": self.lsn,
            "lsn_commit": self.lsn_commit,
            "lsn_proc": self.lsn if self.lsn_proc is None else self.lsn_proc,
            "txId": self.tx_id,
            "ts_usec": self.ts_usec,
        }
        if self.xmin is not None:
            values["xmin"] = self.xmin
        return values

    @classmethod
    def from_offset(cls, offset: Offset) -> PostgresPosition:
        """Read a stored offset (Debezium's or ours; missing keys are absent)."""
        values = offset.connector_values()
        return cls(
            lsn=int(values.get("lsn") or 0),
            lsn_commit=_int_or_none(values.get("lsn_commit")),
            lsn_proc=_int_or_none(values.get("lsn_proc")),
            tx_id=_int_or_none(values.get("txId")),
            ts_usec=int(values.get("ts_usec") or 0),
            xmin=_int_or_none(values.get("xmin")),
        )

    @property
    def resume_lsn(self) -> int:
        """Where streaming resumes: after the last commit, else after the last event."""
        return self.lsn_commit or self.lsn

    def order_key(self) -> tuple[int]:
        return (self.resume_lsn,)


def lsn_offset(*, lsn: int, tx_id: int | None, ts_us: int, committed: bool = True) -> Offset:
    """A streaming offset as Debezium's PostgreSQL connector stores it (see
    :class:`PostgresPosition`)."""
    position = PostgresPosition(
        lsn=lsn, lsn_commit=lsn if committed else None, tx_id=tx_id, ts_usec=ts_us
    )
    return Offset.of(position)


def _int_or_none(value: Any) -> int | None:
    return None if value is None else int(value)


def transaction_id(xid: int, lsn: int) -> str:
    """Debezium's PostgreSQL transaction id: the xid and the LSN of the message carrying it.

    It is not constant within a transaction: BEGIN carries the transaction's first LSN, each
    event its own LSN and END the commit's end LSN (Debezium's ``PostgresTransactionMonitor``).
    """
    return f"{xid}:{lsn}"


class PostgresStream:
    """Streams one replication slot; see the module docstring."""

    def __init__(
        self,
        *,
        stream: Frames,
        catalog: TableCatalog,
        filters: Filters,
        source_block: SourceBlock,
        placeholder: str,
        failure_mode: str = "fail",
        resume_lsn: int,
        last_commit_lsn: int | None,
        status_interval_s: float,
        poll_interval_s: float,
        skip_unchanged: bool = False,
        xmin: Callable[[], int | None] | None = None,
        flushing: LsnFlushing | None = None,
        converting: ConvertingFailures | None = None,
        resume_within: tuple[int, int] | None = None,
        spool: TransactionSpool | None = None,
    ) -> None:
        #: in-progress transactions the server streams (protocol 2), on disk until commit
        self._spool = spool
        self._flushing = flushing or LsnFlushing()
        self._converting = converting or ConvertingFailures("fail")
        self._skip_unchanged = skip_unchanged
        self._xmin = xmin
        self._stream = stream
        self._catalog = catalog
        self._filters = filters
        self._source = source_block
        self._placeholder = placeholder
        self._failure_mode = failure_mode
        self._binary_placeholder = base64.b64encode(placeholder.encode()).decode()
        self._status_interval = status_interval_s
        self._poll_interval = poll_interval_s
        self._relations: dict[int, DecodedTable | None] = {}
        self._flushed = resume_lsn
        self._received = resume_lsn
        self._last_status = 0.0
        # The last commit of the stored offset (None right after a snapshot, as in Debezium):
        # source.sequence carries it so consumers can order events across restarts.
        self._last_commit_lsn = last_commit_lsn
        self._last_ts_us: int | None = None
        self._tx: pgoutput.Begin | None = None
        self._tx_base: dict[str, Any] = {}
        #: Where the open transaction is sent again from after a restart (the end of the last
        #: commit read), and the LSN of its last event yielded (0: none yet).
        self._resume_point = resume_lsn
        self._tx_last_lsn = 0
        #: ``resume_within``: the transaction (xid) a restart resumes inside of, and the LSN of
        #: its last event delivered before: its events up to there are not sent again.
        self._skip_xid, self._skip_through = resume_within or (-1, 0)

    # -- position feedback -------------------------------------------------------------------

    def acknowledge(self, offset: Offset) -> None:
        """Kafka has everything up to ``offset``: let the server recycle WAL before it.

        The update must go out within ``lsn.flush.timeout.ms``; ``lsn.flush.timeout.action``
        says what a timeout does. Under ``lsn.flush.mode=manual`` nothing is confirmed.
        """
        lsn = PostgresPosition.from_offset(offset).resume_lsn
        if lsn > self._flushed:
            self._flushed = lsn
        if not self._send_status(timeout=self._flushing.timeout_s):
            self._flushing.timed_out(lsn)

    def _send_status(self, *, reply: bool = False, timeout: float | None = None) -> bool:
        flushed = self._flushed if self._flushing.confirm else 0
        sent = self._stream.send_status(
            flushed=flushed,
            received=max(self._received, self._flushed),
            reply=reply,
            timeout=timeout if timeout is not None else self._flushing.timeout_s,
        )
        self._last_status = time.monotonic()
        return sent

    def close(self) -> None:
        self._stream.close()
        if self._spool is not None:
            self._spool.close()

    def offset_in_transaction(self) -> Offset | None:
        """Inside a transaction: resume from the last commit, skipping this transaction's
        events up to the last one yielded (Debezium's ``lsn_proc`` beyond ``lsn_commit``)."""
        tx = self._tx
        if tx is None or not self._tx_last_lsn:
            return None
        resume = self._resume_point
        position = PostgresPosition(
            lsn=resume,
            lsn_commit=resume,
            lsn_proc=self._tx_last_lsn,
            tx_id=tx.xid,
            ts_usec=self._last_ts_us or 0,
        )
        return Offset.of(position)

    def _delivered(self, lsn: int) -> bool:
        """Whether the event at ``lsn`` was delivered before the restart: in the transaction
        resumed inside of, at or before its last delivered event."""
        tx = self._tx
        return lsn <= self._skip_through and tx is not None and tx.xid == self._skip_xid

    # -- the event loop ----------------------------------------------------------------------

    def events(self) -> Iterator[Event]:
        stream, decode, spool = self._stream, pgoutput.decode_message, self._spool
        self._send_status()
        while True:
            frame = stream.read(self._poll_interval)
            if time.monotonic() - self._last_status >= self._status_interval:
                self._send_status()
            if frame is None:
                yield Idle()
                continue
            if type(frame) is pgoutput.Keepalive:
                idle = self._keepalive(frame)
                if idle is not None:
                    yield idle
                continue
            assert isinstance(frame, pgoutput.XLogData)
            if frame.data_start > self._received:
                self._received = frame.data_start
            if spool is not None and (spool.block is not None or frame.payload[0] in STREAMING):
                # a streamed transaction: kept on disk, played back whole at its commit
                for replayed in spool.feed(frame):
                    event = self._handle(decode(replayed.payload), replayed.data_start)
                    if event is not None:
                        yield event
                continue
            event = self._handle(decode(frame.payload), frame.data_start)
            if event is not None:
                yield event

    def _keepalive(self, frame: pgoutput.Keepalive) -> Idle | None:
        if frame.reply_requested:
            self._send_status(reply=False)
        if self._tx is None and frame.wal_end > self._flushed:
            # Outside a transaction everything before wal_end was sent: safe to confirm once
            # the records before it are durable, which keeps idle or filtered slots advancing.
            self._received = max(self._received, frame.wal_end)
            ts_us = pgoutput.to_unix_us(frame.send_time_us)
            return Idle(lsn_offset(lsn=frame.wal_end, tx_id=None, ts_us=ts_us))
        return None

    def _handle(self, message: pgoutput.PgOutputMessage, lsn: int) -> Event | None:
        kind = type(message)
        if kind is pgoutput.Insert or kind is pgoutput.Update or kind is pgoutput.Delete:
            try:
                return self._row(message, lsn)  # type: ignore[arg-type]
            except (ValueError, TypeError, ArithmeticError) as error:
                self._failed_event(message, lsn, error)
                return None
        if kind is pgoutput.Begin:
            return self._begin(message, lsn)  # type: ignore[arg-type]
        if kind is pgoutput.Commit:
            return self._commit(message, lsn)  # type: ignore[arg-type]
        if kind is pgoutput.Relation:
            self._relation(message)  # type: ignore[arg-type]
            return None
        if kind is pgoutput.Truncate:
            return self._truncate(message, lsn)  # type: ignore[arg-type]
        if kind is pgoutput.Message:
            return self._message(message, lsn)  # type: ignore[arg-type]
        if kind is pgoutput.Origin and self._tx is not None:
            # A transaction replayed from another server (a replication origin): its events
            # carry the origin's name and LSN, as Debezium's source.origin/origin_lsn.
            self._tx_base["origin"] = message.name  # type: ignore[union-attr]
            self._tx_base["origin_lsn"] = message.commit_lsn  # type: ignore[union-attr]
        return None

    def _failed_event(self, message: Any, lsn: int, error: Exception) -> None:
        """``event.processing.failure.handling.mode``: fail (default), warn or skip."""
        decoded = self._relations.get(message.relid)
        where = (
            f"{decoded.schema.id if decoded else message.relid} at LSN {pgoutput.format_lsn(lsn)}"
        )
        if self._failure_mode == "fail":
            raise FatalError(
                f"cannot convert a change of {where}: {sentence(error)} Fix the cause; or set "
                "event.converting.failure.handling.mode=warn to emit a nullable column's value "
                "as null, or event.processing.failure.handling.mode=warn (or skip) to leave "
                "such events out."
            ) from None
        if self._failure_mode == "warn":
            log.warning("skipping a change of %s that cannot be converted: %s", where, error)
        return

    def _begin(self, begin: pgoutput.Begin, lsn: int) -> Event | None:
        self._tx = begin
        self._tx_last_lsn = 0
        ts_us = pgoutput.to_unix_us(begin.commit_time_us)
        self._last_ts_us = ts_us
        # Every key of the source block, in the schema's order: each event's block is a copy
        # with its sequence, table and LSN set (a dict copy, not a rebuilt dict per event).
        self._tx_base = {
            **self._source.base,
            "ts_ms": ts_us // 1000,
            "snapshot": self._source.streaming_snapshot,
            "db": self._source.database,
            "sequence": None,
            "ts_us": ts_us,
            "ts_ns": ts_us * 1000,
            "schema": "",
            "table": "",
            "txId": begin.xid,
            "lsn": None,
            "xmin": None,
            "origin": None,
            "origin_lsn": None,
        }
        # A transaction commits at its final LSN: the engine skips those before the offset.
        commits_at = Offset.of(PostgresPosition(lsn=begin.final_lsn, lsn_commit=begin.final_lsn))
        return TxBegin(transaction_id(begin.xid, lsn), self._tx_base, commits_at)

    def _tx_id(self, lsn: int) -> str | None:
        """The transaction id of an event at ``lsn`` in the open transaction, if any."""
        return transaction_id(self._tx.xid, lsn) if self._tx is not None else None

    def _commit(self, commit: pgoutput.Commit, lsn: int) -> Event | None:
        begin, self._tx = self._tx, None
        self._last_commit_lsn = self._resume_point = commit.end_lsn
        self._tx_last_lsn = self._skip_through = 0
        if begin is None:
            return None
        ts_us = pgoutput.to_unix_us(commit.commit_time_us)
        offset = self._with_xmin(lsn_offset(lsn=commit.end_lsn, tx_id=begin.xid, ts_us=ts_us))
        return TxCommit(transaction_id(begin.xid, lsn), offset, self._tx_base)

    def _relation(self, relation: pgoutput.Relation) -> None:
        table = TableId(relation.namespace, relation.name)
        if not self._filters.reads(table):
            self._relations[relation.relid] = None
            return
        columns = [ColumnSpec(c.name, c.type_oid, c.typmod, False) for c in relation.columns]
        self._relations[relation.relid] = self._catalog.from_relation(
            table, relid=relation.relid, columns=columns, identity=relation.replica_identity
        )

    def _source_for(self, table: TableId, lsn: int) -> dict[str, Any]:
        self._tx_last_lsn = lsn
        last = self._last_commit_lsn
        source = self._tx_base.copy()
        source["sequence"] = f'["{last}","{lsn}"]' if last is not None else f'[null,"{lsn}"]'
        source["schema"] = table.schema
        source["table"] = table.table
        source["lsn"] = lsn
        if self._xmin is not None:
            source["xmin"] = self._xmin()  # in place: the block already holds the key
        return source

    def _row(
        self, message: pgoutput.Insert | pgoutput.Update | pgoutput.Delete, lsn: int
    ) -> Event | None:
        decoded = self._relations.get(message.relid)
        # the int comparison first: the method call only while a restart skips
        if decoded is None or (lsn <= self._skip_through and self._delivered(lsn)):
            return None
        schema = decoded.schema
        source = self._source_for(schema.id, lsn)
        tx_id = self._tx_id(lsn)
        if type(message) is pgoutput.Insert:
            return RowChange(
                schema, Op.CREATE, None, self._values(decoded, message.new), source, tx_id
            )
        if type(message) is pgoutput.Update:
            old = message.old
            before = self._values(decoded, old) if old is not None else None
            after = self._values(decoded, message.new, old if message.old_kind == "O" else None)
            if self._skip_unchanged and before is not None and self._same(decoded, before, after):
                return None
            return RowChange(schema, Op.UPDATE, before, after, source, tx_id)
        assert isinstance(message, pgoutput.Delete)
        return RowChange(schema, Op.DELETE, self._values(decoded, message.old), None, source, tx_id)

    def _values(
        self,
        decoded: DecodedTable,
        raw: tuple[pgoutput.TupleValue, ...],
        old: tuple[pgoutput.TupleValue, ...] | None = None,
    ) -> tuple[Any, ...]:
        if not _has_unchanged(raw):
            converters = decoded.converters
            try:
                # indexed, not zip(strict=True): compiled, a C loop without a tuple per column
                return tuple(
                    [converters[i](raw[position]) for i, position in enumerate(decoded.positions)]
                )
            except CONVERSION_ERRORS:
                pass  # converted again column by column, as event.converting.failure.* says
        out = []
        table, columns = decoded.schema.id, decoded.schema.columns
        for index, (position, convert) in enumerate(
            zip(decoded.positions, decoded.converters, strict=True)
        ):
            value = raw[position]
            if value is UNCHANGED and old is not None and old[position] is not UNCHANGED:
                value = old[position]  # REPLICA IDENTITY FULL carries the old value: back-fill
            if value is UNCHANGED:
                out.append(self._unavailable(decoded, index))
                continue
            try:
                out.append(convert(value))
            except CONVERSION_ERRORS as error:
                self._converting.allow_null(table, columns[index], error)
                out.append(None)
        return tuple(out)

    def _unavailable(self, decoded: DecodedTable, index: int) -> Any:
        """The unavailable-value placeholder of a column, through its column mapper if any."""
        placeholder = self._binary_placeholder if decoded.binary[index] else self._placeholder
        value_map = decoded.value_maps[index] if decoded.value_maps else None
        return placeholder if value_map is None else value_map(placeholder)

    def _same(self, decoded: DecodedTable, before: tuple[Any, ...], after: tuple[Any, ...]) -> bool:
        """``skip.messages.without.change``: no value column differs between the two images.

        Only a REPLICA IDENTITY FULL table sends full old images; with a key-only or missing
        old image the update always goes out, as in Debezium.
        """
        table = decoded.schema.id
        return all(
            b == a
            for column, b, a in zip(decoded.schema.columns, before, after, strict=True)
            if self._filters.keeps_column(table, column.name)
        )

    def _with_xmin(self, offset: Offset) -> Offset:
        """The offset with the slot's ``xmin`` when ``xmin.fetch.interval.ms`` tracks it."""
        xmin = self._xmin() if self._xmin is not None else None
        if xmin is None:
            return offset
        return Offset.of(replace(PostgresPosition.from_offset(offset), xmin=xmin))

    def _truncate(self, message: pgoutput.Truncate, lsn: int) -> Event | None:
        tables = tuple(
            decoded.schema
            for relid in message.relids
            if (decoded := self._relations.get(relid)) is not None
        )
        if not tables or self._delivered(lsn):
            return None
        sources = tuple(self._source_for(table.id, lsn) for table in tables)
        return Truncate(tables, sources, self._tx_id(lsn))

    def _message(self, message: pgoutput.Message, lsn: int) -> Event | None:
        if message.transactional and self._tx is not None:
            if self._delivered(lsn):
                return None
            source = self._source_for(TableId("", ""), lsn)
            return LogMessage(message.prefix, message.content, True, source, self._tx_id(lsn))
        # A message outside a transaction is its own commit (Debezium confirms its LSN as
        # one) and has no commit time: the source keeps the last transaction's.
        self._last_commit_lsn = lsn
        ts_us = self._last_ts_us if self._last_ts_us is not None else time.time_ns() // 1000
        source = self._source.build(
            ts_us=ts_us, table=None, tx_id=None, lsn=lsn, last_commit_lsn=lsn
        )
        return LogMessage(message.prefix, message.content, False, source, None)


def _has_unchanged(raw: tuple[pgoutput.TupleValue, ...]) -> bool:
    """Whether a tuple holds an unchanged TOAST value: by identity (``in`` compares every
    value with ``==``, a rich comparison per string)."""
    return any(value is UNCHANGED for value in raw)  # compiled: a C loop
