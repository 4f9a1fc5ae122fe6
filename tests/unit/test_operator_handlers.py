"""The operator's reconcile functions against a fake API server: what they write and announce."""

from __future__ import annotations

import json
from typing import Any

import kopf
import pytest
from kubernetes import client
from kubernetes.dynamic.exceptions import api_exception

from cdcflow.operator import handlers
from cdcflow.operator.conditions import Condition, find, merge, summary

QUOTA = (
    'statefulsets.apps "orders-capture" is forbidden: exceeded quota: compute, requested: '
    "limits.memory=4Gi, used: limits.memory=0, limited: limits.memory=1Gi"
)


def _refusal(status: int, reason: str, message: str) -> client.ApiException:
    """An error as the dynamic client raises it: a Status body behind an HTTP dump."""
    raw = client.ApiException(status=status, reason=reason)
    raw.headers = {"Content-Type": "application/json", "Audit-Id": "0f6e"}
    raw.body = json.dumps(
        {"kind": "Status", "status": "Failure", "message": message, "code": status}
    ).encode()
    return api_exception(raw)  # type: ignore[no-any-return]


class FakeKube:
    """Objects by (kind, name); ``refuse`` maps a kind to the error its apply raises."""

    def __init__(
        self, objects: dict[tuple[str, str], Any] | None = None, **refuse: Exception
    ) -> None:
        self.objects = dict(objects or {})
        self.refuse = refuse
        self.applied: list[dict[str, Any]] = []
        self.events: list[dict[str, Any]] = []
        self.statuses: list[dict[str, Any]] = []
        self.deleted: list[tuple[str, str]] = []

    def apply(self, manifest: dict[str, Any]) -> dict[str, Any]:
        if manifest["kind"] in self.refuse:
            raise self.refuse[manifest["kind"]]
        self.applied.append(manifest)
        if manifest["kind"] != "StatefulSet":
            return manifest
        revision = {"currentRevision": "r1", "updateRevision": "r1"}
        replicas = manifest["spec"]["replicas"]
        status = {"observedGeneration": 1, "updatedReplicas": replicas, **revision}
        return {**manifest, "metadata": {**manifest["metadata"], "generation": 1}, "status": status}

    def get(self, api_version: str, kind: str, namespace: str, name: str) -> Any:
        return self.objects.get((kind, name))

    def delete(self, api_version: str, kind: str, namespace: str, name: str) -> None:
        self.deleted.append((kind, name))

    def has_kind(self, api_version: str, kind: str) -> bool:
        return True

    def pods(self, namespace: str, selector: str) -> list[Any]:
        return [p for (kind, _), p in self.objects.items() if kind == f"Pod {selector}"]

    def secrets_hash(self, namespace: str, names: list[str]) -> tuple[str, list[str]]:
        return "h1", []

    def patch_status(
        self, api_version: str, kind: str, namespace: str, name: str, status: dict[str, Any]
    ) -> None:
        self.statuses.append(status)

    def patch_metadata(self, *args: Any) -> None:
        pass

    def post_event(self, obj: dict[str, Any], *, warning: bool, reason: str, message: str) -> None:
        self.events.append({"warning": warning, "reason": reason, "message": message})


CONNECTOR_SPEC: dict[str, Any] = {
    "source": {
        "postgresql": {
            "host": "pg.db.svc",
            "database": "shop",
            "credentials": {"secretName": "pg-cdc"},
        }
    },
    "tables": {"include": ["public.orders"]},
    "kafka": {"bootstrapServers": "kafka:9092"},
}


def _body(kind: str, name: str, spec: dict[str, Any], **extra: Any) -> kopf.Body:
    metadata = {"name": name, "namespace": "shop", "uid": f"uid-{name}", "generation": 1}
    return kopf.Body(
        {  # type: ignore[arg-type]
            "apiVersion": "cdcflow.io/v1alpha1",
            "kind": kind,
            "metadata": {**metadata, **extra.pop("metadata", {})},
            "spec": spec,
            **extra,
        }
    )


