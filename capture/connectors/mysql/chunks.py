"""Key-ordered chunk reads and signal-table writes for MySQL incremental and blocking snapshots.

Chunks decode with the structures the stream uses (the schema history's), read through the
snapshot conversions, and pass the last key back unchanged for ``WHERE (k1, k2) > (…)``. No
change can be missed by a chunk: InnoDB commits in binlog order (``binlog_order_commits``), so
every transaction logged before the open watermark is visible once the watermark committed.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pymysql

from cdcflow.capture.connectors.mysql import types
from cdcflow.capture.connectors.mysql.connection import (
    CANNOT_CONNECT,
    Connection,
    Endpoint,
    connect,
    query,
    quote,
)
from cdcflow.capture.connectors.mysql.position import BinlogPosition
from cdcflow.capture.connectors.mysql.source import SourceBlock
from cdcflow.capture.connectors.mysql.tables import RowDecoder, Structures
from cdcflow.capture.errors import FatalError, RetriableError, SnapshotQueryError
from cdcflow.capture.spi import ChunkKey, ChunkRow, Offset, RowChange, TableId, TableSchema

#: Server errors for a statement the user has no privilege for.
DENIED = (1142, 1143, 1044)


class MySqlChunks:
    """The :class:`~cdcflow.capture.spi.ChunkSource` of the MySQL connector."""

    def __init__(
        self,
        endpoint: Endpoint,
        *,
        structures: Structures,
        captured: Callable[[], list[TableId]],
        signal_table: TableId | None,
        source_block: SourceBlock | None = None,
    ) -> None:
        self._endpoint = endpoint
        self._conn: Connection = connect(endpoint, conv=types.SNAPSHOT_CONVERSIONS)
        self._structures = structures
        self._captured = captured
        self._signal_table = signal_table
        self._source_block = source_block

    def close(self) -> None:
        self._conn.close()

    def matching_tables(self, patterns: tuple[str, ...]) -> list[TableId]:
        compiled = [re.compile(pattern, re.IGNORECASE) for pattern in patterns]
        return [t for t in self._captured() if any(p.fullmatch(str(t)) for p in compiled)]

    def snapshot_schema(self, table: TableId) -> TableSchema | None:
        return self._structures.schema(table)

    def max_key(
        self, table: TableSchema, *, key: tuple[str, ...], condition: str | None
    ) -> ChunkKey | None:
        key = self._decoder(table.id).mapped.sql_names(key)
        order = ", ".join(f"{quote(k)} DESC" for k in key)
        statement = (
            f"SELECT {_columns(key)} FROM {_table(table.id)}{_where([], condition)} "
            f"ORDER BY {order} LIMIT 1"
        )
        rows = self._fetch(statement, (), table.id)
        return tuple(rows[0]) if rows else None

    def read_chunk(
        self,
        table: TableSchema,
        *,
        key: tuple[str, ...],
        after: ChunkKey | None,
        up_to: ChunkKey,
        condition: str | None,
        limit: int,
    ) -> list[ChunkRow]:
        decoder = self._decoder(table.id)
        positions = [[c.name for c in table.columns].index(k) for k in key]
        key = decoder.mapped.sql_names(key)
        placeholders = "(" + ", ".join(["%s"] * len(key)) + ")"
        keys = f"({_columns(key)})"
        bounds = [f"{keys} <= {placeholders}"]
        params: list[Any] = list(up_to)
        if after is not None:
            bounds.insert(0, f"{keys} > {placeholders}")
            params = [*after, *params]
        statement = (
            f"SELECT {self._structures.select_list(table.id)} "
            f"FROM {_table(table.id)}{_where(bounds, condition)} "
            f"ORDER BY {_columns(key)} LIMIT {int(limit)}"
        )
        return [
            ChunkRow(key=tuple(row[i] for i in positions), values=decoder.convert(tuple(row)))
            for row in self._fetch(statement, tuple(params), table.id)
        ]

    def _decoder(self, table: TableId) -> RowDecoder:
        decoder = self._structures.decoder(table)
        assert decoder is not None, f"no structure for {table}"
        return decoder

    def missed(self, change: RowChange) -> bool:
        return False

    # -- read.only: positions instead of watermark rows (capabilities.PositionWatermarks) ----

    #: a chunk read cannot tell which streamed transactions it saw: every change streamed
    #: while its window is open drops its row (binlog row images are whole rows, so the
    #: streamed event carries the row as the chunk would have)
    sees_visibility = False

    def log_position(self) -> Offset:
        """The end of the binlog now (``SHOW MASTER STATUS``)."""
        self._alive()
        rows = query(self._conn, "SHOW MASTER STATUS")
        if not rows:
            raise FatalError("read.only: SHOW MASTER STATUS returned nothing: the binlog is off")
        return Offset({"file": str(rows[0][0]), "pos": int(rows[0][1])})

    def position_key(self, offset: Offset) -> tuple[Any, ...]:
        return BinlogPosition.from_offset(offset).order_key()[:2]  # (file number, pos)

    def source_at(self, offset: Offset) -> dict[str, Any]:
        assert self._source_block is not None, "read.only needs the connector's source block"
        position = BinlogPosition.from_offset(offset)
        return self._source_block.block(
            ts_ms=int(offset.get("ts_sec") or time.time()) * 1000,
            db="",
            table=None,
            server_id=int(offset.get("server_id") or 0),
            file=position.file,
            pos=position.pos,
        )

    def write_signal(self, *, signal_id: str, signal_type: str, data: str) -> None:
        assert self._signal_table is not None
        self._run(f"INSERT INTO {_table(self._signal_table)} VALUES (%s, %s, %s)",
                  (signal_id, signal_type, data))  # fmt: skip

    def delete_signal(self, *, signal_id: str) -> None:
        assert self._signal_table is not None
        schema = self._structures.schema(self._signal_table)
        id_column = schema.columns[0].name if schema is not None else "id"
        self._run(f"DELETE FROM {_table(self._signal_table)} WHERE {quote(id_column)} = %s",
                  (signal_id,))  # fmt: skip

    def source_for(
        self, source: Mapping[str, Any], table: TableId, *, snapshot: str
    ) -> dict[str, Any]:
        return {**source, "snapshot": snapshot, "db": table.schema, "table": table.table}

    def _run(self, statement: str, params: tuple[Any, ...]) -> None:
        """A signal-table write (a watermark), on a fresh connection if the old one broke."""
        self._alive()
        try:
            with self._conn.cursor() as cursor:
                cursor.execute(statement, params)
        except pymysql.err.OperationalError as error:
            if error.args and error.args[0] in DENIED:
                raise FatalError(
                    f"user {self._endpoint.user!r} may not write watermarks to the signal table "
                    f"{self._signal_table} ({error.args[-1]}): GRANT INSERT, DELETE ON "
                    f"{self._signal_table} TO '{self._endpoint.user}'"
                ) from None
            self._conn = connect(self._endpoint, conv=types.SNAPSHOT_CONVERSIONS)
            with self._conn.cursor() as cursor:
                cursor.execute(statement, params)

    def _alive(self) -> None:
        """Replace a connection the server closed (idle timeout, restart) with a new one."""
        try:
            self._conn.ping(reconnect=False)
        except pymysql.err.Error:
            self._conn = connect(self._endpoint, conv=types.SNAPSHOT_CONVERSIONS)

    def _fetch(self, statement: str, params: tuple[Any, ...], table: TableId) -> list[Any]:
        try:
            self._alive()
            with self._conn.cursor() as cursor:
                cursor.execute(statement, params)
                return list(cursor.fetchall())
        except pymysql.err.ProgrammingError as error:
            raise SnapshotQueryError(f"reading a chunk of {table}: {error.args[-1]}") from None
        except pymysql.err.OperationalError as error:
            if error.args and error.args[0] in CANNOT_CONNECT:  # the server went away
                raise RetriableError(
                    f"the connection reading chunks of {table} was lost: {error.args[-1]}"
                ) from None
            raise SnapshotQueryError(f"reading a chunk of {table}: {error.args[-1]}") from None
        except pymysql.err.InterfaceError as error:
            raise RetriableError(
                f"the connection reading chunks of {table} was lost: {error}"
            ) from None


def _columns(names: Sequence[str]) -> str:
    return ", ".join(quote(name) for name in names)


def _table(table: TableId) -> str:
    return f"{quote(table.schema)}.{quote(table.table)}"


def _where(bounds: Sequence[str], condition: str | None) -> str:
    parts = [*bounds, f"({condition})"] if condition else list(bounds)
    return f" WHERE {' AND '.join(parts)}" if parts else ""
