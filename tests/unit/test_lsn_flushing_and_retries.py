"""How confirmed positions reach the server (lsn.flush.*), failover slots, watermark write
retries (signal.emit.failure.*) and the Kafka signal poll interval, without a server."""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from cdcflow.capture.connectors.postgres.chunks import PostgresChunks, SignalEmitRetries
from cdcflow.capture.connectors.postgres.replication import (
    ReplicationStream,
    create_slot_command,
)
from cdcflow.capture.connectors.postgres.source import LsnFlushing, PostgresStream, SourceBlock
from cdcflow.capture.errors import FatalError, RetriableError
from cdcflow.capture.signals.channels import Signalling
from cdcflow.capture.spi import Event, Idle, Offset, TableId
from tests.in_memory import Journal
from tests.unit.test_pipeline_in_memory import _pipeline


class _Statuses:
    """A replication stream that records status updates, optionally failing to send them."""

    def __init__(self, *, sends: bool = True) -> None:
        self.sent: list[dict[str, Any]] = []
        self.sends = sends

    def send_status(self, **status: Any) -> bool:
        self.sent.append(status)
        return self.sends


def _stream(statuses: _Statuses, flushing: LsnFlushing) -> PostgresStream:
    return PostgresStream(
        stream=statuses,  # type: ignore[arg-type]
        catalog=None,  # type: ignore[arg-type]
        filters=None,  # type: ignore[arg-type]
        source_block=SourceBlock(version="3.7.0", server="shop", database="shop"),
        placeholder="__debezium_unavailable_value",
        resume_lsn=100,
        last_commit_lsn=None,
        status_interval_s=10,
        poll_interval_s=0.1,
        flushing=flushing,
    )


def test_acknowledged_positions_are_confirmed_within_the_flush_timeout() -> None:
    statuses = _Statuses()
    _stream(statuses, LsnFlushing(timeout_s=2.5)).acknowledge(Offset({"lsn_commit": 200}))
    assert statuses.sent[-1]["flushed"] == 200 and statuses.sent[-1]["timeout"] == 2.5


def test_manual_flushing_never_confirms_a_position() -> None:
    statuses = _Statuses()
    _stream(statuses, LsnFlushing(confirm=False)).acknowledge(Offset({"lsn_commit": 200}))
    assert statuses.sent[-1]["flushed"] == 0  # InvalidXLogRecPtr: the slot stays put
    assert statuses.sent[-1]["received"] == 200


def test_a_flush_that_times_out_fails_the_connector_by_default() -> None:
    stream = _stream(_Statuses(sends=False), LsnFlushing(timeout_s=0.01))
    with pytest.raises(FatalError, match=r"timed out for LSN '0/C8'.*lsn\.flush\.timeout\.action"):
        stream.acknowledge(Offset({"lsn_commit": 200}))


@pytest.mark.parametrize(
    ("action", "level"), [("warn", logging.WARNING), ("ignore", logging.DEBUG)]
)
def test_a_flush_timeout_is_logged_when_the_action_says_so(
    action: str, level: int, caplog: pytest.LogCaptureFixture
) -> None:
    stream = _stream(_Statuses(sends=False), LsnFlushing(timeout_s=0.01, action=action))
    with caplog.at_level(logging.DEBUG):
        stream.acknowledge(Offset({"lsn_commit": 200}))
    [record] = [r for r in caplog.records if "did not complete" in r.getMessage()]
    assert record.levelno == level


class _StalledConn:
    """A libpq connection whose socket never drains: flush() always has data left."""

    def __init__(self, sock: socket.socket) -> None:
        self.socket = sock.fileno()
        self.nonblocking = 1

    def put_copy_data(self, data: bytes) -> int:
        return 1

    def flush(self) -> int:
        return 1


def test_a_status_update_that_cannot_be_written_gives_up_at_the_timeout() -> None:
    ours, theirs = socket.socketpair()
    with ours, theirs:
        stream = ReplicationStream(_StalledConn(ours))  # type: ignore[arg-type]
        assert not stream.send_status(flushed=1, received=1, timeout=0.05)


def test_failover_slots_use_the_option_list_syntax() -> None:
    assert create_slot_command("s", export=True, failover=False) == (
        'CREATE_REPLICATION_SLOT "s" LOGICAL pgoutput EXPORT_SNAPSHOT'
    )
    assert create_slot_command("s", export=True, failover=True) == (
        "CREATE_REPLICATION_SLOT \"s\" LOGICAL pgoutput (SNAPSHOT 'export', FAILOVER)"
    )
    assert create_slot_command("s", export=False, failover=True).endswith(
        "(SNAPSHOT 'nothing', FAILOVER)"
    )


