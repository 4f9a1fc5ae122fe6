"""The whole system on a real Kubernetes node, used as a platform engineer uses it.

``kubectl apply -k manifests/base`` runs the operator in its own pod, as its shipped
ServiceAccount and ClusterRole, from the image built from this checkout; CdcConnectors then run
real capture pods (kubelet, containerd, runc) against the session's PostgreSQL and Kafka, which
listen on the node's bridge address. Nothing here stands in for a pod.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml

from cdcflow.operator.devservices.kafka import KafkaBroker
from cdcflow.operator.devservices.postgres import PostgresServer
from tests.plugins.fix_kafka import read_topic_to_end
from tests.plugins.fix_kube import KubectlError, eventually, kubectl, wait_established
from tests.plugins.fix_postgres import query_rows, run_sql
from tests.services import image_layers, kube_node, node_images, spark_operator
from tests.services.kube_node import KubeNode
from tests.status_judges import verdicts

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

ROOT = Path(__file__).resolve().parents[2]
OPERATOR_NAMESPACE = "cdcflow-system"
OPERATOR_ACCOUNT = f"system:serviceaccount:{OPERATOR_NAMESPACE}:cdcflow-operator"
WAIT_S = 120.0


# -- helpers -------------------------------------------------------------------------------


def _eventually(check: Callable[[], Any], *, timeout: float = WAIT_S, what: str = "") -> Any:
    return eventually(check, timeout=timeout, what=what)


@dataclass
class Cluster:
    """kubectl on the node as the admin, within one namespace."""

    node: KubeNode
    namespace: str

    def run(
        self, *args: str, stdin: str | None = None, check: bool = True, timeout: float = WAIT_S
    ) -> str:
        result = kubectl(
            self.node.cluster, "-n", self.namespace, *args,
            stdin=stdin, check=check, timeout=timeout,
        )  # fmt: skip
        return result.stdout

    def apply(self, *documents: dict[str, Any]) -> None:
        self.run("apply", "-f", "-", stdin=yaml.safe_dump_all(documents))

    def get(self, *what: str) -> dict[str, Any]:
        return dict(json.loads(self.run("get", *what, "-o", "json")))

    def condition(self, what: str, kind: str) -> dict[str, Any]:
        conditions = self.get(what).get("status", {}).get("conditions", [])
        return next((c for c in conditions if c["type"] == kind), {})

    def wait_for_reason(
        self, what: str, kind: str, reason: str, timeout: float = WAIT_S
    ) -> dict[str, Any]:
        try:
            return dict(
                _eventually(
                    lambda: (c := self.condition(what, kind)).get("reason") == reason and c,
                    timeout=timeout,
                    what=f"{what} {kind} {reason}",
                )
            )
        except AssertionError as error:
            raise AssertionError(f"{error}\n{self.diagnostics()}") from None

    def wait(self, what: str, condition: str, timeout: int = int(WAIT_S)) -> None:
        try:
            self.run(
                "wait", f"--for={condition}", what, f"--timeout={timeout}s", timeout=timeout + 30
            )
        except KubectlError as error:
            raise AssertionError(f"{error}\n{self.diagnostics()}") from None

    def diagnostics(self) -> str:
        """What a user would look at: resources, events, and the pods' and operator's logs."""
        parts = [
            self.run("get", "cdcc,cdcsig,statefulsets,pods,jobs", "-o", "wide", check=False),
            self.run("get", "cdcc,cdcsig,cdcsinks,sparkapplications", "-o", "yaml", check=False),
            self.run("get", "events", "--sort-by=.lastTimestamp", check=False),
            kubectl(
                self.node.cluster, "-n", OPERATOR_NAMESPACE, "get", "pods,events", "-o", "wide",
                check=False,
            ).stdout,
        ]  # fmt: skip
        for pod in self.run("get", "pods", "-o", "name", check=False).split():
            parts.append(f"--- logs of {pod}\n{self.logs(pod)}")
        operator = kubectl(
            self.node.cluster, "-n", OPERATOR_NAMESPACE, "logs", "deployment/cdcflow-operator",
            "--tail=200", check=False,
        )  # fmt: skip
        parts.append(f"--- operator logs\n{operator.stdout}{operator.stderr}")
        controller = f"deployment/{spark_operator.CONTROLLER_NAME}"
        spark = kubectl(
            self.node.cluster, "-n", SPARK_OPERATOR_NAMESPACE, "logs", controller,
            "--tail=60", check=False,
        )  # fmt: skip
        parts.append(f"--- Spark operator logs\n{spark.stdout}{spark.stderr}")
        parts.append(f"--- kubelet and containerd problems\n{kube_node.problems(self.node)}")
        return "\n".join(parts)

    def pod(self, name: str) -> dict[str, Any]:
        return self.get("pod", name)

    def logs(self, name: str) -> str:
        return self.run("logs", name, "--all-containers", "--tail=50", check=False)


@dataclass
class Source:
    """A table of the session's PostgreSQL and the connector resource that captures it."""

    postgres: PostgresServer
    kafka: KafkaBroker
    name: str

    @property
    def table(self) -> str:
        return f"{self.name}_orders"

    def sql(self, *statements: str) -> None:
        run_sql(self.postgres, *statements)

    def query(self, statement: str) -> list[tuple[Any, ...]]:
        return query_rows(self.postgres, statement)

    @classmethod
    def made(cls, postgres: PostgresServer, kafka: KafkaBroker) -> Source:
        """A new source with a table of its own."""
        made = cls(postgres, kafka, name=f"n{uuid.uuid4().hex[:8]}")
        made.sql(f"CREATE TABLE {made.table} (id int PRIMARY KEY, note text)")
        return made

    def drop_slot(self, slot: str = "", *, publication: str = "") -> None:
        """Drop a slot and publication (the connector's by default), ending a walsender still
        holding the slot."""
        slot, publication = slot or self.name, publication or self.name
        self.sql(
            "SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots "
            f"WHERE slot_name = '{slot}' AND active",
        )
        _eventually(
            lambda: (
                self.query(
                    "SELECT count(*) FROM pg_replication_slots "
                    f"WHERE slot_name = '{slot}' AND active"
                )
                == [(0,)]
            ),
            what=f"slot {slot} released",
        )
        self.sql(
            f"SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
            f"WHERE slot_name = '{slot}'",
            f"DROP PUBLICATION IF EXISTS {publication}",
        )

    def secret(self, *, password: str | None = None) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": f"{self.name}-db"},
            "stringData": {
                "username": self.postgres.superuser,
                "password": password or self.postgres.superuser_password,
            },
        }

    def connector(self, **spec: Any) -> dict[str, Any]:
        config = {
            "slot.name": self.name,
            "publication.name": self.name,
            "publication.autocreate.mode": "filtered",
            "table.include.list": f"public\\.{self.name}_.*",
            "offset.flush.interval.ms": 200,
            **spec.pop("config", {}),
        }
        return {
            "apiVersion": "cdcflow.io/v1alpha1",
            "kind": "CdcConnector",
            "metadata": {"name": self.name},
            "spec": {
                "source": {
                    "postgresql": {
                        "host": self.postgres.host,
                        "port": self.postgres.port,
                        "database": self.postgres.database,
                        "credentials": {"secretName": f"{self.name}-db"},
                    }
                },
                "kafka": {"bootstrapServers": self.kafka.bootstrap_servers},
                "topicPrefix": self.name,
                "config": config,
                **spec,
            },
        }

    def ids_in_topic(self, *, ops: str = "rc") -> list[int]:
        """The ``id`` of every create/read event on the table's topic, in topic order."""
        topic = f"{self.name}.public.{self.table}"
        messages = read_topic_to_end(self.kafka.bootstrap_servers, topic, timeout=30)
        ids = []
        for message in messages:
            value = json.loads(message.value()) if message.value() else None
            payload = value.get("payload", value) if value else None
            if payload and payload.get("op") in ops:
                ids.append(int(payload["after"]["id"]))
        return ids

    def wait_for_ids(self, expected: set[int], *, timeout: float = WAIT_S) -> list[int]:
        def arrived() -> list[int] | None:
            try:
                ids = self.ids_in_topic()
            except (LookupError, RuntimeError, TimeoutError):
                return None
            return ids if expected <= set(ids) else None

        return list(_eventually(arrived, timeout=timeout, what=f"{len(expected)} ids in Kafka"))


