"""Whether this operator replica is the active one under kopf peering (HA with ``--peering``).

kopf pauses its own handlers in every replica but the one with the highest priority; the
operator-wide poller is not a kopf handler, so it asks the same question before each round,
reading the peering object kopf keeps: ``status`` maps each replica's identity to its
``priority``, ``lastseen`` and ``lifetime``. A replica whose ``lastseen + lifetime`` passed is
dead and does not count. Replicas started without ``--priority`` pick a random one (see
``cdcflow operator``), so exactly one is active; equal priorities would pause them all, as
kopf does.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

API_VERSION = "kopf.dev/v1"


class PeeringReader(Protocol):
    """The one read this needs (``Kube.get``)."""

    def get(
        self, api_version: str, kind: str, namespace: str, name: str
    ) -> dict[str, Any] | None: ...


@dataclass(frozen=True)
class Peering:
    """This replica's peering settings, as kopf was started with them."""

    name: str
    clusterwide: bool
    priority: int

    def active(self, kube: PeeringReader, namespace: str = "") -> bool:
        """True unless another live replica has a priority at least ours."""
        if self.clusterwide:
            found = kube.get(API_VERSION, "ClusterKopfPeering", "", self.name)
        else:
            found = kube.get(API_VERSION, "KopfPeering", namespace, self.name)
        return is_active(self.priority, (found or {}).get("status") or {}, now=datetime.now(UTC))


def is_active(priority: int, peers: dict[str, Any], *, now: datetime) -> bool:
    """Whether ``priority`` is above that of every other live peer in ``peers``.

    Our own entry has our priority: equal priorities mean a conflict, which kopf answers by
    pausing everybody, so one entry equal to ours (ourselves) is allowed, two are not.
    """
    equal = 0
    for info in peers.values():
        if not isinstance(info, dict) or _dead(info, now):
            continue
        other = int(info.get("priority") or 0)
        if other > priority:
            return False
        equal += other == priority
    return equal <= 1


def _dead(info: dict[str, Any], now: datetime) -> bool:
    try:
        seen = datetime.fromisoformat(str(info["lastseen"]))
    except (KeyError, ValueError):
        return True
    if seen.tzinfo is None:
        seen = seen.replace(tzinfo=UTC)
    return seen + timedelta(seconds=float(info.get("lifetime") or 60)) < now