def _conditions(status: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
    return {c["type"]: (c["status"], c["reason"], c["message"]) for c in status["conditions"]}


# -- item 5: a child the API server refuses ------------------------------------------------


def test_a_connector_child_the_api_server_refuses_gives_child_rejected_and_an_event() -> None:
    kube = FakeKube(StatefulSet=_refusal(403, "Forbidden", QUOTA))
    update = handlers._connector_update(kube, _body("CdcConnector", "orders", CONNECTOR_SPEC))

    conditions = _conditions(update.status)
    assert conditions["Ready"] == ("False", "ChildRejected", conditions["Ready"][2])
    assert conditions["Stalled"][:2] == ("True", "ChildRejected")
    assert conditions["Streaming"][:2] == ("False", "NotStreaming")
    message = conditions["Ready"][2]
    assert "StatefulSet orders-capture" in message and QUOTA in message
    assert "HTTP response" not in message and "Audit-Id" not in message, message
    assert update.status["observedGeneration"] == 1
    assert kube.events == [{"warning": True, "reason": "ChildRejected", "message": message}]


def test_an_admission_webhook_refusing_the_spark_application_gives_child_rejected() -> None:
    denied = 'admission webhook "policy.example" denied the request: no hostPath'
    connector = _body("CdcConnector", "orders", CONNECTOR_SPEC)
    kube = FakeKube(
        {("CdcConnector", "orders"): dict(connector)},
        SparkApplication=_refusal(400, "Bad Request", denied),
    )
    spec = {
        "connectorRef": {"name": "orders"},
        "target": {"format": "delta", "path": "s3a://lake/orders"},
    }
    update = handlers._sink_update(kube, _body("CdcSink", "lake", spec))

    conditions = _conditions(update.status)
    assert conditions["Ready"][:2] == ("False", "ChildRejected")
    assert conditions["Stalled"][:2] == ("True", "ChildRejected")
    assert conditions["Ready"][2] == f"the API server refused SparkApplication lake-sink: {denied}"
    assert [event["reason"] for event in kube.events] == ["ChildRejected"]
    assert [m["kind"] for m in kube.applied] == ["ConfigMap"]


def test_a_suspended_sink_deletes_its_application_and_the_driver_the_spark_operator_leaves() -> (
    None
):
    connector = _body("CdcConnector", "orders", CONNECTOR_SPEC)
    kube = FakeKube({("CdcConnector", "orders"): dict(connector)})
    spec = {
        "connectorRef": {"name": "orders"},
        "target": {"format": "delta", "path": "s3a://lake/orders"},
        "state": "suspended",
    }
    update = handlers._sink_update(kube, _body("CdcSink", "lake", spec))

    assert kube.deleted == [("SparkApplication", "lake-sink"), ("Pod", "lake-sink-driver")]
    assert _conditions(update.status)["Ready"][1] == "Suspended"


def test_a_failed_cleanup_names_what_to_drop_by_hand_and_why_the_job_failed() -> None:
    refused = "connection to server at pg.db.svc failed: Connection refused"
    job_pod = {
        "status": {
            "containerStatuses": [
                {
                    "name": "capture",
                    "state": {"terminated": {"exitCode": 1, "reason": "Error", "message": refused}},
                }
            ]
        }
    }
    failed_job = {"status": {"failed": 4}}
    kube = FakeKube(
        {
            ("Job", "orders-capture-cleanup"): failed_job,
            ("Pod job-name=orders-capture-cleanup", "p1"): job_pod,
        }
    )
    deleted = {"deletionTimestamp": "2020-01-01T00:00:00Z", "finalizers": [handlers.FINALIZER]}
    body = _body("CdcConnector", "orders", {**CONNECTOR_SPEC, "cleanupPolicy": "Delete"},
                 metadata=deleted)  # fmt: skip

    handlers._deletion_step(kube, body)  # long past the cleanup timeout: gives up

    (event,) = kube.events
    assert event["reason"] == "CleanupFailed"
    assert refused in event["message"]
    assert "replication slot orders and publication orders_publication" in event["message"]


@pytest.mark.parametrize("status", [409, 429, 500])
def test_a_conflict_throttling_or_server_error_is_retried_not_reported(status: int) -> None:
    kube = FakeKube(StatefulSet=_refusal(status, "X", "try again"))
    with pytest.raises(client.ApiException):
        handlers._connector_update(kube, _body("CdcConnector", "orders", CONNECTOR_SPEC))


# -- item 3: one earlier kill is not a failed connector; a crash loop is -------------------

OOM = {"terminated": {"exitCode": 137, "reason": "OOMKilled", "message": ""}}


def _pod(state: dict[str, Any], restarts: int = 1) -> dict[str, Any]:
    capture = {"name": "capture", "restartCount": restarts, "state": state, "lastState": OOM}
    return {"status": {"containerStatuses": [capture]}}


def _reconcile_with_pod(
    monkeypatch: pytest.MonkeyPatch, pod: dict[str, Any], capture: dict[str, Any] | None
) -> dict[str, tuple[str, str, str]]:
    def status(base: str) -> dict[str, Any]:
        if capture is None:
            raise handlers.capture_client.CaptureUnreachableError("connection refused")
        return capture

    monkeypatch.setattr(handlers.capture_client, "status", status)
    kube = FakeKube({("Pod", "orders-capture-0"): pod})
    update = handlers._connector_update(kube, _body("CdcConnector", "orders", CONNECTOR_SPEC))
    return _conditions(update.status)


@pytest.mark.parametrize(
    "state",
    [
        {"running": {"startedAt": "2026-01-01T00:00:00Z"}},
        {"waiting": {"reason": "ContainerCreating"}},
    ],
    ids=["running", "starting"],
)
def test_one_earlier_oom_kill_of_a_container_that_runs_again_is_not_stalled(
    monkeypatch: pytest.MonkeyPatch, state: dict[str, Any]
) -> None:
    conditions = _reconcile_with_pod(monkeypatch, _pod(state), capture=None)
    assert conditions["Ready"][:2] == ("False", "RuntimeNotReady")
    assert conditions["Stalled"][:2] == ("False", "NoError")
    assert conditions["Reconciling"][0] == "True"
    assert "OOMKilled (exit code 137)" in conditions["Ready"][2]


def test_a_pod_that_cannot_be_asked_keeps_the_cause_it_last_reported(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def unreachable(base: str) -> dict[str, Any]:
        raise handlers.capture_client.CaptureUnreachableError("No address associated")

    monkeypatch.setattr(handlers.capture_client, "status", unreachable)
    down = "capture cannot reach the source and retries: connection refused"
    status = {
        "state": "Streaming",
        "conditions": [
            {
                "type": "Ready",
                "status": "False",
                "reason": "SourceUnavailable",
                "message": down,
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
        ],
    }
    running = _pod({"running": {"startedAt": "2026-01-01T00:00:00Z"}}, restarts=0)
    kube = FakeKube({("Pod", "orders-capture-0"): running})
    body = _body("CdcConnector", "orders", CONNECTOR_SPEC, status=status)
    for _ in range(2):  # and again: the note is not repeated
        update = handlers._connector_update(kube, body)
        body = _body("CdcConnector", "orders", CONNECTOR_SPEC, status=update.status)

    ready = _conditions(update.status)["Ready"]
    assert ready[:2] == ("False", "SourceUnavailable")
    assert ready[2].startswith(down) and ready[2].count("not reachable now") == 1
    assert update.status["state"] == "Streaming"


def test_a_streaming_connector_after_an_oom_kill_is_ready_and_mentions_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    streaming = {"phase": "streaming", "connected": True, "kafka": {"connected": True}}
    conditions = _reconcile_with_pod(monkeypatch, _pod({"running": {}}), capture=streaming)
    assert conditions["Ready"][:2] == ("True", "ConnectorRunning")
    assert conditions["Stalled"][0] == "False"
    assert conditions["Streaming"][:2] == ("True", "Streaming")
    assert "OOMKilled (exit code 137)" in conditions["Ready"][2]


def test_a_container_in_crash_loop_back_off_is_a_failed_connector(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pod = _pod({"waiting": {"reason": "CrashLoopBackOff"}}, restarts=4)
    conditions = _reconcile_with_pod(monkeypatch, pod, capture=None)
    assert conditions["Ready"][:2] == ("False", "ConnectorFailed")
    assert conditions["Stalled"][:2] == ("True", "ConnectorFailed")
    assert "CrashLoopBackOff" in conditions["Ready"][2]
    assert "OOMKilled (exit code 137)" in conditions["Ready"][2]


# -- item 14 (b): Events for Ready reasons -------------------------------------------------


@pytest.mark.parametrize(
    ("conditions", "warning"),
    [
        (
            summary(ready=False, reason="RuntimeNotReady", message="starting", reconciling=True),
            False,
        ),
        (summary(ready=False, reason="RollingOut", message="revision r2", reconciling=True), False),
        (summary(ready=True, reason="ConnectorRunning", message="capture is streaming"), False),
        (summary(ready=False, reason="ConnectorFailed", message="exit 2", stalled=True), True),
    ],
    ids=["RuntimeNotReady", "RollingOut", "ConnectorRunning", "ConnectorFailed"],
)
def test_a_new_ready_reason_posts_a_normal_event_while_progressing_and_a_warning_on_failure(
    conditions: list[Condition], warning: bool
) -> None:
    kube = FakeKube()
    before = merge([], summary(ready=False, reason="SecretNotFound", message="x"), generation=1)
    after = merge(before, conditions, generation=1)
    handlers._announce(kube, _body("CdcConnector", "orders", CONNECTOR_SPEC), before, after)
    reason = conditions[0].reason
    assert kube.events == [{"warning": warning, "reason": reason, "message": conditions[0].message}]
    # the same reason again is no news
    handlers._announce(kube, _body("CdcConnector", "orders", CONNECTOR_SPEC), after, after)
    assert len(kube.events) == 1


# -- item 14 (e): deleting with a cleanup Job ----------------------------------------------


def _deleting() -> kopf.Body:
    return _body(
        "CdcConnector",
        "orders",
        {**CONNECTOR_SPEC, "cleanupPolicy": "Delete"},
        metadata={
            "finalizers": [handlers.FINALIZER],
            "deletionTimestamp": handlers.now(),
        },
        status={
            "conditions": merge(
                [],
                [
                    *summary(ready=True, reason="ConnectorRunning", message="capture is streaming"),
                    Condition("Streaming", "True", "Streaming", "7 events, lag 0ms"),
                ],
                generation=1,
            ),
            "lag": "0ms",
        },
    )


def test_a_deleting_connector_whose_cleanup_job_runs_is_not_ready_cleanup_running() -> None:
    job = "orders-capture-cleanup"
    kube = FakeKube({("Job", job): {"status": {"active": 1}}})
    handlers._deletion_step(kube, _deleting())

    (status,) = kube.statuses
    conditions = _conditions(status)
    assert conditions["Ready"] == ("False", "CleanupRunning", f"waiting for cleanup Job {job}")
    assert conditions["Reconciling"][:2] == ("True", "CleanupRunning")
    assert conditions["Stalled"][0] == "False"
    assert conditions["Streaming"][:2] == ("False", "NotStreaming")
    assert status["state"] == "Deleting" and status["lag"] is None
    assert status["source"] == "postgresql://pg.db.svc:5432/shop"
    assert [event["reason"] for event in kube.events] == ["CleanupRunning"]
    assert not kube.events[0]["warning"]


def test_a_refused_cleanup_job_keeps_the_finalizer_and_says_why() -> None:
    kube = FakeKube(Job=_refusal(403, "Forbidden", "exceeded quota: jobs"))
    handlers._deletion_step(kube, _deleting())

    (status,) = kube.statuses
    ready = _conditions(status)["Ready"]
    assert ready[:2] == ("False", "CleanupRunning")
    assert "exceeded quota: jobs" in ready[2]
    assert find(status["conditions"], "Ready") is not None
