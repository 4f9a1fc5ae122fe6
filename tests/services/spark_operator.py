"""The Kubeflow Spark operator for end-to-end tests: its controller binary, CRDs and manifests.

A CdcSink becomes a ``sparkoperator.k8s.io/v1beta2`` SparkApplication (see
``operator/sink_children.py``); on the test node the Kubeflow Spark operator's controller runs it.

Binary
    :func:`build_spark_operator` builds ``github.com/kubeflow/spark-operator/v2`` at v2.3.0 (the
    one version the module proxy serves here) into ``cache_dir("spark-operator", "v2.3.0")``,
    once per machine, like :mod:`tests.services.kube`: a file lock serialises
    concurrent first uses and ``built.json`` (a digest of the recipe) is written last.

    The release's go.mod pins every ``k8s.io/*`` module with ``replace`` directives, which only
    apply to the main module, so neither ``go install …@v2.3.0`` nor a throwaway module requiring
    it builds the release's dependency set. Instead the module is fetched through the proxy
    (``go mod download -json``), its source is copied out of the read-only module cache into
    ``src/`` and built there as the main module: its own go.mod, go.sum and replaces apply, so
    the binary is the release's. The main package is ``cmd/operator``: one ``spark-operator``
    binary with ``controller start``, ``webhook start`` and ``version`` subcommands. It is
    built with ``CGO_ENABLED=0``, ``-trimpath``, ``-buildvcs=false`` and ``-ldflags=-s -w``
    plus the ``-X`` stamps of the upstream Makefile (``version`` prints ``v2.3.0``, the tagged
    commit and the release time, so rebuilds are byte-identical). The three CRDs of the release
    (``config/crd/bases``, identical to the chart's ``crds/``) are copied to ``crds/``:
    SparkApplication, ScheduledSparkApplication and SparkConnect. All three must be applied
    (``kubectl apply --server-side`` or ``create``: the SparkApplication CRD is 0.8 MB, too big
    for client-side apply's annotation): the controller always starts the SparkConnect
    reconciler and exits at once ("no matches for kind SparkConnect") without its CRD.

    Measured on the 2-core project machine with empty Go module and build caches: 82 s wall
    (123 s user), peak RSS 0.8 GB; 74 modules (0.3 GB) downloaded, 1 GB of build cache; 2 s with
    warm Go caches. The stripped static binary is 53 MB, byte-identical across rebuilds.
    ``python -m tests.services.spark_operator build`` fills the cache and prints
    the time taken; ``… manifests IMAGE [NAMESPACE...]`` prints the manifests as YAML.

How the controller runs an application (read from the v2.3.0 source)
    ``controller start`` runs a controller-runtime manager with reconcilers for
    SparkApplication, ScheduledSparkApplication and SparkConnect. To submit, it execs
    ``$SPARK_HOME/bin/spark-submit`` *in its own container* (``internal/controller/
    sparkapplication/submission.go``) with ``--master k8s://https://$KUBERNETES_SERVICE_HOST:
    $KUBERNETES_SERVICE_PORT``, ``--deploy-mode cluster`` and ``spark.kubernetes.submission.
    waitAppCompletion=false``; spark-submit authenticates with the controller pod's service
    account token and creates the driver pod, its ConfigMap and headless Service in the
    application's namespace. It fails a submission when ``SPARK_HOME`` is unset, and each
    submission starts two JVMs (launcher and SparkSubmit) inside the controller container.
    The controller (in-cluster config) and spark-submit reach the API server through the
    kubelet-injected ``KUBERNETES_SERVICE_HOST``/``_PORT``, i.e. the ``kubernetes`` Service's
    ClusterIP; drivers default to ``https://kubernetes.default.svc`` (cluster DNS) to start
    executors unless ``spark.kubernetes.driver.master`` says otherwise.

    Checked against :func:`~tests.services.kube.running_kube_apiserver`: run as
    its service account with these manifests' RBAC (cluster-wide and per-namespace), no webhook,
    ``SPARK_HOME`` = pyspark 4.0.1 and Java 17, the controller submitted the CdcSink's
    SparkApplication in 4 s: driver pod (service account ``spark``), its ConfigMap and headless
    Service created, state ``SUBMITTED``.

    The webhook is optional: it is a separate ``webhook start`` process that the controller
    never contacts, and the controller's manager starts no webhook server (nor needs
    cert-manager). Without it, the SparkApplication fields that only the pod-mutating webhook
    applies are ignored: ``spec.volumes`` other than ``spark-local-dir-*`` (so ConfigMap volumes
    and their ``volumeMounts``), ``env``/``envFrom``, ``securityContext``, tolerations, affinity,
    sidecars, owner references on the driver pod, and so on. Use ``driver.template`` /
    ``executor.template`` (Spark ≥ 3: passed to spark-submit as pod template files, with the
    containers named ``spark-kubernetes-driver`` / ``spark-kubernetes-executor``) for those.
    Cores, memory, labels, annotations, image and ``serviceAccount`` go through ``--conf`` and
    work without it. v2.3.0's SparkApplication has no ``spec.suspend`` (only the scheduled kind
    has): a strict apply rejects it, a lenient one prunes it.

Image (built elsewhere) — what :func:`controller_manifests` expects of ``image``
    * this binary at :data:`CONTROLLER_PATH` (the Deployment's ``command``);
    * Java 17 on ``PATH`` (or ``JAVA_HOME`` set) and Spark 4.0.1 at :data:`SPARK_HOME`, e.g. a
      symlink to pyspark's package folder: ``bin/spark-submit``, ``bin/spark-class`` and
      ``jars/`` with ``spark-kubernetes_2.13-4.0.1.jar`` and the fabric8 client (the pyspark
      4.0.1 wheel has all of these), plus ``bash``;
    * a passwd and group entry for uid/gid :data:`SPARK_UID` (185, ``spark``, as in Spark's own
      images): the pod runs as that user, and Hadoop's login in spark-submit fails for a uid
      without a passwd entry. Only ``/tmp`` (an emptyDir) is writable: the root filesystem is
      read-only, as in the chart.

RBAC (the chart's, ``charts/spark-operator-chart/templates``)
    The controller's ClusterRole always allows ``get`` on nodes and CRDs. The job rules (pods incl.
    ``deletecollection``, configmaps, PVCs, services; ``events`` create/update/patch; ingresses;
    the three kinds with ``/status`` and ``/finalizers``) go into that ClusterRole when all
    namespaces are watched, else into a Role per watched namespace. Leader election is off, so no
    Lease rules. The drivers' service account (``spark`` here) gets a Role on pods, configmaps,
    PVCs and services with every verb: the driver creates and deletes its executor pods and
    their ConfigMap. A SparkApplication must name it in ``spec.driver.serviceAccount``, or its
    driver runs as ``default`` and cannot start executors.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from cdcflow.operator.devservices import processes
from tests.services import gobuild

JSON = dict[str, Any]
SERVICE = "spark-operator"
MODULE = "github.com/kubeflow/spark-operator/v2"
VERSION = "v2.3.0"
MAIN_PACKAGE = "./cmd/operator"
BINARY = "spark-operator"
CRD_DIR = "config/crd/bases"
CRD_FILES = (
    "sparkoperator.k8s.io_sparkapplications.yaml",
    "sparkoperator.k8s.io_scheduledsparkapplications.yaml",
    "sparkoperator.k8s.io_sparkconnects.yaml",
)
BUILD_TIMEOUT = 3600.0

CONTROLLER_PATH = "/usr/local/bin/spark-operator"
SPARK_HOME = "/opt/spark"
SPARK_UID = 185
DRIVER_SERVICE_ACCOUNT = "spark"
CONTROLLER_NAME = "spark-operator-controller"
CONTAINER_NAME = "spark-operator-controller"
HEALTH_PORT = 8081
CONTROLLER_THREADS = 2
CONTROLLER_RESOURCES: JSON = {
    "requests": {"cpu": "100m", "memory": "256Mi"},
    "limits": {"memory": "1Gi"},
}
LABELS = {
    "app.kubernetes.io/name": "spark-operator",
    "app.kubernetes.io/component": "controller",
    "app.kubernetes.io/part-of": "cdcflow-e2e",
}
ALL_VERBS = ("get", "list", "watch", "create", "update", "patch", "delete")


@dataclass(frozen=True)
class SparkOperatorBuild:
    """The cached controller binary and the CRDs of the same release."""

    binary: Path
    crds: tuple[Path, ...]
    version: str


@dataclass(frozen=True)
class Release:
    """What the build needs from ``go mod download -json``: the source and the stamps."""

    source: Path
    commit: str
    time: str


# --------------------------------------------------------------------------------------------
# Building the binary


def build_home() -> Path:
    """The cache folder for the pinned release: ``src/``, ``bin/``, ``crds/``, ``build.log``."""
    return processes.cache_dir(SERVICE, VERSION)


def build_ready() -> bool:
    """Whether the cache holds a finished build of the current recipe (no lock, no Go)."""
    return _cached_build().ready()


def build_spark_operator() -> SparkOperatorBuild:
    """The cached binary and CRDs, built from the Go module on first use (once per machine)."""
    build = _cached_build()
    build.ensure(lambda go: _build(go, build.home))
    return _result(build.home)


def recipe_digest() -> str:
    """A digest of everything that decides the build, so a changed recipe rebuilds."""
    return gobuild.recipe_digest(
        {
            "module": MODULE,
            "version": VERSION,
            "package": MAIN_PACKAGE,
            "flags": gobuild.BUILD_FLAGS,
            "strip": gobuild.STRIP_LDFLAGS,
            "stamps": sorted(version_stamps(commit="", release_time="")),
            "crds": [CRD_DIR, *CRD_FILES],
            "cgo": "0",
        }
    )


def _cached_build() -> gobuild.CachedBuild:
    home = build_home()
    result = _result(home)
    return gobuild.CachedBuild(SERVICE, home, recipe_digest(), (result.binary, *result.crds))


def version_stamps(*, commit: str, release_time: str) -> dict[str, str]:
    """The upstream Makefile's ``-X`` variables; a clean tagged commit prints the tag."""
    return {
        "version": VERSION.removeprefix("v"),
        "gitTag": VERSION,
        "gitCommit": commit,
        "gitTreeState": "clean",
        "buildDate": release_time,
    }


