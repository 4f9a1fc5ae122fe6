"""A real single-node Kubernetes for the e2e tests: control plane, containerd and a kubelet.

Runs only inside the namespaces of :mod:`~tests.services.node_namespace` (root, a private
network and mount namespace), which keep every address, mount and sysctl write of the node away
from the machine. What it starts, all as children of the calling process:

* etcd and kube-apiserver (:mod:`~tests.services.kube`), serving on 443 at the node address
  and at the ``kubernetes`` Service's ClusterIP, with node authorization and service-account
  tokens; kube-controller-manager and kube-scheduler. All six binaries come
  from one Go build of the pinned ``k8s.io/kubernetes`` release.
* containerd 1.6 and runc from Debian (installed on first use) with a configuration of its own:
  its socket and state in the run's folder, its content store in the cdcflow cache so imported
  images survive between runs. ``restrict_oom_score_adj`` is on because root on the project's
  machines lacks CAP_SYS_RESOURCE (runc fails every sandbox without it); cgroupfs, not systemd.
* the CNI ``bridge`` plugin (Debian's containernetworking-plugins) on the namespace's bridge,
  host-local addresses from :data:`~node_namespace.POD_SUBNET`, no masquerading.
* a tiny cluster DNS (:mod:`~tests.services.kube_dns`) at the node address: there is no
  registry to pull CoreDNS from.
* kubelet (cgroup v1 allowed, cgroupfs driver, image garbage collection off, eviction only
  when a disk is 99 % full) with iptables kept off its ``PATH``.

Images are the locally built ones of :mod:`~tests.services.node_images`, imported with
``ctr`` when their digest is not in the store yet. There is no kube-proxy:
ClusterIPs other than the API server's route nowhere, so the cluster DNS answers Service names
with their endpoints' pod addresses. There is no storage provisioner: hostPath
PersistentVolumes are made up front. Everything stops in reverse order on exit, pod processes
by their cgroups, and the kubelet's cgroups are removed; the logs of the last run stay in
``~/.cache/cdcflow/node/last-run-logs``.

``python -m tests.services.kube_node shell`` starts the node (inside fresh namespaces) and
opens a shell with ``KUBECONFIG`` set; leaving the shell stops it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from cdcflow.operator.devservices import processes
from tests.services import kstatus, kube, kube_dns, node_images
from tests.services import node_namespace as netns
from tests.services.oci_archive import ImageArchive

MODULE = "tests.services.kube_node"
SERVICE = "Kubernetes node"
NODE_NAME = "cdcflow-node"
API_PORT = 443
KUBELET_PORT = 10250
CLUSTER_DOMAIN = "cluster.local"
RUNTIME_PACKAGES = ("containerd", "runc", "containernetworking-plugins")
CNI_BIN_DIR = Path("/usr/lib/cni")
KUBELET_PATH = "/usr/bin"  # mount, du, find, …; not /usr/sbin, where iptables lives
CGROUP_ROOT = Path("/sys/fs/cgroup")
# Kubelet evicts below 1 % free (kubelet_configuration); the pods, Spark and Delta write a few GiB.
MIN_FREE_DISK_BYTES = 6 * 2**30
KUBEPODS = "kubepods"
PERSISTENT_VOLUMES = 40
PERSISTENT_VOLUME_SIZE = "1Gi"
READY_TIMEOUT = 120.0
NODE_NETWORK = kube.ApiServerNetwork(
    bind_address="0.0.0.0",  # only the run's own namespace has addresses
    advertise_address=netns.NODE_ADDRESS,
    port=API_PORT,
    extra_server_names=(f"IP:{netns.NODE_ADDRESS}", f"IP:{netns.KUBERNETES_SERVICE_ADDRESS}"),
    for_node=True,
)

CONTAINERD_CONFIG = """\
version = 2
root = "{root}"
state = "{state}"

[grpc]
  address = "{socket}"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{pause}"
  restrict_oom_score_adj = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{cni_bin}"
    conf_dir = "{cni_conf}"
