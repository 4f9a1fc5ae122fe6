"""The MySQL consistent snapshot on the engine's snapshot template, per ``snapshot.locking.mode``.

Debezium's steps: (1) a global read lock (``FLUSH TABLES WITH READ LOCK``) — or, where the
server refuses it (hosted MySQL), table locks; (2) a REPEATABLE READ transaction ``WITH
CONSISTENT SNAPSHOT``; (3) the binlog position, read under the lock, so no write falls between
the snapshot and the stream; (4) the tables' structures, recorded to schema history; (5)
``minimal``: the global lock is released before any row is read (the transaction keeps the
view), ``extended`` keeps it until the rows are read, ``none`` takes no lock at all; (6) the
rows, streamed; (7) commit and unlock.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import pymysql

from cdcflow.capture.connectors.mysql import tables, types
from cdcflow.capture.connectors.mysql.connection import (
    Connection,
    Endpoint,
    connect,
    execute,
    query,
    quote,
)
from cdcflow.capture.connectors.mysql.position import BinlogPosition, GtidSet
from cdcflow.capture.connectors.mysql.source import SourceBlock
from cdcflow.capture.errors import FatalError
from cdcflow.capture.spi import (
    Offset,
    Op,
    RowChange,
    SchemaChange,
    TableChange,
    TableChangeType,
    TableId,
    TableStructure,
)

log = logging.getLogger(__name__)

GLOBAL_LOCK_DENIED = (1227, 1044, 1045)
DATABASE_SQL = (
    "SELECT DEFAULT_CHARACTER_SET_NAME, DEFAULT_COLLATION_NAME FROM information_schema.SCHEMATA "
    "WHERE SCHEMA_NAME = %s"
)


def read_position(conn: Connection, *, mariadb: bool) -> BinlogPosition:
    """The binlog position now: file and pos, and the GTIDs executed so far."""
    rows = query(conn, "SHOW MASTER STATUS")
    if not rows:
        raise FatalError("SHOW MASTER STATUS returned nothing: the binary log is off")
    file, pos = str(rows[0][0]), int(rows[0][1])
    if mariadb:
        gtids = str(query(conn, "SELECT @@GLOBAL.gtid_binlog_pos")[0][0] or "")
    else:
        gtids = str(rows[0][4] or "") if len(rows[0]) > 4 else ""
    return BinlogPosition(file=file, pos=pos, gtids=GtidSet.parse(gtids))


@dataclass(frozen=True)
class SnapshotParts:
    """What a snapshot reads with."""

    endpoint: Endpoint
    structures: tables.Structures
    source_block: SourceBlock
    locking_mode: str
    lock_timeout_ms: int
    overrides: Mapping[str, str]
    fetch_size: int
    mariadb: bool


class MySqlSnapshot:
    """See the module docstring."""

    def __init__(
        self, tables_: list[TableId], *, recorded: list[TableId], parts: SnapshotParts
    ) -> None:
        """``tables_`` are read row by row; ``recorded`` (a superset) have their structure
        recorded to schema history."""
        self._tables, self._recorded, self._parts = tables_, recorded, parts
        self._conn = connect(parts.endpoint, autocommit=True)
        self._reader: Connection | None = None
        self._global_lock = False
        self._table_locks = False
        self._position: BinlogPosition | None = None

    # -- 1 and 2 -----------------------------------------------------------------------------

    def lock(self) -> None:
        parts = self._parts
        execute(
            self._conn, f"SET SESSION lock_wait_timeout = {max(1, parts.lock_timeout_ms // 1000)}"
        )
        if parts.locking_mode != "none":
            self._take_locks()
        self._reader = connect(
            parts.endpoint, autocommit=False, conv=types.SNAPSHOT_CONVERSIONS, streaming=True
        )
        execute(self._reader, "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        execute(self._reader, "START TRANSACTION WITH CONSISTENT SNAPSHOT")

    def _take_locks(self) -> None:
        try:
            execute(self._conn, "FLUSH TABLES WITH READ LOCK")
            self._global_lock = True
            log.info("snapshot: global read lock taken")
        except pymysql.err.OperationalError as error:
            if error.args[0] not in GLOBAL_LOCK_DENIED:
                raise
            names = ", ".join(f"{quote(t.schema)}.{quote(t.table)} READ" for t in self._tables)
            log.info("snapshot: no global read lock allowed (%s); locking the tables", error)
            execute(self._conn, f"LOCK TABLES {names}")
            self._table_locks = True

    # -- 3 and 4 -----------------------------------------------------------------------------

    def position(self) -> Offset:
        self._position = read_position(self._conn, mariadb=self._parts.mariadb)
        log.info("snapshot at binlog %s:%d (%s)", self._position.file, self._position.pos,
                 self._position.gtids or "no GTIDs")  # fmt: skip
        return self._position.offset()

    def structure(self) -> Iterator[SchemaChange]:
        """The statements Debezium records for a snapshot, in its order: the server's charset;
        a ``DROP TABLE IF EXISTS`` per table; per database ``DROP DATABASE IF EXISTS``,
        ``CREATE DATABASE``, ``USE`` and each table's ``SHOW CREATE TABLE`` (sorted by name),
        so replaying the history from any point rebuilds exactly these structures."""
        assert self._position is not None, "position() first"
        tables_ = sorted(self._recorded)
        charset, collation = query(self._conn, "SELECT @@character_set_server, @@collation_server")[
            0
        ]
        yield self._change(
            "", None, f"SET character_set_server={charset}, collation_server={collation}"
        )
        for table in tables_:
            dropped = TableChange(TableChangeType.DROP, TableStructure(table, ()))
            ddl = f"DROP TABLE IF EXISTS {quote(table.schema)}.{quote(table.table)}"
            yield self._change(table.schema, table.table, ddl, dropped)
        for database in sorted({t.schema for t in tables_}):
            yield from self._database(database, [t for t in tables_ if t.schema == database])

    def _database(self, database: str, tables_: list[TableId]) -> Iterator[SchemaChange]:
        rows = query(self._conn, DATABASE_SQL, (database,))
        charset, collation = rows[0] if rows else ("utf8mb4", "utf8mb4_general_ci")
        name = quote(database)
        yield self._change(database, None, f"DROP DATABASE IF EXISTS {name}")
        yield self._change(
            database, None, f"CREATE DATABASE {name} CHARSET {charset} COLLATE {collation}"
        )
        yield self._change(database, None, f"USE {name}")
        for table in tables_:
            try:
                read = tables.read_structure(self._conn, table)
            except ValueError as error:  # a type nobody maps, in a table we do not capture
                if table in self._tables:
                    raise FatalError(f"cannot read the structure of {table}: {error}") from None
                log.warning("not recording %s, which is not captured: %s", table, error)
                continue
            created = TableChange(TableChangeType.CREATE, read)
            yield self._change(
                database, table.table, tables.show_create(self._conn, table), created
            )

    def _change(
        self, database: str, table: str | None, ddl: str, *changes: TableChange
    ) -> SchemaChange:
        """A snapshot schema change (applied to the structures) at the snapshot's position."""
        assert self._position is not None
        self._parts.structures.replay(changes)
        source = self._parts.source_block.block(
            ts_ms=int(time.time() * 1000),
            db=database,
            table=table,
            server_id=0,
            file=self._position.file,
            pos=self._position.pos,
            snapshot="true",
        )
        return SchemaChange(
            database=database,
            schema=None,
            ddl=ddl,
            changes=changes,
            source=source,
            offset=self._position.offset(),
        )

    # -- 5 to 7 ------------------------------------------------------------------------------

    def release(self) -> None:
        locked = self._global_lock or self._table_locks
        if locked and self._parts.locking_mode in ("minimal", "minimal_percona"):
            execute(self._conn, "UNLOCK TABLES")
            self._global_lock = self._table_locks = False
            log.info("snapshot: locks released before reading rows")

    def rows(self) -> Iterator[RowChange]:
        assert self._reader is not None and self._position is not None, "lock() first"
        for table in self._tables:
            yield from self._read_table(table)
        self._reader.commit()

    def _read_table(self, table: TableId) -> Iterator[RowChange]:
        assert self._reader is not None and self._position is not None
        decoder = self._parts.structures.decoder(table)
        if decoder is None:
            return
        schema, convert = decoder.schema, decoder.convert
        statement = self._parts.overrides.get(str(table)) or (
            f"SELECT {self._parts.structures.select_list(table)} "
            f"FROM {quote(table.schema)}.{quote(table.table)}"
        )
        source = self._parts.source_block.block(
            ts_ms=int(time.time() * 1000),
            db=table.schema,
            table=table.table,
            server_id=0,
            file=self._position.file,
            pos=self._position.pos,
            snapshot="true",
        )
        with self._reader.cursor() as cursor:
            cursor.execute(statement)
            while batch := cursor.fetchmany(self._parts.fetch_size):
                for row in batch:
                    yield RowChange(schema, Op.READ, None, convert(row), source)

    def close(self) -> None:
        for conn in (self._reader, self._conn):
            if conn is None:
                continue
            try:
                if conn is self._conn and (self._global_lock or self._table_locks):
                    execute(conn, "UNLOCK TABLES")
                conn.close()
            except pymysql.err.Error:
                log.debug("closing a snapshot connection failed", exc_info=True)
        self._reader = None
