"""Signal-driven snapshots on real PostgreSQL and Kafka, correct under concurrent writes.

The central property: an incremental snapshot taken while a writer inserts, updates and
deletes random rows leaves a topic whose replay (latest event per key in topic order, deletes
remove) equals the table, also when the connector restarts in the middle.
"""

from __future__ import annotations

import random
import threading
import time
from typing import Any

import orjson
import psycopg

from tests.plugins.fix_capture import CaptureHarness, Event, RunningEngine

ROWS = 200_000


def _setup(capture: CaptureHarness, rows: int) -> tuple[str, str]:
    table, signal = capture.table("big"), capture.table("signal")
    capture.sql(
        f"CREATE TABLE {table} (id int PRIMARY KEY, val int NOT NULL, color text NOT NULL)",
        f"INSERT INTO {table} SELECT g, g, CASE WHEN g % 3 = 0 THEN 'blue' ELSE 'red' END "
        f"FROM generate_series(1, {rows}) g",
        f"CREATE TABLE {signal} (id varchar(64) PRIMARY KEY, type varchar(32) NOT NULL, "
        "data varchar(2048))",
    )
    return table, signal


def _config(signal: str, **extra: Any) -> dict[str, Any]:
    return {
        "signal.data.collection": f"public.{signal}",
        "snapshot.mode": "never",
        "key.converter.schemas.enable": False,
        "value.converter.schemas.enable": False,
        "notification.enabled.channels": "sink,log",
        **extra,
    }


def _signal(
    capture: CaptureHarness, signal: str, signal_id: str, kind: str, data: dict[str, Any]
) -> None:
    text = orjson.dumps(data).decode().replace("'", "''")
    capture.sql(f"INSERT INTO {signal} VALUES ('{signal_id}', '{kind}', '{text}')")


def _status_of(running: RunningEngine, signal_id: str) -> str | None:
    entry = running.engine.stats.signals.get(signal_id)
    return None if entry is None else str(entry["status"])


