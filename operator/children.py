"""Pure builders of the Kubernetes objects a CdcConnector owns.

Given the resource and a few observed facts (its UID, the hash of the Secrets it references),
these functions return plain manifests for server-side apply: the ConfigMap with the rendered
engine configuration, the single-replica StatefulSet running ``cdcflow capture`` (never two
readers on one slot), the headless Service exposing ``/metrics`` and ``/status``, and a
ServiceAccount with a Role that can read only that ConfigMap. No I/O here: golden tests pin
the output.
"""

from __future__ import annotations

import hashlib
from typing import Any

import yaml

from cdcflow.capture.connector_resource import CdcConnector

JSON = dict[str, Any]
PORT = 8080
DATA_DIR = "/var/lib/cdcflow"
CONFIG_DIR = "/etc/cdcflow"
DATABASE_CA_DIR = "/etc/cdcflow/database-ca"
KAFKA_CA_DIR = "/etc/cdcflow/kafka-ca"
OFFSETS_FILE = f"{DATA_DIR}/offsets.json"


def child_name(resource: CdcConnector) -> str:
    return f"{resource.metadata.name}-capture"


def labels(resource: CdcConnector) -> dict[str, str]:
    return {
        "app.kubernetes.io/name": "cdcflow-capture",
        "app.kubernetes.io/instance": resource.metadata.name,
        "app.kubernetes.io/managed-by": "cdcflow-operator",
    }


def owner_reference(*, kind: str, name: str, uid: str) -> JSON:
    return {
        "apiVersion": "cdcflow.io/v1alpha1",
        "kind": kind,
        "name": name,
        "uid": uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _meta(resource: CdcConnector, name: str, uid: str) -> JSON:
    return {
        "name": name,
        "namespace": resource.metadata.namespace,
        "labels": labels(resource),
        "ownerReferences": [
            owner_reference(kind="CdcConnector", name=resource.metadata.name, uid=uid)
        ],
    }


def engine_config(resource: CdcConnector) -> str:
    """The CdcConnector YAML the capture pod runs, with in-pod paths filled in."""
    document = resource.model_dump(by_alias=True, exclude_none=True, mode="json")
    document["metadata"] = {
        "name": resource.metadata.name,
        "namespace": resource.metadata.namespace,
    }
    spec = document["spec"]
    if resource.spec.offsets.store == "file" and not resource.spec.offsets.path:
        spec["offsets"]["path"] = OFFSETS_FILE
    source = resource.spec.source.selected
    if source.ca_secret_name:
        spec["config"][source.ca_property] = f"{DATABASE_CA_DIR}/ca.crt"
    return yaml.safe_dump(document, sort_keys=True)


def config_map(resource: CdcConnector, *, uid: str) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _meta(resource, f"{child_name(resource)}-config", uid),
        "data": {"connector.yaml": engine_config(resource)},
    }


def _env(resource: CdcConnector) -> list[JSON]:
    def from_secret(name: str, secret: str, key: str) -> JSON:
        return {"name": name, "valueFrom": {"secretKeyRef": {"name": secret, "key": key}}}

    env: list[JSON] = [{"name": "CDCFLOW_CACHE", "value": DATA_DIR}]
    credentials = resource.spec.source.selected.credentials
    if credentials.secret_name:
        env.append(
            from_secret("CDCFLOW_DATABASE_USER", credentials.secret_name, credentials.username_key)
        )
        env.append(
            from_secret(
                "CDCFLOW_DATABASE_PASSWORD", credentials.secret_name, credentials.password_key
            )
        )
        if credentials.ssl_password_key:
            env.append(
                from_secret(
                    "CDCFLOW_DATABASE_SSLPASSWORD",
                    credentials.secret_name,
                    credentials.ssl_password_key,
                )
            )
    kafka = resource.spec.kafka
    if kafka is not None and kafka.authentication is not None:
        auth = kafka.authentication
        env.append(from_secret("CDCFLOW_KAFKA_USERNAME", auth.secret_name, auth.username_key))
        env.append(from_secret("CDCFLOW_KAFKA_PASSWORD", auth.secret_name, auth.password_key))
    return env


def _volumes(resource: CdcConnector) -> tuple[list[JSON], list[JSON]]:
    volumes: list[JSON] = [
        {"name": "config", "configMap": {"name": f"{child_name(resource)}-config"}},
        {"name": "tmp", "emptyDir": {}},
    ]
    mounts: list[JSON] = [
        {"name": "config", "mountPath": CONFIG_DIR, "readOnly": True},
        {"name": "tmp", "mountPath": "/tmp"},
    ]
    if resource.spec.offsets.store != "file":
        volumes.append({"name": "data", "emptyDir": {}})
    mounts.append({"name": "data", "mountPath": DATA_DIR})
    for name, secret, path in _ca_secrets(resource):
        volumes.append({"name": name, "secret": {"secretName": secret}})
        mounts.append({"name": name, "mountPath": path, "readOnly": True})
    return volumes, mounts


