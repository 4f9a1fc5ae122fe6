"""Auto-restart policy of a CdcConnector, from the capture container's restart count (pure).

The kubelet restarts a failed capture container with its own exponential backoff (10 s
doubling to 5 min). On top of that, ``spec.autoRestart`` bounds how often: with
``enabled: false`` no restart is tolerated, with ``maxRestarts: N`` more than N are not. Past
the bound the connector is *halted* — its StatefulSet scaled to zero, Ready=False and
Stalled=True with reason ``RestartLimitReached`` — until ``spec.restartRequest`` is raised,
which also restarts the count.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cdcflow.capture.connector_resource import CdcConnector


@dataclass(frozen=True)
class RestartState:
    """What ``status.autoRestart`` records and whether the connector is halted."""

    count: int
    baseline: int
    halted_at: int | None
    last_exit: str = ""
    """Why the container last failed (kept while halted: its pod is gone then)."""

    @property
    def halted(self) -> bool:
        return self.halted_at is not None

    def to_status(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "baseline": self.baseline,
            "haltedAtRestartRequest": self.halted_at,
            "lastExit": self.last_exit,
        }


def evaluate(
    resource: CdcConnector, *, restart_count: int, previous: dict[str, Any], last_exit: str = ""
) -> RestartState:
    """The restart state after observing the container's ``restart_count`` and its
    ``last_exit``. While halted the pod is gone (no count, no exit to read): what was
    recorded when it halted stays, also across operator restarts."""
    request = resource.spec.restart_request
    baseline = int(previous.get("baseline") or 0)
    halted_at = previous.get("haltedAtRestartRequest")
    if halted_at is not None and request > int(halted_at):
        halted_at, baseline = None, restart_count  # the user asked to try again
    count = max(0, restart_count - baseline)
    if halted_at is not None:
        kept = int(previous.get("count") or 0)
        exit_ = last_exit or str(previous.get("lastExit") or "")
        return RestartState(max(count, kept), baseline, int(halted_at), exit_)
    if count > _limit(resource):
        halted_at = request
    return RestartState(count, baseline, None if halted_at is None else int(halted_at), last_exit)


def _limit(resource: CdcConnector) -> float:
    policy = resource.spec.auto_restart
    if not policy.enabled:
        return 0
    return float("inf") if policy.max_restarts is None else policy.max_restarts


def last_termination(pod: dict[str, Any] | None) -> str:
    """Why the capture container last exited with an error: kubelet's reason and message.

    The message is the container's termination log, or the tail of its output
    (``terminationMessagePolicy: FallbackToLogsOnError``); empty when it never failed.
    """
    for status in _capture_statuses(pod):
        for state in (status.get("state") or {}, status.get("lastState") or {}):
            terminated = state.get("terminated") or {}
            if terminated and int(terminated.get("exitCode") or 0) != 0:
                return _exit_text(terminated)
    return ""


def _capture_statuses(pod: dict[str, Any] | None) -> list[dict[str, Any]]:
    statuses = ((pod or {}).get("status") or {}).get("containerStatuses") or []
    return [s for s in statuses if s.get("name") == "capture"]


def _exit_text(terminated: dict[str, Any]) -> str:
    message = str(terminated.get("message") or "").strip()
    reason = terminated.get("reason") or (
        "Completed" if not terminated.get("exitCode") else "Error"
    )
    code = terminated.get("exitCode")
    return f"{reason} (exit code {code}): {message}".strip().rstrip(":")


def crash_loop(pod: dict[str, Any] | None) -> str:
    """The capture container's last exit while it waits in ``CrashLoopBackOff``, else empty.

    Only a container the kubelet keeps backing off is a failed connector (Stalled). One
    earlier exit — an OOM kill, exit 137 — of a container that runs or starts again is not:
    :func:`last_termination` still tells it, for the message.
    """
    for status in _capture_statuses(pod):
        waiting = (status.get("state") or {}).get("waiting") or {}
        if waiting.get("reason") != "CrashLoopBackOff":
            continue
        terminated = (status.get("lastState") or {}).get("terminated") or {}
        if not terminated:
            return str(waiting.get("message") or "CrashLoopBackOff")
        return _exit_text(terminated)
    return ""


def container_restarts(pod: dict[str, Any] | None) -> int:
    """Restarts of the capture container of a Pod object (0 when there is no pod)."""
    return sum(int(s.get("restartCount") or 0) for s in _capture_statuses(pod))
