"""Startup checks that turn a misconfigured server into one clear message naming the fix."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

import psycopg

from cdcflow.capture.errors import FatalError, PositionLostError, position_lost
from cdcflow.capture.spi import TableId

log = logging.getLogger(__name__)

#: How to keep a slot from losing its WAL, for every lost-position message.
PREVENT = (
    "keep the connector running, or give the slot room (max_slot_wal_keep_size); the LogSafe "
    "condition warns before the server removes what the slot needs"
)

ROLE_SQL = """
SELECT rolsuper, rolreplication,
       pg_has_role(current_user, 'rds_replication', 'member') AS rds
FROM pg_roles WHERE rolname = current_user
"""
ROLE_SQL_PLAIN = "SELECT rolsuper, rolreplication, false FROM pg_roles WHERE rolname = current_user"
SLOT_SQL = """
SELECT active, active_pid, confirmed_flush_lsn::text, plugin, wal_status
FROM pg_replication_slots WHERE slot_name = %s AND database = current_database()
"""
XMIN_SQL = """
SELECT catalog_xmin::text::bigint FROM pg_replication_slots
WHERE slot_name = %s AND database = current_database()
"""
NO_IDENTITY_SQL = """
SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.oid = %s::regclass AND (c.relreplident = 'n' OR (c.relreplident = 'd' AND NOT EXISTS (
    SELECT 1 FROM pg_index i WHERE i.indrelid = c.oid AND i.indisprimary)))
"""


ALL_TABLES_WITHOUT_IDENTITY_SQL = """
SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition
  AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_%%'
  AND (c.relreplident = 'n' OR (c.relreplident = 'd' AND NOT EXISTS (
      SELECT 1 FROM pg_index i WHERE i.indrelid = c.oid AND i.indisprimary)))
