"""The operator's pure parts: children manifests (golden), condition math, status derivation."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from cdcflow.capture.connector_resource import CdcConnector
from cdcflow.operator import children, connector_status, restarts, signal_status, sink_status
from cdcflow.operator.conditions import Condition, merge
from cdcflow.operator.signal_resource import CdcSnapshotSignal

GOLDEN = Path(__file__).parent / "golden" / "connector_children.yaml"
UID = "6f1c2a54-0000-4000-8000-000000000001"


def _connector(**spec: Any) -> CdcConnector:
    base: dict[str, Any] = {
        "source": {
            "postgresql": {
                "host": "pg.db.svc",
                "database": "shop",
                "credentials": {"secretName": "pg-cdc"},
                "caSecretName": "pg-ca",
            }
        },
        "tables": {"include": ["public.orders"]},
        "signals": {"table": "public.debezium_signal"},
        "kafka": {
            "bootstrapServers": "kafka:9093",
            "authentication": {"secretName": "kafka-login"},
        },
        "runtime": {"resources": {"requests": {"cpu": "250m", "memory": "256Mi"}}},
    }
    base.update(spec)
    return CdcConnector.model_validate(
        {"metadata": {"name": "orders", "namespace": "shop"}, "spec": base}
    )


def test_children_match_the_golden_manifests() -> None:
    rendered = yaml.safe_dump_all(
        children.all_children(_connector(), uid=UID, secret_hash="abc123"), sort_keys=True
    )
    if os.environ.get("UPDATE_GOLDEN"):
        GOLDEN.write_text(rendered)
    assert rendered == GOLDEN.read_text(), "set UPDATE_GOLDEN=1 to accept intended changes"


def _pod(resource: CdcConnector, secret_hash: str = "h1") -> dict[str, Any]:
    stateful_set = children.stateful_set(resource, uid=UID, secret_hash=secret_hash)
    return dict(stateful_set["spec"]["template"])


def test_credentials_reach_the_pod_only_as_secret_references() -> None:
    env = _pod(_connector())["spec"]["containers"][0]["env"]
    by_name = {entry["name"]: entry for entry in env}
    assert by_name["CDCFLOW_DATABASE_PASSWORD"]["valueFrom"]["secretKeyRef"] == {
        "name": "pg-cdc",
        "key": "password",
    }
    assert by_name["CDCFLOW_KAFKA_USERNAME"]["valueFrom"]["secretKeyRef"]["name"] == "kafka-login"
    assert all("value" not in entry or entry["name"] == "CDCFLOW_CACHE" for entry in env)


def test_a_secret_or_config_change_rolls_the_pod_template() -> None:
    first = _pod(_connector(), "h1")["metadata"]["annotations"]
    rotated = _pod(_connector(), "h2")["metadata"]["annotations"]
    reconfigured = _pod(_connector(tables={"include": ["public.items"]}), "h1")["metadata"][
        "annotations"
    ]
    restarted = _pod(_connector(restartRequest=3), "h1")["metadata"]["annotations"]
    assert first["cdcflow.io/secret-hash"] != rotated["cdcflow.io/secret-hash"]
    assert first["cdcflow.io/config-hash"] != reconfigured["cdcflow.io/config-hash"]
    assert restarted["cdcflow.io/restart-request"] == "3"


def test_only_a_running_connector_has_a_capture_pod() -> None:
    assert children.replicas(_connector()) == 1
    assert children.replicas(_connector(state="paused")) == 0
    assert children.replicas(_connector(state="stopped")) == 0


def test_rendered_engine_config_points_at_mounted_files() -> None:
    config = yaml.safe_load(children.engine_config(_connector()))
    assert config["spec"]["offsets"]["path"] == "/var/lib/cdcflow/offsets.json"
    assert config["spec"]["config"]["database.sslrootcert"] == "/etc/cdcflow/database-ca/ca.crt"
    login = config["spec"]["source"]["postgresql"]["credentials"]
    assert login == {"secretName": "pg-cdc", "usernameKey": "username", "passwordKey": "password"}
    assert "database.password" not in config["spec"]["config"]


def test_referenced_secrets_cover_logins_and_cas() -> None:
    assert children.referenced_secrets(_connector()) == ["kafka-login", "pg-ca", "pg-cdc"]


def test_transition_time_moves_only_when_status_changes() -> None:
    first = merge(
        [], [Condition("Ready", "False", "RuntimeNotReady")], generation=1, timestamp="t1"
    )
    same = merge(first, [Condition("Ready", "False", "Starting")], generation=2, timestamp="t2")
    flipped = merge(
        same, [Condition("Ready", "True", "ConnectorRunning")], generation=2, timestamp="t3"
    )
    assert same[0]["lastTransitionTime"] == "t1" and same[0]["reason"] == "Starting"
    assert same[0]["observedGeneration"] == 2
    assert flipped[0]["lastTransitionTime"] == "t3"


def _reasons(status: connector_status.ConnectorStatus) -> dict[str, tuple[str, str]]:
    return {c.type: (c.status, c.reason) for c in status.conditions}


def test_missing_secret_is_not_ready_and_not_stalled() -> None:
    status = connector_status.compute(
        connector_status.Observed(resource=_connector(), missing_secrets=("pg-cdc",))
    )
    reasons = _reasons(status)
    assert reasons["Ready"] == ("False", "SecretNotFound")
    assert reasons["Stalled"] == ("False", "NoError")
    assert reasons["Reconciling"][0] == "True"
    assert "pg-cdc" in status.conditions[0].message


def test_invalid_spec_is_stalled_and_still_shows_its_source() -> None:
    spec = {"source": {"postgresql": {"host": "pg.db", "database": "shop"}}, "config": {"x": 1}}
    status = connector_status.compute(
        connector_status.Observed(
            resource=None,
            config_error="unknown property x",
            raw_source=connector_status.raw_source(spec),
        )
    )
    assert _reasons(status)["Stalled"] == ("True", "InvalidConfig")
    assert status.fields["source"] == "postgresql://pg.db:5432/shop"


def test_streaming_capture_is_ready_with_detail_columns() -> None:
    capture = {
        "phase": "streaming",
        "connected": True,
        "snapshot": {"completed": True, "tables": {}},
        "streaming": {"millisecondsBehindSource": 42, "totalEventsSeen": 7},
        "topics": ["orders.public.orders"],
        "offset": {"lsn": 1},
    }
    status = connector_status.compute(
        connector_status.Observed(resource=_connector(), capture=capture)
    )
    reasons = _reasons(status)
    assert reasons["Ready"] == ("True", "ConnectorRunning")
    assert reasons["SnapshotCompleted"] == ("True", "SnapshotCompleted")
    assert reasons["Streaming"] == ("True", "Streaming")
    assert status.fields["lag"] == "42ms"
    assert status.fields["snapshot"] == "Completed"
    assert status.fields["source"] == "postgresql://pg.db.svc:5432/shop"


def test_a_restarted_pod_that_streams_shows_its_snapshot_completed() -> None:
    # the pod took no snapshot of its own: an earlier one did
    capture = {"phase": "streaming", "connected": True, "snapshot": {"completed": False}}
    status = connector_status.compute(
        connector_status.Observed(resource=_connector(), capture=capture)
    )
    assert status.fields["snapshot"] == "Completed"
    assert _reasons(status)["SnapshotCompleted"] == ("True", "SnapshotCompleted")


def test_snapshot_progress_shows_as_a_percentage() -> None:
    capture = {
        "phase": "snapshot",
        "snapshot": {"running": True, "tables": {"a": {"rowsScanned": 50, "rowsEstimated": 200}}},
    }
    status = connector_status.compute(
        connector_status.Observed(resource=_connector(), capture=capture)
    )
    assert status.fields["snapshot"] == "25%"
    assert _reasons(status)["Ready"] == ("True", "SnapshotRunning")


def test_a_chunked_snapshot_beside_streaming_shows_its_percentage_and_is_not_completed() -> None:
    capture = {
        "phase": "streaming",
        "connected": True,
        "snapshot": {
            "running": True,
            "tables": {
                "a": {"rowsScanned": 100, "rowsEstimated": 100, "completed": True},
                "b": {"rowsScanned": 20, "rowsEstimated": 300},
            },
        },
    }
    status = connector_status.compute(
        connector_status.Observed(resource=_connector(), capture=capture)
    )
    assert status.fields["snapshot"] == "30%"
    reasons = _reasons(status)
    assert reasons["SnapshotCompleted"] == ("False", "SnapshotPending")
    assert reasons["Streaming"] == ("True", "Streaming")


def test_an_engine_that_lost_its_source_is_not_ready_and_says_why() -> None:
    capture = {
        "phase": "streaming",
        "connected": False,
        "lastError": 'password authentication failed for user "cdc"',
        "streaming": {},
    }
    status = connector_status.compute(
        connector_status.Observed(resource=_connector(), capture=capture)
    )
    ready = status.conditions[0]
    assert (ready.status, ready.reason) == ("False", "SourceUnavailable")
    assert 'password authentication failed for user "cdc"' in ready.message
    # the engine's phase is still "streaming" while it retries: nothing flows, so no Streaming
    streaming = next(c for c in status.conditions if c.type == "Streaming")
    assert (streaming.status, streaming.reason) == ("False", "NotStreaming")
    assert 'password authentication failed for user "cdc"' in streaming.message


def test_a_crashing_capture_container_reports_its_last_exit() -> None:
    pod = {
        "status": {
            "containerStatuses": [
                {
                    "name": "capture",
                    "restartCount": 2,
                    "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                    "lastState": {
                        "terminated": {
                            "exitCode": 2,
                            "reason": "Error",
                            "message": "cannot log in to PostgreSQL: password authentication",
                        }
                    },
                }
            ]
        }
    }
    termination = restarts.last_termination(pod)
    assert termination == (
        "Error (exit code 2): cannot log in to PostgreSQL: password authentication"
    )
    status = connector_status.compute(
        connector_status.Observed(
            resource=_connector(), capture_error="refused", restarts=2, termination=termination
        )
    )
    assert _reasons(status)["Ready"] == ("False", "ConnectorFailed")
    assert termination in status.conditions[0].message
    assert restarts.last_termination({"status": {"containerStatuses": [{"name": "capture"}]}}) == ""


def _capture_container(state: dict[str, Any], last: dict[str, Any]) -> dict[str, Any]:
    status = {"name": "capture", "restartCount": 1, "state": state, "lastState": last}
    return {"status": {"containerStatuses": [status]}}


def test_one_earlier_kill_is_not_a_crash_loop_but_is_still_told() -> None:
    oom = {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}
    running = _capture_container({"running": {"startedAt": "2026-01-01T00:00:00Z"}}, oom)
    backing_off = _capture_container({"waiting": {"reason": "CrashLoopBackOff"}}, oom)
    assert restarts.crash_loop(running) == ""
    assert restarts.last_termination(running) == "OOMKilled (exit code 137)"
    assert restarts.crash_loop(backing_off) == "OOMKilled (exit code 137)"
    assert restarts.crash_loop(None) == ""

    starting = connector_status.compute(
        connector_status.Observed(
            resource=_connector(),
            capture_error="refused",
            restarts=1,
            last_exit="OOMKilled (exit code 137)",
        )
    )
    assert _reasons(starting)["Ready"] == ("False", "RuntimeNotReady")
    assert _reasons(starting)["Stalled"] == ("False", "NoError")
    assert "OOMKilled (exit code 137)" in starting.conditions[0].message


def test_a_child_the_api_server_refused_is_stalled_with_its_message() -> None:
    message = "the API server refused StatefulSet orders-capture: exceeded quota: compute"
    status = connector_status.compute(
        connector_status.Observed(resource=_connector(), rejected=message)
    )
    assert _reasons(status)["Ready"] == ("False", "ChildRejected")
    assert _reasons(status)["Stalled"] == ("True", "ChildRejected")
    assert _reasons(status)["Streaming"] == ("False", "NotStreaming")
    assert status.conditions[0].message == message
    sink = sink_status.compute(sink_status.Observed(rejected=message))
    assert {c.type: (c.status, c.reason) for c in sink.conditions}["Stalled"] == (
        "True",
        "ChildRejected",
    )


def _signal(**spec: Any) -> CdcSnapshotSignal:
    return CdcSnapshotSignal.model_validate(
        {
            "metadata": {"name": "backfill", "namespace": "shop"},
            "spec": {
                "connectorRef": {"name": "orders"},
                "dataCollections": ["public.orders"],
                **spec,
            },
        }
    )


def test_signal_spec_becomes_a_debezium_signal() -> None:
    kind, data = _signal(
        additionalConditions=[{"dataCollection": "public.orders", "filter": "id > 5"}]
    ).spec.signal()
    assert kind == "execute-snapshot"
    assert yaml.safe_load(data) == {
        "type": "INCREMENTAL",
        "data-collections": ["public.orders"],
        "additional-conditions": [{"data-collection": "public.orders", "filter": "id > 5"}],
    }


def test_signal_for_an_uncaptured_table_is_rejected() -> None:
    assert signal_status.rejection_for_tables(_signal(), ["public.items"]) == (
        "TableNotCaptured",
        "not captured by the connector: public.orders",
    )


def test_completed_notification_makes_the_signal_succeed() -> None:
    capture = {
        "signals": {
            "uid-1": {
                "status": "COMPLETED",
                "events": [
                    {"type": "STARTED", "data_collections": "public.orders"},
                    {"type": "TABLE_SCAN_COMPLETED", "total_rows_scanned": "1000"},
                    {"type": "COMPLETED"},
                ],
            }
        }
    }
    result = signal_status.compute(
        signal_status.Observed(uid="uid-1", signal=_signal(), signaled=True, capture=capture)
    )
    conditions = {c.type: (c.status, c.reason) for c in result.conditions}
    assert conditions["Succeeded"] == ("True", "SnapshotCompleted")
    assert conditions["Ready"] == ("True", "SnapshotCompleted")
    assert result.fields["progress"] == {
        "tablesTotal": 1,
        "tablesCompleted": 1,
        "rowsScanned": 1000,
        "lastEvent": "COMPLETED",
    }


def test_rejected_signal_is_stalled_with_the_reason() -> None:
    capture = {
        "signals": {
            "uid-1": {
                "status": "REJECTED",
                "events": [{"type": "REJECTED", "reason": "bad filter"}],
            }
        }
    }
    result = signal_status.compute(
        signal_status.Observed(uid="uid-1", signal=_signal(), signaled=True, capture=capture)
    )
    conditions = {c.type: (c.status, c.reason, c.message) for c in result.conditions}
    assert conditions["Succeeded"] == ("False", "SignalRejected", "bad filter")
    assert conditions["Stalled"][0] == "True"


def _sink(**spec: Any) -> Any:
    from cdcflow.sparkapps.config import CdcSink

    return CdcSink.model_validate(
        {
            "metadata": {"name": "lake", "namespace": "shop"},
            "spec": {
                "connectorRef": {"name": "orders"},
                "target": {"format": "delta", "path": "s3a://lake/orders"},
                **spec,
            },
        }
    )


def test_sink_takes_topics_and_kafka_from_its_connector() -> None:
    from cdcflow.operator import sink_children

    resolved = sink_children.resolved(_sink(), _connector(topicPrefix="shop-eu"))
    assert resolved.spec.connector_ref is not None
    assert resolved.spec.connector_ref.prefix == "shop-eu"
    assert resolved.bootstrap_servers() == "kafka:9093"


def test_an_available_now_sink_runs_once_and_a_continuous_one_for_ever() -> None:
    from cdcflow.operator import sink_children

    continuous = sink_children.spark_application(_sink(), uid=UID)["spec"]
    once = sink_children.spark_application(_sink(trigger={"availableNow": True}), uid=UID)["spec"]
    assert continuous["restartPolicy"]["type"] == "Always"
    assert once["restartPolicy"]["type"] == "OnFailure"


def test_the_spark_application_needs_no_webhook_and_names_the_driver_account() -> None:
    from cdcflow.operator import sink_children

    spec = sink_children.spark_application(_sink(), uid=UID)["spec"]
    assert "suspend" not in spec, "v1beta2 SparkApplications have no suspend field"
    assert spec["arguments"] == ["/etc/cdcflow/sink.yaml"]
    assert spec["driver"]["serviceAccount"] == "spark-operator-spark"
    template = spec["driver"]["template"]["spec"]
    assert template["volumes"][0]["configMap"]["name"] == "lake-sink-config"
    container = template["containers"][0]
    assert container["name"] == "spark-kubernetes-driver"
    assert container["volumeMounts"][0]["mountPath"] == "/etc/cdcflow"
    # deleting the CdcSink deletes the driver (and the executors it owns) by garbage collection
    (owner,) = spec["driver"]["template"]["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"]) == ("CdcSink", "lake", UID)
    assert spec["driver"]["podName"] == "lake-sink-driver"


@pytest.mark.parametrize(
    ("state", "ready", "reason"),
    [
        ("RUNNING", "True", "ApplicationRunning"),
        ("COMPLETED", "True", "ApplicationCompleted"),
        ("FAILED", "False", "ApplicationFailed"),
        ("SUBMISSION_FAILED", "False", "SubmissionFailed"),
        ("PENDING_RERUN", "False", "PendingRerun"),
        ("", "False", "ApplicationSubmitting"),
    ],
)
def test_sink_ready_follows_the_spark_application_state(
    state: str, ready: str, reason: str
) -> None:
    from cdcflow.operator import sink_status

    application = {
        "metadata": {"name": "lake-sink"},
        "status": {"applicationState": {"state": state}},
    }
    result = sink_status.compute(sink_status.Observed(application=application))
    assert (result.conditions[0].status, result.conditions[0].reason) == (ready, reason)


def test_sink_without_the_spark_operator_is_stalled() -> None:
    from cdcflow.operator import sink_status

    result = sink_status.compute(sink_status.Observed(spark_operator_missing=True))
    reasons = {c.type: (c.status, c.reason) for c in result.conditions}
    assert reasons["Stalled"] == ("True", "SparkOperatorMissing")


def test_restarts_past_the_limit_halt_the_connector_until_a_restart_request() -> None:
    from cdcflow.operator import restarts

    limited = _connector(autoRestart={"maxRestarts": 3})
    within = restarts.evaluate(limited, restart_count=3, previous={})
    wrong = "Error (exit code 1): password authentication failed"
    beyond = restarts.evaluate(limited, restart_count=4, previous={}, last_exit=wrong)
    # halted: the pod is gone, and an operator restarted meanwhile reads only the status
    still = restarts.evaluate(limited, restart_count=0, previous=beyond.to_status())
    assert (still.count, still.last_exit) == (4, wrong)
    message = (
        connector_status.compute(
            connector_status.Observed(
                resource=limited, restarts=still.count, halted=True, termination=still.last_exit
            )
        )
        .conditions[0]
        .message
    )
    assert "restarted 4 times" in message and wrong in message
    retried = restarts.evaluate(
        _connector(autoRestart={"maxRestarts": 3}, restartRequest=1),
        restart_count=0,
        previous=beyond.to_status(),
    )
    assert (within.halted, beyond.halted, still.halted, retried.halted) == (
        False,
        True,
        True,
        False,
    )
    assert children.replicas(limited, halted=True) == 0


def test_disabled_auto_restart_tolerates_no_restart_and_unlimited_tolerates_any() -> None:
    from cdcflow.operator import restarts

    disabled = _connector(autoRestart={"enabled": False})
    assert restarts.evaluate(disabled, restart_count=1, previous={}).halted
    assert not restarts.evaluate(_connector(), restart_count=500, previous={}).halted


@pytest.mark.parametrize(
    "observed",
    [
        connector_status.Observed(resource=_connector(state="stopped")),
        connector_status.Observed(resource=_connector(), missing_secrets=("pg-cdc",)),
        connector_status.Observed(resource=_connector(), capture_error="connection refused"),
        connector_status.Observed(resource=None, config_error="bad"),
    ],
    ids=["stopped", "secret missing", "pod unreachable", "invalid"],
)
def test_a_connector_that_does_not_stream_says_streaming_false(
    observed: connector_status.Observed,
) -> None:
    assert _reasons(connector_status.compute(observed))["Streaming"] == ("False", "NotStreaming")


def test_terminal_spark_failures_are_stalled_and_a_suspended_sink_says_so() -> None:
    def conditions(**observed: Any) -> dict[str, str]:
        result = sink_status.compute(sink_status.Observed(**observed))
        return {c.type: c.status for c in result.conditions}

    for state in ("FAILED", "SUBMISSION_FAILED"):
        application = {"status": {"applicationState": {"state": state}}}
        assert conditions(application=application)["Stalled"] == "True", state
    failing = {"status": {"applicationState": {"state": "FAILING"}}}
    assert conditions(application=failing)["Stalled"] == "False"
    suspended = sink_status.compute(sink_status.Observed(suspended=True))
    assert suspended.fields["application"]["state"] == "SUSPENDED"


def test_ready_waits_for_the_stateful_set_to_roll_out_the_current_spec() -> None:
    def stateful_set(generation: int, **status: Any) -> dict[str, Any]:
        return {"metadata": {"generation": generation}, "spec": {"replicas": 1}, "status": status}

    done = {"observedGeneration": 2, "currentRevision": "r2", "updateRevision": "r2"}
    assert children.rollout_pending(stateful_set(2, updatedReplicas=1, **done)) == ""
    assert "generation 2" in children.rollout_pending(stateful_set(2, observedGeneration=1))
    rolling = {**done, "currentRevision": "r1", "updatedReplicas": 0}
    assert "rolling out revision r2" in children.rollout_pending(stateful_set(2, **rolling))
    status = connector_status.compute(
        connector_status.Observed(resource=_connector(), rollout="rolling out revision r2")
    )
    assert _reasons(status)["Ready"] == ("False", "RollingOut")


def test_a_signal_rejected_before_it_is_sent_has_succeeded_false() -> None:
    result = signal_status.compute(
        signal_status.Observed(
            uid="uid-1", signal=_signal(), rejection=("ConnectorNotFound", "no CdcConnector x")
        )
    )
    conditions = {c.type: (c.status, c.reason) for c in result.conditions}
    assert conditions["Succeeded"] == ("False", "ConnectorNotFound")
    assert conditions["Stalled"] == ("True", "ConnectorNotFound")


def test_an_engine_that_cannot_reach_kafka_is_not_ready_and_says_why() -> None:
    capture = {
        "phase": "streaming",
        "connected": True,
        "kafka": {"connected": False, "lastError": "Kafka unreachable: 1/1 brokers are down"},
    }
    status = connector_status.compute(
        connector_status.Observed(resource=_connector(), capture=capture)
    )
    ready = status.conditions[0]
    assert (ready.status, ready.reason) == ("False", "KafkaUnavailable")
    assert "1/1 brokers are down" in ready.message
    streaming = next(c for c in status.conditions if c.type == "Streaming")
    assert (streaming.status, streaming.reason) == ("False", "NotStreaming")
    assert "1/1 brokers are down" in streaming.message


def test_resource_quantities_are_checked_locally_too() -> None:
    from cdcflow.capture.connector_resource import Resources

    assert Resources.model_validate({"limits": {"memory": "512Mi", "cpu": "500m"}})
    with pytest.raises(ValueError, match="'512MB' is not a Kubernetes quantity"):
        Resources.model_validate({"limits": {"memory": "512MB"}})


def test_the_signal_id_is_stable_for_a_name_and_spec_and_new_for_a_change() -> None:
    base = signal_status.signal_id(_signal())
    assert base == signal_status.signal_id(_signal())
    assert base == signal_status.signal_id(_signal(ttlSecondsAfterFinished=60))
    assert base != signal_status.signal_id(_signal(dataCollections=["public.items"]))
    assert base.startswith("cdcsig-") and len(base) == 42  # Debezium's id VARCHAR(42)


def test_a_signal_that_ran_before_is_not_run_again_and_says_so() -> None:
    result = signal_status.compute(
        signal_status.Observed(
            uid="cdcsig-x", signal=_signal(), signaled=True, ran_before=True, capture={}
        )
    )
    conditions = {c.type: (c.status, c.reason) for c in result.conditions}
    assert conditions["Succeeded"] == ("True", "AlreadyRun")
    assert result.fields["ranBefore"] is True


def test_a_mariadb_source_renders_its_login_ca_and_source_column() -> None:
    source = {
        "mariadb": {
            "host": "maria.db.svc",
            "serverId": 5501,
            "credentials": {"secretName": "maria-cdc"},
            "caSecretName": "maria-ca",
        }
    }
    resource = _connector(source=source, tables={"include": ["inventory.orders"]},
                          signals={"table": "inventory.debezium_signal"})  # fmt: skip
    config = yaml.safe_load(children.engine_config(resource))
    status = connector_status.compute(connector_status.Observed(resource=resource))

    assert config["spec"]["source"]["mariadb"]["serverId"] == 5501
    assert config["spec"]["config"]["database.ssl.ca"] == "/etc/cdcflow/database-ca/ca.crt"
    assert "database.password" not in config["spec"]["config"]
    assert children.referenced_secrets(resource) == ["kafka-login", "maria-ca", "maria-cdc"]
    assert status.fields["source"] == "mariadb://maria.db.svc:3306"


def test_a_db2_source_renders_its_database_login_ca_and_source_column() -> None:
    source = {
        "db2": {
            "host": "db2.shop.svc",
            "database": "TESTDB",
            "credentials": {"secretName": "db2-cdc"},
            "caSecretName": "db2-ca",
        }
    }
    resource = _connector(source=source, tables={"include": ["DB2INST1.ORDERS"]})
    config = yaml.safe_load(children.engine_config(resource))
    status = connector_status.compute(connector_status.Observed(resource=resource))

    assert config["spec"]["source"]["db2"]["database"] == "TESTDB"
    assert config["spec"]["config"]["database.ssl.ca"] == "/etc/cdcflow/database-ca/ca.crt"
    assert "database.password" not in config["spec"]["config"]
    assert children.referenced_secrets(resource) == ["db2-ca", "db2-cdc", "kafka-login"]
    assert status.fields["source"] == "db2://db2.shop.svc:50000/TESTDB"


def test_a_signal_applied_with_its_connector_waits_for_the_tables_instead_of_failing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Applied together (kustomize, Argo CD), the signal can reach a capture pod that answers
    before it has listed its tables: that is not yet a TableNotCaptured verdict."""
    from cdcflow.operator import capture_client

    pods = [{"capturedTables": None}, {"capturedTables": ["public.orders"]}]
    monkeypatch.setattr(capture_client, "status", lambda base: pods[0])
    monkeypatch.setattr(capture_client, "send_signal", lambda base, **_: True)
    observed = signal_status.Observed(
        uid="cdcsig-x", signal=_signal(), connector=_connector(), connector_found=True
    )
    early = signal_status.deliver(observed, now="2026-01-01T00:00:00Z")
    assert (early.rejection, early.signaled) == (None, False)
    assert early.send_error == "waiting for the capture to list its tables"
    pending = {c.type: c for c in signal_status.compute(early).conditions}
    assert "Succeeded" not in pending
    assert (pending["Signaled"].reason, pending["Ready"].status) == ("SignalPending", "False")

    pods.pop(0)
    assert signal_status.deliver(observed, now="2026-01-01T00:00:05Z").signaled


