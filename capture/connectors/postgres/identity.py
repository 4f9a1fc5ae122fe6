"""``replica.identity.autoset.values``: set the replica identity of captured tables at start.

Debezium does this when it opens the replication connection, after the publication and before
the slot: for each captured table that exactly one rule matches, it reads the current replica
identity (``DEFAULT``, ``FULL``, ``NOTHING`` or ``USING INDEX <name>``) and, when it differs,
runs ``ALTER TABLE … REPLICA IDENTITY …``. Failures (a missing privilege, an unknown index,
two rules matching one table) are logged and the table is left as it is, as in Debezium.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg import sql

from cdcflow.capture.connectors.postgres.properties import ReplicaIdentityRule
from cdcflow.capture.spi import TableId

log = logging.getLogger(__name__)

CURRENT_SQL = """
SELECT c.relreplident,
       (SELECT i.relname FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
        WHERE x.indrelid = c.oid AND x.indisreplident)
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = %s AND c.relname = %s
"""
_IDENTITIES = {"d": "DEFAULT", "f": "FULL", "n": "NOTHING", "i": "USING INDEX"}


def rule_for(table: TableId, rules: Sequence[ReplicaIdentityRule]) -> ReplicaIdentityRule | None:
    """The one rule matching ``table``; ValueError when several do (Debezium's error)."""
    matching = [rule for rule in rules if rule.matches(str(table))]
    if len(matching) > 1:
        raise ValueError(f"More than one Regular expressions matched table {table}")
    return matching[0] if matching else None


def current_identity(conn: psycopg.Connection[tuple[Any, ...]], table: TableId) -> str | None:
    """The table's replica identity as Debezium prints it, or None if the table is gone."""
    row = conn.execute(CURRENT_SQL, (table.schema, table.table)).fetchone()
    if row is None:
        return None
    kind = _IDENTITIES.get(str(row[0]), "UNKNOWN")
    return f"{kind} {row[1]}" if kind == "USING INDEX" and row[1] else kind


def alter_statement(table: TableId, rule: ReplicaIdentityRule) -> sql.Composed:
    """``ALTER TABLE <table> REPLICA IDENTITY <identity>`` with quoted names."""
    target = sql.Identifier(table.schema, table.table)
    if rule.index is not None:
        return sql.SQL("ALTER TABLE {} REPLICA IDENTITY USING INDEX {}").format(
            target, sql.Identifier(rule.index)
        )
    return sql.SQL("ALTER TABLE {} REPLICA IDENTITY {}").format(target, sql.SQL(rule.identity))


def apply_replica_identities(
    conn: psycopg.Connection[tuple[Any, ...]],
    tables: Sequence[TableId],
    rules: Sequence[ReplicaIdentityRule],
) -> list[TableId]:
    """Give each captured table the identity its rule names; the tables altered."""
    if not rules:
        return []
    log.info("Updating Replica Identity")
    altered = []
    for table in tables:
        try:
            rule = rule_for(table, rules)
            if rule is None:
                continue
            current = current_identity(conn, table)
            if current is None or current == rule.identity:
                log.info("Replica identity for table '%s' is already %s", table, current)
                continue
            conn.execute(alter_statement(table, rule))
        except (ValueError, psycopg.Error) as error:
            log.error("Unable to update Replica Identity for table %s: %s", table, error)
            continue
        log.info("Replica identity set to %s for table '%s'", rule.identity, table)
        altered.append(table)
    return altered
