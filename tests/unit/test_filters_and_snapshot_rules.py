"""Which tables and columns are captured, and when a snapshot runs and how it is marked."""

from __future__ import annotations

import pytest

from cdcflow.capture.connectors.postgres.properties import parse_properties
from cdcflow.capture.errors import FatalError
from cdcflow.capture.filters import Filters
from cdcflow.capture.snapshot import mark_positions, should_snapshot
from cdcflow.capture.spi import Offset, Op, RowChange, TableId, TableSchema


def _filters(**config: str) -> Filters:
    return Filters.from_properties(parse_properties({"topic.prefix": "s", **config}))


def test_include_list_is_an_anchored_case_insensitive_regex() -> None:
    filters = _filters(**{"table.include.list": "public\\.order.*"})
    assert filters.captures(TableId("public", "orders"))
    assert filters.captures(TableId("PUBLIC", "Order_lines"))
    assert not filters.captures(TableId("public", "customers"))
    assert not filters.captures(TableId("archive", "public.orders"))


def test_system_schemas_are_never_captured() -> None:
    assert not _filters().captures(TableId("pg_catalog", "pg_class"))


def test_signal_table_is_read_even_when_not_captured() -> None:
    filters = _filters(
        **{"table.include.list": "public.orders", "signal.data.collection": "public.signals"}
    )
    signals = TableId("public", "signals")
    assert filters.reads(signals) and not filters.captures(signals)


def test_column_exclude_list_matches_fully_qualified_column_names() -> None:
    filters = _filters(**{"column.exclude.list": "public.users.password"})
    assert not filters.keeps_column(TableId("public", "users"), "password")
    assert filters.keeps_column(TableId("public", "users"), "email")


def test_message_key_columns_override_the_primary_key_per_table() -> None:
    filters = _filters(**{"message.key.columns": "public.orders:tenant,number;public.x:y"})
    assert filters.key_columns(TableId("public", "orders"), ("id",)) == ("tenant", "number")
    assert filters.key_columns(TableId("public", "other"), ("id",)) == ("id",)


def test_snapshot_include_list_narrows_the_snapshot_only() -> None:
    filters = _filters(**{"snapshot.include.collection.list": "public.small"})
    assert filters.snapshots(TableId("public", "small"))
    assert not filters.snapshots(TableId("public", "big"))
    assert filters.captures(TableId("public", "big"))


INCOMPLETE = Offset({"snapshot": True})
STREAMING = Offset({"lsn": 100})


@pytest.mark.parametrize(
    ("mode", "offset", "expected"),
    [
        ("initial", None, True),
        ("initial", INCOMPLETE, True),
        ("initial", STREAMING, False),
        ("always", STREAMING, True),
        ("never", None, False),
        ("no_data", STREAMING, False),
        ("initial_only", None, True),
        ("when_needed", STREAMING, False),
        ("exported", None, True),
    ],
)
def test_snapshot_mode_decides_whether_to_snapshot(
    mode: str, offset: Offset | None, expected: bool
) -> None:
    assert should_snapshot(mode, offset) is expected


def test_when_needed_snapshots_when_the_stored_position_is_gone() -> None:
    assert should_snapshot("when_needed", STREAMING, position_available=False)


def test_never_refuses_an_interrupted_snapshot() -> None:
    with pytest.raises(FatalError, match="interrupted snapshot"):
        should_snapshot("never", INCOMPLETE)


def _change(table: str) -> RowChange:
    schema = TableSchema(TableId("public", table), (), ())
    return RowChange(schema, Op.READ, None, (), {"snapshot": "true"})


def test_snapshot_records_are_marked_first_table_boundaries_and_last() -> None:
    changes = [_change("a"), _change("a"), _change("a"), _change("b"), _change("b")]
    marked = mark_positions(changes, first_table=TableId("public", "a"))
    marks = [change.source["snapshot"] for change in marked]
    assert marks == ["first", "true", "last_in_data_collection", "first_in_data_collection", "last"]


def test_when_the_first_table_is_empty_no_row_is_first_as_in_debezium() -> None:
    changes = [_change("b"), _change("b"), _change("b")]
    marked = mark_positions(changes, first_table=TableId("public", "a"))
    marks = [change.source["snapshot"] for change in marked]
    assert marks == ["first_in_data_collection", "true", "last"]


def test_a_single_record_snapshot_is_marked_last() -> None:
    marked = mark_positions([_change("a")], first_table=TableId("public", "a"))
    assert [c.source["snapshot"] for c in marked] == ["last"]