def test_a_signal_run_again_after_its_rows_were_deleted_counts_only_new_notifications(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Deleting a signal's rows from the signal table lets the re-created resource run again;
    the capture pod may still hold the earlier run's notifications under the same id."""
    from cdcflow.operator import capture_client

    earlier = [{"type": "STARTED", "data_collections": "public.orders"}, {"type": "COMPLETED"}]
    entry = {"status": "COMPLETED", "events": earlier}
    pod = {"capturedTables": ["public.orders"], "signals": {"cdcsig-x": entry}}
    monkeypatch.setattr(capture_client, "status", lambda base: pod)
    monkeypatch.setattr(capture_client, "send_signal", lambda base, **_: True)  # inserted anew
    connector = _connector()
    sent = signal_status.deliver(
        signal_status.Observed(
            uid="cdcsig-x", signal=_signal(), connector=connector, connector_found=True
        ),
        now="2026-01-01T00:00:00Z",
    )
    assert (sent.signaled, sent.ran_before, sent.events_before) == (True, False, 2)
    first = signal_status.compute(sent)
    assert {c.type: c.reason for c in first.conditions}["Succeeded"] == "SnapshotInProgress"
    assert first.fields["notificationsBefore"] == 2

    previous = {"signalId": "cdcsig-x", **first.fields}
    again = [*earlier, {"type": "STARTED", "data_collections": "public.orders"}]
    later = signal_status.Observed(
        uid="cdcsig-x",
        signal=_signal(),
        signaled=True,
        previous=previous,
        capture={"signals": {"cdcsig-x": {"status": "STARTED", "events": again}}},
    )
    assert {c.type: c.reason for c in signal_status.compute(later).conditions}["Succeeded"] == (
        "SnapshotInProgress"
    )
    done = [
        *again,
        {"type": "TABLE_SCAN_COMPLETED", "total_rows_scanned": "5"},
        {"type": "COMPLETED"},
    ]
    finished = signal_status.compute(
        replace(later, capture={"signals": {"cdcsig-x": {"status": "COMPLETED", "events": done}}})
    )
    assert {c.type: c.reason for c in finished.conditions}["Succeeded"] == "SnapshotCompleted"
    assert finished.fields["progress"]["rowsScanned"] == 5
