"""The operator against a real kube-apiserver: CRDs, validation, reconcile, status, signals.

No kubelet runs here, so the capture pod never starts: where the flow matters the test runs
the capture engine as a local process against the real PostgreSQL and Kafka and points the
operator at its endpoint (``CDCFLOW_CAPTURE_ENDPOINT_TEMPLATE``); children's status (the
cleanup Job) is driven by patching.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kopf.testing import KopfRunner

from cdcflow.capture.status_server import StatusServer
from cdcflow.operator.devservices.processes import free_port
from tests.plugins.fix_capture import CaptureHarness, RunningEngine
from tests.plugins.fix_kube import eventually, kubectl, wait_established
from tests.services import kube

ROOT = Path(__file__).resolve().parents[2]
WAIT_S = 60.0


def _apply(cluster: kube.KubeCluster, namespace: str, document: dict[str, Any]) -> None:
    kubectl(cluster, "apply", "-n", namespace, "-f", "-", stdin=yaml.safe_dump(document))


def _rejection(cluster: kube.KubeCluster, namespace: str, document: dict[str, Any]) -> str:
    """Apply ``document`` expecting the API server to refuse it; return what it said."""
    result = kubectl(
        cluster, "apply", "-n", namespace, "-f", "-", stdin=yaml.safe_dump(document), check=False
    )
    assert result.returncode != 0, f"accepted: {document}"
    return result.stderr


def _get(cluster: kube.KubeCluster, namespace: str, *what: str) -> dict[str, Any]:
    return dict(json.loads(kubectl(cluster, "get", "-n", namespace, *what, "-o", "json").stdout))


def _eventually(check: Callable[[], Any], *, timeout: float = WAIT_S, what: str = "") -> Any:
    return eventually(check, timeout=timeout, what=what)


def _wait_for_reason(
    cluster: kube.KubeCluster, namespace: str, what: str, condition: str, reason: str
) -> dict[str, Any]:
    """Wait until ``condition`` of the object ``what`` (e.g. ``cdcc/x``) has ``reason``."""

    def check() -> dict[str, Any] | None:
        body = _get(cluster, namespace, what)
        return body if _condition(body, condition).get("reason") == reason else None

    return dict(_eventually(check, what=f"{what} {condition} {reason}"))


def _condition(body: dict[str, Any], kind: str) -> dict[str, Any]:
    return next((c for c in body.get("status", {}).get("conditions", []) if c["type"] == kind), {})


@pytest.fixture
def operator(
    kube_cluster: kube.KubeCluster, kube_namespace: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[int]:
    """The operator (kopf) watching the test's namespace; yields the capture endpoint port."""
    port = free_port()
    monkeypatch.setenv("KUBECONFIG", str(kube_cluster.kubeconfig))
    monkeypatch.setenv("CDCFLOW_CAPTURE_ENDPOINT_TEMPLATE", f"http://127.0.0.1:{port}")
    args = ["run", "--standalone", "--namespace", kube_namespace, "-m", "cdcflow.operator.handlers"]
    with KopfRunner(args, timeout=60) as runner:
        yield port
    assert runner.exception is None, runner.output


def _roll_out(cluster: kube.KubeCluster, namespace: str, name: str) -> None:
    """Stand in for the StatefulSet controller (none runs here): report the current spec of
    ``<name>-capture`` as rolled out, which the operator waits for before reading Ready."""
    statefulset = _eventually(
        lambda: _get(cluster, namespace, "statefulset", f"{name}-capture"),
        what=f"the StatefulSet {name}-capture",
    )
    status = {
        "observedGeneration": statefulset["metadata"]["generation"],
        "replicas": 1,
        "updatedReplicas": 1,
        "currentRevision": "rev",
        "updateRevision": "rev",
    }
    kubectl(
        cluster, "patch", "-n", namespace, f"statefulset/{name}-capture", "--subresource=status",
        "--type=merge", "-p", json.dumps({"status": status}),
    )  # fmt: skip


def _secret(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "stringData": data}