# -- fixtures ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def operator_deployed(node: KubeNode) -> KubeNode:
    """The shipped base manifests applied as a user applies them; the operator pod Available."""
    kubectl(node.cluster, "apply", "-k", str(ROOT / "manifests" / "base"))
    kubectl(
        node.cluster,
        "-n",
        OPERATOR_NAMESPACE,
        "wait",
        "--for=condition=Available",
        "deployment/cdcflow-operator",
        "--timeout=120s",
        timeout=150,
    )
    return node


@pytest.fixture
def cluster(operator_deployed: KubeNode, pod_namespace: str) -> Cluster:
    return Cluster(operator_deployed, pod_namespace)


@pytest.fixture
def source(postgres_server: PostgresServer, kafka_broker: KafkaBroker) -> Iterator[Source]:
    made = Source.made(postgres_server, kafka_broker)
    yield made
    made.drop_slot()


# -- the operator --------------------------------------------------------------------------


def test_the_operator_runs_in_its_own_pod_with_the_shipped_rbac(
    operator_deployed: KubeNode,
) -> None:
    pods = json.loads(
        kubectl(
            operator_deployed.cluster, "-n", OPERATOR_NAMESPACE, "get", "pods", "-o", "json"
        ).stdout
    )["items"]
    operator_pods = [p for p in pods if p["metadata"]["name"].startswith("cdcflow-operator-")]
    assert len(operator_pods) == 1
    pod = operator_pods[0]
    assert pod["status"]["phase"] == "Running"
    assert pod["spec"]["serviceAccountName"] == "cdcflow-operator"
    assert pod["spec"]["containers"][0]["image"] == "ghcr.io/cdcflow/cdcflow:0.1.0"
    admin = kubectl(
        operator_deployed.cluster, "auth", "can-i", "create", "pods", f"--as={OPERATOR_ACCOUNT}",
        check=False,
    )  # fmt: skip
    assert admin.stdout.strip() == "no", "the operator must not run with more than it ships"
    # every reconcile reads the capture pod (restart count, termination message): a 403 there
    # leaves a connector with no StatefulSet and no status
    reads_pods = kubectl(
        operator_deployed.cluster, "auth", "can-i", "get", "pods", f"--as={OPERATOR_ACCOUNT}",
        check=False,
    )  # fmt: skip
    assert reads_pods.stdout.strip() == "yes", f"the shipped RBAC cannot read pods: {reads_pods}"


