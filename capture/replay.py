"""The log read again after a redone snapshot, so that a replayed topic equals the source.

A snapshot killed half way has sent rows read at its position P0; the snapshot taken again at
the next start reads the tables at a later position P1. A row deleted or re-keyed between P0
and P1 would stay in the topic with no delete (a phantom), so the stream after a redone
snapshot starts at P0, not P1. The changes of the window [P0, P1) follow the redone snapshot's
rows: the last change of each key the window touches is that key's state at P1, so a topic
replayed (last event per key wins, deletes remove) converges to the source; keys the window
does not touch are as the snapshot read them. Its DDL is not applied again (the structures
are P1's already), and a row written with another structure than P1's is skipped with a
warning. ``snapshot.mode=always`` replays from the position the previous run reached, for the
same reason.

Offsets inside the window are P1's, with the position reached in the window under the
``replay.*`` keys (:meth:`~cdcflow.capture.spi.Offset.replaying_from`): the schema history is
recovered at P1, and a restart enters the window again where it stopped. PostgreSQL needs no
window: its slot keeps P0 and a redone snapshot reports that position.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cdcflow.capture.spi import Offset, Position

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ReplayWindow:
    """The part of the log read again: up to the snapshot's offset ``end``."""

    end: Offset
    end_key: tuple[Any, ...]
    """``end``'s position in log order."""

    def inside(self, key: tuple[Any, ...]) -> bool:
        """Whether a position (its order key) is still before the window's end."""
        return key < self.end_key

    def offset(self, at: Offset) -> Offset:
        """The offset to store at position ``at`` inside the window."""
        return self.end.replaying_from(at)


def offset_at(window: ReplayWindow, position: Position) -> tuple[Offset, ReplayWindow | None]:
    """The offset to store at a stream's ``position``, and the window still ahead of it (None
    once the stream has passed its end)."""
    offset = Offset.of(position)
    if window.inside(position.order_key()):
        return window.offset(offset), window
    log.info("the log read again after the redone snapshot is replayed")
    return offset, None


def stream_start(
    offset: Offset | None, *, order_key: Callable[[Offset], tuple[Any, ...]]
) -> tuple[Offset | None, ReplayWindow | None]:
    """Where a stream resuming at ``offset`` reads from, and the window it replays (if any)."""
    start = offset.replay_start() if offset is not None else None
    if offset is None or start is None:
        return offset, None
    end = offset.without_replay()
    return start, ReplayWindow(end, order_key(end))


def snapshot_offset(
    position: Offset, *, replay_from: Offset, order_key: Callable[[Offset], tuple[Any, ...]]
) -> Offset:
    """A finished snapshot's offset: its position, with the window from ``replay_from`` when
    that is earlier (a snapshot taken again)."""
    if order_key(replay_from) < order_key(position):
        return position.replaying_from(replay_from)
    return position
