"""Condition math: ``metav1.Condition`` lists whose transition times move only on change.

Every reconcile computes the full desired set of conditions; :func:`merge` keeps each
condition's ``lastTransitionTime`` when its status did not change (as ``meta.SetStatusCondition``
does) and stamps the generation it was computed from, so kstatus, ``kubectl wait`` and Argo CD
read honest conditions.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

Status = Literal["True", "False", "Unknown"]


@dataclass(frozen=True)
class Condition:
    """A desired condition; reason is a stable CamelCase identifier."""

    type: str
    status: Status
    reason: str
    message: str = ""


def now() -> str:
    """RFC 3339 in UTC with second precision, as the API server stores it."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def merge(
    existing: Sequence[Mapping[str, Any]] | None,
    desired: Iterable[Condition],
    *,
    generation: int,
    timestamp: str | None = None,
) -> list[dict[str, Any]]:
    """The new conditions list; conditions not in ``desired`` are kept as they were."""
    stamp = timestamp or now()
    previous = {str(item.get("type")): dict(item) for item in existing or ()}
    out: dict[str, dict[str, Any]] = dict(previous)
    for condition in desired:
        before = previous.get(condition.type)
        changed = before is None or before.get("status") != condition.status
        out[condition.type] = {
            "type": condition.type,
            "status": condition.status,
            "reason": condition.reason,
            "message": condition.message[:32768],
            "observedGeneration": generation,
            "lastTransitionTime": stamp if changed else before["lastTransitionTime"],  # type: ignore[index]
        }
    return list(out.values())


def find(conditions: Sequence[Mapping[str, Any]] | None, kind: str) -> Mapping[str, Any] | None:
    """The condition of type ``kind``, if present."""
    return next((c for c in conditions or () if c.get("type") == kind), None)


def summary(
    *, ready: bool, reason: str, message: str, stalled: bool = False, reconciling: bool = False
) -> list[Condition]:
    """The kstatus triple: Ready, Reconciling (abnormal-true), Stalled (abnormal-true)."""
    return [
        Condition("Ready", "True" if ready else "False", reason, message),
        Condition(
            "Reconciling",
            "True" if reconciling else "False",
            reason if reconciling else "Reconciled",
            message if reconciling else "",
        ),
        Condition(
            "Stalled",
            "True" if stalled else "False",
            reason if stalled else "NoError",
            message if stalled else "",
        ),
    ]
