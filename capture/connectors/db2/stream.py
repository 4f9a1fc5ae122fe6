"""Streaming: the change-data tables polled in LSN windows, merged into one ordered stream.

Each poll reads the highest LSN the ASN capture agent has reached (``max_lsn``), then every
captured table's CD rows committed in ``[from, max]``, each in (commit LSN, change LSN) order,
k-way merged across tables into transactions: one :class:`~cdcflow.capture.spi.TxBegin`,
its row changes, one :class:`~cdcflow.capture.spi.TxCommit` per commit LSN. An update — a
``D`` then an ``I`` row of one commit — becomes one ``u`` event. Offsets move only at commits
(``commit_lsn``, ``change_lsn`` of its last change, ``event_serial_no``) and at the end of an
empty window (``commit_lsn`` alone). A stored commit position is read again from its commit
LSN and every change up to it skipped; a position without a change LSN resumes after it.
After a redone snapshot the change rows are read again from the interrupted attempt's position
up to the snapshot's (:mod:`cdcflow.capture.replay`).

An update the agent stored as one ``U`` row (a registration with ``CHG_UPD_TO_DEL_INS='N'``)
is an update event without a before image; a row of any other operation stops the connector
rather than being skipped. LOB and XML columns, whose values ASN does not copy into CD
tables, carry ``unavailable.value.placeholder`` in streamed events.

Registrations are re-read every poll: a table entering capture mode is announced (CREATE), a
re-registered table (a new CD table or capture start ``CD_OLD_SYNCHPOINT``: the offline
procedure) or a CD table with other columns (the online procedure) gets its structure re-read
from the catalog and, when it changed, an ALTER; the structure is recorded to schema history
before any row decodes with it. An agent whose heartbeat (the global register row's
``SYNCHTIME``) stops moving is reported as not running.
"""

from __future__ import annotations

import dataclasses
import heapq
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from cdcflow.capture.connectors.db2 import sql, tables
from cdcflow.capture.connectors.db2.connection import Connection
from cdcflow.capture.connectors.db2.lsn import Db2Position, Lsn
from cdcflow.capture.connectors.db2.source import SourceBlock
from cdcflow.capture.errors import FatalError, RetriableError
from cdcflow.capture.replay import ReplayWindow, offset_at
from cdcflow.capture.spi import (
    Event,
    Idle,
    Offset,
    Op,
    RowChange,
    SchemaChange,
    TableChange,
    TableChangeType,
    TableId,
    TxBegin,
    TxCommit,
)

log = logging.getLogger(__name__)

#: CD table columns that are ASN's, not the source table's.
ASN_COLUMNS = frozenset(
    {"OPCODE", "IBMSNAP_COMMITSEQ", "IBMSNAP_INTENTSEQ", "IBMSNAP_OPERATION", "IBMSNAP_LOGMARKER"}
)


@dataclass(frozen=True, slots=True)
class Change:
    """One row change read from a CD table (an update's two rows already paired)."""

    commit: bytes
    intent: bytes
    table: TableId
    op: Op
    before: tuple[Any, ...] | None
    after: tuple[Any, ...] | None
    serial: int


@dataclass
class AgentWatch:
    """Whether the ASN capture agent is alive: its heartbeat must move within ``timeout_s``."""

    timeout_s: float
    #: How often the heartbeat is read (a query on the register).
    check_every_s: float = 1.0
    heartbeat: tuple[Any, Any] | None = None
    since: float = 0.0
    checked: float = 0.0

    def observe(self, heartbeat: tuple[Any, Any], now: float) -> None:
        if heartbeat != self.heartbeat:
            self.heartbeat, self.since = heartbeat, now

    def stalled_for(self, now: float) -> float:
        return now - self.since if self.heartbeat is not None else 0.0


#: How often, at most, a table's columns in the catalog are compared with its CD table's.
CATALOG_CHECK_S = 10.0


def agent_timeout_s(commit_interval_s: int, sleep_interval_s: int) -> float:
    """How long a silent heartbeat may last before the agent counts as stopped: two full
    capture cycles (``COMMIT_INTERVAL`` + ``SLEEP_INTERVAL``) and 5 s, at least 10 s."""
    return max(10.0, 2.0 * (commit_interval_s + sleep_interval_s) + 5.0)


