"""A throwaway Kubernetes control plane for tests: a real etcd and kube-apiserver, envtest-style.

Alone, there is no kubelet, scheduler or controller-manager: objects are stored, validated
(OpenAPI, CEL, admission), watched and served exactly as in production, but pods never run,
garbage collection never happens and deleted namespaces stay ``Terminating`` forever.
:mod:`~tests.services.kube_node` adds those for a real single-node cluster
(``ApiServerNetwork(for_node=True)``).

Binaries
    ``kube-apiserver``, ``kubectl``, ``etcd`` and, for the node, ``kube-controller-manager``,
    ``kube-scheduler`` and ``kubelet`` are compiled from their Go modules (the Go
    module proxy is the only place they can come from here) into
    ``cache_dir("kube", KUBERNETES_VERSION)/bin``, once per machine: a file lock serialises
    concurrent first uses and ``built.json`` (holding a digest of the build recipe) is written
    only after all of them built. Later runs start from the cache without touching Go.

    ``k8s.io/kubernetes`` cannot be built as a dependency as it is, because its go.mod requires
    every staging module (``k8s.io/api``, ``k8s.io/apiserver``, ...) at ``v0.0.0`` and satisfies
    them with ``replace … => ./staging/src/…`` directives that only apply to the main module. So
    a throwaway module (``src/go.mod`` in the cache) requires ``k8s.io/kubernetes`` at the pinned
    release and replaces each staging module by its published tag (``v1.X.Y`` ↔ ``v0.X.Y``). The
    list is not hard-coded: the release's own go.mod is fetched through the module proxy
    (``go mod download -json``) and read with ``go mod edit -json``; every module it both
    requires and replaces with a local ``./staging`` path gets a replace line. The go directive
    and ``godebug`` settings are copied from it too, so the binaries get the release's defaults.

    etcd is built in the same throwaway module from ``go.etcd.io/etcd/server/v3`` (whose main
    package is the ``etcd`` server) at the version the release's go.mod requires (v3.6.8 for
    v1.36.3), so etcd and the API server's etcd client come from one 3.6.x line and share one
    module download; linking it adds seconds to the build. Debian's ``etcd-server`` 3.4.23 does
    start and serve a v1.36 API server, but it is not used: 3.4 is past upstream support, and
    it is below the 3.4.31/3.5.13 that kube-apiserver's feature checker
    (``k8s.io/apiserver/pkg/storage/feature``) needs before it uses watch-progress requests for
    consistent reads from the watch cache, so tests would take a read path production does not.

    The build is lean: ``CGO_ENABLED=0``, ``-trimpath``, ``-buildvcs=false`` and
    ``-ldflags=-s -w``, plus the ``-X`` version stamps Kubernetes' own build sets, so
    ``kubectl version`` and ``/version`` say the release rather than ``v0.0.0-master``; the
    build date stamped is the release's publication time, so rebuilds are byte-identical. Go's
    module and build caches stay where Go puts them (``go env GOMODCACHE GOCACHE``; set
    ``GOMODCACHE``/``GOCACHE`` to move them): Go-aware CI caches know those places, and
    ``go clean -modcache -cache`` frees them once the binaries exist, since nothing at run time
    needs them. A Go older than the release's go directive fetches the right toolchain through
    the module proxy (``GOTOOLCHAIN=auto``, Go's default).

    Measured on the 2-core project machine with empty Go caches: 4 min 15 s for the first
    three (peak RSS 1.9 GB), about 80 s more for the node's three; 90 s for all six with warm
    Go caches. Disk: ``bin/`` 424 MB, module cache 0.6 GB, build cache 3 GB.
    ``python -m tests.services.kube build`` fills the cache ahead of a test run;
    ``… up`` starts a cluster and prints its ``KUBECONFIG``.

Cluster
    :func:`running_kube_apiserver` makes a temporary folder with a small CA, a serving
    certificate for 127.0.0.1, a client certificate for an admin in ``system:masters`` and a
    service-account signing key (all by the ``openssl`` command line tool); starts etcd on two
    free loopback ports with ``--unsafe-no-fsync`` and waits for ``/health``; starts
    kube-apiserver with envtest's arguments on a free loopback port and waits for ``/readyz``
    as the admin; writes a self-contained kubeconfig for the admin; and yields a
    :class:`KubeCluster`. On exit both processes are stopped and the folder is removed.
"""

from __future__ import annotations