def _connector(
    name: str, *, host: str = "db.example", port: int = 5432, **spec: Any
) -> dict[str, Any]:
    return {
        "apiVersion": "cdcflow.io/v1alpha1",
        "kind": "CdcConnector",
        "metadata": {"name": name},
        "spec": {
            "source": {
                "postgresql": {
                    "host": host,
                    "port": port,
                    "database": "inventory",
                    "credentials": {"secretName": f"{name}-db"},
                }
            },
            "kafka": {"bootstrapServers": "kafka:9092"},
            **spec,
        },
    }


# -- CRDs and validation -------------------------------------------------------------------


def test_every_example_applies(kube_cluster: kube.KubeCluster, kube_namespace: str) -> None:
    applied = kubectl(
        kube_cluster,
        "apply",
        "-n",
        kube_namespace,
        "-k",
        str(ROOT / "examples" / "postgres-to-delta"),
    )
    assert "cdcconnector.cdcflow.io/inventory created" in applied.stdout
    assert "cdcsnapshotsignal.cdcflow.io/orders-backfill-2026 created" in applied.stdout
    kinds = kubectl(kube_cluster, "get", "cdc", "-n", kube_namespace, "-o", "name").stdout.split()
    assert "cdcconnector.cdcflow.io/inventory" in kinds


def test_operator_manifests_render_and_apply(kube_cluster: kube.KubeCluster) -> None:
    overlay = ROOT / "manifests" / "overlays" / "example"
    rendered = kubectl(kube_cluster, "kustomize", str(overlay)).stdout
    kinds = [doc["kind"] for doc in yaml.safe_load_all(rendered) if doc]
    assert {"CustomResourceDefinition", "ClusterRole", "Deployment", "ServiceAccount"} <= set(kinds)
    apply = ("apply", "--server-side", "--force-conflicts", "-f", "-")
    kubectl(kube_cluster, *apply, stdin=rendered, check=False)  # CRDs first, then the rest
    wait_established(kube_cluster, "crd/clusterkopfpeerings.kopf.dev")
    result = _eventually(
        lambda: (
            (r := kubectl(kube_cluster, *apply, stdin=rendered, check=False)).returncode == 0 and r
        ),
        what="the second apply (discovery catches up with the new CRD)",
    )
    assert "deployment.apps/cdcflow-operator serverside-applied" in result.stdout
    assert "clusterkopfpeering.kopf.dev/default serverside-applied" in result.stdout


VALID_SPEC: dict[str, Any] = _connector("x")["spec"]
INVALID_CONNECTORS: list[tuple[str, dict[str, Any], str]] = [
    ("no spec", {}, "spec: Required value"),
    ("no source", {"kafka": {"bootstrapServers": "k:9092"}}, "spec.source: Required value"),
    ("empty source", {"source": {}}, "source needs exactly one of: postgresql"),
    (
        "port too high",
        {"source": {"postgresql": {"host": "h", "database": "d", "port": 70000}}},
        "spec.source.postgresql.port",
    ),
    (
        "empty host",
        {"source": {"postgresql": {"host": "", "database": "d"}}},
        "spec.source.postgresql.host",
    ),
    (
        "no database",
        {"source": {"postgresql": {"host": "h"}}},
        "spec.source.postgresql.database: Required value",
    ),
    ("unknown state", {**VALID_SPEC, "state": "sleeping"}, 'Unsupported value: "sleeping"'),
    (
        "unknown snapshot mode",
        {**VALID_SPEC, "snapshot": {"mode": "sometimes"}},
        'Unsupported value: "sometimes"',
    ),
    (
        "unknown cleanup policy",
        {**VALID_SPEC, "cleanupPolicy": "Keep"},
        'Unsupported value: "Keep"',
    ),
    (
        "unknown offsets store",
        {**VALID_SPEC, "offsets": {"store": "redis"}},
        'Unsupported value: "redis"',
    ),
    ("negative restart request", {**VALID_SPEC, "restartRequest": -1}, "spec.restartRequest"),
    ("bad topic prefix", {**VALID_SPEC, "topicPrefix": "has space"}, "spec.topicPrefix"),
    (
        "kafka without servers",
        {**VALID_SPEC, "kafka": {}},
        "spec.kafka.bootstrapServers: Required value",
    ),
    (
        "unknown signal channel",
        {**VALID_SPEC, "signals": {"channels": ["file"]}},
        'Unsupported value: "file"',
    ),
    (
        "negative heartbeat",
        {**VALID_SPEC, "heartbeat": {"intervalMs": -5}},
        "spec.heartbeat.intervalMs",
    ),
    ("unknown field", {**VALID_SPEC, "kafak": {}}, 'unknown field "spec.kafak"'),
    (
        "no kafka",
        {k: v for k, v in VALID_SPEC.items() if k != "kafka"},
        "spec.kafka.bootstrapServers is required",
    ),
    (
        "no credentials",
        {**VALID_SPEC, "source": {"postgresql": {"host": "h", "database": "d"}}},
        "spec.source.postgresql.credentials.secretName is required",
    ),
]


