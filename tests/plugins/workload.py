"""A random write workload on a conformance driver's ``(id, v)`` table, and what its topic
replays to: shared by the chunked-snapshot and chaos tests."""

from __future__ import annotations

import random
import threading
import time
from collections import Counter

from tests.plugins.fix_capture import Event
from tests.plugins.fix_conformance import ConnectorDriver


def fill(driver: ConnectorDriver, table: str, *, rows: int, batch: int) -> None:
    """Rows 1..``rows`` (``row <id>``), ``batch`` per statement."""
    for start in range(1, rows + 1, batch):
        values = ((i, f"row {i}") for i in range(start, min(start + batch, rows + 1)))
        driver.run(driver.insert(table, *values))


def write_randomly(
    driver: ConnectorDriver,
    table: str,
    *,
    seed: int,
    stop: threading.Event,
    next_id: list[int],
    large: int = 0,
) -> None:
    """Transactions of ten random inserts, updates and deletes until ``stop``; with ``large``,
    one in twenty inserts that many rows at once. A failed transaction (the database is down
    in a chaos test) is left out and writing goes on once it is back."""
    rng = random.Random(seed)
    while not stop.is_set():
        if large and rng.random() < 0.05:
            first = next_id[0]
            next_id[0] += large
            statements = [driver.insert(table, *((i, "large") for i in range(first, next_id[0])))]
        else:
            statements = []
            for _ in range(10):
                choice, key = rng.random(), rng.randint(1, next_id[0] - 1)
                if choice < 0.3:
                    statements.append(driver.insert(table, (next_id[0], "inserted")))
                    next_id[0] += 1
                elif choice < 0.8:
                    statements.append(driver.update(table, key, f"updated {rng.randint(0, 10**9)}"))
                else:
                    statements.append(driver.delete(table, key))
        try:
            driver.run_atomically(*statements)
        except Exception:  # the database is down (a crash): write on once it is back
            time.sleep(0.5)
        time.sleep(0.02)


def replay(events: list[Event]) -> dict[int, str | None]:
    """The table a consumer applying ``events`` in order ends with."""
    state: dict[int, str | None] = {}
    for event in events:
        if event.value is None or event.op == "d":
            state.pop(event.key["id"], None)
        else:
            state[event.key["id"]] = event.payload["after"]["v"]
    return state


def snapshot_reads(events: list[Event]) -> Counter[int]:
    """How often each row's snapshot read (``op: r``) is in ``events``."""
    return Counter(e.key["id"] for e in events if e.value is not None and e.op == "r")
