"""The log budget: each connector's judgement of the log it holds back, how the engine reports
it (``/status``, ``/metrics``) and how the operator shows it (``LogSafe``, ``PositionLost``)."""

from __future__ import annotations

import urllib.request
from datetime import UTC, datetime
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from cdcflow.capture.connectors.db2 import log_budget as db2
from cdcflow.capture.connectors.db2.lsn import Lsn
from cdcflow.capture.connectors.db2.tables import Registration
from cdcflow.capture.connectors.mysql import binlog
from cdcflow.capture.connectors.mysql import log_budget as mysql
from cdcflow.capture.connectors.postgres import checks
from cdcflow.capture.connectors.postgres import log_budget as postgres
from cdcflow.capture.errors import POSITION_LOST, PositionLostError
from cdcflow.capture.log_budget import LogBudget, LogBudgetWatch, LogState, size
from cdcflow.capture.spi import Offset, TableId
from cdcflow.capture.stats import Stats
from cdcflow.capture.status_server import StatusServer
from cdcflow.operator import connector_status
from tests.unit.test_operator_builders import _connector, _reasons

MIB = 1024 * 1024


def test_a_slot_within_its_keep_size_is_ok_and_says_how_much_may_still_be_written() -> None:
    budget = postgres.judge(
        slot="orders",
        wal_status="reserved",
        safe_bytes=900 * MIB,
        retained_bytes=100 * MIB,
        keep_bytes=1024 * MIB,
        restart_lsn="0/5000000",
    )
    assert budget.state is LogState.OK
    assert (budget.retained_bytes, budget.safe_bytes) == (100 * MIB, 900 * MIB)
    assert "100.0 MiB" in budget.message and "900.0 MiB more" in budget.message
    assert budget.oldest_needed == "0/5000000"


def test_a_slot_near_its_keep_size_warns_before_the_server_invalidates_it() -> None:
    near = postgres.judge(
        slot="orders",
        wal_status="extended",
        safe_bytes=200 * MIB,
        retained_bytes=824 * MIB,
        keep_bytes=1024 * MIB,
    )
    over = postgres.judge(
        slot="orders",
        wal_status="unreserved",
        safe_bytes=0,
        retained_bytes=2048 * MIB,
        keep_bytes=1024 * MIB,
    )
    assert near.state is LogState.WARNING
    assert over.state is LogState.WARNING and "next checkpoint invalidates it" in over.message


def test_an_invalidated_slot_is_lost_and_an_unlimited_one_says_the_disk_is_the_limit() -> None:
    lost = postgres.judge(
        slot="orders", wal_status="lost", safe_bytes=None, retained_bytes=None, keep_bytes=MIB
    )
    unlimited = postgres.judge(
        slot="orders",
        wal_status="extended",
        safe_bytes=None,
        retained_bytes=50 * MIB,
        keep_bytes=None,
    )
    assert lost.state is LogState.LOST and "invalidated" in lost.message
    assert unlimited.state is LogState.OK and unlimited.safe_bytes is None
    assert "until the disk fills" in unlimited.message


FILES = [("bin.000007", 1000), ("bin.000008", 2000), ("bin.000009", 500)]


def test_binlog_retained_counts_from_the_position_to_the_end_of_the_newest_file() -> None:
    budget = mysql.judge(FILES, needed_file="bin.000008", needed_pos=400, expire_seconds=86400)
    assert budget.state is LogState.OK
    assert budget.retained_bytes == 2000 - 400 + 500
    assert (budget.oldest_needed, budget.oldest_kept) == ("bin.000008", "bin.000007")


def test_needing_the_oldest_binlog_warns_and_needing_a_purged_one_is_lost() -> None:
    oldest = mysql.judge(FILES, needed_file="bin.000007", needed_pos=4, expire_seconds=3600)
    purged = mysql.judge(FILES, needed_file="bin.000006", needed_pos=4, expire_seconds=3600)
    caught_up = mysql.judge(FILES[2:], needed_file="bin.000009", needed_pos=500, expire_seconds=0)
    assert oldest.state is LogState.WARNING and "next purge" in oldest.message
    assert purged.state is LogState.LOST and "bin.000007" in purged.message
    assert caught_up.state is LogState.OK and caught_up.retained_bytes == 0


def _registration(name: str, start: int | None) -> Registration:
    return Registration(
        table=TableId("DB2INST1", name),
        cd_schema="ASNCDC",
        cd_table=f"CD{name}",
        active=True,
        start=None if start is None else Lsn.from_int(start),
    )


def test_db2_unread_change_rows_warn_as_they_near_the_retention_limit() -> None:
    captured = [_registration("A", 10), _registration("B", None)]
    fresh = db2.judge(
        position=Lsn.from_int(50), captured=captured, unread_age_s=60, retention_min=60
    )
    old = db2.judge(
        position=Lsn.from_int(50), captured=captured, unread_age_s=46 * 60, retention_min=60
    )
    read = db2.judge(
        position=Lsn.from_int(50),
        captured=captured,
        unread_age_s=0,
        retention_min=60,
        agent_at=datetime(2026, 1, 1, tzinfo=UTC),
    )
    assert fresh.state is LogState.OK and "captured 60 s ago" in fresh.message
    assert old.state is LogState.WARNING
    assert read.state is LogState.OK and "every change row is read" in read.message
    assert read.oldest_kept == str(Lsn.from_int(10))


