"""The generic pipeline, driven by an in-memory source and sink: what reaches Kafka, in which
order positions are made durable, and what is filtered — no database, no broker."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from cdcflow.capture.connectors.postgres.properties import parse_properties
from cdcflow.capture.envelope import Framing
from cdcflow.capture.errors import RetriableError
from cdcflow.capture.filters import Filters
from cdcflow.capture.pipeline import Dispatcher, Pipeline
from cdcflow.capture.spi import (
    Column,
    Event,
    Idle,
    LogMessage,
    Offset,
    Op,
    RowChange,
    TableId,
    TableSchema,
    TxBegin,
    TxCommit,
)
from cdcflow.capture.stats import Stats
from cdcflow.capture.topics import TopicNames
from tests.in_memory import SOURCE_SCHEMA, Journal, JournalingOffsets, MemorySink, ScriptedSource

ORDERS = TableSchema(
    TableId("public", "orders"),
    (
        Column("id", "int4", {"type": "int32", "optional": False}, int, optional=False),
        Column("note", "text", {"type": "string", "optional": True}, str),
    ),
    ("id",),
)


def _pipeline(journal: Journal, **config: Any) -> tuple[Pipeline, MemorySink, JournalingOffsets]:
    properties = parse_properties({"topic.prefix": "shop", "offset.flush.interval.ms": 1, **config})
    sink, offsets = MemorySink(journal), JournalingOffsets(journal)
    stats = Stats(connector="shop", server="shop")
    framing = Framing(topics=TopicNames.from_properties(properties), source_schema=SOURCE_SCHEMA)
    dispatcher = Dispatcher(
        properties=properties,
        framing=framing,
        filters=Filters.from_properties(properties),
        sink=sink,
        stats=stats,
    )
    pipeline = Pipeline(
        dispatcher=dispatcher,
        sink=sink,
        offsets=offsets,
        properties=properties,
        stats=stats,
        stop=threading.Event(),
    )
    return pipeline, sink, offsets


def _row(op: Op, row_id: int, note: str | None = None, tx: str = "7") -> RowChange:
    image = (row_id, note)
    return RowChange(
        ORDERS,
        op,
        before=image if op is Op.DELETE else None,
        after=None if op is Op.DELETE else image,
        source={"ts_ms": 1},
        tx_id=tx,
    )


def _transaction(tx: str, pos: int, *changes: RowChange) -> list[Event]:
    return [
        TxBegin(tx, {"ts_ms": 1}, commits_at=Offset({"pos": pos})),
        *changes,
        TxCommit(tx, Offset({"pos": pos}), {"ts_ms": 1}),
    ]


def _slow_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each event a second later, so every commit is past offset.flush.interval.ms."""
    clock = iter(float(second) for second in range(10_000))
    monkeypatch.setattr("cdcflow.capture.pipeline.time.monotonic", lambda: next(clock))


def test_a_position_is_saved_and_acknowledged_only_after_the_sink_made_its_records_durable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _slow_clock(monkeypatch)
    journal = Journal()
    pipeline, sink, offsets = _pipeline(journal)
    source = ScriptedSource(
        journal,
        [
            *_transaction("7", 10, _row(Op.CREATE, 1, "a"), _row(Op.UPDATE, 1, "b")),
            *_transaction("8", 20, _row(Op.DELETE, 1)),
        ],
    )

    pipeline.stream(source)

    topic = "write shop.public.orders"
    assert journal == [
        topic, topic, "flush", "save 10", "acknowledge 10",
        topic, topic, "flush", "save 20", "acknowledge 20",  # the delete and its tombstone
    ]  # fmt: skip
    assert [o.get("pos") for o in offsets.saved] == [10, 20]
    assert sink.records[-1].value is None, "a delete is followed by its tombstone"