@pytest.mark.parametrize(
    ("case", "spec", "message"), INVALID_CONNECTORS, ids=[c[0] for c in INVALID_CONNECTORS]
)
def test_invalid_connectors_are_rejected_with_readable_messages(
    kube_cluster: kube.KubeCluster,
    kube_namespace: str,
    case: str,
    spec: dict[str, Any],
    message: str,
) -> None:
    document = {
        "apiVersion": "cdcflow.io/v1alpha1",
        "kind": "CdcConnector",
        "metadata": {"name": "bad"},
    }
    if spec:
        document["spec"] = spec
    result = _rejection(kube_cluster, kube_namespace, document)
    assert message in result, f"{case}: {result}"


def test_children_the_api_server_would_refuse_are_refused_at_apply_time(
    kube_cluster: kube.KubeCluster, kube_namespace: str
) -> None:
    long_name = _connector("c" * 45)
    assert "metadata.name must be at most 44 characters" in _rejection(
        kube_cluster, kube_namespace, long_name
    )
    _apply(kube_cluster, kube_namespace, _connector("c" * 44))  # the longest that works
    dotted = _rejection(kube_cluster, kube_namespace, _connector("shop.orders"))
    assert "metadata.name must be a DNS label" in dotted
    memory = _connector("units", runtime={"resources": {"limits": {"memory": "512MB"}}})
    rejected = _rejection(kube_cluster, kube_namespace, memory)
    assert "spec.runtime.resources.limits.memory" in rejected, rejected
    fine = _connector("units", runtime={"resources": {"limits": {"memory": "512Mi", "cpu": 1}}})
    _apply(kube_cluster, kube_namespace, fine)


def _signal(name: str, **spec: Any) -> dict[str, Any]:
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


def test_invalid_signals_are_rejected(kube_cluster: kube.KubeCluster, kube_namespace: str) -> None:
    cases = [
        ({"action": "restart"}, 'Unsupported value: "restart"'),
        ({"dataCollections": []}, "action execute needs at least one entry in dataCollections"),
        ({"type": "eventual"}, 'Unsupported value: "eventual"'),
    ]
    for spec, message in cases:
        result = _rejection(kube_cluster, kube_namespace, _signal("bad", **spec))
        assert message in result, (spec, result)
    orphan_condition = _signal(
        "bad", additionalConditions=[{"dataCollection": "public.items", "filter": "id > 1"}]
    )
    result = _rejection(kube_cluster, kube_namespace, orphan_condition)
    assert "must be one of dataCollections" in result
    no_ref = _signal("bad")
    del no_ref["spec"]["connectorRef"]
    result = _rejection(kube_cluster, kube_namespace, no_ref)
    assert "spec.connectorRef: Required value" in result


def test_signal_spec_is_immutable(kube_cluster: kube.KubeCluster, kube_namespace: str) -> None:
    _apply(kube_cluster, kube_namespace, _signal("once"))
    changed = _signal("once", dataCollections=["public.items"])
    result = _rejection(kube_cluster, kube_namespace, changed)
    assert "spec is immutable" in result


def test_offsets_reset_is_refused_while_running(
    kube_cluster: kube.KubeCluster, kube_namespace: str
) -> None:
    _apply(kube_cluster, kube_namespace, _connector("resets"))
    running = _connector("resets", offsets={"resetRequest": 1})
    result = _rejection(kube_cluster, kube_namespace, running)
    assert "offsets.resetRequest may change only while state is stopped" in result
    stopped = _connector("resets", offsets={"resetRequest": 1}, state="stopped")
    kubectl(kube_cluster, "apply", "-n", kube_namespace, "-f", "-", stdin=yaml.safe_dump(stopped))


