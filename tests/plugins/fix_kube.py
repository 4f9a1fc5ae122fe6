"""Fixture plugin: one real kube-apiserver + etcd per test session and a fresh namespace per test.

The cluster is envtest-style (see :mod:`tests.services.kube`): no kubelet or
controllers, so pods never run and a deleted namespace stays ``Terminating`` for ever. Tests
therefore get a namespace of their own and never wait for one to go away.

Every CRD manifest in the repository's ``crds/`` folder is applied when the cluster starts, and
the session waits until each is Established. ``kubernetes`` and ``kopf`` are not imported here,
so registering this plugin costs the other tiers nothing.

On a fresh machine the first test that needs the cluster also pays for building kube-apiserver,
kubectl and etcd (see the module); :func:`pytest_collection_modifyitems` adds the build's time
limit to that test's timeout so pytest-timeout does not cut the build short.
"""

from __future__ import annotations

import re
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.services import kube

CRD_DIR = Path(__file__).resolve().parents[2] / "crds"
NAMESPACE_NAME_MAX = 63
NAMESPACE_SUFFIX_LENGTH = 8
KUBECTL_TIMEOUT = 120.0
ESTABLISHED = ("--for=condition=Established", "--timeout=60s")
DEFAULT_TEST_TIMEOUT = 600.0
NOT_MANIFESTS = frozenset({"kustomization.yaml", "kustomization.yml"})


class KubectlError(RuntimeError):
    """A kubectl command failed; the message carries its command line and standard error."""

    def __init__(self, result: subprocess.CompletedProcess[str]) -> None:
        self.result = result
        command = " ".join(str(part) for part in result.args)
        super().__init__(
            f"`{command}` failed with code {result.returncode}:\n{result.stderr or result.stdout}"
        )


@pytest.fixture(scope="session")
def kube_cluster() -> Iterator[kube.KubeCluster]:
    """A running etcd + kube-apiserver with the repository's CRDs applied and Established."""
    with kube.running_kube_apiserver() as cluster:
        apply_crds(cluster, CRD_DIR)
        yield cluster


@pytest.fixture
def kube_namespace(kube_cluster: kube.KubeCluster, request: pytest.FixtureRequest) -> Iterator[str]:
    """The name of a new namespace for this test alone; deleted (without waiting) afterwards."""
    name = unique_namespace_name(request.node.name)
    kubectl(kube_cluster, "create", "namespace", name)
    yield name
    kubectl(kube_cluster, "delete", "namespace", name, "--wait=false", check=False)


def kubectl(
    cluster: kube.KubeCluster,
    *args: str,
    stdin: str | None = None,
    check: bool = True,
    timeout: float = KUBECTL_TIMEOUT,
) -> subprocess.CompletedProcess[str]:
    """Run kubectl against ``cluster`` as the admin, ``stdin`` fed to it (for ``-f -``).

    Raises :class:`KubectlError` on a non-zero exit when ``check`` is true.
    """
    result = subprocess.run(
        cluster.kubectl_command(*args),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if check and result.returncode != 0:
        raise KubectlError(result)
    return result


def eventually(check: Callable[[], Any], *, timeout: float = 60.0, what: str = "") -> Any:
    """Call ``check`` until it returns something truthy (errors count as not yet); return it."""
    deadline, last = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        try:
            last = check()
        except Exception as error:
            last = error
        else:
            if last:
                return last
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}: last saw {last!r}")


def apply_crds(cluster: kube.KubeCluster, folder: Path) -> list[str]:
    """Server-side apply every manifest in ``folder``; wait until its CRDs are Established."""
    manifests = crd_manifests(folder)
    if not manifests:
        return []
    files = [arg for path in manifests for arg in ("-f", str(path))]
    applied = kubectl(cluster, "apply", "--server-side", "-o", "name", *files).stdout.split()
    crds = [name for name in applied if name.startswith("customresourcedefinition")]
    if crds:
        wait_established(cluster, *crds)
    return crds


def wait_established(cluster: kube.KubeCluster, *crds: str) -> None:
    """Wait until each named CRD (``customresourcedefinition.…/<name>``) is Established.

    ``kubectl wait`` fails outright on a CRD created a moment ago whose status has no
    conditions yet, so that is retried.
    """
    eventually(
        lambda: kubectl(cluster, "wait", *ESTABLISHED, *crds, check=False).returncode == 0,
        timeout=90,
        what=f"{', '.join(crds)} Established",
    )


def crd_manifests(folder: Path) -> list[Path]:
    """The YAML manifests in ``folder`` (not recursive, kustomization files left out)."""
    if not folder.is_dir():
        return []
    found = [*folder.glob("*.yaml"), *folder.glob("*.yml")]
    return sorted(path for path in found if path.name not in NOT_MANIFESTS)


def unique_namespace_name(hint: str) -> str:
    """A legal namespace name (RFC 1123 label) derived from ``hint`` with a random suffix."""
    stem = re.sub(r"[^a-z0-9-]+", "-", hint.lower()).strip("-") or "test"
    room = NAMESPACE_NAME_MAX - NAMESPACE_SUFFIX_LENGTH - 1
    return f"{stem[:room].rstrip('-')}-{uuid.uuid4().hex[:NAMESPACE_SUFFIX_LENGTH]}"


@pytest.hookimpl(trylast=True)  # after -m/-k deselection, so "first" is a test that runs
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Let the first test that starts the cluster include a first-time build in its timeout."""
    first = next((item for item in items if "kube_cluster" in _fixture_names(item)), None)
    if first is None or kube.binaries_ready():
        return
    first.add_marker(pytest.mark.timeout(kube.BUILD_TIMEOUT + DEFAULT_TEST_TIMEOUT))


def _fixture_names(item: pytest.Item) -> list[str]:
    names = getattr(item, "fixturenames", None)
    return list(names) if names is not None else []
