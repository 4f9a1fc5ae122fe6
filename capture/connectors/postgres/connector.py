"""The PostgreSQL connector: startup checks, publication and slot lifecycle, snapshot, stream.

The engine calls :meth:`PostgresConnector.prepare`, then :meth:`prepare_stream` (which creates
the slot when missing and, if a snapshot is due, keeps its exported snapshot alive), then
:meth:`snapshot` and finally :meth:`streaming` on the same replication connection. That order
is what makes the snapshot and the stream meet exactly at the slot's consistent point.
"""

from __future__ import annotations

import base64
import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any

import orjson
import psycopg
from psycopg import sql

from cdcflow.capture.columns import ColumnStep
from cdcflow.capture.connectors.postgres import (
    checks,
    identity,
    metadata,
    parallel,
    pgoutput,
    snapshotter,
    types,
)
from cdcflow.capture.connectors.postgres import log_budget as pg_log_budget
from cdcflow.capture.connectors.postgres.chunks import PostgresChunks, SignalEmitRetries
from cdcflow.capture.connectors.postgres.columns import ColumnMapping
from cdcflow.capture.connectors.postgres.connection import (
    Endpoint,
    connect,
    connect_replication,
    validation_timeout_s,
)
from cdcflow.capture.connectors.postgres.properties import PostgresProperties
from cdcflow.capture.connectors.postgres.replication import ReplicationStream, SlotInUseError
from cdcflow.capture.connectors.postgres.source import (
    LsnFlushing,
    PostgresPosition,
    PostgresStream,
    SourceBlock,
    XminTracker,
    lsn_offset,
)
from cdcflow.capture.connectors.postgres.spool import TransactionSpool
from cdcflow.capture.connectors.postgres.tables import TableCatalog
from cdcflow.capture.converting import ConvertingFailures
from cdcflow.capture.envelope import TRANSACTION_BLOCK, frame
from cdcflow.capture.errors import FatalError, position_lost
from cdcflow.capture.filters import Filters, refuse_capturing_nothing
from cdcflow.capture.log_budget import LogBudget
from cdcflow.capture.spi import (
    ConnectSchema,
    LogMessage,
    Offset,
    Record,
    RowChange,
    SchemaChange,
    TableId,
)

log = logging.getLogger(__name__)

SOURCE_SCHEMA: ConnectSchema = {
    "type": "struct",
    "optional": False,
    "name": "io.debezium.connector.postgresql.Source",
    "fields": [
        {"type": "string", "optional": False, "field": "version"},
        {"type": "string", "optional": False, "field": "connector"},
        {"type": "string", "optional": False, "field": "name"},
        {"type": "int64", "optional": False, "field": "ts_ms"},
        {
            "type": "string",
            "optional": True,
            "name": "io.debezium.data.Enum",
            "version": 1,
            "parameters": {
                "allowed": "true,first,first_in_data_collection,last_in_data_collection,last,"
                "false,incremental"
            },
            "default": "false",
            "field": "snapshot",
        },
        {"type": "string", "optional": False, "field": "db"},
        {"type": "string", "optional": True, "field": "sequence"},
        {"type": "int64", "optional": True, "field": "ts_us"},
        {"type": "int64", "optional": True, "field": "ts_ns"},
        {"type": "string", "optional": False, "field": "schema"},
        {"type": "string", "optional": False, "field": "table"},
        {"type": "int64", "optional": True, "field": "txId"},
        {"type": "int64", "optional": True, "field": "lsn"},
        {"type": "int64", "optional": True, "field": "xmin"},
        {"type": "string", "optional": True, "field": "origin"},
        {"type": "int64", "optional": True, "field": "origin_lsn"},
    ],
    "version": 1,
}
MESSAGE_KEY_SCHEMA: ConnectSchema = {
    "type": "struct",
    "optional": False,
    "name": "io.debezium.connector.postgresql.MessageKey",
    "version": 1,
    "fields": [{"type": "string", "optional": True, "field": "prefix"}],
}
#: Seconds to wait for the walsender of a closed stream to release the slot before dropping it.
SLOT_RELEASE_TIMEOUT_S = 10.0
PUBLICATION_SQL = "SELECT pubviaroot, puballtables FROM pg_publication WHERE pubname = %s"
PUBLICATION_MARK_SQL = (
    "SELECT obj_description(oid, 'pg_publication') FROM pg_publication WHERE pubname = %s"
)
PUBLISHED_TABLES_SQL = "SELECT schemaname, tablename FROM pg_publication_tables WHERE pubname = %s"
USER_TABLES_SQL = """
SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN ('pg_catalog', 'information_schema')
  AND n.nspname NOT LIKE 'pg_toast%%' AND NOT c.relispartition
ORDER BY 1, 2
"""


