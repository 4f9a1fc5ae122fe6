"""Fixture plugin: one real single-node Kubernetes per test session, and a namespace per test.

The node (:mod:`tests.services.kube_node`) runs only inside the network and mount
namespaces the e2e tier is started in (``python -m tests.run_tiers e2e``); PostgreSQL and Kafka
of the same session listen on the node's address there, so pods reach them. Its images are
the ones built from this checkout (:mod:`tests.services.node_images`).
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.plugins.fix_kube import kubectl, unique_namespace_name
from tests.services import kube_node, node_images

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def node() -> Iterator[kube_node.KubeNode]:
    """A running control plane, containerd and kubelet with this checkout's images.

    SIGTERM (a CI timeout, say) interrupts the session like Ctrl-C, so the node is still torn
    down: its processes run in sessions of their own and would outlive pytest otherwise.
    """
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        with kube_node.running_node(node_images.all_images(ROOT)) as running:
            yield running
    finally:
        signal.signal(signal.SIGTERM, previous)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


@pytest.fixture
def pod_namespace(node: kube_node.KubeNode, request: pytest.FixtureRequest) -> Iterator[str]:
    """A new namespace on the node for this test alone; deleted (without waiting) afterwards."""
    name = unique_namespace_name(request.node.name)
    kubectl(node.cluster, "create", "namespace", name)
    yield name
    kubectl(node.cluster, "delete", "namespace", name, "--wait=false", check=False)
