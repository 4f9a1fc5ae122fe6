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
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import psycopg
from psycopg import sql
from psycopg.types.string import TextLoader

from cdcflow.capture.connectors.postgres.source import SourceBlock
from cdcflow.capture.connectors.postgres.tables import DecodedTable
from cdcflow.capture.converting import ConversionError, ConvertingFailures
from cdcflow.capture.errors import FatalError, sentence
from cdcflow.capture.spi import Op, RowChange, TableId

ESTIMATE_SQL = """
SELECT c.reltuples::bigint FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = %s AND c.relname = %s
"""


#: ``snapshot.isolation.mode`` values and the isolation level each opens.
ISOLATION_LEVELS: Mapping[str, psycopg.IsolationLevel] = {
    "serializable": psycopg.IsolationLevel.SERIALIZABLE,
    "repeatable_read": psycopg.IsolationLevel.REPEATABLE_READ,
    "read_committed": psycopg.IsolationLevel.READ_COMMITTED,
    "read_uncommitted": psycopg.IsolationLevel.READ_UNCOMMITTED,
}


def begin_snapshot(
    conn: psycopg.Connection[tuple[Any, ...]],
    *,
    exported_snapshot: str | None,
    type_oids: Iterable[int],
    isolation: str = "repeatable_read",
    deferrable: bool | None = None,
) -> None:
    """Open the read-only snapshot transaction, on the exported snapshot if given.

    ``isolation`` is a ``snapshot.isolation.mode``; as in Debezium a ``serializable`` one is
    ``DEFERRABLE`` (unless ``deferrable`` says otherwise: a transaction importing a snapshot
    cannot be). Every type is loaded as the raw text the server sent, which is byte for byte
    what pgoutput sends; ``col::text`` would differ for bool, char(n) and inet.
    """
    for oid in type_oids:
        conn.adapters.register_loader(oid, TextLoader)
    conn.isolation_level = ISOLATION_LEVELS[isolation]
    conn.read_only = True
    if isolation == "serializable":
        conn.deferrable = not exported_snapshot if deferrable is None else deferrable
    if exported_snapshot:
        conn.execute(sql.SQL("SET TRANSACTION SNAPSHOT {}").format(sql.Literal(exported_snapshot)))
    else:
        conn.execute("SELECT 1")


def shares_snapshot(isolation: str) -> bool:
    """Whether a transaction of this isolation can export its snapshot to parallel readers
    (READ COMMITTED takes a new snapshot per statement: there is none to share)."""
    return isolation in ("serializable", "repeatable_read")


def order_by_row_count(estimates: Mapping[TableId, int], order: str) -> dict[TableId, int]:
    """``snapshot.tables.order.by.row.count``: ``ascending`` or ``descending`` by the row
    estimate, ties in their given order; ``disabled`` keeps the given order."""
    if order == "disabled":
        return dict(estimates)
    sign = 1 if order == "ascending" else -1
    return dict(sorted(estimates.items(), key=lambda item: sign * item[1]))


def current_lsn(conn: psycopg.Connection[tuple[Any, ...]]) -> int:
    """The server's current WAL position, as an integer."""
    row = conn.execute("SELECT pg_current_wal_lsn() - '0/0'::pg_lsn").fetchone()
    assert row is not None
    return int(str(row[0]))


def transaction_xid(conn: psycopg.Connection[tuple[Any, ...]]) -> int | None:
    """The snapshot transaction's xid, which Debezium puts in ``source.txId`` of ``op: r``
    events (assigning one, as Debezium's ``txid_current()`` does; none on a standby)."""
    row = conn.execute(
        "SELECT CASE WHEN pg_is_in_recovery() THEN NULL ELSE txid_current() END"
    ).fetchone()
    return None if row is None or row[0] is None else int(row[0])


def estimate_rows(conn: psycopg.Connection[tuple[Any, ...]], table: TableId) -> int:
    """The planner's row estimate (cheap; exact counts would scan the table)."""
    row = conn.execute(ESTIMATE_SQL, (table.schema, table.table)).fetchone()
    return max(0, int(row[0])) if row and row[0] is not None else 0


def select_statement(decoded: DecodedTable, override: str | None) -> sql.SQL | sql.Composed:
    """``SELECT col, … FROM table`` (snapshot.query.mode=select_all), or the override as is."""
    if override:
        return sql.SQL(override)
    columns = sql.SQL(", ").join(sql.Identifier(name) for name in decoded.sql_names)
    table = decoded.schema.id
    return sql.SQL("SELECT {} FROM {}").format(columns, sql.Identifier(table.schema, table.table))