# -- a connector, for real -----------------------------------------------------------------


def _start(cluster: Cluster, source: Source, **spec: Any) -> None:
    cluster.apply(source.secret(), source.connector(**spec))
    # however far the operator got, a connector that is not running yet is in progress
    assert verdicts(cluster.get(f"cdcc/{source.name}"))[0] == "InProgress"
    cluster.wait(f"cdcc/{source.name}", "condition=Ready", timeout=180)


def test_a_connector_pod_snapshots_and_streams_and_kubectl_shows_it(
    cluster: Cluster, source: Source
) -> None:
    source.sql(f"INSERT INTO {source.table} SELECT g, 'before' FROM generate_series(1, 500) g")
    _start(cluster, source)
    source.sql(f"INSERT INTO {source.table} SELECT g, 'after' FROM generate_series(501, 600) g")

    ids = source.wait_for_ids(set(range(1, 601)))
    assert sorted(set(ids)) == list(range(1, 601))
    pod = cluster.pod(f"{source.name}-capture-0")
    assert pod["status"]["phase"] == "Running"
    # the kubelet's readiness probe runs every 5 s: the container turns ready on its own clock
    _eventually(
        lambda: all(
            c["ready"]
            for c in cluster.pod(f"{source.name}-capture-0")["status"]["containerStatuses"]
        ),
        timeout=60,
        what="the capture container to be ready",
    )
    table_view = _eventually(
        lambda: (view := cluster.run("get", "cdcconnectors")) and "Streaming" in view and view,
        what="the State column to say Streaming",
    )
    row = next(line for line in table_view.splitlines() if line.startswith(source.name))
    assert "True" in row and "postgresql://" in row
    assert verdicts(cluster.get(f"cdcc/{source.name}")) == ("Current", "Healthy")
    cluster.run("wait", "--for=condition=Streaming", f"cdcc/{source.name}", "--timeout=10s")

    cluster.apply(source.connector(state="stopped"))
    cluster.wait(f"cdcc/{source.name}", "condition=Streaming=False", timeout=60)
    stopped = cluster.get(f"cdcc/{source.name}")
    assert "lag" not in stopped["status"] and "capture" not in stopped["status"], "nothing stale"


