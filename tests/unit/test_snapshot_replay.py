"""A snapshot taken again after an interrupted one: the stream that follows reads the log
again from the first attempt's position, so rows that attempt sent and the source deleted
before the second cannot stay in the topic (the replay window, cdcflow.capture.replay)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from cdcflow.capture.history import MemorySchemaHistory
from cdcflow.capture.offsets import MemoryOffsetStore
from cdcflow.capture.replay import snapshot_offset, stream_start
from cdcflow.capture.spi import Offset, Op, RowChange, SchemaChange, StreamingSource, TableId
from tests.in_memory import Journal, ScriptedSource
from tests.unit.test_schema_history_engine import (
    CREATE,
    ORDERS,
    ORDERS_SCHEMA,
    HistorizedConnector,
    _engine,
)


def _order_key(offset: Offset) -> tuple[Any, ...]:
    return (int(offset.get("pos") or 0),)


class KilledError(Exception):
    """The snapshot's process dies here."""


class Steps:
    def __init__(self, pos: int, *, killed: bool) -> None:
        self.pos, self.killed = pos, killed

    def lock(self) -> None:
        pass

    def position(self) -> Offset:
        return Offset({"pos": self.pos})

    def structure(self) -> Iterator[SchemaChange]:
        return iter([CREATE])

    def release(self) -> None:
        pass

    def rows(self) -> Iterator[RowChange]:
        yield RowChange(ORDERS_SCHEMA, Op.READ, None, (1,), {"ts_ms": 1, "snapshot": "true"})
        if self.killed:
            raise KilledError

    def close(self) -> None:
        pass


class SnapshottingConnector(HistorizedConnector):
    """Snapshots at the next of ``positions`` each start; remembers where streaming began."""

    def __init__(self, stop: threading.Event, positions: list[int], *, killed: bool) -> None:
        super().__init__(stop)
        self.positions, self.killed = positions, killed
        self.streamed_from: Offset | None = None

    def snapshot_tables(self) -> dict[TableId, int]:
        return {ORDERS: 1}

    def snapshot_steps(self, tables: list[TableId]) -> Steps:
        return Steps(self.positions.pop(0), killed=self.killed)

    def streaming(self, offset: Offset | None) -> StreamingSource:
        self.streamed_from = offset
        self.stop.set()
        return ScriptedSource(Journal(), [], self.stop)


def _run(offsets: MemoryOffsetStore, pos: int, *, killed: bool = False) -> SnapshottingConnector:
    engine = _engine(MemorySchemaHistory(), offsets, **{"snapshot.mode": "initial"})
    connector = SnapshottingConnector(engine.stop, [pos], killed=killed)
    engine.connector = connector
    if killed:
        with pytest.raises(KilledError):
            engine.run()
    else:
        engine.run()
    return connector


def test_a_redone_snapshot_streams_from_the_interrupted_attempts_position() -> None:
    offsets = MemoryOffsetStore()
    _run(offsets, 5, killed=True)
    interrupted = offsets.load()
    assert interrupted is not None and interrupted.get("snapshot")
    assert interrupted.replay_start() == Offset({"pos": 5})  # saved before any row was sent

    connector = _run(offsets, 9)

    streamed_from = connector.streamed_from
    assert streamed_from is not None
    assert streamed_from.connector_values() == {"pos": 9}  # the history recovers at P1
    assert streamed_from.replay_start() == Offset({"pos": 5})


def test_a_first_snapshot_streams_from_its_own_position_with_no_window() -> None:
    connector = _run(MemoryOffsetStore(), 9)

    assert connector.streamed_from is not None
    assert connector.streamed_from.to_dict() == {"pos": 9}


def test_a_stream_inside_a_window_reads_from_its_start_up_to_the_snapshots_position() -> None:
    inside = Offset({"pos": 9}).replaying_from(Offset({"pos": 6, "snapshot": True}))

    start, window = stream_start(inside, order_key=_order_key)

    assert start is not None and start.to_dict() == {"pos": 6}
    assert window is not None and window.inside((8,)) and not window.inside((9,))
    assert window.offset(Offset({"pos": 7})).to_dict() == {"pos": 9, "replay.pos": 7}
    assert stream_start(Offset({"pos": 9}), order_key=_order_key)[1] is None


def test_a_snapshot_not_after_the_replay_start_has_no_window() -> None:
    same = snapshot_offset(Offset({"pos": 9}), replay_from=Offset({"pos": 9}), order_key=_order_key)
    later = snapshot_offset(
        Offset({"pos": 9}), replay_from=Offset({"pos": 4}), order_key=_order_key
    )

    assert same.to_dict() == {"pos": 9}
    assert later.to_dict() == {"pos": 9, "replay.pos": 4}
