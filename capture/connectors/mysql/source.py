"""The MySQL ``source`` block and the binlog stream as engine events.

:class:`BinlogStream` turns the reader's items into transactions of row changes and schema
changes. Rows decode with the table structures of the schema history as of their position
(:class:`~cdcflow.capture.connectors.mysql.tables.Structures`), never with a live catalog
lookup; DDL updates those structures where it appears in the binlog. Offsets move only at
transaction ends: a restart resumes after the last committed transaction (by GTID, else by
file/pos), and a transaction the server sends again whose GTID is already complete is skipped.
After a redone snapshot the binlog is read again from the interrupted attempt's position up to
the snapshot's (:mod:`cdcflow.capture.replay`): its DDL is not applied again, and a rows event
written with another structure than the snapshot's is skipped.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from cdcflow.capture.connectors.mysql import binlog
from cdcflow.capture.connectors.mysql.position import BinlogPosition, GtidSet
from cdcflow.capture.connectors.mysql.tables import RowDecoder, Structures
from cdcflow.capture.errors import FatalError
from cdcflow.capture.filters import Filters
from cdcflow.capture.replay import ReplayWindow, offset_at
from cdcflow.capture.spi import (
    ConnectSchema,
    Event,
    Idle,
    Offset,
    Op,
    RowChange,
    SchemaChange,
    TableId,
    Truncate,
    TxBegin,
    TxCommit,
)

log = logging.getLogger(__name__)

_OPS = {"c": Op.CREATE, "u": Op.UPDATE, "d": Op.DELETE}
_TRUNCATE = re.compile(
    r"TRUNCATE\s+(?:TABLE\s+)?(?:(?P<db>`[^`]+`|\w+)\.)?(?P<table>`[^`]+`|\w+)", re.IGNORECASE
)


def source_schema(connector: str) -> ConnectSchema:
    """Debezium's ``io.debezium.connector.<mysql|mariadb>.Source``."""
    return {
        "type": "struct",
        "optional": False,
        "name": f"io.debezium.connector.{connector}.Source",
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
                    "allowed": "true,first,first_in_data_collection,last_in_data_collection,"
                    "last,false,incremental"
                },
                "default": "false",
                "field": "snapshot",
            },
            {"type": "string", "optional": False, "field": "db"},
            {"type": "string", "optional": True, "field": "sequence"},
            {"type": "int64", "optional": True, "field": "ts_us"},
            {"type": "int64", "optional": True, "field": "ts_ns"},
            {"type": "string", "optional": True, "field": "table"},
            {"type": "int64", "optional": False, "field": "server_id"},
            {"type": "string", "optional": True, "field": "gtid"},
            {"type": "string", "optional": False, "field": "file"},
            {"type": "int64", "optional": False, "field": "pos"},
            {"type": "int32", "optional": False, "field": "row"},
            {"type": "int64", "optional": True, "field": "thread"},
            {"type": "string", "optional": True, "field": "query"},
        ],
        "version": 1,
    }


@dataclass(frozen=True)
class SourceBlock:
    """Builds ``source`` dicts: the connector's fixed fields plus an event's own."""

    version: str
    connector: str
    server: str

    def block(
        self,
        *,
        ts_ms: int,
        db: str,
        table: str | None,
        server_id: int,
        file: str,
        pos: int,
        row: int = 0,
        gtid: str | None = None,
        thread: int | None = None,
        query: str | None = None,
        snapshot: str = "false",
    ) -> dict[str, Any]:
        return {
            "version": self.version,
            "connector": self.connector,
            "name": self.server,
            "ts_ms": ts_ms,
            "snapshot": snapshot,
            "db": db,
            "sequence": None,
            "ts_us": ts_ms * 1000,
            "ts_ns": ts_ms * 1_000_000,
            "table": table,
            "server_id": server_id,
            "gtid": gtid,
            "file": file,
            "pos": pos,
            "row": row,
            "thread": thread,
            "query": query,
        }


@dataclass
class _Transaction:
    """The transaction being read: its id, where it started, what the next events need."""

    gtid: str | None
    tx_id: str
    thread: int | None = None
    query: str | None = None
    announced: bool = False
    standalone: bool = False
    events: int = 0
    """Rows events of the transaction read so far, the one being read included."""
    rows: int = 0
    """Rows of the rows event being read yielded so far."""