@dataclass
class SlotHandle:
    """The replication connection and where streaming starts after the snapshot."""

    stream: ReplicationStream
    start_lsn: int
    exported_snapshot: str | None


class PostgresConnector:
    """See the module docstring."""

    source_schema = SOURCE_SCHEMA

    def __init__(
        self,
        *,
        endpoint: Endpoint,
        properties: PostgresProperties,
        filters: Filters,
        version: str,
        stop: threading.Event | None = None,
    ) -> None:
        self.endpoint = endpoint
        self._stop = stop or threading.Event()
        self.properties = properties
        self.filters = filters
        self.source_block = SourceBlock(
            version=version,
            server=properties.topic_prefix,
            database=endpoint.database,
            streaming_snapshot=(
                "false" if properties.value_converter_replace_null_with_default else None
            ),
        )
        self._options = types.TypeOptions(
            decimal_handling_mode=properties.decimal_handling_mode,
            time_precision_mode=properties.time_precision_mode,
            hstore_handling_mode=properties.hstore_handling_mode,
            interval_handling_mode=properties.interval_handling_mode,
            binary_handling_mode=properties.binary_handling_mode,
            include_unknown_datatypes=properties.include_unknown_datatypes,
            money_fraction_digits=properties.money_fraction_digits,
            replace_null_with_default=properties.value_converter_replace_null_with_default,
        )
        self._columns = ColumnStep.from_properties(properties, filters)
        self._mapping = ColumnMapping(self._columns, self._comments)
        self._converting = self._columns.failures
        self._message_key = frame(
            MESSAGE_KEY_SCHEMA if properties.key_converter_schemas_enable else None
        )
        self._message_value = frame(
            message_value_schema(properties.binary_handling_mode)
            if properties.value_converter_schemas_enable
            else None
        )
        self._message_content: Callable[[bytes], str] = (
            bytes.hex if properties.binary_handling_mode == "hex" else _b64
        )
        #: whether the server is a standby (logical decoding there: PostgreSQL 16 and newer)
        self._standby = False
        self._conn: psycopg.Connection[tuple[Any, ...]] | None = None
        self._catalog: TableCatalog | None = None
        self._slot: SlotHandle | None = None
        #: every chunk source handed out (snapshot.max.threads readers of a chunked snapshot)
        self._chunks: list[PostgresChunks] = []

    @property
    def conn(self) -> psycopg.Connection[tuple[Any, ...]]:
        if self._conn is None:
            raise RuntimeError("prepare() first")
        return self._conn

    # -- startup -----------------------------------------------------------------------------

    def _comments(self, table: TableId) -> dict[str, str]:
        """``include.schema.comments``: the column comments of ``table``."""
        return metadata.column_comments(self.conn, table)

    def _pause(self, seconds: float) -> None:
        """Wait before a retry; a stop request ends the wait and the start at once."""
        if self._stop.wait(seconds):
            raise InterruptedError("stopped while waiting for the replication slot")

    def prepare(self) -> list[TableId]:
        """Check the server and our privileges, make sure the publication exists, set replica
        identities (``replica.identity.autoset.values``) and check the guardrail.

        The first connection validates the server within ``connection.validation.timeout.ms``.
        """
        timeout_s = validation_timeout_s(self.properties.connection_validation_timeout_ms)
        self._conn = connect(self.endpoint, connect_timeout_s=timeout_s)
        checks.check_wal_level(self.conn)
        checks.check_replication_role(self.conn, self.endpoint.user)
        self._standby = checks.is_standby(self.conn)
        if self._standby:
            checks.check_standby(
                self.conn,
                action_query=self.properties.heartbeat_action_query,
                writes_watermarks=not self.properties.read_only
                and bool(self.properties.signal_data_collection),
            )
        checks.wait_for_slot(
            self.conn,
            self.properties.slot_name,
            retries=self.properties.slot_max_retries,
            delay_s=self.properties.slot_retry_delay_ms / 1000,
            sleep=self._pause,
        )
        self._ensure_publication()
        eligible = [t for t in self._user_tables() if self.filters.reads(t)]
        if self._standby and self.properties.replica_identities:
            log.warning(
                "replica.identity.autoset.values: the server is a standby, which cannot alter "
                "tables; set the replica identities on the primary"
            )
        elif self.properties.streams:  # Debezium sets them when it opens the replication stream
            identity.apply_replica_identities(
                self.conn, eligible, self.properties.replica_identities
            )
        checks.check_guardrail(
            eligible,
            limit=self.properties.guardrail_collections_max,
            action=self.properties.guardrail_collections_limit_action,
        )
        tables = self.captured_tables()
        checks.check_select(self.conn, self.endpoint.user, tables)
        checks.warn_missing_identity(self.conn, tables)
        self._catalog = TableCatalog(
            self.conn, options=self._options, filters=self.filters, mapping=self._mapping
        )
        return tables

    def _ensure_publication(self) -> None:
        name, mode = self.properties.publication_name, self.properties.publication_autocreate_mode
        exists = self.conn.execute(PUBLICATION_SQL, (name,)).fetchone()
        via_root = self.properties.publish_via_partition_root
        if exists:
            if bool(exists[0]) != via_root:
                log.warning(
                    "publication %s exists with publish_via_partition_root=%s, but "
                    "publish.via.partition.root=%s; the existing publication decides",
                    name,
                    str(bool(exists[0])).lower(),
                    str(via_root).lower(),
                )
            if exists[1]:
                checks.warn_blocked_writes(self.conn, name)
            return
        if self._standby:
            raise FatalError(
                f"publication {name} does not exist, and the server is a standby, which cannot "
                f"create it: create it on the primary (e.g. `CREATE PUBLICATION {name} FOR "
                "TABLE …;`), from where it reaches the standby, and restart"
            )
        if mode == "disabled":
            raise FatalError(
                f"publication {name} does not exist and publication.autocreate.mode=disabled. "
                f"Create it (e.g. `CREATE PUBLICATION {name} FOR TABLE …;`) and restart."
            )
        if mode == "all_tables":
            checks.refuse_breaking_writes(self.conn, name)
            statement = sql.SQL("CREATE PUBLICATION {} FOR ALL TABLES").format(sql.Identifier(name))
        else:
            present = self._user_tables()
            tables = [t for t in present if self.filters.reads(t)]
            if not tables:
                refuse_capturing_nothing(
                    self.properties.table_filters(),
                    present=present,
                    containers="database's schemas",
                )
            statement = sql.SQL("CREATE PUBLICATION {} FOR TABLE {}").format(
                sql.Identifier(name),
                sql.SQL(", ").join(sql.Identifier(t.schema, t.table) for t in tables),
            )
        if via_root:
            statement += sql.SQL(" WITH (publish_via_partition_root = true)")
        try:
            self.conn.execute(statement)
        except psycopg.errors.InsufficientPrivilege as error:
            raise FatalError(
                f"cannot create publication {name}: {str(error).strip()}. Create it as a "
                "superuser, or use publication.autocreate.mode=filtered with a table owner."
            ) from None
        # the mark cleanup looks for: it drops only a publication this connector created
        comment = sql.SQL("COMMENT ON PUBLICATION {} IS {}").format(
            sql.Identifier(name), sql.Literal(self._publication_mark())
        )
        self.conn.execute(comment)
        log.info("created publication %s (%s)", name, mode)

    def _publication_mark(self) -> str:
        return f"created by the cdcflow connector of slot {self.properties.slot_name}"

    def _user_tables(self) -> list[TableId]:
        return [TableId(str(s), str(t)) for s, t in self.conn.execute(USER_TABLES_SQL).fetchall()]

    def captured_tables(self) -> list[TableId]:
        """Tables in the publication that the filters capture, in snapshot order."""
        rows = self.conn.execute(PUBLISHED_TABLES_SQL, (self.properties.publication_name,))
        tables = [TableId(str(s), str(t)) for s, t in rows.fetchall()]
        return self.filters.snapshot_order([t for t in tables if self.filters.captures(t)])

    def position(self, offset: Offset) -> PostgresPosition:
        return PostgresPosition.from_offset(offset)

    def position_available(self, offset: Offset | None) -> bool:
        """Whether the slot still holds the changes after ``offset``: it exists and the server
        has not invalidated it."""
        state = checks.slot_state(self.conn, self.properties.slot_name)
        return state is not None and state[4] != "lost"

    def log_budget(self, offset: Offset | None) -> LogBudget:
        """The WAL the slot holds back, on a connection of its own."""
        with connect(self.endpoint) as conn:
            return pg_log_budget.measure(conn, self.properties.slot_name)

    # -- slot, snapshot and stream -----------------------------------------------------------

    def prepare_stream(self, *, for_snapshot: bool, offset: Offset | None) -> None:
        """Open the slot: the snapshot reads at its exported snapshot, streaming starts at it."""
        self._open_slot(for_snapshot=for_snapshot, offset=offset)

    def _open_slot(self, *, for_snapshot: bool, offset: Offset | None) -> SlotHandle:
        """Connect for replication; create the slot (exporting a snapshot) when it is missing."""
        slot_name = self.properties.slot_name
        state = checks.slot_state(self.conn, slot_name)
        if state is not None and state[4] == "lost":
            if not for_snapshot:
                raise checks.slot_invalidated(slot_name)
            log.warning("dropping the invalidated replication slot %s to snapshot again", slot_name)
            self.conn.execute("SELECT pg_drop_replication_slot(%s)", (slot_name,))
            state = None
        if state is None and offset is not None and not for_snapshot:
            stored = pgoutput.format_lsn(PostgresPosition.from_offset(offset).lsn)
            raise position_lost(
                f"replication slot {slot_name} is gone (dropped, or lost with a failover) but "
                f"the stored offset is at LSN {stored}: changes since then cannot be read",
                prevent="leave the slot in place while the connector is stopped; on PostgreSQL "
                "17 set slot.failover=true so a promoted standby has it",
            )
        stream = ReplicationStream(connect_replication(self.endpoint))
        if state is None:
            failover = self.properties.slot_failover and checks.failover_supported(self.conn)
            created = stream.create_slot(slot_name, export_snapshot=for_snapshot, failover=failover)
            log.info(
                "created replication slot %s at %s",
                slot_name,
                pgoutput.format_lsn(created.consistent_point),
            )
            self._slot = SlotHandle(stream, created.consistent_point, created.snapshot_name)
        else:
            confirmed = pgoutput.parse_lsn(str(state[2] or "0/0"))
            self._slot = SlotHandle(stream, confirmed, None)
        return self._slot

    def snapshot_tables(self) -> dict[TableId, int]:
        """Tables the snapshot reads, in snapshot order, with row estimates.

        ``snapshot.tables.order.by.row.count`` orders them by estimate (a stable sort, so ties
        keep the snapshot order).
        """
        estimates = {
            table: snapshotter.estimate_rows(self.conn, table)
            for table in self.captured_tables()
            if self.filters.snapshots(table)
        }
        return snapshotter.order_by_row_count(
            estimates, self.properties.snapshot_tables_order_by_row_count
        )

    def snapshot_steps(self, tables: list[TableId]) -> PostgresSnapshot:
        """The snapshot of ``tables``, consistent with the slot's start position."""
        if self._catalog is None:
            raise RuntimeError("prepare() first")
        return PostgresSnapshot(
            tables,
            parts=SnapshotParts(
                endpoint=self.endpoint,
                properties=self.properties,
                catalog=self._catalog,
                source_block=self.source_block,
                converting=self._converting,
            ),
            slot=self._slot,
        )

    def streaming(self, offset: Offset | None) -> PostgresStream:
        """Start replication at ``offset`` (or the slot's position) and return the source."""
        if self._slot is None:
            self._open_slot(for_snapshot=False, offset=offset)
        assert self._slot is not None and self._catalog is not None
        position = PostgresPosition.from_offset(offset) if offset else None
        resume = position.resume_lsn if position else 0
        start = max(resume, self._slot.start_lsn) if offset is None else resume
        self._start_replication(start)
        return PostgresStream(
            stream=self._slot.stream,
            catalog=self._catalog,
            filters=self.filters,
            source_block=self.source_block,
            placeholder=self.properties.unavailable_value_placeholder,
            failure_mode=self.properties.event_processing_failure_handling_mode,
            resume_lsn=start,
            last_commit_lsn=position.lsn_commit if position else None,
            status_interval_s=self.properties.status_update_interval_ms / 1000,
            poll_interval_s=min(self.properties.poll_interval_ms / 1000, 1.0),
            skip_unchanged=self.properties.skip_messages_without_change,
            xmin=self._xmin_tracker(),
            flushing=LsnFlushing(
                confirm=self.properties.flush_mode != "manual",
                timeout_s=self.properties.lsn_flush_timeout_ms / 1000,
                action=self.properties.lsn_flush_timeout_action,
            ),
            converting=self._converting,
            resume_within=_resumed_transaction(position),
            spool=TransactionSpool() if self._streams_in_progress() else None,
        )

    def _start_replication(self, start: int) -> None:
        """START_REPLICATION, retried while another process still holds the slot
        (``slot.max.retries`` times, ``slot.retry.delay.ms`` apart), as Debezium does."""
        assert self._slot is not None
        retries = self.properties.slot_max_retries
        for attempt in range(retries + 1):
            try:
                self._slot.stream.start(
                    slot=self.properties.slot_name,
                    publication=self.properties.publication_name,
                    start_lsn=start,
                    messages=True,
                    streaming=self._streams_in_progress(),
                    extra=self.properties.stream_params,
                )
                return
            except SlotInUseError as error:
                if attempt == retries:
                    raise
                log.warning("%s; retrying, attempt %d of %d", error, attempt + 1, retries)
                time.sleep(self.properties.slot_retry_delay_ms / 1000)

    def _streams_in_progress(self) -> bool:
        """``stream.in.progress.transactions`` on a server that can (14 and newer)."""
        return (
            self.properties.stream_in_progress_transactions
            and self.conn.info.server_version >= 140000
        )

    def _xmin_tracker(self) -> XminTracker | None:
        """``xmin.fetch.interval.ms`` > 0: the slot's xmin for ``source.xmin`` and offsets."""
        interval = self.properties.xmin_fetch_interval_ms
        if not interval:
            return None
        slot = self.properties.slot_name
        return XminTracker(
            lambda: checks.slot_catalog_xmin(self.conn, slot), interval_s=interval / 1000
        )

    def chunk_source(self) -> PostgresChunks:
        """Chunk reads and watermark writes for incremental snapshots, on their own connection."""
        if self._catalog is None:
            raise RuntimeError("prepare() first")
        signal = self.properties.signal_data_collection
        chunks = PostgresChunks(
            connect(self.endpoint),
            catalog=self._catalog,
            captured=self.captured_tables,
            signal_table=TableId.parse(signal) if signal else None,
            converting=self._converting,
            source_block=self.source_block,
            emit_retries=SignalEmitRetries(
                max_retries=self.properties.signal_emit_failure_max_retries,
                backoff_s=self.properties.signal_emit_failure_backoff_ms / 1000,
                reconnect=lambda: connect(self.endpoint),
            ),
        )
        self._chunks.append(chunks)
        return chunks

    def cleanup(self) -> list[str]:
        """Remove what the connector left on the server (``cleanupPolicy: Delete``)."""
        dropped = []
        with connect(self.endpoint) as conn:
            self._conn = conn
            if checks.slot_state(conn, self.properties.slot_name) is not None:
                if not self._drop_slot():
                    raise FatalError(
                        f"replication slot {self.properties.slot_name} is still in use (or "
                        "could not be dropped, see the warning above): stop the connector that "
                        "streams from it, then run the cleanup again"
                    )
                dropped.append(f"slot {self.properties.slot_name}")
            name = self.properties.publication_name
            found = conn.execute(PUBLICATION_MARK_SQL, (name,)).fetchone()
            if found is not None and found[0] == self._publication_mark():
                conn.execute(sql.SQL("DROP PUBLICATION {}").format(sql.Identifier(name)))
                dropped.append(f"publication {name}")
            elif found is not None:
                # made by hand or by another connector, which may still stream from it
                log.warning(
                    "publication %s was not created by this connector: left in place (drop it "
                    "by hand when no connector uses it: DROP PUBLICATION %s)",
                    name,
                    name,
                )
        self._conn = None
        return dropped

    def insert_signal(self, *, table: str, signal_id: str, signal_type: str, data: str) -> bool:
        """Insert a signal row on a connection of its own; False when the id exists already."""
        target = TableId.parse(table)
        statement = sql.SQL("INSERT INTO {} VALUES (%s, %s, %s) ON CONFLICT DO NOTHING").format(
            sql.Identifier(target.schema, target.table)
        )
        with connect(self.endpoint) as conn:
            return conn.execute(statement, (signal_id, signal_type, data)).rowcount == 1

    # -- side duties -------------------------------------------------------------------------

    def heartbeat(self) -> None:
        """Run ``heartbeat.action.query`` so a quiet database still produces WAL to confirm."""
        query = self.properties.heartbeat_action_query
        if query and self._conn is not None:
            self._conn.execute(query)

    def message_record(self, message: LogMessage, transaction: dict[str, Any] | None) -> Record:
        """A logical decoding message event (``op: m``) on ``<prefix>.message``, as Debezium's:
        key ``{prefix}``, value ``{op, ts_ms, source, transaction, message: {prefix, content}}``
        with the content encoded per ``binary.handling.mode``."""
        value = {
            "op": "m",
            "ts_ms": time.time_ns() // 1_000_000,
            "source": message.source,
            "transaction": transaction,
            "message": {
                "prefix": message.prefix,
                "content": self._message_content(message.content),
            },
        }
        key_head, key_tail = self._message_key
        value_head, value_tail = self._message_value
        topic = f"{self.properties.topic_prefix}{self.properties.topic_delimiter}message"
        return Record(
            topic,
            key_head + orjson.dumps({"prefix": message.prefix}) + key_tail,
            value_head + orjson.dumps(value) + value_tail,
        )

    def close(self, *, stopping: bool = False) -> None:
        """Release the connections; on a clean stop (``stopping``) honour ``slot.drop.on.stop``.

        A retriable failure also closes the connector, and keeps the slot: the restart resumes
        from it.
        """
        if self._slot is not None:
            self._slot.stream.close()
            self._slot = None
        if stopping and self.properties.slot_drop_on_stop and self._conn is not None:
            self._drop_slot()
        for chunks in self._chunks:
            chunks.close()
        if self._conn is not None:
            self._conn.close()
        self._conn, self._chunks = None, []

    def _drop_slot(self) -> bool:
        """Drop the slot once the walsender of the stream closed just now has released it.

        False when it stayed in use or the server refused (both logged).
        """
        name = self.properties.slot_name
        deadline = time.monotonic() + SLOT_RELEASE_TIMEOUT_S
        while (state := checks.slot_state(self.conn, name)) is not None and state[0]:
            if time.monotonic() > deadline:
                log.warning("replication slot %s is still in use; not dropping it", name)
                return False
            time.sleep(0.05)
        if state is None:
            return True
        try:
            self.conn.execute("SELECT pg_drop_replication_slot(%s)", (name,))
        except psycopg.Error as error:
            log.warning("could not drop replication slot %s: %s", name, str(error).strip())
            return False
        log.info("dropped replication slot %s", name)
        return True