def build_ldflags(*, commit: str, release_time: str) -> str:
    """``-ldflags`` for a stripped binary stamped with the release."""
    stamps = version_stamps(commit=commit, release_time=release_time)
    return " ".join(
        [*gobuild.STRIP_LDFLAGS, *(f"-X {MODULE}.{key}={value}" for key, value in stamps.items())]
    )


def _build(go: gobuild.Go, home: Path) -> None:
    """Download the release, build the binary from a writable copy, copy the CRDs."""
    release = _download(go, home)
    src = _writable_copy(release.source, home / "src")
    partial = gobuild.fresh_folder(home / "bin.partial")
    ldflags = build_ldflags(commit=release.commit, release_time=release.time)
    go.run(
        "-C", str(src), "build", *gobuild.BUILD_FLAGS, f"-ldflags={ldflags}",
        "-o", str(partial / BINARY), MAIN_PACKAGE, timeout=BUILD_TIMEOUT,
    )  # fmt: skip
    crds = gobuild.fresh_folder(home / "crds")
    for name in CRD_FILES:
        shutil.copyfile(src / CRD_DIR / name, crds / name)
    gobuild.replace_folder(partial, home / "bin")


def _download(go: gobuild.Go, home: Path) -> Release:
    """Fetch the pinned module through the proxy; its folder, tagged commit and time."""
    download = json.loads(go.output("mod", "download", "-json", f"{MODULE}@{VERSION}", cwd=home))
    if download.get("Error"):
        raise processes.ServiceStartError(f"{SERVICE}: {download['Error']}")
    info = json.loads(Path(download["Info"]).read_text())
    origin = info.get("Origin") or download.get("Origin") or {}
    return Release(
        source=Path(download["Dir"]),
        commit=str(origin.get("Hash", "")),
        time=str(info.get("Time", "")),
    )