ORDER BY 1, 2
"""
IDENTITY_LIST_LIMIT = 10


def check_wal_level(conn: psycopg.Connection[tuple[Any, ...]]) -> None:
    row = conn.execute("SHOW wal_level").fetchone()
    level = str(row[0]) if row else "unknown"
    if level != "logical":
        raise FatalError(
            f"PostgreSQL has wal_level={level}, but logical decoding needs wal_level=logical. "
            "Run `ALTER SYSTEM SET wal_level = logical;` (or set it in postgresql.conf) and "
            "restart the server."
        )


def check_replication_role(conn: psycopg.Connection[tuple[Any, ...]], user: str) -> None:
    try:
        row = conn.execute(ROLE_SQL).fetchone()
    except psycopg.errors.UndefinedObject:
        conn.rollback() if not conn.autocommit else None
        row = conn.execute(ROLE_SQL_PLAIN).fetchone()
    if row is None or not any(bool(flag) for flag in row):
        raise FatalError(
            f"user {user} lacks the REPLICATION attribute needed to stream changes. Run "
            f"`ALTER ROLE {user} REPLICATION;` as a superuser (on Amazon RDS: "
            f"`GRANT rds_replication TO {user};`)."
        )


def check_select(
    conn: psycopg.Connection[tuple[Any, ...]], user: str, tables: Sequence[TableId]
) -> None:
    denied = [
        table
        for table in tables
        if not _scalar(conn, "SELECT has_table_privilege(%s, 'SELECT')", (_regclass(table),))
    ]
    if denied:
        names = ", ".join(str(table) for table in denied)
        raise FatalError(
            f"user {user} may not read {names}. Grant it, e.g. `GRANT SELECT ON {names} TO {user};`"
        )


def _tables_without_identity(conn: psycopg.Connection[tuple[Any, ...]]) -> tuple[int, str]:
    """How many tables have no replica identity, and their names (the first few)."""
    names = [f"{schema}.{table}" for schema, table in conn.execute(ALL_TABLES_WITHOUT_IDENTITY_SQL)]
    shown = ", ".join(names[:IDENTITY_LIST_LIMIT])
    more = len(names) - IDENTITY_LIST_LIMIT
    return len(names), shown + (f" and {more} more" if more > 0 else "")


def refuse_breaking_writes(conn: psycopg.Connection[tuple[Any, ...]], publication: str) -> None:
    """Before ``CREATE PUBLICATION … FOR ALL TABLES``: stop if that would make PostgreSQL
    refuse UPDATE and DELETE on tables without a replica identity, captured or not."""
    count, shown = _tables_without_identity(conn)
    if not count:
        return
    raise FatalError(
        f"publication.autocreate.mode=all_tables would create publication {publication} FOR ALL "
        f"TABLES, and PostgreSQL would then refuse UPDATE and DELETE on {count} table(s) "
        f"without a replica identity (no primary key, or REPLICA IDENTITY NOTHING): {shown}. "
        "That would break the application's writes, so nothing was created. Either set "
        "publication.autocreate.mode=filtered (only the captured tables are published), or give "
        "those tables a primary key or `ALTER TABLE … REPLICA IDENTITY FULL`, or create the "
        "publication yourself. See docs/postgresql.md (Server setup)."
    )


def warn_blocked_writes(conn: psycopg.Connection[tuple[Any, ...]], publication: str) -> None:
    """At every start on an existing ``FOR ALL TABLES`` publication: tables created since (or
    before it existed) without a replica identity have their UPDATE and DELETE refused."""
    count, shown = _tables_without_identity(conn)
    if count:
        log.warning(
            "publication %s is FOR ALL TABLES, so PostgreSQL refuses UPDATE and DELETE on %d "
            "table(s) without a replica identity: %s. Give them a primary key or `ALTER TABLE "
            "… REPLICA IDENTITY FULL`, or publish only the captured tables "
            "(publication.autocreate.mode=filtered, after dropping the publication)",
            publication,
            count,
            shown,
        )


def warn_missing_identity(
    conn: psycopg.Connection[tuple[Any, ...]], tables: Sequence[TableId]
) -> None:
    for table in tables:
        if conn.execute(NO_IDENTITY_SQL, (_regclass(table),)).fetchone():
            log.warning(
                "table %s has no replica identity (REPLICA IDENTITY NOTHING, or DEFAULT "
                "without a primary key): PostgreSQL will refuse UPDATE and DELETE on it while "
                "it is published, and cdcflow can only capture inserts. Give it a primary key "
                "with REPLICA IDENTITY DEFAULT, or run `ALTER TABLE %s REPLICA IDENTITY FULL;`.",
                table,
                table,
            )


def slot_state(conn: psycopg.Connection[tuple[Any, ...]], slot: str) -> tuple[Any, ...] | None:
    """(active, active_pid, confirmed_flush_lsn, plugin, wal_status) or None if missing."""
    return conn.execute(SLOT_SQL, (slot,)).fetchone()


def slot_catalog_xmin(conn: psycopg.Connection[tuple[Any, ...]], slot: str) -> int | None:
    """The slot's ``catalog_xmin`` (what Debezium puts in ``source.xmin``), None if unknown."""
    row = conn.execute(XMIN_SQL, (slot,)).fetchone()
    return None if row is None or row[0] is None else int(row[0])


def wait_for_slot(
    conn: psycopg.Connection[tuple[Any, ...]],
    slot: str,
    *,
    retries: int,
    delay_s: float,
    sleep: Callable[[float], object] = time.sleep,
) -> tuple[Any, ...] | None:
    """The slot's state once no other process streams from it, checked as
    :func:`check_slot_free` does.

    While the slot is active, retry ``slot.max.retries`` times ``slot.retry.delay.ms`` apart
    (a previous run's walsender may still be letting go of it), as Debezium does.
    """
    state = slot_state(conn, slot)
    for attempt in range(1, retries + 1):
        if state is None or not state[0]:
            break
        log.warning(
            "replication slot %s is in use by PID %s; waiting %.1fs and retrying, attempt %d of %d",
            slot,
            state[1],
            delay_s,
            attempt,
            retries,
        )
        sleep(delay_s)
        state = slot_state(conn, slot)
    check_slot_free(state, slot, retries=retries)
    return state


