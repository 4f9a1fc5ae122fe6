"""Pure builders for a CdcSink: the rendered job configuration and its SparkApplication.

The job the SparkApplication runs is exactly what ``cdcflow sink -f`` runs locally: the
``cdcflow.sparkapps.sink`` entry point reading the CdcSink YAML mounted from a ConfigMap. The
operator fills in what only it knows — the connector's topic prefix and Kafka bootstrap
servers — before rendering.
"""

from __future__ import annotations

import hashlib
from typing import Any

import yaml

from cdcflow.capture.connector_resource import CdcConnector
from cdcflow.operator.children import owner_reference
from cdcflow.sparkapps.config import CdcSink

JSON = dict[str, Any]
CONFIG_DIR = "/etc/cdcflow"
ENTRY_POINT = "local:///opt/cdcflow/sink_main.py"
DEFAULT_IMAGE = "ghcr.io/cdcflow/cdcflow-spark:0.1.0"
SPARK_VERSION = "4.0.1"
DRIVER_CONTAINER = "spark-kubernetes-driver"  # the name spark-submit gives it


def app_name(sink: CdcSink) -> str:
    return f"{sink.metadata.name}-sink"


def driver_pod_name(sink: CdcSink) -> str:
    """The driver pod's name (the executors are its children): what a suspend deletes."""
    return f"{app_name(sink)}-driver"


def resolved(sink: CdcSink, connector: CdcConnector | None) -> CdcSink:
    """The sink with the connector's topic prefix and bootstrap servers filled in."""
    document = sink.model_dump(by_alias=True, exclude_none=True, mode="json")
    spec = document["spec"]
    if connector is not None and sink.spec.connector_ref is not None:
        spec["connectorRef"]["topicPrefix"] = connector.properties().topic_prefix
        if connector.spec.kafka is not None and not (spec.get("kafka") or {}).get(
            "bootstrapServers"
        ):
            spec.setdefault("kafka", {})["bootstrapServers"] = (
                connector.spec.kafka.bootstrap_servers
            )
    return CdcSink.model_validate(document)


def job_config(sink: CdcSink) -> str:
    document = sink.model_dump(by_alias=True, exclude_none=True, mode="json")
    document["metadata"] = {"name": sink.metadata.name, "namespace": sink.metadata.namespace}
    return yaml.safe_dump(document, sort_keys=True)


def _meta(sink: CdcSink, name: str, uid: str) -> JSON:
    return {
        "name": name,
        "namespace": sink.metadata.namespace,
        "labels": {
            "app.kubernetes.io/name": "cdcflow-sink",
            "app.kubernetes.io/instance": sink.metadata.name,
            "app.kubernetes.io/managed-by": "cdcflow-operator",
        },
        "ownerReferences": [owner_reference(kind="CdcSink", name=sink.metadata.name, uid=uid)],
    }


def config_map(sink: CdcSink, *, uid: str) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _meta(sink, f"{app_name(sink)}-config", uid),
        "data": {"sink.yaml": job_config(sink)},
    }


def spark_application(sink: CdcSink, *, uid: str) -> JSON:
    """The ``sparkoperator.k8s.io/v1beta2`` SparkApplication running the sink job.

    The job's YAML is mounted from the ConfigMap through the driver's pod template, which
    spark-submit itself applies, so no mutating webhook of the Spark operator is needed.
    A suspended sink has no SparkApplication (v1beta2 has no ``suspend``): the operator deletes
    it and its driver pod (the Spark operator leaves that pod running), and the checkpoint keeps
    the position for resuming. The driver pod is owned by the CdcSink (through its pod
    template), so deleting the CdcSink stops the driver, and with it the executors it owns.
    """
    spark = sink.spec.spark
    config_hash = hashlib.sha256(job_config(sink).encode()).hexdigest()[:16]
    pod_annotations = {"cdcflow.io/config-hash": config_hash}
    return {
        "apiVersion": "sparkoperator.k8s.io/v1beta2",
        "kind": "SparkApplication",
        "metadata": _meta(sink, app_name(sink), uid),
        "spec": {
            "type": "Python",
            "pythonVersion": "3",
            "mode": "cluster",
            "image": spark.image or DEFAULT_IMAGE,
            "imagePullPolicy": "IfNotPresent",
            "mainApplicationFile": ENTRY_POINT,
            "arguments": [f"{CONFIG_DIR}/sink.yaml"],
            "sparkVersion": SPARK_VERSION,
            # a continuous sink runs for ever; an availableNow one is done when it completes
            "restartPolicy": {
                "type": "OnFailure" if sink.spec.trigger.available_now else "Always",
                "onFailureRetryInterval": 10,
                "onSubmissionFailureRetryInterval": 20,
            },
            "sparkConf": dict(spark.conf),
            "driver": {
                "cores": spark.driver.cores,
                "memory": spark.driver.memory,
                "serviceAccount": spark.service_account,
                "podName": driver_pod_name(sink),
                "annotations": pod_annotations,
                "template": _config_template(sink, DRIVER_CONTAINER, uid=uid),
            },
            "executor": {
                "instances": spark.executor.instances,
                "cores": spark.executor.cores,
                "memory": spark.executor.memory,
                "annotations": pod_annotations,
            },
        },
    }


def _config_template(sink: CdcSink, container: str, *, uid: str) -> JSON:
    """A pod template mounting the job's ConfigMap at ``CONFIG_DIR`` in ``container``, the pod
    owned by the CdcSink (spark-submit keeps the template's metadata)."""
    owner = owner_reference(kind="CdcSink", name=sink.metadata.name, uid=uid)
    # not blocking the owner's deletion: that would need spark-submit (the Spark operator's
    # account) to hold rights on CdcSinks
    owned = {**owner, "controller": False, "blockOwnerDeletion": False}
    return {
        "metadata": {"ownerReferences": [owned]},
        "spec": {
            "containers": [
                {
                    "name": container,
                    "volumeMounts": [{"name": "config", "mountPath": CONFIG_DIR, "readOnly": True}],
                }
            ],
            "volumes": [{"name": "config", "configMap": {"name": f"{app_name(sink)}-config"}}],
        },
    }