def _writable_copy(source: Path, target: Path) -> Path:
    """Copy a module out of the read-only module cache into ``target``, owner-writable."""
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target, copy_function=shutil.copyfile)
    for folder, _, _ in os.walk(target):
        path = Path(folder)
        path.chmod(path.stat().st_mode | stat.S_IWUSR)
    return target


def _result(home: Path) -> SparkOperatorBuild:
    return SparkOperatorBuild(
        binary=home / "bin" / BINARY,
        crds=tuple(home / "crds" / name for name in CRD_FILES),
        version=VERSION,
    )


# --------------------------------------------------------------------------------------------
# Manifests


def controller_args(watch_namespaces: Sequence[str] = ()) -> list[str]:
    """``controller start`` flags: no leader election, UI service, metrics, pprof or webhook."""
    args = [
        "controller",
        "start",
        "--zap-log-level=info",
        "--zap-encoder=console",
        f"--controller-threads={CONTROLLER_THREADS}",
        "--enable-ui-service=false",
        "--leader-election=false",
        "--enable-metrics=false",
        "--metrics-bind-address=0",
        "--pprof-bind-address=0",
        f"--health-probe-bind-address=:{HEALTH_PORT}",
        # A busy 2-core node may show the driver pod later than the default 10 s allows.
        "--driver-pod-creation-grace-period=30s",
    ]
    if watch_namespaces:
        args.append(f"--namespaces={','.join(watch_namespaces)}")
    return args