# -- reconcile -----------------------------------------------------------------------------


def test_missing_secret_reports_secret_not_found(
    kube_cluster: kube.KubeCluster, kube_namespace: str, operator: int
) -> None:
    _apply(kube_cluster, kube_namespace, _connector("nosecret"))
    body = _wait_for_reason(
        kube_cluster, kube_namespace, "cdcc/nosecret", "Ready", "SecretNotFound"
    )
    ready = _condition(body, "Ready")
    assert ready["status"] == "False" and "nosecret-db" in ready["message"]
    assert _condition(body, "Stalled")["status"] == "False"
    assert body["status"]["observedGeneration"] == body["metadata"]["generation"]


def _serve(running: RunningEngine, port: int) -> StatusServer:
    return StatusServer(
        running.engine.stats, host="127.0.0.1", port=port, send_signal=running.engine.send_signal
    )


def test_connector_with_a_running_engine_becomes_ready_and_shows_its_columns(
    kube_cluster: kube.KubeCluster, kube_namespace: str, operator: int, capture: CaptureHarness
) -> None:
    table = capture.table("orders")
    capture.sql(
        f"CREATE TABLE {table} (id int PRIMARY KEY)", f"INSERT INTO {table} VALUES (1), (2)"
    )
    running = capture.start(capture.resource([table]))
    server = _serve(running, operator)
    try:
        _apply(kube_cluster, kube_namespace, _secret("orders-db", username="cdc", password="pw"))
        _apply(kube_cluster, kube_namespace, _connector("orders", host=capture.postgres.host))
        _wait_for_reason(kube_cluster, kube_namespace, "cdcc/orders", "Ready", "RollingOut")
        _roll_out(kube_cluster, kube_namespace, "orders")
        kubectl(
            kube_cluster,
            "wait",
            "-n",
            kube_namespace,
            "--for=condition=Ready",
            "cdcc/orders",
            "--timeout=60s",
            timeout=90,
        )
        table_view = kubectl(kube_cluster, "get", "cdcconnectors", "-n", kube_namespace).stdout
        statefulset = _get(kube_cluster, kube_namespace, "statefulset", "orders-capture")
        config = _get(kube_cluster, kube_namespace, "configmap", "orders-capture-config")
        service = _get(kube_cluster, kube_namespace, "service", "orders-capture")
        body = _get(kube_cluster, kube_namespace, "cdcc", "orders")
    finally:
        server.close()
        running.stop()

    header, row = table_view.splitlines()[:2]
    assert header.split() == [
        "NAME",
        "SOURCE",
        "STATE",
        "SNAPSHOT",
        "LAG",
        "READY",
        "REASON",
        "AGE",
    ]
    assert row.split()[:7] == [
        "orders",
        f"postgresql://{capture.postgres.host}:5432/inventory",
        "Streaming",
        "Completed",
        row.split()[4],
        "True",
        "ConnectorRunning",
    ]
    assert _condition(body, "SnapshotCompleted")["status"] == "True"
    assert _condition(body, "Streaming")["status"] == "True"
    assert f"{capture.name}.public.{table}" in body["status"]["topics"]
    pod = statefulset["spec"]["template"]["spec"]
    assert statefulset["spec"]["replicas"] == 1
    assert pod["containers"][0]["args"][:3] == ["capture", "-f", "/etc/cdcflow/connector.yaml"]
    owner = statefulset["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["uid"]) == (
        "CdcConnector",
        "orders",
        body["metadata"]["uid"],
    )
    assert yaml.safe_load(config["data"]["connector.yaml"])["metadata"]["name"] == "orders"
    assert service["spec"]["clusterIP"] == "None"
    assert "password" not in json.dumps(body["status"]).lower()


def test_secret_rotation_rolls_the_pod_template(
    kube_cluster: kube.KubeCluster, kube_namespace: str, operator: int
) -> None:
    _apply(kube_cluster, kube_namespace, _secret("rotate-db", username="cdc", password="one"))
    _apply(kube_cluster, kube_namespace, _connector("rotate"))

    def secret_hash() -> str:
        statefulset = _get(kube_cluster, kube_namespace, "statefulset", "rotate-capture")
        annotations = statefulset["spec"]["template"]["metadata"]["annotations"]
        return str(annotations["cdcflow.io/secret-hash"])

    before = _eventually(secret_hash, what="the capture StatefulSet")
    _apply(kube_cluster, kube_namespace, _secret("rotate-db", username="cdc", password="two"))
    after = _eventually(
        lambda: secret_hash() != before and secret_hash(), timeout=45, what="a new secret hash"
    )
    assert after != before