import base64
import contextlib
import json
import secrets
import shutil
import signal
import ssl
import sys
import tempfile
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from cdcflow.operator.devservices import processes
from tests.services import gobuild

SERVICE = "kube-apiserver"
ETCD_SERVICE = "etcd"
KUBERNETES_MODULE = "k8s.io/kubernetes"
KUBERNETES_VERSION = "v1.36.3"
ETCD_MODULE = "go.etcd.io/etcd/server/v3"
BUILD_MODULE = "cdcflow.dev/kube-binaries"
HOST = "127.0.0.1"
SERVICE_CLUSTER_IP_RANGE = "10.0.0.0/24"
ADMIN_USER = "cdcflow-admin"
ADMIN_GROUP = "system:masters"
CONTEXT = "cdcflow-test"
START_TIMEOUT = 90.0
BUILD_TIMEOUT = 3600.0
OPENSSL_HINT = "Test certificates are made with openssl, e.g. `apt-get install openssl`."
VERSION_PACKAGES = ("k8s.io/client-go/pkg/version", "k8s.io/component-base/version")
KUBERNETES_BINARIES = {
    "kube-apiserver": f"{KUBERNETES_MODULE}/cmd/kube-apiserver",
    "kubectl": f"{KUBERNETES_MODULE}/cmd/kubectl",
    "kube-controller-manager": f"{KUBERNETES_MODULE}/cmd/kube-controller-manager",
    "kube-scheduler": f"{KUBERNETES_MODULE}/cmd/kube-scheduler",
    "kubelet": f"{KUBERNETES_MODULE}/cmd/kubelet",
}
ETCD_BINARY = "etcd"


@dataclass(frozen=True)
class ApiServerNetwork:
    """Where kube-apiserver listens and what it tells clients and pods.

    The default is envtest's: loopback, a free port, no kubelet. A test node
    (:mod:`tests.services.kube_node`) serves on every address of its private
    network namespace at 443, the ``kubernetes`` Service's port, with node authorization and
    service-account tokens for pods.
    """

    bind_address: str = HOST
    advertise_address: str = HOST
    port: int | None = None
    extra_server_names: tuple[str, ...] = ()
    for_node: bool = False


ENVTEST = ApiServerNetwork()


@dataclass(frozen=True)
class KubeBinaries:
    """The three cached executables a cluster is made of."""

    kube_apiserver: Path
    kubectl: Path
    etcd: Path
    version: str


@dataclass(frozen=True)
class KubeCluster:
    """A running throwaway control plane and the files to reach it as the admin."""

    kubeconfig: Path
    server: str
    kubectl: Path
    log: Path
    etcd_log: Path
    etcd_endpoint: str
    ca_cert: Path
    version: str
    workdir: Path
    apiserver_pid: int
    etcd_pid: int
    certificates: ClusterCertificates

    def kubectl_command(self, *args: str) -> list[str]:
        """A ``kubectl`` command line aimed at this cluster, with its own discovery cache."""
        return [
            str(self.kubectl),
            f"--kubeconfig={self.kubeconfig}",
            f"--cache-dir={self.workdir / 'kubectl-cache'}",
            *args,
        ]


# --------------------------------------------------------------------------------------------
# Building the binaries


def binaries_home() -> Path:
    """The cache folder for the pinned release: ``src/`` (build module), ``bin/``, logs."""
    return processes.cache_dir("kube", KUBERNETES_VERSION)


def binaries_ready() -> bool:
    """Whether the cached binaries were built by the current recipe (no lock, no Go)."""
    return _cached_build().ready()


def build_binaries() -> KubeBinaries:
    """The cached binaries, built from the Go modules on first use (once per machine)."""
    build = _cached_build()
    build.ensure(lambda go: _build(go, build.home))
    return _binaries(build.home / "bin")


def recipe_digest() -> str:
    """A digest of everything that decides the binaries, so a changed recipe rebuilds."""
    return gobuild.recipe_digest(
        {
            "kubernetes": KUBERNETES_VERSION,
            "etcd_module": ETCD_MODULE,
            "binaries": KUBERNETES_BINARIES,
            "flags": gobuild.BUILD_FLAGS,
            "strip": gobuild.STRIP_LDFLAGS,
            "stamps": VERSION_PACKAGES,
            "cgo": "0",
        }
    )


def _cached_build() -> gobuild.CachedBuild:
    home = binaries_home()
    names = [*KUBERNETES_BINARIES, ETCD_BINARY]
    outputs = tuple(home / "bin" / name for name in names)
    return gobuild.CachedBuild(SERVICE, home, recipe_digest(), outputs)


