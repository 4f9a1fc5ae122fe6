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
    table = driver.table("chunked")
    driver.create_table(table)
    fill(driver, table, rows=ROWS, batch=CHUNK)
    properties = {
        **PLAIN,
        "snapshot.strategy": "chunked",
        "signal.data.collection": driver.signal_table("chunked_signal"),
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
