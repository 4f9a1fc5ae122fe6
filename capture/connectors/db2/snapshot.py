"""The Db2 consistent snapshot on the engine's snapshot template, per ``snapshot.isolation.mode``.

Debezium's steps: (1) a transaction at the mode's isolation — ``read_uncommitted`` (UR) and
``read_committed`` (CS) lock nothing; ``repeatable_read`` (RS) locks each captured table's
structure under a savepoint while it is read; ``exclusive`` locks each table ``IN EXCLUSIVE
MODE`` until the snapshot ends, so no write falls between snapshot and stream; (2) the
position: the highest LSN the ASN agent has captured (streaming resumes after it); (3) the
structures of the tables in capture mode, recorded to schema history; (4) ``repeatable_read``
rolls back to the savepoint, releasing the structure locks; (5) the rows; (6) the
transaction ends. Modes below ``exclusive`` may emit a row changed during the snapshot both
as a read and as a change, as Debezium documents.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from cdcflow.capture.connectors.db2 import sql, tables
from cdcflow.capture.connectors.db2.connection import (
    Connection,
    Driver,
    Endpoint,
    Isolation,
    connect,
)
from cdcflow.capture.connectors.db2.lsn import Db2Position, Lsn
from cdcflow.capture.connectors.db2.source import SourceBlock
from cdcflow.capture.errors import RetriableError
from cdcflow.capture.spi import (
    Offset,
    Op,
    RowChange,
    SchemaChange,
    TableChange,
    TableChangeType,
    TableId,
)

log = logging.getLogger(__name__)

SAVEPOINT = "db2_schema_snapshot"
ISOLATION = {
    "read_uncommitted": Isolation.READ_UNCOMMITTED,
    "read_committed": Isolation.READ_COMMITTED,
    "repeatable_read": Isolation.REPEATABLE_READ,
    "exclusive": Isolation.REPEATABLE_READ,
}


def max_lsn(conn: Connection, statements: sql.AsnStatements) -> Lsn:
    """The highest LSN the agent captured; retriable while it has never run."""
    rows = conn.query(statements.max_lsn)
    if not rows or rows[0][0] is None:
        raise RetriableError(
            f"{statements.control_schema}.IBMSNAP_REGISTER records no captured position yet: "
            "the ASN capture agent has not run since the tables were put in capture mode. "
            "Start it (VALUES ASNCDC.ASNCDCSERVICES('start','asncdc')) and reinitialise it "
            "(VALUES ASNCDC.ASNCDCSERVICES('reinit','asncdc'))"
        )
    return Lsn.of(rows[0][0])


@dataclass(frozen=True)
class SnapshotParts:
    """What a snapshot reads with."""

    endpoint: Endpoint
    driver: Driver
    structures: tables.Structures
    source_block: SourceBlock
    statements: sql.AsnStatements
    isolation_mode: str
    lock_timeout_ms: int
    overrides: Mapping[str, str]
    fetch_size: int


class Db2Snapshot:
    """See the module docstring."""

    def __init__(
        self, tables_: list[TableId], *, recorded: list[TableId], parts: SnapshotParts
    ) -> None:
        """``tables_`` are read row by row; ``recorded`` (a superset) have their structure
        recorded to schema history."""
        self._tables, self._recorded, self._parts = tables_, recorded, parts
        self._conn = connect(parts.endpoint, parts.driver)
        self._position: Db2Position | None = None

    def lock(self) -> None:
        parts = self._parts
        mode = parts.isolation_mode
        self._conn.set_isolation(ISOLATION[mode])
        if mode not in ("repeatable_read", "exclusive"):
            log.info("snapshot: %s isolation, no table locks", mode)
            return
        self._conn.execute(sql.lock_timeout(parts.lock_timeout_ms))
        if mode == "repeatable_read":
            self._conn.execute(sql.SAVEPOINT.format(name=SAVEPOINT))
        statement = sql.SCHEMA_LOCK if mode == "repeatable_read" else sql.EXCLUSIVE_LOCK
        for table in self._tables:
            log.info("snapshot: locking %s (%s)", table, mode)
            self._conn.execute(statement.format(table=sql.table_name(table.schema, table.table)))

    def position(self) -> Offset:
        self._position = Db2Position(commit_lsn=max_lsn(self._conn, self._parts.statements))
        log.info("snapshot at LSN %s", self._position.commit_lsn)
        return self._position.offset()

    def structure(self) -> Iterator[SchemaChange]:
        """One CREATE per table in capture mode, as Debezium records a snapshot (no DDL)."""
        assert self._position is not None, "position() first"
        parts = self._parts
        for table in sorted(self._recorded):
            read = tables.read_structure(self._conn, table)
            if read is None:
                continue
            change = TableChange(TableChangeType.CREATE, read)
            parts.structures.replay([change])
            yield SchemaChange(
                database=parts.source_block.database,
                schema=table.schema,
                ddl="",
                changes=(change,),
                source=self._source(table),
                offset=self._position.offset(),
            )

    def release(self) -> None:
        if self._parts.isolation_mode == "repeatable_read":
            self._conn.execute(sql.ROLLBACK_TO_SAVEPOINT.format(name=SAVEPOINT))
            # Db2 keeps locks taken after a savepoint when rolling back to it (ON ROLLBACK
            # RETAIN LOCKS, its only behaviour): the intent locks last until the snapshot's
            # transaction ends, as in Debezium, whose comment says otherwise
            log.info(
                "snapshot: rolled back to the savepoint; Db2 holds the structure locks "
                "until the snapshot ends"
            )

    def rows(self) -> Iterator[RowChange]:
        parts = self._parts
        for table in self._tables:
            decoder = parts.structures.decoder(table)
            if decoder is None:
                log.warning("snapshot: %s disappeared before its rows were read", table)
                continue
            statement = parts.overrides.get(str(table)) or sql.select_columns(
                table.schema, table.table, list(decoder.names)
            )
            source = self._source(table)
            for row in self._conn.stream(statement, fetch_size=parts.fetch_size):
                yield RowChange(decoder.schema, Op.READ, None, decoder.ordered(row), source)

    def close(self) -> None:
        try:
            self._conn.rollback()
        finally:
            self._conn.close()

    def _source(self, table: TableId) -> dict[str, object]:
        assert self._position is not None
        return self._parts.source_block.block(
            ts_ms=time.time_ns() // 1_000_000,
            table=table,
            commit_lsn=self._position.commit_lsn,
            snapshot="true",
        )