@dataclass(frozen=True)
class ReleaseModule:
    """What the build module copies from the release's own go.mod."""

    go: str
    godebug: tuple[tuple[str, str], ...]
    staging: tuple[str, ...]
    etcd_version: str
    release_time: str


def staging_version(kubernetes_version: str) -> str:
    """The published tag of the staging modules for a release: ``v1.36.3`` → ``v0.36.3``."""
    major, minor, patch = kubernetes_version.removeprefix("v").split(".", 2)
    if major != "1":
        raise ValueError(f"unexpected Kubernetes version {kubernetes_version!r}")
    return f"v0.{minor}.{patch}"


def read_release_module(go_mod: Mapping[str, Any], *, release_time: str) -> ReleaseModule:
    """Pick the staging modules, etcd version and go settings out of ``go mod edit -json``."""
    required = {entry["Path"]: entry["Version"] for entry in go_mod.get("Require") or ()}
    staging = sorted(
        entry["Old"]["Path"]
        for entry in go_mod.get("Replace") or ()
        if entry["New"]["Path"].startswith("./") and entry["Old"]["Path"] in required
    )
    if not staging:
        raise ValueError("the release's go.mod has no ./staging replace directives")
    if ETCD_MODULE not in required:
        raise ValueError(f"the release's go.mod does not require {ETCD_MODULE}")
    godebug = tuple((entry["Key"], entry["Value"]) for entry in go_mod.get("GoDebug") or ())
    return ReleaseModule(
        go=str(go_mod["Go"]),
        godebug=godebug,
        staging=tuple(staging),
        etcd_version=required[ETCD_MODULE],
        release_time=release_time,
    )


def build_go_mod(release: ReleaseModule) -> str:
    """The throwaway main module: the release, etcd, and one replace line per staging module."""
    tag = staging_version(KUBERNETES_VERSION)
    lines = [f"module {BUILD_MODULE}", "", f"go {release.go}", ""]
    lines += [f"godebug {key}={value}" for key, value in release.godebug]
    lines += [
        "",
        "require (",
        f"\t{KUBERNETES_MODULE} {KUBERNETES_VERSION}",
        f"\t{ETCD_MODULE} {release.etcd_version}",
        ")",
        "",
        "replace (",
        *(f"\t{module} => {module} {tag}" for module in release.staging),
        ")",
        "",
    ]
    return "\n".join(lines)


def version_ldflags(release_time: str) -> list[str]:
    """``-ldflags`` for a stripped binary stamped with the release like Kubernetes' own build."""
    minor = KUBERNETES_VERSION.removeprefix("v").split(".")[1]
    stamps = {
        "gitVersion": KUBERNETES_VERSION,
        "gitMajor": "1",
        "gitMinor": minor,
        "gitTreeState": "archive",
        "buildDate": release_time,
    }
    flags = [*gobuild.STRIP_LDFLAGS]
    flags += [
        f"-X {pkg}.{key}={value}" for pkg in VERSION_PACKAGES for key, value in stamps.items()
    ]
    return flags


def _build(go: gobuild.Go, home: Path) -> None:
    """Fetch the release's go.mod, write the build module and build every binary."""
    release = _fetch_release(go, home)
    src = _write_build_module(home / "src", release)
    pins = [f"{package}@{KUBERNETES_VERSION}" for package in KUBERNETES_BINARIES.values()]
    pins.append(f"{ETCD_MODULE}@{release.etcd_version}")
    go.run("-C", str(src), "get", *pins)
    partial = gobuild.fresh_folder(home / "bin.partial")
    _compile(go, src, partial, release)
    gobuild.replace_folder(partial, home / "bin")


def _write_build_module(src: Path, release: ReleaseModule) -> Path:
    """A fresh folder holding only the throwaway module's go.mod (``go get`` adds go.sum)."""
    (gobuild.fresh_folder(src) / "go.mod").write_text(build_go_mod(release))
    return src


def _compile(go: gobuild.Go, src: Path, out: Path, release: ReleaseModule) -> None:
    """``go build`` each binary into ``out``: static, stripped, stamped with the release."""
    ldflags = " ".join(version_ldflags(release.release_time))
    targets = {**KUBERNETES_BINARIES, ETCD_BINARY: ETCD_MODULE}
    for name, package in targets.items():
        go.run(
            "-C", str(src), "build", *gobuild.BUILD_FLAGS, f"-ldflags={ldflags}",
            "-o", str(out / name), package, timeout=BUILD_TIMEOUT,
        )  # fmt: skip


