"""A throwaway Kafka Connect worker (standalone mode) with the real Debezium connectors.

Tests use it as an oracle and as real consumers: the Debezium PostgreSQL and MariaDB connectors
write the events cdcflow's must match; Debezium's JDBC sink and Kafka Connect's ``FileStreamSink``
(behind Debezium's ``ExtractNewRecordState``) read topics the way users' pipelines do, through
Kafka Connect's own ``JsonConverter``.

Jars come from Maven Central through :mod:`maven`, cached under ``kafka-connect/<version>``:
the worker's classpath (connect-runtime, -json, -transforms and a log4j2 binding) and one folder
per plugin, loaded in isolation from ``plugin.path`` as a Connect deployment would. Versions
are pinned where Maven Central serves a complete set: Debezium 3.7.0 for the PostgreSQL
connector; the MariaDB connector at 3.5.0, with Debezium's Kafka and file schema histories
(3.6.x and 3.7.0 of it are not served); the JDBC sink at 3.6.0 (3.7.0's parent pom is not
served) with Hibernate 7.2.19 (the 7.2.6 its pom names has no
``org.hibernate:hibernate-agroal`` there; the artifact moved to ``org.hibernate.orm``).

Each plugin folder brings its own Debezium core, so the MariaDB connector's 3.5 and the
PostgreSQL connector's 3.7 run side by side. The MySQL connector would join the same way:
Maven Central serves ``debezium-connector-mysql`` 3.6.1 complete (3.7.0 is not served); add
its pom to :data:`PLUGINS` and a method to the test harness.

One worker serves a whole test session: connectors are added and removed through its REST API
(:class:`ConnectRest`), which standalone mode keeps.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from cdcflow.operator.devservices import kafka, maven, processes

SERVICE = "Kafka Connect"
CONNECT_VERSION = kafka.KAFKA_VERSION
DEBEZIUM_VERSION = "3.7.0.Final"
#: The newest Debezium whose MariaDB connector Maven Central serves complete (3.5.x: 3.5.0).
DEBEZIUM_MARIADB_VERSION = "3.5.0.Final"
JDBC_SINK_VERSION = "3.6.0.Final"
HIBERNATE_VERSION = "7.2.19.Final"
YASSON_VERSION = "3.0.4"
MAIN = "org.apache.kafka.connect.cli.ConnectStandalone"
START_TIMEOUT = 180.0
REQUEST_TIMEOUT = 60.0
JVM_OPTIONS = (
    "-Xms128m",
    "-Xmx768m",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-XX:+ExitOnOutOfMemoryError",
    "-Djava.awt.headless=true",
)

POSTGRES_CONNECTOR = "io.debezium.connector.postgresql.PostgresConnector"
MARIADB_CONNECTOR = "io.debezium.connector.mariadb.MariaDbConnector"
JDBC_SINK_CONNECTOR = "io.debezium.connector.jdbc.JdbcSinkConnector"
FILE_SINK_CONNECTOR = "org.apache.kafka.connect.file.FileStreamSinkConnector"
JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"

_POM = """\
<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>dev.cdcflow.devservices</groupId>
  <artifactId>{artifact}</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
{management}  <dependencies>
{dependencies}  </dependencies>
</project>
"""


def _dependency(coordinates: str, *, exclusions: tuple[str, ...] = ()) -> str:
    group, artifact, version = coordinates.split(":")
    excluded = "".join(
        "<exclusion><groupId>{}</groupId><artifactId>{}</artifactId></exclusion>".format(
            *name.split(":")
        )
        for name in exclusions
    )
    body = f"<groupId>{group}</groupId><artifactId>{artifact}</artifactId>"
    body += f"<version>{version}</version>"
    if excluded:
        body += f"<exclusions>{excluded}</exclusions>"
    return f"    <dependency>{body}</dependency>\n"


def _pom(artifact: str, *dependencies: str, managed: tuple[str, ...] = ()) -> str:
    management = ""
    if managed:
        entries = "".join(_dependency(coordinates) for coordinates in managed)
        management = f"  <dependencyManagement><dependencies>\n{entries}  </dependencies>"
        management += "</dependencyManagement>\n"
    return _POM.format(artifact=artifact, management=management, dependencies="".join(dependencies))


def runtime_pom() -> str:
    """The worker's own classpath: the Connect runtime, its JSON converter, stock transforms."""
    return _pom(
        "kafka-connect-runtime",
        _dependency(f"org.apache.kafka:connect-runtime:{CONNECT_VERSION}"),
        _dependency(f"org.apache.kafka:connect-json:{CONNECT_VERSION}"),
        _dependency(f"org.apache.kafka:connect-transforms:{CONNECT_VERSION}"),
        _dependency(f"org.apache.logging.log4j:log4j-core:{kafka.LOG4J_VERSION}"),
        _dependency(f"org.apache.logging.log4j:log4j-slf4j-impl:{kafka.LOG4J_VERSION}"),
    )