def cluster_rules() -> list[JSON]:
    """What the controller needs cluster-wide whatever it watches (the chart's ClusterRole)."""
    return [
        _rule([""], ["nodes"], ["get"]),
        _rule(["apiextensions.k8s.io"], ["customresourcedefinitions"], ["get"]),
    ]


def job_rules() -> list[JSON]:
    """What the controller needs where applications run (the chart's ``policyRules``)."""
    kinds = ["sparkapplications", "scheduledsparkapplications", "sparkconnects"]
    subresources = [
        "sparkapplications/status",
        "sparkapplications/finalizers",
        "scheduledsparkapplications/status",
        "scheduledsparkapplications/finalizers",
        "sparkconnects/status",
    ]
    return [
        _rule([""], ["pods"], [*ALL_VERBS, "deletecollection"]),
        _rule([""], ["configmaps"], list(ALL_VERBS)),
        _rule([""], ["persistentvolumeclaims"], list(ALL_VERBS)),
        _rule([""], ["services"], list(ALL_VERBS)),
        _rule([""], ["events"], ["create", "update", "patch"]),
        _rule(
            ["extensions", "networking.k8s.io"],
            ["ingresses"],
            ["get", "list", "watch", "create", "update", "delete"],
        ),
        _rule(["sparkoperator.k8s.io"], kinds, list(ALL_VERBS)),
        _rule(["sparkoperator.k8s.io"], subresources, ["get", "update", "patch"]),
    ]


def driver_rules() -> list[JSON]:
    """What a driver needs in its namespace (the chart's ``spark.rbac``)."""
    resources = ["pods", "configmaps", "persistentvolumeclaims", "services"]
    return [_rule([""], resources, [*ALL_VERBS, "deletecollection"])]


def controller_manifests(
    *,
    image: str,
    namespace: str = "spark-operator",
    watch_namespaces: Sequence[str] = (),
    spark_home: str = SPARK_HOME,
) -> list[JSON]:
    """Namespace, ServiceAccount, RBAC and Deployment of the controller, in apply order.

    With no ``watch_namespaces`` the controller watches every namespace and its ClusterRole
    carries the job rules; otherwise each watched namespace gets a Role and RoleBinding.
    """
    documents: list[JSON] = [
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": namespace, "labels": LABELS},
        },
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": _metadata(CONTROLLER_NAME, namespace),
        },
    ]
    documents += controller_rbac(namespace=namespace, watch_namespaces=watch_namespaces)
    documents.append(
        controller_deployment(
            image=image,
            namespace=namespace,
            watch_namespaces=watch_namespaces,
            spark_home=spark_home,
        )
    )
    return documents


def controller_rbac(*, namespace: str, watch_namespaces: Sequence[str]) -> list[JSON]:
    """The chart's controller ClusterRole(+Binding), plus Role(+Binding) per watched namespace."""
    subject = {"kind": "ServiceAccount", "name": CONTROLLER_NAME, "namespace": namespace}
    rules = cluster_rules() if watch_namespaces else [*cluster_rules(), *job_rules()]
    documents: list[JSON] = [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": _metadata(CONTROLLER_NAME),
            "rules": rules,
        },
        _binding("ClusterRoleBinding", "ClusterRole", CONTROLLER_NAME, None, subject),
    ]
    for watched in dict.fromkeys(watch_namespaces):
        documents.append(_role(CONTROLLER_NAME, watched, job_rules()))
        documents.append(_binding("RoleBinding", "Role", CONTROLLER_NAME, watched, subject))
    return documents