class BinlogStream:
    """The engine's :class:`~cdcflow.capture.spi.StreamingSource` over a binlog reader."""

    def __init__(
        self,
        reader: binlog.BinlogItems,
        *,
        structures: Structures,
        filters: Filters,
        source_block: SourceBlock,
        start: BinlogPosition,
        window: ReplayWindow | None = None,
        include_query: bool,
        idle_s: float,
        gtid_filter: tuple[list[str], list[str]] = ([], []),
    ) -> None:
        self._reader = reader
        self._structures = structures
        self._filters = filters
        self._block = source_block
        self._position = start
        #: The log read again after a redone snapshot, up to its position (None past it).
        self._replay = window
        self._include_query = include_query
        self._idle_s = idle_s
        self._includes, self._excludes = gtid_filter
        self._tx: _Transaction | None = None
        self._skipping = False
        #: A start inside a transaction (Debezium's ``event`` and ``row``): the rows events
        #: and rows of the first transaction read that were delivered before the restart.
        self._resume_within = (start.event, start.row) if start.event or start.row else None

    def events(self) -> Iterator[Event]:
        while True:
            item = self._reader.next(self._idle_s)
            if item is None:
                yield Idle(None if self._tx else self._offset(self._position))
                continue
            yield from self._on(item)

    def offset_in_transaction(self) -> Offset | None:
        """Inside a transaction, its start (the end of the last one) with the rows events and
        rows yielded so far: a restart reads the transaction again and skips those."""
        tx = self._tx
        if tx is None or not tx.events:
            return None
        return self._offset(self._position.moved(event=tx.events - 1, row=tx.rows))

    def acknowledge(self, offset: Offset) -> None:
        """Nothing to confirm on the server: a binlog reader holds no slot."""

    def close(self) -> None:
        self._reader.close()

    def _offset(self, position: BinlogPosition) -> Offset:
        """The offset to store at ``position``: inside the replay window, the window's."""
        if self._replay is None:
            return position.offset()
        offset, self._replay = offset_at(self._replay, position)
        return offset

    def _replaying(self) -> bool:
        """Whether the transaction being read is inside the replay window."""
        window = self._replay
        return window is not None and window.inside(self._position.order_key())

    # -- items -------------------------------------------------------------------------------

    def _on(self, item: binlog.BinlogItem) -> Iterator[Event]:
        match item:
            case binlog.Rotate():
                self._rotate(item)
            case binlog.Begin():
                yield from self._begin(item)
            case binlog.Statement():
                yield from self._statement(item)
            case binlog.RowsQuery():
                if self._tx is not None:
                    self._tx.query = item.query
            case binlog.Rows():
                yield from self._rows(item)
            case binlog.Commit():
                yield from self._commit(item.header)

    def _rotate(self, item: binlog.Rotate) -> None:
        """Only a rotation to a later file moves the position (to that file's start). The
        server also sends a fake ROTATE when a reader connects, naming the file it starts in
        and ``pos 4`` (MariaDB when positioned by GTID): taken as a position, it would move
        the offset back before the snapshot and its schema history, and the next start
        would find no structure for the first row."""
        if self._tx is None and self._position.is_before_file(item.file):
            self._position = self._position.moved(file=item.file, pos=item.pos)

    def _begin(self, item: binlog.Begin) -> Iterator[Event]:
        """A transaction starts. As Debezium, every transaction of rows is announced, also one
        that touches no captured table (its END then counts no event); a DDL is not."""
        gtid = item.gtid
        self._skipping = gtid is not None and self._already_done(gtid)
        tx_id = gtid if gtid else f"file={item.header.file},pos={item.header.pos}"
        self._tx = tx = _Transaction(gtid=gtid, tx_id=tx_id, standalone=item.standalone)
        if not self._skipping and not item.standalone:
            tx.announced = True
            yield TxBegin(tx_id, self._boundary(item.header, gtid))

    def _already_done(self, gtid: str) -> bool:
        """A transaction completed before (the server sends it again after a reconnect) or
        from a source ``gtid.source.includes/excludes`` leaves out."""
        single = GtidSet().with_gtid(gtid)
        if self._position.gtids.contains(single):
            return True
        if self._includes or self._excludes:
            kept = single.filtered(includes=self._includes, excludes=self._excludes)
            return not kept
        return False

    def _statement(self, item: binlog.Statement) -> Iterator[Event]:
        text = item.query.strip()
        keyword = text.split(None, 1)[0].upper() if text else ""
        if keyword in ("BEGIN", "XA"):
            if self._tx is None:  # no GTID event: a binlog without GTIDs
                yield from self._begin(binlog.Begin(item.header, None))
            assert self._tx is not None
            self._tx.thread = item.thread
            return
        if keyword == "COMMIT":
            yield from self._commit(item.header)
            return
        if self._skipping:
            self._finish(item.header, gtid=self._tx.gtid if self._tx else None)
            return
        if keyword == "TRUNCATE":
            yield from self._truncate(item)
            return
        yield from self._ddl(item)

    def _truncate(self, item: binlog.Statement) -> Iterator[Event]:
        """``TRUNCATE [TABLE] t``: one ``op: t`` event for a captured table."""
        gtid = self._tx.gtid if self._tx else None
        self._finish(item.header, gtid=gtid)
        found = _TRUNCATE.match(item.query.strip())
        if found is None:
            return
        database = (found["db"] or "").strip("`") or item.schema
        table_id = TableId(database, found["table"].strip("`"))
        schema = self._structures.schema(table_id)
        if schema is None or not self._filters.captures(table_id):
            return
        source = self._source(item.header, table_id, 0)
        yield Truncate((schema,), ({**source, "gtid": gtid},))
        yield Idle(self._offset(self._position))

    def _ddl(self, item: binlog.Statement) -> Iterator[Event]:
        gtid = self._tx.gtid if self._tx else None
        if self._replaying():  # the structures are the redone snapshot's already
            self._finish(item.header, gtid=gtid)
            return
        applied = self._structures.apply(item.query, database=item.schema)
        self._finish(item.header, gtid=gtid)
        for entry in applied:
            source = self._block.block(
                ts_ms=item.header.ts_sec * 1000,
                db=entry.database,
                table=entry.change.table.id.table,
                server_id=item.header.server_id,
                file=item.header.file,
                pos=item.header.pos,
                gtid=gtid,
            )
            yield SchemaChange(
                database=entry.database,
                schema=None,
                ddl=entry.ddl,
                changes=(entry.change,),
                source=source,
                offset=self._offset(self._position),
            )

    def _rows(self, item: binlog.Rows) -> Iterator[Event]:
        tx = self._tx
        if self._skipping or tx is None:
            return
        tx.events += 1  # every rows event counts, captured or not: a restart counts alike
        tx.rows = 0
        delivered = self._delivered(tx.events - 1)
        if delivered < 0:
            return
        table_id = TableId(item.schema, item.table)
        if not self._filters.reads(table_id):
            return
        decoder = self._structures.decoder(table_id)
        if self._replaying() and not _decodes(decoder, item):
            log.warning(
                "a row event of %s in the binlog read again after the redone snapshot was "
                "written with another structure than the snapshot's: skipped",
                table_id,
            )
            return
        if decoder is None:
            raise FatalError(
                f"a row event of {table_id} arrived but the schema history has no structure "
                "for it: the history is incomplete. Rebuild it with snapshot.mode=recovery"
            )
        if not tx.announced:
            tx.announced = True
            yield TxBegin(tx.tx_id, self._source(item.header, table_id, 0))
        op, schema, values = _OPS[item.kind], decoder.schema, decoder.values
        common = self._source(item.header, table_id, 0)  # the event's rows differ in `row` only
        for number, row in enumerate(item.rows):
            if number < delivered:
                continue
            tx.rows = number + 1
            source = {**common, "row": number}
            if op is Op.UPDATE:
                before, after = row
                yield RowChange(schema, op, values(before), values(after), source, tx.tx_id)
            elif op is Op.CREATE:
                yield RowChange(schema, op, None, values(row), source, tx.tx_id)
            else:
                yield RowChange(schema, op, values(row), None, source, tx.tx_id)

    def _delivered(self, event: int) -> int:
        """Rows of rows event number ``event`` of this transaction delivered before a restart
        inside it: -1 for all of them, else how many (0 outside such a restart)."""
        within = self._resume_within
        if within is None:
            return 0
        events, rows = within
        if event < events:
            return -1
        return rows if event == events else 0

    def _source(self, header: binlog.Header, table: TableId, row: int) -> dict[str, Any]:
        tx = self._tx
        return self._block.block(
            ts_ms=header.ts_sec * 1000,
            db=table.schema,
            table=table.table,
            server_id=header.server_id,
            file=header.file,
            pos=header.pos,
            row=row,
            gtid=tx.gtid if tx else None,
            thread=tx.thread if tx else None,
            query=tx.query if tx and self._include_query else None,
        )

    def _commit(self, header: binlog.Header) -> Iterator[Event]:
        tx = self._tx
        self._finish(header, gtid=tx.gtid if tx else None)
        if tx is None or not tx.announced:
            return
        yield TxCommit(tx.tx_id, self._offset(self._position), self._boundary(header, tx.gtid))

    def _boundary(self, header: binlog.Header, gtid: str | None) -> dict[str, Any]:
        """The source block of a transaction's BEGIN or END (no table)."""
        return self._block.block(
            ts_ms=header.ts_sec * 1000,
            db="",
            table=None,
            server_id=header.server_id,
            file=header.file,
            pos=header.pos,
            gtid=gtid,
        )

    def _finish(self, header: binlog.Header, *, gtid: str | None) -> None:
        """The transaction ended at ``header``: the position moves past it."""
        gtids = self._position.gtids.with_gtid(gtid) if gtid else self._position.gtids
        self._position = self._position.moved(
            file=header.file,
            pos=header.next_pos,
            gtids=gtids,
            server_id=header.server_id,
            ts_sec=header.ts_sec or int(time.time()),
            event=0,
            row=0,
        )
        self._tx, self._skipping, self._resume_within = None, False, None


def _decodes(decoder: RowDecoder | None, item: binlog.Rows) -> bool:
    """Whether a rows event was written with the structure ``decoder`` has."""
    if decoder is None or not item.rows:
        return False
    first = item.rows[0]
    row = first[0] if item.kind == "u" else first
    return len(row) == decoder.width
