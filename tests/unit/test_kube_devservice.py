"""The pure parts of the kube-apiserver dev service: build module, version stamps, arguments."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.plugins.fix_kube import unique_namespace_name
from tests.services import kube

RELEASE_GO_MOD: dict[str, Any] = {
    "Module": {"Path": "k8s.io/kubernetes"},
    "Go": "1.26.0",
    "GoDebug": [{"Key": "default", "Value": "go1.26"}],
    "Require": [
        {"Path": "k8s.io/api", "Version": "v0.0.0"},
        {"Path": "k8s.io/kubectl", "Version": "v0.0.0"},
        {"Path": "go.etcd.io/etcd/server/v3", "Version": "v3.6.8", "Indirect": True},
        {"Path": "github.com/spf13/cobra", "Version": "v1.10.2"},
    ],
    "Replace": [
        {"Old": {"Path": "k8s.io/api"}, "New": {"Path": "./staging/src/k8s.io/api"}},
        {"Old": {"Path": "k8s.io/kubectl"}, "New": {"Path": "./staging/src/k8s.io/kubectl"}},
        {
            "Old": {"Path": "k8s.io/sample-cli-plugin"},
            "New": {"Path": "./staging/src/k8s.io/sample-cli-plugin"},
        },
        {"Old": {"Path": "github.com/x/y"}, "New": {"Path": "github.com/x/z", "Version": "v1"}},
    ],
}


def test_staging_modules_are_required_ones_replaced_by_local_paths() -> None:
    release = kube.read_release_module(RELEASE_GO_MOD, release_time="2026-07-22T18:07:38Z")
    assert release.staging == ("k8s.io/api", "k8s.io/kubectl")
    assert release.etcd_version == "v3.6.8"
    assert release.go == "1.26.0"
    assert release.godebug == (("default", "go1.26"),)


def test_release_without_staging_replaces_is_refused() -> None:
    with pytest.raises(ValueError, match="staging"):
        kube.read_release_module({**RELEASE_GO_MOD, "Replace": []}, release_time="")


def test_staging_modules_are_pinned_to_the_matching_v0_tag() -> None:
    assert kube.staging_version("v1.36.3") == "v0.36.3"
    release = kube.read_release_module(RELEASE_GO_MOD, release_time="")
    go_mod = kube.build_go_mod(release)
    tag = kube.staging_version(kube.KUBERNETES_VERSION)
    assert f"\tk8s.io/api => k8s.io/api {tag}\n" in go_mod
    assert f"\tk8s.io/kubernetes {kube.KUBERNETES_VERSION}\n" in go_mod
    assert "\tgo.etcd.io/etcd/server/v3 v3.6.8\n" in go_mod
    assert "godebug default=go1.26\n" in go_mod


def test_binaries_are_stripped_and_stamped_with_the_release() -> None:
    flags = kube.version_ldflags("2026-07-22T18:07:38Z")
    assert flags[:2] == ["-s", "-w"]
    assert f"-X k8s.io/component-base/version.gitVersion={kube.KUBERNETES_VERSION}" in flags
    assert "-X k8s.io/client-go/pkg/version.buildDate=2026-07-22T18:07:38Z" in flags


def test_apiserver_runs_envtest_style_on_loopback(tmp_path: Path) -> None:
    certs = kube.ClusterCertificates(*(tmp_path / name for name in "abcdefgh"))
    args = kube.apiserver_args(
        Path("kube-apiserver"), certs=certs, port=6443, etcd_endpoint="http://127.0.0.1:2379",
        cert_dir=tmp_path,
    )  # fmt: skip
    assert "--bind-address=127.0.0.1" in args
    assert "--authorization-mode=RBAC" in args
    assert "--disable-admission-plugins=ServiceAccount" in args
    assert "--etcd-servers=http://127.0.0.1:2379" in args


def test_namespace_names_are_unique_rfc1123_labels() -> None:
    first = unique_namespace_name("test_thing[param-A/B]" * 10)
    second = unique_namespace_name("test_thing[param-A/B]" * 10)
    assert first != second
    assert len(first) <= 63
    assert all(part.isalnum() for part in first.split("-"))
    assert first == first.lower()