def test_deleting_or_killing_the_capture_pod_loses_no_change(
    cluster: Cluster, source: Source
) -> None:
    _start(cluster, source)
    pod_name = f"{source.name}-capture-0"
    written = 0

    def write(count: int) -> None:
        nonlocal written
        source.sql(
            f"INSERT INTO {source.table} SELECT g, 'x' "
            f"FROM generate_series({written + 1}, {written + count}) g"
        )
        written += count

    write(200)
    source.wait_for_ids(set(range(1, 201)))
    first_uid = cluster.pod(pod_name)["metadata"]["uid"]
    cluster.run("delete", "pod", pod_name, "--wait=false")
    write(200)  # while the pod goes away and comes back
    _eventually(
        lambda: cluster.pod(pod_name)["metadata"]["uid"] != first_uid, what="a new capture pod"
    )
    write(200)
    source.wait_for_ids(set(range(1, written + 1)))

    killed = _kill_engine(cluster, pod_name)
    write(200)
    _eventually(
        lambda: _restart_count(cluster, pod_name) >= 1, what=f"kubelet restarting pid {killed}"
    )
    write(200)
    ids = source.wait_for_ids(set(range(1, written + 1)))
    assert sorted(set(ids)) == list(range(1, written + 1)), "a change was lost"


def _restart_count(cluster: Cluster, pod_name: str) -> int:
    statuses = cluster.pod(pod_name)["status"].get("containerStatuses") or []
    return sum(int(s.get("restartCount", 0)) for s in statuses)


def _kill_engine(cluster: Cluster, pod_name: str) -> int:
    """SIGKILL the capture process of the pod from the node, as the OOM killer would."""
    uid = cluster.pod(pod_name)["metadata"]["uid"]
    marker = f"pod{uid}"
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            in_pod = marker in (entry / "cgroup").read_text().replace("_", "-")
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if in_pod and b"capture" in command:
            os.kill(int(entry.name), signal.SIGKILL)
            return int(entry.name)
    raise AssertionError(f"no capture process found in the cgroups of {pod_name}")


def test_a_wrong_password_is_a_readable_condition_and_the_fixed_secret_rolls_the_pod(
    cluster: Cluster, source: Source
) -> None:
    wrong = "not-the-password-4711"
    cluster.apply(source.secret(password=wrong), source.connector())
    failed = cluster.wait_for_reason(f"cdcc/{source.name}", "Ready", "ConnectorFailed")
    assert "password authentication failed" in failed["message"], failed
    assert wrong not in json.dumps(cluster.get(f"cdcc/{source.name}"))
    assert verdicts(cluster.get(f"cdcc/{source.name}")) == ("Failed", "Degraded")
    pod_name = f"{source.name}-capture-0"
    broken_uid = cluster.pod(pod_name)["metadata"]["uid"]

    cluster.apply(source.secret())  # the rotated Secret
    cluster.wait(f"cdcc/{source.name}", "condition=Ready", timeout=180)
    assert cluster.pod(pod_name)["metadata"]["uid"] != broken_uid


def test_a_broken_source_stays_the_reason_while_the_capture_pod_is_not_ready(
    cluster: Cluster, source: Source
) -> None:
    _start(cluster, source)
    # the publication dropped under a running connector: the engine retries, never recovers
    source.sql(f"DROP PUBLICATION {source.name}", f"INSERT INTO {source.table} VALUES (1, 'x')")
    cluster.wait_for_reason(f"cdcc/{source.name}", "Ready", "SourceUnavailable")
    pod_name = f"{source.name}-capture-0"
    _eventually(
        lambda: not cluster.pod(pod_name)["status"]["containerStatuses"][0]["ready"],
        what="the capture pod NotReady (its /readyz fails while the source is down)",
    )
    deadline = time.monotonic() + 30  # DNS used to drop the NotReady pod within ~15 s
    while time.monotonic() < deadline:
        ready = cluster.condition(f"cdcc/{source.name}", "Ready")
        assert ready.get("reason") == "SourceUnavailable", cluster.diagnostics()
        assert "not reachable" not in ready["message"], ready  # read live, through the Service
        time.sleep(3)
    assert verdicts(cluster.get(f"cdcc/{source.name}"))[0] == "InProgress"


