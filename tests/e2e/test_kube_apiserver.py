"""Smoke tests: the session's control plane is a real kube-apiserver + etcd, not a mock.

A throwaway CRD (``gadgets.smoke.e2e.cdcflow.io``) exercises what the operator relies on:
establishment, the status subresource, printer columns, CEL validation, server-side apply,
and a kopf operator watching custom objects and patching their status. The dev launcher
(``python -m tests.services.kube up``) is checked to leave nothing behind when it is stopped.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import kopf
import pytest
import yaml
from kopf.testing import KopfRunner
from kubernetes import client, config, dynamic
from kubernetes.client.exceptions import ApiException

from tests.plugins.fix_kube import kubectl, wait_established
from tests.services import kube

GROUP = "smoke.e2e.cdcflow.io"
PLURAL = "gadgets"
CRD_NAME = f"{PLURAL}.{GROUP}"
CEL_MESSAGE = "minSize must not exceed maxSize"
FIELD_MANAGER = "cdcflow-e2e"
WAIT_SECONDS = 30.0

GADGET_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": CRD_NAME},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {"kind": "Gadget", "plural": PLURAL, "singular": "gadget"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "additionalPrinterColumns": [
                    {"name": "Colour", "type": "string", "jsonPath": ".spec.colour"},
                    {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
                    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
                ],
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "required": ["colour", "minSize", "maxSize"],
                                "x-kubernetes-validations": [
                                    {"rule": "self.minSize <= self.maxSize", "message": CEL_MESSAGE}
                                ],
                                "properties": {
                                    "colour": {"type": "string"},
                                    "minSize": {"type": "integer"},
                                    "maxSize": {"type": "integer"},
                                },
                            },
                            "status": {
                                "type": "object",
                                "properties": {
                                    "phase": {"type": "string"},
                                    "seenBy": {"type": "string"},
                                },
                            },
                        },
                    }
                },
            }
        ],
    },
}


def gadget(name: str, *, colour: str = "blue", min_size: int = 1, max_size: int = 3) -> str:
    """A Gadget manifest as YAML, for ``kubectl apply -f -``."""
    body = {
        "apiVersion": f"{GROUP}/v1",
        "kind": "Gadget",
        "metadata": {"name": name},
        "spec": {"colour": colour, "minSize": min_size, "maxSize": max_size},
    }
    return yaml.safe_dump(body)


@pytest.fixture(scope="module")
def gadget_crd(kube_cluster: kube.KubeCluster) -> str:
    """The test CRD, applied once for this module and Established."""
    kubectl(kube_cluster, "apply", "-f", "-", stdin=yaml.safe_dump(GADGET_CRD))
    wait_established(kube_cluster, f"customresourcedefinition.apiextensions.k8s.io/{CRD_NAME}")
    return CRD_NAME


@pytest.fixture
def api_client(kube_cluster: kube.KubeCluster) -> Iterator[client.ApiClient]:
    """A python ``kubernetes`` client configured from the cluster's kubeconfig."""
    kubeconfig = str(kube_cluster.kubeconfig)
    api: client.ApiClient = config.new_client_from_config(config_file=kubeconfig)  # type: ignore[no-untyped-call]
    try:
        yield api
    finally:
        api.close()  # type: ignore[no-untyped-call]


def configmap_resource(api: client.ApiClient) -> Any:
    """ConfigMaps through the dynamic client, which offers server-side apply."""
    dyn = dynamic.DynamicClient(api)  # type: ignore[no-untyped-call]
    return dyn.resources.get(api_version="v1", kind="ConfigMap")


