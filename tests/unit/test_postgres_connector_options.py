"""PostgreSQL connector options that need no server: parallel snapshot reading, slot retries,
stream parameters, xmin tracking, select-override mapping, money digits, metric tags."""

from __future__ import annotations

import base64
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from cdcflow.capture.connectors.postgres import checks, parallel, snapshotter, types
from cdcflow.capture.connectors.postgres.replication import ReplicationStream
from cdcflow.capture.connectors.postgres.source import XminTracker
from cdcflow.capture.connectors.postgres.tables import DecodedTable
from cdcflow.capture.errors import FatalError
from cdcflow.capture.filters import Filters
from cdcflow.capture.spi import Column, Op, RowChange, TableId, TableSchema
from cdcflow.capture.stats import Stats, TableProgress
from cdcflow.capture.status_server import StatsCollector


def _decoded(name: str, *columns: str, source_names: tuple[str, ...] = ()) -> DecodedTable:
    cols = tuple(Column(c, "text", {"type": "string", "optional": True}, str) for c in columns)
    return DecodedTable(
        schema=TableSchema(TableId("public", name), cols, ()),
        positions=tuple(range(len(cols))),
        converters=tuple(c.convert for c in cols),
        binary=(False,) * len(cols),
        identity="d",
        source_names=source_names,
    )


# -- snapshot.max.threads ------------------------------------------------------------------


def _rows(table: DecodedTable, count: int) -> Iterator[RowChange]:
    for i in range(count):
        yield RowChange(table.schema, Op.READ, None, (i,), {})


def test_parallel_reading_yields_tables_in_order_while_workers_read_ahead() -> None:
    tables = [_decoded(f"t{i}", "id") for i in range(4)]
    started = threading.Event()
    seen_threads: set[str] = set()

    def read(connection: Any, table: DecodedTable) -> Iterator[RowChange]:
        seen_threads.add(threading.current_thread().name)
        if table is tables[-1]:
            started.set()  # the last table starts while the first ones are still drained
        yield from _rows(table, 20)

    out = parallel.read_tables(["c1", "c2", "c3"], tables, read=read, buffer=5)  # type: ignore[list-item]
    first = next(out)
    rest = list(out)
    names = [change.table.id.table for change in [first, *rest]]
    assert names == [f"t{i}" for i in range(4) for _ in range(20)]
    assert [change.after for change in rest[:19]] == [(i,) for i in range(1, 20)]
    assert started.is_set() and len(seen_threads) > 1


def test_a_worker_error_is_raised_when_its_table_is_reached() -> None:
    tables = [_decoded("ok", "id"), _decoded("broken", "id")]

    def read(connection: Any, table: DecodedTable) -> Iterator[RowChange]:
        if table.schema.id.table == "broken":
            raise FatalError("snapshot of broken failed")
        yield from _rows(table, 3)

    out = parallel.read_tables(["c1", "c2"], tables, read=read, buffer=2)  # type: ignore[list-item]
    assert len([next(out) for _ in range(3)]) == 3
    with pytest.raises(FatalError, match="broken"):
        next(out)


def test_closing_the_reader_early_stops_the_workers() -> None:
    tables = [_decoded(f"t{i}", "id") for i in range(3)]
    closed: list[str] = []

    def read(connection: Any, table: DecodedTable) -> Iterator[RowChange]:
        try:
            yield from _rows(table, 1000)
        finally:
            closed.append(table.schema.id.table)

    out = parallel.read_tables(["c1", "c2"], tables, read=read, buffer=3)  # type: ignore[list-item]
    next(out)
    out.close()  # type: ignore[attr-defined]
    assert set(closed) <= {"t0", "t1", "t2"} and "t0" in closed


# -- select overrides ----------------------------------------------------------------------


def test_override_results_map_to_the_table_by_column_name() -> None:
    table = _decoded("t", "id", "a", "b")
    assert snapshotter.override_columns(table, ["b", "id"]) == (1, None, 0)
    with pytest.raises(FatalError, match=r"column\(s\) extra"):
        snapshotter.override_columns(table, ["id", "extra"])


def test_override_and_default_statements_use_sql_names() -> None:
    table = _decoded("t", "my_col", source_names=("my-col",))
    default = snapshotter.select_statement(table, None).as_string(None)
    assert default == 'SELECT "my-col" FROM "public"."t"'
    assert snapshotter.select_statement(table, "SELECT 1").as_string(None) == "SELECT 1"


# -- slots -----------------------------------------------------------------------------------