def test_auto_restart_bounds_the_kubelets_restarts(cluster: Cluster, source: Source) -> None:
    cluster.apply(source.secret(password="wrong"), source.connector(autoRestart={"maxRestarts": 1}))
    halted = cluster.wait_for_reason(f"cdcc/{source.name}", "Ready", "RestartLimitReached")
    assert "restarted" in halted["message"]
    body = cluster.get(f"cdcc/{source.name}")
    assert body["status"]["autoRestart"]["count"] >= 2
    assert cluster.get(f"statefulset/{source.name}-capture")["spec"]["replicas"] == 0
    _eventually(
        lambda: not cluster.run("get", "pods", "-o", "name").strip(), what="the pod to go away"
    )


def test_a_snapshot_signal_runs_through_the_service_to_succeeded(
    cluster: Cluster, source: Source
) -> None:
    signals = f"{source.name}_signal"
    source.sql(
        f"INSERT INTO {source.table} SELECT g, 'old' FROM generate_series(1, 2000) g",
        f"CREATE TABLE {signals} (id varchar(64) PRIMARY KEY, type varchar(32) NOT NULL, "
        "data varchar(2048))",
    )
    _start(
        cluster,
        source,
        signals={"table": f"public.{signals}"},
        snapshot={"mode": "no_data"},
    )
    signal_doc = {
        "apiVersion": "cdcflow.io/v1alpha1",
        "kind": "CdcSnapshotSignal",
        "metadata": {"name": "backfill"},
        "spec": {
            "connectorRef": {"name": source.name},
            "dataCollections": [f"public\\.{source.table}"],
        },
    }
    cluster.apply(signal_doc)
    cluster.wait("cdcsig/backfill", "condition=Succeeded", timeout=180)
    body = cluster.get("cdcsig/backfill")
    assert verdicts(body) == ("Current", "Healthy")
    assert body["status"]["progress"]["tablesCompleted"] == 1
    reads = source.ids_in_topic(ops="r")
    assert sorted(reads) == list(range(1, 2001))

    # GitOps: the finished signal is deleted (ttlSecondsAfterFinished) and re-created from Git
    cluster.run("delete", "cdcsig/backfill")
    cluster.apply(signal_doc)
    again = cluster.wait_for_reason("cdcsig/backfill", "Succeeded", "AlreadyRun")
    assert "not run again" in again["message"]
    time.sleep(3)
    assert len(source.ids_in_topic(ops="r")) == 2000, "the snapshot did not run a second time"


def test_deleting_with_cleanup_policy_delete_runs_the_job_and_drops_the_slot(
    cluster: Cluster, source: Source
) -> None:
    _start(cluster, source, cleanupPolicy="Delete")
    slots = f"SELECT count(*) FROM pg_replication_slots WHERE slot_name = '{source.name}'"
    assert source.query(slots) == [(1,)]
    cluster.run("delete", f"cdcc/{source.name}", "--timeout=180s", timeout=210)
    assert source.query(slots) == [(0,)], cluster.diagnostics()
    events = cluster.get("events", "--field-selector=reason=CleanupSucceeded")["items"]
    assert [e["involvedObject"]["name"] for e in events] == [source.name]


# -- CdcSink: a SparkApplication run by the Kubeflow Spark operator ------------------------

SPARK_OPERATOR_NAMESPACE = "spark-operator"
SPARK_WAIT_S = 420.0
SMALL_SPARK = {
    "driver": {"cores": 1, "memory": "512m"},
    "executor": {"instances": 1, "cores": 1, "memory": "512m"},
}


@pytest.fixture(scope="module")
def spark_operator_deployed(operator_deployed: KubeNode) -> KubeNode:
    """The Spark operator's controller (built from its Go module) running on the node."""
    build = spark_operator.build_spark_operator()
    crds = [arg for crd in build.crds for arg in ("-f", str(crd))]
    kubectl(operator_deployed.cluster, "apply", "--server-side", *crds)
    wait_established(operator_deployed.cluster, "crd/sparkapplications.sparkoperator.k8s.io")
    manifests = spark_operator.controller_manifests(
        image=node_images.SPARK_OPERATOR_IMAGE, spark_home=image_layers.SPARK_HOME
    )
    kubectl(operator_deployed.cluster, "apply", "-f", "-", stdin=yaml.safe_dump_all(manifests))
    kubectl(
        operator_deployed.cluster, "-n", SPARK_OPERATOR_NAMESPACE, "wait",
        "--for=condition=Available", "deployment", "--all", "--timeout=120s", timeout=150,
    )  # fmt: skip
    return operator_deployed


