"""Debezium 3.7's ``http`` notification channel: each notification POSTed as JSON to a URL.

``notification.http.url`` receives ``{"aggregateType", "type", "additionalData", "timestamp",
"id"}`` with ``Content-Type: application/json``; a 2xx answer is a delivery. Deliveries run on
one background thread behind a queue of 1000 (a notification that finds it full is dropped
with a warning), so the capture never waits for the endpoint. A failed delivery is retried
``notification.http.retries`` times, at least 3 times for the terminal types (``COMPLETED``,
``ABORTED``, ``SKIPPED``), 1 s apart doubling up to 30 s; each attempt may take
``notification.http.timeout.ms``. As Debezium's SSRF guard does, a URL whose host resolves to
a loopback, private (site-local), link-local, unspecified or IPv6 unique-local address is
refused unless ``notification.http.allow.private.networks`` is true (an in-cluster Service).
"""

from __future__ import annotations

import ipaddress
import logging
import queue
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any, Final
from urllib.parse import urlsplit

import orjson

log = logging.getLogger(__name__)

TERMINAL_TYPES: Final = frozenset({"COMPLETED", "ABORTED", "SKIPPED"})
QUEUE_CAPACITY: Final = 1000
MIN_TERMINAL_RETRIES: Final = 3
RETRY_INITIAL_S: Final = 1.0
RETRY_MAX_S: Final = 30.0
#: What Java's ``InetAddress`` calls site-local, link-local and any-local, plus IPv6 ULA.
_PRIVATE_NETWORKS: Final = tuple(
    ipaddress.ip_network(network)
    for network in (
        "10.0.0.0/8",
        "172.16.0.0/12",
        "192.168.0.0/16",
        "169.254.0.0/16",
        "fec0::/10",
        "fe80::/10",
        "fc00::/7",
    )
)

Post = Callable[[str, bytes, float], int]


class DeliveryError(Exception):
    """The endpoint did not take the notification (non-2xx, timeout, connection error)."""


class UnsafeUrlError(ValueError):
    """The URL's host is not a public address and private networks are not allowed."""


def check_url(url: str) -> None:
    """``notification.http.url`` must be an http(s) URL with a host."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"notification.http.url {url!r} must be a valid http(s) URL with a host")


def check_public_host(url: str, *, allow_private: bool) -> None:
    """Refuse a URL whose host resolves to a non-public address, unless ``allow_private``."""
    if allow_private:
        return
    host = urlsplit(url).hostname or ""
    try:
        addresses = {str(info[4][0]) for info in socket.getaddrinfo(host, None)}
    except socket.gaierror as error:
        raise UnsafeUrlError(f"cannot resolve notification host {host}: {error}") from None
    for text in addresses:
        address = ipaddress.ip_address(text.split("%")[0])
        if (
            address.is_loopback
            or address.is_unspecified
            or any(address in network for network in _PRIVATE_NETWORKS)
        ):
            raise UnsafeUrlError(
                f"notification host {host} resolves to the non-public address {address}; set "
                "notification.http.allow.private.networks=true to allow it"
            )


def payload(notification: Any) -> bytes:
    """The JSON Debezium posts: its Jackson bean form, ``id`` last."""
    return orjson.dumps(
        {
            "aggregateType": notification.aggregate_type,
            "type": notification.type,
            "additionalData": notification.additional_data,
            "timestamp": notification.timestamp,
            "id": notification.id,
        }
    )


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """Java's HttpClient does not follow redirects by default: a 3xx is a failed delivery."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirects)


def post_json(url: str, body: bytes, timeout_s: float) -> int:
    """POST ``body`` as JSON; the HTTP status (DeliveryError when no answer came)."""
    request = urllib.request.Request(
        url, data=body, method="POST", headers={"Content-Type": "application/json"}
    )
    try:
        with _OPENER.open(request, timeout=timeout_s) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)
    except (urllib.error.URLError, OSError) as error:
        raise DeliveryError(str(error)) from None


def backoff(initial_s: float = RETRY_INITIAL_S, max_s: float = RETRY_MAX_S) -> Iterator[float]:
    """Exponential delays between attempts."""
    delay = initial_s
    while True:
        yield delay
        delay = min(max_s, delay * 2)


class HttpNotifier:
    """The ``http`` channel of one connector; see the module docstring."""

    def __init__(
        self,
        *,
        url: str,
        timeout_s: float,
        retries: int,
        allow_private: bool,
        post: Post = post_json,
        delays: Callable[[], Iterator[float]] = backoff,
    ) -> None:
        check_url(url)
        self._url = url
        self._timeout = timeout_s
        self._retries = retries
        self._allow_private = allow_private
        self._post = post
        self._delays = delays
        self._queue: queue.Queue[tuple[Any, bytes] | None] = queue.Queue(QUEUE_CAPACITY)
        self._thread = threading.Thread(
            target=self._run, name="cdcflow-http-notification", daemon=True
        )
        self._thread.start()

    def attempts(self, notification_type: str) -> int:
        """Deliveries tried for a notification of ``notification_type``."""
        terminal = notification_type in TERMINAL_TYPES
        return (max(self._retries, MIN_TERMINAL_RETRIES) if terminal else self._retries) + 1

    def __call__(self, notification: Any) -> None:
        try:
            self._queue.put_nowait((notification, payload(notification)))
        except queue.Full:
            log.warning(
                "Dropped notification %s to %s: the delivery queue is full",
                notification.type,
                self._url,
            )

    def close(self, timeout_s: float = 5.0) -> None:
        """Deliver what is queued (for up to ``timeout_s``), then stop."""
        try:
            self._queue.put(None, timeout=timeout_s)
        except queue.Full:
            return
        self._thread.join(timeout_s)

    def _run(self) -> None:
        while (item := self._queue.get()) is not None:
            self._deliver(*item)

    def _deliver(self, notification: Any, body: bytes) -> None:
        attempts = self.attempts(notification.type)
        delays = self._delays()
        for attempt in range(1, attempts + 1):
            try:
                check_public_host(self._url, allow_private=self._allow_private)
                status = self._post(self._url, body, self._timeout)
                if 200 <= status < 300:
                    return
                reason = f"HTTP {status}"
            except UnsafeUrlError as error:
                log.warning("Dropped notification %s: %s", notification.type, error)
                return
            except DeliveryError as error:
                reason = str(error)
            if attempt < attempts:
                time.sleep(next(delays))
        level = logging.ERROR if notification.type in TERMINAL_TYPES else logging.WARNING
        log.log(
            level,
            "Dropped notification %s to %s after %d attempts: %s",
            notification.type,
            self._url,
            attempts,
            reason,
        )
