"""The change rows a Db2 connector has still to read against ASN's retention.

ASN's capture agent prunes change-data rows older than ``IBMSNAP_CAPPARMS.RETENTION_LIMIT``
minutes whether or not anyone read them, and a cold start empties the CD tables (a new
``CD_OLD_SYNCHPOINT``). The connector's change rows are at risk once the oldest one it has not
read nears the retention limit; they are lost once a captured table's change rows begin after
its position. Ages are measured on the server's clock: from the oldest unread row's
``IBMSNAP_LOGMARKER`` to the agent's last heartbeat (``SYNCHTIME``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from cdcflow.capture.connectors.db2 import sql
from cdcflow.capture.connectors.db2.connection import Connection
from cdcflow.capture.connectors.db2.lsn import Db2Position, Lsn
from cdcflow.capture.connectors.db2.tables import Registration
from cdcflow.capture.log_budget import WARNING_SHARE, LogBudget, LogState
from cdcflow.capture.spi import Offset


def measure(
    conn: Connection,
    statements: sql.AsnStatements,
    *,
    captured: Sequence[Registration],
    offset: Offset | None,
) -> LogBudget:
    """The budget of the ``captured`` tables' change rows for the connector at ``offset``."""
    synchpoint, synchtime = conn.query(statements.agent_progress)[0]
    position = (
        Db2Position.from_offset(offset).commit_lsn
        if offset is not None and offset.connector_values()
        else Lsn.of(synchpoint)
    )
    marks = [
        row[0][0]
        for registration in captured
        if (
            row := conn.query(
                sql.first_change_after(registration.cd_schema, registration.cd_table),
                (position.value,),
            )
        )
    ]
    oldest_unread = min(marks, default=None)
    retention = conn.query(statements.retention_limit)
    return judge(
        position=position,
        captured=captured,
        unread_age_s=(synchtime - oldest_unread).total_seconds() if oldest_unread else 0.0,
        retention_min=int(retention[0][0]) if retention else 0,
        agent_at=synchtime,
    )


def judge(
    *,
    position: Lsn,
    captured: Sequence[Registration],
    unread_age_s: float,
    retention_min: int,
    agent_at: datetime | None = None,
) -> LogBudget:
    """The budget from the agent's figures (pure)."""
    starts = [r for r in captured if r.start is not None]
    kept_from = max((r.start for r in starts if r.start is not None), default=None)
    facts: dict[str, Any] = {
        "retentionLimitMinutes": retention_min,
        "oldestUnreadSeconds": round(max(0.0, unread_age_s)),
        "agentSynchTime": agent_at.isoformat() if agent_at else None,
    }
    base = LogBudget(
        log="change tables",
        state=LogState.OK,
        message="",
        oldest_needed=str(position),
        oldest_kept=str(kept_from) if kept_from else "",
        facts=facts,
    )
    lost = [r for r in starts if r.start is not None and r.start > position]
    if lost:
        tables = ", ".join(str(r.table) for r in lost)
        return replace(
            base,
            state=LogState.LOST,
            message=f"the change rows of {tables} begin after the connector's position "
            f"{position} (CD_OLD_SYNCHPOINT): the agent was cold-started or pruned them",
        )
    limit_s = retention_min * 60
    age = f"the oldest change row not yet read was captured {round(unread_age_s)} s ago"
    if unread_age_s <= 0:
        age = "every change row is read"
    message = f"{age}; ASN prunes change rows after RETENTION_LIMIT={retention_min} min"
    at_risk = limit_s > 0 and unread_age_s >= (1 - WARNING_SHARE) * limit_s
    return replace(base, state=LogState.WARNING if at_risk else LogState.OK, message=message)
