"""kopf handlers: one idempotent, level-based reconcile per kind.

Each kind's reconcile runs on create, update and resume, and from a poller every few seconds:
it reads what is (the resource, referenced Secrets, the capture pod's ``/status``), applies
what should be (the children, by server-side apply) and writes the whole status:
observedGeneration, the kstatus condition triple and the domain conditions, with transition
times that move only on change. Kubernetes Events are posted when the Ready reason changes.

The poller is one task for the whole operator rather than a kopf timer per object, because
kopf timers put a finalizer on every object; ours holds a finalizer only when deletion has
work to do (``cleanupPolicy: Delete``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import kopf

from cdcflow.capture.config import ConfigError
from cdcflow.capture.connector_resource import CdcConnector, parse_connector
from cdcflow.operator import (
    capture_client,
    children,
    connector_status,
    peering,
    restarts,
    signal_status,
    sink_children,
    sink_status,
)
from cdcflow.operator.conditions import Condition, find, merge, now, summary
from cdcflow.operator.kube import ChildRejectedError, Kube, apply_child, load_configuration
from cdcflow.operator.signal_resource import CdcSnapshotSignal
from cdcflow.sparkapps.config import SinkConfigError, parse_sink

GROUP, VERSION = "cdcflow.io", "v1alpha1"
FINALIZER = "cdcflow.io/cleanup"
POLL_INTERVAL_S = 10.0
CLEANUP_TIMEOUT_S = 300.0
log = logging.getLogger(__name__)


@kopf.on.login()
def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
    """The pod's service account in a cluster, else $KUBECONFIG as it is when we start."""
    return kopf.login_with_service_account(**kwargs) or kopf.login_with_kubeconfig(**kwargs)


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, memo: kopf.Memo, **_: Any) -> None:
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix="cdcflow.io")
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        prefix="cdcflow.io", key="last-handled-configuration"
    )
    settings.posting.level = logging.INFO
    memo["kube"] = Kube(load_configuration())
    memo["peering"] = (
        None
        if settings.peering.standalone
        else peering.Peering(
            name=settings.peering.name,
            clusterwide=settings.peering.clusterwide,
            priority=settings.peering.priority,
        )
    )
    memo["tracked"] = {"cdcconnectors": set(), "cdcsnapshotsignals": set(), "cdcsinks": set()}


@kopf.on.startup()
async def start_poller(memo: kopf.Memo, **_: Any) -> None:
    memo["poller"] = asyncio.create_task(_poll(memo))


@kopf.on.cleanup()
async def stop_poller(memo: kopf.Memo, **_: Any) -> None:
    poller = memo.get("poller")
    if poller is not None:
        poller.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await poller


@kopf.on.event(GROUP, VERSION, "cdcconnectors")
@kopf.on.event(GROUP, VERSION, "cdcsnapshotsignals")
@kopf.on.event(GROUP, VERSION, "cdcsinks")
def track(
    event: kopf.RawEvent, body: kopf.Body, resource: kopf.Resource, memo: kopf.Memo, **_: Any
) -> None:
    """Remember which objects exist, for the poller."""
    key = (str(body.metadata.namespace), str(body.metadata.name))
    tracked = memo["tracked"][resource.plural]
    if event.get("type") == "DELETED":
        tracked.discard(key)
        return
    tracked.add(key)
    if resource.plural == "cdcconnectors" and body.metadata.get("deletionTimestamp"):
        _deletion_step(memo["kube"], body)


async def _poll(memo: kopf.Memo) -> None:
    while True:
        await asyncio.sleep(POLL_INTERVAL_S)
        active: dict[str, bool] = {}  # per namespace (one answer when peering is cluster-wide)
        for plural, refresh in (
            ("cdcconnectors", _refresh_connector),
            ("cdcsnapshotsignals", _refresh_signal),
            ("cdcsinks", _refresh_sink),
        ):
            for namespace, name in list(memo["tracked"][plural]):
                try:
                    if not await _is_active(memo, namespace, active):
                        continue  # another replica is active; kopf paused this one's handlers
                    await asyncio.to_thread(refresh, memo["kube"], namespace, name)
                except Exception:  # one broken object must not stop the others' status
                    log.exception("refreshing %s %s/%s failed", plural, namespace, name)