def _lake_volume(folder: Path) -> dict[str, str]:
    """Spark's own settings mounting ``folder`` at /lake in the driver and the executors."""
    conf = {}
    for role in ("driver", "executor"):
        prefix = f"spark.kubernetes.{role}.volumes.hostPath.lake"
        conf[f"{prefix}.options.path"] = str(folder)
        conf[f"{prefix}.mount.path"] = "/lake"
        # the node has two cores; Spark would request one per process otherwise
        conf[f"spark.kubernetes.{role}.request.cores"] = "250m"
    return conf


@pytest.mark.timeout(900)
def test_a_cdc_sink_runs_on_spark_equals_the_source_and_suspends_and_deletes_for_real(
    cluster: Cluster,
    source: Source,
    spark_operator_deployed: KubeNode,
    spark: SparkSession,
    tmp_path: Path,
) -> None:
    source.sql(f"INSERT INTO {source.table} SELECT g, 'v1' FROM generate_series(1, 300) g")
    _start(cluster, source)
    source.sql(
        f"UPDATE {source.table} SET note = 'v2' WHERE id % 3 = 0",
        f"DELETE FROM {source.table} WHERE id % 10 = 0",
        f"INSERT INTO {source.table} SELECT g, 'late' FROM generate_series(301, 320) g",
    )
    source.wait_for_ids(set(range(1, 321)))
    lake = tmp_path / "lake"
    lake.mkdir()
    lake.chmod(0o777)
    tmp_path.chmod(0o755)
    cluster.apply(
        *spark_operator.driver_rbac_manifests(
            cluster.namespace, service_account="spark-operator-spark"
        )
    )

    def sink(**spec: Any) -> dict[str, Any]:
        return {
            "apiVersion": "cdcflow.io/v1alpha1",
            "kind": "CdcSink",
            "metadata": {"name": "lake"},
            "spec": {
                "connectorRef": {"name": source.name},
                "target": {"format": "delta", "path": "/lake/tables"},
                "spark": {**SMALL_SPARK, "conf": _lake_volume(lake)},
                **spec,
            },
        }

    cluster.apply(sink())  # continuous: runs until suspended or deleted
    running = cluster.wait_for_reason(
        "cdcsink/lake", "Ready", "ApplicationRunning", timeout=SPARK_WAIT_S
    )
    assert running["status"] == "True"
    assert verdicts(cluster.get("cdcsink/lake")) == ("Current", "Healthy")
    expected = source.query(f"SELECT id, note FROM {source.table} ORDER BY id")
    table_path = str(lake / "tables" / f"public_{source.table}")

    def lake_rows() -> list[tuple[int, str]] | None:
        from pyspark.errors import AnalysisException

        try:
            table = spark.read.format("delta").load(table_path)
        except AnalysisException:  # not written yet (no _delta_log)
            return None
        return sorted((row["id"], row["note"]) for row in table.select("id", "note").collect())

    _eventually(lambda: lake_rows() == expected, timeout=SPARK_WAIT_S, what="Delta = source")

    cluster.apply(sink(state="suspended"))  # suspended means stopped: no Spark pod left
    cluster.wait_for_reason("cdcsink/lake", "Ready", "Suspended")
    _eventually(lambda: not _spark_pods(cluster, "lake-sink"), what="the Spark pods gone")
    cluster.apply(sink())  # resuming starts it again (the old driver is not in the way)
    cluster.wait_for_reason("cdcsink/lake", "Ready", "ApplicationRunning", timeout=SPARK_WAIT_S)
    cluster.run("delete", "cdcsink/lake", "--wait=true", "--timeout=60s")
    _eventually(lambda: not _spark_pods(cluster, "lake-sink"), what="no orphaned Spark pod")


def _spark_pods(cluster: Cluster, app: str) -> list[str]:
    """The Spark driver (named after SparkApplication ``app``) and executor pods (named after
    the Spark application, ``…-exec-N``) of the namespace."""
    names = [name.removeprefix("pod/") for name in cluster.run("get", "pods", "-o", "name").split()]
    return [name for name in names if name.startswith(app) or "-exec-" in name]


