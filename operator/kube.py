"""The operator's few Kubernetes calls: server-side apply, reads, deletes, events.

Wraps the kubernetes client's dynamic client so the rest of the operator deals in plain
manifests. Apply is server-side with one field manager and forced conflicts: the operator
owns the fields it sets on its children and nothing else.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from datetime import UTC, datetime
from typing import Any

from kubernetes import client, config
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import NotFoundError, ResourceNotFoundError

FIELD_MANAGER = "cdcflow-operator"
MISSING_RECHECK_S = 10.0
JSON = dict[str, Any]
#: Client errors that pass: a conflict, a timeout, throttling. The reconcile is retried.
TRANSIENT_CLIENT_ERRORS = {408, 409, 429}


class ChildRejectedError(Exception):
    """The API server refused a child for a reason the CRD cannot check (a ResourceQuota, an
    admission webhook, a limit of another kind's schema); the message is the API server's."""


def rejection(error: client.ApiException) -> str | None:
    """The API server's own message when ``error`` refuses the request for good (a 4xx other
    than a conflict, a timeout or throttling), else None.

    That is the ``message`` of the Status body the API server sent (e.g. ``exceeded quota:
    ...`` or ``admission webhook ... denied the request: ...``), not the HTTP dump with headers
    and body that ``str(error)`` gives.
    """
    status = int(error.status or 0)
    if not 400 <= status < 500 or status in TRANSIENT_CLIENT_ERRORS:
        return None
    body = error.body.decode(errors="replace") if isinstance(error.body, bytes) else error.body
    try:
        message = json.loads(body or "").get("message")
    except (ValueError, AttributeError):
        message = None
    return str(message or (body or "").strip()[:1024] or f"{status} {error.reason or ''}".strip())


def load_configuration() -> client.ApiClient:
    """In-cluster credentials when running in a pod, else the kubeconfig ($KUBECONFIG now)."""
    configuration = client.Configuration()
    try:
        config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
    except config.ConfigException:
        path = os.environ.get("KUBECONFIG", "")
        config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=path.split(os.pathsep)[0] if path else None,
            client_configuration=configuration,
        )
    return client.ApiClient(configuration)


class Kube:
    """Thin, typed access to the API server."""

    def __init__(self, api: client.ApiClient) -> None:
        self._dynamic = DynamicClient(api)  # type: ignore[no-untyped-call]
        self._core = client.CoreV1Api(api)
        # The dynamic client's discovery cache is not thread-safe (kopf's handler threads and
        # the poller share it: ``KeyError: 'resources'`` under bursts), and a kind that is
        # missing (no Spark operator yet) is looked up again at most every MISSING_RECHECK_S.
        self._discovery = threading.Lock()
        self._missing: dict[tuple[str, str], float] = {}

    def _resource(self, api_version: str, kind: str) -> Any:
        """The API resource of ``kind``. A miss re-reads discovery (CRDs come and go; the
        client re-reads it itself on a miss), but not more often than every
        :data:`MISSING_RECHECK_S` for the same kind: inside that window a missing kind is
        answered from memory, without asking the client."""
        key = (api_version, kind)
        with self._discovery:
            checked = self._missing.get(key)
            if checked is not None and time.monotonic() - checked < MISSING_RECHECK_S:
                raise ResourceNotFoundError(f"No matches found for {key} (checked recently)")
            try:
                found = self._dynamic.resources.get(api_version=api_version, kind=kind)
            except ResourceNotFoundError:
                self._missing[key] = time.monotonic()
                raise
            self._missing.pop(key, None)
            return found

    def apply(self, manifest: JSON) -> JSON:
        """Server-side apply ``manifest``; returns the object as stored."""
        resource = self._resource(manifest["apiVersion"], manifest["kind"])
        result = resource.server_side_apply(
            body=manifest,
            name=manifest["metadata"]["name"],
            namespace=manifest["metadata"].get("namespace"),
            field_manager=FIELD_MANAGER,
            force_conflicts=True,
        )
        return dict(result.to_dict())

    def has_kind(self, api_version: str, kind: str) -> bool:
        """Whether the API server serves ``kind`` (e.g. the Spark operator's CRD)."""
        try:
            self._resource(api_version, kind)
        except ResourceNotFoundError:
            return False
        return True

    def get(self, api_version: str, kind: str, namespace: str, name: str) -> JSON | None:
        try:
            found = self._resource(api_version, kind).get(name=name, namespace=namespace)
        except NotFoundError:
            return None
        return dict(found.to_dict())

    def delete(self, api_version: str, kind: str, namespace: str, name: str) -> None:
        try:
            self._resource(api_version, kind).delete(name=name, namespace=namespace)
        except NotFoundError:
            return

    def pods(self, namespace: str, selector: str) -> list[JSON]:
        """The pods of ``namespace`` matching the label ``selector``."""
        found = self._core.list_namespaced_pod(namespace, label_selector=selector)
        return [dict(self._core.api_client.sanitize_for_serialization(p)) for p in found.items]

    def patch_metadata(
        self, api_version: str, kind: str, namespace: str, name: str, patch: JSON
    ) -> None:
        self._resource(api_version, kind).patch(
            name=name,
            namespace=namespace,
            body={"metadata": patch},
            content_type="application/merge-patch+json",
        )

    def patch_status(
        self, api_version: str, kind: str, namespace: str, name: str, status: JSON
    ) -> None:
        """Merge-patch the status subresource (a no-op write when nothing changed)."""
        if not status:
            return
        self._resource(api_version, kind).status.patch(
            name=name,
            namespace=namespace,
            body={"status": status},
            content_type="application/merge-patch+json",
        )

    def post_event(self, obj: JSON, *, warning: bool, reason: str, message: str) -> None:
        """A Kubernetes Event about ``obj`` (works from any thread, unlike kopf's poster)."""
        metadata = obj["metadata"]
        stamp = datetime.now(UTC)
        event = client.CoreV1Event(
            metadata=client.V1ObjectMeta(
                generate_name=f"{metadata['name']}.", namespace=metadata["namespace"]
            ),
            involved_object=client.V1ObjectReference(
                api_version=obj.get("apiVersion"),
                kind=obj.get("kind"),
                name=metadata["name"],
                namespace=metadata["namespace"],
                uid=metadata.get("uid"),
            ),
            type="Warning" if warning else "Normal",
            reason=reason,
            message=message[:1024],
            first_timestamp=stamp,
            last_timestamp=stamp,
            count=1,
            source=client.V1EventSource(component=FIELD_MANAGER),
        )
        self._core.create_namespaced_event(metadata["namespace"], event)

    def secrets_hash(self, namespace: str, names: list[str]) -> tuple[str, list[str]]:
        """A digest of the referenced Secrets' data, and the names that do not exist."""
        digest, missing = hashlib.sha256(), []
        for name in names:
            try:
                secret = self._core.read_namespaced_secret(name, namespace)
            except client.ApiException as error:
                if error.status == 404:
                    missing.append(name)
                    continue
                raise
            for key, value in sorted((secret.data or {}).items()):
                digest.update(f"{name}/{key}={value!s};".encode())
        return digest.hexdigest()[:16], missing


def apply_child(kube: Kube, manifest: JSON) -> JSON:
    """:meth:`Kube.apply`, raising :class:`ChildRejectedError` when the API server refuses the
    child for good; other errors pass unchanged (the reconcile is retried)."""
    try:
        return kube.apply(manifest)
    except client.ApiException as error:
        message = rejection(error)
        if message is None:
            raise
        kind, name = manifest.get("kind"), manifest["metadata"].get("name")
        raise ChildRejectedError(f"the API server refused {kind} {name}: {message}") from error