def test_a_snapshot_signal_drives_an_incremental_snapshot_to_succeeded(
    kube_cluster: kube.KubeCluster, kube_namespace: str, operator: int, capture: CaptureHarness
) -> None:
    table, signal = capture.table("orders"), capture.table("signal")
    capture.sql(
        f"CREATE TABLE {table} (id int PRIMARY KEY)",
        f"INSERT INTO {table} SELECT g FROM generate_series(1, 3000) g",
        f"CREATE TABLE {signal} (id varchar(64) PRIMARY KEY, type varchar(32) NOT NULL, "
        "data varchar(2048))",
    )
    config = {"signal.data.collection": f"public.{signal}", "snapshot.mode": "never"}
    running = capture.start(capture.resource([table], **config))
    server = _serve(running, operator)
    try:
        _apply(kube_cluster, kube_namespace, _secret("inventory-db", username="cdc", password="pw"))
        _apply(
            kube_cluster,
            kube_namespace,
            _connector("inventory", signals={"table": f"public.{signal}"}),
        )
        _apply(
            kube_cluster, kube_namespace, _signal("backfill", dataCollections=[f"public\\.{table}"])
        )
        kubectl(
            kube_cluster,
            "wait",
            "-n",
            kube_namespace,
            "--for=condition=Succeeded",
            "cdcsig/backfill",
            "--timeout=90s",
            timeout=120,
        )
        body = _get(kube_cluster, kube_namespace, "cdcsig", "backfill")
        signals_view = kubectl(kube_cluster, "get", "cdcsig", "-n", kube_namespace).stdout
    finally:
        server.close()
        running.stop()

    reads = [e for e in capture.events(f"public.{table}") if e.op == "r"]
    assert len(reads) == 3000
    signal_id = body["status"]["signalId"]
    assert signal_id.startswith("cdcsig-") and len(signal_id) <= 42
    assert body["status"]["progress"]["tablesCompleted"] == 1
    assert _condition(body, "Signaled")["reason"] == "SignalInserted"
    assert capture.query(f"SELECT count(*) FROM {signal} WHERE id = '{signal_id}'") == [(1,)]
    assert "SnapshotCompleted" in signals_view


def test_a_signal_for_an_unknown_connector_is_rejected_in_status(
    kube_cluster: kube.KubeCluster, kube_namespace: str, operator: int
) -> None:
    _apply(kube_cluster, kube_namespace, _signal("orphan", connectorRef={"name": "nobody"}))
    body = _wait_for_reason(
        kube_cluster, kube_namespace, "cdcsig/orphan", "Accepted", "ConnectorNotFound"
    )
    assert _condition(body, "Stalled")["status"] == "True"
    # rejected is finished, unsuccessfully: the bounded-object condition says so, and a user
    # waiting for the outcome is answered instead of hanging
    succeeded = _condition(body, "Succeeded")
    assert (succeeded["status"], succeeded["reason"]) == ("False", "ConnectorNotFound"), body
    waited = kubectl(
        kube_cluster, "wait", "-n", kube_namespace, "--for=condition=Succeeded=False",
        "cdcsig/orphan", "--timeout=30s", timeout=60, check=False,
    )  # fmt: skip
    assert waited.returncode == 0, waited.stderr


# -- deletion ------------------------------------------------------------------------------


def test_deleting_a_retained_connector_needs_no_finalizer(
    kube_cluster: kube.KubeCluster, kube_namespace: str, operator: int
) -> None:
    _apply(kube_cluster, kube_namespace, _secret("keep-db", username="cdc", password="pw"))
    _apply(kube_cluster, kube_namespace, _connector("keep"))
    _eventually(
        lambda: _get(kube_cluster, kube_namespace, "cdcc", "keep")["status"].get("conditions"),
        what="the operator's status (a new object has the schema default's alone)",
    )
    assert not _get(kube_cluster, kube_namespace, "cdcc", "keep")["metadata"].get("finalizers")
    kubectl(kube_cluster, "delete", "-n", kube_namespace, "cdcc/keep", "--timeout=30s", timeout=45)


