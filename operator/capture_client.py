"""Talking to a capture pod: its ``/status`` document and ``POST /signals``."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from typing import Any

DEFAULT_ENDPOINT = "http://{name}-capture.{namespace}.svc:8080"
TIMEOUT_S = 5.0


class CaptureUnreachableError(Exception):
    """The capture pod did not answer; the message says how."""


def endpoint(*, name: str, namespace: str) -> str:
    """Base URL of a connector's capture pod (overridable for development and tests)."""
    template = os.environ.get("CDCFLOW_CAPTURE_ENDPOINT_TEMPLATE", DEFAULT_ENDPOINT)
    return template.format(name=name, namespace=namespace)


def status(base: str) -> dict[str, Any]:
    """The capture pod's ``/status`` document."""
    try:
        with urllib.request.urlopen(f"{base}/status", timeout=TIMEOUT_S) as reply:
            return dict(json.load(reply))
    except (OSError, ValueError) as error:
        raise CaptureUnreachableError(str(error)) from None


def send_signal(base: str, *, signal_id: str, signal_type: str, data: str) -> bool:
    """Insert a signal through the capture pod; True if new, False if it existed."""
    body = json.dumps({"id": signal_id, "type": signal_type, "data": json.loads(data)}).encode()
    request = urllib.request.Request(
        f"{base}/signals", data=body, method="POST", headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as reply:
            return int(reply.status) == 201
    except urllib.error.HTTPError as error:
        detail = error.read().decode(errors="replace")
        raise CaptureUnreachableError(f"HTTP {error.code}: {detail}") from None
    except OSError as error:
        raise CaptureUnreachableError(str(error)) from None