def _ca_secrets(resource: CdcConnector) -> list[tuple[str, str, str]]:
    out = []
    source = resource.spec.source.selected
    if source.ca_secret_name:
        out.append(("database-ca", source.ca_secret_name, DATABASE_CA_DIR))
    kafka = resource.spec.kafka
    if kafka is not None and kafka.tls is not None and kafka.tls.ca_secret_name:
        out.append(("kafka-ca", kafka.tls.ca_secret_name, KAFKA_CA_DIR))
    return out


def referenced_secrets(resource: CdcConnector) -> list[str]:
    """Names of every Secret the capture pod reads (login, Kafka login, CAs)."""
    names = [secret for _, secret, _ in _ca_secrets(resource)]
    credentials = resource.spec.source.selected.credentials
    if credentials.secret_name:
        names.append(credentials.secret_name)
    kafka = resource.spec.kafka
    if kafka is not None and kafka.authentication is not None:
        names.append(kafka.authentication.secret_name)
    return sorted(set(names))


def config_hash(resource: CdcConnector) -> str:
    return hashlib.sha256(engine_config(resource).encode()).hexdigest()[:16]


def replicas(resource: CdcConnector, *, halted: bool = False) -> int:
    """One reader while running; paused, stopped or halted keep the slot and run no pod."""
    return 1 if resource.spec.state == "running" and not halted else 0


def rollout_pending(stateful_set: JSON | None) -> str:
    """Why the StatefulSet does not run its current spec yet, or "" once it does.

    Until then the pod answering ``/status`` may be the old one, so Ready must wait.
    """
    if not stateful_set:
        return "the StatefulSet does not exist yet"
    generation = int(stateful_set["metadata"].get("generation") or 0)
    status = stateful_set.get("status") or {}
    wanted = int((stateful_set.get("spec") or {}).get("replicas") or 0)
    if int(status.get("observedGeneration") or 0) < generation:
        return f"the StatefulSet has not seen generation {generation} yet"
    if status.get("updateRevision") != status.get("currentRevision") or (
        int(status.get("updatedReplicas") or 0) < wanted
    ):
        return f"rolling out revision {status.get('updateRevision')}"
    return ""


def stateful_set(
    resource: CdcConnector, *, uid: str, secret_hash: str, halted: bool = False
) -> JSON:
    runtime = resource.spec.runtime
    volumes, mounts = _volumes(resource)
    container: JSON = {
        "name": "capture",
        "image": runtime.image,
        "imagePullPolicy": runtime.image_pull_policy,
        "args": [
            "capture",
            "-f",
            f"{CONFIG_DIR}/connector.yaml",
            "--status-port",
            str(PORT),
        ],
        "env": _env(resource),
        "ports": [{"name": "http", "containerPort": PORT}],
        "readinessProbe": {"httpGet": {"path": "/readyz", "port": "http"}, "periodSeconds": 5},
        "livenessProbe": {
            "httpGet": {"path": "/healthz", "port": "http"},
            "periodSeconds": 10,
            "failureThreshold": 6,
        },
        "resources": runtime.resources.model_dump(mode="json"),
        "volumeMounts": mounts,
        # a fatal error's last lines become the termination message the operator reports
        "terminationMessagePolicy": "FallbackToLogsOnError",
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        },
    }
    spec: JSON = {
        "replicas": replicas(resource, halted=halted),
        "serviceName": child_name(resource),
        "selector": {"matchLabels": _selector(resource)},
        "template": {
            "metadata": {
                "labels": labels(resource),
                "annotations": {
                    "cdcflow.io/config-hash": config_hash(resource),
                    "cdcflow.io/secret-hash": secret_hash,
                    "cdcflow.io/restart-request": str(resource.spec.restart_request),
                },
            },
            "spec": {
                "serviceAccountName": child_name(resource),
                "automountServiceAccountToken": False,
                "terminationGracePeriodSeconds": 60,
                "securityContext": {
                    "runAsNonRoot": True,
                    "runAsUser": 1000,
                    "fsGroup": 1000,
                    "seccompProfile": {"type": "RuntimeDefault"},
                },
                "containers": [container],
                "volumes": volumes,
            },
        },
    }
    if resource.spec.offsets.store == "file":
        spec["volumeClaimTemplates"] = [
            {
                "metadata": {"name": "data"},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": "1Gi"}},
                },
            }
        ]
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": _meta(resource, child_name(resource), uid),
        "spec": spec,
    }


