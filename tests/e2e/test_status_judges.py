"""Every Ready reason of a CdcConnector, a CdcSink and a CdcSnapshotSignal reads the same in
users' status tools.

For each state the operator can report, the status the operator computes for it is written to
the resource through the real API server's status subresource, exactly as the operator
writes it (conditions merged, generation observed); then the object as served is judged by
kstatus (the real cli-utils library: Flux, kubectl plugins), the shipped Argo CD health script
and ``kubectl wait --for=condition=Ready``. How each state arises from a real fault (a wrong
password, a crash loop, a broker down, a failed Spark job, ...) is tested where it is made; here the
question is only whether the three judges agree with what the state means. Before the status is
written, each object is judged as just created: in progress, never reconciled at once.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
import yaml

from cdcflow.capture.connector_resource import parse_connector
from cdcflow.operator import connector_status, signal_status, sink_status
from cdcflow.operator.conditions import Condition, merge
from cdcflow.operator.signal_resource import CdcSnapshotSignal
from tests.plugins.fix_kube import kubectl
from tests.services import kube
from tests.status_judges import verdicts

HEALTHY = ("Current", "Healthy")
SUSPENDED = ("Current", "Suspended")
PROGRESSING = ("InProgress", "Progressing")
BROKEN = ("Failed", "Degraded")
SECRETS = ("orders-db",)


@dataclass(frozen=True)
class State:
    """One state: how it is observed, the Ready reason and what the judges must say."""

    reason: str
    judged: tuple[str, str]
    capture: dict[str, Any] | None = None
    observed: dict[str, Any] = field(default_factory=dict)
    spec: dict[str, Any] = field(default_factory=dict)
    #: conditions ``kubectl wait --for=condition=…`` must find met at once (besides Ready)
    met: tuple[str, ...] = ()

    @property
    def ready(self) -> bool:
        return self.judged in (HEALTHY, SUSPENDED)


STATES = {
    "streaming": State(
        "ConnectorRunning", HEALTHY, capture={"phase": "streaming", "connected": True}
    ),
    "snapshot": State("SnapshotRunning", HEALTHY, capture={"phase": "snapshot", "connected": True}),
    "paused": State("ConnectorPaused", SUSPENDED, spec={"state": "paused"}),
    "stopped": State("ConnectorStopped", SUSPENDED, spec={"state": "stopped"}),
    "pod-starting": State(
        "RuntimeNotReady", PROGRESSING, observed={"capture_error": "connection refused"}
    ),
    "engine-starting": State(
        "RuntimeNotReady", PROGRESSING, capture={"phase": "starting", "connected": False}
    ),
    "rolling-out": State(
        "RollingOut", PROGRESSING, observed={"rollout": "1 of 1 pods run an older template"}
    ),
    "secret-missing": State("SecretNotFound", PROGRESSING, observed={"missing_secrets": SECRETS}),
    "kafka-down": State(
        "KafkaUnavailable",
        PROGRESSING,
        capture={
            "phase": "streaming",
            "connected": True,
            "kafka": {"lastError": "all brokers down"},
        },
    ),
    "source-down": State(
        "SourceUnavailable",
        PROGRESSING,
        capture={"phase": "streaming", "connected": False, "lastError": "connection refused"},
    ),
    "engine-failed": State(
        "ConnectorFailed",
        BROKEN,
        capture={"phase": "failed", "connected": False, "lastError": "password authentication"},
    ),
    "crash-loop": State(
        "ConnectorFailed",
        BROKEN,
        observed={"termination": "exit code 1: password authentication failed", "restarts": 3},
    ),
    "restart-limit": State("RestartLimitReached", BROKEN, observed={"halted": True, "restarts": 6}),
    "invalid": State("InvalidConfig", BROKEN, observed={"config_error": "spec.kafka: required"}),
}


def _application(state: str, error: str = "") -> dict[str, Any]:
    return {"status": {"applicationState": {"state": state, "errorMessage": error}}}


SINK_STATES = {
    "running": State(
        "ApplicationRunning", HEALTHY, observed={"application": _application("RUNNING")}
    ),
    "completed": State(
        "ApplicationCompleted", HEALTHY, observed={"application": _application("COMPLETED")}
    ),
    "suspended": State(
        "Suspended", SUSPENDED, observed={"suspended": True}, spec={"state": "suspended"}
    ),
    "submitting": State(
        "ApplicationSubmitting", PROGRESSING, observed={"application": _application("SUBMITTED")}
    ),
    "not-submitted-yet": State("ApplicationSubmitting", PROGRESSING, observed={"application": {}}),
    "pending-rerun": State(
        "PendingRerun", PROGRESSING, observed={"application": _application("PENDING_RERUN")}
    ),
    "failing": State(
        "ApplicationFailing",
        PROGRESSING,
        observed={"application": _application("FAILING", "driver exited with 1")},
    ),
    "failed": State(
        "ApplicationFailed",
        BROKEN,
        observed={"application": _application("FAILED", "driver exited with 1")},
    ),
    "submission-failed": State(
        "SubmissionFailed", BROKEN, observed={"application": _application("SUBMISSION_FAILED")}
    ),
    "no-connector": State(
        "ConnectorNotFound", BROKEN, observed={"connector_missing": "CdcConnector lake-source"}
    ),
    "no-spark-operator": State(
        "SparkOperatorMissing", BROKEN, observed={"spark_operator_missing": True}
    ),
    "invalid": State("InvalidConfig", BROKEN, observed={"invalid": "spec.target.path: required"}),
}


def _notified(status: str, *events: dict[str, Any]) -> dict[str, Any]:
    """The capture pod's record of one signal (``/status`` ``signals[<id>]``)."""
    started = {"type": "STARTED", "data_collections": "public.orders"}
    return {"status": status, "events": [started, *events]}


