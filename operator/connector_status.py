"""What a CdcConnector's status says, computed from what the operator observed (pure).

Inputs are facts — the parsed resource or the configuration error, the Secrets that are
missing, and the capture pod's ``/status`` document (or why it could not be read) — and the
output is the full set of conditions plus the detail columns of ``kubectl get cdcconnectors``.
Reasons are a stable CamelCase vocabulary documented in docs/operator.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from cdcflow.capture.connector_resource import SOURCE_KINDS, CdcConnector, default_port
from cdcflow.capture.errors import POSITION_LOST
from cdcflow.capture.log_budget import size
from cdcflow.operator.conditions import Condition, summary


@dataclass(frozen=True)
class Observed:
    """Facts gathered by one reconcile."""

    resource: CdcConnector | None
    config_error: str = ""
    missing_secrets: tuple[str, ...] = ()
    capture: dict[str, Any] | None = None
    capture_error: str = ""
    restarts: int = 0
    halted: bool = False
    #: the capture container's last exit while it is in CrashLoopBackOff: the connector failed
    termination: str = ""
    #: an earlier exit of a container that runs (or starts) again: shown, not a failure
    last_exit: str = ""
    rollout: str = ""
    #: a child the API server refused (quota, admission webhook, ...): its kind, name, message
    rejected: str = ""
    #: ``kind://host:port/database`` read from the raw spec, for the SOURCE column even when
    #: the spec as a whole is invalid
    raw_source: str = ""
    #: the Ready condition and STATE written before: a cause the pod reported is kept while
    #: the pod cannot be asked
    previous_ready: Condition | None = None
    previous_state: str = ""


@dataclass(frozen=True)
class ConnectorStatus:
    """Conditions plus the fields shown as printer columns."""

    conditions: list[Condition]
    fields: dict[str, Any] = field(default_factory=dict)

    @property
    def ready_reason(self) -> str:
        return self.conditions[0].reason


# Detail fields a reconcile may leave out: cleared then, so nothing stale is shown.
DETAIL_FIELDS = ("source", "state", "snapshot", "lag", "log", "topics", "capture")


def compute(observed: Observed) -> ConnectorStatus:
    """The status a reconcile writes; ``Streaming`` is always among the conditions, so a
    stopped or broken connector never keeps a ``Streaming=True`` from before."""
    status = _compute(observed)
    if not any(condition.type == "Streaming" for condition in status.conditions):
        state = status.fields.get("state") or status.ready_reason
        status.conditions.append(
            Condition("Streaming", "False", "NotStreaming", f"the connector is {state}")
        )
    return status


def _compute(observed: Observed) -> ConnectorStatus:
    status = _compute_summary(observed)
    if not observed.last_exit or status.ready_reason in _WITHOUT_LAST_EXIT:
        return status
    # One earlier kill (OOMKilled, exit 137) of a container that runs again is not a failure:
    # it is said next to whatever the connector does now, as `kubectl get pods` shows RESTARTS.
    note = f" (earlier exit of the capture container: {observed.last_exit})"
    conditions = [
        replace(c, message=f"{c.message}{note}")
        if c.type in ("Ready", "Reconciling", "Stalled") and c.message
        else c
        for c in status.conditions
    ]
    return replace(status, conditions=conditions)


#: Ready reasons an earlier exit of the capture container says nothing about.
_WITHOUT_LAST_EXIT = {
    "InvalidConfig",
    "SecretNotFound",
    "ChildRejected",
    "ConnectorPaused",
    "ConnectorStopped",
    "RestartLimitReached",
    "ConnectorFailed",
}


def _compute_summary(observed: Observed) -> ConnectorStatus:
    if observed.resource is None:
        return ConnectorStatus(
            summary(
                ready=False, reason="InvalidConfig", message=observed.config_error, stalled=True
            ),
            {"source": observed.raw_source, "state": "Invalid"},
        )
    resource = observed.resource
    fields: dict[str, Any] = {"source": _source(resource)}
    if observed.missing_secrets:
        names = ", ".join(observed.missing_secrets)
        message = f"Secret(s) {names} not found in namespace {resource.metadata.namespace}"
        conditions = summary(
            ready=False, reason="SecretNotFound", message=message, reconciling=True
        )
        return ConnectorStatus(conditions, {**fields, "state": "WaitingForSecret"})
    if observed.rejected:
        # the spec passed the CRD, but the API server (a quota, an admission webhook, a limit
        # the schema cannot check) refused a child: nothing runs until the spec or the cluster
        # changes; every poll tries again
        conditions = summary(
            ready=False, reason="ChildRejected", message=observed.rejected, stalled=True
        )
        return ConnectorStatus(conditions, {**fields, "state": "Rejected"})
    if observed.halted and resource.spec.state == "running":
        last = f"; last exit: {observed.termination}" if observed.termination else ""
        message = (
            f"the capture container restarted {observed.restarts} times, more than "
            f"spec.autoRestart allows{last}. Fix the cause, then raise spec.restartRequest to "
            "run it again"
        )
        conditions = summary(
            ready=False, reason="RestartLimitReached", message=message, stalled=True
        )
        return ConnectorStatus(conditions, {**fields, "state": "Halted"})
    if resource.spec.state != "running":
        reason = "ConnectorPaused" if resource.spec.state == "paused" else "ConnectorStopped"
        conditions = summary(
            ready=True, reason=reason, message=f"spec.state is {resource.spec.state}"
        )
        return ConnectorStatus(conditions, {**fields, "state": resource.spec.state.capitalize()})
    if observed.capture is None and observed.termination:
        message = (
            f"the capture container is in CrashLoopBackOff ({observed.restarts} restarts so "
            f"far); last exit: {observed.termination}"
        )
        reason = _failure_reason(observed.termination)
        conditions = summary(ready=False, reason=reason, message=message, stalled=True)
        return ConnectorStatus(conditions, {**fields, "state": "Failed"})
    if observed.rollout:
        conditions = summary(
            ready=False, reason="RollingOut", message=observed.rollout, reconciling=True
        )
        return ConnectorStatus(conditions, {**fields, "state": "Updating"})
    if observed.capture is None:
        return _unreachable(observed, fields)
    return _from_capture(observed.capture, fields)


#: Ready reasons the capture pod reported that stay true while it cannot be asked again: a
#: pod whose source or Kafka is down is NotReady, and a restarting one answers nothing.
_KEPT_WHILE_UNREACHABLE = {"SourceUnavailable", "KafkaUnavailable"}
_UNREACHABLE_NOTE = " (last reported; the capture pod is not reachable now: "


def _unreachable(observed: Observed, fields: dict[str, Any]) -> ConnectorStatus:
    """The capture pod did not answer: the cause it last reported, else starting."""
    error = observed.capture_error
    previous = observed.previous_ready
    if previous is not None and previous.reason in _KEPT_WHILE_UNREACHABLE:
        cause = previous.message.split(_UNREACHABLE_NOTE)[0]
        message = f"{cause}{_UNREACHABLE_NOTE}{error})"
        conditions = summary(ready=False, reason=previous.reason, message=message, reconciling=True)
        return ConnectorStatus(conditions, {**fields, "state": observed.previous_state})
    message = f"capture pod not reachable yet: {error}".strip()
    conditions = summary(ready=False, reason="RuntimeNotReady", message=message, reconciling=True)
    return ConnectorStatus(conditions, {**fields, "state": "Starting"})


def raw_source(spec: dict[str, Any]) -> str:
    """``postgresql://host:port/database`` from an unvalidated spec, as far as it goes."""
    for kind, source in ((spec.get("source") or {}) or {}).items():
        if isinstance(source, dict) and kind in SOURCE_KINDS:
            port = source.get("port", default_port(kind))
            database = f"/{source['database']}" if source.get("database") else ""
            return f"{kind}://{source.get('host', '')}:{port}{database}"
    return ""


