"""Only the highest-priority live replica of an HA operator writes (the poller asks this)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from cdcflow.operator.peering import Peering, is_active

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


def _peer(priority: int, *, seen_ago_s: float = 1.0, lifetime: int = 60) -> dict[str, Any]:
    seen = (NOW - timedelta(seconds=seen_ago_s)).isoformat()
    return {"priority": priority, "lastseen": seen, "lifetime": lifetime}


def test_the_highest_live_priority_is_the_only_active_replica() -> None:
    peers = {"a@1": _peer(10), "b@2": _peer(20)}
    assert is_active(20, peers, now=NOW)
    assert not is_active(10, peers, now=NOW)


def test_a_dead_higher_peer_no_longer_blocks() -> None:
    peers = {"a@1": _peer(10), "b@2": _peer(20, seen_ago_s=120)}
    assert is_active(10, peers, now=NOW)


def test_equal_priorities_pause_everybody_as_kopf_does() -> None:
    assert not is_active(5, {"a@1": _peer(5), "b@2": _peer(5)}, now=NOW)
    assert is_active(5, {"a@1": _peer(5)}, now=NOW), "only ourselves"


def test_the_peering_object_is_read_cluster_wide_or_per_namespace() -> None:
    class Reader:
        def __init__(self) -> None:
            self.asked: list[tuple[str, str, str]] = []

        def get(self, api_version: str, kind: str, namespace: str, name: str) -> Any:
            self.asked.append((kind, namespace, name))
            return {"status": {"other@1": {**_peer(99), "lastseen": datetime.now(UTC).isoformat()}}}

    reader = Reader()
    assert not Peering(name="default", clusterwide=True, priority=1).active(reader)
    assert not Peering(name="default", clusterwide=False, priority=1).active(reader, "shop")
    assert reader.asked == [
        ("ClusterKopfPeering", "", "default"),
        ("KopfPeering", "shop", "default"),
    ]


@pytest.mark.parametrize(
    ("flag", "expected"),
    [("--peering", {"standalone": False, "peering_name": "default"}), ("--standalone", {})],
)
def test_replicas_with_peering_start_paused_until_they_have_seen_the_others(
    monkeypatch: pytest.MonkeyPatch, flag: str, expected: dict[str, object]
) -> None:
    import kopf
    from click.testing import CliRunner

    from cdcflow.operator.cli.operator_command import operator

    runs: list[dict[str, object]] = []
    monkeypatch.setattr(kopf, "run", lambda **kwargs: runs.append(kwargs))
    result = CliRunner().invoke(operator, [flag])

    assert result.exit_code == 0, result.output
    (run,) = runs
    if flag == "--peering":
        # a named peering is mandatory in kopf: paused until the peers were observed
        assert {k: run[k] for k in expected} == expected and int(str(run["priority"])) > 0
    else:
        assert run["standalone"] is True and run["peering_name"] is None
