"""An engine that cannot reach Kafka says so: not ready, the reason in /status, no log flood."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator

import orjson
import pytest

from cdcflow.capture.kafka.producer import STALL_S, DeliveryWatch, KafkaSink, RepeatLimiter
from cdcflow.capture.stats import Stats


def _statistics(*states: str, waiting: int = 0) -> str:
    brokers = {f"b{i}:9092/{i}": {"state": state, "nodeid": i} for i, state in enumerate(states)}
    brokers["b:9092/bootstrap"] = {"state": "INIT", "nodeid": -1}
    return orjson.dumps({"brokers": brokers, "msg_cnt": waiting}).decode()


@contextlib.contextmanager
def _sink_fed_by_hand(stats: Stats) -> Iterator[KafkaSink]:
    """A sink whose callbacks only the test calls: no broker listens at its address, and its
    callback thread is stopped (it would report that unreachable address meanwhile)."""
    sink = KafkaSink(bootstrap_servers="127.0.0.1:1", on_reachability=stats.sink_reachability)
    sink._closing.set()
    sink._server.join()
    try:
        yield sink
    finally:
        sink.close()


def test_broker_statistics_drive_readiness_and_status() -> None:
    stats = Stats(connector="orders", server="shop", phase="streaming", connected=True)
    with _sink_fed_by_hand(stats) as sink:
        sink._on_statistics(_statistics("DOWN"))
        assert not stats.ready
        assert stats.status()["kafka"] == {
            "connected": False,
            "lastError": "Kafka unreachable: no broker is up (b0:9092/0, b:9092/bootstrap)",
        }
        sink._on_statistics(_statistics("DOWN", "UP"))
        assert stats.ready
        assert stats.status()["kafka"] == {"connected": True, "lastError": ""}


def test_repeated_client_errors_are_logged_once_a_minute() -> None:
    limiter = RepeatLimiter(every_s=60)

    def record(message: str) -> logging.LogRecord:
        return logging.LogRecord("rdkafka", logging.ERROR, "", 0, message, None, None)

    first = record("FAIL 127.0.0.1:9092/1: Connect failed (after 0ms in state CONNECT)")
    again = record("FAIL 127.0.0.1:9092/1: Connect failed (after 3ms in state CONNECT)")
    other = record("FAIL 127.0.0.1:9092/1: SSL handshake failed")
    assert [limiter.filter(r) for r in (first, again, other)] == [True, False, True]


def test_records_waiting_unacknowledged_make_a_broker_that_is_up_unavailable() -> None:
    watch = DeliveryWatch()
    # under load: records always wait, but some are acknowledged between two looks
    assert watch.stalled_for(produced=1000, waiting=800, now=100.0) == 0.0
    assert watch.stalled_for(produced=2000, waiting=800, now=105.0) == 0.0
    # a frozen broker: its connection is up, nothing is acknowledged any more
    assert watch.stalled_for(produced=2500, waiting=1300, now=110.0) == 5.0
    assert watch.stalled_for(produced=2600, waiting=1400, now=125.0) == 20.0
    # acknowledgements again, or nothing waiting: not stalled
    assert watch.stalled_for(produced=2600, waiting=10, now=130.0) == 0.0
    assert watch.stalled_for(produced=2600, waiting=0, now=200.0) == 0.0


def test_a_stalled_producer_is_reported_though_its_brokers_are_up() -> None:
    stats = Stats(connector="orders", server="shop", phase="streaming", connected=True)
    with _sink_fed_by_hand(stats) as sink:
        sink._produced = 50
        sink._on_statistics(_statistics("UP", waiting=50))  # the watch starts
        sink._deliveries.progress_at -= STALL_S + 1  # as if that long passed, nothing acked
        sink._on_statistics(_statistics("UP", waiting=50))
        assert not stats.ready
        assert "acknowledged none of the 50 records waiting for 16s" in stats.sink_error
        sink._on_statistics(_statistics("UP", waiting=0))
        assert stats.ready


def test_lag_is_how_far_behind_the_source_the_connector_is_now() -> None:
    stats = Stats(connector="orders", server="shop", phase="streaming", connected=True)
    assert stats.status()["streaming"]["millisecondsBehindSource"] == 0  # nothing read yet
    now_ms = time.time_ns() // 1_000_000
    stats.saw_event(now_ms - 20_000)  # an event committed 20 s ago, read just now
    behind = stats.status()["streaming"]["millisecondsBehindSource"]
    assert 20_000 <= behind < 25_000
    stats.caught_up()  # then the source had nothing more: idle and healthy is not behind
    assert stats.status()["streaming"]["millisecondsBehindSource"] == 0
    assert stats.status()["streaming"]["lastEventMillisecondsBehindSource"] >= 20_000


def test_watermarks_are_asked_again_while_a_new_topics_leader_is_elected(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from confluent_kafka import KafkaError, KafkaException, TopicPartition

    from cdcflow.capture.kafka import consumer as consumer_module

    monkeypatch.setattr(consumer_module, "ELECTION_RETRY_S", 0.0)

    class Electing:
        """A consumer whose partition has no leader for its first two answers."""

        def __init__(self, error: int) -> None:
            self.calls, self.error = 0, error

        def get_watermark_offsets(self, *_: object, **__: object) -> tuple[int, int]:
            self.calls += 1
            if self.calls <= 2:
                raise KafkaException(KafkaError(self.error))
            return 0, 7

    electing = Electing(KafkaError.NOT_LEADER_FOR_PARTITION)
    partition = TopicPartition("offsets", 0)
    assert consumer_module.watermarks(electing, partition, timeout=5) == (0, 7)  # type: ignore[arg-type]
    assert electing.calls == 3
    with pytest.raises(KafkaException):  # anything else is not waited for
        consumer_module.watermarks(Electing(KafkaError._AUTHENTICATION), partition, timeout=5)  # type: ignore[arg-type]