# -- the shipped example, as a user runs it ------------------------------------------------

EXAMPLE = ROOT / "examples" / "postgres-to-delta"


def _edited_example(folder: Path, source: Source) -> Path:
    """The example copied as a user edits it: the login's password (the session's server has
    its `cdc` role already), the database's host and port, Kafka's address."""
    shutil.copytree(EXAMPLE, folder)
    secret = folder / "secret.yaml"
    login = yaml.safe_load(secret.read_text())
    login["stringData"]["password"] = source.postgres.cdc_password
    secret.write_text(yaml.safe_dump(login))
    path = folder / "connector.yaml"
    connector = yaml.safe_load(path.read_text())
    postgres = connector["spec"]["source"]["postgresql"]
    postgres["host"], postgres["port"] = source.postgres.host, source.postgres.port
    connector["spec"]["kafka"]["bootstrapServers"] = source.kafka.bootstrap_servers
    path.write_text(yaml.safe_dump(connector))
    return folder


def _lake_volume_for(cluster: Cluster, folder: Path) -> None:
    """What a provisioner would make for the example's claim: a hostPath volume bound to it."""
    folder.mkdir(mode=0o777)
    folder.chmod(0o777)
    cluster.apply(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": f"{cluster.namespace}-lake"[:63]},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": "",
                "claimRef": {"namespace": cluster.namespace, "name": "inventory-lake"},
                "hostPath": {"path": str(folder), "type": "Directory"},
            },
        }
    )


@pytest.mark.timeout(900)
def test_the_shipped_example_runs_as_a_user_runs_it(
    cluster: Cluster,
    source: Source,
    spark_operator_deployed: KubeNode,
    spark: SparkSession,
    tmp_path: Path,
) -> None:
    """schema.sql, then ``kubectl apply -k`` of the example with its host and Kafka edited:
    the connector streams, the backfill signal succeeds, the Delta tables equal the source."""
    schema = (EXAMPLE / "schema.sql").read_text()
    source.sql(schema)
    try:
        source.sql(
            "INSERT INTO customers (name, email) VALUES ('Ada', 'ada@example.com'), "
            "('Grace', 'grace@example.com')",
            "INSERT INTO orders (customer_id, placed, amount) VALUES (1, '2025-12-30', 10), "
            "(2, '2026-01-02', 20.5), (1, '2026-02-01', 7.25)",
        )
        example = _edited_example(tmp_path / "example", source)
        lake = tmp_path / "lake"
        tmp_path.chmod(0o755)
        _lake_volume_for(cluster, lake)
        cluster.apply(
            *spark_operator.driver_rbac_manifests(
                cluster.namespace, service_account="spark-operator-spark"
            )
        )  # what the Spark operator's chart makes in each job namespace
        cluster.run("apply", "-k", str(example))
        cluster.wait("cdcc/inventory", "condition=Ready", timeout=180)
        source.sql("UPDATE orders SET amount = 11 WHERE id = 1", "DELETE FROM orders WHERE id = 3")
        cluster.wait("cdcsig/orders-backfill-2026", "condition=Succeeded", timeout=180)
        cluster.wait_for_reason(
            "cdcsink/inventory-lake", "Ready", "ApplicationRunning", timeout=SPARK_WAIT_S
        )

        def lake_equals(table: str, columns: str) -> bool:
            """The Delta table's rows, as text, equal the source's."""
            from pyspark.errors import AnalysisException

            try:
                rows = spark.read.format("delta").load(str(lake / "inventory" / f"public_{table}"))
            except AnalysisException:  # not written yet
                return False
            names = columns.split(",")
            got = rows.selectExpr(*(f"cast({n} as string)" for n in names)).collect()
            expected = source.query(f"SELECT {', '.join(f'{n}::text' for n in names)} FROM {table}")
            return sorted(tuple(r) for r in got) == sorted(expected)

        _eventually(
            lambda: (
                lake_equals("customers", "id,name,email")
                and lake_equals("orders", "id,customer_id,placed,amount")
            ),
            timeout=SPARK_WAIT_S,
            what="the example's Delta tables equal to the source",
        )
        assert not (lake / "inventory" / "public_debezium_signal").exists(), "signals stay out"
    finally:
        cluster.run("delete", "-k", str(tmp_path / "example"), "--wait=true", check=False)
        source.drop_slot("inventory", publication="inventory_publication")
        source.sql("DROP TABLE IF EXISTS orders, customers, debezium_signal")
        kubectl(cluster.node.cluster, "delete", "pv", f"{cluster.namespace}-lake"[:63], check=False)


