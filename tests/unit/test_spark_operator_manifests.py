"""The Kubeflow Spark operator's manifests: RBAC covers what v2.3.0 uses, the controller's flags."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from tests.services import spark_operator as so

IMAGE = "cdcflow/spark-operator:dev"
JOBS = "jobs"
Need = tuple[str, str, tuple[str, ...]]

# What the v2.3.0 controller does in a job namespace: its reconcilers' kubebuilder:rbac markers,
# plus what spark-submit creates with the controller's token (driver pod, ConfigMap, Service).
CONTROLLER_NEEDS: list[Need] = [
    ("", "pods", ("get", "list", "watch", "create", "update", "patch", "delete")),
    ("", "pods", ("deletecollection",)),
    ("", "configmaps", ("get", "list", "watch", "create", "update", "patch", "delete")),
    ("", "services", ("get", "list", "watch", "create", "update", "delete")),
    ("", "persistentvolumeclaims", ("get", "list", "watch")),
    ("", "events", ("create", "update", "patch")),
    ("networking.k8s.io", "ingresses", ("get", "list", "watch", "create", "update", "delete")),
    ("sparkoperator.k8s.io", "sparkapplications", ("get", "list", "watch", "update", "patch")),
    ("sparkoperator.k8s.io", "sparkapplications/status", ("get", "update", "patch")),
    ("sparkoperator.k8s.io", "sparkapplications/finalizers", ("update",)),
    ("sparkoperator.k8s.io", "scheduledsparkapplications", ("get", "list", "watch", "update")),
    ("sparkoperator.k8s.io", "scheduledsparkapplications/status", ("get", "update", "patch")),
    ("sparkoperator.k8s.io", "sparkconnects", ("get", "list", "watch", "update", "patch")),
    ("sparkoperator.k8s.io", "sparkconnects/status", ("get", "update", "patch")),
]
CLUSTER_NEEDS: list[Need] = [
    ("", "nodes", ("get",)),
    ("apiextensions.k8s.io", "customresourcedefinitions", ("get",)),
]
# A driver creates, watches and deletes its executors and their ConfigMap (and on-demand PVCs).
DRIVER_NEEDS: list[Need] = [
    ("", "pods", ("get", "list", "watch", "create", "delete", "deletecollection")),
    ("", "configmaps", ("get", "list", "create", "delete", "deletecollection")),
    ("", "services", ("get", "create", "delete")),
    ("", "persistentvolumeclaims", ("get", "list", "create", "delete", "deletecollection")),
]


def allows(rules: list[dict[str, Any]], group: str, resource: str, verb: str) -> bool:
    return any(
        group in rule["apiGroups"] and resource in rule["resources"] and verb in rule["verbs"]
        for rule in rules
    )


def missing(rules: list[dict[str, Any]], needs: list[Need]) -> list[tuple[str, str, str]]:
    return [
        (group, resource, verb)
        for group, resource, verbs in needs
        for verb in verbs
        if not allows(rules, group, resource, verb)
    ]


def by_kind(documents: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [document for document in documents if document["kind"] == kind]


def one(documents: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (document,) = by_kind(documents, kind)
    return document


def container(documents: list[dict[str, Any]]) -> dict[str, Any]:
    (only,) = one(documents, "Deployment")["spec"]["template"]["spec"]["containers"]
    return dict(only)


def test_cluster_wide_controller_gets_every_job_rule_in_its_cluster_role() -> None:
    documents = so.controller_manifests(image=IMAGE)
    rules = one(documents, "ClusterRole")["rules"]
    assert missing(rules, CONTROLLER_NEEDS + CLUSTER_NEEDS) == []
    assert by_kind(documents, "Role") == []
    binding = one(documents, "ClusterRoleBinding")
    assert binding["roleRef"]["name"] == one(documents, "ClusterRole")["metadata"]["name"]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": so.CONTROLLER_NAME, "namespace": "spark-operator"}
    ]


def test_namespaced_controller_gets_job_rules_only_where_it_watches() -> None:
    documents = so.controller_manifests(
        image=IMAGE, namespace="ops", watch_namespaces=[JOBS, "more", JOBS]
    )
    cluster_rules = one(documents, "ClusterRole")["rules"]
    assert missing(cluster_rules, CLUSTER_NEEDS) == []
    assert not allows(cluster_rules, "", "pods", "create")
    roles = by_kind(documents, "Role")
    assert [role["metadata"]["namespace"] for role in roles] == [JOBS, "more"]
    for role in roles:
        assert missing(role["rules"], CONTROLLER_NEEDS) == []
    for binding in by_kind(documents, "RoleBinding"):
        assert binding["roleRef"] == {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "Role",
            "name": so.CONTROLLER_NAME,
        }
        assert binding["subjects"][0]["namespace"] == "ops"
    assert f"--namespaces={JOBS},more,{JOBS}" in container(documents)["args"]


def test_manifests_come_in_apply_order_in_the_operator_namespace() -> None:
    documents = so.controller_manifests(image=IMAGE, namespace="ops")
    assert documents[0] == {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "ops", "labels": so.LABELS},
    }
    assert documents[-1]["kind"] == "Deployment"
    namespaced = [d for d in documents if d["kind"] in {"ServiceAccount", "Deployment"}]
    assert {d["metadata"]["namespace"] for d in namespaced} == {"ops"}
    assert all("namespace" not in d["metadata"] for d in documents if d["kind"].startswith("Cl"))


def test_controller_runs_without_webhook_leader_election_ui_or_metrics() -> None:
    args = container(so.controller_manifests(image=IMAGE))["args"]
    assert args[:2] == ["controller", "start"]
    for flag in (
        "--enable-ui-service=false",
        "--leader-election=false",
        "--enable-metrics=false",
        "--metrics-bind-address=0",
        "--pprof-bind-address=0",
        f"--health-probe-bind-address=:{so.HEALTH_PORT}",
        f"--controller-threads={so.CONTROLLER_THREADS}",
    ):
        assert flag in args
    assert not any(arg.startswith("--namespaces") for arg in args)
    assert not any("webhook" in arg or "cert" in arg for arg in args)


def test_deployment_runs_the_local_image_with_spark_home_and_a_writable_tmp() -> None:
    documents = so.controller_manifests(image=IMAGE, spark_home="/opt/pyspark")
    deployment = one(documents, "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    main = container(documents)
    assert deployment["spec"]["replicas"] == 1
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}
    assert deployment["spec"]["selector"]["matchLabels"].items() <= (
        deployment["spec"]["template"]["metadata"]["labels"].items()
    )
    assert pod["serviceAccountName"] == one(documents, "ServiceAccount")["metadata"]["name"]
    assert main["image"] == IMAGE
    assert main["imagePullPolicy"] == "IfNotPresent"
    assert main["command"] == [so.CONTROLLER_PATH]
    assert {"name": "SPARK_HOME", "value": "/opt/pyspark"} in main["env"]
    assert main["securityContext"]["readOnlyRootFilesystem"] is True
    assert {"name": "tmp", "mountPath": "/tmp"} in main["volumeMounts"]
    assert pod["volumes"][0]["name"] == "tmp"
    assert pod["securityContext"]["runAsUser"] == so.SPARK_UID


def test_probes_use_the_health_port_and_resources_fit_two_cores() -> None:
    main = container(so.controller_manifests(image=IMAGE))
    assert main["livenessProbe"]["httpGet"]["port"] == so.HEALTH_PORT
    assert main["readinessProbe"]["httpGet"] == {
        "port": so.HEALTH_PORT,
        "scheme": "HTTP",
        "path": "/readyz",
    }
    requests = main["resources"]["requests"]
    assert requests["cpu"].endswith("m") and int(requests["cpu"][:-1]) <= 250
    assert "cpu" not in main["resources"]["limits"]
    assert main["resources"]["limits"]["memory"] == "1Gi"


def test_driver_service_account_may_manage_executors_in_its_namespace() -> None:
    documents = so.driver_rbac_manifests(JOBS)
    account, role, binding = documents
    assert account["kind"] == "ServiceAccount"
    assert account["metadata"]["name"] == so.DRIVER_SERVICE_ACCOUNT == "spark"
    assert {d["metadata"]["namespace"] for d in documents} == {JOBS}
    assert missing(role["rules"], DRIVER_NEEDS) == []
    assert not allows(role["rules"], "sparkoperator.k8s.io", "sparkapplications", "get")
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "spark", "namespace": JOBS}]


def test_binary_is_stripped_and_stamped_with_the_release_tag() -> None:
    flags = so.build_ldflags(commit="85f696290db7", release_time="2025-07-22T05:29:27Z").split()
    assert flags[:2] == ["-s", "-w"]
    assert f"{so.MODULE}.gitTag=v2.3.0" in flags
    assert f"{so.MODULE}.gitTreeState=clean" in flags
    assert f"{so.MODULE}.buildDate=2025-07-22T05:29:27Z" in flags
    assert so.recipe_digest() == so.recipe_digest()


def test_manifests_command_prints_applyable_yaml(capsys: pytest.CaptureFixture[str]) -> None:
    assert so.main(["manifests", IMAGE, JOBS]) == 0
    documents = list(yaml.safe_load_all(capsys.readouterr().out))
    kinds = [document["kind"] for document in documents]
    assert kinds[0] == "Namespace"
    assert kinds.count("Deployment") == 1
    assert kinds[-3:] == ["ServiceAccount", "Role", "RoleBinding"]
    assert so.main(["bogus"]) == 2