def _selector(resource: CdcConnector) -> dict[str, str]:
    return {
        "app.kubernetes.io/name": "cdcflow-capture",
        "app.kubernetes.io/instance": resource.metadata.name,
    }


def service(resource: CdcConnector, *, uid: str) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(resource, child_name(resource), uid),
        "spec": {
            "clusterIP": "None",
            # the operator reads /status through this name above all while the pod is
            # NotReady (the source or Kafka is down): its address must keep resolving then
            "publishNotReadyAddresses": True,
            "selector": _selector(resource),
            "ports": [{"name": "http", "port": PORT, "targetPort": "http"}],
        },
    }


def service_account(resource: CdcConnector, *, uid: str) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": _meta(resource, child_name(resource), uid),
        "automountServiceAccountToken": False,
    }


def role(resource: CdcConnector, *, uid: str) -> JSON:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": _meta(resource, child_name(resource), uid),
        "rules": [
            {
                "apiGroups": [""],
                "resources": ["configmaps"],
                "resourceNames": [f"{child_name(resource)}-config"],
                "verbs": ["get"],
            }
        ],
    }


def role_binding(resource: CdcConnector, *, uid: str) -> JSON:
    name = child_name(resource)
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": _meta(resource, name, uid),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
        "subjects": [
            {"kind": "ServiceAccount", "name": name, "namespace": resource.metadata.namespace}
        ],
    }


def all_children(
    resource: CdcConnector, *, uid: str, secret_hash: str, halted: bool = False
) -> list[JSON]:
    """Every object the connector owns, in apply order."""
    return [
        service_account(resource, uid=uid),
        role(resource, uid=uid),
        role_binding(resource, uid=uid),
        config_map(resource, uid=uid),
        service(resource, uid=uid),
        stateful_set(resource, uid=uid, secret_hash=secret_hash, halted=halted),
    ]


def offsets_reset_job(resource: CdcConnector, *, uid: str, request: int) -> JSON:
    """A Job forgetting the stored offsets (``offsets.resetRequest``), on the pod's volume."""
    pod = stateful_set(resource, uid=uid, secret_hash="")["spec"]["template"]["spec"]
    container = {
        **pod["containers"][0],
        "args": ["offsets", "reset", "-f", f"{CONFIG_DIR}/connector.yaml", "--yes"],
    }
    container.pop("readinessProbe", None)
    container.pop("livenessProbe", None)
    volumes = list(pod["volumes"])
    if resource.spec.offsets.store == "file":
        claim = f"data-{child_name(resource)}-0"  # the StatefulSet's volume of pod 0
        volumes.append({"name": "data", "persistentVolumeClaim": {"claimName": claim}})
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": _meta(resource, f"{child_name(resource)}-offsets-reset-{request}", uid),
        "spec": {
            "backoffLimit": 3,
            "ttlSecondsAfterFinished": 3600,
            "template": {
                "metadata": {"labels": labels(resource)},
                "spec": {
                    **pod,
                    "restartPolicy": "Never",
                    "containers": [container],
                    "volumes": volumes,
                },
            },
        },
    }


def cleanup_job(resource: CdcConnector, *, uid: str, secret_hash: str) -> JSON:
    """A Job dropping the slot and publication (``cleanupPolicy: Delete``)."""
    template = stateful_set(resource, uid=uid, secret_hash=secret_hash)["spec"]["template"]
    pod = template["spec"]
    container = {**pod["containers"][0], "args": ["cleanup", "-f", f"{CONFIG_DIR}/connector.yaml"]}
    container.pop("readinessProbe", None)
    container.pop("livenessProbe", None)
    container["volumeMounts"] = [m for m in container["volumeMounts"] if m["name"] != "data"]
    volumes = [v for v in pod["volumes"] if v["name"] != "data"]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            **_meta(resource, f"{child_name(resource)}-cleanup", uid),
            "ownerReferences": [],
        },
        "spec": {
            "backoffLimit": 3,
            "activeDeadlineSeconds": 300,
            "ttlSecondsAfterFinished": 3600,
            "template": {
                "metadata": {"labels": labels(resource)},
                "spec": {
                    **pod,
                    "restartPolicy": "Never",
                    "containers": [container],
                    "volumes": volumes,
                },
            },
        },
    }