def _source(resource: CdcConnector) -> str:
    return resource.spec.source.url()


def _from_capture(capture: dict[str, Any], fields: dict[str, Any]) -> ConnectorStatus:
    phase = str(capture.get("phase", "starting"))
    snapshot = capture.get("snapshot") or {}
    streaming = capture.get("streaming") or {}
    settled = phase == "streaming" and not snapshot.get("running")
    detail = {
        **fields,
        "state": phase.capitalize(),
        # streaming means the snapshot is behind it, taken by this run of the pod or an
        # earlier one (a restarted pod reports no snapshot of its own), unless a chunked
        # snapshot still runs beside streaming
        "snapshot": "Completed" if settled else _snapshot_text(snapshot),
        "lag": f"{int(streaming.get('millisecondsBehindSource') or 0)}ms",
        "topics": sorted(capture.get("topics") or []),
        "capture": {
            "phase": phase,
            "connected": bool(capture.get("connected")),
            "offset": capture.get("offset") or {},
            "totalEventsSeen": int(streaming.get("totalEventsSeen") or 0),
            "lastError": str(capture.get("lastError") or ""),
        },
    }
    last_error = str(capture.get("lastError") or "")
    if phase == "failed":  # the engine gave up: only a change (spec, source) can help
        conditions = summary(
            ready=False, reason=_failure_reason(last_error), message=last_error, stalled=True
        )
    elif kafka_error := str((capture.get("kafka") or {}).get("lastError") or ""):
        conditions = summary(
            ready=False,
            reason="KafkaUnavailable",
            message=f"capture cannot deliver to Kafka and retries: {kafka_error}",
            reconciling=True,
        )
    elif not capture.get("connected") and last_error:
        # the engine is retrying: it runs, but nothing flows until the source answers again
        conditions = summary(
            ready=False,
            reason="SourceUnavailable",
            message=f"capture cannot reach the source and retries: {last_error}",
            reconciling=True,
        )
    elif phase in ("snapshot", "streaming"):
        reason = "SnapshotRunning" if phase == "snapshot" else "ConnectorRunning"
        conditions = summary(ready=True, reason=reason, message=f"capture is {phase}")
    else:
        conditions = summary(
            ready=False, reason="RuntimeNotReady", message=f"capture is {phase}", reconciling=True
        )
    snapshot_done = bool(snapshot.get("completed")) or settled
    # The engine stays in phase "streaming" while it retries a lost source or Kafka: changes
    # flow only when both answer (`kubectl wait --for=condition=Streaming` must not pass then).
    kafka = capture.get("kafka") or {}
    kafka_ok = kafka.get("connected", True) is not False and not kafka.get("lastError")
    flowing = phase == "streaming" and bool(capture.get("connected")) and kafka_ok
    if flowing:
        flow = f"{detail['capture']['totalEventsSeen']} events, lag {detail['lag']}"
    elif phase != "streaming":
        flow = f"capture is {phase}"
    elif not capture.get("connected"):
        flow = f"the source is not connected: {last_error or 'reconnecting'}"
    else:
        flow = f"Kafka is not reachable: {kafka.get('lastError') or 'reconnecting'}"
    budget = capture.get("logBudget")
    if budget:
        retained = budget.get("retainedBytes")
        detail["log"] = (
            f"{budget.get('state')} {size(retained)}"
            if retained is not None
            else (str(budget.get("state")))
        )
        detail["capture"]["log"] = budget
    conditions += [
        _log_safe(budget),
        Condition(
            "SnapshotCompleted",
            "True" if snapshot_done else "False",
            "SnapshotCompleted" if snapshot_done else "SnapshotPending",
            detail["snapshot"],
        ),
        Condition(
            "Streaming",
            "True" if flowing else "False",
            "Streaming" if flowing else "NotStreaming",
            flow,
        ),
    ]
    return ConnectorStatus(conditions, detail)