@pytest.mark.parametrize(
    ("outcome", "event"), [("succeeded", "CleanupSucceeded"), ("failed", "CleanupFailed")]
)
def test_deleting_with_cleanup_runs_the_job_and_never_hangs(
    kube_cluster: kube.KubeCluster,
    kube_namespace: str,
    operator: int,
    outcome: str,
    event: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from cdcflow.operator import handlers

    monkeypatch.setattr(handlers, "CLEANUP_TIMEOUT_S", 5.0)
    _apply(kube_cluster, kube_namespace, _secret("drop-db", username="cdc", password="pw"))
    _apply(kube_cluster, kube_namespace, _connector("drop", cleanupPolicy="Delete"))
    _eventually(
        lambda: (
            "cdcflow.io/cleanup"
            in (
                _get(kube_cluster, kube_namespace, "cdcc", "drop")["metadata"].get("finalizers")
                or []
            )
        ),
        what="the cleanup finalizer",
    )
    kubectl(kube_cluster, "delete", "-n", kube_namespace, "cdcc/drop", "--wait=false")
    job = _eventually(
        lambda: _get(kube_cluster, kube_namespace, "job", "drop-capture-cleanup"),
        what="the cleanup Job",
    )
    assert job["spec"]["template"]["spec"]["containers"][0]["args"][0] == "cleanup"
    if outcome == "succeeded":
        _finish_job(kube_cluster, kube_namespace, "drop-capture-cleanup")
    gone = _eventually(
        lambda: (
            kubectl(
                kube_cluster, "get", "-n", kube_namespace, "cdcc", "drop", check=False
            ).returncode
            != 0
        ),
        timeout=90,
        what="the connector to be deleted",
    )
    assert gone
    events = kubectl(kube_cluster, "get", "events", "-n", kube_namespace, "-o", "json").stdout
    assert event in events


# -- CdcSink -------------------------------------------------------------------------------

SPARK_APPLICATION_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {
        "name": "sparkapplications.sparkoperator.k8s.io",
        # *.k8s.io groups need this annotation; the Spark operator's own CRD carries it too.
        "annotations": {"api-approved.kubernetes.io": "unapproved, experimental-only"},
    },
    "spec": {
        "group": "sparkoperator.k8s.io",
        "scope": "Namespaced",
        "names": {"kind": "SparkApplication", "plural": "sparkapplications"},
        "versions": [
            {
                "name": "v1beta2",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": True,
                    }
                },
            }
        ],
    },
}


def _sink(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "cdcflow.io/v1alpha1",
        "kind": "CdcSink",
        "metadata": {"name": name},
        "spec": {
            "connectorRef": {"name": "lake-source"},
            "target": {"format": "delta", "path": "s3a://lake/x"},
            "trigger": {"availableNow": True},
            **spec,
        },
    }


def _application_state(cluster: kube.KubeCluster, namespace: str, state: str) -> None:
    status = {"status": {"applicationState": {"state": state, "errorMessage": ""}}}
    kubectl(
        cluster,
        "patch",
        "-n",
        namespace,
        "sparkapplication/lake-sink",
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps(status),
    )


