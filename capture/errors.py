"""Errors as policy: retriable ones reconnect from the last durable offset, fatal ones stop.

Every message says what is wrong and how to fix it, and never contains a password.
"""

from __future__ import annotations


class CaptureError(Exception):
    """Base of the engine's own errors."""


class FatalError(CaptureError):
    """A problem no retry can fix (configuration, privileges, server settings)."""


class PositionLostError(FatalError):
    """The log no longer holds the changes after the stored position: a slot invalidated or
    dropped, a binlog purged, change-data rows pruned. No retry brings them back; the message
    (see :func:`position_lost`) names what happened and the choices."""


#: How every lost-position message starts: the operator's ``PositionLost`` reason keys on it.
POSITION_LOST = "position lost: "


def position_lost(what: str, *, prevent: str, resume: str = "") -> PositionLostError:
    """The error for a lost position: ``what`` happened, how to go on (``resume``: a way that
    keeps the offsets, where there is one), and how to ``prevent`` it next time."""
    choices = (
        "Either set snapshot.mode=when_needed, and the next start takes a new snapshot "
        "(consumers see every row again as op r), or reset the offsets (`cdcflow offsets "
        "reset`) to start as a new connector"
    )
    if resume:
        choices += f", or {resume}"
    return PositionLostError(f"{POSITION_LOST}{sentence(what)} {choices}. Next time: {prevent}.")


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