def _failure_reason(message: str) -> str:
    """``PositionLost`` when the log no longer holds the connector's position, else
    ``ConnectorFailed``."""
    return "PositionLost" if POSITION_LOST in message else "ConnectorFailed"


#: The ``LogSafe`` reason for each state of the capture's log budget.
_LOG_REASONS = {"ok": "LogRetained", "warning": "LogAtRisk", "lost": "LogLost"}


def _log_safe(budget: dict[str, Any] | None) -> Condition:
    """Whether the server keeps the log the connector needs, with room to spare."""
    if not budget:
        return Condition("LogSafe", "Unknown", "NotMeasured", "the capture has not measured it yet")
    state = str(budget.get("state"))
    return Condition(
        "LogSafe",
        "True" if state == "ok" else "False",
        _LOG_REASONS.get(state, "LogAtRisk"),
        str(budget.get("message") or ""),
    )


def _snapshot_text(snapshot: dict[str, Any]) -> str:
    if snapshot.get("completed"):
        return "Completed"
    tables = snapshot.get("tables") or {}
    if not snapshot.get("running") or not tables:
        return "-"
    done = sum(int(t.get("rowsScanned") or 0) for t in tables.values())
    total = sum(int(t.get("rowsEstimated") or 0) for t in tables.values())
    return f"{min(99, done * 100 // total)}%" if total else f"{done} rows"
