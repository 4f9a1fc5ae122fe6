"""Delivering a CdcSnapshotSignal and deriving its status from the connector's notifications.

The signal id is derived from the resource's namespace, name and spec (:func:`signal_id`), so
delivery is idempotent: a retried reconcile inserts nothing twice, and neither does the same
signal re-created from Git after its TTL. Conditions: ``Accepted`` (connector found, signals
configured, tables captured), ``Signaled`` (the row is in the signal table), ``Succeeded``
(the bounded-object summary: the snapshot completed, or the signal was rejected or aborted),
plus ``Ready`` / ``Reconciling`` / ``Stalled`` for kstatus.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

import orjson

from cdcflow.capture.connector_resource import CdcConnector
from cdcflow.operator import capture_client
from cdcflow.operator.conditions import Condition, summary
from cdcflow.operator.signal_resource import CdcSnapshotSignal

TERMINAL_SUCCESS = {
    ("execute", "COMPLETED"): "SnapshotCompleted",
    ("stop", "ABORTED"): "SnapshotStopped",
    ("pause", "PAUSED"): "SnapshotPaused",
    ("resume", "RESUMED"): "SnapshotResumed",
}
TERMINAL_FAILURE = {"REJECTED": "SignalRejected", "ABORTED": "SnapshotAborted"}


@dataclass(frozen=True)
class Observed:
    """Facts of one reconcile of a signal."""

    uid: str
    signal: CdcSnapshotSignal | None = None
    invalid: str = ""
    connector: CdcConnector | None = None
    connector_found: bool = False
    previous: dict[str, Any] = field(default_factory=dict)
    rejection: tuple[str, str] | None = None
    signaled: bool = False
    send_error: str = ""
    sent_time: str = ""
    capture: dict[str, Any] | None = None
    #: the signal table had this id already when this resource first sent it
    ran_before: bool = False
    #: notifications the capture pod held for this id when this resource inserted it: those
    #: of an earlier run (its rows deleted from the signal table, the resource re-created)
    events_before: int = 0


def signal_id(signal: CdcSnapshotSignal) -> str:
    """The id written to the signal table: derived from namespace, name and spec, not the UID.

    A signal kept in Git comes back with a new UID after ``ttlSecondsAfterFinished`` deleted it
    (Argo CD and Flux re-create it); the same id then makes the insert a no-op instead of a new
    snapshot. A changed name or spec is a new signal.
    """
    spec = signal.spec.model_dump(
        mode="json", by_alias=True, exclude={"ttl_seconds_after_finished"}
    )
    identity = orjson.dumps(
        [signal.metadata.namespace, signal.metadata.name, spec], option=orjson.OPT_SORT_KEYS
    )
    # 42 characters: the signal table's id column is VARCHAR(42) in Debezium's documented DDL
    return f"cdcsig-{hashlib.sha256(identity).hexdigest()[:35]}"


@dataclass(frozen=True)
class SignalStatus:
    conditions: list[Condition]
    fields: dict[str, Any]


def finished(status: dict[str, Any]) -> bool:
    """Whether a terminal Succeeded condition was already written."""
    return any(
        c.get("type") == "Succeeded" and c.get("status") in ("True", "False")
        for c in status.get("conditions") or []
    )


def age_seconds(timestamp: str) -> float:
    moment = datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    return (datetime.now(UTC) - moment).total_seconds()


def deliver(observed: Observed, *, now: str) -> Observed:
    """Check the signal can be accepted, then send it once and read the connector's status."""
    rejection = _rejection(observed)
    if rejection is not None:
        return replace(observed, rejection=rejection)
    assert observed.signal is not None and observed.connector is not None
    base = capture_client.endpoint(
        name=observed.connector.metadata.name, namespace=observed.connector.metadata.namespace
    )
    try:
        capture = capture_client.status(base)
    except capture_client.CaptureUnreachableError as error:
        return replace(observed, send_error=f"capture pod not reachable: {error}")
    tables = capture.get("capturedTables")
    if tables is None:  # the pod is up but has not listed its tables yet: a verdict now is wrong
        return replace(observed, send_error="waiting for the capture to list its tables")
    captured = rejection_for_tables(observed.signal, tables)
    if captured is not None:
        return replace(observed, rejection=captured, capture=capture)
    if observed.previous.get("signalId") == observed.uid:
        return replace(observed, signaled=True, capture=capture)
    signal_type, data = observed.signal.spec.signal()
    try:
        inserted = capture_client.send_signal(
            base, signal_id=observed.uid, signal_type=signal_type, data=data
        )
    except capture_client.CaptureUnreachableError as error:
        return replace(observed, send_error=str(error), capture=capture)
    # The capture pod may still hold notifications of an earlier run of the same id (its rows
    # were deleted from the signal table so that it runs again): only later ones count.
    before = len(_entry(capture, observed.uid).get("events") or []) if inserted else 0
    return replace(
        observed,
        signaled=True,
        sent_time=now,
        capture=capture,
        ran_before=not inserted,
        events_before=before,
    )


