"""Key-ordered chunk reads and signal-table writes for Db2 incremental and blocking snapshots.

Chunks decode with the structures the stream uses. No change can be missed by a chunk: the
CD tables hold changes in commit-LSN order, so every change committed before the open
watermark reaches the stream before the watermark does, and a chunk read after the
watermark committed sees it.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Mapping
from typing import Any

from cdcflow.capture.connectors.db2 import sql
from cdcflow.capture.connectors.db2.connection import (
    Connection,
    Driver,
    Endpoint,
    StatementError,
    connect,
)
from cdcflow.capture.connectors.db2.tables import Decoder, Structures
from cdcflow.capture.errors import FatalError, RetriableError, SnapshotQueryError
from cdcflow.capture.spi import ChunkKey, ChunkRow, RowChange, TableId, TableSchema

#: SQLCODE of a statement the user holds no privilege for.
NOT_AUTHORIZED = -551


class Db2Chunks:
    """The :class:`~cdcflow.capture.spi.ChunkSource` of the Db2 connector."""

    def __init__(
        self,
        endpoint: Endpoint,
        driver: Driver,
        *,
        structures: Structures,
        captured: Callable[[], list[TableId]],
        signal_table: TableId | None,
    ) -> None:
        self._endpoint, self._driver = endpoint, driver
        self._conn: Connection = connect(endpoint, driver)
        self._structures = structures
        self._captured = captured
        self._signal_table = signal_table

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
        statement = sql.max_key(table.id.schema, table.id.table, key=key, condition=condition)
        rows = self._fetch(statement, [], table.id)
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
        statement = sql.chunk(
            table.id.schema,
            table.id.table,
            columns=decoder.names,
            key=decoder.mapped.sql_names(key),
            after=after is not None,
            condition=condition,
            limit=limit,
        )
        params = [
            *(sql.key_after_parameters(after) if after is not None else []),
            *sql.key_after_parameters(up_to),
        ]
        return [
            ChunkRow(key=tuple(row[i] for i in positions), values=decoder.ordered(row))
            for row in self._fetch(statement, params, table.id)
        ]

    def _decoder(self, table: TableId) -> Decoder:
        decoder = self._structures.decoder(table)
        assert decoder is not None, f"no structure for {table}"
        return decoder

    def missed(self, change: RowChange) -> bool:
        return False

    def write_signal(self, *, signal_id: str, signal_type: str, data: str) -> None:
        table = self._signal()
        self._write(sql.insert_signal(table.schema, table.table), [signal_id, signal_type, data])

    def delete_signal(self, *, signal_id: str) -> None:
        table = self._signal()
        schema = self._structures.schema(table)
        id_column = schema.columns[0].name if schema is not None else "ID"
        self._write(sql.delete_signal(table.schema, table.table, id_column), [signal_id])

    def source_for(
        self, source: Mapping[str, Any], table: TableId, *, snapshot: str
    ) -> dict[str, Any]:
        return {**source, "snapshot": snapshot, "schema": table.schema, "table": table.table}

    def _signal(self) -> TableId:
        assert self._signal_table is not None, "incremental snapshots need signal.data.collection"
        return self._signal_table

    def _write(self, statement: str, params: list[Any]) -> None:
        """A committed signal-table write (a watermark), on a new connection if needed."""
        for attempt in (1, 2):
            try:
                self._conn.execute(statement, params)
                self._conn.commit()
                return
            except StatementError as error:
                self._conn.rollback()
                if error.sqlcode == NOT_AUTHORIZED:
                    raise FatalError(
                        f"{error} The connector's user needs INSERT and DELETE on the signal "
                        f"table: GRANT INSERT, DELETE ON {self._signal_table} TO USER "
                        f"{self._endpoint.user}"
                    ) from None
                raise
            except RetriableError:
                if attempt == 2:
                    raise
                self._conn.close()
                self._conn = connect(self._endpoint, self._driver)

    def _fetch(self, statement: str, params: list[Any], table: TableId) -> list[Any]:
        try:
            return self._conn.query(statement, params)
        except StatementError as error:
            raise SnapshotQueryError(f"reading a chunk of {table}: {error}") from None
        finally:
            # a connection that is gone (RetriableError) restarts the connector, which
            # resumes at this chunk: not a query error that would abandon the table
            with contextlib.suppress(RetriableError):
                self._conn.rollback()
