"""Signals: parse the rows of the signal table (and Kafka signal messages) into commands.

A signal is ``(id, type, data)`` where ``data`` is a JSON object, exactly as Debezium's signal
table holds it. Parsing never raises into the event loop: a malformed signal becomes a
:class:`SignalError` whose message says what is wrong, which the caller reports and skips.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

KNOWN_TYPES = frozenset(
    {
        "execute-snapshot",
        "stop-snapshot",
        "pause-snapshot",
        "resume-snapshot",
        "log",
        "snapshot-window-open",
        "snapshot-window-close",
    }
)
WINDOW_TYPES = frozenset({"snapshot-window-open", "snapshot-window-close"})


class SignalError(ValueError):
    """A signal that cannot be acted on; the message is shown in logs and notifications."""

    def __init__(self, signal_id: str, message: str) -> None:
        super().__init__(message)
        self.signal_id = signal_id


@dataclass(frozen=True)
class Signal:
    """One command for the connector."""

    id: str
    type: str
    data: Mapping[str, Any] = field(default_factory=dict)
    channel: str = "source"


@dataclass(frozen=True)
class SnapshotRequest:
    """What ``execute-snapshot`` / ``stop-snapshot`` ask for."""

    kind: str  # "incremental" or "blocking"
    collections: tuple[str, ...]
    conditions: Mapping[str, str]
    surrogate_key: str | None


def parse(signal_id: str, signal_type: str, data: str | bytes | None, *, channel: str) -> Signal:
    """Build a signal from the three signal-table columns."""
    if signal_type not in KNOWN_TYPES:
        raise SignalError(
            signal_id,
            f"unknown signal type {signal_type!r}; "
            f"expected one of {', '.join(sorted(KNOWN_TYPES))}",
        )
    if data in (None, "", b""):
        return Signal(signal_id, signal_type, {}, channel)
    try:
        decoded = orjson.loads(data)
    except orjson.JSONDecodeError as error:
        raise SignalError(signal_id, f"signal data is not valid JSON: {error}") from None
    if not isinstance(decoded, dict):
        raise SignalError(signal_id, "signal data must be a JSON object")
    return Signal(signal_id, signal_type, decoded, channel)


def parse_kafka(key: bytes | None, value: bytes | None, *, position: str) -> Signal:
    """A Kafka signal: value ``{"type": …, "data": {…}}`` (``id`` optional, else the position)."""
    try:
        document = orjson.loads(value or b"")
    except orjson.JSONDecodeError as error:
        raise SignalError(position, f"Kafka signal is not valid JSON: {error}") from None
    if not isinstance(document, dict) or "type" not in document:
        raise SignalError(position, 'Kafka signal must be {"type": …, "data": {…}}')
    signal_id = str(document.get("id") or position)
    data = document.get("data") or {}
    if not isinstance(data, dict):
        raise SignalError(signal_id, "signal data must be a JSON object")
    return parse(signal_id, str(document["type"]), orjson.dumps(data), channel="kafka")


def snapshot_request(signal: Signal, *, stopping: bool = False) -> SnapshotRequest:
    """Validate the ``data`` of an execute-snapshot or stop-snapshot signal."""
    data = signal.data
    kind = str(data.get("type") or ("" if stopping else "incremental")).lower()
    if kind not in ("incremental", "blocking"):
        raise SignalError(
            signal.id,
            f"snapshot type must be incremental or blocking, not {data.get('type')!r}"
            + (' (stop-snapshot requires "type": "incremental")' if stopping else ""),
        )
    collections = data.get("data-collections", [])
    if not isinstance(collections, list) or not all(isinstance(c, str) for c in collections):
        raise SignalError(signal.id, "data-collections must be an array of table names")
    if not collections and not stopping:
        raise SignalError(signal.id, "data-collections is empty: nothing to snapshot")
    surrogate = data.get("surrogate-key")
    return SnapshotRequest(
        kind=kind,
        collections=tuple(collections),
        conditions=_conditions(signal, collections),
        surrogate_key=str(surrogate) if surrogate else None,
    )


def _conditions(signal: Signal, collections: list[str]) -> dict[str, str]:
    """Per-table filters: 2.x ``additional-conditions`` list or 1.x ``additional-condition``."""
    data = signal.data
    conditions: dict[str, str] = {}
    single = data.get("additional-condition")
    if isinstance(single, str) and single.strip():
        conditions.update(dict.fromkeys(collections, single))
    listed = data.get("additional-conditions") or []
    if not isinstance(listed, list):
        raise SignalError(signal.id, "additional-conditions must be an array")
    for entry in listed:
        if not isinstance(entry, dict) or "data-collection" not in entry or "filter" not in entry:
            raise SignalError(
                signal.id, 'each additional-conditions entry needs "data-collection" and "filter"'
            )
        conditions[str(entry["data-collection"])] = str(entry["filter"])
    return conditions
