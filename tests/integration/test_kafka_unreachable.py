"""Kafka out of reach: the engine says so in readiness and status, never floods its log, and
delivers everything once Kafka is back — with the real librdkafka and a real broker (also one
that is frozen with its connections up).

The connector's bootstrap address is a loopback port where, at first, nothing listens; later a
plain TCP forwarder to the session's broker opens there (Kafka's metadata then points the
client at the broker itself), as when a broker or a route comes back."""

from __future__ import annotations

import logging
import os
import signal
import socket
import socketserver
import threading
import time
from collections.abc import Iterator

import pytest

from cdcflow.capture.connector_resource import CdcConnector
from tests.plugins.fix_capture import CaptureHarness


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def _pipe(source: socket.socket, target: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            target.sendall(data)
    except OSError:
        pass
    finally:
        target.close()


class _Forwarder(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


def _forwarding(port: int, target: str) -> Iterator[None]:
    host, target_port = target.rsplit(":", 1)

    class Handler(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            upstream = socket.create_connection((host, int(target_port)))
            back = threading.Thread(target=_pipe, args=(upstream, self.request), daemon=True)
            back.start()
            _pipe(self.request, upstream)
            back.join()

    with _Forwarder(("127.0.0.1", port), Handler) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            yield
        finally:
            server.shutdown()


def _wait(condition: object, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.2)


def test_an_unreachable_kafka_is_reported_until_it_is_back_and_then_everything_arrives(
    capture: CaptureHarness, caplog: pytest.LogCaptureFixture
) -> None:
    table = capture.table("nokafka")
    capture.sql(f"CREATE TABLE {table} (id int PRIMARY KEY)", f"INSERT INTO {table} VALUES (1)")
    port = _closed_port()
    document = capture.resource([table]).model_dump(by_alias=True, exclude_none=True)
    document["spec"]["kafka"]["bootstrapServers"] = f"127.0.0.1:{port}"
    with caplog.at_level(logging.WARNING):
        running = capture.start(CdcConnector.model_validate(document), wait_for=None)
        stats = running.engine.stats
        _wait(lambda: stats.sink_error, f"no verdict on Kafka; phase {stats.phase}")
        time.sleep(5)  # Kafka keeps failing meanwhile: the log must stay quiet
        down = (stats.ready, stats.status()["kafka"])
        noise = [r.getMessage() for r in caplog.records if "Kafka unreachable" in r.getMessage()]

        forwarder = _forwarding(port, capture.kafka.bootstrap_servers)
        next(forwarder)
        try:
            _wait(lambda: stats.ready and stats.phase == "streaming", "never ready again", 90)
            capture.sql(f"INSERT INTO {table} VALUES (2)")
            events = capture.wait_for_events(f"public.{table}", lambda ev: len(ev) >= 2)
        finally:
            running.engine.stop.set()
            running.thread.join(60)
            next(forwarder, None)

    ready, kafka = down
    assert not ready and kafka["connected"] is False
    assert "Kafka unreachable" in kafka["lastError"]
    assert len(noise) < 8, noise
    assert [e.key["payload"]["id"] for e in events] == [1, 2]
    assert not running.errors


def test_a_frozen_broker_is_reported_within_seconds_and_loses_nothing(
    capture: CaptureHarness,
) -> None:
    """A broker that stops answering keeps its connections up (SIGSTOP, a stuck disk): only
    records that wait unacknowledged can tell."""
    table = capture.table("frozen")
    capture.sql(f"CREATE TABLE {table} (id int PRIMARY KEY)", f"INSERT INTO {table} VALUES (0)")
    running = capture.start(capture.resource([table]))
    stats = running.engine.stats
    capture.wait_for_events(f"public.{table}", lambda ev: len(ev) >= 1)
    broker = capture.kafka.pid
    os.kill(broker, signal.SIGSTOP)
    try:
        frozen_at = time.monotonic()
        capture.sql(f"INSERT INTO {table} SELECT g FROM generate_series(1, 100) g")
        _wait(lambda: not stats.ready, "a frozen broker still looked healthy", timeout=45)
        detected_s = time.monotonic() - frozen_at
        kafka = stats.status()["kafka"]
    finally:
        os.kill(broker, signal.SIGCONT)
    try:
        events = capture.wait_for_events(f"public.{table}", lambda ev: len(ev) >= 101)
        _wait(lambda: stats.ready, "never ready again after the broker thawed", 90)
    finally:
        running.stop()

    assert "acknowledged none of the" in kafka["lastError"], kafka
    assert detected_s < 30  # librdkafka alone would wait for message.timeout.ms (5 minutes)
    assert {e.key["payload"]["id"] for e in events} == set(range(101))