#: Each plugin's pom, by the folder name it gets on ``plugin.path``.
PLUGINS: Mapping[str, str] = {
    "debezium-connector-postgres": _pom(
        "debezium-connector-postgres",
        _dependency(f"io.debezium:debezium-connector-postgres:{DEBEZIUM_VERSION}"),
    ),
    # Its own folder, so its Debezium 3.5 core never meets the PostgreSQL connector's 3.7.
    "debezium-connector-mariadb": _pom(
        "debezium-connector-mariadb",
        _dependency(f"io.debezium:debezium-connector-mariadb:{DEBEZIUM_MARIADB_VERSION}"),
        # Schema history on a Kafka topic (KafkaSchemaHistory) or in a file.
        _dependency(f"io.debezium:debezium-storage-kafka:{DEBEZIUM_MARIADB_VERSION}"),
        _dependency(f"io.debezium:debezium-storage-file:{DEBEZIUM_MARIADB_VERSION}"),
    ),
    "debezium-connector-jdbc": _pom(
        "debezium-connector-jdbc",
        _dependency(
            f"io.debezium:debezium-connector-jdbc:{JDBC_SINK_VERSION}",
            exclusions=("org.hibernate:hibernate-agroal",),
        ),
        _dependency(f"org.hibernate.orm:hibernate-agroal:{HIBERNATE_VERSION}"),
        # For hibernate.type.json_format_mapper=jsonb: Hibernate's default Jackson mapper loads
        # every Jackson module it can see, the worker's Blackbird included, which belongs to
        # the worker's Jackson and is rejected ("BlackbirdModule not a subtype").
        _dependency(f"org.eclipse:yasson:{YASSON_VERSION}"),
        managed=(f"org.hibernate.orm:hibernate-core:{HIBERNATE_VERSION}",),
    ),
    "connect-file": _pom(
        "connect-file", _dependency(f"org.apache.kafka:connect-file:{CONNECT_VERSION}")
    ),
}

#: Kafka's broker logging, plus quiet classpath scanning.
LOG4J2_CONFIG = (
    kafka.LOG4J2_CONFIG + "logger.reflections.name = org.reflections\n"
    "logger.reflections.level = ERROR\n"
)


class ConnectError(RuntimeError):
    """The worker's REST API refused a request; the message carries its answer."""