def _wait_for_status(
    running: RunningEngine, signal_id: str, *statuses: str, timeout: float = 300
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if running.errors:
            raise running.errors[0]
        if _status_of(running, signal_id) in statuses:
            return
        time.sleep(0.1)
    raise AssertionError(f"signal {signal_id} is {_status_of(running, signal_id)}, not {statuses}")


def _writer(dsn: str, table: str, stop: threading.Event, rows: int) -> None:
    rng = random.Random(11)
    next_id = rows + 1
    with psycopg.connect(dsn, autocommit=True) as conn:
        while not stop.is_set():
            with conn.transaction():
                for _ in range(20):
                    choice = rng.random()
                    key = rng.randint(1, next_id - 1)
                    if choice < 0.3:
                        conn.execute(
                            f"INSERT INTO {table} VALUES (%s, %s, 'new')", (next_id, next_id)
                        )
                        next_id += 1
                    elif choice < 0.8:
                        conn.execute(
                            f"UPDATE {table} SET val = val + 1000000 WHERE id = %s", (key,)
                        )
                    else:
                        conn.execute(f"DELETE FROM {table} WHERE id = %s", (key,))
            time.sleep(0.005)


def _replay(events: list[Event]) -> dict[int, int]:
    state: dict[int, int] = {}
    for event in events:
        key = event.key["id"]
        if event.value is None or event.payload["op"] == "d":
            state.pop(key, None)
        else:
            state[key] = event.payload["after"]["val"]
    return state


def _caught_up(capture: CaptureHarness, running: RunningEngine) -> None:
    (target,) = capture.query("SELECT pg_current_wal_lsn() - '0/0'::pg_lsn")[0]
    deadline = time.monotonic() + 120
    while running.engine.stats.offset.get("lsn", 0) < int(target):
        assert time.monotonic() < deadline, "connector did not catch up"
        time.sleep(0.1)


def test_incremental_snapshot_under_concurrent_writes_reproduces_the_table(
    capture: CaptureHarness,
) -> None:
    table, signal = _setup(capture, ROWS)
    resource = capture.resource(
        [table],
        **_config(signal, **{"notification.sink.topic.name": f"{capture.name}.notifications"}),
    )
    running = capture.start(resource)
    stop = threading.Event()
    writer = threading.Thread(target=_writer, args=(capture.postgres.dsn(), table, stop, ROWS))
    writer.start()
    _signal(
        capture, signal, "snap-1", "execute-snapshot", {"data-collections": [f"public.{table}"]}
    )
    try:
        _wait_for_status(running, "snap-1", "COMPLETED")
    finally:
        stop.set()
        writer.join(60)
    _caught_up(capture, running)
    running.stop()

    events = capture.events(f"public.{table}", timeout=120)
    source = dict(capture.query(f"SELECT id, val FROM {table}"))
    assert _replay(events) == source
    reads = [e for e in events if e.value is not None and e.payload["op"] == "r"]
    assert {e.payload["source"]["snapshot"] for e in reads} == {"incremental"}
    assert len(reads) <= ROWS
    notifications = [e.value for e in capture.events("notifications")]
    kinds = [n["type"] for n in notifications]
    assert kinds[0] == "STARTED" and kinds[-1] == "COMPLETED"
    assert "TABLE_SCAN_COMPLETED" in kinds and kinds.count("IN_PROGRESS") >= len(reads) // 1024
    assert {n["additional_data"]["signal_id"] for n in notifications} == {"snap-1"}


def test_incremental_snapshot_resumes_after_a_restart_where_it_stopped(
    capture: CaptureHarness,
) -> None:
    rows = 50_000
    table, signal = _setup(capture, rows)
    resource = capture.resource(
        [table], **_config(signal, **{"incremental.snapshot.chunk.size": 512})
    )
    first = capture.start(resource)
    stop = threading.Event()
    writer = threading.Thread(target=_writer, args=(capture.postgres.dsn(), table, stop, rows))
    writer.start()
    _signal(
        capture, signal, "snap-2", "execute-snapshot", {"data-collections": [f"public.{table}"]}
    )
    try:
        deadline = time.monotonic() + 120
        while sum(first.engine.stats.incremental.get("rowsScanned", {}).values()) < rows // 3:
            assert time.monotonic() < deadline, "snapshot made no progress"
            time.sleep(0.05)
        first.stop()
        (table_progress,) = first.engine.stats.offset["incremental_snapshot"]["collections"]
        resumed_at = table_progress["last_key"]
        second = capture.start(resource)
        _wait_for_status(second, "snap-2", "COMPLETED")
    finally:
        stop.set()
        writer.join(60)
    _caught_up(capture, second)
    second.stop()

    events = capture.events(f"public.{table}", timeout=120)
    assert _replay(events) == dict(capture.query(f"SELECT id, val FROM {table}"))
    reads = [e.key["id"] for e in events if e.value is not None and e.payload["op"] == "r"]
    assert int(resumed_at[0]) > rows // 4
    assert len(reads) < rows * 1.2, "the second run started over instead of resuming"


def test_additional_conditions_snapshot_only_matching_rows(capture: CaptureHarness) -> None:
    table, signal = _setup(capture, 3_000)
    running = capture.start(capture.resource([table], **_config(signal)))
    _signal(
        capture,
        signal,
        "blue-only",
        "execute-snapshot",
        {
            "data-collections": [f"public.{table}"],
            "additional-conditions": [
                {"data-collection": f"public.{table}", "filter": "color = 'blue'"}
            ],
        },
    )
    _wait_for_status(running, "blue-only", "COMPLETED")
    running.stop()

    reads = [e for e in capture.events(f"public.{table}") if e.payload and e.payload["op"] == "r"]
    assert len(reads) == 1_000
    assert {e.payload["after"]["color"] for e in reads} == {"blue"}


def test_stop_snapshot_stops_and_pause_resume_hold_and_continue(capture: CaptureHarness) -> None:
    table, signal = _setup(capture, 20_000)
    resource = capture.resource(
        [table], **_config(signal, **{"incremental.snapshot.chunk.size": 100})
    )
    running = capture.start(resource)
    _signal(capture, signal, "s1", "execute-snapshot", {"data-collections": [f"public.{table}"]})
    _signal(capture, signal, "p1", "pause-snapshot", {})
    _wait_for_status(running, "p1", "PAUSED")
    time.sleep(1.0)
    paused_reads = len(capture.events(f"public.{table}"))
    time.sleep(1.0)
    assert len(capture.events(f"public.{table}")) == paused_reads
    _signal(capture, signal, "r1", "resume-snapshot", {})
    _wait_for_status(running, "r1", "RESUMED")
    _signal(capture, signal, "x1", "stop-snapshot", {"type": "incremental"})
    _wait_for_status(running, "x1", "ABORTED")
    stopped_reads = len(capture.events(f"public.{table}"))
    time.sleep(1.0)
    running.stop()

    assert paused_reads < 20_000
    assert len(capture.events(f"public.{table}")) == stopped_reads < 20_000
    assert running.engine.stats.incremental == {}
    assert running.engine.stats.signals["s1"]["status"] == "ABORTED", "the stopped execute ends"


def test_two_execute_signals_at_once_both_complete(capture: CaptureHarness) -> None:
    table, signal = _setup(capture, 300)
    resource = capture.resource(
        [table], **_config(signal, **{"incremental.snapshot.chunk.size": 100})
    )
    running = capture.start(resource)
    request = {"data-collections": [f"public.{table}"]}
    _signal(capture, signal, "first", "execute-snapshot", request)
    _signal(capture, signal, "second", "execute-snapshot", request)
    _wait_for_status(running, "first", "COMPLETED")
    _wait_for_status(running, "second", "COMPLETED")
    running.stop()


def test_malformed_signals_are_reported_and_streaming_continues(capture: CaptureHarness) -> None:
    table, signal = _setup(capture, 10)
    running = capture.start(capture.resource([table], **_config(signal)))
    capture.sql(f"INSERT INTO {signal} VALUES ('bad-json', 'execute-snapshot', '{{nope')")
    capture.sql(f"INSERT INTO {signal} VALUES ('bad-type', 'make-coffee', '{{}}')")
    _signal(capture, signal, "bad-table", "execute-snapshot", {"data-collections": ["public.nope"]})
    _signal(
        capture,
        signal,
        "bad-sql",
        "execute-snapshot",
        {"data-collections": [f"public.{table}"], "additional-condition": "no_such_column = 1"},
    )
    capture.sql(f"INSERT INTO {table} VALUES (1000, 1000, 'after')")
    events = capture.wait_for_events(
        f"public.{table}", lambda ev: any(e.key["id"] == 1000 for e in ev)
    )
    _wait_for_status(running, "bad-sql", "COMPLETED")
    running.stop()

    signals = running.engine.stats.signals
    assert signals["bad-json"]["status"] == "REJECTED"
    assert "not valid JSON" in signals["bad-json"]["events"][0]["reason"]
    assert "unknown signal type 'make-coffee'" in signals["bad-type"]["events"][0]["reason"]
    assert "no captured table matches" in signals["bad-table"]["events"][0]["reason"]
    scan = [e for e in signals["bad-sql"]["events"] if e["type"] == "TABLE_SCAN_COMPLETED"]
    assert scan[0]["status"] == "SQL_EXCEPTION" and "no_such_column" in scan[0]["reason"]
    assert [e.payload["op"] for e in events] == ["c"]


def test_blocking_snapshot_reads_the_table_while_streaming_waits(capture: CaptureHarness) -> None:
    table, signal = _setup(capture, 2_500)
    running = capture.start(capture.resource([table], **_config(signal)))
    _signal(
        capture,
        signal,
        "b1",
        "execute-snapshot",
        {"data-collections": [f"public.{table}"], "type": "blocking"},
    )
    capture.sql(f"UPDATE {table} SET val = -1 WHERE id = 1")
    _wait_for_status(running, "b1", "COMPLETED")
    events = capture.wait_for_events(f"public.{table}", lambda ev: len(ev) >= 2_501)
    running.stop()

    assert [e.payload["op"] for e in events[:2_500]] == ["r"] * 2_500
    assert events[2_500].payload["op"] == "u"
    assert _replay(events)[1] == -1


def test_a_signal_sent_through_kafka_starts_an_incremental_snapshot(
    capture: CaptureHarness,
) -> None:
    from confluent_kafka import Producer

    table, signal = _setup(capture, 1_500)
    topic = f"{capture.name}-signal"
    running = capture.start(
        capture.resource([table], **_config(signal, **{"signal.enabled.channels": "source,kafka"}))
    )
    producer = Producer({"bootstrap.servers": capture.kafka.bootstrap_servers})
    value = {
        "id": "via-kafka",
        "type": "execute-snapshot",
        "data": {"data-collections": [f"public.{table}"], "type": "INCREMENTAL"},
    }
    producer.produce(topic, orjson.dumps(value), capture.name.encode())
    producer.produce(topic, orjson.dumps({**value, "id": "other-connector"}), b"someone-else")
    producer.flush(30)
    _wait_for_status(running, "via-kafka", "COMPLETED", timeout=120)
    running.stop()

    reads = [e for e in capture.events(f"public.{table}") if e.payload and e.payload["op"] == "r"]
    assert len(reads) == 1_500
    assert "other-connector" not in running.engine.stats.signals


def test_signals_posted_to_the_engine_endpoint_are_inserted_once(capture: CaptureHarness) -> None:
    import urllib.request

    from cdcflow.capture.status_server import StatusServer

    table, signal = _setup(capture, 700)
    running = capture.start(capture.resource([table], **_config(signal)))
    server = StatusServer(
        running.engine.stats, host="127.0.0.1", port=0, send_signal=running.engine.send_signal
    )
    body = orjson.dumps(
        {
            "id": "from-http",
            "type": "execute-snapshot",
            "data": {"data-collections": [f"public.{table}"]},
        }
    )

    def post() -> int:
        request = urllib.request.Request(
            f"http://127.0.0.1:{server.port}/signals", data=body, method="POST"
        )
        with urllib.request.urlopen(request, timeout=10) as reply:
            return int(reply.status)

    try:
        first, second = post(), post()
        _wait_for_status(running, "from-http", "COMPLETED", timeout=120)
    finally:
        server.close()
        running.stop()

    assert (first, second) == (201, 200)
    assert capture.query(f"SELECT count(*) FROM {signal} WHERE id = 'from-http'") == [(1,)]
    reads = [e for e in capture.events(f"public.{table}") if e.payload and e.payload["op"] == "r"]
    assert len(reads) == 700