"""


@dataclass(frozen=True)
class KubeNode:
    """A running single-node cluster: the control plane, the node's name, address and logs."""

    cluster: kube.KubeCluster
    name: str
    address: str
    containerd_socket: Path
    workdir: Path
    logs: Path

    def kubectl_command(self, *args: str) -> list[str]:
        """A ``kubectl`` command line aimed at this cluster as the admin."""
        return self.cluster.kubectl_command(*args)

    def ctr_command(self, *args: str) -> list[str]:
        """A ``ctr`` command line for the node's containerd, in the kubelet's namespace."""
        return ["ctr", "--address", str(self.containerd_socket), "-n", "k8s.io", *args]


# --------------------------------------------------------------------------------------------
# Configuration documents


def kubelet_configuration(*, workdir: Path, socket: Path, ca_cert: Path) -> dict[str, Any]:
    """The KubeletConfiguration: cgroup v1 + cgroupfs, no image GC, webhook authn/authz."""
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "address": netns.NODE_ADDRESS,
        "port": KUBELET_PORT,
        "readOnlyPort": 0,
        "healthzBindAddress": processes.LOOPBACK,
        "containerRuntimeEndpoint": f"unix://{socket}",
        "failCgroupV1": False,
        "cgroupDriver": "cgroupfs",
        "failSwapOn": False,
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": True},
            "x509": {"clientCAFile": str(ca_cert)},
        },
        "authorization": {"mode": "Webhook"},
        "clusterDNS": [netns.NODE_ADDRESS],
        "clusterDomain": CLUSTER_DOMAIN,
        "resolvConf": str(workdir / "resolv.conf"),
        "podLogsDir": str(workdir / "pod-logs"),
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "evictionHard": {
            "nodefs.available": "1%",
            "imagefs.available": "1%",
            "memory.available": "100Mi",
        },
        "maxPods": 30,
        "serializeImagePulls": False,
        "syncFrequency": "10s",
        "fileCheckFrequency": "10s",
        "nodeStatusReportFrequency": "10s",
    }


def cni_configuration(*, ipam_dir: Path) -> dict[str, Any]:
    """One bridge network on the namespace's bridge; the node address is the gateway."""
    return {
        "cniVersion": "0.4.0",
        "name": "cdcflow",
        "plugins": [
            {
                "type": "bridge",
                "bridge": netns.BRIDGE,
                "isGateway": True,
                "ipMasq": False,
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "dataDir": str(ipam_dir),
                    "ranges": [[{"subnet": netns.POD_SUBNET, "gateway": netns.NODE_ADDRESS}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                },
            },
        ],
    }


def persistent_volumes(folder: Path, count: int = PERSISTENT_VOLUMES) -> list[dict[str, Any]]:
    """hostPath PersistentVolumes without a class, for claims that name none.

    Their folders are made world-writable up front, as local-path provisioners do: hostPath
    volumes ignore a pod's ``fsGroup``, and the pods run as non-root users.
    """
    for index in range(count):
        (folder / str(index)).mkdir(parents=True, exist_ok=True)
        (folder / str(index)).chmod(0o777)
    return [
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": f"node-volume-{index}"},
            "spec": {
                "capacity": {"storage": PERSISTENT_VOLUME_SIZE},
                "accessModes": ["ReadWriteOnce"],
                "persistentVolumeReclaimPolicy": "Retain",
                "storageClassName": "",
                "hostPath": {"path": str(folder / str(index)), "type": "Directory"},
            },
        }
        for index in range(count)
    ]


# --------------------------------------------------------------------------------------------
# Running the node


@contextlib.contextmanager
def running_node(images: Sequence[ImageArchive] = ()) -> Iterator[KubeNode]:
    """Start the control plane, containerd, the cluster DNS and kubelet; stop all on exit."""
    netns.require_inside()
    ensure_runtime_installed()
    store = processes.cache_dir("node", "containerd")
    require_free_disk(store, Path(tempfile.gettempdir()))
    with (
        processes.locked(store.parent / ".lock"),
        kube.running_kube_apiserver(network=NODE_NETWORK) as cluster,
        contextlib.ExitStack() as stack,
    ):
        workdir = Path(tempfile.mkdtemp(prefix="cdcflow-node-"))
        stack.callback(_remove_tree, workdir)
        logs = workdir / "logs"
        logs.mkdir()
        stack.callback(_keep_logs, logs, cluster.log)
        stack.enter_context(_control_plane_controllers(cluster, logs))
        socket = stack.enter_context(_running_containerd(store, workdir, logs))
        node = KubeNode(
            cluster=cluster,
            name=NODE_NAME,
            address=netns.NODE_ADDRESS,
            containerd_socket=socket,
            workdir=workdir,
            logs=logs,
        )
        _forget_old_containers(node)
        node_images.import_images([node_images.pause_image(), *images], address=socket)
        stack.enter_context(
            kube_dns.running_cluster_dns(
                kubeconfig=cluster.kubeconfig,
                address=netns.NODE_ADDRESS,
                cluster_domain=CLUSTER_DOMAIN,
            )
        )
        stack.enter_context(_running_kubelet(node))
        _wait_node_ready(node)
        _apply(node, persistent_volumes(workdir / "volumes"))
        yield node