def controller_deployment(
    *,
    image: str,
    namespace: str,
    watch_namespaces: Sequence[str] = (),
    spark_home: str = SPARK_HOME,
) -> JSON:
    """One controller replica (``Recreate``: never two without leader election)."""
    probe = {"httpGet": {"port": HEALTH_PORT, "scheme": "HTTP", "path": "/healthz"}}
    container: JSON = {
        "name": CONTAINER_NAME,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "command": [CONTROLLER_PATH],
        "args": controller_args(watch_namespaces),
        "env": [{"name": "SPARK_HOME", "value": spark_home}],
        "ports": [{"name": "health", "containerPort": HEALTH_PORT}],
        "resources": {key: dict(value) for key, value in CONTROLLER_RESOURCES.items()},
        "livenessProbe": {**probe, "initialDelaySeconds": 10, "periodSeconds": 20},
        "readinessProbe": {
            "httpGet": {**probe["httpGet"], "path": "/readyz"},
            "periodSeconds": 5,
        },
        "securityContext": {
            "readOnlyRootFilesystem": True,
            "privileged": False,
            "allowPrivilegeEscalation": False,
            "runAsNonRoot": True,
            "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _metadata(CONTROLLER_NAME, namespace),
        "spec": {
            "replicas": 1,
            "strategy": {"type": "Recreate"},
            "selector": {"matchLabels": dict(LABELS)},
            "template": {
                "metadata": {"labels": dict(LABELS)},
                "spec": {
                    "serviceAccountName": CONTROLLER_NAME,
                    "automountServiceAccountToken": True,
                    "securityContext": {
                        "runAsUser": SPARK_UID,
                        "runAsGroup": SPARK_UID,
                        "fsGroup": SPARK_UID,
                    },
                    "containers": [container],
                    "volumes": [{"name": "tmp", "emptyDir": {"sizeLimit": "1Gi"}}],
                },
            },
        },
    }


def driver_rbac_manifests(
    namespace: str, *, service_account: str = DRIVER_SERVICE_ACCOUNT
) -> list[JSON]:
    """ServiceAccount, Role and RoleBinding for drivers in ``namespace`` (the chart's ``spark``)."""
    subject = {"kind": "ServiceAccount", "name": service_account, "namespace": namespace}
    return [
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "automountServiceAccountToken": True,
            "metadata": _metadata(service_account, namespace),
        },
        _role(service_account, namespace, driver_rules()),
        _binding("RoleBinding", "Role", service_account, namespace, subject),
    ]


def _rule(groups: list[str], resources: list[str], verbs: list[str]) -> JSON:
    return {"apiGroups": groups, "resources": resources, "verbs": verbs}


def _metadata(name: str, namespace: str | None = None) -> JSON:
    metadata: JSON = {"name": name, "labels": dict(LABELS)}
    if namespace is not None:
        metadata["namespace"] = namespace
    return metadata


def _role(name: str, namespace: str, rules: list[JSON]) -> JSON:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": _metadata(name, namespace),
        "rules": rules,
    }


def _binding(kind: str, role_kind: str, name: str, namespace: str | None, subject: JSON) -> JSON:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": _metadata(name, namespace),
        "subjects": [subject],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": name},
    }


# --------------------------------------------------------------------------------------------
# Command line: ``python -m tests.services.spark_operator build|manifests``


def main(argv: Sequence[str]) -> int:
    """``build`` fills the cache and prints the result and time; ``manifests IMAGE [NS...]``
    prints the controller's manifests and the driver RBAC for each job namespace as YAML."""
    command = argv[0] if argv else "build"
    if command == "build":
        started = time.monotonic()
        result = build_spark_operator()
        print(result)
        print(f"ready in {time.monotonic() - started:.1f}s; binary {_megabytes(result.binary)}")
        return 0
    if command == "manifests" and len(argv) >= 2:
        jobs = list(argv[2:])
        documents = controller_manifests(image=argv[1], watch_namespaces=jobs)
        for job_namespace in jobs or ["default"]:
            documents += driver_rbac_manifests(job_namespace)
        print(yaml.safe_dump_all(documents, sort_keys=False), end="")
        return 0
    name = __spec__.name if __spec__ else "spark_operator"
    print(f"usage: python -m {name} build | manifests IMAGE [NAMESPACE...]", file=sys.stderr)
    return 2


def _megabytes(path: Path) -> str:
    return f"{path.stat().st_size / 1e6:.0f} MB"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
