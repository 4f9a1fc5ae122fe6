"""The binlog stream as engine events: transactions, resent GTIDs, DDL, truncates, idling."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import islice
from typing import Any

import pytest

from cdcflow.capture.connectors.mysql import binlog, types
from cdcflow.capture.connectors.mysql.position import BinlogPosition, GtidSet
from cdcflow.capture.connectors.mysql.properties import parse_properties
from cdcflow.capture.connectors.mysql.source import BinlogStream, SourceBlock
from cdcflow.capture.connectors.mysql.tables import Structures
from cdcflow.capture.errors import FatalError
from cdcflow.capture.filters import Filters
from cdcflow.capture.replay import ReplayWindow
from cdcflow.capture.spi import (
    ColumnStructure,
    Event,
    Idle,
    Op,
    RowChange,
    SchemaChange,
    TableChange,
    TableChangeType,
    TableId,
    TableStructure,
    Truncate,
    TxBegin,
    TxCommit,
)

ORDERS = TableId("shop", "orders")
FILE = "mysql-bin.000003"


class ScriptedReader:
    """Hands out binlog items, then nothing (as an idle server)."""

    def __init__(self, items: list[binlog.BinlogItem]) -> None:
        self.items = items

    def next(self, timeout_s: float) -> binlog.BinlogItem | None:
        return self.items.pop(0) if self.items else None

    def close(self) -> None:
        pass


def _filters(include: str) -> Filters:
    properties = parse_properties({"topic.prefix": "shop", "table.include.list": include})
    return Filters.from_properties(properties)


def _header(pos: int, length: int = 50) -> binlog.Header:
    return binlog.Header(file=FILE, pos=pos, next_pos=pos + length, ts_sec=1700000000, server_id=1)


def _structures() -> Structures:
    filters = _filters(r"shop\.orders")
    structures = Structures(filters=filters, options=types.TypeOptions(), skip_unparseable=False)
    orders = TableStructure(
        ORDERS,
        (
            ColumnStructure("id", 4, "INT", 1, optional=False),
            ColumnStructure("v", 12, "VARCHAR", 2, length=20, charset_name="utf8mb4"),
        ),
        primary_key=("id",),
    )
    structures.replay([TableChange(TableChangeType.CREATE, orders)])
    return structures


def _stream(
    items: list[binlog.BinlogItem],
    start: BinlogPosition | None = None,
    window: ReplayWindow | None = None,
) -> BinlogStream:
    structures = _structures()
    return BinlogStream(
        ScriptedReader(items),  # type: ignore[arg-type]
        structures=structures,
        filters=_filters(r"shop\.orders"),
        source_block=SourceBlock(version="0.1.0", connector="mariadb", server="shop"),
        start=start or BinlogPosition(FILE, 4, GtidSet.parse("0-1-9")),
        window=window,
        include_query=False,
        idle_s=0,
    )


def _events(stream: BinlogStream, count: int) -> list[Event]:
    events: Iterator[Event] = stream.events()
    return list(islice(events, count))


def _transaction(gtid: str, pos: int, *rows: tuple[Any, ...]) -> list[binlog.BinlogItem]:
    return [
        binlog.Begin(_header(pos), gtid),
        binlog.Rows(_header(pos + 50), "c", "shop", "orders", rows),
        binlog.Commit(_header(pos + 100, 31), xid=7),
    ]


def test_a_transaction_becomes_begin_rows_and_a_commit_whose_offset_is_past_it() -> None:
    stream = _stream(_transaction("0-1-10", 100, (1, "a"), (2, "b")))
    begin, first, second, commit, idle = _events(stream, 5)

    assert isinstance(begin, TxBegin) and begin.tx_id == "0-1-10"
    assert isinstance(first, RowChange) and isinstance(second, RowChange)
    assert (first.op, first.after, second.after) == (Op.CREATE, (1, "a"), (2, "b"))
    assert [first.source["row"], second.source["row"]] == [0, 1]
    assert first.source["gtid"] == "0-1-10" and first.source["pos"] == 150
    assert (first.source["db"], first.source["table"], first.source["file"]) == (
        "shop",
        "orders",
        FILE,
    )
    assert isinstance(commit, TxCommit)
    assert BinlogPosition.from_offset(commit.offset) == BinlogPosition(
        FILE, 231, GtidSet.parse("0-1-10"), server_id=1, ts_sec=1700000000
    )
    assert isinstance(idle, Idle) and idle.offset == commit.offset


def test_a_transaction_the_server_sends_again_after_a_reconnect_is_skipped() -> None:
    items = [*_transaction("0-1-9", 100, (1, "again")), *_transaction("0-1-10", 300, (2, "new"))]
    events = _events(_stream(items), 3)

    assert [type(e) for e in events] == [TxBegin, RowChange, TxCommit]
    assert isinstance(events[1], RowChange) and events[1].after == (2, "new")


def test_idling_inside_a_transaction_offers_no_offset_to_confirm() -> None:
    stream = _stream([binlog.Begin(_header(100), "0-1-10")])
    begin, idle = _events(stream, 2)

    assert isinstance(begin, TxBegin)
    assert idle == Idle(None)


def test_a_ddl_changes_the_structure_the_next_rows_decode_with() -> None:
    ddl = binlog.Statement(_header(100), "ALTER TABLE orders ADD COLUMN qty INT", "shop", 5)
    items: list[binlog.BinlogItem] = [
        binlog.Begin(_header(50), "0-1-10", standalone=True),
        ddl,
        *_transaction("0-1-11", 200, (1, "a", 3)),
    ]
    change, _, row, _ = _events(_stream(items), 4)

    assert isinstance(change, SchemaChange)
    assert change.database == "shop" and change.ddl.startswith("ALTER TABLE orders")
    assert [c.name for c in change.changes[0].table.columns] == ["id", "v", "qty"]
    assert BinlogPosition.from_offset(change.offset).gtids == GtidSet.parse("0-1-10")
    assert isinstance(row, RowChange) and row.after == (1, "a", 3)


def test_truncate_is_one_t_event_of_the_captured_table() -> None:
    items: list[binlog.BinlogItem] = [
        binlog.Begin(_header(50), "0-1-10", standalone=True),
        binlog.Statement(_header(100), "TRUNCATE TABLE `orders`", "shop", 5),
    ]
    truncate, idle = _events(_stream(items), 2)

    assert isinstance(truncate, Truncate) and truncate.tables[0].id == ORDERS
    assert truncate.source["table"] == "orders"
    assert isinstance(idle, Idle) and idle.offset is not None


def test_rows_of_a_table_the_history_does_not_know_are_a_fatal_error_naming_recovery() -> None:
    structures = Structures(
        filters=_filters("nothing"),
        options=types.TypeOptions(),
        skip_unparseable=False,
    )
    stream = BinlogStream(
        ScriptedReader(_transaction("0-1-10", 100, (1, "a"))),  # type: ignore[arg-type]
        structures=structures,
        filters=_filters(r"shop\.orders"),
        source_block=SourceBlock(version="0.1.0", connector="mariadb", server="shop"),
        start=BinlogPosition(FILE, 4),
        include_query=False,
        idle_s=0,
    )

    with pytest.raises(FatalError, match=r"snapshot\.mode=recovery"):
        _events(stream, 2)


def test_the_fake_rotate_a_reader_gets_on_connecting_keeps_the_resumed_position() -> None:
    # MariaDB positioned by GTID starts with ROTATE(file, 4): the offset must not move back
    # before the snapshot (its schema history records would then all sort after it).
    start = BinlogPosition(FILE, 1200, GtidSet.parse("0-1-9"), server_id=1, ts_sec=1700000000)
    stream = _stream([binlog.Rotate(FILE, 4)], start=start)
    (idle,) = _events(stream, 1)

    assert isinstance(idle, Idle) and idle.offset is not None
    assert BinlogPosition.from_offset(idle.offset) == start


def test_a_rotation_to_the_next_binlog_file_moves_the_position_to_its_start() -> None:
    stream = _stream([binlog.Rotate("mysql-bin.000004", 4)])
    (idle,) = _events(stream, 1)

    assert isinstance(idle, Idle) and idle.offset is not None
    assert BinlogPosition.from_offset(idle.offset).file == "mysql-bin.000004"
    assert BinlogPosition.from_offset(idle.offset).pos == 4


def test_a_transaction_of_uncaptured_tables_is_announced_and_ended_as_debezium_does() -> None:
    items: list[binlog.BinlogItem] = [
        binlog.Begin(_header(100), "0-1-10"),
        binlog.Rows(_header(150), "c", "shop", "audit", ((1, "x"),)),
        binlog.Commit(_header(200, 31), xid=7),
    ]
    begin, commit, idle = _events(_stream(items), 3)

    assert isinstance(begin, TxBegin) and begin.tx_id == "0-1-10"
    assert isinstance(commit, TxCommit) and commit.tx_id == "0-1-10"
    assert isinstance(idle, Idle)


def test_a_restart_inside_a_transaction_skips_what_was_delivered_before_it() -> None:
    rows = [(n, f"v{n}") for n in range(1, 6)]
    items: list[binlog.BinlogItem] = [
        binlog.Begin(_header(100), "0-1-10"),
        binlog.Rows(_header(150), "c", "shop", "orders", tuple(rows[:3])),
        binlog.Rows(_header(250), "c", "shop", "orders", tuple(rows[3:])),
        binlog.Commit(_header(350, 31), xid=7),
    ]
    first = _stream(list(items))
    events = first.events()
    for _ in range(3):  # BEGIN and two rows of the first rows event
        next(events)
    within = first.offset_in_transaction()
    assert within is not None
    resumed_at = BinlogPosition.from_offset(within)
    assert (resumed_at.pos, resumed_at.event, resumed_at.row) == (4, 0, 2)

    again = _stream(list(items), start=resumed_at)
    resumed = _events(again, 5)
    changes = [e for e in resumed if isinstance(e, RowChange)]
    assert [c.after[0] for c in changes if c.after] == [3, 4, 5]
    commit = next(e for e in resumed if isinstance(e, TxCommit))
    ended = BinlogPosition.from_offset(commit.offset)
    assert (ended.event, ended.row) == (0, 0)  # past the transaction: nothing to skip


def _window_to(pos: int) -> ReplayWindow:
    """The binlog read again up to a redone snapshot's position ``pos``."""
    end = BinlogPosition(FILE, pos, GtidSet.parse("0-1-11"))
    return ReplayWindow(end.offset(), end.order_key())