# -- HA: the example overlay's two replicas with kopf peering -------------------------------


def _operator_pods(node: KubeNode) -> list[str]:
    pods = json.loads(
        kubectl(node.cluster, "-n", OPERATOR_NAMESPACE, "get", "pods", "-o", "json").stdout
    )["items"]
    return [
        p["metadata"]["name"]
        for p in pods
        if p["metadata"]["name"].startswith("cdcflow-operator-")
        and not p["metadata"].get("deletionTimestamp")
        and p["status"].get("phase") == "Running"
    ]


def _active(node: KubeNode, pod: str) -> bool:
    """Whether kopf's last word on peering in the replica's log is that it resumed: with a
    named (mandatory) peering each replica starts paused and only the highest resumes."""
    logs = kubectl(node.cluster, "-n", OPERATOR_NAMESPACE, "logs", pod, check=False).stdout
    resumed = logs.rfind("Resuming operations after the pause")
    return resumed >= 0 and resumed > logs.rfind("Pausing operations in favour of")


def test_two_peering_replicas_keep_exactly_one_active_writer(
    cluster: Cluster, postgres_server: PostgresServer, kafka_broker: KafkaBroker
) -> None:
    overlay = str(ROOT / "manifests" / "overlays" / "example")
    rendered = kubectl(cluster.node.cluster, "kustomize", overlay).stdout
    apply = ("apply", "--server-side", "--force-conflicts", "-f", "-")
    kubectl(cluster.node.cluster, *apply, stdin=rendered, check=False)  # CRDs first
    _eventually(
        lambda: kubectl(cluster.node.cluster, *apply, stdin=rendered, check=False).returncode == 0,
        what="the overlay to apply once the peering CRD is served",
    )
    pods = _eventually(
        lambda: len(found := _operator_pods(cluster.node)) == 2 and found,
        what="two operator replicas running",
    )
    active = _eventually(
        lambda: [pod for pod in pods if _active(cluster.node, pod)], what="an active replica"
    )
    time.sleep(5)  # a second replica resuming as well would show within its keep-alives
    active = [pod for pod in pods if _active(cluster.node, pod)]
    assert len(active) == 1, "exactly one replica is active, the other stays paused"
    paused = [pod for pod in pods if pod not in active]

    for round_ in ("first", "after failover"):
        source = Source.made(postgres_server, kafka_broker)
        _start(cluster, source)  # reconciled: the active replica works
        cluster.run("delete", f"cdcc/{source.name}", "--wait=true", "--timeout=60s")
        source.drop_slot()
        _assert_one_writer_announced(cluster, source.name)
        if round_ == "first":
            # kopf logs every handler run with the object's name: only the active replica ran
            assert source.name in _operator_logs(cluster.node, active[0]), "the log sees names"
            assert source.name not in _operator_logs(cluster.node, paused[0]), (
                "the paused replica handled the connector"
            )
            kubectl(cluster.node.cluster, "-n", OPERATOR_NAMESPACE, "delete", "pod", active[0])


def _operator_logs(node: KubeNode, pod: str) -> str:
    return kubectl(node.cluster, "-n", OPERATOR_NAMESPACE, "logs", pod, check=False).stdout


def _assert_one_writer_announced(cluster: Cluster, name: str) -> None:
    """Two writers would each announce every Ready transition of the connector."""
    events = cluster.get("events", f"--field-selector=involvedObject.name={name}")["items"]
    said = [
        ((e.get("source") or {}).get("component"), e["reason"], e["message"], e.get("count", 1))
        for e in events
    ]
    ours = [
        (reason, count) for component, reason, _, count in said if component == "cdcflow-operator"
    ]
    assert ours, said
    reasons = [reason for reason, _ in ours]
    assert len(reasons) == len(set(reasons)), f"a transition announced twice: {said}"
    assert all(count == 1 for _, count in ours), f"an Event repeated: {said}"