def require_free_disk(*folders: Path) -> None:
    """Refuse to start a node on a nearly full disk: kubelet would evict every pod and delete
    the images (the sandbox image too) — pods that never start, found only in its log."""
    for folder in folders:
        usage = shutil.disk_usage(folder)
        if usage.free < MIN_FREE_DISK_BYTES:
            raise processes.ServiceStartError(
                f"only {usage.free / 2**30:.1f} GiB free under {folder}: the test node needs "
                f"{MIN_FREE_DISK_BYTES / 2**30:.0f} GiB (its pods and images). Free some space, "
                "e.g. `.venv/bin/uv cache prune` or old `/tmp/cdcflow-*` folders."
            )


# klog's "E1123 20:07:35.815020   19431 file.go:403] " and logfmt's 'time="…" '
_LOG_PREFIX = re.compile(r'^(?:[EW]\d{4} [\d:.]+\s+\d+ [^\]]+\]|time="[^"]*")\s*')


def problems(node: KubeNode, *, limit: int = 30) -> str:
    """The last distinct warnings and errors of the node's kubelet and containerd: what a pod
    that never starts (eviction, a missing image, a sandbox failure) leaves behind."""
    found: dict[str, None] = {}
    for name in ("kubelet.log", "containerd.log"):
        path = node.logs / name
        lines = path.read_text(errors="replace").splitlines() if path.exists() else []
        for line in lines:
            if line[:1] in "EW" or "level=error" in line or "Eviction manager" in line:
                found[_LOG_PREFIX.sub("", line)[:300]] = None
    return "\n".join(list(found)[-limit:])


def prepare(source: Path) -> list[ImageArchive]:
    """Everything that needs the network, done before entering the node's namespaces: the
    Kubernetes binaries, the kstatus helper the tests judge status with, the container
    runtime's packages and the images of ``source``."""
    kube.build_binaries()
    kstatus.build_kstatus()
    ensure_runtime_installed()
    return node_images.all_images(source)


def ensure_runtime_installed() -> None:
    """Install containerd, runc and the CNI plugins from Debian when any is missing."""
    present = all(processes.find_binary(name) for name in ("containerd", "runc", "ctr"))
    if present and (CNI_BIN_DIR / "bridge").exists():
        return
    if netns.inside():
        raise processes.ServiceStartError(
            f"{', '.join(RUNTIME_PACKAGES)} are not installed, and the node's network namespace "
            f"has no network to install them: run `python -m {MODULE} prepare` first."
        )
    log = processes.cache_dir("node") / "apt.log"
    processes.apt_install(RUNTIME_PACKAGES, service=SERVICE, log=log)


@contextlib.contextmanager
def _control_plane_controllers(cluster: kube.KubeCluster, logs: Path) -> Iterator[None]:
    """kube-controller-manager and kube-scheduler as the admin, no leader election."""
    bin_dir = cluster.kubectl.parent
    certs = cluster.certificates
    controller_manager = [
        str(bin_dir / "kube-controller-manager"),
        f"--kubeconfig={cluster.kubeconfig}",
        "--controllers=*,-nodeipam,-service-lb-controller,-cloud-node-lifecycle",
        f"--root-ca-file={certs.ca_cert}",
        f"--service-account-private-key-file={certs.service_account_key}",
        f"--cluster-signing-cert-file={certs.ca_cert}",
        f"--cluster-signing-key-file={certs.ca_key}",
        "--use-service-account-credentials=true",
        "--leader-elect=false",
        f"--bind-address={processes.LOOPBACK}",
        "--secure-port=0",
    ]
    scheduler = [
        str(bin_dir / "kube-scheduler"),
        f"--kubeconfig={cluster.kubeconfig}",
        "--leader-elect=false",
        f"--bind-address={processes.LOOPBACK}",
        "--secure-port=0",
    ]
    started = [
        processes.start_process(controller_manager, log=logs / "kube-controller-manager.log"),
        processes.start_process(scheduler, log=logs / "kube-scheduler.log"),
    ]
    try:
        yield
    finally:
        for process in started:
            processes.stop_process(process)


