"""Connector-agnostic snapshot rules: when to snapshot, and how snapshot records are marked.

``source.snapshot`` is ``first`` on the very first record, ``first_in_data_collection`` and
``last_in_data_collection`` at table boundaries, ``last`` on the very last record and ``true``
otherwise, as in Debezium 2.x. The marking needs a one-record look-ahead, done here once for
every connector.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace

from cdcflow.capture.errors import FatalError
from cdcflow.capture.spi import Offset, RowChange, TableId
from cdcflow.capture.stats import Stats

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


#: Modes that rebuild a historized connector's lost schema history from the structure now.
HISTORY_REBUILDING_MODES = ("recovery", "schema_only_recovery")
#: Modes that snapshot a historized connector's structure (and no rows) on a first start
#: (``never`` reads the whole log instead, its DDL included).
STRUCTURE_ONLY_MODES = ("no_data", "schema_only")


def needs_structure(mode: str, offset: Offset | None) -> bool:
    """Whether a historized connector that takes no data snapshot must still read the tables'
    structure: on a first start of a structure-only mode, or to rebuild the history."""
    if mode in HISTORY_REBUILDING_MODES:
        return True
    return mode in STRUCTURE_ONLY_MODES and (offset is None or not offset.connector_values())


def streams_after_snapshot(mode: str) -> bool:
    """``initial_only`` stops once the snapshot completed."""
    return mode != "initial_only"


@dataclass(frozen=True)
class ConfigurationBased:
    """``snapshot.mode=configuration_based``: the ``snapshot.mode.configuration.based.*``
    switches (Debezium's ``ConfigurationBasedSnapshotter``).

    ``snapshot_data`` snapshots at every start, whatever the offsets say; ``start_stream``
    streams afterwards. ``snapshot_schema`` and ``snapshot_on_schema_error`` concern the
    schema history of historized connectors, which PostgreSQL has not: Debezium's PostgreSQL
    connector ignores the first and refuses to start without offsets under the second, as
    cdcflow does. ``snapshot_on_data_error`` discards offsets whose position the slot no
    longer holds (instead of failing) and goes on as if there were none.
    """

    snapshot_data: bool = False
    snapshot_schema: bool = False
    start_stream: bool = False
    snapshot_on_schema_error: bool = False
    snapshot_on_data_error: bool = False


@dataclass(frozen=True)
class StartPlan:
    """What a start does: snapshot or not, stream or not, and the offset to resume from."""

    snapshot: bool
    stream: bool
    offset: Offset | None


def plan_start(
    mode: str,
    offset: Offset | None,
    *,
    position_available: bool = True,
    configured: ConfigurationBased | None = None,
) -> StartPlan:
    """The start of a connector with ``offset``, per ``snapshot.mode``."""
    if mode != "configuration_based":
        snapshot = should_snapshot(mode, offset, position_available=position_available)
        return StartPlan(snapshot, streams_after_snapshot(mode), offset)
    settings = configured or ConfigurationBased()
    if offset is None:
        if settings.snapshot_on_schema_error:
            raise FatalError(
                "Could not find existing redo log information while attempting schema only "
                "recovery snapshot (snapshot.mode.configuration.based.snapshot.on.schema.error"
                "=true needs stored offsets; set it to false)"
            )
    elif snapshot_incomplete(offset):
        if not settings.snapshot_data and not settings.snapshot_schema:
            raise FatalError(
                "The connector previously stopped while taking a snapshot, but now the "
                "connector is configured to never allow snapshots. Set "
                "snapshot.mode.configuration.based.snapshot.data=true to take it again."
            )
    elif not position_available and settings.start_stream:
        if not settings.snapshot_on_data_error:
            raise FatalError(
                f"The connector is trying to read change stream starting at {offset.to_dict()}, "
                "but this is no longer available on the server. Set "
                "snapshot.mode.configuration.based.snapshot.on.data.error=true (or use "
                "snapshot.mode=when_needed)."
            )
        offset = None
    return StartPlan(settings.snapshot_data, settings.start_stream, offset)


def mark_positions(
    changes: Iterable[RowChange], *, first_table: TableId | None
) -> Iterator[RowChange]:
    """Set ``source.snapshot`` on each snapshot record according to its position.

    As in Debezium, ``first`` marks the first row of the first table in snapshot order
    (``first_table``): when that table is empty, no row is ``first`` and the next table's first
    row is ``first_in_data_collection``.
    """
    iterator = iter(changes)
    current = next(iterator, None)
    first = current is not None and current.table.id == first_table
    previous_table = None
    while current is not None:
        following = next(iterator, None)
        table = current.table.id
        # Debezium's precedence: last, first, last_in_data_collection, first_in_data_collection.
        if following is None:
            marker = "last"
        elif first:
            marker = "first"
        elif following.table is not current.table and following.table.id != table:
            marker = "last_in_data_collection"
        elif table is not previous_table and table != previous_table:
            marker = "first_in_data_collection"
        else:
            marker = "true"
        if current.source.get("snapshot") != marker:  # connectors mark rows "true"
            current = replace(current, source={**current.source, "snapshot": marker})
        yield current
        first, previous_table, current = False, table, following


def track_tables(changes: Iterable[RowChange], stats: Stats) -> Iterator[RowChange]:
    """Mark tables completed in ``stats`` as the snapshot moves past them."""
    tables = stats.tables
    previous: str | None = None
    previous_table = None
    for change in changes:
        if change.table is not previous_table:  # a table's rows come together
            previous_table = change.table
            name = str(previous_table.id)
            if name != previous and previous in tables:
                tables[previous].completed = True
            previous = name
        yield change
    for progress in tables.values():
        progress.completed = True
