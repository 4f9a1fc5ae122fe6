"""Operating a connector: observability endpoints, reconnects, and offsets kept in Kafka."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.error
import urllib.request

from cdcflow.capture.kafka.offsets import KafkaOffsetStore
from cdcflow.capture.spi import Offset
from cdcflow.capture.status_server import StatusServer
from cdcflow.operator.devservices.kafka import KafkaBroker
from tests.plugins.fix_capture import CaptureHarness


def _get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_status_metrics_and_probes_describe_a_streaming_connector(capture: CaptureHarness) -> None:
    table = capture.table("observed")
    capture.sql(
        f"CREATE TABLE {table} (id int PRIMARY KEY)", f"INSERT INTO {table} VALUES (1), (2)"
    )
    running = capture.start(capture.resource([table]))
    server = StatusServer(running.engine.stats, host="127.0.0.1", port=0)
    try:
        capture.sql(f"INSERT INTO {table} VALUES (3)")
        capture.wait_for_events(f"public.{table}", lambda ev: len(ev) >= 3)
        deadline = time.monotonic() + 10
        while running.engine.stats.offsets_committed < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        ready, _ = _get(server.port, "/readyz")
        healthy, _ = _get(server.port, "/healthz")
        _, status_text = _get(server.port, "/status")
        _, metrics = _get(server.port, "/metrics")
    finally:
        server.close()
        running.stop()

    status = json.loads(status_text)
    assert (ready, healthy) == (200, 200)
    assert status["phase"] == "streaming" and status["connected"] is True
    assert status["snapshot"]["completed"] is True
    assert status["snapshot"]["tables"][f"public.{table}"]["rowsScanned"] == 2
    assert status["streaming"]["totalEventsSeen"] == 3
    assert status["offset"]["lsn"] > 0
    assert f"{capture.name}.public.{table}" in status["topics"]
    assert f'cdcflow_total_number_of_events_seen_total{{server="{capture.name}"}} 3.0' in metrics
    assert f'cdcflow_rows_scanned{{server="{capture.name}",table="public.{table}"}} 2.0' in metrics
    assert f'cdcflow_snapshot_completed{{server="{capture.name}"}} 1.0' in metrics


def test_a_dropped_replication_connection_reconnects_and_loses_nothing(
    capture: CaptureHarness,
) -> None:
    table = capture.table("reconnect")
    capture.sql(f"CREATE TABLE {table} (id int PRIMARY KEY)")
    resource = capture.resource([table], **{"retriable.restart.connector.wait.ms": 100})
    running = capture.start(resource)
    capture.sql(f"INSERT INTO {table} SELECT g FROM generate_series(1, 100) g")
    capture.wait_for_events(f"public.{table}", lambda ev: len(ev) >= 100)
    capture.sql(
        "SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots "
        f"WHERE slot_name = '{capture.name}'"
    )
    capture.sql(f"INSERT INTO {table} SELECT g FROM generate_series(101, 200) g")
    events = capture.wait_for_events(
        f"public.{table}", lambda ev: {e.key["payload"]["id"] for e in ev} >= set(range(1, 201))
    )
    running.stop()

    assert "replication" in running.engine.stats.last_error
    assert {e.op for e in events} == {"c"}


def test_kafka_offset_store_keeps_the_latest_value_per_connector(kafka_broker: KafkaBroker) -> None:
    def store(connector: str) -> KafkaOffsetStore:
        return KafkaOffsetStore(
            bootstrap_servers=kafka_broker.bootstrap_servers,
            topic="cdcflow-test-offsets",
            connector=connector,
            server="shop",
        )

    def load(connector: str) -> Offset | None:
        reader = store(connector)
        try:
            return reader.load()
        finally:
            reader.close()

    first, other = store("orders"), store("customers")
    try:
        first.save(Offset({"lsn": 10}))
        other.save(Offset({"lsn": 99}))
        first.save(Offset({"lsn": 20}))
        assert load("orders") == Offset({"lsn": 20})
        assert load("customers") == Offset({"lsn": 99})
        first.reset()
        assert load("orders") is None
        assert load("customers") == Offset({"lsn": 99})
    finally:
        first.close()
        other.close()


def test_engine_resumes_from_offsets_kept_in_kafka(capture: CaptureHarness) -> None:
    table = capture.table("kafka_offsets")
    capture.sql(f"CREATE TABLE {table} (id int PRIMARY KEY)", f"INSERT INTO {table} VALUES (1)")
    resource = capture.resource([table]).model_copy(deep=True)
    resource.spec.offsets.store = "kafka"
    first = capture.start(resource)
    capture.sql(f"INSERT INTO {table} VALUES (2)")
    capture.wait_for_events(f"public.{table}", lambda ev: len(ev) >= 2)
    first.stop()
    second = capture.start(resource)
    capture.sql(f"INSERT INTO {table} VALUES (3)")
    events = capture.wait_for_events(f"public.{table}", lambda ev: len(ev) >= 3)
    second.stop()

    assert [(e.op, e.key["payload"]["id"]) for e in events] == [("r", 1), ("c", 2), ("c", 3)]
    assert not capture.offsets_path.exists()


def test_a_value_that_cannot_be_converted_is_null_or_fails_per_the_failure_modes(
    capture: CaptureHarness,
) -> None:
    table = capture.table("nan")
    capture.sql(
        f"CREATE TABLE {table} (id int PRIMARY KEY, amount numeric(10,2), "
        "total numeric(10,2) NOT NULL DEFAULT 0)"
    )
    # cdcflow's default (converting=fail) stops rather than writing a null; the message
    # names the properties that would let it go on.
    stopping = capture.start(capture.resource([table]))
    capture.sql(f"INSERT INTO {table} VALUES (1, 'NaN', 1)")
    stopping.thread.join(30)
    assert stopping.errors, "the connector turned an unconvertible value into something"
    assert "event.converting.failure.handling.mode=warn" in str(stopping.errors[0])
    stopping.errors.clear()

    # Debezium's default (event.converting.failure.handling.mode=warn): the column is null.
    nulling = capture.start(
        capture.resource([table], **{"event.converting.failure.handling.mode": "warn"})
    )
    events = capture.wait_for_events(f"public.{table}", lambda ev: len(ev) >= 1)
    nulling.stop()
    assert events[0].payload["after"] == {"id": 1, "amount": None, "total": "ZA=="}

    # A NOT NULL column cannot be null: the event fails, and so does the connector.
    failing = capture.start(
        capture.resource([table], **{"event.converting.failure.handling.mode": "warn"})
    )
    capture.sql(f"INSERT INTO {table} VALUES (2, 1, 'NaN')")
    failing.thread.join(30)
    assert failing.errors, "the connector kept going on an event it could not convert"
    message = str(failing.errors[0])
    assert "event.processing.failure.handling.mode" in message and "NOT NULL" in message
    failing.errors.clear()

    # converting=fail fails every such event; processing=warn then leaves it out.
    skipping = capture.start(
        capture.resource(
            [table],
            **{
                "event.converting.failure.handling.mode": "fail",
                "event.processing.failure.handling.mode": "warn",
            },
        )
    )
    capture.sql(
        f"INSERT INTO {table} VALUES (3, 'NaN', 1)", f"INSERT INTO {table} VALUES (4, 2.5, 1)"
    )
    events = capture.wait_for_events(
        f"public.{table}", lambda ev: any(e.key["payload"]["id"] == 4 for e in ev)
    )
    skipping.stop()
    assert [e.key["payload"]["id"] for e in events] == [1, 4]


def test_a_value_that_cannot_be_converted_in_the_snapshot_stops_it_with_a_message(
    capture: CaptureHarness,
) -> None:
    table = capture.table("nan_snapshot")
    capture.sql(
        f"CREATE TABLE {table} (id int PRIMARY KEY, amount numeric(10,2))",
        f"INSERT INTO {table} VALUES (1, 'NaN')",
    )
    stopping = capture.start(capture.resource([table]), wait_for=None)
    stopping.thread.join(30)
    assert stopping.errors, "the snapshot turned an unconvertible value into something"
    message = str(stopping.errors[0])
    assert f"snapshot of public.{table} failed" in message
    assert "numeric NaN has no Connect Decimal form" in message
    assert "decimal.handling.mode" in message
    assert ".." not in message and "?." not in message, message
    stopping.errors.clear()


def test_initial_statements_run_on_the_snapshot_connection(capture: CaptureHarness) -> None:
    table = capture.table("initial")
    capture.sql(f"CREATE TABLE {table} (id int PRIMARY KEY, note text)")
    capture.sql(f"INSERT INTO {table} VALUES (1, 'stored')")
    marker = "SET cdcflow.marker = 'a;;b'; SET statement_timeout = 0"
    override = f"SELECT id, current_setting('cdcflow.marker') AS note FROM {table}"
    config = {
        "database.initial.statements": marker,
        "snapshot.select.statement.overrides": f"public.{table}",
        f"snapshot.select.statement.overrides.public.{table}": override,
    }
    running = capture.start(capture.resource([table], **config))
    events = capture.wait_for_events(f"public.{table}", lambda ev: len(ev) >= 1)
    running.stop()
    assert events[0].payload["after"]["note"] == "a;b"


def test_cleanup_refuses_a_slot_in_use_and_drops_it_once_the_connector_stopped(
    capture: CaptureHarness,
) -> None:
    table = capture.table("cleaned")
    capture.sql(f"CREATE TABLE {table} (id int PRIMARY KEY)")
    resource = capture.resource([table])
    config = capture.write_yaml(resource)
    command = [sys.executable, "-m", "cdcflow.operator.cli", "cleanup", "-f", str(config)]
    slot = f"SELECT count(*) FROM pg_replication_slots WHERE slot_name = '{capture.name}'"
    running = capture.start(resource)

    busy = subprocess.run(command, env=capture.cli_environment(), capture_output=True, text=True)
    assert busy.returncode != 0
    assert f"replication slot {capture.name} is still in use" in busy.stderr
    assert "dropped" not in busy.stdout
    assert capture.query(slot) == [(1,)]

    running.stop()
    done = subprocess.run(command, env=capture.cli_environment(), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert f"slot {capture.name}" in done.stdout
    assert f"publication {capture.name}" in done.stdout  # it created it: it drops it
    assert capture.query(slot) == [(0,)]


def test_cleanup_leaves_a_publication_the_connector_did_not_create(
    capture: CaptureHarness,
) -> None:
    table = capture.table("shared")
    shared = f"{capture.name}_shared"
    capture.sql(
        f"CREATE TABLE {table} (id int PRIMARY KEY)",
        f"CREATE PUBLICATION {shared} FOR TABLE {table}",  # another connector's, or a DBA's
    )
    resource = capture.resource([table], **{"publication.name": shared})
    config = capture.write_yaml(resource)
    capture.start(resource).stop()
    command = [sys.executable, "-m", "cdcflow.operator.cli", "cleanup", "-f", str(config)]
    done = subprocess.run(command, env=capture.cli_environment(), capture_output=True, text=True)

    assert done.returncode == 0, done.stderr
    assert f"slot {capture.name}" in done.stdout
    assert "publication" not in done.stdout
    assert f"publication {shared} was not created by this connector" in done.stderr
    published = f"SELECT count(*) FROM pg_publication WHERE pubname = '{shared}'"
    assert capture.query(published) == [(1,)]
