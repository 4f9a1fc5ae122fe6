"""Exactly once into Kafka (``exactly.once.support=required``), for every connector kind.

The capture is killed with SIGKILL at the instants where an at-least-once connector repeats
changes — after Kafka acknowledged records but before their offset was stored, and inside a
large transaction — while rows keep arriving. A ``read_committed`` consumer must then see
every change exactly once; a ``read_uncommitted`` one (as every consumer of an at-least-once
connector) sees the records of the killed transactions again, which proves the kills hit
records in flight. A second producer of the same connector fences the first.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections import Counter

import orjson
import pytest

from cdcflow.capture.errors import FatalError
from cdcflow.capture.kafka.producer import KafkaSink
from cdcflow.capture.spi import Record
from cdcflow.operator.devservices.kafka import KafkaBroker
from tests.plugins.fix_capture import CaptureProcess, Event
from tests.plugins.fix_conformance import ConnectorDriver, exactly_once

PLAIN = {"key.converter.schemas.enable": False, "value.converter.schemas.enable": False}
LARGE_TRANSACTION = 2000


def _creates(events: list[Event]) -> Counter[int]:
    return Counter(e.key["id"] for e in events if e.value is not None and e.op in ("c", "r"))


def test_kills_at_every_commit_instant_deliver_each_change_exactly_once(
    driver: ConnectorDriver,
) -> None:
    table = driver.table("eos")
    driver.create_table(table, ((1, "snapshot"),))
    resource = exactly_once(driver, [table], **PLAIN, **{"offset.flush.interval.ms": 300})
    config = driver.capture.write_yaml(resource)
    next_id = 2

    def process(crash_point: str = "") -> CaptureProcess:
        return CaptureProcess(driver.capture, config, crash_point, login=driver.login)

    # The snapshot first, with no writes: a Db2 snapshot taken under writes may read a row
    # whose change the agent captures after the snapshot's position (a read and a create).
    first = process()
    first.wait_for(lambda s: s["phase"] == "streaming")
    first.stop()
    for point in ("after-flush:2", "after-flush:3", "after-offset-save:2"):
        crashing = process(point)  # acknowledged by Kafka, offset not stored; stored
        for _ in range(300):
            if crashing.process.poll() is not None:
                break
            driver.run(driver.insert(table, (next_id, point)))
            next_id += 1
            time.sleep(0.05)
        assert crashing.exit_code() == 137

    inside = process()  # inside a large transaction
    inside.wait_for(lambda s: s["phase"] == "streaming")
    seen = inside.wait_for(lambda s: True)["streaming"]["totalEventsSeen"]
    large = [(i, "large") for i in range(next_id, next_id + LARGE_TRANSACTION)]
    next_id += LARGE_TRANSACTION
    writer = threading.Thread(target=driver.run_atomically, args=(driver.insert(table, *large),))
    writer.start()
    inside.wait_for(lambda s: s["streaming"]["totalEventsSeen"] > seen + 300)
    inside.kill()
    writer.join(60)

    last = process()
    driver.run(driver.insert(table, (next_id, "sentinel")))
    driver.wait_for_events(table, lambda ev: any(e.key == {"id": next_id} for e in ev))
    last.stop()

    committed = _creates(driver.capture.events(driver.topic(table)))
    assert set(committed) == set(range(1, next_id + 1)), "every change arrived"
    assert max(committed.values()) == 1, f"repeated: {[k for k, n in committed.items() if n > 1]}"
    everything = _creates(driver.capture.events(driver.topic(table), isolation="read_uncommitted"))
    assert sum(everything.values()) > sum(committed.values()), "the kills hit records in flight"
    shown = subprocess.run(  # the committed offset, as a user inspects it
        [sys.executable, "-m", "cdcflow.operator.cli", "offsets", "show", "-f", str(config)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert orjson.loads(shown.stdout), shown.stderr


def test_a_second_producer_of_a_connector_fences_the_first(
    kafka_broker: KafkaBroker, kafka_topic: str
) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    first = KafkaSink(bootstrap_servers=bootstrap, transactional_id="cdcflow-test-fencing")
    second = KafkaSink(bootstrap_servers=bootstrap, transactional_id="cdcflow-test-fencing")
    try:
        first.write(Record(kafka_topic, b"k", b"first"))
        first.commit_transaction()
        second.start_transactions()  # a restarted or duplicate capture process
        first.write(Record(kafka_topic, b"k", b"zombie"))
        with pytest.raises(FatalError, match="another capture process of this connector"):
            first.flush()
            first.commit_transaction()
        second.write(Record(kafka_topic, b"k", b"second"))
        second.commit_transaction()
    finally:
        first.close()
        second.close()
