"""Shared plumbing for throwaway services: free ports, the cache, starting and stopping processes.

A service that fails to start raises :class:`ServiceStartError` whose message names the
service, what it was waiting for, and the tail of the service's own log, so a failed test run
says why without anyone digging through temporary directories.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

LOG_TAIL_LINES = 40
LOOPBACK = "127.0.0.1"
SERVICE_HOST_ENV = "CDCFLOW_SERVICE_HOST"
POLICY_RC_D = Path("/usr/sbin/policy-rc.d")
SBIN_DIRS = ("/usr/local/sbin", "/usr/sbin", "/sbin")


class ServiceStartError(RuntimeError):
    """A throwaway service did not come up; the message carries its log tail."""


def cache_dir(*parts: str) -> Path:
    """Return (and create) a folder under ``$CDCFLOW_CACHE``, by default ~/.cache/cdcflow."""
    root = Path(os.environ.get("CDCFLOW_CACHE", Path.home() / ".cache" / "cdcflow"))
    path = root.joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path


def service_host() -> str:
    """The address dev services listen on and advertise: loopback, unless inside a test node's
    network namespace, whose bridge address pods can reach (``tests.services.node_namespace``
    sets :data:`SERVICE_HOST_ENV` there)."""
    return os.environ.get(SERVICE_HOST_ENV) or LOOPBACK


def free_port() -> int:
    """Ask the kernel for a TCP port on 127.0.0.1 that is free right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    """Whether something accepts TCP connections on ``host:port``."""
    with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=0.5):
        return True
    return False


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    """The last ``lines`` lines of a log file, or a note that it does not exist."""
    if not path.exists():
        return f"(no log at {path})"
    text = path.read_text(errors="replace").splitlines()
    return "\n".join(text[-lines:])


def wait_until(
    ready: Callable[[], bool],
    *,
    service: str,
    what: str,
    log: Path,
    timeout: float,
    process: subprocess.Popen[bytes] | None = None,
) -> None:
    """Poll ``ready`` until it holds; raise with the log tail on timeout or early process exit."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready():
            return
        if process is not None and process.poll() is not None:
            raise ServiceStartError(
                f"{service} exited with code {process.returncode} while waiting for {what}.\n"
                f"Last lines of {log}:\n{log_tail(log)}"
            )
        time.sleep(0.2)
    raise ServiceStartError(
        f"{service} did not become ready ({what}) within {timeout:.0f}s.\n"
        f"Last lines of {log}:\n{log_tail(log)}"
    )


def run_checked(
    args: Sequence[str],
    *,
    service: str,
    log: Path,
    env: dict[str, str] | None = None,
    user: str | None = None,
    timeout: float = 600,
) -> None:
    """Run a setup command, appending its output to ``log``; raise with the tail on failure."""
    command = _as_user(args, user)
    with log.open("ab") as sink:
        result = subprocess.run(
            command, stdout=sink, stderr=subprocess.STDOUT, env=env, timeout=timeout, check=False
        )
    if result.returncode != 0:
        raise ServiceStartError(
            f"{service}: `{' '.join(args)}` failed with code {result.returncode}.\n"
            f"Last lines of {log}:\n{log_tail(log)}"
        )


def start_process(
    args: Sequence[str], *, log: Path, env: dict[str, str] | None = None, user: str | None = None
) -> subprocess.Popen[bytes]:
    """Start a long-running service process in its own session with output going to ``log``."""
    with log.open("ab") as sink:
        return subprocess.Popen(
            _as_user(args, user),
            stdout=sink,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )


def stop_process(process: subprocess.Popen[bytes], *, grace: float = 15) -> None:
    """Terminate a service process, escalating to SIGKILL after ``grace`` seconds."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=grace)


def find_binary(name: str) -> str | None:
    """Locate an executable on PATH or in the sbin folders, which a non-root PATH may lack."""
    search = os.pathsep.join([os.environ.get("PATH", ""), *SBIN_DIRS])
    return shutil.which(name, path=search)


def apt_install(packages: Sequence[str], *, service: str, log: Path) -> None:
    """Install Debian packages (root only) without letting their scripts start any service."""
    if os.geteuid() != 0:
        raise ServiceStartError(
            f"{service} needs the Debian packages {', '.join(packages)}, and only root can "
            f"install them: `sudo apt-get install --no-install-recommends {' '.join(packages)}`."
        )
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    apt = ["apt-get", "-o", "DPkg::Lock::Timeout=300"]
    run_checked([*apt, "update"], service=service, log=log, env=env)
    with _service_starts_blocked():
        run_checked(
            [*apt, "install", "-y", "--no-install-recommends", *packages],
            service=service,
            log=log,
            env=env,
        )


@contextlib.contextmanager
def _service_starts_blocked() -> Iterator[None]:
    """Keep package scripts from starting system services (a MariaDB on 3306, a containerd).

    invoke-rc.d and deb-systemd-invoke both ask ``policy-rc.d``; exit code 101 means "do not
    start". An existing policy (container images ship one) is left untouched.
    """
    if POLICY_RC_D.exists():
        yield
        return
    POLICY_RC_D.write_text("#!/bin/sh\n# written by cdcflow while installing packages\nexit 101\n")
    POLICY_RC_D.chmod(0o755)
    try:
        yield
    finally:
        POLICY_RC_D.unlink(missing_ok=True)


def require_binary(name: str, *, hint: str) -> str:
    """Locate an executable or raise with ``hint`` saying how to install it."""
    found = shutil.which(name)
    if found is None:
        raise ServiceStartError(f"`{name}` was not found on PATH. {hint}")
    return found


def _as_user(args: Sequence[str], user: str | None) -> list[str]:
    """Wrap a command so it runs as ``user`` when we are root (initdb and postgres refuse root)."""
    if user is None or os.geteuid() != 0:
        return list(args)
    return ["setpriv", f"--reuid={user}", f"--regid={user}", "--init-groups", "--", *args]


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` so concurrent first uses (parallel test sessions)
    download or build a cached artifact only once."""
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
