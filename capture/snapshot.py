"""Connector-agnostic snapshot rules: when to snapshot, and how snapshot records are marked.

``source.snapshot`` is ``first`` on the very first record, ``first_in_data_collection`` and
``last_in_data_collection`` at table boundaries, ``last`` on the very last record and ``true``
otherwise, as in Debezium 2.x. The marking needs a one-record look-ahead, done here once for
every connector.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from cdcflow.capture.errors import FatalError
from cdcflow.capture.spi import Offset, RowChange

SNAPSHOT_IN_PROGRESS = "snapshot"


def snapshot_incomplete(offset: Offset | None) -> bool:
    """Whether the stored offset records a snapshot that started but did not finish."""
    return offset is not None and bool(offset.get(SNAPSHOT_IN_PROGRESS))


def should_snapshot(mode: str, offset: Offset | None, *, position_available: bool = True) -> bool:
    """Debezium's ``snapshot.mode`` decision for a connector starting with ``offset``."""
    missing_or_incomplete = offset is None or snapshot_incomplete(offset)
    if mode in ("initial", "initial_only", "exported"):
        return missing_or_incomplete
    if mode == "always":
        return True
    if mode == "when_needed":
        return missing_or_incomplete or not position_available
    if snapshot_incomplete(offset):
        raise FatalError(
            f"snapshot.mode={mode} but the stored offset records an interrupted snapshot; "
            "use snapshot.mode=initial to finish it, or reset the offsets "
            "(cdcflow offsets reset) to start streaming from the slot's position"
        )
    return False


def streams_after_snapshot(mode: str) -> bool:
    """``initial_only`` stops once the snapshot completed."""
    return mode != "initial_only"


def mark_positions(changes: Iterable[RowChange]) -> Iterator[RowChange]:
    """Set ``source.snapshot`` on each snapshot record according to its position."""
    iterator = iter(changes)
    current = next(iterator, None)
    first = True
    previous_table = None
    while current is not None:
        following = next(iterator, None)
        table = current.table.id
        # Debezium's precedence: last, first, last_in_data_collection, first_in_data_collection.
        if following is None:
            marker = "last"
        elif first:
            marker = "first"
        elif following.table.id != table:
            marker = "last_in_data_collection"
        elif table != previous_table:
            marker = "first_in_data_collection"
        else:
            marker = "true"
        current.source["snapshot"] = marker
        yield current
        first, previous_table, current = False, table, following
