"""The DBLog window: log events win over chunk rows, chunks resume, signals steer the snapshot.

The chunk source here is an in-memory table whose watermark writes land in an in-memory log,
so each test controls exactly which change falls inside which window; the same algorithm runs
against real PostgreSQL in the integration tests.
"""

from __future__ import annotations

from typing import Any

from cdcflow.capture import signals
from cdcflow.capture.incremental import IncrementalSnapshotter, Notification
from cdcflow.capture.spi import ChunkRow, Column, Offset, Op, RowChange, TableId, TableSchema

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
        for op, k, name in self.after_read:
            self.write(op, k, name)
        self.after_read.clear()
        return rows

    def write_signal(self, *, signal_id: str, signal_type: str, data: str) -> None:
        self.log.append(("signal", signals.Signal(signal_id, signal_type)))

    def delete_signal(self, *, signal_id: str) -> None:
        self.log.append(("deleted", signal_id))


def _run(
    table: MemoryTable,
    *,
    chunk_size: int = 2,
    strategy: str = "insert_insert",
    snapshotter: IncrementalSnapshotter | None = None,
) -> tuple[list[RowChange], list[Notification], IncrementalSnapshotter]:
    emitted: list[RowChange] = []
    notes: list[Notification] = []
    snap = snapshotter or IncrementalSnapshotter(
        source=table,
        chunk_size=chunk_size,
        strategy=strategy,
        connector_name="c",
        emit=emitted.append,
        notify=notes.append,
    )
    if snapshotter is None:
        snap.on_signal(
            signals.parse(
                "sig-1",
                "execute-snapshot",
                '{"data-collections": ["public.items"]}',
                channel="source",
            ),
            None,
        )
    _drain(table, snap, emitted)
    return emitted, notes, snap


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
    table = MemoryTable({1: "a", 2: "b", 3: "c", 4: "d", 5: "e"})
    emitted, notes, snap = _run(table)
    assert [e.after[0] for e in emitted] == [1, 2, 3, 4, 5]  # type: ignore[index]
    assert {e.op for e in emitted} == {Op.READ}
    assert {e.source["snapshot"] for e in emitted} == {"incremental"}
    assert [n.type for n in notes] == [
        "STARTED",
        "IN_PROGRESS",
        "IN_PROGRESS",
        "IN_PROGRESS",
        "TABLE_SCAN_COMPLETED",
        "COMPLETED",
    ]
    assert notes[0].additional_data["signal_id"] == "sig-1"
    assert not snap.active


def test_a_change_inside_the_window_drops_the_stale_chunk_row() -> None:
    table = MemoryTable({1: "a", 2: "b", 3: "c"})
    table.after_read = [("u", 2, "B"), ("d", 1, None)]  # committed after the first chunk's read
    emitted, _, _ = _run(table, chunk_size=3)
    reads = [e.after for e in emitted if e.op is Op.READ]
    assert reads == [(3, "c")]
    assert _replay(emitted) == table.rows == {2: "B", 3: "c"}


def test_a_change_before_the_window_opens_does_not_drop_the_chunk_row() -> None:
    table = MemoryTable({1: "a", 2: "b"})
    emitted: list[RowChange] = []
    snap = IncrementalSnapshotter(
        source=table,
        chunk_size=5,
        strategy="insert_insert",
        connector_name="c",
        emit=emitted.append,
        notify=lambda _: None,
    )
    table.write("u", 1, "A")  # in the log before the signal
    snap.on_signal(
        signals.parse(
            "s", "execute-snapshot", '{"data-collections": ["public.items"]}', channel="source"
        ),
        None,
    )
    _drain(table, snap, emitted)
    assert [(e.op, e.after) for e in emitted] == [
        (Op.UPDATE, (1, "A")),
        (Op.READ, (1, "A")),
        (Op.READ, (2, "b")),
    ]


def test_insert_delete_strategy_closes_the_window_by_deleting_the_open_marker() -> None:
    table = MemoryTable({1: "a", 2: "b", 3: "c"})
    emitted, _, _ = _run(table, strategy="insert_delete")
    assert [e.after[0] for e in emitted] == [1, 2, 3]  # type: ignore[index]


def test_progress_survives_a_restart_through_the_offset() -> None:
    table = MemoryTable({k: str(k) for k in range(1, 8)})
    first_emitted: list[RowChange] = []
    first = IncrementalSnapshotter(
        source=table,
        chunk_size=2,
        strategy="insert_insert",
        connector_name="c",
        emit=first_emitted.append,
        notify=lambda _: None,
    )
    first.on_signal(
        signals.parse(
            "s", "execute-snapshot", '{"data-collections": ["public.items"]}', channel="source"
        ),
        None,
    )
    for _ in range(3):  # open, close of chunk one, open of chunk two
        _kind, item = table.log.pop(0)
        first.on_signal(item, RowChange(TABLE, Op.CREATE, None, (0, ""), {"ts_ms": 1}))
    saved = first.decorate(Offset({"lsn": 5}))
    table.log.clear()  # the process dies; the rest of the log is replayed later

    second_emitted: list[RowChange] = []
    second = IncrementalSnapshotter(
        source=table,
        chunk_size=2,
        strategy="insert_insert",
        connector_name="c",
        emit=second_emitted.append,
        notify=lambda _: None,
    )
    second.restore(saved)
    second.start()
    _drain(table, second, second_emitted)
    assert [e.after[0] for e in first_emitted] == [1, 2]  # type: ignore[index]
    assert [e.after[0] for e in second_emitted] == [3, 4, 5, 6, 7]  # type: ignore[index]
    assert saved.get("lsn") == 5


def test_pause_holds_the_next_chunk_until_resume() -> None:
    table = MemoryTable({1: "a", 2: "b", 3: "c"})
    emitted: list[RowChange] = []
    notes: list[Notification] = []
    snap = IncrementalSnapshotter(
        source=table,
        chunk_size=1,
        strategy="insert_insert",
        connector_name="c",
        emit=emitted.append,
        notify=notes.append,
    )
    snap.on_signal(
        signals.parse(
            "s", "execute-snapshot", '{"data-collections": ["public.items"]}', channel="source"
        ),
        None,
    )
    snap.on_signal(signals.Signal("p", "pause-snapshot"), None)
    _drain(table, snap, emitted)
    assert len(emitted) == 1 and snap.active
    snap.on_signal(signals.Signal("r", "resume-snapshot"), None)
    _drain(table, snap, emitted)
    assert [e.after[0] for e in emitted] == [1, 2, 3]  # type: ignore[index]
    assert [n.type for n in notes if n.type in ("PAUSED", "RESUMED")] == ["PAUSED", "RESUMED"]


def test_stop_aborts_the_snapshot() -> None:
    table = MemoryTable({1: "a", 2: "b", 3: "c"})
    emitted: list[RowChange] = []
    notes: list[Notification] = []
    snap = IncrementalSnapshotter(
        source=table,
        chunk_size=1,
        strategy="insert_insert",
        connector_name="c",
        emit=emitted.append,
        notify=notes.append,
    )
    snap.on_signal(
        signals.parse(
            "s", "execute-snapshot", '{"data-collections": ["public.items"]}', channel="source"
        ),
        None,
    )
    snap.on_signal(
        signals.parse("x", "stop-snapshot", '{"type": "incremental"}', channel="source"), None
    )
    _drain(table, snap, emitted)
    assert emitted == [] and not snap.active
    assert notes[-1].type == "ABORTED"