@dataclass(frozen=True)
class SnapshotParts:
    """What a snapshot reads with: the server, the properties and the table catalog."""

    endpoint: Endpoint
    properties: PostgresProperties
    catalog: TableCatalog
    source_block: SourceBlock
    converting: ConvertingFailures


class PostgresSnapshot:
    """PostgreSQL's exported-snapshot flow on the engine's snapshot template.

    The reader's transaction imports the slot's exported snapshot (REPEATABLE READ), so every
    row is read as of the slot's consistent point, where streaming starts; without a slot
    (``initial_only`` opens none) ``snapshot.isolation.mode`` decides and the position is the
    server's current LSN read inside the transaction, as Debezium records it. The structure
    step records nothing: pgoutput sends each table's structure with its changes. Locks taken
    by ``snapshot.locking.mode=shared`` last until the snapshot transaction ends, as Debezium's.
    """

    def __init__(
        self, tables: list[TableId], *, parts: SnapshotParts, slot: SlotHandle | None
    ) -> None:
        self._tables, self._parts = tables, parts
        self._properties = parts.properties
        self._slot_lsn = slot.start_lsn if slot is not None else None
        self._exported = slot.exported_snapshot if slot is not None else None
        self._isolation = (
            "repeatable_read" if self._exported else self._properties.snapshot_isolation_mode
        )
        self._reader = connect(parts.endpoint, autocommit=False)
        self._helpers: list[psycopg.Connection[tuple[Any, ...]]] = []
        self._lsn: int | None = None
        self._xid: int | None = None

    def lock(self) -> None:
        """Start the snapshot transaction and lock the tables as snapshot.locking.mode says."""
        snapshotter.begin_snapshot(
            self._reader,
            exported_snapshot=self._exported,
            type_oids=self._parts.catalog.type_oids(),
            isolation=self._isolation,
        )
        self._lsn = (
            self._slot_lsn if self._slot_lsn is not None else snapshotter.current_lsn(self._reader)
        )
        self._xid = snapshotter.transaction_xid(self._reader)
        snapshotter.lock_tables(
            self._reader,
            self._tables,
            mode=self._properties.snapshot_locking_mode,
            timeout_ms=self._properties.snapshot_lock_timeout_ms,
        )

    def position(self) -> Offset:
        assert self._lsn is not None, "lock() first"
        return lsn_offset(lsn=self._lsn, tx_id=None, ts_us=0, committed=False)

    def structure(self) -> Iterator[SchemaChange]:
        return iter(())

    def release(self) -> None:
        """Nothing to release early: shared locks end with the snapshot transaction."""

    def rows(self) -> Iterator[RowChange]:
        # chained in C: a generator delegating with ``yield from`` resumes its Python frame
        # for every row
        return itertools.chain.from_iterable(self._table_rows())

    def _table_rows(self) -> Iterator[Iterator[RowChange]]:
        """The rows of each table in turn (of all at once when read in parallel)."""
        catalog = self._parts.catalog
        assert self._lsn is not None, "lock() first"
        properties = self._properties
        decoded = [d for t in self._tables if (d := catalog.from_catalog(t)) is not None]
        read = partial(
            snapshotter.read_table,
            overrides=properties.statement_overrides,
            fetch_size=properties.snapshot_fetch_size,
            source_block=self._parts.source_block,
            lsn=self._lsn,
            tx_id=self._xid,
            converting=self._parts.converting,
        )
        threads = min(properties.snapshot_max_threads, len(decoded))
        if threads > 1:
            self._helpers = self._helper_readers(threads - 1)
            yield parallel.read_tables(
                [self._reader, *self._helpers],
                decoded,
                read=read,
                buffer=properties.snapshot_fetch_size,
            )
        else:
            for table in decoded:
                yield read(self._reader, table)
        self._reader.commit()

    def _helper_readers(self, count: int) -> list[psycopg.Connection[tuple[Any, ...]]]:
        """``count`` more connections reading the same snapshot as the reader.

        The snapshot is exported from the reader's transaction (which may itself have imported
        the slot's), so every table is read as of the slot's consistent point. Under
        ``snapshot.isolation.mode`` ``read_committed``/``read_uncommitted`` there is no
        snapshot to share: each helper reads in its own transaction.
        """
        exported = None
        if snapshotter.shares_snapshot(self._isolation):
            row = self._reader.execute("SELECT pg_export_snapshot()").fetchone()
            assert row is not None
            exported = str(row[0])
        helpers = []
        for _ in range(count):
            helper = connect(self._parts.endpoint, autocommit=False)
            helpers.append(helper)
            snapshotter.begin_snapshot(
                helper,
                exported_snapshot=exported,
                type_oids=self._parts.catalog.type_oids(),
                isolation=self._isolation,
                deferrable=False,
            )
        return helpers

    def close(self) -> None:
        for helper in self._helpers:
            helper.close()
        self._reader.close()