def _fetch_release(go: gobuild.Go, home: Path) -> ReleaseModule:
    """Download the pinned release through the module proxy and read its go.mod."""
    module = f"{KUBERNETES_MODULE}@{KUBERNETES_VERSION}"
    download = json.loads(go.output("mod", "download", "-json", module, cwd=home))
    go_mod = json.loads(go.output("mod", "edit", "-json", download["GoMod"]))
    info = json.loads(Path(download["Info"]).read_text())
    return read_release_module(go_mod, release_time=str(info.get("Time", "")))


def _binaries(bin_dir: Path) -> KubeBinaries:
    return KubeBinaries(
        kube_apiserver=bin_dir / "kube-apiserver",
        kubectl=bin_dir / "kubectl",
        etcd=bin_dir / ETCD_BINARY,
        version=KUBERNETES_VERSION,
    )


# --------------------------------------------------------------------------------------------
# Certificates

OPENSSL_CONFIG = """\
[req]
distinguished_name = dn
prompt = no
[dn]
CN = unused
[ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign,digitalSignature
subjectKeyIdentifier = hash
[server]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = serverAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
subjectAltName = {server_names}
[client]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = clientAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
"""
SERVER_NAMES = (
    f"IP:{HOST}",
    "DNS:localhost",
    "IP:10.0.0.1",
    "DNS:kubernetes",
    "DNS:kubernetes.default",
    "DNS:kubernetes.default.svc",
)
EC_KEY = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
CERT_DAYS = "7"


@dataclass(frozen=True)
class ClusterCertificates:
    """PEM files of the throwaway PKI: CA, API server, admin client, service-account key."""

    ca_cert: Path
    ca_key: Path
    server_cert: Path
    server_key: Path
    admin_cert: Path
    admin_key: Path
    service_account_key: Path
    service_account_public_key: Path


def make_certificates(folder: Path, *, extra_names: Sequence[str] = ()) -> ClusterCertificates:
    """Make a CA, a serving and an admin client certificate and an SA key pair in ``folder``.

    ``extra_names`` are more subjectAltNames of the serving certificate (``IP:…``/``DNS:…``).
    """
    openssl = processes.require_binary("openssl", hint=OPENSSL_HINT)
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "openssl.cnf"
    config.write_text(OPENSSL_CONFIG.format(server_names=",".join([*SERVER_NAMES, *extra_names])))
    log = folder / "openssl.log"

    def run(*args: str) -> None:
        processes.run_checked([openssl, *args], service=SERVICE, log=log)

    ca_cert, ca_key = folder / "ca.crt", folder / "ca.key"
    run("req", "-x509", "-config", str(config), "-extensions", "ca", *EC_KEY,
        "-keyout", str(ca_key), "-out", str(ca_cert), "-days", CERT_DAYS,
        "-subj", "/CN=cdcflow-test-ca")  # fmt: skip
    leaves = {"server": "/CN=kube-apiserver", "admin": f"/O={ADMIN_GROUP}/CN={ADMIN_USER}"}
    for name, subject in leaves.items():
        request = folder / f"{name}.csr"
        run("req", "-new", "-config", str(config), *EC_KEY, "-keyout", str(folder / f"{name}.key"),
            "-out", str(request), "-subj", subject)  # fmt: skip
        run("x509", "-req", "-in", str(request), "-CA", str(ca_cert), "-CAkey", str(ca_key),
            "-set_serial", f"0x{secrets.token_hex(8)}", "-days", CERT_DAYS,
            "-extfile", str(config), "-extensions", "server" if name == "server" else "client",
            "-out", str(folder / f"{name}.crt"))  # fmt: skip
    sa_key, sa_pub = folder / "sa.key", folder / "sa.pub"
    run("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", str(sa_key))
    run("pkey", "-in", str(sa_key), "-pubout", "-out", str(sa_pub))
    return ClusterCertificates(
        ca_cert=ca_cert,
        ca_key=ca_key,
        server_cert=folder / "server.crt",
        server_key=folder / "server.key",
        admin_cert=folder / "admin.crt",
        admin_key=folder / "admin.key",
        service_account_key=sa_key,
        service_account_public_key=sa_pub,
    )


# --------------------------------------------------------------------------------------------
# Running the control plane