SIGNAL_STATES = {
    "pending": State(
        "SignalPending", PROGRESSING, observed={"send_error": "capture pod not reachable"}
    ),
    "rejected": State(
        "ConnectorNotFound",
        BROKEN,
        observed={"rejection": ("ConnectorNotFound", "no CdcConnector inventory here")},
        met=("Succeeded=False",),
    ),
    "aborted": State(
        "SnapshotAborted",
        BROKEN,
        capture=_notified("ABORTED", {"type": "ABORTED", "reason": "stopped by a stop signal"}),
        observed={"signaled": True},
        met=("Succeeded=False",),
    ),
    "completed": State(
        "SnapshotCompleted",
        HEALTHY,
        capture=_notified(
            "COMPLETED",
            {"type": "TABLE_SCAN_COMPLETED", "total_rows_scanned": 2000},
            {"type": "COMPLETED"},
        ),
        observed={"signaled": True},
        met=("Succeeded",),
    ),
    "already-run": State(
        "AlreadyRun", HEALTHY, observed={"signaled": True, "ran_before": True}, met=("Succeeded",)
    ),
}


def _connector(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "cdcflow.io/v1alpha1",
        "kind": "CdcConnector",
        "metadata": {"name": name},
        "spec": {
            "source": {
                "postgresql": {
                    "host": "db.example",
                    "database": "inventory",
                    "credentials": {"secretName": SECRETS[0]},
                }
            },
            "kafka": {"bootstrapServers": "kafka:9092"},
            **spec,
        },
    }


def _sink(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "cdcflow.io/v1alpha1",
        "kind": "CdcSink",
        "metadata": {"name": name},
        "spec": {
            "connectorRef": {"name": "lake-source"},
            "target": {"format": "delta", "path": "s3a://lake/x"},
            **spec,
        },
    }


def _signal(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "cdcflow.io/v1alpha1",
        "kind": "CdcSnapshotSignal",
        "metadata": {"name": name},
        "spec": {
            "connectorRef": {"name": "inventory"},
            "dataCollections": ["public.orders"],
            **spec,
        },
    }


StatusOf = Callable[[State, dict[str, Any]], tuple[list[Condition], dict[str, Any]]]


