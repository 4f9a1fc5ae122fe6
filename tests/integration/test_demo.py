"""`cdcflow demo`, the README's first command, runs the whole path on throwaway servers."""

from __future__ import annotations

import os
import subprocess
import sys


def test_demo_shows_events_in_kafka_and_delta_tables_equal_to_the_source() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "cdcflow.operator.cli", "demo"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "Change events in Kafka" in out
    for op in (" r ", " c ", " u ", " d ", "tombstone", "BEGIN", "END"):
        assert op in out, f"{op!r} missing from:\n{out}"
    assert "10 events" in out
    assert "Delta table public_orders" in out
    assert "equal: every Delta table holds its source table's rows" in out