def _entry(capture: dict[str, Any] | None, uid: str) -> dict[str, Any]:
    return dict(((capture or {}).get("signals") or {}).get(uid) or {})


def _rejection(observed: Observed) -> tuple[str, str] | None:
    if observed.signal is None:
        return "InvalidSpec", observed.invalid
    name = observed.signal.spec.connector_ref.name
    if not observed.connector_found:
        return "ConnectorNotFound", f"no CdcConnector {name} in this namespace"
    if observed.connector is None:
        return "ConnectorInvalid", f"CdcConnector {name} has an invalid spec"
    if not observed.connector.properties().signal_data_collection:
        return "SignalsNotConfigured", (
            f"CdcConnector {name} has no signal table: set spec.signals.table"
        )
    return None


def rejection_for_tables(signal: CdcSnapshotSignal, captured: list[str]) -> tuple[str, str] | None:
    """Every data collection must match at least one table the connector captures."""
    missing = [
        pattern
        for pattern in signal.spec.data_collections
        if not any(re.fullmatch(pattern, table, re.IGNORECASE) for table in captured)
    ]
    if missing:
        return "TableNotCaptured", f"not captured by the connector: {', '.join(missing)}"
    return None


def compute(observed: Observed) -> SignalStatus:
    """Conditions and status fields for what was observed."""
    fields: dict[str, Any] = {}
    if observed.rejection is not None:
        reason, message = observed.rejection
        conditions = summary(ready=False, reason=reason, message=message, stalled=True)
        conditions.append(Condition("Accepted", "False", reason, message))
        # a rejected signal has finished, unsuccessfully: `kubectl wait --for=condition=
        # Succeeded=False` and the SUCCEEDED column must say so
        conditions.append(Condition("Succeeded", "False", reason, message))
        return SignalStatus(conditions, fields)
    accepted = Condition("Accepted", "True", "ConnectorFound", "")
    if not observed.signaled:
        message = observed.send_error or "waiting to signal"
        conditions = summary(ready=False, reason="SignalPending", message=message, reconciling=True)
        conditions += [accepted, Condition("Signaled", "False", "SignalPending", message)]
        return SignalStatus(conditions, fields)
    fields["signalId"] = observed.uid
    if observed.sent_time:
        fields["sentTime"] = observed.sent_time
    if observed.ran_before or observed.previous.get("ranBefore"):
        fields["ranBefore"] = True
    if skipped := _events_before(observed):
        fields["notificationsBefore"] = skipped
    signaled = Condition("Signaled", "True", "SignalInserted", f"signal id {observed.uid}")
    succeeded, progress = _outcome(observed)
    fields["progress"] = progress
    if succeeded.status != "Unknown":
        fields["completedTime"] = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    failed = succeeded.status == "False"
    conditions = summary(
        ready=not failed, reason=succeeded.reason, message=succeeded.message, stalled=failed
    )
    return SignalStatus([*conditions, accepted, signaled, succeeded], fields)


def _outcome(observed: Observed) -> tuple[Condition, dict[str, Any]]:
    assert observed.signal is not None
    entry = _entry(observed.capture, observed.uid)
    events = list(entry.get("events") or [])
    state = str(entry.get("status") or "")
    skipped = _events_before(observed)
    if skipped and len(events) >= skipped:  # fewer: the capture pod restarted and forgot them
        events = events[skipped:]
        state = str(events[-1].get("type") or "") if events else ""
    progress = _progress(events)
    action = observed.signal.spec.action
    if observed.ran_before or observed.previous.get("ranBefore"):
        message = (
            f"signal {observed.uid} was inserted before (this name and spec ran already, e.g. "
            "re-created from Git after ttlSecondsAfterFinished): not run again; change the name "
            "or the spec to run it again"
        )
        return Condition("Succeeded", "True", "AlreadyRun", message), progress
    if (action, state) in TERMINAL_SUCCESS:
        return Condition("Succeeded", "True", TERMINAL_SUCCESS[(action, state)], state), progress
    if state in TERMINAL_FAILURE:
        reason = events[-1].get("reason", "") if events else ""
        return Condition("Succeeded", "False", TERMINAL_FAILURE[state], reason or state), progress
    if state == "IGNORED":
        return Condition("Succeeded", "True", "NoSnapshotRunning", "nothing to do"), progress
    message = f"{progress['tablesCompleted']}/{progress['tablesTotal']} tables" if events else ""
    return Condition("Succeeded", "Unknown", "SnapshotInProgress", message), progress


def _events_before(observed: Observed) -> int:
    return observed.events_before or int(observed.previous.get("notificationsBefore") or 0)


def _progress(events: list[dict[str, Any]]) -> dict[str, Any]:
    started = next((e for e in events if e.get("type") == "STARTED"), {})
    tables = [t for t in str(started.get("data_collections", "")).split(",") if t]
    completed = [e for e in events if e.get("type") == "TABLE_SCAN_COMPLETED"]
    return {
        "tablesTotal": len(tables),
        "tablesCompleted": len(completed),
        "rowsScanned": sum(int(e.get("total_rows_scanned") or 0) for e in completed),
        "lastEvent": events[-1].get("type") if events else "",
    }
