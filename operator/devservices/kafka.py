"""A throwaway Apache Kafka 4.x broker in KRaft mode: one node that is broker and controller.

Kafka's jars come from Maven Central: on first use a small pom.xml is written under the
cdcflow cache (``kafka/<version>``) and Maven copies the broker's runtime dependencies, plus a
log4j2 binding so the broker logs, into ``libs/`` there. A marker file holding the pom's digest
is written only after a successful resolve, so later runs start from the cache without Maven
and a changed pom resolves again.

Each :func:`running_kafka` gets its own temporary folder with a ``server.properties`` listening
on two free loopback ports (PLAINTEXT for clients, CONTROLLER for the KRaft quorum), storage
formatted as a standalone controller quorum with a random cluster id, and the broker's log.
Readiness is the broker's own "Kafka Server started" log line plus its client port accepting
connections; no Kafka client library is needed here.
"""

from __future__ import annotations

import base64
import contextlib
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cdcflow.operator.devservices import maven, processes

SERVICE = "Kafka"
KAFKA_VERSION = "4.3.1"
SCALA_BINARY_VERSION = "2.13"
LOG4J_VERSION = "2.25.3"
SERVER_MAIN = "kafka.Kafka"
STORAGE_TOOL_MAIN = "kafka.tools.StorageTool"
READY_LINE = "Kafka Server started"
HOST = processes.LOOPBACK  # the controller listener; clients use processes.service_host()
JVM_OPTIONS = (
    "-Xms128m",
    "-Xmx512m",
    "-XX:+UseSerialGC",
    "-XX:+ExitOnOutOfMemoryError",
    "-Djava.awt.headless=true",
)
START_TIMEOUT = 120.0
JAVA_HINT = "Kafka needs Java 17 or newer, e.g. `apt-get install openjdk-17-jre-headless`."

POM_TEMPLATE = """\
<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>dev.cdcflow.devservices</groupId>
  <artifactId>kafka-broker-libs</artifactId>
  <version>{kafka}</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>kafka_{scala}</artifactId>
      <version>{kafka}</version>
    </dependency>
    <dependency>
      <groupId>org.apache.logging.log4j</groupId>
      <artifactId>log4j-core</artifactId>
      <version>{log4j}</version>
    </dependency>
    <dependency>
      <groupId>org.apache.logging.log4j</groupId>
      <artifactId>log4j-slf4j-impl</artifactId>
      <version>{log4j}</version>
    </dependency>
  </dependencies>
</project>
"""

LOG4J2_CONFIG = """\
status = warn
appender.out.type = Console
appender.out.name = STDOUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = STDOUT
logger.config.name = org.apache.kafka.common.config.AbstractConfig
logger.config.level = WARN
"""


@dataclass(frozen=True)
class KafkaBroker:
    """Where a running throwaway Kafka broker listens, and its files."""

    bootstrap_servers: str
    host: str
    port: int
    controller_port: int
    cluster_id: str
    version: str
    data_dir: Path
    log: Path
    #: the broker's processes, the running one last (a restart adds one)
    processes: list[subprocess.Popen[bytes]] = field(repr=False, compare=False)
    restart_command: Sequence[str] = field(repr=False, compare=False)

    @property
    def pid(self) -> int:
        return self.processes[-1].pid

    def restart(self, *, crash: bool = True) -> None:
        """Stop the broker (SIGKILL, as a crash, or SIGTERM) and start it again on the same
        port and data, waiting until it answers: what a broker pod's restart does."""
        current = self.processes[-1]
        if crash:
            current.kill()
            current.wait(30)
        else:
            processes.stop_process(current)
        started = processes.start_process(self.restart_command, log=self.log)
        self.processes.append(started)
        _wait_ready(started, host=self.host, port=self.port, log=self.log)


def pom_xml() -> str:
    """The pom whose runtime dependencies are the broker's classpath."""
    return POM_TEMPLATE.format(kafka=KAFKA_VERSION, scala=SCALA_BINARY_VERSION, log4j=LOG4J_VERSION)


def broker_libs() -> Path:
    """The cached folder of the broker's jars, resolved with Maven on first use."""
    home = processes.cache_dir("kafka", KAFKA_VERSION)
    return maven.cached_libs(home, pom_xml(), service=SERVICE)


