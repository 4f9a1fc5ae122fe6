"""Kill the capture process anywhere: after restarts every committed change is in Kafka.

The process is killed with SIGKILL mid-snapshot and mid-stream, and made to die at the two
dangerous instants of an offset commit (after Kafka acknowledged but before the offset was
saved, and after the save but before the slot was confirmed). Replaying the topic afterwards
(last event per key wins, deletes remove) must reproduce the source table exactly, and every
row ever inserted must have been seen at least once.
"""

from __future__ import annotations

import random
import signal
import threading
import time
from pathlib import Path

import orjson
import psycopg

from tests.plugins.fix_capture import CaptureHarness, CaptureProcess, Event

ROUNDS = 70  # each: 1000 inserts, ~300 updates, ~100 deletes -> ~100k changes in all
PRELOAD = 40_000


def _workload(dsn: str, table: str, done: threading.Event) -> None:
    rng = random.Random(7)
    with psycopg.connect(dsn, autocommit=True) as conn:
        for _ in range(ROUNDS):
            (top,) = conn.execute(f"SELECT coalesce(max(id), 0) FROM {table}").fetchone() or (0,)
            with conn.transaction():
                conn.execute(f"INSERT INTO {table} (val) SELECT g FROM generate_series(1, 1000) g")
                conn.execute(
                    f"UPDATE {table} SET val = val + 1 WHERE id %% 97 = %s AND id <= %s",
                    (rng.randrange(97), top),
                )
                conn.execute(
                    f"DELETE FROM {table} WHERE id %% 211 = %s AND id <= %s",
                    (rng.randrange(211), top),
                )
    done.set()


def _replay(events: list[Event]) -> tuple[dict[int, int], set[int]]:
    state: dict[int, int] = {}
    seen: set[int] = set()
    for event in events:
        key = event.key["id"]
        if event.value is None or event.op == "d":
            state.pop(key, None)
            continue
        state[key] = event.payload["after"]["val"]
        seen.add(key)
    return state, seen


def test_no_committed_change_is_lost_across_kill_9_restarts(capture: CaptureHarness) -> None:
    table = capture.table("orders")
    capture.sql(
        f"CREATE TABLE {table} (id bigserial PRIMARY KEY, val int NOT NULL)",
        f"INSERT INTO {table} (val) SELECT g FROM generate_series(1, {PRELOAD}) g",
    )
    config = capture.write_yaml(
        capture.resource(
            [table],
            **{
                "key.converter.schemas.enable": False,
                "value.converter.schemas.enable": False,
                "offset.flush.interval.ms": 300,
            },
        )
    )

    first = CaptureProcess(capture, config)
    first.wait_for(lambda s: s["phase"] == "snapshot")
    first.kill()  # mid-snapshot: the next start must snapshot again

    second = CaptureProcess(capture, config)
    second.wait_for(lambda s: s["phase"] == "streaming")
    done = threading.Event()
    writer = threading.Thread(target=_workload, args=(capture.postgres.dsn(), table, done))
    writer.start()
    time.sleep(1.5)
    second.kill()  # mid-stream, most likely mid-transaction

    for point in ("after-flush:3", "after-offset-save:3"):
        crashing = CaptureProcess(capture, config, crash_point=point)
        assert crashing.exit_code() == 137

    final = CaptureProcess(capture, config)
    writer.join(600)
    assert done.is_set()
    (target,) = capture.query("SELECT pg_current_wal_lsn() - '0/0'::pg_lsn")[0]
    final.wait_for(lambda s: s["offset"].get("lsn", 0) >= int(target), timeout=300)
    final.process.send_signal(signal.SIGTERM)
    assert final.exit_code(60) == 0

    events = capture.events(f"public.{table}", timeout=120)
    state, seen = _replay(events)
    source = dict(capture.query(f"SELECT id, val FROM {table}"))
    (max_id,) = capture.query(f"SELECT max(id) FROM {table}")[0]
    assert len(source) > PRELOAD
    assert state == source
    assert seen >= set(source)
    assert set(range(1, int(max_id) + 1)) - seen == set()
    saved = orjson.loads(Path(capture.offsets_path).read_bytes())["value"]
    assert "snapshot" not in saved
