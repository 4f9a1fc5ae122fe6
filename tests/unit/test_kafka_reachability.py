"""An engine that cannot reach Kafka says so: not ready, the reason in /status, no log flood."""

from __future__ import annotations

import logging

import orjson

from cdcflow.capture.kafka.producer import KafkaSink, RepeatLimiter
from cdcflow.capture.stats import Stats


def _statistics(*states: str) -> str:
    brokers = {f"b{i}:9092/{i}": {"state": state, "nodeid": i} for i, state in enumerate(states)}
    brokers["b:9092/bootstrap"] = {"state": "INIT", "nodeid": -1}
    return orjson.dumps({"brokers": brokers}).decode()


def test_broker_statistics_drive_readiness_and_status() -> None:
    stats = Stats(connector="orders", server="shop", phase="streaming", connected=True)
    sink = KafkaSink(
        bootstrap_servers="127.0.0.1:1", on_reachability=stats.sink_reachability
    )  # no broker there; the callbacks are fed by hand below
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