@contextlib.contextmanager
def _running_containerd(store: Path, workdir: Path, logs: Path) -> Iterator[Path]:
    """containerd with its own config and socket; yields the socket; stops it and its shims."""
    socket = workdir / "containerd" / "containerd.sock"
    cni_conf = workdir / "cni" / "net.d"
    cni_conf.mkdir(parents=True)
    (cni_conf / "10-cdcflow.conflist").write_text(
        json.dumps(cni_configuration(ipam_dir=workdir / "cni" / "ipam"), indent=2)
    )
    config = workdir / "containerd" / "config.toml"
    config.parent.mkdir()
    config.write_text(
        CONTAINERD_CONFIG.format(
            root=store,
            state=workdir / "containerd" / "state",
            socket=socket,
            pause=node_images.PAUSE_IMAGE,
            cni_bin=CNI_BIN_DIR,
            cni_conf=cni_conf,
        )
    )
    log = logs / "containerd.log"
    process = processes.start_process(["containerd", "--config", str(config)], log=log)
    try:
        processes.wait_until(
            lambda: _ctr_ok(socket),
            service="containerd",
            what=f"{socket}",
            log=log,
            timeout=60,
            process=process,
        )
        yield socket
    finally:
        _kill_pods()
        processes.stop_process(process)
        _kill_matching(str(socket))  # the shims outlive containerd by design


@contextlib.contextmanager
def _running_kubelet(node: KubeNode) -> Iterator[None]:
    """kubelet registered as :data:`NODE_NAME` at the node address; stopped before containerd."""
    root = node.workdir / "kubelet"
    root.mkdir()
    (node.workdir / "resolv.conf").write_text("")  # pods learn no name server but ours
    config = node.workdir / "kubelet.yaml"
    config.write_text(
        yaml.safe_dump(
            kubelet_configuration(
                workdir=node.workdir,
                socket=node.containerd_socket,
                ca_cert=node.cluster.ca_cert,
            )
        )
    )
    args = [
        str(node.cluster.kubectl.parent / "kubelet"),
        f"--config={config}",
        f"--kubeconfig={node.cluster.kubeconfig}",
        f"--root-dir={root}",
        f"--node-ip={node.address}",
        f"--hostname-override={node.name}",
        "--v=1",
    ]
    env = {**os.environ, "PATH": KUBELET_PATH}
    process = processes.start_process(args, log=node.logs / "kubelet.log", env=env)
    try:
        yield
    finally:
        processes.stop_process(process)
        _kill_pods()
        _unmount_below(root)


def _wait_node_ready(node: KubeNode) -> None:
    """Until the node is Ready and the controllers made the ``default`` ServiceAccount."""

    def ready() -> bool:
        result = subprocess.run(
            node.kubectl_command("get", "node", node.name, "-o", "json"),
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            return False
        conditions = json.loads(result.stdout).get("status", {}).get("conditions", [])
        node_ready = any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)
        account = node.kubectl_command("get", "serviceaccount", "default", "-n", "default")
        return node_ready and subprocess.run(account, capture_output=True).returncode == 0

    processes.wait_until(
        ready,
        service=SERVICE,
        what=f"node {node.name} Ready",
        log=node.logs / "kubelet.log",
        timeout=READY_TIMEOUT,
    )


def _apply(node: KubeNode, documents: Sequence[dict[str, Any]]) -> None:
    stream = yaml.safe_dump_all(documents)
    subprocess.run(
        node.kubectl_command("apply", "-f", "-"), input=stream, text=True, check=True,
        capture_output=True,
    )  # fmt: skip


def _ctr_ok(socket: Path) -> bool:
    result = subprocess.run(
        ["ctr", "--address", str(socket), "version"], capture_output=True, check=False
    )
    return result.returncode == 0


