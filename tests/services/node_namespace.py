"""The private network and mount namespaces a test Kubernetes node lives in.

A kubelet cannot use a loopback node address, its CNI bridge turns on IP forwarding, and it
rewrites machine-wide sysctls. So the node, the control plane and every service its pods use
run inside namespaces made for the run alone::

    python -m tests.services.node_namespace -- <command …>

re-executes itself under ``unshare --net --mount --propagation private`` (root only), then,
inside, before it executes ``<command>``:

* brings loopback up and creates the bridge :data:`BRIDGE` holding :data:`NODE_ADDRESS`, the
  node's address and the pods' gateway (the CNI ``bridge`` plugin reuses it);
* puts :data:`KUBERNETES_SERVICE_ADDRESS`, the ``kubernetes`` Service's ClusterIP, on loopback,
  so pods reach the API server there without a kube-proxy;
* bind-mounts plain files over the sysctls kubelet writes (:data:`SHADOWED_SYSCTLS`), so its
  writes land in those files instead of the machine's kernel;
* exports :data:`SERVICE_HOST_ENV` (``CDCFLOW_SERVICE_HOST``) = the node address, which the
  dev services (PostgreSQL, Kafka, …) listen on and advertise so pods can reach them, and
  :data:`INSIDE_ENV` so fixtures know where they are.

Those addresses exist only in this network namespace, so no traffic of the run can reach any
address outside it, and everything mounted inside (pod volumes, overlay snapshots, the sysctl
shadows) disappears with the mount namespace when the last process of the run exits.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from cdcflow.operator.devservices import processes

NODE_ADDRESS = "10.213.0.1"
NODE_PREFIX_LENGTH = 24
POD_SUBNET = "10.213.0.0/24"
BRIDGE = "cdcflow0"
KUBERNETES_SERVICE_ADDRESS = "10.0.0.1"
SHADOWED_SYSCTLS = ("kernel/panic", "kernel/panic_on_oops", "vm/overcommit_memory")
INSIDE_ENV = "CDCFLOW_NODE_NAMESPACE"
SERVICE_HOST_ENV = processes.SERVICE_HOST_ENV
UNSHARE = ("unshare", "--net", "--mount", "--propagation", "private")
MODULE = "tests.services.node_namespace"
ROOT_HINT = (
    "The test Kubernetes node needs root (it creates network and mount namespaces, a bridge "
    "and cgroups); run the e2e tier as root, e.g. in the project's CI or a throwaway VM."
)


class NamespaceError(processes.ServiceStartError):
    """The namespaces could not be made or are not the ones this process runs in."""


def inside() -> bool:
    """Whether this process runs inside the node's namespaces (set up by :func:`main`)."""
    return os.environ.get(INSIDE_ENV) == NODE_ADDRESS


def require_inside() -> None:
    """Raise with the way in when called outside the node's namespaces."""
    if not inside():
        raise NamespaceError(
            "The Kubernetes node runs only inside its own network namespace. Run the e2e tier "
            "with `make e2e` (or `python -m tests.run_tiers e2e`), or wrap the command: "
            f"`python -m {MODULE} -- pytest tests/e2e`."
        )


def wrapped(command: Sequence[str]) -> list[str]:
    """``command`` run inside fresh node namespaces (the command line to start)."""
    return [sys.executable, "-m", MODULE, "--", *command]


def prepare() -> None:
    """Inside fresh namespaces: loopback, the bridge, the Service address and sysctl shadows."""
    ip = processes.require_binary("ip", hint="Install iproute2, e.g. `apt-get install iproute2`.")
    for args in (
        ("link", "set", "lo", "up"),
        ("addr", "add", f"{KUBERNETES_SERVICE_ADDRESS}/32", "dev", "lo"),
        ("link", "add", BRIDGE, "type", "bridge"),
        ("addr", "add", f"{NODE_ADDRESS}/{NODE_PREFIX_LENGTH}", "dev", BRIDGE),
        ("link", "set", BRIDGE, "up"),
    ):
        _run(ip, *args)
    _shadow_sysctls(processes.cache_dir("node", "sysctl"))


def _shadow_sysctls(folder: Path) -> None:
    """Bind a file holding the current value over each sysctl kubelet would change."""
    for name in SHADOWED_SYSCTLS:
        real = Path("/proc/sys") / name
        shadow = folder / name.replace("/", ".")
        shadow.write_text(real.read_text())
        _run("mount", "--bind", str(shadow), str(real))


def _run(*args: str) -> None:
    result = subprocess.run(args, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise NamespaceError(f"`{' '.join(args)}` failed: {result.stderr.strip()}")


def main(argv: Sequence[str]) -> int:
    """Re-execute under ``unshare`` when outside; inside, prepare and execute the command."""
    command = list(argv[1:] if argv[:1] == ["--"] else argv)
    if not command:
        print(f"usage: python -m {MODULE} -- <command …>", file=sys.stderr)
        return 2
    if os.geteuid() != 0:
        print(ROOT_HINT, file=sys.stderr)
        return 2
    if os.environ.get(INSIDE_ENV) is None:
        unshare = shutil.which("unshare") or "unshare"
        os.environ[INSIDE_ENV] = "preparing"
        return _exec([unshare, *UNSHARE[1:], *wrapped(command)])
    try:
        prepare()
    except NamespaceError as error:
        print(error, file=sys.stderr)
        return 1
    os.environ[INSIDE_ENV] = NODE_ADDRESS
    os.environ[SERVICE_HOST_ENV] = NODE_ADDRESS
    return _exec(command)


def _exec(command: Sequence[str]) -> NoReturn:
    os.execvp(command[0], list(command))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