async def _is_active(memo: kopf.Memo, namespace: str, known: dict[str, bool]) -> bool:
    """Whether this replica writes (always, without peering), asked once per round."""
    settings: peering.Peering | None = memo["peering"]
    if settings is None:
        return True
    key = "" if settings.clusterwide else namespace
    if key not in known:
        known[key] = await asyncio.to_thread(settings.active, memo["kube"], key)
    return known[key]


@dataclass
class Update:
    """What one reconcile wants written: status fields and, maybe, new finalizers."""

    status: dict[str, Any] = field(default_factory=dict)
    finalizers: list[str] | None = None


def _store(patch: kopf.Patch, update: Update) -> None:
    for key, value in update.status.items():
        patch.status[key] = value
    if update.finalizers is not None:
        patch.metadata["finalizers"] = update.finalizers


def _refresh(
    kube: Kube, kind: str, namespace: str, name: str, compute: Callable[[Kube, kopf.Body], Update]
) -> None:
    found = kube.get(f"{GROUP}/{VERSION}", kind, namespace, name)
    if found is None:
        return
    body = kopf.Body(found)  # type: ignore[arg-type]
    if body.metadata.get("deletionTimestamp"):
        if kind == "CdcConnector":
            _deletion_step(kube, body)
        return
    update = compute(kube, body)
    kube.patch_status(f"{GROUP}/{VERSION}", kind, namespace, name, update.status)
    if update.finalizers is not None:
        kube.patch_metadata(
            f"{GROUP}/{VERSION}", kind, namespace, name, {"finalizers": update.finalizers}
        )


def _refresh_connector(kube: Kube, namespace: str, name: str) -> None:
    _refresh(kube, "CdcConnector", namespace, name, _connector_update)


def _refresh_signal(kube: Kube, namespace: str, name: str) -> None:
    _refresh(kube, "CdcSnapshotSignal", namespace, name, _signal_update)


def _refresh_sink(kube: Kube, namespace: str, name: str) -> None:
    _refresh(kube, "CdcSink", namespace, name, _sink_update)


# -- CdcConnector --------------------------------------------------------------------------


@kopf.on.create(GROUP, VERSION, "cdcconnectors")
@kopf.on.update(GROUP, VERSION, "cdcconnectors")
@kopf.on.resume(GROUP, VERSION, "cdcconnectors")
def reconcile_connector(body: kopf.Body, patch: kopf.Patch, memo: kopf.Memo, **_: Any) -> None:
    _store(patch, _connector_update(memo["kube"], body))


def _connector_update(kube: Kube, body: kopf.Body) -> Update:
    update = Update()
    resource, error = _parse_connector(body)
    observed = connector_status.Observed(
        resource=resource,
        config_error=error,
        raw_source=connector_status.raw_source(dict(body.get("spec") or {})),
    )
    if resource is not None:
        update.finalizers = _finalizers(resource, body)
        try:
            observed = _apply_connector(kube, resource, body, update)
        except ChildRejectedError as rejected:
            observed = connector_status.Observed(resource=resource, rejected=str(rejected))
    result = connector_status.compute(observed)
    fields = _cleared(connector_status.DETAIL_FIELDS) | result.fields
    update.status |= _status(kube, body, result.conditions, fields)
    return update