def _connector_status(
    state: State, document: dict[str, Any]
) -> tuple[list[Condition], dict[str, Any]]:
    """The conditions and fields the operator computes for ``state`` (handlers.py)."""
    resource = None if "config_error" in state.observed else parse_connector(document)
    observed = connector_status.Observed(resource=resource, capture=state.capture, **state.observed)
    result = connector_status.compute(observed)
    return result.conditions, result.fields


def _sink_status(state: State, document: dict[str, Any]) -> tuple[list[Condition], dict[str, Any]]:
    result = sink_status.compute(sink_status.Observed(**state.observed))
    return result.conditions, result.fields


def _signal_status(
    state: State, document: dict[str, Any]
) -> tuple[list[Condition], dict[str, Any]]:
    """What the operator computes for a signal the capture pod reports ``state.capture`` for."""
    signal = CdcSnapshotSignal.model_validate(document)
    uid = signal_status.signal_id(signal)
    signals = {"signals": {uid: state.capture}} if state.capture else None
    observed = signal_status.Observed(uid=uid, signal=signal, capture=signals, **state.observed)
    result = signal_status.compute(observed)
    return result.conditions, result.fields


@pytest.mark.parametrize("name", list(STATES))
def test_every_connector_ready_reason_is_judged_alike_by_kstatus_argo_cd_and_kubectl_wait(
    kube_cluster: kube.KubeCluster, kube_namespace: str, name: str
) -> None:
    state = STATES[name]
    document = _connector(name, state.spec)
    _assert_judged(kube_cluster, kube_namespace, document, state, _connector_status)


@pytest.mark.parametrize("name", list(SINK_STATES))
def test_every_sink_ready_reason_is_judged_alike_by_kstatus_argo_cd_and_kubectl_wait(
    kube_cluster: kube.KubeCluster, kube_namespace: str, name: str
) -> None:
    state = SINK_STATES[name]
    document = _sink(name, state.spec)
    _assert_judged(kube_cluster, kube_namespace, document, state, _sink_status)


@pytest.mark.parametrize("name", list(SIGNAL_STATES))
def test_every_signal_outcome_is_judged_alike_by_kstatus_argo_cd_and_kubectl_wait(
    kube_cluster: kube.KubeCluster, kube_namespace: str, name: str
) -> None:
    state = SIGNAL_STATES[name]
    document = _signal(name, state.spec)
    _assert_judged(kube_cluster, kube_namespace, document, state, _signal_status)


def _assert_judged(
    cluster: kube.KubeCluster,
    namespace: str,
    document: dict[str, Any],
    state: State,
    status_of: StatusOf,
) -> None:
    ns = ("-n", namespace)
    what = f"{document['kind'].lower()}/{document['metadata']['name']}"
    kubectl(cluster, "apply", *ns, "-f", "-", stdin=yaml.safe_dump(document))
    served = json.loads(kubectl(cluster, "get", *ns, what, "-o", "json").stdout)
    # just created, before any operator looked at it: the CRD's schema default, which makes
    # it in progress (no status at all would be Current at once for kstatus and Flux)
    assert served["status"] == {"observedGeneration": 0}, served.get("status")
    assert verdicts(served) == PROGRESSING
    generation = served["metadata"]["generation"]
    desired, fields = status_of(state, document)
    conditions = merge([], desired, generation=generation)
    status = {**fields, "conditions": conditions, "observedGeneration": generation}
    kubectl(
        cluster, "patch", *ns, what, "--subresource=status", "--type=merge",
        "-p", json.dumps({"status": status}),
    )  # fmt: skip

    body = json.loads(kubectl(cluster, "get", *ns, what, "-o", "json").stdout)
    ready = next(c for c in body["status"]["conditions"] if c["type"] == "Ready")
    assert ready["reason"] == state.reason
    assert verdicts(body) == state.judged
    wait = kubectl(cluster, "wait", *ns, "--for=condition=Ready", what, "--timeout=1s", check=False)
    assert (wait.returncode == 0) == state.ready, wait.stderr
    for condition in state.met:
        met = kubectl(
            cluster, "wait", *ns, f"--for=condition={condition}", what, "--timeout=10s",
            check=False,
        )  # fmt: skip
        assert met.returncode == 0, f"kubectl wait --for=condition={condition}: {met.stderr}"