def message_value_schema(binary_handling_mode: str) -> ConnectSchema:
    """Debezium's ``…postgresql.MessageValue`` schema for logical decoding message events."""
    content = "bytes" if binary_handling_mode == "bytes" else "string"
    return {
        "type": "struct",
        "optional": False,
        "name": "io.debezium.connector.postgresql.MessageValue",
        "version": 1,
        "fields": [
            {"type": "string", "optional": False, "field": "op"},
            {"type": "int64", "optional": True, "field": "ts_ms"},
            {**SOURCE_SCHEMA, "field": "source"},
            TRANSACTION_BLOCK,
            {
                "type": "struct",
                "optional": False,
                "name": "io.debezium.connector.postgresql.Message",
                "version": 1,
                "field": "message",
                "fields": [
                    {"type": "string", "optional": True, "field": "prefix"},
                    {"type": content, "optional": True, "field": "content"},
                ],
            },
        ],
    }


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _int_or_none(value: Any) -> int | None:
    return None if value is None else int(value)


def _resumed_transaction(position: PostgresPosition | None) -> tuple[int, int] | None:
    """The transaction an offset taken inside of names (its xid, and the LSN of its last
    delivered event, ``lsn_proc`` beyond the commit the stream resumes after), or None."""
    if position is None or position.tx_id is None or position.lsn_proc is None:
        return None
    # >=: a transaction's first change may sit exactly at the resume point (the end of the
    # commit before it); the xid keeps a commit's own position from skipping anything
    return (position.tx_id, position.lsn_proc) if position.lsn_proc >= position.resume_lsn else None
