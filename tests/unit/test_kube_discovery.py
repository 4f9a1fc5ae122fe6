"""A kind the API server does not serve (no Spark operator yet) is looked up in discovery at
most once per MISSING_RECHECK_S, however many threads ask; a present kind is always found."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from kubernetes.dynamic.exceptions import ResourceNotFoundError

from cdcflow.operator import kube


class CountingResources:
    """The dynamic client's ``resources``: a lookup of a missing kind re-reads discovery, as
    the real client's ``search`` does."""

    def __init__(self) -> None:
        self.served = {("v1", "Pod")}
        self.rereads = 0

    def get(self, *, api_version: str, kind: str) -> Any:
        if (api_version, kind) in self.served:
            return object()
        self.rereads += 1
        raise ResourceNotFoundError(f"No matches found for {kind}")


def _kube(resources: CountingResources) -> kube.Kube:
    client = kube.Kube.__new__(kube.Kube)
    client._dynamic = type("Dynamic", (), {"resources": resources})()  # type: ignore[assignment]
    client._discovery = threading.Lock()
    client._missing = {}
    return client


def test_a_missing_kind_rereads_discovery_once_per_recheck_window(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = [1000.0]
    monkeypatch.setattr(kube.time, "monotonic", lambda: now[0])
    resources = CountingResources()
    client = _kube(resources)

    for _ in range(50):
        assert not client.has_kind("sparkoperator.k8s.io/v1beta2", "SparkApplication")
        assert client.has_kind("v1", "Pod")
    assert resources.rereads == 1

    now[0] += kube.MISSING_RECHECK_S + 1
    resources.served.add(("sparkoperator.k8s.io/v1beta2", "SparkApplication"))
    assert client.has_kind("sparkoperator.k8s.io/v1beta2", "SparkApplication")
    assert resources.rereads == 1  # found at the next look after the window
