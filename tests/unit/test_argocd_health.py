"""The shipped Argo CD health checks give the right verdict for real-shaped objects.

Runs the Lua scripts in a Lua interpreter (lupa) the way Argo CD does: the object is the
global ``obj`` and the script returns ``{status, message}``.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from tests.status_judges import HEALTH, ROOT, health


def _connector(
    *conditions: tuple[str, str, str],
    generation: int = 2,
    observed: int = 2,
    state: str = "running",
) -> dict[str, Any]:
    return {
        "metadata": {"name": "orders", "generation": generation},
        "spec": {"state": state},
        "status": {
            "observedGeneration": observed,
            "conditions": [
                {"type": t, "status": s, "reason": r, "message": ""} for t, s, r in conditions
            ],
        },
    }


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        ({"metadata": {"name": "x", "generation": 1}}, "Progressing"),
        (_connector(("Ready", "True", "ConnectorRunning")), "Healthy"),
        (_connector(("Ready", "True", "ConnectorRunning"), observed=1), "Progressing"),
        (
            _connector(("Ready", "False", "InvalidConfig"), ("Stalled", "True", "InvalidConfig")),
            "Degraded",
        ),
        (
            _connector(("Ready", "False", "SecretNotFound"), ("Stalled", "False", "NoError")),
            "Progressing",
        ),
        (_connector(("Ready", "False", "ConnectorFailed")), "Degraded"),
        (_connector(("Ready", "True", "ConnectorPaused"), state="paused"), "Suspended"),
    ],
)
def test_connector_health(obj: dict[str, Any], expected: str) -> None:
    assert health("CdcConnector", obj)[0] == expected


def test_degraded_connector_says_why() -> None:
    obj = _connector(("Stalled", "True", "InvalidConfig"))
    obj["status"]["conditions"][0]["message"] = "unknown property x"
    assert health("CdcConnector", obj) == ("Degraded", "InvalidConfig: unknown property x")


@pytest.mark.parametrize(
    ("succeeded", "expected"),
    [("True", "Healthy"), ("False", "Degraded"), ("Unknown", "Progressing")],
)
def test_signal_health_follows_succeeded(succeeded: str, expected: str) -> None:
    obj = _connector(("Succeeded", succeeded, "SnapshotCompleted"))
    assert health("CdcSnapshotSignal", obj)[0] == expected


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (_connector(("Ready", "True", "ApplicationRunning")), "Healthy"),
        (_connector(("Ready", "False", "ApplicationFailed")), "Degraded"),
        (_connector(("Ready", "False", "ApplicationSubmitting")), "Progressing"),
        (_connector(("Ready", "True", "Suspended"), state="suspended"), "Suspended"),
    ],
)
def test_sink_health(obj: dict[str, Any], expected: str) -> None:
    assert health("CdcSink", obj)[0] == expected


def test_argocd_cm_patch_carries_exactly_the_lua_files() -> None:
    patch = yaml.safe_load((ROOT / "manifests" / "argocd" / "argocd-cm-health.yaml").read_text())
    expected = {
        f"resource.customizations.health.cdcflow.io_{path.stem}": path.read_text()
        for path in HEALTH.glob("*.lua")
    }
    assert patch["data"] == expected