def test_a_sink_runs_as_a_spark_application_and_follows_its_state(
    kube_cluster: kube.KubeCluster, kube_namespace: str, operator: int
) -> None:
    _apply(kube_cluster, kube_namespace, _secret("lake-source-db", username="cdc", password="pw"))
    _apply(kube_cluster, kube_namespace, _connector("lake-source", topicPrefix="shop"))
    _apply(kube_cluster, kube_namespace, _sink("lake"))
    missing = _wait_for_reason(
        kube_cluster, kube_namespace, "cdcsink/lake", "Ready", "SparkOperatorMissing"
    )
    assert _condition(missing, "Stalled")["status"] == "True"

    kubectl(kube_cluster, "apply", "-f", "-", stdin=yaml.safe_dump(SPARK_APPLICATION_CRD))
    wait_established(kube_cluster, "crd/sparkapplications.sparkoperator.k8s.io")
    application = _eventually(
        lambda: _get(kube_cluster, kube_namespace, "sparkapplication", "lake-sink"),
        timeout=45,
        what="the SparkApplication",
    )
    job = yaml.safe_load(
        _get(kube_cluster, kube_namespace, "configmap", "lake-sink-config")["data"]["sink.yaml"]
    )
    spec = application["spec"]
    assert spec["mainApplicationFile"] == "local:///opt/cdcflow/sink_main.py"
    assert spec["arguments"] == ["/etc/cdcflow/sink.yaml"]
    assert "suspend" not in spec  # not a v1beta2 SparkApplication field
    assert spec["driver"]["serviceAccount"] == "spark-operator-spark"
    assert job["spec"]["kafka"]["bootstrapServers"] == "kafka:9092"
    assert job["spec"]["connectorRef"]["topicPrefix"] == "shop"

    _application_state(kube_cluster, kube_namespace, "RUNNING")
    _wait_for_reason(kube_cluster, kube_namespace, "cdcsink/lake", "Ready", "ApplicationRunning")
    kubectl(
        kube_cluster,
        "wait",
        "-n",
        kube_namespace,
        "--for=condition=Ready",
        "cdcsink/lake",
        "--timeout=30s",
    )
    _application_state(kube_cluster, kube_namespace, "FAILED")
    failed = _wait_for_reason(
        kube_cluster, kube_namespace, "cdcsink/lake", "Ready", "ApplicationFailed"
    )
    assert _condition(failed, "Ready")["status"] == "False"

    _apply(kube_cluster, kube_namespace, _sink("lake", state="suspended"))
    _wait_for_reason(kube_cluster, kube_namespace, "cdcsink/lake", "Ready", "Suspended")
    gone = kubectl(
        kube_cluster, "get", "-n", kube_namespace, "sparkapplication", "lake-sink", check=False
    )
    assert "NotFound" in gone.stderr, "a suspended sink has no SparkApplication"
    columns = kubectl(kube_cluster, "get", "cdcsinks", "-n", kube_namespace).stdout.splitlines()[0]
    assert columns.split() == [
        "NAME",
        "CONNECTOR",
        "MODE",
        "TARGET",
        "STATE",
        "READY",
        "REASON",
        "AGE",
    ]


