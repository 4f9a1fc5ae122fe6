"""Retries after lost connections: each outage starts its backoff and its retry count afresh
once the engine has worked again in between, as Debezium resets them after a successful poll."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from cdcflow.capture.engine import Engine
from cdcflow.capture.errors import RetriableError
from cdcflow.capture.history import MemorySchemaHistory
from cdcflow.capture.offsets import MemoryOffsetStore
from cdcflow.capture.spi import (
    Event,
    Idle,
    Offset,
    Op,
    RowChange,
    StreamingSource,
    TxBegin,
    TxCommit,
)
from tests.in_memory import Journal, ScriptedSource
from tests.unit.test_schema_history_engine import (
    CREATE,
    ORDERS_SCHEMA,
    HistorizedConnector,
    _engine,
)


class FlakySource(ScriptedSource):
    """Delivers one transaction, then loses its connection (or, on the last run, ends)."""

    def __init__(
        self, position: int, *, fails: bool, delivers: bool, stop: threading.Event
    ) -> None:
        row = RowChange(ORDERS_SCHEMA, Op.CREATE, None, (position,), {"ts_ms": 1}, tx_id="t")
        events: list[Event] = [
            *([CREATE] if position == 1 else []),  # the table's structure, into schema history
            TxBegin("t", {"ts_ms": 1}),
            row,
            TxCommit("t", Offset({"pos": position}), {"ts_ms": 1}),
        ]
        super().__init__(Journal(), events if delivers else [], None if fails else stop)
        self.fails = fails

    def events(self) -> Iterator[Event]:
        yield from super().events()
        time.sleep(0.01)  # past offset.flush.interval.ms: the next event commits the position
        yield Idle(None)
        if self.fails:
            raise RetriableError("connection lost")


class FlakyConnector(HistorizedConnector):
    """Loses its connection after each of the first ``outages`` runs delivered a transaction."""

    def __init__(self, stop: threading.Event, outages: int, *, delivers: bool = True) -> None:
        super().__init__(stop)
        self.outages = outages
        self.delivers = delivers
        self.runs = 0

    def streaming(self, offset: Offset | None) -> StreamingSource:
        self.runs += 1
        return FlakySource(
            self.runs, fails=self.runs <= self.outages, delivers=self.delivers, stop=self.stop
        )


def _flaky_engine(outages: int, *, delivers: bool) -> tuple[Engine, FlakyConnector]:
    engine = _engine(
        MemorySchemaHistory(),
        MemoryOffsetStore(),
        **{
            "errors.max.retries": 1,
            "retriable.restart.connector.wait.ms": 1,
            "offset.flush.interval.ms": 1,
        },
    )
    connector = FlakyConnector(engine.stop, outages, delivers=delivers)
    engine.connector = connector
    return engine, connector


@pytest.mark.parametrize("outages", [1, 3])
def test_separate_outages_each_get_the_full_retry_budget(outages: int) -> None:
    engine, connector = _flaky_engine(outages, delivers=True)

    engine.run()  # one retry allowed per outage: with a lifetime count the second would fail

    assert connector.runs == outages + 1
    assert engine.stats.offset["pos"] == outages + 1


def test_consecutive_failures_without_progress_exhaust_the_retries() -> None:
    engine, connector = _flaky_engine(3, delivers=False)

    with pytest.raises(RetriableError, match="connection lost"):
        engine.run()
    assert connector.runs == 2  # the first try and the one retry errors.max.retries allows
