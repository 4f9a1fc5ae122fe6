"""Reads captured tables inside one REPEATABLE READ transaction for the consistent snapshot.

When the replication slot was created just now, the transaction imports the snapshot the slot
exported (``SET TRANSACTION SNAPSHOT``), so the rows read are exactly the state at the slot's
consistent point and streaming picks up with the first transaction after it: nothing missed,
nothing doubled. Rows are fetched through a server-side cursor ``snapshot.fetch.size`` at a
time and each column is loaded as the server's raw text, the same form pgoutput sends, so one
converter serves both paths.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import psycopg
from psycopg import sql
from psycopg.types.string import TextLoader

from cdcflow.capture.connectors.postgres.source import SourceBlock
from cdcflow.capture.connectors.postgres.tables import DecodedTable
from cdcflow.capture.errors import FatalError
from cdcflow.capture.spi import Op, RowChange, TableId

ESTIMATE_SQL = """
SELECT c.reltuples::bigint FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = %s AND c.relname = %s
"""


def begin_snapshot(
    conn: psycopg.Connection[tuple[Any, ...]],
    *,
    exported_snapshot: str | None,
    type_oids: Iterable[int],
) -> None:
    """Open the read-only REPEATABLE READ transaction, on the exported snapshot if given.

    Every type is loaded as the raw text the server sent, which is byte for byte what pgoutput
    sends; ``col::text`` would differ for bool, char(n) and inet.
    """
    for oid in type_oids:
        conn.adapters.register_loader(oid, TextLoader)
    conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
    conn.read_only = True
    if exported_snapshot:
        conn.execute(sql.SQL("SET TRANSACTION SNAPSHOT {}").format(sql.Literal(exported_snapshot)))
    else:
        conn.execute("SELECT 1")


def current_lsn(conn: psycopg.Connection[tuple[Any, ...]]) -> int:
    """The server's current WAL position, as an integer."""
    row = conn.execute("SELECT pg_current_wal_lsn() - '0/0'::pg_lsn").fetchone()
    assert row is not None
    return int(str(row[0]))


def estimate_rows(conn: psycopg.Connection[tuple[Any, ...]], table: TableId) -> int:
    """The planner's row estimate (cheap; exact counts would scan the table)."""
    row = conn.execute(ESTIMATE_SQL, (table.schema, table.table)).fetchone()
    return max(0, int(row[0])) if row and row[0] is not None else 0


def select_statement(decoded: DecodedTable, override: str | None) -> sql.Composed:
    """``SELECT col, …`` over the table, or over the user's override statement."""
    columns = sql.SQL(", ").join(sql.Identifier(column.name) for column in decoded.schema.columns)
    if override:
        return sql.SQL("SELECT {} FROM ({}) AS snapshot_override").format(
            columns,
            sql.SQL(override),
        )
    table = decoded.schema.id
    return sql.SQL("SELECT {} FROM {}").format(columns, sql.Identifier(table.schema, table.table))


def read_table(
    conn: psycopg.Connection[tuple[Any, ...]],
    decoded: DecodedTable,
    *,
    overrides: Mapping[str, str],
    fetch_size: int,
    source_block: SourceBlock,
    lsn: int,
) -> Iterator[RowChange]:
    """Yield one ``op: r`` change per row of ``decoded``'s table."""
    schema = decoded.schema
    statement = select_statement(decoded, overrides.get(str(schema.id)))
    base = source_block.build(
        ts_us=time.time_ns() // 1000,
        table=schema.id,
        tx_id=None,
        lsn=lsn,
        last_commit_lsn=None,
        snapshot="true",
    )
    converters = decoded.converters
    with conn.cursor(name=f"cdcflow_snapshot_{schema.id.table}"[:60]) as cursor:
        cursor.itersize = fetch_size
        try:
            cursor.execute(statement)
        except psycopg.Error as error:
            raise FatalError(f"snapshot of {schema.id} failed: {str(error).strip()}") from None
        for row in cursor:
            after = tuple(convert(value) for convert, value in zip(converters, row, strict=True))
            yield RowChange(schema, Op.READ, None, after, dict(base))