def _finish_job(cluster: kube.KubeCluster, namespace: str, name: str) -> None:
    """Mark a Job succeeded, as the job controller would (none runs here)."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    conditions = [
        {"type": kind, "status": "True", "lastTransitionTime": stamp}
        for kind in ("SuccessCriteriaMet", "Complete")
    ]
    status = {
        "status": {
            "succeeded": 1,
            "startTime": stamp,
            "completionTime": stamp,
            "conditions": conditions,
        }
    }
    kubectl(
        cluster,
        "patch",
        "-n",
        namespace,
        f"job/{name}",
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps(status),
    )


def test_an_offsets_reset_request_runs_a_reset_job_once(
    kube_cluster: kube.KubeCluster, kube_namespace: str, operator: int
) -> None:
    _apply(kube_cluster, kube_namespace, _secret("reset-db", username="cdc", password="pw"))
    _apply(kube_cluster, kube_namespace, _connector("reset", state="stopped"))
    _eventually(
        lambda: _get(kube_cluster, kube_namespace, "cdcc", "reset")["status"].get("conditions"),
        what="the operator's status (a new object has the schema default's alone)",
    )
    _apply(
        kube_cluster,
        kube_namespace,
        _connector("reset", state="stopped", offsets={"resetRequest": 1}),
    )
    job = _eventually(
        lambda: _get(kube_cluster, kube_namespace, "job", "reset-capture-offsets-reset-1"),
        what="the reset Job",
    )
    pod = job["spec"]["template"]["spec"]
    assert pod["containers"][0]["args"][:2] == ["offsets", "reset"]
    claims = [
        v["persistentVolumeClaim"]["claimName"]
        for v in pod["volumes"]
        if "persistentVolumeClaim" in v
    ]
    assert claims == ["data-reset-capture-0"]
    _finish_job(kube_cluster, kube_namespace, "reset-capture-offsets-reset-1")
    _eventually(
        lambda: (
            _get(kube_cluster, kube_namespace, "cdcc", "reset")["status"].get("lastResetRequest")
            == 1
        ),
        timeout=45,
        what="lastResetRequest 1",
    )
    events = kubectl(kube_cluster, "get", "events", "-n", kube_namespace, "-o", "json").stdout
    assert "OffsetsReset" in events


def test_too_many_restarts_halt_the_connector_until_a_restart_request(
    kube_cluster: kube.KubeCluster, kube_namespace: str, operator: int
) -> None:
    _apply(kube_cluster, kube_namespace, _secret("crashy-db", username="cdc", password="pw"))
    _apply(kube_cluster, kube_namespace, _connector("crashy", autoRestart={"maxRestarts": 2}))
    # No kubelet runs here: stand in for it with the pod the StatefulSet would have started.
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "crashy-capture-0"},
        "spec": {"containers": [{"name": "capture", "image": "ghcr.io/cdcflow/cdcflow:0.1.0"}]},
    }
    _apply(kube_cluster, kube_namespace, pod)
    crashed = {
        "status": {
            "containerStatuses": [
                {
                    "name": "capture",
                    "restartCount": 3,
                    "ready": False,
                    "image": "x",
                    "imageID": "",
                    "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                }
            ]
        }
    }
    kubectl(
        kube_cluster,
        "patch",
        "-n",
        kube_namespace,
        "pod/crashy-capture-0",
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps(crashed),
    )
    halted = _wait_for_reason(
        kube_cluster, kube_namespace, "cdcc/crashy", "Ready", "RestartLimitReached"
    )
    assert _condition(halted, "Stalled")["status"] == "True"
    assert halted["status"]["autoRestart"]["count"] == 3
    statefulset = _get(kube_cluster, kube_namespace, "statefulset", "crashy-capture")
    assert statefulset["spec"]["replicas"] == 0

    kubectl(kube_cluster, "delete", "-n", kube_namespace, "pod/crashy-capture-0", "--wait=false")
    _apply(
        kube_cluster,
        kube_namespace,
        _connector("crashy", autoRestart={"maxRestarts": 2}, restartRequest=1),
    )
    _wait_for_reason(kube_cluster, kube_namespace, "cdcc/crashy", "Ready", "RollingOut")
    _roll_out(kube_cluster, kube_namespace, "crashy")
    _wait_for_reason(kube_cluster, kube_namespace, "cdcc/crashy", "Ready", "RuntimeNotReady")
    assert (
        _get(kube_cluster, kube_namespace, "statefulset", "crashy-capture")["spec"]["replicas"] == 1
    )


def test_discovery_is_safe_under_concurrent_lookups_of_present_and_missing_kinds(
    kube_cluster: kube.KubeCluster, kube_namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kopf's handler threads and the poller share one client; a missing kind (no Spark
    operator, say) used to re-read discovery on every lookup and break readers mid-refresh."""
    from concurrent.futures import ThreadPoolExecutor
    from itertools import pairwise

    from cdcflow.operator.kube import MISSING_RECHECK_S, Kube, load_configuration

    monkeypatch.setenv("KUBECONFIG", str(kube_cluster.kubeconfig))
    client = Kube(load_configuration())
    # every re-read of discovery, whoever asks for it (the operator or the client library)
    discoverer = client._dynamic.resources
    invalidate = discoverer.invalidate_cache
    rereads: list[float] = []

    def counted() -> None:
        rereads.append(time.monotonic())
        invalidate()

    monkeypatch.setattr(discoverer, "invalidate_cache", counted)

    def lookups(worker: int) -> int:
        found = 0
        for _ in range(40):
            if worker % 2:
                found += not client.has_kind("never.cdcflow.io/v1", "NotInstalled")
            else:
                found += client.get("v1", "ServiceAccount", kube_namespace, "default") is None
        return found

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(lookups, range(8)))
    assert sum(results[1::2]) == 160, "the missing kind is reported missing every time"
    # 160 lookups of the missing kind re-read discovery at most once per recheck window
    gaps = [later - earlier for earlier, later in pairwise(rereads)]
    assert rereads, "the first lookup of a missing kind re-reads discovery (CRDs come and go)"
    assert all(gap >= MISSING_RECHECK_S for gap in gaps), (
        f"{len(rereads)} discovery re-reads, {min(gaps, default=0):.3f}s apart at the closest"
    )
