"""What the engine is doing, as plain counters the hot path can bump without locks.

The Prometheus collector and the ``/status`` document both read this one object at request
time, so metrics cost the event path an integer increment, not a library call. Names follow
Debezium's snapshot and streaming metrics in snake_case.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)


@dataclass
class TableProgress:
    """Snapshot progress of one table."""

    rows_scanned: int = 0
    rows_estimated: int = 0
    completed: bool = False


@dataclass
class Stats:
    """Live state of one running connector."""

    connector: str
    server: str
    phase: str = "starting"
    connected: bool = False
    total_events_seen: int = 0
    events_filtered: int = 0
    committed_transactions: int = 0
    last_transaction_id: str = ""
    last_event_source_ms: int = 0
    last_event_wall_ms: int = 0
    milliseconds_behind_source: int = 0
    """Debezium's MilliSecondsBehindSource: the commit-to-emit lag of the last event."""
    last_idle_wall_ms: int = 0
    """When the source last had nothing more to read (the connector had caught up)."""
    snapshot_running: bool = False
    snapshot_completed: bool = False
    snapshot_aborted: bool = False
    snapshot_started_at: float = 0.0
    snapshot_duration_s: float = 0.0
    tables: dict[str, TableProgress] = field(default_factory=dict)
    captured_tables: list[str] | None = None
    """The tables the connector captures; ``None`` until it has connected and listed them."""
    queue_total_capacity: int = 0
    queue_in_flight: int = 0
    offset: dict[str, Any] = field(default_factory=dict)
    offsets_committed: int = 0
    topics: set[str] = field(default_factory=set)
    last_error: str = ""
    #: why Kafka cannot be reached right now ("" when it can)
    sink_error: str = ""
    signals: dict[str, dict[str, Any]] = field(default_factory=dict)
    incremental: dict[str, Any] = field(default_factory=dict)
    #: the log the connector holds back (:class:`~cdcflow.capture.log_budget.LogBudget`'s
    #: ``/status`` block); None until first measured
    log_budget: dict[str, Any] | None = None
    #: ``custom.metric.tags``: labels added to every exported metric.
    metric_tags: dict[str, str] = field(default_factory=dict)

    def saw_event(self, source_ts_ms: int) -> None:
        """Record one emitted event with its source commit time."""
        now = time.time_ns() // 1_000_000
        self.total_events_seen += 1
        self.last_event_source_ms = source_ts_ms
        self.last_event_wall_ms = now
        self.milliseconds_behind_source = max(0, now - source_ts_ms)

    def caught_up(self) -> None:
        """The source has nothing more to read right now."""
        self.last_idle_wall_ms = time.time_ns() // 1_000_000

    def behind_source_ms(self) -> int:
        """How far behind the source the connector is now: 0 when it read everything the
        source had since its last event, else the age of that event's commit (it grows
        while the connector is stuck, unlike the last event's lag)."""
        if not self.last_event_wall_ms or self.last_idle_wall_ms >= self.last_event_wall_ms:
            return 0
        return max(0, time.time_ns() // 1_000_000 - self.last_event_source_ms)

    def start_snapshot(self, estimates: dict[str, int]) -> None:
        self.phase = "snapshot"
        self.snapshot_running = True
        self.snapshot_started_at = time.monotonic()
        self.tables = {name: TableProgress(rows_estimated=n) for name, n in estimates.items()}

    def chunked_snapshot_progress(self, tables: dict[str, tuple[int, int, bool]]) -> None:
        """A chunked initial snapshot's progress (rows read, rows estimated, done) per table;
        it runs while the connector streams, and resumes with its counts after a restart."""
        if not self.snapshot_running:
            self.snapshot_running = True
            self.snapshot_started_at = time.monotonic()
        self.tables = {
            name: TableProgress(rows_scanned=rows, rows_estimated=estimate, completed=done)
            for name, (rows, estimate, done) in tables.items()
        }

    def finish_snapshot(self, *, aborted: bool = False) -> None:
        self.snapshot_running = False
        self.snapshot_completed = not aborted
        self.snapshot_aborted = aborted
        self.snapshot_duration_s = time.monotonic() - self.snapshot_started_at

    def sink_reachability(self, problem: str) -> None:
        """The Kafka client's verdict: "" when a broker is up, else why not."""
        if problem and not self.sink_error:
            log.warning("%s; records wait in the producer queue until it is back", problem)
        elif self.sink_error and not problem:
            log.info("Kafka is reachable again")
        self.sink_error = problem

    @property
    def ready(self) -> bool:
        """Capturing and able to deliver: what ``/readyz`` answers (not while a lost source or
        Kafka is being retried)."""
        return self.phase in ("snapshot", "streaming") and self.connected and not self.sink_error

    def status(self) -> dict[str, Any]:
        """The machine-readable ``/status`` document the operator reads."""
        return {
            "connector": self.connector,
            "server": self.server,
            "phase": self.phase,
            "connected": self.connected,
            "snapshot": {
                "running": self.snapshot_running,
                "completed": self.snapshot_completed,
                "aborted": self.snapshot_aborted,
                "durationSeconds": round(self.snapshot_duration_s, 3),
                "tables": {
                    name: {
                        "rowsScanned": progress.rows_scanned,
                        "rowsEstimated": progress.rows_estimated,
                        "completed": progress.completed,
                    }
                    for name, progress in self.tables.items()
                },
            },
            "streaming": {
                "totalEventsSeen": self.total_events_seen,
                "eventsFiltered": self.events_filtered,
                "committedTransactions": self.committed_transactions,
                "lastTransactionId": self.last_transaction_id,
                "millisecondsBehindSource": self.behind_source_ms(),
                "lastEventMillisecondsBehindSource": self.milliseconds_behind_source,
                "millisecondsSinceLastEvent": (
                    time.time_ns() // 1_000_000 - self.last_event_wall_ms
                    if self.last_event_wall_ms
                    else None
                ),
            },
            "offset": self.offset,
            "offsetsCommitted": self.offsets_committed,
            "topics": sorted(self.topics),
            "capturedTables": self.captured_tables,
            "lastError": self.last_error,
            "kafka": {"connected": not self.sink_error, "lastError": self.sink_error},
            "signals": self.signals,
            "incrementalSnapshot": self.incremental,
            "logBudget": self.log_budget,
        }