def check_slot_free(state: tuple[Any, ...] | None, slot: str, *, retries: int = 0) -> None:
    if state is None:
        return
    active, pid, _lsn, plugin, _wal_status = state
    if plugin != "pgoutput":
        raise FatalError(
            f"replication slot {slot} uses the {plugin} plugin, cdcflow needs pgoutput. Drop it "
            f"(`SELECT pg_drop_replication_slot('{slot}');`) or choose another slot.name."
        )
    if active:
        waited = f" (still after {retries} retries, slot.max.retries)" if retries else ""
        raise FatalError(
            f"replication slot {slot} is in use by another process (PID {pid}){waited}. Stop "
            "the other connector, or give this one its own slot.name."
        )


def slot_invalidated(slot: str) -> PositionLostError:
    """The error for a slot whose WAL the server removed (``wal_status = 'lost'``)."""
    return position_lost(
        f"replication slot {slot} is invalidated (wal_status=lost): the server removed WAL it "
        "held for the connector (max_slot_wal_keep_size), so the changes since the connector "
        "last confirmed a position are gone",
        prevent=PREVENT,
    )


def _regclass(table: TableId) -> str:
    return f'"{table.schema}"."{table.table}"'


def _scalar(conn: psycopg.Connection[tuple[Any, ...]], query: str, params: tuple[Any, ...]) -> Any:
    row = conn.execute(query, params).fetchone()
    return row[0] if row else None


def check_guardrail(tables: Sequence[TableId], *, limit: int, action: str) -> None:
    """``guardrail.collections.max``: more captured tables than ``limit`` (0: no limit) fail
    the start (``guardrail.collections.limit.action=fail``) or log a warning (``warn``)."""
    if limit <= 0:
        log.info("Guardrail validation skipped")
        return
    if len(tables) <= limit:
        log.info(
            "Guardrail validation passed: %d tables/collections configured for capture (limit: %d)",
            len(tables),
            limit,
        )
        return
    message = (
        f"Guardrail limit exceeded: {len(tables)} tables/collections configured for capture, "
        f"but maximum allowed is {limit}."
    )
    if action == "fail":
        raise FatalError(
            f"{message} Narrow table.include.list / schema.include.list, or raise "
            "guardrail.collections.max."
        )
    log.warning(message)


def is_standby(conn: psycopg.Connection[tuple[Any, ...]]) -> bool:
    """Whether the server is a standby (in recovery): logical decoding works there from 16 on,
    but nothing can be written."""
    return bool(_scalar(conn, "SELECT pg_is_in_recovery()", ()))


def check_standby(
    conn: psycopg.Connection[tuple[Any, ...]], *, action_query: str, writes_watermarks: bool
) -> None:
    """What a connector on a standby cannot do, refused at start with the way out; what puts
    its slot at risk, warned about."""
    if action_query:
        raise FatalError(
            "heartbeat.action.query writes, and the server is a standby, which cannot: remove "
            "it (on a standby the slot follows the WAL the primary sends, with no writes of "
            "the connector's), or point the connector at the primary"
        )
    if writes_watermarks:
        raise FatalError(
            "incremental snapshots (and snapshot.strategy=chunked) write watermark rows into "
            "the signal table, and the server is a standby, which cannot: set read.only=true "
            "(chunks are then bracketed by WAL positions and nothing is written; signals come "
            "through Kafka, POST /signals or rows inserted on the primary)"
        )
    if str(_scalar(conn, "SHOW hot_standby_feedback", ())) != "on":
        log.warning(
            "the server is a standby without hot_standby_feedback: the primary may remove "
            "catalog rows the replication slot still needs, and the standby then invalidates "
            "the slot. Set hot_standby_feedback = on (and primary_slot_name) on the standby"
        )
    log.info(
        "the server is a standby: a new replication slot is ready at the primary's next "
        "running-transactions record (`SELECT pg_log_standby_snapshot();` on the primary "
        "makes one now); publications and signal rows are written on the primary"
    )


def failover_supported(conn: psycopg.Connection[tuple[Any, ...]]) -> bool:
    """Whether a failover slot can be created: PostgreSQL 17 or newer, and a primary."""
    if conn.info.server_version < 170000:
        log.info(
            "slot.failover: PostgreSQL %s cannot create failover slots (17 or newer can); "
            "creating a regular slot",
            conn.info.server_version,
        )
        return False
    if _scalar(conn, "SELECT pg_is_in_recovery()", ()):
        log.info("slot.failover: a standby cannot create a failover slot; creating a regular slot")
        return False
    return True
