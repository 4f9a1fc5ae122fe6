"""The binlog a MySQL/MariaDB connector still needs against the binlog the server keeps.

The server purges whole files, oldest first, by age (``binlog_expire_logs_seconds``,
``expire_logs_days``) or by hand (``PURGE BINARY LOGS``); it never purges the file it writes.
So the connector's position is at risk exactly while the file it resumes in is the oldest the
server keeps and no longer the one being written.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cdcflow.capture.connectors.mysql.connection import Connection, query
from cdcflow.capture.connectors.mysql.position import BinlogPosition
from cdcflow.capture.log_budget import LogBudget, LogState, size
from cdcflow.capture.spi import Offset

EXPIRY_SQL = "SELECT @@binlog_expire_logs_seconds"
EXPIRY_DAYS_SQL = "SELECT @@expire_logs_days"


def measure(conn: Connection, offset: Offset | None) -> LogBudget:
    """The budget for the connector at ``offset`` (at the binlog's end before any)."""
    files = [(str(row[0]), int(row[1])) for row in query(conn, "SHOW BINARY LOGS")]
    needed = (
        BinlogPosition.from_offset(offset)
        if offset is not None and offset.connector_values()
        else None
    )
    return judge(
        files,
        needed_file=needed.file if needed else files[-1][0],
        needed_pos=needed.pos if needed else files[-1][1],
        expire_seconds=_expiry_seconds(conn),
    )


def _expiry_seconds(conn: Connection) -> int:
    """How long the server keeps a binlog (0: until purged by hand)."""
    try:
        return int(query(conn, EXPIRY_SQL)[0][0] or 0)
    except Exception:  # before MariaDB 10.6 / MySQL 8.0 only the day count exists
        return int(float(query(conn, EXPIRY_DAYS_SQL)[0][0] or 0) * 86400)


def judge(
    files: Sequence[tuple[str, int]],
    *,
    needed_file: str,
    needed_pos: int,
    expire_seconds: int,
) -> LogBudget:
    """The budget from ``SHOW BINARY LOGS`` (name, size, oldest first) (pure)."""
    names = [name for name, _ in files]
    oldest, newest = names[0], names[-1]
    facts: dict[str, Any] = {
        "binlogFiles": len(files),
        "binlogExpireSeconds": expire_seconds,
    }
    if needed_file not in names:
        return LogBudget(
            log="binlog",
            state=LogState.LOST,
            message=f"binlog file {needed_file}, where the connector resumes, is purged: the "
            f"oldest the server keeps is {oldest}",
            oldest_needed=needed_file,
            oldest_kept=oldest,
            facts=facts,
        )
    index = names.index(needed_file)
    retained = sum(file_size for _, file_size in files[index:]) - min(needed_pos, files[index][1])
    expiry = f"after {expire_seconds} s" if expire_seconds else "only by hand"
    message = (
        f"the connector needs binlog from {needed_file} on ({size(retained)} not yet read); "
        f"the server keeps {len(files)} files from {oldest} and purges them {expiry}"
    )
    state = LogState.OK
    if needed_file == oldest and needed_file != newest:
        state = LogState.WARNING
        message = (
            f"the connector still needs {needed_file}, the oldest binlog the server keeps: the "
            f"next purge ({expiry}) removes it ({size(retained)} not yet read)"
        )
    return LogBudget(
        log="binlog",
        state=state,
        message=message,
        retained_bytes=retained,
        oldest_needed=needed_file,
        oldest_kept=oldest,
        facts=facts,
    )