def test_db2_change_rows_that_begin_after_the_position_are_lost() -> None:
    budget = db2.judge(
        position=Lsn.from_int(50),
        captured=[_registration("A", 10), _registration("B", 70)],
        unread_age_s=0,
        retention_min=60,
    )
    assert budget.state is LogState.LOST and "DB2INST1.B" in budget.message


@pytest.mark.parametrize(
    "error",
    [
        checks.slot_invalidated("orders"),
        binlog.purged("the stored offset resumes in binlog file bin.000001"),
    ],
    ids=["slot invalidated", "binlog purged"],
)
def test_a_lost_position_names_what_happened_and_every_way_on(error: PositionLostError) -> None:
    message = str(error)
    assert message.startswith(POSITION_LOST)
    assert "snapshot.mode=when_needed" in message and "cdcflow offsets reset" in message
    assert "Next time:" in message and "LogSafe" in message


def test_the_watch_keeps_the_budget_for_the_last_committed_offset_and_survives_errors() -> None:
    stats = Stats(connector="c", server="s")
    stats.offset = {"file": "bin.000008", "pos": 4}
    asked: list[Offset | None] = []

    def probe(offset: Offset | None) -> LogBudget:
        asked.append(offset)
        return mysql.judge(FILES, needed_file="bin.000008", needed_pos=4, expire_seconds=0)

    watch = LogBudgetWatch(probe, stats, interval_s=60)
    assert watch.check() is not None
    assert asked[0] is not None and asked[0].get("file") == "bin.000008"
    assert stats.log_budget is not None and stats.log_budget["state"] == "ok"

    def failing(_offset: Offset | None) -> LogBudget:
        raise ConnectionError("server gone")

    assert LogBudgetWatch(failing, stats, interval_s=60).check() is None
    assert stats.log_budget["retainedBytes"] == 2000 - 4 + 500  # the last answer stays


def test_status_and_metrics_carry_the_budget() -> None:
    stats = Stats(connector="c", server="s")
    budget = postgres.judge(
        slot="orders",
        wal_status="extended",
        safe_bytes=100 * MIB,
        retained_bytes=900 * MIB,
        keep_bytes=1024 * MIB,
    )
    stats.log_budget = budget.status()
    server = StatusServer(stats, host="127.0.0.1", port=0)
    try:
        base = f"http://127.0.0.1:{server.port}"
        with urllib.request.urlopen(f"{base}/metrics") as response:
            metrics = response.read().decode()
    finally:
        server.close()
    values = {
        sample.name: sample.value
        for family in text_string_to_metric_families(metrics)
        for sample in family.samples
    }
    assert stats.status()["logBudget"]["walStatus"] == "extended"
    assert values["cdcflow_log_retained_bytes"] == 900 * MIB
    assert values["cdcflow_log_safe_bytes"] == 100 * MIB
    assert values["cdcflow_log_budget_state"] == 1


def _streaming(budget: dict[str, Any] | None) -> dict[str, Any]:
    return {"phase": "streaming", "connected": True, "streaming": {}, "logBudget": budget}


def test_the_connector_status_shows_the_log_and_warns_with_log_safe_false() -> None:
    at_risk = mysql.judge(FILES, needed_file="bin.000007", needed_pos=4, expire_seconds=3600)
    status = connector_status.compute(
        connector_status.Observed(resource=_connector(), capture=_streaming(at_risk.status()))
    )
    reasons = _reasons(status)
    assert reasons["LogSafe"] == ("False", "LogAtRisk")
    assert reasons["Ready"] == ("True", "ConnectorRunning")  # it works now: a warning only
    assert status.fields["log"] == f"warning {size(at_risk.retained_bytes or 0)}"
    unmeasured = connector_status.compute(
        connector_status.Observed(resource=_connector(), capture=_streaming(None))
    )
    assert _reasons(unmeasured)["LogSafe"] == ("Unknown", "NotMeasured")


def test_a_lost_position_is_stalled_with_reason_position_lost() -> None:
    message = str(checks.slot_invalidated("orders"))
    failed = connector_status.compute(
        connector_status.Observed(
            resource=_connector(), capture={"phase": "failed", "lastError": message}
        )
    )
    crash_looping = connector_status.compute(
        connector_status.Observed(
            resource=_connector(), termination=f"Error (exit code 1): {message}", restarts=3
        )
    )
    for status in (failed, crash_looping):
        reasons = _reasons(status)
        assert reasons["Ready"] == ("False", "PositionLost")
        assert reasons["Stalled"] == ("True", "PositionLost")
        stalled = next(c for c in status.conditions if c.type == "Stalled")
        assert "when_needed" in stalled.message
