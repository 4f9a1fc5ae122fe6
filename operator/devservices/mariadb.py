"""A throwaway MariaDB 10.11 server set up for binlog change data capture.

The machine's MariaDB binaries are used; when they are missing and we are root,
:func:`ensure_installed` installs Debian's ``mariadb-server`` without letting the package start
its own system service. :func:`running_mariadb` then initialises a private data folder, starts
``mariadbd`` on 127.0.0.1 with a free port and its own socket and pid file, and stops and
removes it afterwards. When we are root the server runs as the package's ``mysql`` OS user.

The binlog is what a Debezium-style connector reads: ``binlog_format=ROW``,
``binlog_row_image=FULL``, ``binlog_row_metadata=FULL`` (column names travel with the row
events), a fixed ``server_id`` and GTIDs in strict mode. Setup statements are kept out of the
binlog, so it holds only what the tests write. Two accounts log in over TCP:

* ``root`` administers fixtures and tests.
* ``cdc`` holds only what the Debezium MySQL documentation asks of a connector user: SELECT,
  RELOAD, SHOW DATABASES, LOCK TABLES, REPLICATION SLAVE and REPLICATION CLIENT, plus BINLOG
  MONITOR, the name MariaDB 10.5+ gives the latter (needed for ``SHOW MASTER STATUS``).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cdcflow.operator.devservices import processes

SERVICE = "MariaDB"
HOST = "127.0.0.1"
ROOT_USER = "root"
ROOT_PASSWORD = "root-dev-only"
CDC_USER = "cdc"
CDC_PASSWORD = "cdc-dev-only"
DATABASE = "inventory"
SERVER_ID = 1
OS_USER = "mysql"
CDC_PRIVILEGES = (
    "SELECT",
    "RELOAD",
    "SHOW DATABASES",
    "LOCK TABLES",
    "REPLICATION SLAVE",
    "REPLICATION CLIENT",
    "BINLOG MONITOR",
)
SERVER_BINARIES = ("mariadbd", "mysqld")
APT_PACKAGE = "mariadb-server"


@dataclass(frozen=True)
class MariaDbServer:
    """Where a running throwaway MariaDB listens and how to log in."""

    host: str
    port: int
    database: str
    root_user: str
    root_password: str
    cdc_user: str
    cdc_password: str
    server_id: int
    data_dir: Path
    socket: Path
    log: Path
    os_user: str | None = None
    #: the server's processes, the running one last (a restart adds one)
    processes: list[subprocess.Popen[bytes]] = field(
        default_factory=list, repr=False, compare=False
    )

    def restart(self, *, crash: bool = True) -> None:
        """Stop ``mariadbd`` (SIGKILL, as a crash: InnoDB and the binlog recover at start; or
        a clean shutdown) and start it again on the same port and data."""
        current = self.processes[-1]
        if crash:
            current.kill()
            current.wait(60)
        else:
            processes.stop_process(current, grace=30)
        workdir = self.data_dir.parent
        started = processes.start_process(
            _server_args(self, workdir, self.os_user), log=self.log, user=self.os_user
        )
        self.processes.append(started)
        _wait_listening(self, started)

    def connection_settings(self, *, cdc: bool = False) -> dict[str, str | int]:
        """``host``/``port``/``user``/``password`` for PyMySQL or BinLogStreamReader."""
        user, password = (
            (self.cdc_user, self.cdc_password) if cdc else (self.root_user, self.root_password)
        )
        return {"host": self.host, "port": self.port, "user": user, "password": password}


def server_binary() -> str | None:
    """The MariaDB server executable, ``mariadbd`` or its older name ``mysqld``."""
    for name in SERVER_BINARIES:
        found = processes.find_binary(name)
        if found is not None:
            return found
    return None


def ensure_installed() -> None:
    """Install Debian's ``mariadb-server`` when the server or ``mariadb-install-db`` is missing."""
    if server_binary() is not None and processes.find_binary("mariadb-install-db") is not None:
        return
    processes.apt_install(
        [APT_PACKAGE], service=SERVICE, log=processes.cache_dir("mariadb") / "apt.log"
    )


