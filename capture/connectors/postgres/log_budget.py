"""The WAL a replication slot holds back, and how close ``max_slot_wal_keep_size`` is to
invalidating it (``pg_replication_slots.wal_status`` and ``safe_wal_size``)."""

from __future__ import annotations

from typing import Any

import psycopg

from cdcflow.capture.log_budget import WARNING_SHARE, LogBudget, LogState, size

#: The slot's state; on a standby the WAL position is the last one replayed. The keep size
#: is in MB (-1: no limit).
SLOT_WAL_SQL = """
SELECT s.wal_status, s.safe_wal_size,
       pg_wal_lsn_diff(
           CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn()
                ELSE pg_current_wal_lsn() END,
           s.restart_lsn)::bigint,
       s.restart_lsn::text, s.confirmed_flush_lsn::text,
       (SELECT setting::bigint FROM pg_settings WHERE name = 'max_slot_wal_keep_size')
FROM pg_replication_slots s WHERE s.slot_name = %s AND s.database = current_database()
"""

MIB = 1024 * 1024


def measure(conn: psycopg.Connection[tuple[Any, ...]], slot: str) -> LogBudget:
    """The slot's budget now."""
    row = conn.execute(SLOT_WAL_SQL, (slot,)).fetchone()
    if row is None:
        return LogBudget(
            log="wal",
            state=LogState.LOST,
            message=f"replication slot {slot} is gone: the changes it held are lost",
            facts={"slot": slot},
        )
    wal_status, safe, retained, restart, confirmed, keep_mb = row
    return judge(
        slot=slot,
        wal_status=str(wal_status or ""),
        safe_bytes=None if safe is None else int(safe),
        retained_bytes=None if retained is None else int(retained),
        keep_bytes=None if keep_mb is None or int(keep_mb) < 0 else int(keep_mb) * MIB,
        restart_lsn=str(restart or ""),
        confirmed_lsn=str(confirmed or ""),
    )


def judge(
    *,
    slot: str,
    wal_status: str,
    safe_bytes: int | None,
    retained_bytes: int | None,
    keep_bytes: int | None,
    restart_lsn: str = "",
    confirmed_lsn: str = "",
) -> LogBudget:
    """The budget from the slot's figures (pure)."""
    held = size(retained_bytes or 0)
    facts = {"slot": slot, "walStatus": wal_status, "confirmedFlushLsn": confirmed_lsn}
    state, message = LogState.OK, f"replication slot {slot} holds back {held} of WAL"
    if wal_status == "lost":
        state = LogState.LOST
        message = (
            f"replication slot {slot} is invalidated (wal_status=lost): the server removed "
            "WAL it still needed (max_slot_wal_keep_size)"
        )
    elif wal_status == "unreserved":
        state = LogState.WARNING
        message = (
            f"replication slot {slot} holds back {held} of WAL, more than "
            "max_slot_wal_keep_size allows (wal_status=unreserved): the next checkpoint "
            "invalidates it unless the connector catches up"
        )
    elif keep_bytes is None:
        message += " (max_slot_wal_keep_size=-1: the server keeps it until the disk fills)"
    elif safe_bytes is not None:
        message += (
            f"; {size(safe_bytes)} more may be written before max_slot_wal_keep_size "
            f"({size(keep_bytes)}) invalidates it"
        )
        if safe_bytes < WARNING_SHARE * keep_bytes:
            state = LogState.WARNING
    return LogBudget(
        log="wal",
        state=state,
        message=message,
        retained_bytes=retained_bytes,
        safe_bytes=safe_bytes if keep_bytes is not None else None,
        oldest_needed=restart_lsn,
        facts=facts,
    )
