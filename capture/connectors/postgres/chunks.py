"""Key-ordered chunk reads and signal-table writes for incremental and blocking snapshots.

Rows are read with every column loaded as the server's raw text (as pgoutput sends it), so the
same converters serve snapshot, stream and chunks, and the last key of a chunk is kept as text
for the next ``WHERE (k1, k2) > (…)``: PostgreSQL infers each parameter's type from the column
it is compared with. Statement failures (a bad additional condition, a missing privilege)
become :class:`SnapshotQueryError` so only that table's snapshot is abandoned.
"""

from __future__ import annotations

import contextlib
import logging
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql
from psycopg.types.string import TextLoader

from cdcflow.capture.connectors.postgres.pgoutput import parse_lsn
from cdcflow.capture.connectors.postgres.source import SourceBlock, lsn_offset
from cdcflow.capture.connectors.postgres.tables import DecodedTable, TableCatalog
from cdcflow.capture.converting import ConversionError, ConvertingFailures
from cdcflow.capture.errors import (
    FatalError,
    RetriableError,
    SnapshotQueryError,
    SnapshotSchemaChangedError,
)
from cdcflow.capture.spi import ChunkRow, Offset, RowChange, TableId, TableSchema

log = logging.getLogger(__name__)
#: The WAL position a chunk read is bracketed by under read.only.
CURRENT_LSN_SQL = (
    "SELECT CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() "
    "ELSE pg_current_wal_insert_lsn() END"
)
#: Errors of a chunk query that only a schema change between reading the table's columns and
#: its rows explains: a column gone or retyped.
SCHEMA_ERRORS = (
    psycopg.errors.UndefinedColumn,
    psycopg.errors.DatatypeMismatch,
    psycopg.errors.UndefinedTable,
)