def wait_for(condition: Callable[[], bool], *, what: str, timeout: float = WAIT_SECONDS) -> None:
    """Poll ``condition`` until it holds or fail the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.2)


def apply(
    cluster: kube.KubeCluster, namespace: str, manifest: str, *, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """``kubectl apply -f -`` of ``manifest`` in ``namespace``."""
    return kubectl(cluster, "apply", "-n", namespace, "-f", "-", stdin=manifest, check=check)


def gadget_status(cluster: kube.KubeCluster, namespace: str, name: str) -> dict[str, Any]:
    """The status of a Gadget as the API server serves it."""
    result = kubectl(cluster, "get", "gadget", name, "-n", namespace, "-o", "json")
    status: dict[str, Any] = json.loads(result.stdout).get("status", {})
    return status


def test_server_reports_the_pinned_kubernetes_release(kube_cluster: kube.KubeCluster) -> None:
    result = kubectl(kube_cluster, "version", "-o", "json")
    versions = json.loads(result.stdout)
    assert versions["serverVersion"]["gitVersion"] == kube.KUBERNETES_VERSION
    assert versions["clientVersion"]["gitVersion"] == kube.KUBERNETES_VERSION


def test_crd_with_status_printer_columns_and_cel_rule_becomes_established(
    kube_cluster: kube.KubeCluster, gadget_crd: str
) -> None:
    jsonpath = '{.status.conditions[?(@.type=="Established")].status}'
    result = kubectl(kube_cluster, "get", "crd", gadget_crd, "-o", f"jsonpath={jsonpath}")
    assert result.stdout == "True"
    resources = kubectl(kube_cluster, "api-resources", f"--api-group={GROUP}", "-o", "name")
    assert resources.stdout.split() == [CRD_NAME]


def test_object_breaking_the_cel_rule_is_rejected_with_the_rule_message(
    kube_cluster: kube.KubeCluster, gadget_crd: str, kube_namespace: str
) -> None:
    manifest = gadget("backwards", min_size=5, max_size=1)
    result = apply(kube_cluster, kube_namespace, manifest, check=False)
    assert result.returncode != 0
    assert CEL_MESSAGE in result.stderr
    missing = kubectl(kube_cluster, "get", "gadget", "backwards", "-n", kube_namespace, check=False)
    assert "NotFound" in missing.stderr


def test_kubectl_get_shows_the_printer_columns(
    kube_cluster: kube.KubeCluster, gadget_crd: str, kube_namespace: str
) -> None:
    apply(kube_cluster, kube_namespace, gadget("lamp", colour="teal"))
    kubectl(
        kube_cluster, "patch", "gadget", "lamp", "-n", kube_namespace, "--subresource=status",
        "--type=merge", "-p", '{"status": {"phase": "Glowing"}}',
    )  # fmt: skip
    table = kubectl(kube_cluster, "get", "gadgets", "-n", kube_namespace).stdout.splitlines()
    assert table[0].split() == ["NAME", "COLOUR", "PHASE", "AGE"]
    assert table[1].split()[:3] == ["lamp", "teal", "Glowing"]


def test_status_changes_through_the_main_resource_are_ignored(
    kube_cluster: kube.KubeCluster, gadget_crd: str, kube_namespace: str
) -> None:
    apply(kube_cluster, kube_namespace, gadget("clock"))
    kubectl(
        kube_cluster, "patch", "gadget", "clock", "-n", kube_namespace, "--type=merge",
        "-p", '{"spec": {"colour": "red"}, "status": {"phase": "Sneaked"}}',
    )  # fmt: skip
    assert gadget_status(kube_cluster, kube_namespace, "clock") == {}
    result = kubectl(kube_cluster, "get", "gadget", "clock", "-n", kube_namespace, "-o", "json")
    assert json.loads(result.stdout)["spec"]["colour"] == "red"


def test_python_client_creates_and_server_side_applies_a_configmap(
    api_client: client.ApiClient, kube_namespace: str
) -> None:
    core = client.CoreV1Api(api_client)
    core.create_namespaced_config_map(
        kube_namespace,
        client.V1ConfigMap(metadata=client.V1ObjectMeta(name="settings"), data={"created": "yes"}),
    )
    configmaps = configmap_resource(api_client)
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "settings", "namespace": kube_namespace},
        "data": {"applied": "1"},
    }
    applied = configmaps.server_side_apply(body=body, field_manager=FIELD_MANAGER)

    assert applied.data.to_dict() == {"created": "yes", "applied": "1"}
    managers = {(entry.manager, entry.operation) for entry in applied.metadata.managedFields}
    assert (FIELD_MANAGER, "Apply") in managers


def test_server_side_apply_reports_a_conflict_with_another_manager(
    api_client: client.ApiClient, kube_namespace: str
) -> None:
    configmaps = configmap_resource(api_client)
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "owned", "namespace": kube_namespace},
        "data": {"owner": "first"},
    }
    configmaps.server_side_apply(body=body, field_manager=FIELD_MANAGER)
    with pytest.raises(ApiException) as conflict:
        configmaps.server_side_apply(
            body={**body, "data": {"owner": "second"}}, field_manager="someone-else"
        )
    assert conflict.value.status == 409


def test_kopf_operator_patches_the_status_of_a_new_custom_object(
    kube_cluster: kube.KubeCluster,
    gadget_crd: str,
    kube_namespace: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(kube_cluster.kubeconfig))
    registry = kopf.OperatorRegistry()

    @kopf.on.login(registry=registry)
    def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
        return kopf.login_with_kubeconfig(**kwargs)  # reads $KUBECONFIG

    @kopf.on.create(GROUP, "v1", PLURAL, registry=registry)
    def mark_seen(spec: kopf.Spec, patch: kopf.Patch, **_: Any) -> None:
        patch.status["phase"] = "Seen"
        patch.status["seenBy"] = f"kopf saw a {spec['colour']} gadget"

    settings = kopf.OperatorSettings()
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=GROUP)
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(prefix=GROUP)
    args = ["run", "--standalone", "--namespace", kube_namespace]
    with KopfRunner(args, registry=registry, settings=settings, timeout=WAIT_SECONDS) as runner:
        apply(kube_cluster, kube_namespace, gadget("radio"))
        wait_for(
            lambda: gadget_status(kube_cluster, kube_namespace, "radio").get("phase") == "Seen",
            what="the operator to set status.phase=Seen",
        )

    assert runner.exit_code == 0, runner.output
    status = gadget_status(kube_cluster, kube_namespace, "radio")
    assert status["seenBy"] == "kopf saw a blue gadget"


# -- the dev launcher ------------------------------------------------------------------------

LAUNCHER_START_S = 180.0
LAUNCHER_STOP_S = 60.0


def _processes_under(folder: Path) -> dict[int, str]:
    """Live processes whose command line names ``folder`` (etcd's data dir, the API server's
    certificates), by pid."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if str(folder) in command and state != "Z":
            found[int(entry.name)] = command
    return found