def etcd_args(etcd: Path, *, data_dir: Path, client_port: int, peer_port: int) -> list[str]:
    """A one-member etcd on loopback that skips fsync (tests do not need durability)."""
    client, peer = f"http://{HOST}:{client_port}", f"http://{HOST}:{peer_port}"
    return [
        str(etcd),
        "--name=cdcflow",
        f"--data-dir={data_dir}",
        f"--listen-client-urls={client}",
        f"--advertise-client-urls={client}",
        f"--listen-peer-urls={peer}",
        f"--initial-advertise-peer-urls={peer}",
        f"--initial-cluster=cdcflow={peer}",
        "--unsafe-no-fsync=true",
    ]


def apiserver_args(
    apiserver: Path,
    *,
    certs: ClusterCertificates,
    port: int,
    etcd_endpoint: str,
    cert_dir: Path,
    network: ApiServerNetwork = ENVTEST,
) -> list[str]:
    """envtest's kube-apiserver arguments plus our serving certificate and client CA.

    For a node: Node+RBAC authorization, the ServiceAccount and NodeRestriction admission
    plugins, and the admin's certificate to call kubelets (``kubectl logs``/``exec``).
    """
    if network.for_node:
        access = [
            "--authorization-mode=Node,RBAC",
            "--enable-admission-plugins=NodeRestriction",
            f"--kubelet-client-certificate={certs.admin_cert}",
            f"--kubelet-client-key={certs.admin_key}",
            "--kubelet-preferred-address-types=InternalIP",
        ]
    else:
        access = ["--authorization-mode=RBAC", "--disable-admission-plugins=ServiceAccount"]
    return [
        str(apiserver),
        f"--bind-address={network.bind_address}",
        f"--advertise-address={network.advertise_address}",
        f"--secure-port={port}",
        f"--cert-dir={cert_dir}",
        f"--tls-cert-file={certs.server_cert}",
        f"--tls-private-key-file={certs.server_key}",
        f"--client-ca-file={certs.ca_cert}",
        f"--etcd-servers={etcd_endpoint}",
        f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
        f"--service-account-issuer=https://{network.advertise_address}:{port}/",
        f"--service-account-key-file={certs.service_account_public_key}",
        f"--service-account-signing-key-file={certs.service_account_key}",
        *access,
        "--allow-privileged=true",
        "--endpoint-reconciler-type=none",
        "--profiling=false",
    ]


