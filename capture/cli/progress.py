"""Snapshot progress for humans: rich bars on a terminal, periodic log lines otherwise."""

from __future__ import annotations

import logging
import threading
import time

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn

from cdcflow.capture.stats import Stats

log = logging.getLogger("cdcflow.progress")
LOG_EVERY_S = 10.0


def start(stats: Stats, stop: threading.Event, *, tty: bool) -> threading.Thread:
    """Start the reporter thread; it ends when ``stop`` is set or the snapshot finished."""
    target = _bars if tty else _lines
    thread = threading.Thread(target=target, args=(stats, stop), daemon=True)
    thread.start()
    return thread


def _wait_for_snapshot(stats: Stats, stop: threading.Event) -> bool:
    while not stop.is_set() and stats.phase == "starting":
        stop.wait(0.2)
    return stats.snapshot_running


def _bars(stats: Stats, stop: threading.Event) -> None:
    if not _wait_for_snapshot(stats, stop):
        return
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]:>9.0f} rows/s"),
    )
    with Progress(*columns, console=Console(stderr=True), transient=False) as bars:
        tasks: dict[str, TaskID] = {}
        started = time.monotonic()
        while stats.snapshot_running and not stop.is_set():
            elapsed = max(time.monotonic() - started, 1e-3)
            for name, table in list(stats.tables.items()):
                if name not in tasks:
                    tasks[name] = bars.add_task(name, total=table.rows_estimated or None, rate=0.0)
                total = max(table.rows_estimated, table.rows_scanned) or None
                bars.update(
                    tasks[name],
                    completed=table.rows_scanned,
                    total=total,
                    rate=table.rows_scanned / elapsed,
                )
            stop.wait(0.25)


def _lines(stats: Stats, stop: threading.Event) -> None:
    if not _wait_for_snapshot(stats, stop):
        return
    started = time.monotonic()
    while stats.snapshot_running and not stop.wait(LOG_EVERY_S):
        elapsed = time.monotonic() - started
        for name, table in stats.tables.items():
            log.info(
                "snapshot %s: %d/%d rows (%.0f rows/s)",
                name,
                table.rows_scanned,
                table.rows_estimated,
                table.rows_scanned / max(elapsed, 1e-3),
            )
