"""The Db2 connector: ASN capture-mode tables, snapshot, schema history and the CD-table poller.

The engine calls :meth:`Db2Connector.recover` (table structures from the schema history),
:meth:`prepare` (the ASN control tables and the captured tables), :meth:`prepare_stream`,
the snapshot steps and :meth:`streaming`. Polling holds nothing on the server: the stored
offset alone says where to resume.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator

from cdcflow.capture import replay
from cdcflow.capture.columns import ColumnStep
from cdcflow.capture.connectors.db2 import log_budget as db2_log_budget
from cdcflow.capture.connectors.db2 import sql, tables, types
from cdcflow.capture.connectors.db2.chunks import Db2Chunks
from cdcflow.capture.connectors.db2.connection import (
    Connection,
    Driver,
    Endpoint,
    StatementError,
    connect,
)
from cdcflow.capture.connectors.db2.lsn import Db2Position
from cdcflow.capture.connectors.db2.properties import Db2Properties
from cdcflow.capture.connectors.db2.snapshot import Db2Snapshot, SnapshotParts, max_lsn
from cdcflow.capture.connectors.db2.source import SOURCE_SCHEMA, SourceBlock
from cdcflow.capture.connectors.db2.stream import AgentWatch, ChangeStream, agent_timeout_s
from cdcflow.capture.errors import FatalError, PositionLostError, position_lost
from cdcflow.capture.filters import Filters, refuse_capturing_nothing
from cdcflow.capture.log_budget import LogBudget
from cdcflow.capture.spi import Offset, SchemaChange, TableId

log = logging.getLogger(__name__)

#: SQLCODEs of a missing object and of a missing privilege.
UNDEFINED_NAME, NOT_AUTHORIZED = -204, -551


class Db2Connector:
    """See the module docstring."""

    source_schema = SOURCE_SCHEMA

    def __init__(
        self,
        *,
        endpoint: Endpoint,
        driver: Driver,
        properties: Db2Properties,
        filters: Filters,
        version: str,
    ) -> None:
        self.endpoint = endpoint
        self.driver = driver
        self.properties = properties
        self.filters = filters
        self.statements = sql.AsnStatements(properties.cdc_control_schema)
        self.source_block = SourceBlock(
            version=version, server=properties.topic_prefix, database=endpoint.database
        )
        self.structures = tables.Structures(
            filters=filters,
            options=types.TypeOptions(
                decimal_handling_mode=properties.decimal_handling_mode,
                time_precision_mode=properties.time_precision_mode,
                binary_handling_mode=properties.binary_handling_mode,
                replace_null_with_default=properties.value_converter_replace_null_with_default,
            ),
            columns=ColumnStep.from_properties(properties, filters),
            placeholder=properties.unavailable_value_placeholder,
        )
        signal = properties.signal_data_collection
        self.signal_table = TableId.parse(signal) if signal else None
        self._conn: Connection | None = None
        self._registered: dict[TableId, tables.Registration] = {}
        #: Captured tables whose changes after the stored position are gone (see
        #: :meth:`position_available`).
        self._lost: list[tables.Registration] = []
        self._start: Db2Position | None = None
        #: every chunk source handed out (snapshot.max.threads readers of a chunked snapshot)
        self._chunks: list[Db2Chunks] = []
        self._stream: ChangeStream | None = None

    @property
    def conn(self) -> Connection:
        if self._conn is None:
            raise RuntimeError("prepare() first")
        return self._conn

    # -- startup -----------------------------------------------------------------------------

    def recover(self, changes: Iterator[SchemaChange], offset: Offset | None) -> None:
        """Table structures as of ``offset``: the recorded changes up to it."""
        limit = Db2Position.from_offset(offset).order_key() if offset else None
        for change in changes:
            at = Db2Position.from_offset(change.offset).order_key()
            if limit is not None and at > limit:
                break
            self.structures.replay(change.changes)

    def prepare(self) -> list[TableId]:
        self._conn = connect(self.endpoint, self.driver)
        self._registered = self._registrations()
        if self.signal_table is not None and self.signal_table not in self._registered:
            raise FatalError(
                f"the signal table {self.signal_table} is not in capture mode, so signals "
                f"written to it never reach the connector: CALL ASNCDC.ADDTABLE("
                f"'{self.signal_table.schema}', '{self.signal_table.table}') and reinitialise "
                "the agent (VALUES ASNCDC.ASNCDCSERVICES('reinit','asncdc'))"
            )
        captured = self.captured_tables()
        present = tables.all_tables(self.conn)
        if not captured and not any(self.filters.captures(t) for t in present):
            refuse_capturing_nothing(
                self.properties.table_filters(),
                present=present,
                containers="database's schemas",
            )
        self._explain_uncaptured(present)
        return captured

    def _registrations(self) -> dict[TableId, tables.Registration]:
        try:
            return tables.registrations(self.conn, self.statements)
        except StatementError as error:
            schema = self.statements.control_schema
            if error.sqlcode == UNDEFINED_NAME:
                raise FatalError(
                    f"{error} The ASN control tables ({schema}.IBMSNAP_REGISTER, …) do not "
                    "exist: set up ASN capture as docs/db2.md shows (asncdctables.sql), or set "
                    "cdc.control.schema to the schema that holds them"
                ) from None
            if error.sqlcode == NOT_AUTHORIZED:
                raise FatalError(
                    f"{error} The connector's user needs SELECT on the ASN control tables: "
                    f"GRANT SELECT ON {schema}.IBMSNAP_REGISTER TO USER {self.endpoint.user} "
                    "(and on the change tables and captured tables; docs/db2.md)"
                ) from None
            raise

    def captured_tables(self) -> list[TableId]:
        """Tables in capture mode the filters pass, in snapshot order."""
        found = [t for t in self._registered if self._captures(t) and t != self.signal_table]
        return self.filters.snapshot_order(found)

    def _captures(self, table: TableId) -> bool:
        return self.filters.captures(table) or table == self.signal_table

    def _explain_uncaptured(self, present: Iterable[TableId]) -> None:
        """Included tables that are not in capture mode cannot stream: say so, once."""
        registered = set(self._registered)
        control = self.statements.control_schema
        missing = [
            t
            for t in present
            if self.filters.captures(t) and t not in registered and t.schema != control
        ]
        if missing and self.properties.table_include_list:
            names = ", ".join(map(str, missing[:10]))
            log.warning(
                "tables the include list names are not in capture mode, so no change of theirs "
                "is captured: %s. Put them in capture mode: CALL ASNCDC.ADDTABLE('<schema>', "
                "'<table>') and VALUES ASNCDC.ASNCDCSERVICES('reinit','asncdc')",
                names,
            )

    def position(self, offset: Offset) -> Db2Position:
        return Db2Position.from_offset(offset)

    def position_available(self, offset: Offset | None) -> bool:
        """Whether the change tables still hold every change after ``offset``: not when a
        table captured then has a capture start (``CD_OLD_SYNCHPOINT``) past it, as after a
        cold start of the agent, pruning, or the table registered again."""
        self._lost = self._tables_lost_at(offset)
        return not self._lost

    def _tables_lost_at(self, offset: Offset | None) -> list[tables.Registration]:
        if offset is None or not offset.connector_values():
            return []
        position = Db2Position.from_offset(offset).commit_lsn
        return [
            registration
            for table, registration in self._registered.items()
            if self._captures(table)
            and table in self.structures  # captured at the position (schema history)
            and registration.start is not None
            and registration.start > position
        ]

    def _lost_position(self, offset: Offset) -> PositionLostError:
        position = Db2Position.from_offset(offset).commit_lsn
        starts = ", ".join(f"{r.table} from {r.start}" for r in self._lost)
        newest = max(r.start for r in self._lost if r.start is not None)
        return position_lost(
            f"the stored position {position} is older than where ASN's change tables begin "
            f"({starts}, CD_OLD_SYNCHPOINT): their changes in between are gone — the capture "
            "agent was cold-started or pruned them, or the tables were registered again (the "
            "offline schema procedure)",
            resume="if nothing changed in those tables in between (the offline procedure with "
            "writes stopped), resume where their change tables begin: cdcflow offsets set "
            f'-f <connector.yaml> \'{{"commit_lsn": "{newest}"}}\'',
            prevent="keep the capture agent warm-starting, and its RETENTION_LIMIT longer than "
            "the connector may be stopped; the LogSafe condition warns as unread change rows "
            "near it",
        )

    def log_budget(self, offset: Offset | None) -> LogBudget:
        """The captured tables' unread change rows against ASN's retention, on a connection
        of its own."""
        with connect(self.endpoint, self.driver) as conn:
            captured = tables.registrations(conn, self.statements)
            return db2_log_budget.measure(
                conn,
                self.statements,
                captured=[
                    r for t, r in captured.items() if self._captures(t) and t in self.structures
                ],
                offset=offset,
            )

    # -- snapshot and stream -----------------------------------------------------------------

    def prepare_stream(self, *, for_snapshot: bool, offset: Offset | None) -> None:
        """Streaming without an offset (and no snapshot) starts at the agent's position now;
        a snapshot fixes its own position under its locks."""
        self._start = None
        if offset is not None and offset.connector_values():
            self._start = Db2Position.from_offset(offset)
        elif not for_snapshot:
            self._start = Db2Position(commit_lsn=max_lsn(self.conn, self.statements))
        self.conn.rollback()

    def snapshot_tables(self) -> dict[TableId, int]:
        """The captured tables, and the included tables outside capture mode: a table ASN
        cannot capture (one with a BOOLEAN column) can still be snapshotted, as Debezium's."""
        estimates = tables.all_tables(self.conn)
        self.conn.rollback()
        control = {self.statements.control_schema, self.properties.cdc_change_tables_schema}
        uncaptured = [
            t
            for t in estimates
            if self.filters.captures(t) and t not in self._registered and t.schema not in control
        ]
        ordered = self.filters.snapshot_order([*self.captured_tables(), *uncaptured])
        return {t: estimates.get(t, 0) for t in ordered if self.filters.snapshots(t)}

    def snapshot_steps(self, tables_: list[TableId]) -> Db2Snapshot:
        properties = self.properties
        every_table = not properties.schema_history_internal_store_only_captured_tables_ddl
        recorded = [t for t in self._registered if every_table or self._captures(t)]
        return Db2Snapshot(
            tables_,
            recorded=sorted({*recorded, *tables_}),
            parts=SnapshotParts(
                endpoint=self.endpoint,
                driver=self.driver,
                structures=self.structures,
                source_block=self.source_block,
                statements=self.statements,
                isolation_mode=properties.snapshot_isolation_mode,
                lock_timeout_ms=properties.snapshot_lock_timeout_ms,
                overrides=properties.statement_overrides,
                fetch_size=properties.snapshot_fetch_size or 2000,
            ),
        )

    def streaming(self, offset: Offset | None) -> ChangeStream:
        """Poll the change tables after ``offset`` (or the position fixed before); inside a
        replay window (after a redone snapshot) from the window's start."""
        offset, window = replay.stream_start(
            offset, order_key=lambda end: self.position(end).order_key()
        )
        if offset is not None and offset.connector_values():
            if window is None and not self.position_available(offset):
                raise self._lost_position(offset)
            start = Db2Position.from_offset(offset)
        elif self._start is not None:
            start = self._start
        else:
            start = Db2Position(commit_lsn=max_lsn(self.conn, self.statements))
        self.conn.rollback()
        self._stream = ChangeStream(
            connect(self.endpoint, self.driver),
            structures=self.structures,
            captures=self._captures,
            source_block=self.source_block,
            statements=self.statements,
            start=start,
            window=window,
            poll_interval_s=self.properties.poll_interval_ms / 1000,
            agent=AgentWatch(timeout_s=self._agent_timeout_s()),
            fetch_size=self.properties.query_fetch_size or 2000,
        )
        return self._stream

    def _agent_timeout_s(self) -> float:
        rows = self.conn.query(self.statements.capture_parameters)
        self.conn.rollback()
        commit, sleep = (int(rows[0][0] or 0), int(rows[0][1] or 0)) if rows else (30, 5)
        return agent_timeout_s(commit, sleep)

    def chunk_source(self) -> Db2Chunks:
        chunks = Db2Chunks(
            self.endpoint,
            self.driver,
            structures=self.structures,
            captured=self.captured_tables,
            signal_table=self.signal_table,
        )
        self._chunks.append(chunks)
        return chunks

    def insert_signal(self, *, table: str, signal_id: str, signal_type: str, data: str) -> bool:
        """Insert a signal row on a connection of its own; False when the id exists already."""
        target = TableId.parse(table)
        with connect(self.endpoint, self.driver) as conn:
            exists = conn.query(
                f"SELECT 1 FROM {sql.table_name(target.schema, target.table)} "
                f"WHERE {sql.quote(self._signal_id_column(target))} = ?",
                [signal_id],
            )
            if exists:
                return False
            conn.execute(
                sql.insert_signal(target.schema, target.table), [signal_id, signal_type, data]
            )
            conn.commit()
            return True

    def _signal_id_column(self, table: TableId) -> str:
        schema = self.structures.schema(table)
        return schema.columns[0].name if schema is not None else "ID"

    def close(self, *, stopping: bool = False) -> None:
        for part in (self._stream, *self._chunks, self._conn):
            if part is not None:
                part.close()
        self._stream, self._chunks, self._conn = None, [], None