def new_cluster_id() -> str:
    """A random KRaft cluster id: 16 random bytes, URL-safe base64 as Kafka's ``Uuid`` prints them.

    Kafka never hands out an id starting with ``-`` (it would read as a command-line flag).
    """
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def server_properties(*, port: int, controller_port: int, data_dir: Path, host: str = HOST) -> str:
    """A single-node KRaft configuration sized for tests: every replication factor is one.

    Clients connect to (and are told of) ``host``; the controller stays on loopback.
    """
    settings = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "listeners": f"PLAINTEXT://{host}:{port},CONTROLLER://{HOST}:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://{host}:{port}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "controller.quorum.bootstrap.servers": f"{HOST}:{controller_port}",
        "log.dirs": str(data_dir),
        "num.partitions": "1",
        "auto.create.topics.enable": "true",
        "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "transaction.state.log.num.partitions": "1",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
    }
    return "".join(f"{key}={value}\n" for key, value in settings.items())


@contextlib.contextmanager
def running_kafka() -> Iterator[KafkaBroker]:
    """Format, start and finally stop and remove a one-node KRaft Kafka in a temporary folder."""
    java = java_binary()
    libs = broker_libs()
    workdir = Path(tempfile.mkdtemp(prefix="cdcflow-kafka-"))
    try:
        port, controller_port = _two_free_ports()
        host = processes.service_host()
        data_dir, log = workdir / "data", workdir / "kafka.log"
        config = _write_config(workdir, port=port, controller_port=controller_port, host=host)
        cluster_id = _format_storage(java, libs, workdir, config=config, log=log)
        command = _java_command(java, libs, workdir, SERVER_MAIN, str(config))
        started = [processes.start_process(command, log=log)]
        try:
            _wait_ready(started[0], host=host, port=port, log=log)
            yield KafkaBroker(
                bootstrap_servers=f"{host}:{port}",
                host=host,
                port=port,
                controller_port=controller_port,
                cluster_id=cluster_id,
                version=KAFKA_VERSION,
                data_dir=data_dir,
                log=log,
                processes=started,
                restart_command=command,
            )
        finally:
            processes.stop_process(started[-1])
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _write_config(workdir: Path, *, port: int, controller_port: int, host: str) -> Path:
    """Write ``server.properties`` and the log4j2 configuration; return the former's path."""
    config = workdir / "server.properties"
    properties = server_properties(
        port=port, controller_port=controller_port, data_dir=workdir / "data", host=host
    )
    config.write_text(properties)
    (workdir / "log4j2.properties").write_text(LOG4J2_CONFIG)
    return config


def _format_storage(java: str, libs: Path, workdir: Path, *, config: Path, log: Path) -> str:
    """Format the log folder as a standalone KRaft quorum under a new cluster id; return it."""
    cluster_id = new_cluster_id()
    command = _java_command(
        java, libs, workdir, STORAGE_TOOL_MAIN, "format", "--standalone",
        "--cluster-id", cluster_id, "--config", str(config),
    )  # fmt: skip
    processes.run_checked(command, service=SERVICE, log=log)
    return cluster_id


def java_binary() -> str:
    """``$JAVA_HOME/bin/java`` when that exists, else ``java`` from PATH."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").exists():
        return str(Path(java_home) / "bin" / "java")
    return processes.require_binary("java", hint=JAVA_HINT)


def _java_command(java: str, libs: Path, workdir: Path, main: str, *args: str) -> list[str]:
    """A JVM invocation of ``main`` on the cached jars, logging through the folder's log4j2."""
    log4j = f"-Dlog4j2.configurationFile={workdir / 'log4j2.properties'}"
    return [java, *JVM_OPTIONS, log4j, "-cp", str(libs / "*"), main, *args]


def _two_free_ports() -> tuple[int, int]:
    """Two distinct free loopback ports: the client listener's and the controller's."""
    first = processes.free_port()
    second = processes.free_port()
    while second == first:
        second = processes.free_port()
    return first, second


def _wait_ready(process: subprocess.Popen[bytes], *, host: str, port: int, log: Path) -> None:
    """Wait for the broker's started line and its client port; raise with the log tail if not."""
    processes.wait_until(
        lambda: _log_mentions(log, READY_LINE) and processes.port_open(port, host),
        service=SERVICE,
        what=f"'{READY_LINE}' and port {port}",
        log=log,
        timeout=START_TIMEOUT,
        process=process,
    )


def _log_mentions(log: Path, text: str) -> bool:
    """Whether ``text`` occurs in the log file yet."""
    return log.exists() and text in log.read_text(errors="replace")