@dataclass(frozen=True)
class ConnectRest:
    """The few REST calls tests need, on a worker at ``url``."""

    url: str

    def request(self, method: str, path: str, body: Any = None) -> Any:
        """Send one request; return the decoded JSON answer (None when empty)."""
        data = None if body is None else orjson.dumps(body)
        request = urllib.request.Request(
            self.url + path,
            data=data,
            method=method,
            headers={"Content-Type": "application/json", "Accept": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT) as answer:
                raw = answer.read()
        except urllib.error.HTTPError as error:
            detail = error.read().decode(errors="replace")
            raise ConnectError(f"{method} {path}: HTTP {error.code}: {detail}") from None
        return orjson.loads(raw) if raw else None

    def put_connector(self, name: str, config: Mapping[str, str]) -> None:
        """Create or reconfigure connector ``name``."""
        self.request("PUT", f"/connectors/{name}/config", {"name": name, **config})

    def status(self, name: str) -> dict[str, Any]:
        """The connector's and its tasks' states."""
        result: dict[str, Any] = self.request("GET", f"/connectors/{name}/status")
        return result

    def delete_connector(self, name: str) -> None:
        """Stop and remove connector ``name`` (its offsets stay in the worker's file)."""
        with contextlib.suppress(ConnectError):
            self.request("DELETE", f"/connectors/{name}")

    def wait_running(self, name: str, *, timeout: float = 60.0) -> None:
        """Wait until the connector and its tasks run; raise with the trace if one failed."""
        deadline = time.monotonic() + timeout
        state: dict[str, Any] = {}
        while time.monotonic() < deadline:
            with contextlib.suppress(ConnectError):
                state = self.status(name)
            failed_trace(state, name=name)
            tasks = state.get("tasks", [])
            if tasks and all(part["state"] == "RUNNING" for part in [state["connector"], *tasks]):
                return
            time.sleep(0.25)
        raise TimeoutError(f"connector {name} is not running after {timeout:.0f}s: {state}")

    def plugin_config(self, connector_class: str) -> list[dict[str, Any]]:
        """The ConfigDef of a connector plugin: one entry per property."""
        result: list[dict[str, Any]] = self.request(
            "GET", f"/connector-plugins/{connector_class}/config"
        )
        return result


def failed_trace(state: Mapping[str, Any], *, name: str) -> None:
    """Raise with the trace when the connector or a task of it has FAILED."""
    for part in [state.get("connector", {}), *state.get("tasks", [])]:
        if part.get("state") == "FAILED":
            raise ConnectError(f"connector {name} failed:\n{part.get('trace', '(no trace)')}")


@dataclass(frozen=True)
class ConnectWorker:
    """Where a running standalone Connect worker listens, and its files."""

    rest: ConnectRest
    workdir: Path
    log: Path
    pid: int


def runtime_libs() -> Path:
    """The worker classpath folder, resolved with Maven on first use."""
    home = processes.cache_dir("kafka-connect", CONNECT_VERSION, "runtime")
    return maven.cached_libs(home, runtime_pom(), service=SERVICE)


def plugin_homes() -> list[Path]:
    """One folder per plugin, each holding a ``libs/`` folder Connect loads in isolation."""
    homes = []
    for name, pom in PLUGINS.items():
        home = processes.cache_dir("kafka-connect", CONNECT_VERSION, "plugins", name)
        maven.cached_libs(home, pom, service=f"{SERVICE} plugin {name}")
        homes.append(home)
    return homes


def worker_properties(*, bootstrap_servers: str, port: int, workdir: Path) -> str:
    """Standalone worker settings: JSON with schemas by default, offsets in a file."""
    settings = {
        "bootstrap.servers": bootstrap_servers,
        "key.converter": JSON_CONVERTER,
        "value.converter": JSON_CONVERTER,
        "key.converter.schemas.enable": "true",
        "value.converter.schemas.enable": "true",
        "offset.storage.file.filename": str(workdir / "connect.offsets"),
        "offset.flush.interval.ms": "500",
        "plugin.path": ",".join(str(home) for home in plugin_homes()),
        "listeners": f"http://{kafka.HOST}:{port}",
        "rest.advertised.host.name": kafka.HOST,
        "connector.client.config.override.policy": "All",
        "task.shutdown.graceful.timeout.ms": "3000",
    }
    return "".join(f"{key}={value}\n" for key, value in settings.items())


@contextlib.contextmanager
def running_connect(bootstrap_servers: str) -> Iterator[ConnectWorker]:
    """Start a standalone worker against ``bootstrap_servers``; stop and remove it at the end."""
    java = kafka.java_binary()
    libs = runtime_libs()
    workdir = Path(tempfile.mkdtemp(prefix="cdcflow-connect-"))
    try:
        port = processes.free_port()
        config = workdir / "worker.properties"
        config.write_text(
            worker_properties(bootstrap_servers=bootstrap_servers, port=port, workdir=workdir)
        )
        (workdir / "log4j2.properties").write_text(LOG4J2_CONFIG)
        log = workdir / "connect.log"
        command = [
            java,
            *JVM_OPTIONS,
            f"-Dlog4j2.configurationFile={workdir / 'log4j2.properties'}",
            "-cp",
            str(libs / "*"),
            MAIN,
            str(config),
        ]
        process = processes.start_process(command, log=log)
        try:
            rest = ConnectRest(f"http://{kafka.HOST}:{port}")
            processes.wait_until(
                lambda: _answers(rest),
                service=SERVICE,
                what=f"its REST API on port {port}",
                log=log,
                timeout=START_TIMEOUT,
                process=process,
            )
            yield ConnectWorker(rest=rest, workdir=workdir, log=log, pid=process.pid)
        finally:
            processes.stop_process(process)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _answers(rest: ConnectRest) -> bool:
    """Whether the worker's REST API is up and has finished loading its plugins."""
    try:
        return bool(rest.request("GET", "/connector-plugins?connectorsOnly=true"))
    except (ConnectError, OSError):
        return False
