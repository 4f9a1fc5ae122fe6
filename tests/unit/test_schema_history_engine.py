"""Schema history through the engine, with a historized in-memory connector: a DDL is recorded
before any offset past it is committed, goes to the schema-change topic, and a restart
recovers the table structures as of the stored offset before reading anything."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson
import pytest

from cdcflow.capture.config import HistorizedProperties, parse_properties
from cdcflow.capture.connector_resource import parse_connector
from cdcflow.capture.engine import Engine
from cdcflow.capture.errors import FatalError
from cdcflow.capture.filters import Filters
from cdcflow.capture.history import MemorySchemaHistory
from cdcflow.capture.offsets import MemoryOffsetStore
from cdcflow.capture.spi import (
    ChunkSource,
    Column,
    ColumnStructure,
    Event,
    Offset,
    Op,
    RowChange,
    SchemaChange,
    SnapshotSteps,
    StreamingSource,
    TableChange,
    TableChangeType,
    TableId,
    TableSchema,
    TableStructure,
    TxBegin,
    TxCommit,
)
from cdcflow.capture.stats import Stats
from tests.in_memory import SOURCE_SCHEMA, Journal, JournalingOffsets, MemorySink, ScriptedSource

ORDERS = TableId("inventory", "orders")
CREATE = SchemaChange(
    database="inventory",
    schema=None,
    ddl="CREATE TABLE orders (id INT PRIMARY KEY)",
    changes=(
        TableChange(
            TableChangeType.CREATE,
            TableStructure(
                ORDERS,
                (ColumnStructure("id", 4, "INT", 1, optional=False),),
                primary_key=("id",),
            ),
        ),
    ),
    source={"ts_ms": 1},
    offset=Offset({"pos": 1}),
)
ORDERS_SCHEMA = TableSchema(
    ORDERS, (Column("id", "INT", {"type": "int32", "optional": False}, int, False),), ("id",)
)


@dataclass(frozen=True)
class Counter:
    """The test connector's position: a number."""

    pos: int

    def to_dict(self) -> dict[str, Any]:
        return {"pos": self.pos}

    def order_key(self) -> tuple[int]:
        return (self.pos,)


class MemoryConnectorProperties(HistorizedProperties):
    source_kind = "test"


class JournalingHistory(MemorySchemaHistory):
    def __init__(self, journal: Journal) -> None:
        super().__init__()
        self.journal = journal

    def record(self, change: SchemaChange) -> None:
        super().record(change)
        self.journal.append(f"history {change.offset.get('pos')}")


class HistorizedConnector:
    """Streams one DDL and one row; remembers what recovery gave it."""

    source_schema = SOURCE_SCHEMA

    def __init__(self, stop: threading.Event) -> None:
        self.stop = stop
        self.recovered: list[SchemaChange] = []
        self.recovered_at: Offset | None = None

    def recover(self, changes: Iterator[SchemaChange], offset: Offset | None) -> None:
        self.recovered, self.recovered_at = list(changes), offset

    def prepare(self) -> list[TableId]:
        return [ORDERS]

    def position_available(self, offset: Offset | None) -> bool:
        return True

    def position(self, offset: Offset) -> Counter:
        return Counter(int(offset.get("pos") or 0))

    def prepare_stream(self, *, for_snapshot: bool, offset: Offset | None) -> None:
        pass

    def snapshot_tables(self) -> dict[TableId, int]:
        return {}

    def snapshot_steps(self, tables: list[TableId]) -> SnapshotSteps:
        raise NotImplementedError("snapshot.mode=never")

    def streaming(self, offset: Offset | None) -> StreamingSource:
        row = RowChange(ORDERS_SCHEMA, Op.CREATE, None, (1,), {"ts_ms": 1}, tx_id="9")
        events: list[Event] = [
            CREATE,
            TxBegin("9", {"ts_ms": 1}),
            row,
            TxCommit("9", Offset({"pos": 2}), {"ts_ms": 1}),
        ]
        return ScriptedSource(Journal(), events, self.stop)

    def chunk_source(self) -> ChunkSource:
        raise NotImplementedError

    def close(self, *, stopping: bool = False) -> None:
        pass


def _engine(history: MemorySchemaHistory, offsets: MemoryOffsetStore, **config: Any) -> Engine:
    resource = parse_connector(
        {
            "apiVersion": "cdcflow.io/v1alpha1",
            "kind": "CdcConnector",
            "metadata": {"name": "shop"},
            "spec": {"source": {"postgresql": {"host": "h", "database": "d"}}},
        }
    )
    properties = parse_properties(
        {
            "topic.prefix": "shop",
            "snapshot.mode": "never",
            "schema.history.internal": "io.debezium.relational.history.MemorySchemaHistory",
            **config,
        },
        MemoryConnectorProperties,
    )
    stop = threading.Event()
    return Engine(
        resource=resource,
        properties=properties,
        connector=HistorizedConnector(stop),
        filters=Filters.from_properties(properties),
        sink=MemorySink(),
        offsets=offsets,
        stats=Stats(connector="shop", server="shop"),
        history=history,
        stop=stop,
    )


def test_a_ddl_is_recorded_before_the_offset_past_it_and_goes_to_the_schema_change_topic() -> None:
    journal = Journal()
    history, offsets = JournalingHistory(journal), JournalingOffsets(journal)
    engine = _engine(history, offsets)

    engine.run()

    assert [step for step in journal if step.startswith(("history", "save"))] == [
        "history 1",
        "save 2",
    ]
    assert [change.ddl for change in history.changes()] == [CREATE.ddl]
    sink = engine.sink
    assert isinstance(sink, MemorySink)
    assert [record.topic for record in sink.records] == ["shop", "shop.inventory.orders"]
    value = orjson.loads(sink.records[0].value or b"")["payload"]
    assert value["ddl"] == CREATE.ddl and value["databaseName"] == "inventory"
    assert value["tableChanges"][0]["type"] == "CREATE"


def test_include_schema_changes_false_keeps_ddl_out_of_kafka_but_in_history() -> None:
    history, offsets = MemorySchemaHistory(), MemoryOffsetStore()
    engine = _engine(history, offsets, **{"include.schema.changes": "false"})

    engine.run()

    sink = engine.sink
    assert isinstance(sink, MemorySink)
    assert [record.topic for record in sink.records] == ["shop.inventory.orders"]
    assert len(list(history.changes())) == 1


def test_a_restart_recovers_the_structures_as_of_the_stored_offset_before_streaming() -> None:
    history, offsets = MemorySchemaHistory(), MemoryOffsetStore()
    _engine(history, offsets).run()

    restarted = _engine(history, offsets)
    restarted.run()

    connector = restarted.connector
    assert isinstance(connector, HistorizedConnector)
    assert [change.ddl for change in connector.recovered] == [CREATE.ddl]
    assert connector.recovered_at is not None and connector.recovered_at.get("pos") == 2


def test_stored_offsets_without_history_stop_with_the_way_to_rebuild_it() -> None:
    offsets = MemoryOffsetStore(Offset({"pos": 2}))
    engine = _engine(MemorySchemaHistory(), offsets)

    with pytest.raises(FatalError, match=r"snapshot.mode=recovery"):
        engine.run()


def test_debezium_1x_history_names_still_configure_the_history() -> None:
    properties = parse_properties(
        {"topic.prefix": "shop", "database.history.kafka.topic": "shop-history"},
        MemoryConnectorProperties,
    )
    assert properties.schema_history_internal_kafka_topic == "shop-history"
    assert properties.history_store == "kafka"
