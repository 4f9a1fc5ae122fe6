"""The engine's HTTP endpoint: ``/metrics``, ``/healthz``, ``/readyz``, ``/status``, ``/signals``.

Metrics are produced by a custom collector reading :class:`Stats` at scrape time. ``/readyz``
answers 200 once the connector is snapshotting or streaming; ``/healthz`` answers 200 unless
the engine failed. ``POST /signals`` inserts a signal row (idempotently, by id) into the
signal table; the operator uses it for CdcSnapshotSignal resources.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from cdcflow.capture.stats import Stats

PREFIX = "cdcflow"


class StatsCollector(Collector):
    """Debezium's snapshot and streaming metrics, in snake_case, labelled by server."""

    def __init__(self, stats: Stats) -> None:
        self._stats = stats

    def collect(self) -> Iterator[Metric]:
        s = self._stats
        # custom.metric.tags: Debezium appends them to its MBean names; here they are labels.
        labels, server = ["server", *s.metric_tags], [s.server, *s.metric_tags.values()]

        def gauge(name: str, doc: str, value: float) -> GaugeMetricFamily:
            family = GaugeMetricFamily(f"{PREFIX}_{name}", doc, labels=labels)
            family.add_metric(server, value)
            return family

        def counter(name: str, doc: str, value: float) -> CounterMetricFamily:
            family = CounterMetricFamily(f"{PREFIX}_{name}", doc, labels=labels)
            family.add_metric(server, value)
            return family

        yield counter("total_number_of_events_seen", "Events emitted.", s.total_events_seen)
        yield counter("number_of_events_filtered", "Events dropped by filters.", s.events_filtered)
        yield counter(
            "number_of_committed_transactions", "Source transactions.", s.committed_transactions
        )
        yield gauge("connected", "1 while connected to the source.", float(s.connected))
        yield gauge(
            "milli_seconds_behind_source",
            "Commit-to-emit lag of the last event.",
            s.milliseconds_behind_source,
        )
        yield gauge("queue_total_capacity", "Maximum records in flight.", s.queue_total_capacity)
        yield gauge(
            "queue_remaining_capacity",
            "Records that may still be put in flight.",
            max(0, s.queue_total_capacity - s.queue_in_flight),
        )
        yield gauge("snapshot_running", "1 while a snapshot runs.", float(s.snapshot_running))
        yield gauge(
            "snapshot_completed", "1 once a snapshot completed.", float(s.snapshot_completed)
        )
        yield gauge("snapshot_aborted", "1 if the snapshot was aborted.", float(s.snapshot_aborted))
        yield gauge("snapshot_duration_in_seconds", "Snapshot duration.", s.snapshot_duration_s)
        yield gauge("total_table_count", "Tables in the snapshot.", len(s.tables))
        yield gauge(
            "remaining_table_count",
            "Tables still to snapshot.",
            sum(1 for t in s.tables.values() if not t.completed),
        )
        rows = GaugeMetricFamily(
            f"{PREFIX}_rows_scanned", "Snapshot rows read per table.", labels=[*labels, "table"]
        )
        for name, progress in s.tables.items():
            rows.add_metric([*server, name], progress.rows_scanned)
        yield rows
        yield counter("offsets_committed", "Offsets saved after Kafka acks.", s.offsets_committed)
        yield from _log_budget(s.log_budget, labels, server)


#: ``/metrics`` values of the log budget's states.
LOG_STATES = {"ok": 0, "warning": 1, "lost": 2}


def _log_budget(
    budget: dict[str, Any] | None, labels: list[str], server: list[str]
) -> Iterator[Metric]:
    """The log the connector holds back, once measured; bytes where the log counts them."""
    if budget is None:
        return
    figures = (
        (
            "log_retained_bytes",
            "Log the server keeps for the connector.",
            budget.get("retainedBytes"),
        ),
        (
            "log_safe_bytes",
            "Log that may still be written before the server drops what the connector needs.",
            budget.get("safeBytes"),
        ),
        (
            "log_budget_state",
            "0 ok, 1 the server may soon drop log the connector needs, 2 it did.",
            LOG_STATES.get(str(budget.get("state")), 0),
        ),
    )
    for name, doc, value in figures:
        if value is not None:
            family = GaugeMetricFamily(f"{PREFIX}_{name}", doc, labels=labels)
            family.add_metric(server, float(value))
            yield family


#: Inserts a signal (id, type, data JSON) into the signal table; False if it was there already.
SignalSender = Callable[[str, str, str], bool]
MAX_SIGNAL_BYTES = 65536


def _handler(
    stats: Stats, registry: CollectorRegistry, send_signal: SignalSender | None
) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            if self.path.split("?", 1)[0] != "/signals":
                self._send(404, b"not found", "text/plain")
                return
            if send_signal is None:
                self._send(409, b"no signal.data.collection configured", "text/plain")
                return
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_SIGNAL_BYTES:
                self._send(413, b"signal too large", "text/plain")
                return
            try:
                body = orjson.loads(self.rfile.read(length))
                args = (str(body["id"]), str(body["type"]), orjson.dumps(body.get("data", {})))
            except (orjson.JSONDecodeError, KeyError, TypeError):
                self._send(400, b'expected {"id", "type", "data"}', "text/plain")
                return
            try:
                inserted = send_signal(args[0], args[1], args[2].decode())
            except Exception as error:  # the caller retries; the message says why
                self._send(503, str(error).encode(), "text/plain")
                return
            self._send(
                201 if inserted else 200, b"inserted" if inserted else b"exists", "text/plain"
            )

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                self._send(200, generate_latest(registry), "text/plain; version=0.0.4")
            elif path == "/status":
                self._send(200, orjson.dumps(stats.status()), "application/json")
            elif path == "/healthz":
                healthy = stats.phase != "failed"
                self._send(200 if healthy else 503, stats.phase.encode(), "text/plain")
            elif path == "/readyz":
                body = stats.phase if not stats.sink_error else f"{stats.phase}: {stats.sink_error}"
                self._send(200 if stats.ready else 503, body.encode(), "text/plain")
            else:
                self._send(404, b"not found", "text/plain")

        def _send(self, code: int, body: bytes, content_type: str) -> None:
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            return None

    return Handler


class StatusServer:
    """Serves the endpoints from a daemon thread until :meth:`close`."""

    def __init__(
        self,
        stats: Stats,
        *,
        host: str = "0.0.0.0",
        port: int = 8080,
        send_signal: SignalSender | None = None,
    ) -> None:
        registry = CollectorRegistry()
        registry.register(StatsCollector(stats))
        handler = _handler(stats, registry, send_signal)
        self._server = ThreadingHTTPServer((host, port), handler)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