def _forget_old_containers(node: KubeNode) -> None:
    """Remove containers a crashed earlier run left in the persistent store (no process lives)."""
    listed = subprocess.run(
        node.ctr_command("containers", "list", "--quiet"), capture_output=True, text=True,
        check=False,
    )  # fmt: skip
    for container in listed.stdout.split():
        subprocess.run(node.ctr_command("tasks", "delete", "--force", container),
                       capture_output=True, check=False)  # fmt: skip
        subprocess.run(node.ctr_command("containers", "delete", container),
                       capture_output=True, check=False)  # fmt: skip


# --------------------------------------------------------------------------------------------
# Teardown helpers


def _pod_cgroups() -> list[Path]:
    """Every kubelet-made cgroup folder, deepest first, in every v1 hierarchy."""
    found: list[Path] = []
    for hierarchy in CGROUP_ROOT.iterdir():
        top = hierarchy / KUBEPODS
        # os.walk ignores folders that vanish while it looks (kubelet removes cgroups too)
        found += [Path(folder) for folder, _, _ in os.walk(top)]
    return sorted(found, key=lambda path: len(path.parts), reverse=True)


def _kill_pods() -> None:
    """SIGKILL every process in the pod cgroups, then remove those cgroups."""
    for _ in range(20):
        pids = {pid for path in _pod_cgroups() for pid in _cgroup_pids(path)}
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.1)
    for path in _pod_cgroups():
        with contextlib.suppress(OSError):
            path.rmdir()


def _cgroup_pids(path: Path) -> set[int]:
    try:
        return {int(line) for line in (path / "cgroup.procs").read_text().split()}
    except (OSError, ValueError):
        return set()


def _kill_matching(marker: str) -> None:
    """SIGKILL every process whose command line mentions ``marker`` (containerd's shims)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            if marker in (entry / "cmdline").read_bytes().decode(errors="replace"):
                os.kill(int(entry.name), signal.SIGKILL)


def _unmount_below(folder: Path) -> None:
    """Unmount whatever kubelet left mounted under ``folder`` (secrets, service tokens)."""
    mounts = [
        line.split()[4]
        for line in Path("/proc/self/mountinfo").read_text().splitlines()
        if line.split()[4].startswith(f"{folder}/")
    ]
    for mount in sorted(mounts, key=len, reverse=True):
        subprocess.run(["umount", "-l", mount], capture_output=True, check=False)


def _keep_logs(logs: Path, apiserver_log: Path) -> None:
    """Copy the node's logs to the cache (``node/last-run-logs``), for a look after a failure."""
    kept = processes.cache_dir("node") / "last-run-logs"
    shutil.rmtree(kept, ignore_errors=True)
    shutil.copytree(logs, kept, dirs_exist_ok=True)
    if apiserver_log.exists():
        shutil.copy2(apiserver_log, kept)


def _remove_tree(folder: Path) -> None:
    _unmount_below(folder)
    subprocess.run(["rm", "-rf", "--one-file-system", str(folder)], check=False)


# --------------------------------------------------------------------------------------------
# Command line


def main(argv: Sequence[str]) -> int:
    """``prepare``: build and install what the node needs (network required). ``shell``: that,
    then a node in fresh namespaces and an interactive shell pointed at it."""
    command = argv[0] if argv else ""
    if command not in ("prepare", "shell"):
        print(f"usage: python -m {MODULE} prepare|shell", file=sys.stderr)
        return 2
    source = Path(__file__).resolve().parents[2]
    if not netns.inside():
        for image in prepare(source):
            print(f"{image.name}: {image.path}")
        if command == "prepare":
            return 0
        return subprocess.run(netns.wrapped([sys.executable, "-m", MODULE, "shell"])).returncode
    with running_node(node_images.all_images(source)) as node:
        print(f"Node {node.name} is Ready; logs in {node.logs}. Leave the shell to stop it.")
        env = {**os.environ, "KUBECONFIG": str(node.cluster.kubeconfig)}
        env["PATH"] = f"{node.cluster.kubectl.parent}:{env.get('PATH', '')}"
        return subprocess.run([os.environ.get("SHELL", "/bin/bash")], env=env).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
