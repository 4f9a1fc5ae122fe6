"""The ``http`` notification channel posts Debezium 3.7's JSON, retries, and guards against SSRF."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from itertools import repeat
from typing import Any

import orjson
import pytest

from cdcflow.capture.notify_http import (
    HttpNotifier,
    UnsafeUrlError,
    check_public_host,
    payload,
)
from cdcflow.capture.signals.channels import Notifications
from cdcflow.capture.signals.incremental import Notification
from cdcflow.capture.stats import Stats


class _Endpoint:
    """A local HTTP server answering with the queued statuses (then 200)."""

    def __init__(self, statuses: list[int]) -> None:
        self.statuses = statuses
        self.bodies: list[tuple[str, bytes]] = []
        self.received = threading.Event()
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                endpoint.bodies.append((self.headers["Content-Type"], body))
                status = endpoint.statuses.pop(0) if endpoint.statuses else 200
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()
                if status == 200:
                    endpoint.received.set()

            def log_message(self, format: str, *args: object) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def endpoint() -> Iterator[_Endpoint]:
    server = _Endpoint([])
    yield server
    server.server.shutdown()


def _notification(kind: str = "IN_PROGRESS") -> Notification:
    return Notification("Incremental Snapshot", kind, {"k": "v"}, id="the-id", timestamp=123)


def _notifier(url: str, **options: Any) -> HttpNotifier:
    defaults: dict[str, Any] = {"timeout_s": 2, "retries": 2, "allow_private": True}
    return HttpNotifier(url=url, delays=lambda: repeat(0.0), **{**defaults, **options})


def test_the_payload_is_debeziums_json_with_the_id_last() -> None:
    assert payload(_notification("COMPLETED")) == (
        b'{"aggregateType":"Incremental Snapshot","type":"COMPLETED",'
        b'"additionalData":{"k":"v"},"timestamp":123,"id":"the-id"}'
    )


def test_notifications_are_posted_as_json(endpoint: _Endpoint) -> None:
    notifier = _notifier(endpoint.url)
    notifier(_notification())
    assert endpoint.received.wait(5)
    notifier.close()
    [(content_type, body)] = endpoint.bodies
    assert content_type == "application/json"
    assert orjson.loads(body)["additionalData"] == {"k": "v"}


def test_a_failed_delivery_is_retried(endpoint: _Endpoint) -> None:
    endpoint.statuses = [503, 500]
    notifier = _notifier(endpoint.url, retries=2)
    notifier(_notification())
    assert endpoint.received.wait(5)
    notifier.close()
    assert len(endpoint.bodies) == 3


def test_terminal_notifications_get_at_least_three_retries() -> None:
    notifier = _notifier("http://h/x", retries=0)
    assert [notifier.attempts("IN_PROGRESS"), notifier.attempts("COMPLETED")] == [1, 4]
    assert _notifier("http://h/x", retries=5).attempts("ABORTED") == 6


def test_private_addresses_are_refused_unless_allowed() -> None:
    for url in ("http://127.0.0.1/x", "http://10.1.2.3/x", "http://[::1]/x", "http://169.254.1.1/"):
        with pytest.raises(UnsafeUrlError, match="non-public address"):
            check_public_host(url, allow_private=False)
        check_public_host(url, allow_private=True)
    check_public_host("http://8.8.8.8/x", allow_private=False)


def test_a_refused_host_is_not_posted_to(endpoint: _Endpoint) -> None:
    notifier = _notifier(endpoint.url, allow_private=False)
    notifier(_notification())
    notifier.close()
    assert endpoint.bodies == []


def test_the_http_channel_receives_notifications_only_when_enabled() -> None:
    sent: list[Notification] = []
    stats = Stats(connector="c", server="s")
    for channels, expected in ((("log",), 0), (("log", "http"), 1)):
        sent.clear()
        notify = Notifications(
            channels=channels,
            topic="",
            sink=None,  # type: ignore[arg-type]
            stats=stats,
            http=sent.append,
        )
        notify(_notification())
        assert len(sent) == expected
