"""`cdcflow demo`, the README's first command, runs the whole path on throwaway servers.

The demo runs as a user runs it, once per source (``--source postgresql``, the default, and
``--source mariadb``). Each run starts its own database, Kafka and Spark, so the two are
started together and overlap: the second source costs little more wall time than the first.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

TIMEOUT = 600
NAMESPACES = {"postgresql": "public", "mariadb": "inventory"}
"""Each source's schema or database of the sample tables: the middle part of its topics."""
LABELS = {"postgresql": "PostgreSQL", "mariadb": "MariaDB"}


@dataclass(frozen=True)
class DemoRun:
    """One ``cdcflow demo --source …`` process, its output going to files."""

    process: subprocess.Popen[bytes]
    stdout: Path
    stderr: Path

    def finish(self) -> tuple[int, str, str]:
        """Wait for the process; its exit code, stdout and stderr."""
        code = self.process.wait(TIMEOUT)
        return code, self.stdout.read_text(), self.stderr.read_text()

    def stop(self) -> None:
        """Interrupt a run that is still going, so it stops its servers, then kill it."""
        if self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _start(source: str, folder: Path) -> DemoRun:
    stdout, stderr = folder / f"{source}.out", folder / f"{source}.err"
    with stdout.open("wb") as out, stderr.open("wb") as err:
        process = subprocess.Popen(
            [sys.executable, "-m", "cdcflow.operator.cli", "demo", "--source", source],
            stdout=out,
            stderr=err,
            env={**os.environ, "COLUMNS": "200"},
        )
    return DemoRun(process, stdout, stderr)


@pytest.fixture(scope="module")
def demo_runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, DemoRun]]:
    """Both sources' demos, started at once."""
    folder = tmp_path_factory.mktemp("demo")
    runs = {source: _start(source, folder) for source in NAMESPACES}
    try:
        yield runs
    finally:
        for run in runs.values():
            run.stop()


@pytest.mark.parametrize("source", list(NAMESPACES))
def test_demo_shows_events_in_kafka_and_delta_tables_equal_to_the_source(
    demo_runs: dict[str, DemoRun], source: str
) -> None:
    code, out, err = demo_runs[source].finish()
    assert code == 0, out + err
    namespace = NAMESPACES[source]
    assert f"✓ {LABELS[source]} on 127.0.0.1:" in out
    assert "Change events in Kafka" in out
    for topic in (f"demo.{namespace}.customers", f"demo.{namespace}.orders", "demo.transaction"):
        assert topic in out, f"{topic!r} missing from:\n{out}"
    for op in (" r ", " c ", " u ", " d ", "tombstone", "BEGIN", "END"):
        assert op in out, f"{op!r} missing from:\n{out}"
    assert "10 events" in out
    assert f"Delta table {namespace}_orders" in out
    assert "equal: every Delta table holds its source table's rows" in out