def test_offsets_inside_a_replay_window_are_the_snapshots_with_where_the_replay_stands() -> None:
    items = [*_transaction("0-1-10", 100, (1, "gone")), *_transaction("0-1-11", 300, (2, "x"))]
    events = _events(_stream(items, window=_window_to(331)), 7)
    inside, past = events[2], events[5]

    assert isinstance(inside, TxCommit) and isinstance(past, TxCommit)
    assert BinlogPosition.from_offset(inside.offset).pos == 331  # the history recovers at P1
    replay_start = inside.offset.replay_start()
    assert replay_start is not None and BinlogPosition.from_offset(replay_start).pos == 231
    assert past.offset.replay_start() is None  # the window ends at the snapshot's position
    assert BinlogPosition.from_offset(past.offset).gtids == GtidSet.parse("0-1-11")
    assert isinstance(events[1], RowChange) and events[1].after == (1, "gone")  # sent again


def test_ddl_inside_a_replay_window_is_not_applied_again_and_older_rows_are_skipped() -> None:
    # the redone snapshot read the table after this ALTER: its structure has v already
    ddl = binlog.Statement(_header(231), "ALTER TABLE orders ADD COLUMN v VARCHAR(20)", "shop", 5)
    items = [*_transaction("0-1-10", 100, (1,)), ddl, *_transaction("0-1-11", 300, (2, "b"))]
    stream = _stream(items, window=_window_to(431))
    events = _events(stream, 5)

    assert [type(e) for e in events] == [TxBegin, TxCommit, TxBegin, RowChange, TxCommit]
    assert isinstance(events[3], RowChange) and events[3].after == (2, "b")
    assert isinstance(events[4], TxCommit) and events[4].offset.replay_start() is None