def override_columns(decoded: DecodedTable, names: Sequence[str]) -> tuple[int | None, ...]:
    """For each column of ``decoded``, its position among an override's result ``names``.

    Debezium maps an override's result to the table by column name: a column the statement
    leaves out is NULL, a result column the table does not have is an error.
    """
    unknown = [name for name in names if name not in decoded.sql_names]
    if unknown:
        raise FatalError(
            f"the snapshot.select.statement.overrides statement of {decoded.schema.id} returns "
            f"column(s) {', '.join(unknown)} that the table does not have (or cdcflow does not "
            "capture); select only its columns, under their names"
        )
    return tuple(names.index(name) if name in names else None for name in decoded.sql_names)


def lock_tables(
    conn: psycopg.Connection[tuple[Any, ...]],
    tables: Sequence[TableId],
    *,
    mode: str,
    timeout_ms: int,
) -> None:
    """``snapshot.locking.mode=shared``: ACCESS SHARE locks on the snapshotted tables, held
    until the snapshot transaction ends, so no DDL changes them meanwhile.

    Waits at most ``snapshot.lock.timeout.ms`` per lock; failing that the snapshot is aborted.
    """
    if mode != "shared" or not tables:
        return
    conn.execute(sql.SQL("SET LOCAL lock_timeout = {}").format(sql.Literal(str(timeout_ms))))
    for table in tables:
        try:
            conn.execute(
                sql.SQL("LOCK TABLE {} IN ACCESS SHARE MODE").format(
                    sql.Identifier(table.schema, table.table)
                )
            )
        except psycopg.errors.LockNotAvailable:
            raise FatalError(
                f"snapshot aborted: no lock on {table} within snapshot.lock.timeout.ms="
                f"{timeout_ms} (snapshot.locking.mode=shared). Another session holds a "
                "conflicting lock; retry when it is done, raise the timeout, or use "
                "snapshot.locking.mode=none"
            ) from None


def read_table(
    conn: psycopg.Connection[tuple[Any, ...]],
    decoded: DecodedTable,
    *,
    overrides: Mapping[str, str],
    fetch_size: int,
    source_block: SourceBlock,
    lsn: int,
    tx_id: int | None,
    converting: ConvertingFailures | None = None,
) -> Iterator[RowChange]:
    """Yield one ``op: r`` change per row of ``decoded``'s table.

    A value that cannot be converted is handled by ``converting``
    (``event.converting.failure.handling.mode``); one that cannot be null fails the snapshot.
    """
    schema = decoded.schema
    statement = select_statement(decoded, overrides.get(str(schema.id)))
    base = source_block.build(
        ts_us=time.time_ns() // 1000,
        table=schema.id,
        tx_id=tx_id,
        lsn=lsn,
        last_commit_lsn=None,
        snapshot="true",
    )
    converters, columns = decoded.converters, schema.columns
    convert_row = (converting or ConvertingFailures("fail")).convert
    with conn.cursor(name=f"cdcflow_snapshot_{schema.id.table}"[:60]) as cursor:
        cursor.itersize = fetch_size
        try:
            cursor.execute(statement)
        except psycopg.Error as error:
            raise _snapshot_failed(schema.id, error) from None
        order = None
        if overrides.get(str(schema.id)):
            names = [column.name for column in cursor.description or ()]
            order = override_columns(decoded, names)
        for row in _fetched(cursor, schema.id):
            if order is not None:
                row = tuple(None if i is None else row[i] for i in order)
            try:
                after = convert_row(schema.id, columns, converters, row)
            except ConversionError as error:
                raise FatalError(
                    f"snapshot of {schema.id} failed: {sentence(error)} Fix the value, or set "
                    "event.converting.failure.handling.mode=warn (nullable columns become null)"
                ) from None
            yield RowChange(schema, Op.READ, None, after, base)  # shared: nothing mutates it


def _fetched(cursor: psycopg.ServerCursor[Any], table: TableId) -> Iterator[Any]:
    """The cursor's rows, ``itersize`` per fetch; a failed fetch (a statement timeout, a lost
    connection) fails the snapshot with the server's message."""
    # fetchmany, not iterating the cursor: its iterator is a Python generator resumed per row
    size = cursor.itersize
    while True:
        try:
            rows = cursor.fetchmany(size)
        except psycopg.Error as error:
            raise _snapshot_failed(table, error) from None
        yield from rows
        if len(rows) < size:
            return


def _snapshot_failed(table: TableId, error: psycopg.Error) -> FatalError:
    hint = " (database.query.timeout.ms)" if isinstance(error, psycopg.errors.QueryCanceled) else ""
    return FatalError(f"snapshot of {table} failed: {str(error).strip()}{hint}")
