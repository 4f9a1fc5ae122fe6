"""How much of the source's log a connector holds back, and how close the server is to
dropping what the connector still needs.

A replication slot retains WAL until the disk fills (or until ``max_slot_wal_keep_size``
invalidates it), a binlog is purged by age or size whatever its readers still need, ASN prunes
change-data rows past its retention limit: each is the log running away from, or out from
under, a connector. Each connector measures its own log (:class:`LogBudget`), a watch thread
asks it every ``log.budget.check.interval.ms`` on a connection of its own, and the result is
in ``/status``, ``/metrics`` and the CdcConnector's ``LogSafe`` condition.
"""

from __future__ import annotations

import enum
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cdcflow.capture.spi import Offset
from cdcflow.capture.stats import Stats

log = logging.getLogger(__name__)

#: A budget is at risk once the server may drop what the connector needs after less than
#: this share of its allowance is left (``safe_wal_size`` of ``max_slot_wal_keep_size``,
#: the age of the oldest unread change of ASN's retention limit).
WARNING_SHARE = 0.25


class LogState(enum.StrEnum):
    OK = "ok"
    WARNING = "warning"
    LOST = "lost"


@dataclass(frozen=True)
class LogBudget:
    """One look at the log a connector needs.

    ``retained_bytes`` is the log kept for the connector (None where the log is not measured
    in bytes); ``safe_bytes`` how much more may be written before the server drops some of it
    (None: no limit is set, the server keeps it until the disk fills); ``oldest_needed`` the
    first position the connector has still to read, ``oldest_kept`` the first the server still
    has. ``facts`` are the server's own figures under their own names (``wal_status``, ...).
    """

    log: str
    state: LogState
    message: str
    retained_bytes: int | None = None
    safe_bytes: int | None = None
    oldest_needed: str = ""
    oldest_kept: str = ""
    facts: dict[str, Any] = field(default_factory=dict)

    def status(self) -> dict[str, Any]:
        """The ``log`` block of ``/status``."""
        return {
            "log": self.log,
            "state": self.state.value,
            "message": self.message,
            "retainedBytes": self.retained_bytes,
            "safeBytes": self.safe_bytes,
            "oldestNeeded": self.oldest_needed,
            "oldestKept": self.oldest_kept,
            **self.facts,
        }


def size(count: int) -> str:
    """``count`` bytes for people: ``512 B``, ``16.0 MiB``."""
    value = float(count)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024 or unit == "GiB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


#: Measures the budget for the connector's last committed offset (None before the first).
Probe = Callable[[Offset | None], LogBudget]


class LogBudgetWatch:
    """Asks ``probe`` every ``interval_s`` from a daemon thread and keeps the answer in
    ``stats``; logs each change of state (a warning when the log is at risk)."""

    def __init__(self, probe: Probe, stats: Stats, *, interval_s: float) -> None:
        self._probe = probe
        self._stats = stats
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="log-budget", daemon=True)

    def start(self) -> LogBudgetWatch:
        self._thread.start()
        return self

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=10)

    def check(self) -> LogBudget | None:
        """Measure once now; None when the source could not be asked (logged)."""
        stored = self._stats.offset
        try:
            budget = self._probe(Offset.from_dict(stored) if stored else None)
        except Exception as error:  # a lost source is the engine's to report; keep the last
            log.debug("could not measure the log budget: %s", error)
            return None
        self._report(budget)
        return budget

    def _report(self, budget: LogBudget) -> None:
        before = self._stats.log_budget
        self._stats.log_budget = budget.status()
        if before is not None and before.get("state") == budget.state.value:
            return
        if budget.state is LogState.OK:
            log.info("log budget: %s", budget.message)
        else:
            log.warning("log budget: %s", budget.message)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.check()
            self._stop.wait(self._interval_s)