def _kube_workdirs() -> set[str]:
    return {p.name for p in Path(tempfile.gettempdir()).glob("cdcflow-kube-*")}


def test_the_dev_launcher_stopped_by_sigterm_leaves_no_process_and_no_folder(
    tmp_path: Path,
) -> None:
    """``kube up`` run by a supervisor (systemd, a CI step's timeout) is stopped by SIGTERM:
    etcd, kube-apiserver and the folder with the cluster's keys must go with it."""
    kube.build_binaries()  # cached: the launcher then only starts the control plane
    before = _kube_workdirs()
    out, err = tmp_path / "launcher.out", tmp_path / "launcher.err"
    root = Path(__file__).resolve().parents[2]
    with out.open("wb") as stdout, err.open("wb") as stderr:
        launcher = subprocess.Popen(
            [sys.executable, "-m", "tests.services.kube", "up"],
            cwd=root, stdout=stdout, stderr=stderr,
        )  # fmt: skip
    workdir: Path | None = None
    started: dict[int, str] = {}
    try:
        deadline = time.monotonic() + LAUNCHER_START_S
        while "stops the cluster" not in out.read_text():
            assert launcher.poll() is None, f"the launcher exited: {err.read_text()[-2000:]}"
            assert time.monotonic() < deadline, f"no cluster after {LAUNCHER_START_S:.0f}s"
            time.sleep(0.5)
        exported = next(line for line in out.read_text().splitlines() if "KUBECONFIG=" in line)
        kubeconfig = Path(exported.split("KUBECONFIG=", 1)[1].split()[0])
        workdir = kubeconfig.parent
        assert workdir.name.startswith("cdcflow-kube-") and workdir.is_dir(), exported
        started = _processes_under(workdir)
        commands = " ".join(started.values())
        assert "etcd" in commands and "kube-apiserver" in commands, started

        launcher.send_signal(signal.SIGTERM)
        launcher.wait(timeout=LAUNCHER_STOP_S)
        assert launcher.returncode == 0, err.read_text()[-2000:]
        assert _processes_under(workdir) == {}, "etcd or kube-apiserver outlived the launcher"
        assert not workdir.exists(), f"{workdir} (with the CA key) was left behind"
        assert _kube_workdirs() <= before, "a cdcflow-kube-* folder was left behind"
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()
        for pid in started:  # only what this launcher started, should it have orphaned them
            if pid in _processes_under(workdir or tmp_path):
                os.kill(pid, signal.SIGKILL)
        if workdir is not None:
            shutil.rmtree(workdir, ignore_errors=True)
