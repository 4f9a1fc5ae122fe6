"""The CD-table poller as engine events: windows, cross-table order, update pairs, restarts,
registrations and the agent's heartbeat — against a scripted connection."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import islice
from typing import Any

import pytest

from cdcflow.capture.connectors.db2 import sql, tables, types
from cdcflow.capture.connectors.db2.lsn import Db2Position, Lsn
from cdcflow.capture.connectors.db2.properties import parse_properties
from cdcflow.capture.connectors.db2.source import SourceBlock
from cdcflow.capture.connectors.db2.stream import AgentWatch, ChangeStream, agent_timeout_s
from cdcflow.capture.errors import FatalError, RetriableError
from cdcflow.capture.filters import Filters
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
    TxBegin,
    TxCommit,
)

ORDERS = TableId("SHOP", "ORDERS")
ITEMS = TableId("SHOP", "ITEMS")
STATEMENTS = sql.AsnStatements()
CD_NAMES = ["OPCODE", "IBMSNAP_COMMITSEQ", "IBMSNAP_INTENTSEQ", "IBMSNAP_OPERATION", "ID", "V"]


def lsn(number: int) -> bytes:
    return Lsn.from_int(number).value


def _structure(table: TableId, *, extra: bool = False) -> TableStructure:
    columns = [
        ColumnStructure("ID", 4, "INTEGER", 1, optional=False, length=10, scale=0),
        ColumnStructure("V", 12, "VARCHAR", 2, length=20),
    ]
    if extra:
        columns.append(ColumnStructure("NOTE", 12, "VARCHAR", 3, length=20))
    return TableStructure(table, tuple(columns), ("ID",))


def _catalog_rows(structure: TableStructure) -> list[tuple[Any, ...]]:
    """SYSCAT.COLUMNS rows of a structure made of INTEGER and VARCHAR columns."""
    rows = []
    for index, column in enumerate(structure.columns):
        key = (
            structure.primary_key.index(column.name) + 1
            if column.name in structure.primary_key
            else None
        )
        length = 4 if column.type_name == "INTEGER" else 20
        nulls = "Y" if column.optional else "N"
        rows.append((column.name, index, column.type_name, length, 0, nulls, key, None, "N", " ",
                     1208, None))  # fmt: skip
    return rows


class ScriptedDb2:
    """Answers the stream's statements from in-memory CD tables and a register."""

    def __init__(self) -> None:
        self.max_lsn: int | None = 0
        self.heartbeat: tuple[Any, Any] = (lsn(0), "2026-11-23 00:00:00")
        self.registered: dict[TableId, tuple[str, int | None]] = {}
        self.updates_split: dict[TableId, str] = {}
        self.cd_rows: dict[str, list[tuple[int, int, str, int, str | None]]] = {}
        self.cd_extra: dict[str, list[str]] = {}
        self.catalog: dict[TableId, TableStructure] = {}

    def register(self, table: TableId, *, start: int | None = 1) -> None:
        cd = f"CDC_{table.schema}_{table.table}"
        self.registered[table] = (cd, start)
        self.cd_rows.setdefault(cd, [])
        self.catalog.setdefault(table, _structure(table))

    def write(
        self, table: TableId, commit: int, intent: int, operation: str, row: tuple[int, str | None]
    ) -> None:
        cd = self.registered[table][0]
        self.cd_rows[cd].append((commit, intent, operation, *row))

    # -- the Connection methods the stream uses ----------------------------------------------

    def query(self, statement: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        if statement == STATEMENTS.max_lsn:
            return [] if self.max_lsn is None else [(lsn(self.max_lsn),)]
        if statement == STATEMENTS.registrations:
            return [
                (
                    t.schema,
                    t.table,
                    "ASNCDC",
                    cd,
                    "A",
                    None if start is None else lsn(start),
                    self.updates_split.get(t, "Y"),
                )
                for t, (cd, start) in sorted(self.registered.items())
            ]
        if statement == STATEMENTS.agent_progress:
            return [self.heartbeat]
        if statement == sql.COLUMNS:
            table = TableId(str(params[0]), str(params[1]))
            return _catalog_rows(self.catalog[table]) if table in self.catalog else []
        raise AssertionError(f"unexpected statement {statement}")

    def open(
        self, statement: str, params: Sequence[Any] = (), *, fetch_size: int = 2000
    ) -> tuple[list[str], Iterator[tuple[Any, ...]]]:
        cd = next(cd for cd in self.cd_rows if sql.table_name("ASNCDC", cd) in statement)
        first, last = (int.from_bytes(p, "big") for p in params)
        rows = sorted(r for r in self.cd_rows[cd] if first <= r[0] <= last)
        result = []
        for i, (commit, intent, operation, *values) in enumerate(rows):
            follows = rows[i + 1] if i + 1 < len(rows) else None
            precedes = rows[i - 1] if i > 0 else None
            if operation == "D" and follows and follows[0] == commit and follows[2] == "I":
                code = sql.UPDATE_BEFORE
            elif operation == "I" and precedes and precedes[0] == commit and precedes[2] == "D":
                code = sql.UPDATE_AFTER
            else:
                code = {"D": sql.DELETE, "I": sql.INSERT, "U": sql.UPDATE_ROW}.get(operation)
            result.append((code, lsn(commit), lsn(intent), operation, *values))
        return CD_NAMES + self.cd_extra.get(cd, []), iter(result)

    def rollback(self) -> None:
        pass

    def close(self) -> None:
        pass


def _stream(db: ScriptedDb2, start: Db2Position, *, timeout_s: float = 60.0) -> ChangeStream:
    properties = parse_properties({"topic.prefix": "shop", "table.include.list": "SHOP\\..*"})
    filters = Filters.from_properties(properties)
    structures = tables.Structures(filters=filters, options=types.TypeOptions())
    for table in db.registered:
        structures.replay([TableChange(TableChangeType.CREATE, _structure(table))])
    return ChangeStream(
        db,  # type: ignore[arg-type]
        structures=structures,
        captures=filters.captures,
        source_block=SourceBlock(version="3.7.0", server="shop", database="TESTDB"),
        statements=STATEMENTS,
        start=start,
        poll_interval_s=0.0,
        agent=AgentWatch(timeout_s=timeout_s, check_every_s=0.0),
    )


def _until_idle(stream: ChangeStream, limit: int = 200) -> list[Event]:
    """Events up to (and without) the first Idle that follows some work."""
    events: list[Event] = []
    for event in islice(stream.events(), limit):
        if isinstance(event, Idle):
            if events:
                return events
            continue
        events.append(event)
    return events


def _rows(events: list[Event]) -> list[tuple[str, TableId, Any, Any]]:
    return [(e.op.value, e.table.id, e.before, e.after) for e in events if isinstance(e, RowChange)]


def test_changes_of_two_tables_merge_into_transactions_in_commit_and_change_order() -> None:
    db = ScriptedDb2()
    db.register(ORDERS)
    db.register(ITEMS)
    db.write(ORDERS, 10, 100, "I", (1, "a"))
    db.write(ITEMS, 10, 101, "I", (7, "x"))
    db.write(ORDERS, 10, 102, "I", (2, "b"))
    db.write(ITEMS, 12, 120, "I", (8, "y"))
    db.max_lsn = 12
    events = _until_idle(_stream(db, Db2Position(commit_lsn=Lsn.from_int(5))))

    kinds = [type(e).__name__ for e in events]
    assert kinds == ["TxBegin", "RowChange", "RowChange", "RowChange", "TxCommit",
                     "TxBegin", "RowChange", "TxCommit"]  # fmt: skip
    assert [(t, a[0]) for _, t, _, a in _rows(events)] == [
        (ORDERS, 1),
        (ITEMS, 7),
        (ORDERS, 2),
        (ITEMS, 8),
    ]
    begin, commit = events[0], events[4]
    assert isinstance(begin, TxBegin) and isinstance(commit, TxCommit)
    assert begin.tx_id == str(Lsn.from_int(10)) == "00000000:00000000:000000000000000a"
    assert commit.offset.to_dict() == {
        "commit_lsn": str(Lsn.from_int(10)),
        "change_lsn": str(Lsn.from_int(102)),
        "event_serial_no": 1,
    }
    row = events[1]
    assert isinstance(row, RowChange)
    assert row.source["commit_lsn"] == str(Lsn.from_int(10))
    assert row.source["change_lsn"] == str(Lsn.from_int(100))
    assert (row.source["schema"], row.source["table"], row.source["db"]) == (
        "SHOP",
        "ORDERS",
        "TESTDB",
    )


def test_an_update_captured_as_delete_and_insert_is_one_update_event() -> None:
    db = ScriptedDb2()
    db.register(ORDERS)
    db.write(ORDERS, 10, 100, "D", (1, "old"))
    db.write(ORDERS, 10, 101, "I", (1, "new"))
    db.write(ORDERS, 11, 110, "D", (1, "new"))
    db.max_lsn = 11
    events = _until_idle(_stream(db, Db2Position(commit_lsn=Lsn.from_int(5))))

    assert _rows(events) == [("u", ORDERS, (1, "old"), (1, "new")), ("d", ORDERS, (1, "new"), None)]
    commit = next(e for e in events if isinstance(e, TxCommit))
    assert commit.offset.get("event_serial_no") == 2


def test_an_update_stored_as_one_u_row_is_an_update_without_a_before_image(
    caplog: pytest.LogCaptureFixture,
) -> None:
    db = ScriptedDb2()
    db.register(ORDERS)
    db.updates_split[ORDERS] = "N"  # IBM's default outside Debezium's ADDTABLE
    db.write(ORDERS, 10, 100, "I", (1, "old"))
    db.write(ORDERS, 11, 110, "U", (1, "new"))
    db.max_lsn = 11
    events = _until_idle(_stream(db, Db2Position(commit_lsn=Lsn.from_int(5))))

    assert _rows(events) == [("c", ORDERS, None, (1, "old")), ("u", ORDERS, None, (1, "new"))]
    assert "CHG_UPD_TO_DEL_INS='N'" in caplog.text


def test_a_change_row_of_no_known_operation_stops_the_connector_instead_of_vanishing() -> None:
    db = ScriptedDb2()
    db.register(ORDERS)
    db.write(ORDERS, 10, 100, "I", (1, "a"))
    db.write(ORDERS, 11, 110, "X", (1, "b"))
    db.max_lsn = 11
    with pytest.raises(FatalError, match=r"IBMSNAP_OPERATION 'X'.*neither I, D nor U"):
        _until_idle(_stream(db, Db2Position(commit_lsn=Lsn.from_int(5))))


def test_a_restart_from_a_commit_position_sends_nothing_of_that_commit_again() -> None:
    db = ScriptedDb2()
    db.register(ORDERS)
    db.write(ORDERS, 10, 100, "I", (1, "a"))
    db.write(ORDERS, 10, 101, "I", (2, "b"))
    db.write(ORDERS, 11, 110, "I", (3, "c"))
    db.max_lsn = 11
    stored = Db2Position(Lsn.from_int(10), Lsn.from_int(101), 1)
    events = _until_idle(_stream(db, stored))

    assert [a for _, _, _, a in _rows(events)] == [(3, "c")]


def test_a_snapshot_position_streams_from_the_commit_after_it() -> None:
    db = ScriptedDb2()
    db.register(ORDERS)
    db.write(ORDERS, 10, 100, "I", (1, "in the snapshot"))
    db.write(ORDERS, 11, 110, "I", (2, "after it"))
    db.max_lsn = 11
    events = _until_idle(_stream(db, Db2Position(commit_lsn=Lsn.from_int(10))))

    assert [a for _, _, _, a in _rows(events)] == [(2, "after it")]


def test_windows_move_on_and_an_idle_window_offers_the_agents_position() -> None:
    db = ScriptedDb2()
    db.register(ORDERS)
    db.write(ORDERS, 10, 100, "I", (1, "a"))
    db.max_lsn = 10
    stream = _stream(db, Db2Position(commit_lsn=Lsn.from_int(5)))
    events = stream.events()
    first = list(islice(events, 4))
    assert [type(e).__name__ for e in first] == ["TxBegin", "RowChange", "TxCommit", "Idle"]
    db.max_lsn = 15  # the agent moved on with nothing to capture
    idle = next(events)
    assert isinstance(idle, Idle) and idle.offset is not None
    assert idle.offset.to_dict() == {"commit_lsn": str(Lsn.from_int(15))}
    db.write(ORDERS, 20, 200, "I", (2, "b"))
    db.max_lsn = 20
    assert [a for _, _, _, a in _rows(_until_idle(stream))] == [(2, "b")]


def test_a_table_entering_capture_mode_is_announced_before_its_rows() -> None:
    db = ScriptedDb2()
    db.register(ORDERS)
    stream = _stream(db, Db2Position(commit_lsn=Lsn.from_int(5)))
    db.register(ITEMS)
    db.write(ITEMS, 10, 100, "I", (1, "a"))
    db.max_lsn = 10
    events = _until_idle(stream)

    assert isinstance(events[0], SchemaChange)
    change = events[0].changes[0]
    assert (change.type, change.table.id, events[0].database, events[0].schema, events[0].ddl) == (
        TableChangeType.CREATE, ITEMS, "TESTDB", "SHOP", "",
    )  # fmt: skip
    assert _rows(events) == [("c", ITEMS, None, (1, "a"))]


def test_a_change_table_with_a_new_column_records_an_alter_and_rows_carry_it() -> None:
    db = ScriptedDb2()
    db.register(ORDERS)
    stream = _stream(db, Db2Position(commit_lsn=Lsn.from_int(5)))
    db.write(ORDERS, 10, 100, "I", (1, "a"))
    db.max_lsn = 10
    _until_idle(stream)
    # The online procedure: the source and its CD table gain NOTE.
    db.catalog[ORDERS] = _structure(ORDERS, extra=True)
    db.cd_extra["CDC_SHOP_ORDERS"] = ["NOTE"]
    db.cd_rows["CDC_SHOP_ORDERS"] = [(11, 110, "I", 2, "b", "hello")]  # type: ignore[list-item]
    db.max_lsn = 11
    events = _until_idle(stream)

    alter = events[0]
    assert isinstance(alter, SchemaChange) and alter.changes[0].type is TableChangeType.ALTER
    assert [c.name for c in alter.changes[0].table.columns] == ["ID", "V", "NOTE"]
    assert alter.offset.to_dict()["commit_lsn"] == str(Lsn.from_int(10))
    assert _rows(events) == [("c", ORDERS, None, (2, "b", "hello"))]


def test_an_agent_whose_heartbeat_stops_is_reported_as_not_running() -> None:
    db = ScriptedDb2()
    db.register(ORDERS)
    stream = _stream(db, Db2Position(commit_lsn=Lsn.from_int(5)), timeout_s=0.0)
    events = stream.events()
    with pytest.raises(RetriableError, match=r"ASN capture agent is not running.*ASNCDCSERVICES"):
        for _ in islice(events, 10_000):
            pass


def test_the_agent_may_be_silent_for_two_capture_cycles() -> None:
    assert agent_timeout_s(30, 5) == 75.0
    assert agent_timeout_s(1, 0) == 10.0


def test_lsns_print_as_debezium_does_and_order_as_unsigned_bytes() -> None:
    value = Lsn.parse("00000025:00000d98:00000000000000a2")
    assert str(value) == "00000025:00000d98:00000000000000a2"
    assert Lsn.of(b"\x01") < Lsn.of(b"\xff") < Lsn.of(b"\x01\x00")
    assert value.increment() == Lsn.parse("00000025:00000d98:00000000000000a3")
    assert Db2Position.from_offset(Db2Position(value, value, 2).offset()) == Db2Position(
        value, value, 2
    )


def test_multi_column_key_ranges_are_spelled_out_for_db2() -> None:
    assert sql.key_after(["A", "B"]) == '(("A" > ?) OR ("A" = ? AND "B" > ?))'
    assert sql.key_at_most(["A", "B"]) == '(("A" < ?) OR ("A" = ? AND "B" <= ?))'
    assert sql.key_after_parameters([1, 2]) == [1, 1, 2]
    assert Op.UPDATE.value == "u"
