"""The MySQL/MariaDB connector: startup checks, snapshot, schema history and binlog stream.

The engine calls :meth:`MySqlConnector.recover` (table structures from the schema history),
:meth:`prepare` (server checks), :meth:`prepare_stream`, the snapshot steps and
:meth:`streaming`. A binlog reader holds nothing on the server, so there is nothing to clean
up and nothing to confirm: the stored offset alone says where to resume.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

from cdcflow.capture import replay
from cdcflow.capture.columns import ColumnStep
from cdcflow.capture.connectors.mysql import binlog, checks, snapshot, tables, types
from cdcflow.capture.connectors.mysql import log_budget as mysql_log_budget
from cdcflow.capture.connectors.mysql.chunks import MySqlChunks
from cdcflow.capture.connectors.mysql.connection import (
    Connection,
    Endpoint,
    connect,
    execute,
    query,
    quote,
)
from cdcflow.capture.connectors.mysql.position import BinlogPosition
from cdcflow.capture.connectors.mysql.properties import MySqlProperties
from cdcflow.capture.connectors.mysql.source import BinlogStream, SourceBlock, source_schema
from cdcflow.capture.filters import Filters, refuse_capturing_nothing
from cdcflow.capture.log_budget import LogBudget
from cdcflow.capture.spi import Offset, SchemaChange, TableChange, TableChangeType, TableId

log = logging.getLogger(__name__)

#: Binlog items buffered between the reader thread and the pipeline.
QUEUE_SIZE = 8192


class MySqlConnector:
    """See the module docstring. ``flavor`` is ``mysql`` or ``mariadb`` (the Debezium
    connector whose events these are)."""

    def __init__(
        self,
        *,
        endpoint: Endpoint,
        properties: MySqlProperties,
        filters: Filters,
        version: str,
        flavor: str,
    ) -> None:
        self.endpoint = endpoint
        self.properties = properties
        self.filters = filters
        self.source_schema = source_schema(flavor)
        self.source_block = SourceBlock(
            version=version, connector=flavor, server=properties.topic_prefix
        )
        self.structures = tables.Structures(
            filters=filters,
            options=types.TypeOptions(
                decimal_handling_mode=properties.decimal_handling_mode,
                time_precision_mode=properties.time_precision_mode,
                bigint_unsigned_handling_mode=properties.bigint_unsigned_handling_mode,
                binary_handling_mode=properties.binary_handling_mode,
                connection_time_zone=properties.database_connection_time_zone,
                enable_time_adjuster=properties.enable_time_adjuster,
                replace_null_with_default=properties.value_converter_replace_null_with_default,
            ),
            skip_unparseable=properties.schema_history_internal_skip_unparseable_ddl,
            only_captured=properties.schema_history_internal_store_only_captured_tables_ddl,
            columns=ColumnStep.from_properties(properties, filters),
        )
        self._conn: Connection | None = None
        self._info: checks.ServerInfo | None = None
        self._start: BinlogPosition | None = None
        #: every chunk source handed out (snapshot.max.threads readers of a chunked snapshot)
        self._chunks: list[MySqlChunks] = []
        self._stream: BinlogStream | None = None

    @property
    def conn(self) -> Connection:
        if self._conn is None:
            raise RuntimeError("prepare() first")
        return self._conn

    @property
    def info(self) -> checks.ServerInfo:
        if self._info is None:
            raise RuntimeError("prepare() first")
        return self._info

    # -- startup -----------------------------------------------------------------------------

    def recover(self, changes: Iterator[SchemaChange], offset: Offset | None) -> None:
        """Table structures as of ``offset``: the recorded changes up to it."""
        limit = BinlogPosition.from_offset(offset).order_key() if offset else None
        for change in changes:
            at = BinlogPosition.from_offset(change.offset).order_key()
            if limit is not None and at > limit:
                break
            self.structures.replay(change.changes)

    def prepare(self) -> list[TableId]:
        self._conn = connect(self.endpoint)
        self._info = checks.server_info(self.conn)
        checks.check_server_id(self.info, self.properties.database_server_id)
        checks.check_replicas(self.conn, self.info, self.properties.database_server_id)
        checks.check_privileges(self.conn, self.endpoint.user)
        self.structures.use_charsets(tables.charsets(self.conn))
        self._read_signal_table()
        captured = self.captured_tables()
        if not captured:
            refuse_capturing_nothing(
                self.properties.table_filters(),
                present=tables.all_tables(self.conn),
                containers="server's databases",
            )
        return captured

    def _read_signal_table(self) -> None:
        """The signal table's structure, so its rows (signals, watermarks) decode."""
        name = self.properties.signal_data_collection
        if not name:
            return
        table = TableId.parse(name)
        if table not in self.structures:
            read = tables.read_structure(self.conn, table)
            self.structures.replay([TableChange(TableChangeType.CREATE, read)])

    def captured_tables(self) -> list[TableId]:
        found = [t for t in tables.all_tables(self.conn) if self.filters.captures(t)]
        return self.filters.snapshot_order(found)

    def position(self, offset: Offset) -> BinlogPosition:
        return BinlogPosition.from_offset(offset)

    def position_available(self, offset: Offset | None) -> bool:
        """Whether the server still has the binlog file the offset resumes in."""
        if offset is None or not offset.connector_values():
            return True
        wanted = BinlogPosition.from_offset(offset).file
        files = {str(row[0]) for row in query(self.conn, "SHOW BINARY LOGS")}
        return wanted in files

    def log_budget(self, offset: Offset | None) -> LogBudget:
        """The binlog the connector needs against what the server keeps, on a connection of
        its own."""
        with connect(self.endpoint) as conn:
            return mysql_log_budget.measure(conn, offset)

    # -- snapshot and stream -----------------------------------------------------------------

    def prepare_stream(self, *, for_snapshot: bool, offset: Offset | None) -> None:
        """Nothing to open before the snapshot: its steps read the position under the lock."""
        self._start = BinlogPosition.from_offset(offset) if offset else None

    def snapshot_tables(self) -> dict[TableId, int]:
        estimates = tables.all_tables(self.conn)
        return {t: estimates.get(t, 0) for t in self.captured_tables() if self.filters.snapshots(t)}

    def snapshot_steps(self, tables_: list[TableId]) -> snapshot.MySqlSnapshot:
        properties = self.properties
        recorded = [t for t in tables.all_tables(self.conn) if self.structures.recorded(t)]
        return snapshot.MySqlSnapshot(
            tables_,
            recorded=sorted({*recorded, *tables_}),
            parts=snapshot.SnapshotParts(
                endpoint=self.endpoint,
                structures=self.structures,
                source_block=self.source_block,
                locking_mode=properties.snapshot_locking_mode,
                lock_timeout_ms=properties.snapshot_lock_timeout_ms,
                overrides=properties.statement_overrides,
                fetch_size=properties.snapshot_fetch_size or 2000,
                mariadb=self.info.mariadb,
            ),
        )

    def streaming(self, offset: Offset | None) -> BinlogStream:
        """Read the binlog after ``offset`` (or from the position now); inside a replay window
        (after a redone snapshot) from the window's start."""
        offset, window = replay.stream_start(
            offset, order_key=lambda end: self.position(end).order_key()
        )
        if window is not None and not self.position_available(offset):
            log.warning(
                "the binlog the redone snapshot should be followed by from %s is purged: "
                "rows deleted since the interrupted snapshot may stay in the topics",
                offset.to_dict() if offset else None,
            )
            offset, window = window.end, None
        start = BinlogPosition.from_offset(offset) if offset and offset.connector_values() else None
        if start is not None and not self.position_available(offset):
            raise binlog.purged(f"the stored offset resumes in binlog file {start.file}")
        if start is None and self.properties.snapshot_mode == "never":
            first = str(query(self.conn, "SHOW BINARY LOGS")[0][0])
            start = BinlogPosition(file=first, pos=4)  # the whole binlog, its DDL included
        if start is None:
            start = snapshot.read_position(self.conn, mariadb=self.info.mariadb)
        properties = self.properties
        from_start = not start.gtids and self.properties.snapshot_mode == "never"
        gtids = str(start.gtids) if self.info.gtid_mode and (start.gtids or from_start) else None
        reader = binlog.BinlogReader(
            self.endpoint.settings(),
            server_id=properties.database_server_id,
            start=binlog.StartAt(file=start.file, pos=start.pos, gtids=gtids),
            mariadb=self.info.mariadb,
            queue_size=QUEUE_SIZE,
            annotate=properties.include_query,
        )
        self._stream = BinlogStream(
            reader,
            structures=self.structures,
            filters=self.filters,
            source_block=self.source_block,
            start=start,
            window=window,
            include_query=properties.include_query,
            idle_s=min(properties.poll_interval_ms / 1000, 1.0),
            gtid_filter=(
                list(properties.gtid_source_includes),
                list(properties.gtid_source_excludes),
            ),
        )
        return self._stream

    def chunk_source(self) -> MySqlChunks:
        signal = self.properties.signal_data_collection
        chunks = MySqlChunks(
            self.endpoint,
            structures=self.structures,
            captured=self.captured_tables,
            signal_table=TableId.parse(signal) if signal else None,
            source_block=self.source_block,
        )
        self._chunks.append(chunks)
        return chunks

    def insert_signal(self, *, table: str, signal_id: str, signal_type: str, data: str) -> bool:
        """Insert a signal row on a connection of its own; False when the id exists already."""
        target = TableId.parse(table)
        with connect(self.endpoint) as conn:
            name = f"{quote(target.schema)}.{quote(target.table)}"
            statement = f"INSERT IGNORE INTO {name} VALUES (%s, %s, %s)"
            return execute(conn, statement, (signal_id, signal_type, data)) == 1

    def heartbeat(self) -> None:
        """Run ``heartbeat.action.query`` (keeps a quiet server's binlog moving)."""
        action = self.properties.heartbeat_action_query
        if action and self._conn is not None:
            execute(self._conn, action)

    def close(self, *, stopping: bool = False) -> None:
        if self._stream is not None:
            self._stream.close()
        for chunks in self._chunks:
            chunks.close()
        if self._conn is not None:
            self._conn.close()
        self._stream, self._chunks, self._conn = None, [], None