def _cleared(names: tuple[str, ...]) -> dict[str, Any]:
    """Null for each detail field: a merge patch removes those the new status leaves out."""
    return dict.fromkeys(names)


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
    kube: Kube, resource: CdcConnector, body: kopf.Body, update: Update
) -> connector_status.Observed:
    namespace, uid = resource.metadata.namespace, str(body.metadata.uid)
    secret_hash, missing = kube.secrets_hash(namespace, children.referenced_secrets(resource))
    if missing:
        return connector_status.Observed(resource=resource, missing_secrets=tuple(missing))
    pod = kube.get("v1", "Pod", namespace, f"{children.child_name(resource)}-0")
    restart = restarts.evaluate(
        resource,
        restart_count=restarts.container_restarts(pod),
        previous=dict((body.get("status") or {}).get("autoRestart") or {}),
        last_exit=restarts.last_termination(pod),
    )
    update.status["autoRestart"] = restart.to_status()
    manifests = children.all_children(
        resource, uid=uid, secret_hash=secret_hash, halted=restart.halted
    )
    applied = {manifest["kind"]: apply_child(kube, manifest) for manifest in manifests}
    if restart.halted:
        return connector_status.Observed(
            resource=resource, restarts=restart.count, halted=True, termination=restart.last_exit
        )
    update.status["secretHash"] = secret_hash
    update.status["lastRestartRequest"] = resource.spec.restart_request
    _reset_offsets(kube, resource, body, update)
    if resource.spec.state != "running":
        return connector_status.Observed(resource=resource)
    # Stalled only while the kubelet backs the container off; an earlier exit of a container
    # that runs or starts again (one OOM kill) is only said in the message.
    crash_loop = restarts.crash_loop(pod)
    observed = connector_status.Observed(
        resource=resource,
        restarts=restart.count,
        termination=crash_loop,
        last_exit="" if crash_loop else restarts.last_termination(pod),
        rollout=children.rollout_pending(applied.get("StatefulSet")),
    )
    if observed.rollout:
        return observed
    base = capture_client.endpoint(name=resource.metadata.name, namespace=namespace)
    try:
        return replace(observed, capture=capture_client.status(base))
    except capture_client.CaptureUnreachableError as error:
        status = body.get("status") or {}
        return replace(
            observed,
            capture_error=str(error),
            previous_ready=_condition(find(status.get("conditions"), "Ready")),
            previous_state=str(status.get("state") or ""),
        )


def _condition(found: Mapping[str, Any] | None) -> Condition | None:
    """A condition read back from the stored status."""
    if found is None:
        return None
    ready = found.get("status") == "True"
    reason, message = str(found.get("reason") or ""), str(found.get("message") or "")
    return Condition("Ready", "True" if ready else "False", reason, message)


def _reset_offsets(kube: Kube, resource: CdcConnector, body: kopf.Body, update: Update) -> None:
    """Honour a raised ``offsets.resetRequest`` (the CRD allows it only while stopped)."""
    wanted = resource.spec.offsets.reset_request
    done = int((body.get("status") or {}).get("lastResetRequest") or 0)
    if wanted <= done or resource.spec.state != "stopped":
        return
    job = children.offsets_reset_job(resource, uid=str(body.metadata.uid), request=wanted)
    current = kube.get("batch/v1", "Job", resource.metadata.namespace, job["metadata"]["name"])
    if current is None:
        apply_child(kube, job)
    elif (current.get("status") or {}).get("succeeded"):
        update.status["lastResetRequest"] = wanted
        kube.post_event(
            dict(body),
            warning=False,
            reason="OffsetsReset",
            message=f"stored offsets forgotten (resetRequest {wanted}); the next start snapshots",
        )


def _finalizers(resource: CdcConnector, body: kopf.Body) -> list[str] | None:
    """Hold a finalizer only when deletion has work to do (``cleanupPolicy: Delete``)."""
    finalizers = list(body.metadata.get("finalizers") or [])
    wanted = resource.spec.cleanup_policy == "Delete"
    if wanted and FINALIZER not in finalizers:
        return [*finalizers, FINALIZER]
    if not wanted and FINALIZER in finalizers:
        return [f for f in finalizers if f != FINALIZER]
    return None


