"""Fixture plugin: run the capture engine in-process against the real PostgreSQL and Kafka.

Each test gets its own connector name, which is also its slot, publication and topic prefix,
so tests never see each other's changes. The publication is ``filtered`` to the tables the
test names: a ``FOR ALL TABLES`` publication would make PostgreSQL refuse updates on other
tests' tables that have no replica identity.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from cdcflow.capture.assembly import build_engine
from cdcflow.capture.connector_resource import CdcConnector
from cdcflow.capture.credentials import Login
from cdcflow.capture.engine import Engine
from cdcflow.operator.devservices.kafka import KafkaBroker
from cdcflow.operator.devservices.postgres import PostgresServer
from cdcflow.operator.devservices.processes import free_port
from tests.plugins.fix_kafka import read_topic_to_end
from tests.plugins.fix_postgres import query_rows, run_sql


@dataclass
class Event:
    """One Kafka record decoded: JSON key and value (None for tombstones) and headers."""

    key: Any
    value: Any
    headers: dict[str, bytes]

    @property
    def payload(self) -> Any:
        """The value's payload, whether or not it carries a Connect schema."""
        if isinstance(self.value, dict) and "payload" in self.value and "schema" in self.value:
            return self.value["payload"]
        return self.value

    @property
    def op(self) -> str | None:
        return None if self.payload is None else self.payload.get("op")


def eventually(value: Callable[[], Any], *, timeout_s: float = 30, what: str = "it") -> Any:
    """``value()`` once it is not None, polled for up to ``timeout_s`` seconds."""
    deadline = time.monotonic() + timeout_s
    while (found := value()) is None:
        assert time.monotonic() < deadline, f"{what} did not come in {timeout_s} s"
        time.sleep(0.05)
    return found


@dataclass
class RunningEngine:
    engine: Engine
    thread: threading.Thread
    errors: list[BaseException] = field(default_factory=list)

    def wait_for_phase(self, phase: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.errors:
                raise self.errors[0]
            if self.engine.stats.phase == phase:
                return
            if not self.thread.is_alive():
                break
            time.sleep(0.05)
        raise AssertionError(f"engine did not reach {phase}; it is {self.engine.stats.phase}")

    def stop(self, timeout: float = 30) -> None:
        self.engine.stop.set()
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "engine did not stop"
        if self.errors:
            raise self.errors[0]


class CaptureProcess:
    """``cdcflow capture`` as a real child process, observable through /status."""

    def __init__(
        self,
        capture: CaptureHarness,
        config: Path,
        crash_point: str = "",
        login: Login | None = None,
    ) -> None:
        self.port = free_port()
        env = capture.cli_environment()
        if login is not None:
            env |= {
                "CDCFLOW_DATABASE_USER": login.user,
                "CDCFLOW_DATABASE_PASSWORD": login.password,
            }
        if crash_point:
            env["CDCFLOW_CRASH_POINT"] = crash_point
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "cdcflow.operator.cli",
                "capture",
                "-f",
                str(config),
                "--offsets-file",
                str(capture.offsets_path),
                "--status-port",
                str(self.port),
                "--log-level",
                "WARNING",
            ],
            env=env,
        )
        capture.processes.append(self)  # killed at the test's end if still running

    def status(self) -> dict[str, Any] | None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/status", timeout=2) as r:
                return dict(json.load(r))
        except OSError:
            return None

    def wait_for(self, predicate: Any, timeout: float = 120) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.process.poll() is None, f"capture exited with {self.process.returncode}"
            status = self.status()
            if status is not None and predicate(status):
                return status
            time.sleep(0.1)
        raise AssertionError("capture never reached the expected state")

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(30)

    def exit_code(self, timeout: float = 120) -> int:
        return self.process.wait(timeout)

    def stop(self, timeout: float = 60) -> None:
        """SIGTERM, as Kubernetes stops a pod: the capture must exit 0 with offsets flushed."""
        self.process.send_signal(signal.SIGTERM)
        assert self.exit_code(timeout) == 0


def assert_clean_failure(
    result: subprocess.CompletedProcess[str], *fragments: str, secret: str
) -> None:
    """``cdcflow capture`` failed as a user must see it fail: a non-zero exit, a message with
    each of ``fragments``, no traceback, never the ``secret`` it was given."""
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "Traceback" not in output, output
    assert secret not in output
    for fragment in fragments:
        assert fragment in output, output