def test_idle_positions_are_confirmed_so_a_quiet_or_filtered_log_advances(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _slow_clock(monkeypatch)
    journal = Journal()
    pipeline, sink, _ = _pipeline(journal)
    source = ScriptedSource(journal, [Idle(), Idle(Offset({"pos": 5})), Idle(), Idle()])

    pipeline.stream(source)

    assert sink.records == []
    assert [o.get("pos") for o in source.acknowledged] == [5]
    assert journal == ["flush", "save 5", "acknowledge 5"]


def test_a_clean_stop_commits_the_last_pending_position() -> None:
    journal = Journal()
    pipeline, _, offsets = _pipeline(journal, **{"offset.flush.interval.ms": 60_000})
    source = ScriptedSource(journal, _transaction("7", 10, _row(Op.CREATE, 1, "a")))

    pipeline.stream(source)  # no commit on the cadence within the run, one on the way out

    assert [o.get("pos") for o in offsets.saved] == [10]
    assert journal[-3:] == ["flush", "save 10", "acknowledge 10"]


class _LostMidStream(ScriptedSource):
    """Gives its events, then loses the server (a crash, a failover)."""

    def events(self) -> Iterator[Event]:
        yield from self.script
        raise RetriableError("replication connection lost")


def test_a_source_lost_mid_stream_first_makes_what_it_delivered_durable() -> None:
    journal = Journal()
    pipeline, _, offsets = _pipeline(journal, **{"offset.flush.interval.ms": 60_000})
    source = _LostMidStream(
        journal,
        [
            *_transaction("7", 10, _row(Op.CREATE, 1, "a")),  # the first position: at once
            *_transaction("8", 20, _row(Op.CREATE, 2, "b")),  # waits for the cadence
            TxBegin("9", {"ts_ms": 1}),
        ],
    )

    with pytest.raises(RetriableError):
        pipeline.stream(source)

    # the restart resumes after transaction 8 instead of sending it again; the lost server
    # is not told (it is gone): the next run confirms the position to it
    assert [o.get("pos") for o in offsets.saved] == [10, 20]
    assert journal[-3:] == ["write shop.public.orders", "flush", "save 20"]


def test_keepalives_and_small_transactions_never_force_a_commit_before_the_cadence(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _slow_clock(monkeypatch)  # one second per event: 600 events span ten minutes
    journal = Journal()
    pipeline, _, offsets = _pipeline(journal, **{"offset.flush.interval.ms": 60_000})
    events: list[Event] = []
    for n in range(100):
        events += [*_transaction(str(n), 10 * n + 5, _row(Op.CREATE, n, "a")), Idle(
            Offset({"pos": 10 * n + 9})
        )]  # fmt: skip
    source = ScriptedSource(journal, events)

    pipeline.stream(source)

    saved = [o.get("pos") for o in offsets.saved]
    # 400 events a second apart: the first position at once (a run that dies young must not
    # send its backlog again), then one commit per minute of them and one on the way out.
    assert len(saved) == 1 + 400 // 60 + 1
    assert saved[0] == 5  # the first commit read, durable before anything else is read
    assert saved[-1] == 999 and journal.count("flush") == len(saved)


def test_skipped_operations_never_reach_the_sink_and_are_counted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _slow_clock(monkeypatch)
    journal = Journal()
    pipeline, sink, _ = _pipeline(journal, **{"skipped.operations": "u,d"})
    changes = (_row(Op.CREATE, 1, "a"), _row(Op.UPDATE, 1, "b"), _row(Op.DELETE, 1))
    source = ScriptedSource(journal, _transaction("7", 10, *changes))

    pipeline.stream(source)

    values = [orjson.loads(r.value)["payload"] for r in sink.records if r.value]
    assert [v["op"] for v in values] == ["c"]
    assert len(sink.records) == 1, "no tombstone for a skipped delete"
    assert pipeline.dispatcher._stats.events_filtered == 2


def test_a_log_message_from_a_connector_without_the_capability_is_an_error_not_a_drop() -> None:
    journal = Journal()
    pipeline, _, _ = _pipeline(journal)
    message = LogMessage("audit", b"x", transactional=False, source={"ts_ms": 1})

    with pytest.raises(TypeError, match="LogMessages"):
        pipeline.stream(ScriptedSource(journal, [message]))


def test_after_a_restart_transactions_committed_before_the_stored_position_are_dropped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _slow_clock(monkeypatch)
    journal = Journal()
    pipeline, sink, offsets = _pipeline(journal)
    source = ScriptedSource(
        journal,
        [
            *_transaction("7", 10, _row(Op.CREATE, 1, "replayed")),  # delivered before the stop
            *_transaction("8", 20, _row(Op.CREATE, 2, "new")),
        ],
    )

    pipeline.stream(source, delivered=lambda at: int(at.get("pos")) < 15)

    values = [orjson.loads(r.value)["payload"]["after"] for r in sink.records if r.value]
    assert values == [{"id": 2, "note": "new"}]
    assert [o.get("pos") for o in offsets.saved] == [20]
