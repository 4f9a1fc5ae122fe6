"""Restarts in every state, asserted once for every connector kind (the conformance drivers).

A connector is stopped cleanly, or killed with SIGKILL, in each state a user meets: idle after
a snapshot, idle after a restart, inside a large transaction, right after DDL, during the
snapshot (rows the killed snapshot sent and the source then deleted or re-keyed must be
deleted in the topic too), and at the two instants of an offset commit (after Kafka
acknowledged, after the offset was saved). After each, the next start must resume where the
last one left off: a clean stop repeats nothing, a kill repeats at most what was in flight
since the last offset commit (offsets are taken inside transactions too), and in the end the
topic replayed (last event per key wins, deletes remove) equals the source table.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from tests.plugins.fix_capture import CaptureProcess, Event
from tests.plugins.fix_conformance import ConnectorDriver

PLAIN = {"key.converter.schemas.enable": False, "value.converter.schemas.enable": False}
IDLE_S = 1.5
"""Long enough for several offset flushes (every 200-300 ms in these tests) with no change."""
PRELOAD = 3000
LARGE_TRANSACTION = 5000
HUGE_TRANSACTION = 20_000
REKEYED = 100_006


def _keys(events: list[Event]) -> list[tuple[str | None, Any]]:
    return [(e.op, e.key["id"] if e.key else None) for e in events]


def _replay(events: list[Event]) -> dict[int, str | None]:
    state: dict[int, str | None] = {}
    for event in events:
        if event.value is None or event.op == "d":
            state.pop(event.key["id"], None)
        elif event.op in ("r", "c", "u"):
            state[event.key["id"]] = event.payload["after"]["v"]
    return state


def _ended(events: list[Event]) -> bool:
    return any(e.payload["status"] == "END" for e in events)


def test_clean_stops_in_every_state_resume_without_a_gap_or_a_repeat(
    driver: ConnectorDriver,
) -> None:
    table = driver.table("cycles")
    driver.create_table(table, ((1, "a"),))

    running = driver.start([table], **PLAIN)  # snapshot, then one streamed change
    driver.run(driver.insert(table, (2, "b")))
    driver.wait_for_events(table, lambda ev: len(ev) >= 2)
    running.stop()
    for _ in range(2):  # idle after a restart, twice
        running = driver.start([table], **PLAIN)
        time.sleep(IDLE_S)
        running.stop()
    running = driver.start([table], **PLAIN)  # right after DDL
    driver.add_column(table, "w")
    driver.run(driver.insert(table, (3, "c")))
    driver.wait_for_events(table, lambda ev: len(ev) >= 3)
    running.stop()
    running = driver.start([table], **PLAIN)
    time.sleep(IDLE_S)
    driver.run(driver.insert(table, (4, "d")))
    events = driver.wait_for_events(table, lambda ev: len(ev) >= 4)
    running.stop()

    assert _keys(events) == [("r", 1), ("c", 2), ("c", 3), ("c", 4)]
    assert events[3].payload["after"] == {"id": 4, "v": "d", "w": None}


def test_kill_9_in_every_state_loses_no_committed_change(driver: ConnectorDriver) -> None:
    table = driver.table("kills")
    driver.create_table(table)
    for first in range(1, PRELOAD + 1, 500):
        driver.run(driver.insert(table, *((i, f"p{i}") for i in range(first, first + 500))))
    resource = driver.resource(
        [table], **PLAIN, **{"snapshot.fetch.size": 200, "offset.flush.interval.ms": 300}
    )
    config = driver.capture.write_yaml(resource)

    def process(crash_point: str = "") -> CaptureProcess:
        return CaptureProcess(driver.capture, config, crash_point, login=driver.login)

    def streaming(status: dict[str, Any]) -> bool:
        return bool(status["phase"] == "streaming")

    assert process("snapshot-rows:4").exit_code() == 137  # during the snapshot (~1,000 rows in)
    # sent by the killed snapshot, gone before the next one: no phantom may stay in the topic
    driver.run(driver.delete(table, 5), driver.change_key(table, 6, REKEYED))
    for _ in range(2):  # idle after the redone snapshot, then idle after a restart
        idle = process()
        idle.wait_for(streaming)
        time.sleep(IDLE_S)
        idle.kill()

    inside = process()  # inside a large transaction
    seen_before = inside.wait_for(streaming)["streaming"]["totalEventsSeen"]
    large = [(i, "large") for i in range(PRELOAD + 1, PRELOAD + LARGE_TRANSACTION + 1)]
    writer = threading.Thread(
        target=driver.run_atomically,
        args=(driver.insert(table, *large), driver.update(table, 7, "updated")),
    )
    writer.start()
    inside.wait_for(lambda s: s["streaming"]["totalEventsSeen"] > seen_before + 500)
    inside.kill()
    writer.join(60)

    after_ddl = process()  # right after DDL
    after_ddl.wait_for(streaming)
    driver.add_column(table, "w")
    driver.run(driver.update(table, 8, "ddl"))
    driver.wait_for_events(table, lambda ev: any(e.key == {"id": 8} and e.op == "u" for e in ev))
    after_ddl.kill()

    for point, row in (("after-flush:2", 9), ("after-offset-save:2", 10)):
        crashing = process(point)  # Kafka acknowledged, offset not saved; saved, not confirmed
        for n in range(200):
            if crashing.process.poll() is not None:
                break
            driver.run(driver.update(table, row, f"{point} {n}"))
            time.sleep(0.1)
        assert crashing.exit_code() == 137

    final = process()
    final.wait_for(streaming)
    driver.run(driver.delete(table, 11))
    source = driver.rows(table)
    events = driver.wait_for_events(table, lambda ev: _replay(ev) == source)
    final.stop()

    assert len(source) == PRELOAD + LARGE_TRANSACTION - 2
    assert 5 not in source and 6 not in source and REKEYED in source
    assert {e.key["id"] for e in events if e.op in ("r", "c")} >= set(source)


def test_a_crash_inside_a_large_transaction_sends_none_of_it_again(
    driver: ConnectorDriver,
) -> None:
    table = driver.table("inside")
    driver.create_table(table)
    config = {"provide.transaction.metadata": True, "offset.flush.interval.ms": 50}
    resource = driver.resource([table], **PLAIN, **config)
    path = driver.capture.write_yaml(resource)

    # dies right after the first offset saved in the middle of the transaction
    crashing = CaptureProcess(driver.capture, path, "inside-transaction:1", login=driver.login)
    crashing.wait_for(lambda s: s["phase"] == "streaming")
    rows = [(i, "large") for i in range(1, HUGE_TRANSACTION + 1)]
    driver.run_atomically(driver.insert(table, *rows))
    assert crashing.exit_code() == 137
    resumed = CaptureProcess(driver.capture, path, login=driver.login)
    events = driver.wait_for_events(table, lambda ev: len(ev) >= HUGE_TRANSACTION)
    markers = driver.events_of(
        "transaction", lambda ev: any(e.payload["status"] == "END" for e in ev)
    )
    resumed.stop()

    assert [e.key["id"] for e in events] == list(range(1, HUGE_TRANSACTION + 1))  # no repeat
    assert [e.payload["status"] for e in markers] == ["BEGIN", "END"]  # BEGIN written once
    assert markers[1].payload["event_count"] == HUGE_TRANSACTION
    orders = [e.payload["transaction"]["total_order"] for e in events]
    assert orders == list(range(1, HUGE_TRANSACTION + 1))  # counted on across the restart
