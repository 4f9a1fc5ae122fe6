"""A CdcSink's status from its SparkApplication (pure).

Maps the Spark operator's ``applicationState.state`` onto Ready/Reconciling/Stalled with the
reasons ``ApplicationRunning``, ``ApplicationCompleted``, ``ApplicationSubmitting``,
``PendingRerun``, ``ApplicationFailed``, ``SubmissionFailed``, ``Suspended``, plus
``SparkOperatorMissing``, ``ConnectorNotFound``, ``InvalidConfig`` and ``ChildRejected`` (the
API server refused the ConfigMap or the SparkApplication) for what stops it earlier, and an
``ApplicationSubmitted`` condition.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cdcflow.operator.conditions import Condition, summary


@dataclass(frozen=True)
class Observed:
    invalid: str = ""
    connector_missing: str = ""
    spark_operator_missing: bool = False
    suspended: bool = False
    application: dict[str, Any] | None = None
    #: a child the API server refused (quota, admission webhook, ...): its kind, name, message
    rejected: str = ""


@dataclass(frozen=True)
class SinkStatus:
    """Conditions plus the fields shown as printer columns."""

    conditions: list[Condition]
    fields: dict[str, Any]


# Detail fields a reconcile may leave out: cleared then, so nothing stale is shown.
DETAIL_FIELDS = ("application",)


def compute(observed: Observed) -> SinkStatus:
    if observed.invalid:
        return SinkStatus(
            summary(ready=False, reason="InvalidConfig", message=observed.invalid, stalled=True), {}
        )
    if observed.connector_missing:
        message = f"no CdcConnector {observed.connector_missing} in this namespace"
        return SinkStatus(
            summary(ready=False, reason="ConnectorNotFound", message=message, stalled=True), {}
        )
    if observed.rejected:
        return SinkStatus(
            summary(ready=False, reason="ChildRejected", message=observed.rejected, stalled=True),
            {},
        )
    if observed.spark_operator_missing:
        message = "the SparkApplication kind (sparkoperator.k8s.io/v1beta2) is not installed"
        return SinkStatus(
            summary(ready=False, reason="SparkOperatorMissing", message=message, stalled=True), {}
        )
    status = (observed.application or {}).get("status") or {}
    state = str((status.get("applicationState") or {}).get("state") or "")
    error = str((status.get("applicationState") or {}).get("errorMessage") or "")
    fields = {
        "application": {
            "name": (observed.application or {}).get("metadata", {}).get("name", ""),
            "state": "SUSPENDED" if observed.suspended else state or "PENDING",
            "driverPod": (status.get("driverInfo") or {}).get("podName", ""),
            "executionAttempts": int(status.get("executionAttempts") or 0),
            "errorMessage": error[:1024],
        }
    }
    submitted = Condition(
        "ApplicationSubmitted",
        "True" if state else "False",
        "Submitted" if state else "NotSubmitted",
        state,
    )
    return SinkStatus([*_summary(state, error, observed.suspended), submitted], fields)


def _summary(state: str, error: str, suspended: bool) -> list[Condition]:
    if suspended:
        return summary(ready=True, reason="Suspended", message="spec.state is suspended")
    if state == "RUNNING":
        return summary(ready=True, reason="ApplicationRunning", message="the sink job is running")
    if state == "COMPLETED":
        return summary(ready=True, reason="ApplicationCompleted", message="the backlog was applied")
    # FAILED and SUBMISSION_FAILED are terminal for the Spark operator (its retries are spent):
    # Stalled, so kstatus says Failed as Argo CD says Degraded. FAILING is retried by the
    # Spark operator (spec.restartPolicy): in progress, with the error shown.
    if state == "FAILED":
        return summary(
            ready=False, reason="ApplicationFailed", message=error or state, stalled=True
        )
    if state == "FAILING":
        return summary(
            ready=False, reason="ApplicationFailing", message=error or state, reconciling=True
        )
    if state == "SUBMISSION_FAILED":
        return summary(ready=False, reason="SubmissionFailed", message=error or state, stalled=True)
    if state == "PENDING_RERUN":
        return summary(ready=False, reason="PendingRerun", message=error or state, reconciling=True)
    return summary(
        ready=False,
        reason="ApplicationSubmitting",
        message=state or "waiting for the Spark operator",
        reconciling=True,
    )