def _deletion_step(kube: Kube, body: kopf.Body) -> None:
    """Advance the cleanup of a connector being deleted; release the finalizer when done.

    Runs from the watch and from the poller until the cleanup Job succeeded, or until
    ``CLEANUP_TIMEOUT_S`` passed since deletion: deletion never hangs on a database that is
    gone, and the Warning event says what to clean by hand.
    """
    finalizers = list(body.metadata.get("finalizers") or [])
    if FINALIZER not in finalizers:
        return
    resource, error = _parse_connector(body)
    if resource is None:
        done, message = True, f"invalid spec, nothing to clean: {error}"
    else:
        try:
            done, message = _cleanup(kube, resource, str(body.metadata.uid))
        except ChildRejectedError as rejected:  # retried until the timeout below
            done, message = False, str(rejected)
    deleted_at = str(body.metadata.get("deletionTimestamp") or now())
    if not done and signal_status.age_seconds(deleted_at) < CLEANUP_TIMEOUT_S:
        # a connector on its way out is not Ready nor Streaming, whatever it was before
        conditions = summary(
            ready=False, reason="CleanupRunning", message=message, reconciling=True
        )
        conditions.append(
            Condition("Streaming", "False", "NotStreaming", "the connector is being deleted")
        )
        fields = _cleared(connector_status.DETAIL_FIELDS) | {
            "source": connector_status.raw_source(dict(body.get("spec") or {})),
            "state": "Deleting",
        }
        kube.patch_status(
            f"{GROUP}/{VERSION}", "CdcConnector", str(body.metadata.namespace),
            str(body.metadata.name), _status(kube, body, conditions, fields),
        )  # fmt: skip
        return
    if not done:
        objects = _server_objects(resource) if resource is not None else ""
        message = f"{message}; gave up after {CLEANUP_TIMEOUT_S:.0f}s." + (
            f" Drop the {objects} by hand if the database still exists." if objects else ""
        )
    kube.post_event(
        dict(body),
        warning=not done,
        reason="CleanupSucceeded" if done else "CleanupFailed",
        message=message,
    )
    namespace, name = str(body.metadata.namespace), str(body.metadata.name)
    remaining = [f for f in finalizers if f != FINALIZER]
    kube.patch_metadata(
        f"{GROUP}/{VERSION}", "CdcConnector", namespace, name, {"finalizers": remaining}
    )


def _cleanup(kube: Kube, resource: CdcConnector, uid: str) -> tuple[bool, str]:
    """Run the cleanup Job once; (finished successfully, what happened).

    The capture pod goes first: its walsender holds the slot, which cannot be dropped while
    it is active.
    """
    job = children.cleanup_job(resource, uid=uid, secret_hash="")
    name, namespace = job["metadata"]["name"], resource.metadata.namespace
    capture = children.child_name(resource)
    if kube.get("v1", "Pod", namespace, f"{capture}-0") is not None:
        kube.delete("apps/v1", "StatefulSet", namespace, capture)
        return False, f"stopping the capture pod {capture}-0 before dropping its slot"
    current = kube.get("batch/v1", "Job", namespace, name)
    if current is None:
        apply_child(kube, job)
        return False, f"cleanup Job {name} started"
    status = current.get("status") or {}
    objects = _server_objects(resource)
    if status.get("succeeded"):
        return True, f"{objects} dropped by Job {name}" if objects else f"Job {name} succeeded"
    if status.get("failed") and (status.get("failed") or 0) > job["spec"]["backoffLimit"]:
        causes = [restarts.last_termination(p) for p in kube.pods(namespace, f"job-name={name}")]
        cause = next((c for c in reversed(causes) if c), "see its pods' logs")
        return False, f"cleanup Job {name} failed: {cause}"
    return False, f"waiting for cleanup Job {name}"


def _server_objects(resource: CdcConnector) -> str:
    """What cleanup drops on the server, by name ("" when the connector leaves nothing)."""
    return " and ".join(resource.properties().server_objects())


# -- CdcSnapshotSignal ---------------------------------------------------------------------


@kopf.on.create(GROUP, VERSION, "cdcsnapshotsignals")
@kopf.on.resume(GROUP, VERSION, "cdcsnapshotsignals")
def reconcile_signal(body: kopf.Body, patch: kopf.Patch, memo: kopf.Memo, **_: Any) -> None:
    _store(patch, _signal_update(memo["kube"], body))


def _signal_update(kube: Kube, body: kopf.Body) -> Update:
    if signal_status.finished(body.get("status") or {}):
        _expire(kube, body)
        return Update()
    result = signal_status.compute(_observe_signal(kube, body))
    return Update(status=_status(kube, body, result.conditions, result.fields))


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
        uid=signal_status.signal_id(signal),
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