def os_user() -> str | None:
    """The OS user to run the server as: ``mysql`` when we are root and it exists, else none."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam(OS_USER)
    except KeyError:
        return None
    return OS_USER


@contextlib.contextmanager
def running_mariadb() -> Iterator[MariaDbServer]:
    """Install if needed, initialise, start and finally stop and remove a MariaDB server.

    The temporary folder is created here because the ``mysql`` OS user must own it, while
    pytest's temporary folders are private to root.
    """
    ensure_installed()
    user = os_user()
    workdir = Path(tempfile.mkdtemp(prefix="cdcflow-mariadb-"))
    try:
        if user is not None:
            shutil.chown(workdir, user=user, group=user)
        server = MariaDbServer(
            host=HOST,
            port=processes.free_port(),
            database=DATABASE,
            root_user=ROOT_USER,
            root_password=ROOT_PASSWORD,
            cdc_user=CDC_USER,
            cdc_password=CDC_PASSWORD,
            server_id=SERVER_ID,
            data_dir=workdir / "data",
            socket=workdir / "mariadb.sock",
            log=workdir / "mariadb.log",
            os_user=user,
        )
        _install_db(server=server, workdir=workdir, user=user)
        with _server_process(server=server, workdir=workdir, user=user):
            yield server
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _install_db(*, server: MariaDbServer, workdir: Path, user: str | None) -> None:
    """Create the system tables; install-db leaves the root accounts without a password."""
    install_db = processes.require_binary(
        "mariadb-install-db", hint="Install it with `apt-get install mariadb-server`."
    )
    processes.run_checked(
        [
            install_db,
            "--no-defaults",
            f"--datadir={server.data_dir}",
            "--auth-root-authentication-method=normal",
            "--skip-test-db",
            "--skip-name-resolve",
            *_storage_options(workdir),
        ],
        service=SERVICE,
        log=workdir / "install-db.log",
        user=user,
    )


@contextlib.contextmanager
def _server_process(*, server: MariaDbServer, workdir: Path, user: str | None) -> Iterator[None]:
    """Run ``mariadbd`` until the block ends, then shut it down cleanly."""
    process = processes.start_process(
        _server_args(server, workdir, user), log=server.log, user=user
    )
    server.processes.append(process)
    try:
        _wait_listening(server, process)
        _create_database_and_users(server=server, workdir=workdir)
        yield
    finally:
        _shutdown(server=server, workdir=workdir)
        processes.stop_process(server.processes[-1], grace=30)


def _wait_listening(server: MariaDbServer, process: subprocess.Popen[bytes]) -> None:
    processes.wait_until(
        lambda: processes.port_open(server.port, server.host),
        service=SERVICE,
        what=f"port {server.port}",
        log=server.log,
        timeout=120,
        process=process,
    )


def _server_args(server: MariaDbServer, workdir: Path, user: str | None) -> list[str]:
    """The ``mariadbd`` command line: private paths, loopback only, a binlog fit for CDC."""
    binary = server_binary()
    if binary is None:
        raise processes.ServiceStartError("`mariadbd` was not found; run ensure_installed().")
    run_as_root = ["--user=root"] if user is None and os.geteuid() == 0 else []
    return [
        binary,
        "--no-defaults",
        *run_as_root,
        f"--datadir={server.data_dir}",
        f"--socket={server.socket}",
        f"--pid-file={workdir / 'mariadb.pid'}",
        f"--bind-address={server.host}",
        f"--port={server.port}",
        "--skip-name-resolve",
        "--log-bin=mariadb-bin",
        "--binlog-format=ROW",
        "--binlog-row-image=FULL",
        "--binlog-row-metadata=FULL",
        f"--server-id={server.server_id}",
        "--gtid-strict-mode=ON",
        "--log-slave-updates=ON",
        "--sync-binlog=0",
        "--innodb-flush-log-at-trx-commit=2",
        *_storage_options(workdir),
    ]


def _storage_options(workdir: Path) -> list[str]:
    """Options shared by install-db and the server: a small footprint, temp files kept inside."""
    return [
        f"--tmpdir={workdir}",
        "--innodb-buffer-pool-size=64M",
        "--innodb-log-file-size=16M",
    ]


def _create_database_and_users(*, server: MariaDbServer, workdir: Path) -> None:
    """Create the sample database, give root a password and create the CDC user.

    install-db's passwordless ``root`` accounts for loopback addresses and the host name would
    shadow ``root@'%'``, so they go; ``root@localhost`` (the socket) gets the password too.
    """
    privileges = ", ".join(CDC_PRIVILEGES)
    passwordless_roots = ", ".join(
        f"'{server.root_user}'@'{host}'" for host in ("127.0.0.1", "::1", socket.gethostname())
    )
    statements = [
        "SET SESSION sql_log_bin = 0",
        f"DROP USER IF EXISTS {passwordless_roots}",
        f"CREATE DATABASE {server.database}",
        f"CREATE USER '{server.root_user}'@'%' IDENTIFIED BY '{server.root_password}'",
        f"GRANT ALL PRIVILEGES ON *.* TO '{server.root_user}'@'%' WITH GRANT OPTION",
        f"CREATE USER '{server.cdc_user}'@'%' IDENTIFIED BY '{server.cdc_password}'",
        f"GRANT {privileges} ON *.* TO '{server.cdc_user}'@'%'",
        f"ALTER USER '{server.root_user}'@'localhost' IDENTIFIED BY '{server.root_password}'",
    ]
    _client(
        "mariadb",
        ["--batch", "--execute", ";\n".join(statements)],
        server=server,
        workdir=workdir,
        password="",
    )


def _shutdown(*, server: MariaDbServer, workdir: Path) -> None:
    """Ask the server to shut down; failures fall through to stop_process's SIGTERM."""
    with contextlib.suppress(processes.ServiceStartError, subprocess.TimeoutExpired):
        _client(
            "mariadb-admin",
            ["--shutdown-timeout=30", "shutdown"],
            server=server,
            workdir=workdir,
            password=server.root_password,
        )


def _client(
    program: str, args: Sequence[str], *, server: MariaDbServer, workdir: Path, password: str
) -> None:
    """Run a MariaDB client program as root over the server's socket, logging to setup.log."""
    binary = processes.require_binary(program, hint="It comes with the mariadb-client package.")
    env = {**os.environ, "MYSQL_PWD": password}
    processes.run_checked(
        [binary, "--no-defaults", f"--socket={server.socket}", f"--user={server.root_user}", *args],
        service=SERVICE,
        log=workdir / "setup.log",
        env=env,
        timeout=60,
    )