class _FlakyConn:
    """A connection whose first ``failures`` statements fail."""

    def __init__(self, failures: int, log: list[str]) -> None:
        self.failures, self.log = failures, log
        self.adapters = type("Adapters", (), {"register_loader": lambda *_: None})()

    def execute(self, statement: Any, params: Any = ()) -> None:
        if self.failures:
            self.failures -= 1
            self.log.append("failed")
            raise psycopg.OperationalError("server closed the connection unexpectedly")
        self.log.append("written")

    def close(self) -> None:
        self.log.append("closed")


def _chunks(conn: _FlakyConn, retries: SignalEmitRetries) -> PostgresChunks:
    catalog = type("Catalog", (), {"type_oids": lambda self: []})()
    return PostgresChunks(
        conn,  # type: ignore[arg-type]
        catalog=catalog,
        captured=list,
        signal_table=TableId("public", "signal"),
        emit_retries=retries,
    )


def test_a_failed_watermark_write_reconnects_and_retries_up_to_the_limit() -> None:
    log: list[str] = []
    fresh = _FlakyConn(0, log)
    retries = SignalEmitRetries(max_retries=2, backoff_s=0, reconnect=lambda: fresh)  # type: ignore[arg-type,return-value]
    _chunks(_FlakyConn(1, log), retries).write_signal(signal_id="1", signal_type="t", data="{}")
    assert log == ["failed", "closed", "written"]


def test_without_retries_a_failed_watermark_write_restarts_the_connector() -> None:
    log: list[str] = []
    chunks = _chunks(_FlakyConn(1, log), SignalEmitRetries())
    with pytest.raises(RetriableError, match=r"watermark.*max\.retries=0"):
        chunks.write_signal(signal_id="1", signal_type="t", data="{}")
    assert log == ["failed"]


def test_retries_are_bounded_unless_unlimited() -> None:
    assert SignalEmitRetries(max_retries=2).allows(2)
    assert not SignalEmitRetries(max_retries=2).allows(3)
    assert SignalEmitRetries(max_retries=-1).allows(10_000)


class _Signalling(Signalling):
    """Counts the pipeline's polls of the signal channels."""

    chunk_closed = False
    watches_positions = False

    def __init__(self) -> None:  # no snapshotter or channels: only the hooks below are used
        self.polls = 0

    def start(self) -> None:
        pass

    def poll(self) -> None:
        self.polls += 1


class _Source:
    def __init__(self, events: int) -> None:
        self.events_left = events

    def events(self) -> Iterator[Event]:
        for _ in range(self.events_left):
            yield Idle()

    def acknowledge(self, offset: Offset) -> None:
        pass

    def close(self) -> None:
        pass


def test_the_kafka_signal_channel_is_polled_every_signal_poll_interval(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = iter(float(second) for second in range(100))
    monkeypatch.setattr("cdcflow.capture.pipeline.time.monotonic", lambda: next(clock))
    pipeline, _, _ = _pipeline(Journal(), **{"signal.poll.interval.ms": 5000})
    signalling = _Signalling()
    pipeline.dispatcher.signalling = signalling
    pipeline.stream(_Source(20))  # one Idle a second
    assert signalling.polls == 4


def test_retries_after_a_lost_connection_start_short_and_grow_to_the_configured_wait() -> None:
    from cdcflow.capture.engine import retry_delay

    assert [retry_delay(n, 10.0) for n in range(1, 8)] == [0.5, 1, 2, 4, 8, 10, 10]
    assert retry_delay(1, 0.1) == 0.1, "a shorter configured wait is honoured from the start"


def test_the_postgresql_position_round_trips_and_ignores_the_engines_keys() -> None:
    from cdcflow.capture.connectors.postgres.source import PostgresPosition

    position = PostgresPosition(lsn=200, lsn_commit=150, tx_id=7, ts_usec=9, xmin=3)
    stored = Offset({**Offset.of(position).values, "snapshot": True, "incremental_snapshot": {}})
    assert PostgresPosition.from_offset(stored) == PostgresPosition(
        lsn=200, lsn_commit=150, lsn_proc=200, tx_id=7, ts_usec=9, xmin=3
    )
    assert PostgresPosition.from_offset(stored).resume_lsn == 150
    debezium = Offset({"lsn": 300, "lsn_proc": 300, "txId": 8, "ts_usec": 1})  # no lsn_commit
    assert PostgresPosition.from_offset(debezium).resume_lsn == 300
    assert (
        sorted([position, PostgresPosition(lsn=100)], key=PostgresPosition.order_key)[0].lsn == 100
    )