class ChangeStream:
    """The engine's :class:`~cdcflow.capture.spi.StreamingSource` over the CD tables."""

    def __init__(
        self,
        conn: Connection,
        *,
        structures: tables.Structures,
        captures: Callable[[TableId], bool],
        source_block: SourceBlock,
        statements: sql.AsnStatements,
        start: Db2Position,
        window: ReplayWindow | None = None,
        poll_interval_s: float,
        agent: AgentWatch,
        fetch_size: int = 2000,
    ) -> None:
        self._conn = conn
        self._structures = structures
        self._captures = captures
        self._block = source_block
        self._statements = statements
        self._poll_s = poll_interval_s
        self._agent = agent
        self._fetch_size = fetch_size
        # Everything at or before ``_done`` was delivered; a window starts after ``_window_end``.
        self._done = (
            start.order_key()[:2] if start.streamed else (start.commit_lsn.value, b"\xff" * 16)
        )
        self._next_from = start.commit_lsn if start.streamed else start.commit_lsn.increment()
        self._position = start
        #: The change rows read again after a redone snapshot, up to its position.
        self._replay = window
        self._registrations: dict[TableId, tables.Registration] = {}
        self._columns: dict[TableId, tuple[str, ...]] = {}
        #: When each table's catalog columns were last compared with its CD table's, and
        #: the source columns already reported missing from it.
        self._catalog_checked: dict[TableId, float] = {}
        self._reported_missing: dict[TableId, frozenset[str]] = {}
        self._warned_no_lsn = False
        #: The last change yielded of the open transaction (None outside one).
        self._last_change: Change | None = None

    # -- StreamingSource ---------------------------------------------------------------------

    def events(self) -> Iterator[Event]:
        while True:
            now = time.monotonic()
            max_lsn = self._max_lsn()
            if max_lsn is None or max_lsn < self._next_from:
                self._check_agent(now)
                self._conn.rollback()
                yield Idle(self._offset(self._position))
                time.sleep(self._poll_s)
                continue
            yield from self._window(self._next_from, max_lsn)
            self._next_from = max_lsn.increment()
            if not self._position.streamed or self._position.commit_lsn < max_lsn:
                self._position = Db2Position(commit_lsn=max_lsn)
            # End the read transaction: Db2 cannot take a table out of capture mode under it.
            self._conn.rollback()
            yield Idle(self._offset(self._position))

    def offset_in_transaction(self) -> Offset | None:
        """Inside a transaction, the position of its last change yielded: a restart reads
        the commit again and skips every change up to it, as from a commit's position."""
        last = self._last_change
        if last is None:
            return None
        position = Db2Position(
            commit_lsn=Lsn(last.commit), change_lsn=Lsn(last.intent), event_serial_no=last.serial
        )
        return self._offset(position)

    def acknowledge(self, offset: Any) -> None:
        """Nothing to confirm on the server: the change tables are read, never consumed."""

    def close(self) -> None:
        self._conn.close()

    def _offset(self, position: Db2Position) -> Offset:
        """The offset to store at ``position``: inside the replay window, the window's."""
        if self._replay is None:
            return position.offset()
        offset, self._replay = offset_at(self._replay, position)
        return offset

    # -- one window --------------------------------------------------------------------------

    def _max_lsn(self) -> Lsn | None:
        rows = self._conn.query(self._statements.max_lsn)
        if not rows or rows[0][0] is None:
            if not self._warned_no_lsn:
                log.warning(
                    "no maximum LSN in %s.IBMSNAP_REGISTER yet: is the ASN capture agent "
                    "running? Start it with VALUES ASNCDC.ASNCDCSERVICES('start','asncdc')",
                    self._statements.control_schema,
                )
                self._warned_no_lsn = True
            return None
        return Lsn.of(rows[0][0])

    def _window(self, first: Lsn, last: Lsn) -> Iterator[Event]:
        ts_ms = time.time_ns() // 1_000_000
        yield from self._refresh_registrations(last)
        streams = []
        for registration in self._registrations.values():
            names, rows = self._conn.open(
                sql.changes(registration.cd_schema, registration.cd_table),
                (first.value, last.value),
                fetch_size=self._fetch_size,
            )
            yield from self._columns_seen(registration.table, names)
            streams.append(self._table_changes(registration, names, rows))
        # Transactions stream: a large one is never held in memory.
        previous: Change | None = None
        tx_id, source = "", dict[str, Any]()
        changed: set[TableId] = set()
        for change in heapq.merge(*streams, key=lambda c: (c.commit, c.intent)):
            if (change.commit, change.intent) <= self._done:
                continue
            changed.add(change.table)
            if previous is not None and change.commit != previous.commit:
                yield self._end(previous, tx_id, source)
                previous = None
            if previous is None:
                tx_id = str(Lsn(change.commit))
                yield TxBegin(tx_id, self._source(change, ts_ms, tx_id))
            schema = self._structures.schema(change.table)
            assert schema is not None
            source = self._source(change, ts_ms, tx_id)
            self._last_change = change
            yield RowChange(schema, change.op, change.before, change.after, source, tx_id)
            previous = change
        if previous is not None:
            yield self._end(previous, tx_id, source)
        for table in changed:
            self._check_catalog(table)

    def _check_catalog(self, table: TableId) -> None:
        """Say when the source table has columns its CD table lacks: an ALTER made without
        the schema procedure, whose new columns ASN does not capture."""
        now = time.monotonic()
        if now - self._catalog_checked.get(table, -CATALOG_CHECK_S) < CATALOG_CHECK_S:
            return
        self._catalog_checked[table] = now
        current = tables.read_structure(self._conn, table)
        captured = set(self._columns.get(table, ()))
        if current is None or not captured:
            return
        missing = frozenset(c.name for c in current.columns) - captured
        if missing and missing != self._reported_missing.get(table):
            registration = self._registrations[table]
            log.warning(
                "%s has column(s) %s that its change table %s.%s lacks, so their values are "
                "not captured: a schema change made without Db2's schema procedure. Follow the "
                "online procedure (docs/db2.md): mark the table INACTIVE, reinit, add the "
                "columns to the change table, mark it ACTIVE, reinit",
                table,
                ", ".join(sorted(missing)),
                registration.cd_schema,
                registration.cd_table,
            )
        self._reported_missing[table] = missing

    def _table_changes(
        self, registration: tables.Registration, names: list[str], rows: Iterator[tuple[Any, ...]]
    ) -> Iterator[Change]:
        """One CD table's changes in LSN order, updates paired."""
        table = registration.table
        decoder = self._structures.decoder(table)
        if decoder is None:
            raise FatalError(
                f"{table} is in capture mode but its structure is in neither the schema history "
                "nor the catalog; use snapshot.mode=recovery to rebuild the schema history"
            )
        layout = decoder.layout(names)
        opcode, commit_at, intent_at = (
            names.index("OPCODE"), names.index("IBMSNAP_COMMITSEQ"),
            names.index("IBMSNAP_INTENTSEQ"),
        )  # fmt: skip
        before: tuple[Any, ...] | None = None
        for row in rows:
            commit = bytes(row[commit_at]).rjust(16, b"\0")
            code = row[opcode]
            values = decoder.streamed(row, layout)
            if code == sql.UPDATE_BEFORE:
                before = values
                continue
            intent = bytes(row[intent_at]).rjust(16, b"\0")
            if code == sql.UPDATE_AFTER:
                if before is None:
                    raise FatalError(
                        f"the change table {registration.cd_table} has an update's after image "
                        f"at {Lsn(commit)} without its before image"
                    )
                yield Change(commit, intent, table, Op.UPDATE, before, values, 2)
                before = None
            elif code == sql.INSERT:
                yield Change(commit, intent, table, Op.CREATE, None, values, 1)
            elif code == sql.DELETE:
                yield Change(commit, intent, table, Op.DELETE, values, None, 1)
            elif code == sql.UPDATE_ROW:  # no before image: the event says so with a null
                yield Change(commit, intent, table, Op.UPDATE, None, values, 1)
            else:  # never skipped silently: a change nobody can read is a stop
                raise FatalError(
                    f"the change table {registration.cd_schema}.{registration.cd_table} has a "
                    f"row with IBMSNAP_OPERATION {row[names.index('IBMSNAP_OPERATION')]!r} at "
                    f"{Lsn(commit)}, which is neither I, D nor U: it was not written by the "
                    "ASN capture agent; remove it or re-register the table"
                )

    def _end(self, last: Change, tx_id: str, source: dict[str, Any]) -> TxCommit:
        """The commit of the transaction whose last change is ``last``."""
        self._position = Db2Position(
            commit_lsn=Lsn(last.commit), change_lsn=Lsn(last.intent), event_serial_no=last.serial
        )
        self._done = (last.commit, last.intent)
        self._last_change = None
        return TxCommit(tx_id, self._offset(self._position), source)

    def _source(self, change: Change, ts_ms: int, commit_text: str) -> dict[str, Any]:
        source = self._block.block(ts_ms=ts_ms, table=change.table, commit_lsn=None)
        source["commit_lsn"] = commit_text
        source["change_lsn"] = str(Lsn(change.intent))
        return source

    # -- registrations and structures --------------------------------------------------------

    def _refresh_registrations(self, last: Lsn) -> Iterator[SchemaChange]:
        """Tables entering capture mode or registered again: their structure, if new. A
        registration whose capture starts after ``last`` waits for a window that reaches it,
        so a table is recorded at a position its change table covers."""
        found: dict[TableId, tables.Registration] = {}
        for table, registration in tables.registrations(self._conn, self._statements).items():
            if not self._captures(table):
                continue
            if registration.start is not None and registration.start > last:
                if table in self._registrations:  # until a window reaches the new start
                    found[table] = self._registrations[table]
                continue
            found[table] = registration
        for table, registration in found.items():
            known = self._registrations.get(table)
            if known is None or (known.cd_table, known.start) != (
                registration.cd_table,
                registration.start,
            ):
                if known is not None:
                    log.warning(
                        "%s was registered again for capture (%s), capturing from %s: changes "
                        "made to it while it was out of capture mode are not in its change "
                        "table; if any were made, snapshot it again (an execute-snapshot "
                        "signal)",
                        table,
                        registration.cd_table,
                        registration.start,
                    )
                if not registration.updates_split and (known is None or known.updates_split):
                    log.warning(
                        "%s is registered with CHG_UPD_TO_DEL_INS='N': ASN stores each update "
                        "as one row without its before image, so its update events carry "
                        "before=null and an update of the primary key leaves the old key in "
                        "consumers. Register it with ASNCDC.ADDTABLE (CHG_UPD_TO_DEL_INS='Y') "
                        "for Debezium's update events",
                        table,
                    )
                yield from self._reread(registration)
        for table in self._registrations.keys() - found.keys():
            log.info("%s left capture mode: its changes are no longer read", table)
            self._columns.pop(table, None)
        self._registrations = found

    def _columns_seen(self, table: TableId, names: list[str]) -> Iterator[SchemaChange]:
        """A CD table whose columns changed (the online procedure): re-read the structure."""
        columns = tuple(n for n in names if n not in ASN_COLUMNS)
        previous = self._columns.get(table)
        self._columns[table] = columns
        if previous is not None and previous != columns:
            log.info("the change table of %s has new columns %s", table, columns)
            yield from self._reread(self._registrations[table])

    def _reread(self, registration: tables.Registration) -> Iterator[SchemaChange]:
        """The table's structure from the catalog, as far as its change table has the
        columns (Debezium's rule: what is captured is what the CD table holds), recorded
        when it differs from the model."""
        table = registration.table
        current = tables.read_structure(self._conn, table)
        change_table = tables.read_structure(
            self._conn, TableId(registration.cd_schema, registration.cd_table)
        )
        if current is not None and change_table is not None:
            held = {column.name for column in change_table.columns}
            current = dataclasses.replace(
                current, columns=tuple(c for c in current.columns if c.name in held)
            )
        known = self._structures.structure(table)
        if current is None or current == known:
            return
        kind = TableChangeType.CREATE if known is None else TableChangeType.ALTER
        change = TableChange(kind, current)
        self._structures.replay([change])
        position = self._position
        source = self._block.block(
            ts_ms=time.time_ns() // 1_000_000,
            table=table,
            commit_lsn=position.commit_lsn,
            change_lsn=position.change_lsn,
        )
        yield SchemaChange(
            database=self._block.database,
            schema=table.schema,
            ddl="",
            changes=(change,),
            source=source,
            offset=self._offset(position),
        )

    # -- the agent ---------------------------------------------------------------------------

    def _check_agent(self, now: float) -> None:
        """Raise when the agent's heartbeat has not moved for longer than it may."""
        agent = self._agent
        if now - agent.checked < agent.check_every_s:
            return
        agent.checked = now
        rows = self._conn.query(self._statements.agent_progress)
        if not rows:
            raise FatalError(
                f"{self._statements.control_schema}.IBMSNAP_REGISTER has no global row: the ASN "
                "control tables are incomplete; create them with asncdctables.sql (docs/db2.md)"
            )
        agent.observe((rows[0][0], rows[0][1]), now)
        stalled = agent.stalled_for(now)
        if stalled > agent.timeout_s:
            raise RetriableError(
                f"the ASN capture agent is not running: its heartbeat (SYNCHTIME "
                f"{rows[0][1]} in {self._statements.control_schema}.IBMSNAP_REGISTER) has not "
                f"moved for {stalled:.0f}s, so committed changes are not reaching the change "
                "tables. Start it: VALUES ASNCDC.ASNCDCSERVICES('start','asncdc')"
            )