# -- CdcSink ---------------------------------------------------------------------------------

SPARK_API = "sparkoperator.k8s.io/v1beta2"


@kopf.on.create(GROUP, VERSION, "cdcsinks")
@kopf.on.update(GROUP, VERSION, "cdcsinks")
@kopf.on.resume(GROUP, VERSION, "cdcsinks")
def reconcile_sink(body: kopf.Body, patch: kopf.Patch, memo: kopf.Memo, **_: Any) -> None:
    _store(patch, _sink_update(memo["kube"], body))


def _sink_update(kube: Kube, body: kopf.Body) -> Update:
    try:
        observed = _observe_sink(kube, body)
    except ChildRejectedError as rejected:
        observed = sink_status.Observed(rejected=str(rejected))
    result = sink_status.compute(observed)
    fields = _cleared(sink_status.DETAIL_FIELDS) | result.fields
    return Update(status=_status(kube, body, result.conditions, fields))


def _observe_sink(kube: Kube, body: kopf.Body) -> sink_status.Observed:
    namespace = str(body.metadata.namespace)
    document = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "CdcSink",
        "metadata": {"name": body.metadata.name, "namespace": namespace},
        "spec": dict(body.spec),
    }
    try:
        sink = parse_sink(document, origin=f"CdcSink {body.metadata.name}")
    except SinkConfigError as error:
        return sink_status.Observed(invalid=str(error))
    connector = None
    if sink.spec.connector_ref is not None:
        found = kube.get(
            f"{GROUP}/{VERSION}", "CdcConnector", namespace, sink.spec.connector_ref.name
        )
        if found is None:
            return sink_status.Observed(connector_missing=sink.spec.connector_ref.name)
        connector, problem = _parse_connector(found)
        if connector is None:
            return sink_status.Observed(invalid=f"referenced connector is invalid: {problem}")
    if not kube.has_kind(SPARK_API, "SparkApplication"):
        return sink_status.Observed(spark_operator_missing=True)
    sink = sink_children.resolved(sink, connector)
    uid = str(body.metadata.uid)
    apply_child(kube, sink_children.config_map(sink, uid=uid))
    if sink.spec.state == "suspended":
        kube.delete(SPARK_API, "SparkApplication", namespace, sink_children.app_name(sink))
        # the Spark operator leaves the driver running (and a resume then fails on the pod
        # that still exists); the executors are the driver's children and go with it
        kube.delete("v1", "Pod", namespace, sink_children.driver_pod_name(sink))
        return sink_status.Observed(suspended=True)
    application = apply_child(kube, sink_children.spark_application(sink, uid=uid))
    return sink_status.Observed(application=application)


# -- shared --------------------------------------------------------------------------------


def _status(
    kube: Kube, body: kopf.Body, desired: list[Any], fields: dict[str, Any]
) -> dict[str, Any]:
    """The status to write: fields, merged conditions and the generation they describe."""
    generation = int(body.metadata.get("generation") or 0)
    existing = list((body.get("status") or {}).get("conditions") or [])
    conditions = merge(existing, desired, generation=generation)
    _announce(kube, body, existing, conditions)
    return {**fields, "conditions": conditions, "observedGeneration": generation}


def _announce(kube: Kube, body: kopf.Body, before: list[Any], after: list[dict[str, Any]]) -> None:
    """An Event whenever the Ready condition's reason changes: a Warning when not Ready, but
    Normal while merely progressing (Reconciling, e.g. a pod starting)."""
    old, new = find(before, "Ready"), find(after, "Ready")
    if new is None or (old is not None and old.get("reason") == new.get("reason")):
        return
    progressing = (find(after, "Reconciling") or {}).get("status") == "True"
    try:
        kube.post_event(
            dict(body),
            warning=new.get("status") != "True" and not progressing,
            reason=str(new["reason"]),
            message=str(new.get("message") or new["reason"]),
        )
    except Exception:  # an Event is best effort; the status carries the same facts
        log.warning("could not post an event for %s", body.metadata.name, exc_info=True)
