"""kstatus, the real library (``sigs.k8s.io/cli-utils``), judges CdcConnector-like objects.

These pin down what Flux and ``kubectl`` plugins will say about our custom resources for each
shape of status the operator can write, so the operator's status writing can be checked
against the library rather than against our reading of its documentation. No cluster is
needed: the objects are plain JSON, as ``kubectl get cdcc x -o json`` prints them.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from tests.services import kstatus

JSON = dict[str, Any]


def _connector(*, generation: int = 1, status: JSON | None = None, **metadata: Any) -> JSON:
    obj: JSON = {
        "apiVersion": "cdcflow.io/v1alpha1",
        "kind": "CdcConnector",
        "metadata": {
            "name": "orders",
            "namespace": "default",
            "uid": "4f1c3c1e-0000-4000-8000-000000000001",
            "generation": generation,
            **metadata,
        },
        "spec": {"source": {"type": "postgres"}},
    }
    if status is not None:
        obj["status"] = status
    return obj


def _condition(kind: str, value: str, reason: str, message: str) -> JSON:
    return {
        "type": kind,
        "status": value,
        "reason": reason,
        "message": message,
        "lastTransitionTime": "2025-01-01T00:00:00Z",
        "observedGeneration": 1,
    }


@pytest.fixture(scope="module")
def kstatus_binary() -> Path:
    """Build (or find) the cached kstatus program once for this module."""
    return kstatus.build_kstatus()


def test_the_build_is_cached_and_executable(kstatus_binary: Path) -> None:
    assert kstatus_binary.is_file()
    assert kstatus.build_ready()
    assert kstatus.build_kstatus() == kstatus_binary


def test_an_unobserved_generation_is_in_progress(kstatus_binary: Path) -> None:
    result = kstatus.compute(_connector(generation=2, status={"observedGeneration": 1}))

    assert result == kstatus.KstatusResult(
        "InProgress", "CdcConnector generation is 2, but latest observed generation is 1"
    )


def test_an_observed_generation_with_ready_true_is_current(kstatus_binary: Path) -> None:
    ready = _condition("Ready", "True", "Streaming", "streaming changes")
    obj = _connector(generation=1, status={"observedGeneration": 1, "conditions": [ready]})

    assert kstatus.compute(obj) == kstatus.KstatusResult("Current", "Resource is Ready")


def test_ready_false_is_in_progress_with_the_condition_message(kstatus_binary: Path) -> None:
    ready = _condition("Ready", "False", "Snapshotting", "initial snapshot 40% done")
    obj = _connector(generation=1, status={"observedGeneration": 1, "conditions": [ready]})

    assert kstatus.compute(obj) == kstatus.KstatusResult("InProgress", "initial snapshot 40% done")


def test_stalled_true_is_failed_even_when_ready_is_true(kstatus_binary: Path) -> None:
    conditions = [
        _condition("Ready", "True", "Streaming", "streaming changes"),
        _condition("Stalled", "True", "SlotMissing", "replication slot cdc_orders is gone"),
    ]
    obj = _connector(generation=1, status={"observedGeneration": 1, "conditions": conditions})

    result = kstatus.compute(obj)

    assert result == kstatus.KstatusResult("Failed", "replication slot cdc_orders is gone")


def test_reconciling_true_is_in_progress(kstatus_binary: Path) -> None:
    conditions = [_condition("Reconciling", "True", "Progressing", "creating the capture pod")]
    obj = _connector(generation=1, status={"observedGeneration": 1, "conditions": conditions})

    assert kstatus.compute(obj) == kstatus.KstatusResult("InProgress", "creating the capture pod")


def test_a_deletion_timestamp_wins_over_everything_else(kstatus_binary: Path) -> None:
    stalled = _condition("Stalled", "True", "SlotMissing", "gone")
    obj = _connector(
        generation=3,
        status={"observedGeneration": 1, "conditions": [stalled]},
        deletionTimestamp="2025-01-01T00:00:00Z",
        finalizers=["cdcflow.io/slot"],
    )

    assert kstatus.compute(obj) == kstatus.KstatusResult(
        "Terminating", "Resource scheduled for deletion"
    )


def test_an_object_without_status_is_current(kstatus_binary: Path) -> None:
    # kstatus' documented fallback for custom resources: with no observedGeneration and no
    # known condition it assumes the resource is reconciled. So a CdcConnector that was just
    # created, before the operator wrote any status, looks Current to Flux and kstatus-based
    # `kubectl` plugins: unless the operator writes observedGeneration or a Reconciling/Ready
    # condition promptly, "applied and healthy" is reported before anything was reconciled.
    result = kstatus.compute(_connector(generation=1))

    assert result == kstatus.KstatusResult("Current", "Resource is current")


def test_an_empty_status_is_current_too(kstatus_binary: Path) -> None:
    assert kstatus.compute(_connector(generation=1, status={})).status == "Current"


def test_a_defaulted_observed_generation_of_zero_is_in_progress(kstatus_binary: Path) -> None:
    # The fix for the case above: a status whose observedGeneration defaults to 0 makes a
    # fresh object InProgress until the operator has observed generation 1.
    result = kstatus.compute(_connector(generation=1, status={"observedGeneration": 0}))

    assert result == kstatus.KstatusResult(
        "InProgress", "CdcConnector generation is 1, but latest observed generation is 0"
    )


def test_an_object_without_a_kind_is_rejected(kstatus_binary: Path) -> None:
    with pytest.raises(kstatus.KstatusError, match="Kind' is missing"):
        kstatus.compute({"metadata": {"name": "orders"}})


def test_a_list_is_rejected(kstatus_binary: Path) -> None:
    document = {"apiVersion": "v1", "kind": "List", "items": [_connector()]}

    with pytest.raises(kstatus.KstatusError, match="expected one object"):
        kstatus.compute(document)


def test_the_command_line_prints_the_verdict_as_json(
    kstatus_binary: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    document = json.dumps(_connector(generation=2, status={"observedGeneration": 1}))
    monkeypatch.setattr("sys.stdin", io.StringIO(document))

    assert kstatus.main(["compute"]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "InProgress"