class PostgresChunks:
    """The :class:`~cdcflow.capture.spi.ChunkSource` of the PostgreSQL connector."""

    def __init__(
        self,
        conn: psycopg.Connection[tuple[Any, ...]],
        *,
        catalog: TableCatalog,
        captured: Callable[[], list[TableId]],
        signal_table: TableId | None,
        converting: ConvertingFailures | None = None,
        emit_retries: SignalEmitRetries | None = None,
        source_block: SourceBlock | None = None,
    ) -> None:
        self._conn = conn
        self._source_block = source_block
        self._catalog = catalog
        self._captured = captured
        self._signal_table = signal_table
        self._converting = converting or ConvertingFailures("fail")
        self._emit_retries = emit_retries or SignalEmitRetries()
        self._decoded: dict[TableId, DecodedTable] = {}
        self._seen: ChunkSnapshot | None = None
        self._load_text(conn)

    def close(self) -> None:
        """Close the connection (the current one, if watermark retries replaced it)."""
        self._conn.close()

    def _load_text(self, conn: psycopg.Connection[tuple[Any, ...]]) -> None:
        for oid in self._catalog.type_oids():
            conn.adapters.register_loader(oid, TextLoader)

    def matching_tables(self, patterns: tuple[str, ...]) -> list[TableId]:
        compiled = [re.compile(pattern, re.IGNORECASE) for pattern in patterns]
        return [
            table
            for table in self._captured()
            if any(pattern.fullmatch(str(table)) for pattern in compiled)
        ]

    def snapshot_schema(self, table: TableId) -> TableSchema | None:
        with _connection_loss_retriable(table):
            decoded = self._catalog.from_catalog(table)
        if decoded is None:
            return None
        self._decoded[table] = decoded
        return decoded.schema

    def max_key(
        self, table: TableSchema, *, key: tuple[str, ...], condition: str | None
    ) -> tuple[str | None, ...] | None:
        key = self._sql_key(table, key)
        statement = sql.SQL("SELECT {} FROM {}{} ORDER BY {} LIMIT 1").format(
            _columns(key),
            _table(table.id),
            _where([], condition),
            sql.SQL(", ").join(sql.SQL("{} DESC").format(sql.Identifier(k)) for k in key),
        )
        with _connection_loss_retriable(table.id):
            row = self._fetch(statement, (), table.id).fetchone()
        return None if row is None else tuple(row)

    def read_chunk(
        self,
        table: TableSchema,
        *,
        key: tuple[str, ...],
        after: tuple[str | None, ...] | None,
        up_to: tuple[str | None, ...],
        condition: str | None,
        limit: int,
    ) -> list[ChunkRow]:
        decoded = self._decoded.get(table.id) or self._catalog.from_catalog(table.id)
        assert decoded is not None
        key = self._sql_key(table, key)
        keys = sql.SQL("({})").format(_columns(key))
        values = sql.SQL("({})").format(sql.SQL(", ").join(sql.Placeholder() * len(key)))
        bounds = [sql.SQL("{} <= {}").format(keys, values)]
        params: list[Any] = list(up_to)
        if after is not None:
            bounds.insert(0, sql.SQL("{} > {}").format(keys, values))
            params = [*after, *params]
        statement = sql.SQL("SELECT {} FROM {}{} ORDER BY {} LIMIT {}").format(
            _columns(decoded.sql_names),
            _table(table.id),
            _where(bounds, condition),
            _columns(key),
            sql.Literal(limit),
        )
        names = list(decoded.sql_names)
        key_positions = [names.index(name) for name in key]
        converters, columns = decoded.converters, decoded.schema.columns
        convert = self._converting.convert
        with _connection_loss_retriable(table.id), self._conn.transaction():
            # One snapshot for the rows and for knowing which transactions they miss.
            self._conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            self._seen = ChunkSnapshot.current(self._conn)
            rows = self._fetch(statement, tuple(params), table.id).fetchall()
        try:
            return [
                ChunkRow(
                    key=tuple(raw[i] for i in key_positions),
                    values=convert(table.id, columns, converters, raw),
                )
                for raw in rows
            ]
        except ConversionError as error:
            raise SnapshotQueryError(f"reading a chunk of {table.id}: {error}") from None

    def missed(self, change: RowChange) -> bool:
        """Whether the last chunk could not see ``change``: its transaction was still in
        progress (or not yet begun) when the chunk was read. A transaction whose commit
        record precedes the window's open watermark in the WAL can become visible after the
        watermark's own (commit records are written before visibility is published), so its
        events arrive before the window opens while the chunk holds the older row."""
        xid = change.source.get("txId")
        return self._seen is not None and xid is not None and self._seen.misses(int(xid))

    # -- read.only: positions instead of watermark rows (capabilities.PositionWatermarks) ----

    #: a chunk read's pg_current_snapshot() tells exactly which streamed transactions it
    #: could not see (:meth:`missed`)
    sees_visibility = True

    def log_position(self) -> Offset:
        """Where the WAL is now: inserted on a primary, replayed on a standby."""
        row = self._conn.execute(CURRENT_LSN_SQL).fetchone()
        assert row is not None
        return lsn_offset(lsn=parse_lsn(str(row[0])), tx_id=None, ts_us=time.time_ns() // 1000)

    def position_key(self, offset: Offset) -> tuple[int]:
        return (int(offset.get("lsn") or 0),)

    def source_at(self, offset: Offset) -> dict[str, Any]:
        assert self._source_block is not None, "read.only needs the connector's source block"
        lsn = int(offset.get("lsn") or 0)
        return self._source_block.build(
            ts_us=int(offset.get("ts_usec") or time.time_ns() // 1000),
            table=None,
            tx_id=offset.get("txId"),
            lsn=lsn,
            last_commit_lsn=lsn,
        )

    def write_signal(self, *, signal_id: str, signal_type: str, data: str) -> None:
        assert self._signal_table is not None
        statement = sql.SQL("INSERT INTO {} VALUES (%s, %s, %s)").format(_table(self._signal_table))
        self._emit(statement, (signal_id, signal_type, data))

    def delete_signal(self, *, signal_id: str) -> None:
        assert self._signal_table is not None
        decoded = self._catalog.from_catalog(self._signal_table)
        assert decoded is not None
        id_column = decoded.schema.columns[0].name
        statement = sql.SQL("DELETE FROM {} WHERE {} = %s").format(
            _table(self._signal_table), sql.Identifier(id_column)
        )
        self._emit(statement, (signal_id,))

    def source_for(
        self, source: Mapping[str, Any], table: TableId, *, snapshot: str
    ) -> dict[str, Any]:
        return {**source, "snapshot": snapshot, "schema": table.schema, "table": table.table}

    def _emit(self, statement: sql.Composed, params: tuple[Any, ...]) -> None:
        """Write a watermark, retried as ``signal.emit.failure.*`` says: after a failure the
        connection is replaced (Debezium's auto-heal), waiting the backoff only when that
        fails too."""
        retries = self._emit_retries
        attempt = 0
        while True:
            try:
                self._conn.execute(statement, params)
                return
            except psycopg.Error as error:
                attempt += 1
                if not retries.allows(attempt):
                    raise RetriableError(
                        f"writing an incremental snapshot watermark to {self._signal_table} "
                        f"failed: {str(error).strip()} (signal.emit.failure.max.retries="
                        f"{retries.max_retries})"
                    ) from None
                log.info("writing a watermark failed (%s); reconnecting (%d)", error, attempt)
                self._heal(retries)

    def _heal(self, retries: SignalEmitRetries) -> None:
        """Replace the connection; wait the backoff when reconnecting fails."""
        if retries.reconnect is None:
            time.sleep(retries.backoff_s)
            return
        with contextlib.suppress(psycopg.Error):
            self._conn.close()
        try:
            self._conn = retries.reconnect()
        except (psycopg.Error, RetriableError, FatalError) as error:
            log.info("reconnecting failed (%s); retrying in %.1fs", error, retries.backoff_s)
            time.sleep(retries.backoff_s)
            return
        self._load_text(self._conn)

    def _sql_key(self, table: TableSchema, key: tuple[str, ...]) -> tuple[str, ...]:
        """Key field names as SQL column names (they differ under field.name.adjustment.mode);
        a name that is no field (a surrogate key naming the column) is taken as is."""
        decoded = self._decoded.get(table.id)
        if decoded is None or not decoded.source_names:
            return key
        fields = [column.name for column in decoded.schema.columns]
        return tuple(
            decoded.source_names[fields.index(name)] if name in fields else name for name in key
        )

    def _fetch(
        self, statement: sql.Composed, params: tuple[Any, ...], table: TableId
    ) -> psycopg.Cursor[tuple[Any, ...]]:
        try:
            return self._conn.execute(statement, params)
        except psycopg.Error as error:
            if _connection_lost(error):
                raise  # made retriable by _connection_loss_retriable around the read
            if isinstance(error, SCHEMA_ERRORS):
                raise SnapshotSchemaChangedError(
                    f"{table} changed while its chunk was read: {str(error).strip()}"
                ) from None
            raise SnapshotQueryError(f"query on {table} failed: {str(error).strip()}") from None


def _connection_lost(error: psycopg.Error) -> bool:
    """A lost connection (the server crashed, restarted or dropped it), not a bad query; a
    cancelled statement (``statement_timeout``) is the query's own failure."""
    lost = isinstance(error, psycopg.OperationalError | psycopg.InterfaceError)
    return lost and not isinstance(error, psycopg.errors.QueryCanceled)


@contextlib.contextmanager
def _connection_loss_retriable(table: TableId) -> Iterator[None]:
    """A lost connection while reading ``table`` restarts the connector, which resumes at
    the chunk being read, instead of abandoning (or, initially, failing) the table's snapshot."""
    try:
        yield
    except psycopg.Error as error:
        if not _connection_lost(error):
            raise
        raise RetriableError(
            f"the connection reading chunks of {table} was lost: {str(error).strip()}"
        ) from None


_XID_MASK = 0xFFFFFFFF


@dataclass(frozen=True)
class ChunkSnapshot:
    """The transactions a chunk read could see, as 32-bit xids (what pgoutput and
    ``source.txId`` carry): all before ``xmin``, none from ``xmax`` on, none in ``running``."""

    xmin: int
    xmax: int
    running: frozenset[int]

    @classmethod
    def current(cls, conn: psycopg.Connection[tuple[Any, ...]]) -> ChunkSnapshot:
        """The snapshot of ``conn``'s transaction (taken by this, its first query)."""
        row = conn.execute(
            "SELECT pg_snapshot_xmin(s)::text, pg_snapshot_xmax(s)::text, "
            "array_to_string(ARRAY(SELECT pg_snapshot_xip(s)), ',') FROM pg_current_snapshot() s"
        ).fetchone()
        assert row is not None
        running = str(row[2] or "")
        return cls(
            xmin=int(row[0]) & _XID_MASK,
            xmax=int(row[1]) & _XID_MASK,
            running=frozenset(int(xid) & _XID_MASK for xid in running.split(",") if xid),
        )

    def misses(self, xid: int) -> bool:
        """Whether the transaction ``xid`` was invisible to the snapshot."""
        if xid in self.running:
            return True
        return not _precedes(xid, self.xmax) and not _precedes(xid, self.xmin)


def _precedes(a: int, b: int) -> bool:
    """``a < b`` for 32-bit xids, modulo wraparound (PostgreSQL's TransactionIdPrecedes)."""
    return ((a - b) & _XID_MASK) >= 0x80000000


@dataclass(frozen=True)
class SignalEmitRetries:
    """``signal.emit.failure.max.retries`` (0: none, -1: no limit) and
    ``signal.emit.failure.backoff.ms``, with the way to replace a broken connection."""

    max_retries: int = 0
    backoff_s: float = 10.0
    reconnect: Callable[[], psycopg.Connection[tuple[Any, ...]]] | None = None

    def allows(self, attempt: int) -> bool:
        """Whether a write that failed ``attempt`` times may be tried again."""
        return self.max_retries == -1 or attempt <= self.max_retries


def _columns(names: tuple[str, ...]) -> sql.Composed:
    return sql.SQL(", ").join(sql.Identifier(name) for name in names)


def _table(table: TableId) -> sql.Identifier:
    return sql.Identifier(table.schema, table.table)


def _where(bounds: Sequence[sql.Composable], condition: str | None) -> sql.Composable:
    parts = list(bounds)
    if condition:
        parts.append(sql.SQL("({})").format(sql.SQL(condition)))
    if not parts:
        return sql.SQL("")
    return sql.SQL(" WHERE ") + sql.SQL(" AND ").join(parts)
