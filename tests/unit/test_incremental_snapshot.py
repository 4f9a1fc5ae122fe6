"""The DBLog window: log events win over chunk rows, chunks resume, signals steer the snapshot.

The chunk source here is an in-memory table whose watermark writes land in an in-memory log,
so each test controls exactly which change falls inside which window; the same algorithm runs
against real PostgreSQL in the integration tests.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import pytest

from cdcflow.capture.errors import FatalError
from cdcflow.capture.signals import commands
from cdcflow.capture.signals.incremental import IncrementalSnapshotter, Notification
from cdcflow.capture.spi import ChunkRow, Column, Offset, Op, RowChange, TableId, TableSchema
from cdcflow.capture.stats import Stats

TABLE = TableSchema(
    TableId("public", "items"),
    (
        Column("id", "int4", {"type": "int32", "optional": False}, int, optional=False),
        Column("name", "text", {"type": "string", "optional": True}, str),
    ),
    ("id",),
)


class MemoryTable:
    """A table plus the log its writes (and watermarks) go to."""

    def __init__(self, rows: dict[int, str]) -> None:
        self.rows = dict(rows)
        self.log: list[tuple[str, Any]] = []
        self.after_read: list[tuple[str, int, str | None]] = []  # writes landing mid-window
        #: Writes whose log record precedes the open watermark but which became visible only
        #: after the chunk read (PostgreSQL publishes commits after writing their records).
        self.racing: list[tuple[str, int, str | None]] = []
        self.unseen: set[str | None] = set()

    def write(self, op: str, key: int, name: str | None = None) -> None:
        before = (key, self.rows.get(key)) if op in "ud" else None
        if op == "d":
            self.rows.pop(key)
        else:
            self.rows[key] = name or ""
        after = None if op == "d" else (key, self.rows[key])
        self.log.append(("change", RowChange(TABLE, Op(op), before, after, {"ts_ms": 0})))

    # ChunkSource
    def matching_tables(self, patterns: tuple[str, ...]) -> list[TableId]:
        return [TABLE.id] if "public.items" in patterns else []

    def snapshot_schema(self, table: TableId) -> TableSchema | None:
        return TABLE

    def max_key(
        self, table: TableSchema, *, key: tuple[str, ...], condition: str | None
    ) -> tuple[str | None, ...] | None:
        return (str(max(self.rows)),) if self.rows else None

    def read_chunk(
        self,
        table: TableSchema,
        *,
        key: tuple[str, ...],
        after: tuple[str | None, ...] | None,
        up_to: tuple[str | None, ...],
        condition: str | None,
        limit: int,
    ) -> list[ChunkRow]:
        low = int(after[0] or 0) if after else -1
        keys = sorted(k for k in self.rows if low < k <= int(up_to[0] or 0))[:limit]
        rows = [ChunkRow((str(k),), (k, self.rows[k])) for k in keys]
        for number, (op, k, name) in enumerate(self.racing):
            opened = max(i for i, (kind, _) in enumerate(self.log) if kind == "signal")
            self.write(op, k, name)
            _, change = self.log.pop()
            late = replace(change, tx_id=f"race-{number}")
            self.unseen.add(late.tx_id)
            self.log.insert(opened, ("change", late))
        self.racing.clear()
        for op, k, name in self.after_read:
            self.write(op, k, name)
        self.after_read.clear()
        return rows

    def write_signal(self, *, signal_id: str, signal_type: str, data: str) -> None:
        self.log.append(("signal", commands.Signal(signal_id, signal_type)))

    def delete_signal(self, *, signal_id: str) -> None:
        self.log.append(("deleted", signal_id))

    def missed(self, change: RowChange) -> bool:
        return change.tx_id in self.unseen

    def source_for(
        self, source: Mapping[str, Any], table: TableId, *, snapshot: str
    ) -> dict[str, Any]:
        return {**source, "snapshot": snapshot, "schema": table.schema, "table": table.table}


EXECUTE = commands.parse(
    "sig-1", "execute-snapshot", '{"data-collections": ["public.items"]}', channel="source"
)


@dataclass
class Run:
    """A snapshotter over a memory table, with what it emitted and announced."""

    table: MemoryTable
    snap: IncrementalSnapshotter
    emitted: list[RowChange] = field(default_factory=list)
    notes: list[Notification] = field(default_factory=list)

    def drain(self) -> Run:
        _drain(self.table, self.snap, self.emitted)
        return self

    def keys(self) -> list[Any]:
        return [e.after[0] for e in self.emitted]  # type: ignore[index]


def _snapshotter(
    table: MemoryTable,
    *,
    chunk_size: int = 2,
    strategy: str = "insert_insert",
    stats: Stats | None = None,
) -> Run:
    emitted: list[RowChange] = []
    notes: list[Notification] = []
    snap = IncrementalSnapshotter(
        source=table,
        chunk_size=chunk_size,
        strategy=strategy,
        connector_name="c",
        emit=emitted.append,
        notify=notes.append,
        stats=stats,
    )
    return Run(table, snap, emitted, notes)


def _run(table: MemoryTable, **options: Any) -> Run:
    """Signal a snapshot of the table and play the log to the end."""
    run = _snapshotter(table, **options)
    run.snap.on_signal(EXECUTE, None)
    return run.drain()


def _drain(table: MemoryTable, snap: IncrementalSnapshotter, emitted: list[RowChange]) -> None:
    marker = RowChange(TABLE, Op.CREATE, None, (0, ""), {"ts_ms": 1, "lsn": 9})
    while table.log:
        kind, item = table.log.pop(0)
        if kind == "change":
            snap.on_change(item)
            emitted.append(item)
        elif kind == "signal":
            snap.on_signal(item, marker)
        else:
            snap.on_watermark_deleted(item, marker)


def _replay(events: list[RowChange]) -> dict[int, str]:
    state: dict[int, str] = {}
    for event in events:
        if event.op is Op.DELETE:
            state.pop(event.before[0], None)  # type: ignore[index]
        else:
            state[event.after[0]] = event.after[1]  # type: ignore[index]
    return state


def test_every_row_is_read_once_in_key_order_with_the_incremental_marker() -> None:
    run = _run(MemoryTable({1: "a", 2: "b", 3: "c", 4: "d", 5: "e"}))
    assert run.keys() == [1, 2, 3, 4, 5]
    assert {e.op for e in run.emitted} == {Op.READ}
    assert {e.source["snapshot"] for e in run.emitted} == {"incremental"}
    assert [n.type for n in run.notes] == [
        "STARTED",
        "IN_PROGRESS",
        "IN_PROGRESS",
        "IN_PROGRESS",
        "TABLE_SCAN_COMPLETED",
        "COMPLETED",
    ]
    assert run.notes[0].additional_data["signal_id"] == "sig-1"
    assert not run.snap.active


def test_a_change_inside_the_window_drops_the_stale_chunk_row() -> None:
    table = MemoryTable({1: "a", 2: "b", 3: "c"})
    table.after_read = [("u", 2, "B"), ("d", 1, None)]  # committed after the first chunk's read
    run = _run(table, chunk_size=3)
    assert [e.after for e in run.emitted if e.op is Op.READ] == [(3, "c")]
    assert _replay(run.emitted) == table.rows == {2: "B", 3: "c"}


def test_a_change_before_the_window_opens_does_not_drop_the_chunk_row() -> None:
    table = MemoryTable({1: "a", 2: "b"})
    run = _snapshotter(table, chunk_size=5)
    table.write("u", 1, "A")  # in the log before the signal
    run.snap.on_signal(EXECUTE, None)
    run.drain()
    assert [(e.op, e.after) for e in run.emitted] == [
        (Op.UPDATE, (1, "A")),
        (Op.READ, (1, "A")),
        (Op.READ, (2, "b")),
    ]


def test_insert_delete_strategy_closes_the_window_by_deleting_the_open_marker() -> None:
    assert _run(MemoryTable({1: "a", 2: "b", 3: "c"}), strategy="insert_delete").keys() == [1, 2, 3]


def test_progress_survives_a_restart_through_the_offset() -> None:
    table = MemoryTable({k: str(k) for k in range(1, 8)})
    first = _snapshotter(table)
    first.snap.on_signal(EXECUTE, None)
    for _ in range(3):  # open, close of chunk one, open of chunk two
        _kind, item = table.log.pop(0)
        first.snap.on_signal(item, RowChange(TABLE, Op.CREATE, None, (0, ""), {"ts_ms": 1}))
    saved = first.snap.decorate(Offset({"lsn": 5}))
    table.log.clear()  # the process dies; the rest of the log is replayed later

    second = _snapshotter(table)
    second.snap.restore(saved)
    second.snap.start()
    second.drain()
    assert first.keys() == [1, 2]
    assert second.keys() == [3, 4, 5, 6, 7]
    assert saved.get("lsn") == 5


def test_pause_holds_the_next_chunk_until_resume() -> None:
    run = _snapshotter(MemoryTable({1: "a", 2: "b", 3: "c"}), chunk_size=1)
    run.snap.on_signal(EXECUTE, None)
    run.snap.on_signal(commands.Signal("p", "pause-snapshot"), None)
    run.drain()
    assert len(run.emitted) == 1 and run.snap.active
    run.snap.on_signal(commands.Signal("r", "resume-snapshot"), None)
    run.drain()
    assert run.keys() == [1, 2, 3]
    assert [n.type for n in run.notes if n.type in ("PAUSED", "RESUMED")] == ["PAUSED", "RESUMED"]


def test_stop_aborts_the_snapshot() -> None:
    run = _snapshotter(MemoryTable({1: "a", 2: "b", 3: "c"}), chunk_size=1)
    run.snap.on_signal(EXECUTE, None)
    run.snap.on_signal(
        commands.parse("x", "stop-snapshot", '{"type": "incremental"}', channel="source"), None
    )
    run.drain()
    assert run.emitted == [] and not run.snap.active
    assert run.notes[-1].type == "ABORTED"


def test_pause_without_a_snapshot_is_reported_as_ignored() -> None:
    run = _snapshotter(MemoryTable({1: "a"}))
    run.snap.on_signal(commands.Signal("p", "pause-snapshot"), None)
    assert [(n.type, n.additional_data["signal_id"]) for n in run.notes] == [("IGNORED", "p")]


def test_a_change_logged_before_the_window_that_the_chunk_missed_drops_the_stale_row() -> None:
    table = MemoryTable({1: "a", 2: "b", 3: "c"})
    table.racing = [("u", 2, "B")]
    run = _run(table)

    assert _replay(run.emitted) == {1: "a", 2: "B", 3: "c"}
    reads = [e.after[0] for e in run.emitted if e.op is Op.READ]  # type: ignore[index]
    assert 2 not in reads, "the chunk row of key 2 is older than the change before it"


def _initial(table: MemoryTable, stats: Stats, **options: Any) -> Run:
    run = _snapshotter(table, stats=stats, **options)
    run.snap.begin_initial({TABLE.id: len(table.rows)})
    run.snap.start()
    return run


def test_a_chunked_initial_snapshot_marks_rows_as_an_exported_one_and_reports_progress() -> None:
    stats = Stats("c", "server")
    run = _initial(MemoryTable({1: "a", 2: "b", 3: "c", 4: "d", 5: "e"}), stats).drain()
    assert [e.source["snapshot"] for e in run.emitted] == ["first", "true", "true", "true", "last"]
    assert [(n.aggregate_type, n.type) for n in run.notes][::5] == [
        ("Initial Snapshot", "STARTED"),
        ("Initial Snapshot", "COMPLETED"),
    ]
    assert (stats.snapshot_running, stats.snapshot_completed) == (False, True)
    assert stats.tables["public.items"].rows_scanned == 5
    assert not run.snap.active


def test_a_restarted_chunked_snapshot_reports_the_rows_read_before_at_once() -> None:
    table = MemoryTable({k: str(k) for k in range(1, 8)})
    first = _initial(table, Stats("c", "server"))
    for _ in range(3):  # open, close of chunk one, open of chunk two
        _kind, item = table.log.pop(0)
        first.snap.on_signal(item, RowChange(TABLE, Op.CREATE, None, (0, ""), {"ts_ms": 1}))
    saved = first.snap.decorate(Offset({"lsn": 5}))
    table.log.clear()

    stats = Stats("c", "server")
    second = _snapshotter(table, stats=stats)
    second.snap.restore(saved)
    progress = stats.tables["public.items"]
    assert (progress.rows_scanned, progress.rows_estimated, stats.snapshot_running) == (2, 7, True)
    second.snap.start()
    second.drain()
    assert second.keys() == [3, 4, 5, 6, 7]
    assert second.emitted[-1].source["snapshot"] == "last"


def test_a_chunked_snapshot_refuses_a_table_without_a_key_and_names_the_way_out() -> None:
    run = _snapshotter(MemoryTable({1: "a"}))
    keyless = replace(TABLE, key_columns=())
    run.table.snapshot_schema = lambda table: keyless  # type: ignore[method-assign]
    with pytest.raises(FatalError, match=r"public.items has no primary key.*snapshot.strategy"):
        run.snap.begin_initial({TABLE.id: 1})


def test_a_stop_signal_leaves_the_chunked_initial_snapshot_running() -> None:
    run = _initial(MemoryTable({1: "a", 2: "b", 3: "c"}), Stats("c", "server"), chunk_size=1)
    run.snap.on_signal(
        commands.parse("x", "stop-snapshot", '{"type": "incremental"}', channel="source"), None
    )
    run.drain()
    assert run.keys() == [1, 2, 3]
    assert ("IGNORED", "x") in [(n.type, n.additional_data["signal_id"]) for n in run.notes]


def test_progress_stored_by_the_previous_release_resumes_where_it_stopped() -> None:
    """Offsets written before the keys moved onto each table (cdcflow 0.1) resume too."""
    table = MemoryTable({k: str(k) for k in range(1, 8)})
    stored = {
        "collections": [{"table": "public.items", "signal_id": "sig-1", "rows": 2}],
        "last_key": ["2"],
        "max_key": ["7"],
        "paused": False,
    }
    run = _snapshotter(table)
    run.snap.restore(Offset({"lsn": 5, "incremental_snapshot": stored}))
    run.snap.start()
    run.drain()
    assert run.keys() == [3, 4, 5, 6, 7]


class PositionedTable(MemoryTable):
    """A memory table whose log has positions, for ``read.only`` windows: the snapshotter
    must never write to it."""

    sees_visibility = False

    def __init__(self, rows: dict[int, str]) -> None:
        super().__init__(rows)
        self.consumed = 0

    def write_signal(self, *, signal_id: str, signal_type: str, data: str) -> None:
        raise AssertionError("read.only: a watermark was written")

    def log_position(self) -> Offset:
        return Offset({"pos": self.consumed + len(self.log)})

    def position_key(self, offset: Offset) -> tuple[Any, ...]:
        return (offset.get("pos"),)

    def source_at(self, offset: Offset) -> dict[str, Any]:
        return {"ts_ms": 2, "pos": offset.get("pos")}


def test_read_only_windows_close_by_position_and_changes_read_after_the_chunk_drop_rows() -> None:
    table = PositionedTable({1: "a", 2: "b", 3: "c"})
    table.after_read = [("u", 2, "B"), ("d", 1, None)]  # committed after the chunk's read
    emitted: list[RowChange] = []
    snap = IncrementalSnapshotter(
        source=table,
        chunk_size=3,
        strategy="insert_insert",
        connector_name="c",
        emit=emitted.append,
        notify=lambda _note: None,
        positions=table,
    )
    snap.on_signal(EXECUTE, None)
    while table.log:
        _, change = table.log.pop(0)
        table.consumed += 1
        snap.on_change(change)
        emitted.append(change)
        snap.on_position(Offset({"pos": table.consumed}))
    snap.on_position(Offset({"pos": table.consumed}))  # a keepalive at the end of the log

    reads = [e for e in emitted if e.op is Op.READ]
    assert [e.after for e in reads] == [(3, "c")]
    assert reads[0].source == {"ts_ms": 2, "pos": 2, "snapshot": "incremental"} | {
        "schema": "public",
        "table": "items",
    }
    assert _replay(emitted) == table.rows == {2: "B", 3: "c"}
    assert not snap.active, "the snapshot finished"