@dataclass
class CaptureHarness:
    """Creates tables, connector resources and engines for one test."""

    postgres: PostgresServer
    kafka: KafkaBroker
    workdir: Path
    name: str
    running: list[RunningEngine] = field(default_factory=list)
    processes: list[CaptureProcess] = field(default_factory=list)

    def sql(self, *statements: str) -> None:
        run_sql(self.postgres, *statements)

    def query(self, statement: str) -> list[tuple[Any, ...]]:
        return query_rows(self.postgres, statement)

    def table(self, stem: str) -> str:
        """A table name unique to this test."""
        return f"{self.name}_{stem}"

    def resource(self, tables: list[str], **config: Any) -> CdcConnector:
        include = ",".join(f"public\\.{table}" for table in tables)
        properties = {
            "topic.prefix": self.name,
            "slot.name": self.name,
            "publication.name": self.name,
            "publication.autocreate.mode": "filtered",
            "table.include.list": include,
            "offset.flush.interval.ms": 200,
            "poll.interval.ms": 100,
            **config,
        }
        return CdcConnector.model_validate(
            {
                "apiVersion": "cdcflow.io/v1alpha1",
                "kind": "CdcConnector",
                "metadata": {"name": self.name.replace("_", "-")},
                "spec": {
                    "source": {
                        "postgresql": {
                            "host": self.postgres.host,
                            "port": self.postgres.port,
                            "database": self.postgres.database,
                        }
                    },
                    "kafka": {"bootstrapServers": self.kafka.bootstrap_servers},
                    "config": properties,
                },
            }
        )

    def write_yaml(self, resource: CdcConnector) -> Path:
        """The resource as the YAML file a user would pass to ``cdcflow capture -f``."""
        path = self.workdir / "connector.yaml"
        path.write_text(yaml.safe_dump(resource.model_dump(by_alias=True, exclude_none=True)))
        return path

    def cli_environment(self) -> dict[str, str]:
        """Environment for a ``cdcflow capture`` subprocess logging in as the superuser."""
        return {
            **os.environ,
            "CDCFLOW_DATABASE_USER": self.postgres.superuser,
            "CDCFLOW_DATABASE_PASSWORD": self.postgres.superuser_password,
        }

    @property
    def offsets_path(self) -> Path:
        return self.workdir / "offsets.json"

    def start(
        self,
        resource: CdcConnector,
        *,
        wait_for: str | None = "streaming",
        login: Login | None = None,
    ) -> RunningEngine:
        login = login or Login(self.postgres.superuser, self.postgres.superuser_password)
        engine = build_engine(resource, login=login, offsets_path=self.offsets_path)
        errors: list[BaseException] = []

        def target() -> None:
            try:
                engine.run()
            except BaseException as error:  # surfaced to the test by RunningEngine
                errors.append(error)

        thread = threading.Thread(target=target, daemon=True)
        running = RunningEngine(engine, thread, errors)
        self.running.append(running)
        thread.start()
        if wait_for:
            running.wait_for_phase(wait_for)
        return running

    def events(
        self, topic_suffix: str, *, timeout: float = 30, isolation: str = "read_committed"
    ) -> list[Event]:
        topic = f"{self.name}.{topic_suffix}"
        messages = read_topic_to_end(
            self.kafka.bootstrap_servers, topic, timeout=timeout, isolation=isolation
        )
        return [
            Event(
                key=orjson.loads(m.key()) if m.key() else None,
                value=orjson.loads(m.value()) if m.value() else None,
                headers=dict(m.headers() or []),
            )
            for m in messages
        ]

    def wait_for_events(
        self, topic_suffix: str, predicate: Callable[[list[Event]], bool], timeout: float = 30
    ) -> list[Event]:
        """Read the topic until ``predicate`` holds on its events."""
        deadline = time.monotonic() + timeout
        events: list[Event] = []
        while time.monotonic() < deadline:
            try:
                events = self.events(topic_suffix)
            except (LookupError, RuntimeError, TimeoutError):
                events = []  # topic not created yet, or a leader election in progress
            if predicate(events):
                return events
            time.sleep(0.2)
        raise AssertionError(f"condition not met on {topic_suffix}; got {len(events)} events")

    def cleanup(self) -> None:
        for process in self.processes:
            if process.process.poll() is None:  # a failed test left it running
                process.kill()
        for running in self.running:
            running.engine.stop.set()
            running.thread.join(30)
        self.sql(
            f"SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
            f"WHERE slot_name = '{self.name}' AND NOT active",
            f"DROP PUBLICATION IF EXISTS {self.name}",
        )


@pytest.fixture
def capture(
    postgres_server: PostgresServer, kafka_broker: KafkaBroker, tmp_path: Path
) -> Iterator[CaptureHarness]:
    """A harness for one connector named after a fresh random id."""
    harness = CaptureHarness(
        postgres_server, kafka_broker, tmp_path, name=f"t{uuid.uuid4().hex[:10]}"
    )
    yield harness
    harness.cleanup()
