"""Chaos, for every connector kind: random writes (large transactions among them) while the
capture is killed with SIGKILL at random moments, from its chunked initial snapshot through
streaming, and while the database crashes and the Kafka broker restarts under it, with
exactly-once on. Afterwards a ``read_committed`` consumer must show every change (the
replayed topic equals the table), no event twice and each row's snapshot read once.

``CDCFLOW_CHAOS_KILLS`` sets the number of kills (4 here, sized to the test budget; ``make
chaos`` runs 25) and ``CDCFLOW_CHAOS_SEED`` replays a failing run (its seed is printed).
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections import Counter

import orjson

from tests.plugins.fix_capture import CaptureProcess, Event
from tests.plugins.fix_conformance import ConnectorDriver, exactly_once
from tests.plugins.workload import fill, replay, snapshot_reads, write_randomly

PLAIN = {"key.converter.schemas.enable": False, "value.converter.schemas.enable": False}
KILLS = int(os.environ.get("CDCFLOW_CHAOS_KILLS", "4"))
ROWS = 6_000
CHUNK = 300
LARGE_TRANSACTION = 400
#: the outage each of the first runs of the capture lives through before it is killed
OUTAGES = ("", "database crash", "broker restart")


def _repeated(events: list[Event]) -> list[bytes]:
    """Events delivered twice: the same change of the same row at the same source position
    (only the processing time ``ts_*`` differs between a change and its replay)."""
    seen = Counter(
        orjson.dumps(
            [e.key, e.op, e.payload["before"], e.payload["after"], e.payload["source"]],
            option=orjson.OPT_SORT_KEYS,
        )
        for e in events
        if e.value is not None and e.op != "r"
    )
    return [identity for identity, count in seen.items() if count > 1]


def test_random_kills_under_random_writes_lose_nothing_and_repeat_nothing(
    driver: ConnectorDriver,
) -> None:
    seed = int(os.environ.get("CDCFLOW_CHAOS_SEED", str(random.randrange(10**6))))
    print(f"chaos seed {seed} ({KILLS} kills)")
    rng = random.Random(seed)
    table = driver.table("chaos")
    driver.create_table(table)
    fill(driver, table, rows=ROWS, batch=CHUNK)
    properties = {
        **PLAIN,
        "snapshot.strategy": "chunked",
        "signal.data.collection": driver.signal_table("chaos_signal"),
        "incremental.snapshot.chunk.size": CHUNK,
        "offset.flush.interval.ms": 300,
    }
    config = driver.capture.write_yaml(exactly_once(driver, [table], **properties))
    stop, next_id = threading.Event(), [ROWS + 1]
    writer = threading.Thread(
        target=write_randomly,
        args=(driver, table),
        kwargs={"seed": seed, "stop": stop, "next_id": next_id, "large": LARGE_TRANSACTION},
    )
    writer.start()
    try:
        for run in range(KILLS):
            doomed = CaptureProcess(driver.capture, config, login=driver.login)
            time.sleep(rng.uniform(0.5, 4.0))  # starting, snapshotting or streaming
            outage = OUTAGES[run] if run < len(OUTAGES) else ""
            if outage:  # at start an unreachable source or Kafka is fatal, by design: not now
                doomed.wait_for(lambda s: s["phase"] in ("snapshot", "streaming"))
            if outage == "database crash":
                driver.crash_database()
            elif outage == "broker restart":
                driver.capture.kafka.restart()
            if outage:  # the capture rides it out and goes on before it is killed
                time.sleep(rng.uniform(1.0, 3.0))
            assert doomed.process.poll() is None, (
                f"capture exited with {doomed.process.returncode} (after: {outage or 'no outage'})"
            )
            doomed.kill()
        last = CaptureProcess(driver.capture, config, login=driver.login)
        # the snapshot done (by this process, or by one killed after it finished)
        last.wait_for(
            lambda s: s["phase"] == "streaming" and not s["snapshot"]["running"], timeout=300
        )
    finally:
        stop.set()
        writer.join(60)
    sentinel = next_id[0]
    driver.run(driver.insert(table, (sentinel, "sentinel")))
    driver.wait_for_events(table, lambda ev: any(e.key == {"id": sentinel} for e in ev))
    last.stop()

    committed = driver.capture.events(driver.topic(table))
    assert replay(committed) == driver.rows(table), f"a change was lost (seed {seed})"
    assert _repeated(committed) == [], f"changes delivered twice (seed {seed})"
    reads = snapshot_reads(committed)
    assert reads and max(reads.values()) == 1, f"a row's snapshot read twice (seed {seed})"