class _Slots:
    """A connection whose slot stays active for ``busy`` lookups."""

    def __init__(self, busy: int) -> None:
        self.busy = busy

    def execute(self, query: str, params: Any = None) -> _Slots:
        return self

    def fetchone(self) -> tuple[Any, ...]:
        self.busy -= 1
        return (self.busy >= 0, 42, "0/0", "pgoutput", "reserved")


def test_a_busy_slot_is_waited_for_up_to_the_retries() -> None:
    sleeps: list[float] = []
    state = checks.wait_for_slot(
        _Slots(busy=2),
        "s",
        retries=3,
        delay_s=0.25,
        sleep=sleeps.append,  # type: ignore[arg-type]
    )
    assert state is not None and not state[0]
    assert sleeps == [0.25, 0.25]


def test_a_slot_busy_after_every_retry_fails_naming_the_retries() -> None:
    with pytest.raises(FatalError, match=r"PID 42\) \(still after 2 retries"):
        checks.wait_for_slot(
            _Slots(busy=9),
            "s",
            retries=2,
            delay_s=0,
            sleep=lambda _s: None,  # type: ignore[arg-type]
        )


class _PgConn:
    def __init__(self) -> None:
        self.sent: list[str] = []

    def send_query(self, query: bytes) -> None:
        self.sent.append(query.decode())

    def get_result(self) -> Any:
        from psycopg import pq

        return type("Result", (), {"status": pq.ExecStatus.COPY_BOTH})()


def test_stream_params_are_added_to_start_replication_without_overriding_cdcflows() -> None:
    pgconn = _PgConn()
    stream = ReplicationStream(pgconn)  # type: ignore[arg-type]
    stream.start(
        slot="s",
        publication="p",
        start_lsn=0,
        messages=True,
        extra={"origin": "none", "proto_version": "2"},
    )
    [sql] = pgconn.sent
    assert sql.endswith(
        """(proto_version '1', publication_names '"p"', messages 'true', "origin" 'none')"""
    )


def test_xmin_is_read_at_most_once_per_interval() -> None:
    reads = iter([10, 11])
    tracker = XminTracker(lambda: next(reads), interval_s=3600)
    assert [tracker(), tracker()] == [10, 10]
    assert XminTracker(lambda: next(reads), interval_s=0)() == 11


# -- values and metrics --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("digits", "text", "unscaled"),
    [(2, "$12.34", 1234), (0, "$12.50", 13), (0, "-$12.50", -13), (4, "$1.05", 10500)],
)
def test_money_takes_money_fraction_digits_rounding_half_up(
    digits: int, text: str, unscaled: int
) -> None:
    registry = types.TypeRegistry.from_rows(
        [(790, "money", "pg_catalog", "b", 0, 0, -1, None, "N")]
    )
    column = types.column_for(
        name="m",
        type_oid=790,
        typmod=-1,
        optional=True,
        registry=registry,
        options=types.TypeOptions(money_fraction_digits=digits),
    )
    assert column is not None
    assert column.schema["parameters"] == {"scale": str(digits)}
    value = int.from_bytes(base64.b64decode(column.convert(text)), "big", signed=True)
    assert value == unscaled


def test_column_filters_match_renamed_fields_by_their_column_name() -> None:
    from cdcflow.capture.connectors.postgres.properties import parse_properties

    filters = Filters.from_properties(
        parse_properties({"topic.prefix": "s", "column.exclude.list": r"public\.t\.my-col"})
    )
    table = TableId("public", "t")
    filters.alias_column(table, field="my_col", column="my-col")
    assert not filters.keeps_column(table, "my_col")
    assert filters.keeps_column(table, "other")


def test_custom_metric_tags_label_every_metric() -> None:
    stats = Stats(connector="c", server="shop", metric_tags={"env": "prod"})
    stats.tables["public.t"] = TableProgress(rows_scanned=3)
    registry = CollectorRegistry()
    registry.register(StatsCollector(stats))
    text = generate_latest(registry).decode()
    assert 'cdcflow_connected{env="prod",server="shop"} 0.0' in text
    assert 'cdcflow_rows_scanned{env="prod",server="shop",table="public.t"} 3.0' in text


def test_a_chunk_snapshot_knows_which_transactions_it_could_not_see() -> None:
    from cdcflow.capture.connectors.postgres.chunks import ChunkSnapshot

    seen = ChunkSnapshot(xmin=100, xmax=110, running=frozenset({103}))
    assert not seen.misses(99) and not seen.misses(105)  # committed before the snapshot
    assert seen.misses(103) and seen.misses(110) and seen.misses(200)  # running or later
    wrapped = ChunkSnapshot(xmin=0xFFFFFFF0, xmax=5, running=frozenset())
    assert not wrapped.misses(0xFFFFFFF8) and not wrapped.misses(2) and wrapped.misses(7)
