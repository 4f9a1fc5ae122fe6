"""Chunked initial snapshots (``snapshot.strategy=chunked``), for every connector kind.

The table is read in primary-key chunks between watermarks in the log while rows keep
changing, and the capture is killed with SIGKILL right after a chunk's rows were handed to
Kafka and before the offset covering them was stored. The next start must resume at that
chunk, not at zero; with exactly-once on, a ``read_committed`` consumer then sees each row's
snapshot read once and the replayed topic equals the table; a ``read_uncommitted`` one shows
what was read twice: at most the chunk in flight.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import orjson

from tests.plugins.fix_capture import CaptureProcess, Event
from tests.plugins.fix_conformance import ConnectorDriver, exactly_once
from tests.plugins.workload import fill, replay, snapshot_reads, write_randomly

PLAIN = {"key.converter.schemas.enable": False, "value.converter.schemas.enable": False}
ROWS = 12_000
CHUNK = 500
KILLED_AFTER_CHUNKS = 8


def test_a_killed_chunked_snapshot_resumes_at_its_chunk_and_the_topic_equals_the_table(
    driver: ConnectorDriver,
) -> None:
    _kill_a_chunked_snapshot_and_resume(
        driver, **{"signal.data.collection": driver.signal_table("chunked_signal")}
    )


def test_a_read_only_chunked_snapshot_writes_nothing_and_resumes_the_same(
    read_only_driver: ConnectorDriver,
) -> None:
    """``read.only``: the chunks are bracketed by log positions; there is no signal table for
    the connector to write to at all."""
    _kill_a_chunked_snapshot_and_resume(read_only_driver, **{"read.only": True})


def _kill_a_chunked_snapshot_and_resume(driver: ConnectorDriver, **watermarks: Any) -> None:
    table = driver.table("chunked")
    driver.create_table(table)
    fill(driver, table, rows=ROWS, batch=CHUNK)
    properties = {
        **PLAIN,
        **watermarks,
        "snapshot.strategy": "chunked",
        "incremental.snapshot.chunk.size": CHUNK,
        "offset.flush.interval.ms": 300,
    }
    config = driver.capture.write_yaml(exactly_once(driver, [table], **properties))
    stop, next_id = threading.Event(), [ROWS + 1]
    writer = threading.Thread(
        target=write_randomly,
        args=(driver, table),
        kwargs={"seed": 11, "stop": stop, "next_id": next_id},
    )
    writer.start()
    try:
        killed = CaptureProcess(
            driver.capture, config, f"chunk-closed:{KILLED_AFTER_CHUNKS}", login=driver.login
        )
        assert killed.exit_code() == 137
        resumed = CaptureProcess(driver.capture, config, login=driver.login)
        first = resumed.wait_for(lambda s: s["snapshot"]["tables"])["snapshot"]["tables"]
        done = resumed.wait_for(lambda s: s["snapshot"]["completed"], timeout=300)
    finally:
        stop.set()
        writer.join(60)
    sentinel = next_id[0]
    driver.run(driver.insert(table, (sentinel, "sentinel")))
    driver.wait_for_events(table, lambda ev: any(e.key == {"id": sentinel} for e in ev))
    resumed.stop()

    # the resumed run reported the chunks read before the kill at once (kubectl's percentage);
    # rows deleted while their chunk was open are not counted
    (progress,) = first.values()
    assert progress["rowsScanned"] >= (KILLED_AFTER_CHUNKS - 2) * CHUNK, first
    assert done["phase"] == "streaming"

    committed = driver.capture.events(driver.topic(table))
    assert replay(committed) == driver.rows(table), "the topic replays to the table"
    reads = snapshot_reads(committed)
    assert max(reads.values()) == 1, "each row's snapshot read is committed once"
    assert sum(reads.values()) >= ROWS // 2, "the snapshot read the table"
    markers = [e.payload["source"]["snapshot"] for e in committed if e.op == "r"]
    assert (markers[0], markers[-1]) == ("first", "last")
    everything = snapshot_reads(
        driver.capture.events(driver.topic(table), isolation="read_uncommitted")
    )
    read_again = sum(everything.values()) - len(everything)
    assert read_again <= CHUNK, f"{read_again} rows read again: more than the chunk in flight"


def _window_positions(events: list[Event]) -> set[bytes]:
    """Where each snapshot read was emitted: the close watermark's position in the log, which
    the rows of one window share (the table's own fields and the marker aside)."""
    own = {"table", "schema", "db", "snapshot"}
    return {
        orjson.dumps({k: v for k, v in e.payload["source"].items() if k not in own})
        for e in events
        if e.op == "r"
    }


def test_snapshot_max_threads_reads_a_chunk_of_several_tables_in_one_window(
    driver: ConnectorDriver,
) -> None:
    tables = [driver.table(f"parallel{n}") for n in range(3)]
    for n, table in enumerate(tables):
        driver.create_table(table)
        rows = ((i, f"{table} {i}") for i in range(1, 1_001 + 500 * n))
        driver.run(driver.insert(table, *rows))
    properties = {
        **PLAIN,
        "snapshot.strategy": "chunked",
        "snapshot.max.threads": 3,
        "signal.data.collection": driver.signal_table("parallel_signal"),
        "incremental.snapshot.chunk.size": 200,
    }
    running = driver.start(tables, **properties)
    try:
        topics = {
            table: driver.wait_for_events(
                table, lambda ev, t=table: len(snapshot_reads(ev)) == len(driver.rows(t))
            )
            for table in tables
        }
    finally:
        running.stop()
    for table, events in topics.items():
        assert replay(events) == driver.rows(table)
    windows = [_window_positions(events) for events in topics.values()]
    assert windows[0] & windows[1] & windows[2], "the three tables shared their first windows"
    markers = [e.payload["source"]["snapshot"] for ev in topics.values() for e in ev]
    assert markers.count("first") == 1 and markers.count("last") == 1


def test_read_only_incremental_snapshots_take_signals_from_kafka_and_the_signal_endpoint(
    read_only_driver: ConnectorDriver,
) -> None:
    """Signals without a signal table: through Kafka, and through ``POST /signals`` (what a
    CdcSnapshotSignal resource uses), each snapshot correct under concurrent writes."""
    from confluent_kafka import Producer

    driver = read_only_driver
    table = driver.table("readonly")
    driver.create_table(table)
    fill(driver, table, rows=3_000, batch=CHUNK)
    running = driver.start(
        [table],
        **PLAIN,
        **{
            "read.only": True,
            "signal.enabled.channels": "kafka",
            "snapshot.mode": driver.modes_streaming_from_now[0],
            "incremental.snapshot.chunk.size": CHUNK,
        },
    )
    stop, next_id = threading.Event(), [3_001]
    writer = threading.Thread(
        target=write_randomly,
        args=(driver, table),
        kwargs={"seed": 5, "stop": stop, "next_id": next_id},
    )
    writer.start()
    request = {"data-collections": [driver.topic(table)], "type": "INCREMENTAL"}
    try:
        producer = Producer({"bootstrap.servers": driver.capture.kafka.bootstrap_servers})
        document = {"id": "via-kafka", "type": "execute-snapshot", "data": request}
        producer.produce(f"{driver.name}-signal", orjson.dumps(document), driver.name.encode())
        producer.flush(30)
        _wait_for_signal(running, "via-kafka")
        assert running.engine.send_signal(
            "via-http", "execute-snapshot", orjson.dumps(request).decode()
        )
        assert not running.engine.send_signal("via-http", "execute-snapshot", "{}"), "once"
        _wait_for_signal(running, "via-http")
    finally:
        stop.set()
        writer.join(60)
    sentinel = next_id[0]
    driver.run(driver.insert(table, (sentinel, "sentinel")))
    events = driver.wait_for_events(table, lambda ev: any(e.key == {"id": sentinel} for e in ev))
    running.stop()

    assert replay(events) == driver.rows(table), "the topic replays to the table"
    reads = snapshot_reads(events)
    assert max(reads.values()) <= 2 and sum(reads.values()) >= 3_000, "two snapshots read it"


def _wait_for_signal(running: Any, signal_id: str, timeout_s: float = 180) -> None:
    deadline = time.monotonic() + timeout_s
    while (entry := running.engine.stats.signals.get(signal_id)) is None or entry[
        "status"
    ] != "COMPLETED":
        if running.errors:
            raise running.errors[0]
        assert time.monotonic() < deadline, f"signal {signal_id}: {entry}"
        time.sleep(0.1)