def kubeconfig_document(server: str, certs: ClusterCertificates) -> dict[str, Any]:
    """A self-contained kubeconfig (certificates inlined) for the admin user."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": CONTEXT,
                "cluster": {
                    "server": server,
                    "certificate-authority-data": _base64(certs.ca_cert),
                },
            }
        ],
        "users": [
            {
                "name": ADMIN_USER,
                "user": {
                    "client-certificate-data": _base64(certs.admin_cert),
                    "client-key-data": _base64(certs.admin_key),
                },
            }
        ],
        "contexts": [
            {
                "name": CONTEXT,
                "context": {"cluster": CONTEXT, "user": ADMIN_USER, "namespace": "default"},
            }
        ],
        "current-context": CONTEXT,
    }


@contextlib.contextmanager
def running_kube_apiserver(
    extra_args: Sequence[str] = (), *, network: ApiServerNetwork = ENVTEST
) -> Iterator[KubeCluster]:
    """Start etcd and kube-apiserver in a temporary folder; stop both and remove it on exit.

    ``extra_args`` are appended to kube-apiserver's command line (e.g. ``--feature-gates=…``).
    """
    binaries = build_binaries()
    workdir = Path(tempfile.mkdtemp(prefix="cdcflow-kube-"))
    try:
        certs = make_certificates(workdir / "pki", extra_names=network.extra_server_names)
        with contextlib.ExitStack() as stack:
            etcd_endpoint, etcd_log, etcd_pid = stack.enter_context(
                _running_etcd(binaries.etcd, workdir)
            )
            server, log, apiserver_pid = stack.enter_context(
                _running_apiserver(
                    binaries.kube_apiserver, workdir, certs, etcd_endpoint, extra_args, network
                )
            )
            kubeconfig = workdir / "kubeconfig"
            kubeconfig.write_text(yaml.safe_dump(kubeconfig_document(server, certs)))
            yield KubeCluster(
                kubeconfig=kubeconfig,
                server=server,
                kubectl=binaries.kubectl,
                log=log,
                etcd_log=etcd_log,
                etcd_endpoint=etcd_endpoint,
                ca_cert=certs.ca_cert,
                version=binaries.version,
                workdir=workdir,
                apiserver_pid=apiserver_pid,
                etcd_pid=etcd_pid,
                certificates=certs,
            )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


@contextlib.contextmanager
def _running_etcd(etcd: Path, workdir: Path) -> Iterator[tuple[str, Path, int]]:
    """Start etcd, wait for ``/health``; yield its client URL, log and pid; stop it."""
    client_port, peer_port = _two_free_ports()
    log = workdir / "etcd.log"
    args = etcd_args(etcd, data_dir=workdir / "etcd", client_port=client_port, peer_port=peer_port)
    process = processes.start_process(args, log=log)
    try:
        endpoint = f"http://{HOST}:{client_port}"
        processes.wait_until(
            lambda: _etcd_healthy(endpoint),
            service=ETCD_SERVICE,
            what=f"{endpoint}/health",
            log=log,
            timeout=START_TIMEOUT,
            process=process,
        )
        yield endpoint, log, process.pid
    finally:
        processes.stop_process(process)


@contextlib.contextmanager
def _running_apiserver(
    apiserver: Path,
    workdir: Path,
    certs: ClusterCertificates,
    etcd_endpoint: str,
    extra_args: Sequence[str],
    network: ApiServerNetwork,
) -> Iterator[tuple[str, Path, int]]:
    """Start kube-apiserver, wait for ``/readyz`` as the admin; yield URL, log and pid."""
    port = network.port or processes.free_port()
    log = workdir / "kube-apiserver.log"
    args = apiserver_args(
        apiserver, certs=certs, port=port, etcd_endpoint=etcd_endpoint,
        cert_dir=workdir / "apiserver-certs", network=network,
    )  # fmt: skip
    process = processes.start_process([*args, *extra_args], log=log)
    try:
        server = f"https://{network.advertise_address}:{port}"
        context = _admin_tls(certs)
        processes.wait_until(
            lambda: _apiserver_ready(server, context),
            service=SERVICE,
            what=f"{server}/readyz",
            log=log,
            timeout=START_TIMEOUT,
            process=process,
        )
        yield server, log, process.pid
    finally:
        processes.stop_process(process)


def _etcd_healthy(endpoint: str) -> bool:
    """Whether etcd answers ``/health`` with ``{"health": "true"}``."""
    body = _get(f"{endpoint}/health")
    try:
        return body is not None and json.loads(body).get("health") == "true"
    except (ValueError, AttributeError):
        return False


def _apiserver_ready(server: str, context: ssl.SSLContext) -> bool:
    """Whether ``/readyz`` answers 200 to the admin (every post-start hook has finished)."""
    return _get(f"{server}/readyz", context=context) is not None


def _admin_tls(certs: ClusterCertificates) -> ssl.SSLContext:
    """A TLS context that trusts the test CA and presents the admin's client certificate."""
    context = ssl.create_default_context(cafile=str(certs.ca_cert))
    context.load_cert_chain(str(certs.admin_cert), str(certs.admin_key))
    return context


def _get(url: str, *, context: ssl.SSLContext | None = None) -> bytes | None:
    """The body of a 200 answer to ``GET url``, or None on any error or other status."""
    try:
        with urllib.request.urlopen(url, timeout=2, context=context) as response:
            return bytes(response.read()) if response.status == 200 else None
    except (urllib.error.URLError, OSError, ValueError):
        return None


def _base64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def _two_free_ports() -> tuple[int, int]:
    """Two distinct free loopback ports."""
    first = processes.free_port()
    second = processes.free_port()
    while second == first:
        second = processes.free_port()
    return first, second


# --------------------------------------------------------------------------------------------
# Command line: ``python -m tests.services.kube build|up``


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: Sequence[str]) -> int:
    """``build`` fills the cache (for a CI step before the tests); ``up`` runs a cluster."""
    command = argv[0] if argv else "build"
    if command == "build":
        print(build_binaries())
        return 0
    if command == "up":
        signal.signal(signal.SIGTERM, _interrupt)  # stop etcd and kube-apiserver on SIGTERM too
        with running_kube_apiserver() as cluster:
            print(f"export KUBECONFIG={cluster.kubeconfig}  # kubectl: {cluster.kubectl}")
            print("Ctrl-C stops the cluster.", flush=True)
            with contextlib.suppress(KeyboardInterrupt):
                threading.Event().wait()
        return 0
    print(f"usage: python -m {__spec__.name if __spec__ else 'kube'} [build|up]", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
