"""kopf handlers: one idempotent, level-based reconcile per kind.

Each kind's reconcile runs on create, update, resume and a timer, reads what is (the
resource, referenced Secrets, the capture pod's ``/status``), applies what should be (the
children, by server-side apply) and writes the whole status: observedGeneration, the kstatus
condition triple and the domain conditions, with transition times that move only on change.
Kubernetes Events are posted when the Ready reason changes.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import kopf

from cdcflow.capture.config import ConfigError
from cdcflow.capture.resource import CdcConnector, parse_connector
from cdcflow.operator import capture_client, children, connector_status, signal_status
from cdcflow.operator.conditions import find, merge, now
from cdcflow.operator.kube import Kube, load_configuration
from cdcflow.operator.resources import CdcSnapshotSignal

GROUP, VERSION = "cdcflow.io", "v1alpha1"
FINALIZER = "cdcflow.io/cleanup"
POLL_INTERVAL_S = 10.0
CLEANUP_ATTEMPTS = 30
log = logging.getLogger(__name__)


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, memo: kopf.Memo, **_: Any) -> None:
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix="cdcflow.io")
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        prefix="cdcflow.io", key="last-handled-configuration"
    )
    settings.posting.level = logging.INFO
    memo["kube"] = Kube(load_configuration())


# -- CdcConnector --------------------------------------------------------------------------


@kopf.on.create(GROUP, VERSION, "cdcconnectors")
@kopf.on.update(GROUP, VERSION, "cdcconnectors")
@kopf.on.resume(GROUP, VERSION, "cdcconnectors")
@kopf.timer(GROUP, VERSION, "cdcconnectors", interval=POLL_INTERVAL_S, initial_delay=1.0)
def reconcile_connector(body: kopf.Body, patch: kopf.Patch, memo: kopf.Memo, **_: Any) -> None:
    kube: Kube = memo["kube"]
    resource, error = _parse_connector(body)
    observed = connector_status.Observed(resource=resource, config_error=error)
    if resource is not None:
        observed = _apply_connector(kube, resource, body, patch)
    result = connector_status.compute(observed)
    _write_status(body, patch, result.conditions, result.fields)


def _parse_connector(body: Mapping[str, Any]) -> tuple[CdcConnector | None, str]:
    """The resource as a model, or why it is invalid (a kopf Body or a plain API object)."""
    metadata = body.get("metadata") or {}
    document = {
        "metadata": {"name": metadata.get("name"), "namespace": metadata.get("namespace")},
        "spec": dict(body.get("spec") or {}),
    }
    try:
        return parse_connector(document, origin=f"CdcConnector {metadata.get('name')}"), ""
    except ConfigError as error:
        return None, str(error)


def _apply_connector(
    kube: Kube, resource: CdcConnector, body: kopf.Body, patch: kopf.Patch
) -> connector_status.Observed:
    namespace, uid = resource.metadata.namespace, str(body.metadata.uid)
    _manage_finalizer(resource, body, patch)
    secret_hash, missing = kube.secrets_hash(namespace, children.referenced_secrets(resource))
    if missing:
        return connector_status.Observed(resource=resource, missing_secrets=tuple(missing))
    for manifest in children.all_children(resource, uid=uid, secret_hash=secret_hash):
        kube.apply(manifest)
    patch.status["secretHash"] = secret_hash
    patch.status["lastRestartRequest"] = resource.spec.restart_request
    if resource.spec.state != "running":
        return connector_status.Observed(resource=resource)
    base = capture_client.endpoint(name=resource.metadata.name, namespace=namespace)
    try:
        return connector_status.Observed(resource=resource, capture=capture_client.status(base))
    except capture_client.CaptureUnreachableError as error:
        return connector_status.Observed(resource=resource, capture_error=str(error))


def _manage_finalizer(resource: CdcConnector, body: kopf.Body, patch: kopf.Patch) -> None:
    """Hold a finalizer only when deletion has work to do (``cleanupPolicy: Delete``)."""
    finalizers = list(body.metadata.get("finalizers") or [])
    wanted = resource.spec.cleanup_policy == "Delete"
    if wanted and FINALIZER not in finalizers:
        patch.metadata["finalizers"] = [*finalizers, FINALIZER]
    elif not wanted and FINALIZER in finalizers:
        patch.metadata["finalizers"] = [f for f in finalizers if f != FINALIZER]


@kopf.on.delete(GROUP, VERSION, "cdcconnectors", optional=True, retries=CLEANUP_ATTEMPTS, backoff=5)
def delete_connector(
    body: kopf.Body, memo: kopf.Memo, retry: int, logger: kopf.Logger, **_: Any
) -> None:
    if FINALIZER not in (body.metadata.get("finalizers") or []):
        return
    kube: Kube = memo["kube"]
    namespace, name = str(body.metadata.namespace), str(body.metadata.name)
    resource, error = _parse_connector(body)
    done, message = (
        (True, f"invalid spec, nothing to clean: {error}")
        if resource is None
        else (_cleanup(kube, resource, str(body.metadata.uid)))
    )
    if not done and retry + 1 < CLEANUP_ATTEMPTS:
        raise kopf.TemporaryError(message, delay=5)
    if done:
        kopf.info(body, reason="CleanupSucceeded", message=message)
    else:
        kopf.warn(
            body,
            reason="CleanupFailed",
            message=f"{message}; giving up after {CLEANUP_ATTEMPTS} attempts. Drop the slot and "
            "publication by hand if the database still exists.",
        )
    finalizers = [f for f in body.metadata.get("finalizers") or [] if f != FINALIZER]
    kube.patch_metadata(
        f"{GROUP}/{VERSION}", "CdcConnector", namespace, name, {"finalizers": finalizers}
    )
    logger.info("finalizer released")


def _cleanup(kube: Kube, resource: CdcConnector, uid: str) -> tuple[bool, str]:
    """Run the cleanup Job once; (finished successfully, what happened)."""
    job = children.cleanup_job(resource, uid=uid, secret_hash="")
    name, namespace = job["metadata"]["name"], resource.metadata.namespace
    current = kube.get("batch/v1", "Job", namespace, name)
    if current is None:
        kube.apply(job)
        return False, f"cleanup Job {name} started"
    status = current.get("status") or {}
    if status.get("succeeded"):
        return True, f"replication slot and publication dropped by Job {name}"
    if status.get("failed") and (status.get("failed") or 0) > job["spec"]["backoffLimit"]:
        return False, f"cleanup Job {name} failed"
    return False, f"waiting for cleanup Job {name}"


# -- CdcSnapshotSignal ---------------------------------------------------------------------


@kopf.on.create(GROUP, VERSION, "cdcsnapshotsignals")
@kopf.on.resume(GROUP, VERSION, "cdcsnapshotsignals")
@kopf.timer(GROUP, VERSION, "cdcsnapshotsignals", interval=2.0, initial_delay=1.0)
def reconcile_signal(body: kopf.Body, patch: kopf.Patch, memo: kopf.Memo, **_: Any) -> None:
    kube: Kube = memo["kube"]
    if signal_status.finished(body.get("status") or {}):
        _expire(kube, body)
        return
    observed = _observe_signal(kube, body)
    result = signal_status.compute(observed)
    for key, value in result.fields.items():
        patch.status[key] = value
    _write_status(body, patch, result.conditions, {})


def _observe_signal(kube: Kube, body: kopf.Body) -> signal_status.Observed:
    document = {
        "metadata": {"name": body.metadata.name, "namespace": body.metadata.namespace},
        "spec": dict(body.spec),
    }
    try:
        signal = CdcSnapshotSignal.model_validate(document)
    except ValueError as error:
        return signal_status.Observed(uid=str(body.metadata.uid), invalid=str(error))
    namespace = str(body.metadata.namespace)
    connector_body = kube.get(
        f"{GROUP}/{VERSION}", "CdcConnector", namespace, signal.spec.connector_ref.name
    )
    connector = None
    if connector_body is not None:
        connector, _ = _parse_connector(connector_body)
    observed = signal_status.Observed(
        uid=str(body.metadata.uid),
        signal=signal,
        connector=connector,
        connector_found=connector_body is not None,
        previous=dict(body.get("status") or {}),
    )
    return signal_status.deliver(observed, now=now())


def _expire(kube: Kube, body: kopf.Body) -> None:
    ttl = body.spec.get("ttlSecondsAfterFinished")
    completed = (body.get("status") or {}).get("completedTime")
    if ttl is not None and completed and signal_status.age_seconds(completed) >= int(ttl):
        namespace, name = str(body.metadata.namespace), str(body.metadata.name)
        kube.delete(f"{GROUP}/{VERSION}", "CdcSnapshotSignal", namespace, name)


# -- shared --------------------------------------------------------------------------------


def _write_status(
    body: kopf.Body, patch: kopf.Patch, desired: list[Any], fields: dict[str, Any]
) -> None:
    generation = int(body.metadata.get("generation") or 0)
    existing = list((body.get("status") or {}).get("conditions") or [])
    conditions = merge(existing, desired, generation=generation)
    for key, value in fields.items():
        patch.status[key] = value
    patch.status["conditions"] = conditions
    patch.status["observedGeneration"] = generation
    _announce(body, existing, conditions)


def _announce(body: kopf.Body, before: list[Any], after: list[dict[str, Any]]) -> None:
    """An Event whenever the Ready condition's reason changes."""
    old, new = find(before, "Ready"), find(after, "Ready")
    if new is None or (old is not None and old.get("reason") == new.get("reason")):
        return
    post = kopf.info if new.get("status") == "True" else kopf.warn
    post(body, reason=str(new["reason"]), message=str(new.get("message") or new["reason"]))
