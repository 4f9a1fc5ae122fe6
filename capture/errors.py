"""Errors as policy: retriable ones reconnect from the last durable offset, fatal ones stop.

Every message says what is wrong and how to fix it, and never contains a password.
"""

from __future__ import annotations


class CaptureError(Exception):
    """Base of the engine's own errors."""


class FatalError(CaptureError):
    """A problem no retry can fix (configuration, privileges, server settings)."""


class RetriableError(CaptureError):
    """A transient failure (connection lost, timeout); restart from the last durable offset."""


class SnapshotQueryError(CaptureError):
    """A snapshot query failed (e.g. a bad additional condition); the snapshot of that table
    is abandoned and reported, streaming continues."""


class SnapshotSchemaChangedError(SnapshotQueryError):
    """A chunk query failed because its table's schema changed meanwhile; with
    ``incremental.snapshot.allow.schema.changes`` the chunk is read again."""


def sentence(text: object) -> str:
    """``text`` as one sentence ending in ``.``, ``?`` or ``!``: for quoting a library's
    message inside ours without doubled punctuation (``…?.`` or ``…..``)."""
    stripped = str(text).strip()
    return stripped if stripped.endswith((".", "?", "!")) else f"{stripped}."
