"""Records follow Debezium's event contract byte for byte where consumers look."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from cdcflow.capture.envelope import Framing, SideRecords, TableSerializer, context_headers
from cdcflow.capture.spi import Column, Op, RowChange, TableId, TableSchema
from cdcflow.capture.topics import TopicNames

TOPICS = TopicNames(
    prefix="shop",
    delimiter=".",
    transaction_suffix="transaction",
    heartbeat_prefix="__debezium-heartbeat",
)
SOURCE_SCHEMA = {"type": "struct", "optional": False, "name": "test.Source", "fields": []}
TABLE = TableSchema(
    TableId("public", "orders"),
    (
        Column("id", "int4", {"type": "int32", "optional": False}, int, optional=False),
        Column("note", "text", {"type": "string", "optional": True}, str),
        Column("secret", "text", {"type": "string", "optional": True}, str),
    ),
    ("id",),
)


def _serializer(
    *, schemas: bool = True, columns: tuple[str, ...] = ("id", "note", "secret")
) -> TableSerializer:
    framing = Framing(
        topics=TOPICS, source_schema=SOURCE_SCHEMA, key_schemas=schemas, value_schemas=schemas
    )
    return TableSerializer(TABLE, framing=framing, value_columns=columns)


def _change(op: Op, before: tuple[Any, ...] | None, after: tuple[Any, ...] | None) -> RowChange:
    return RowChange(TABLE, op, before, after, {"ts_ms": 1})


def test_value_is_exactly_schema_and_payload_with_an_envelope_schema_name() -> None:
    [record] = _serializer().records(_change(Op.CREATE, None, (1, "n", "s")), tombstones=True)
    value = orjson.loads(record.value or b"")
    assert set(value) == {"schema", "payload"}
    assert value["schema"]["name"] == "shop.public.orders.Envelope"
    assert [f["name"] for f in value["schema"]["fields"][:2]] == ["shop.public.orders.Value"] * 2
    assert value["payload"]["after"] == {"id": 1, "note": "n", "secret": "s"}
    assert value["payload"]["op"] == "c"
    assert record.topic == "shop.public.orders"


def test_key_is_the_primary_key_struct() -> None:
    [record] = _serializer().records(_change(Op.CREATE, None, (1, "n", "s")), tombstones=True)
    key = orjson.loads(record.key or b"")
    assert key["schema"]["name"] == "shop.public.orders.Key"
    assert key["payload"] == {"id": 1}


def test_schemaless_mode_writes_the_bare_payload() -> None:
    [record] = _serializer(schemas=False).records(
        _change(Op.READ, None, (1, None, None)), tombstones=True
    )
    assert orjson.loads(record.key or b"") == {"id": 1}
    assert orjson.loads(record.value or b"")["op"] == "r"


def test_delete_is_followed_by_a_tombstone_unless_disabled() -> None:
    change = _change(Op.DELETE, (1, None, None), None)
    with_tombstone = _serializer().records(change, tombstones=True)
    without = _serializer().records(change, tombstones=False)
    assert [r.value is None for r in with_tombstone] == [False, True]
    assert with_tombstone[0].key == with_tombstone[1].key
    assert len(without) == 1


@pytest.mark.parametrize("schemas", [True, False])
def test_key_change_becomes_delete_tombstone_create_with_bare_key_headers(schemas: bool) -> None:
    change = _change(Op.UPDATE, (1, None, None), (2, "n", None))
    delete, tombstone, create = _serializer(schemas=schemas).records(change, tombstones=True)
    payload = (lambda raw: orjson.loads(raw or b"")["payload"]) if schemas else orjson.loads
    assert payload(delete.value)["op"] == "d"
    assert payload(delete.value)["after"] is None
    assert tombstone.value is None
    assert payload(create.value)["op"] == "c"
    assert payload(create.value)["before"] is None
    assert dict(delete.headers)["__debezium.newkey"] == b'{"id":2}'
    assert dict(tombstone.headers)["__debezium.newkey"] == b'{"id":2}'
    assert dict(create.headers)["__debezium.oldkey"] == b'{"id":1}'


def test_key_change_is_two_events_of_its_transaction() -> None:
    counter = iter(range(1, 10))
    change = _change(Op.UPDATE, (1, None, None), (2, "n", None))
    delete, _, create = _serializer(schemas=False).records(
        change, tombstones=True, transaction=lambda: {"total_order": next(counter)}
    )
    assert orjson.loads(delete.value or b"")["transaction"] == {"total_order": 1}
    assert orjson.loads(create.value or b"")["transaction"] == {"total_order": 2}


def test_context_headers_go_on_every_record_of_a_change() -> None:
    headers = context_headers(logical_name="shop", connector_name="orders", run_id="r1")
    framing = Framing(topics=TOPICS, source_schema=SOURCE_SCHEMA, context_headers=headers)
    serializer = TableSerializer(TABLE, framing=framing, value_columns=("id", "note", "secret"))
    records = serializer.records(_change(Op.DELETE, (1, None, None), None), tombstones=True)
    for record in records:
        assert dict(record.headers) == {
            "__debezium.context.connectorLogicalName": b"shop",
            "__debezium.context.taskId": b"0",
            "__debezium.context.connectorName": b"orders",
            "__debezium.context.runId": b"r1",
        }


def test_excluded_columns_leave_values_and_schema() -> None:
    [record] = _serializer(columns=("id", "note")).records(
        _change(Op.CREATE, None, (1, "n", "s")), tombstones=True
    )
    value = orjson.loads(record.value or b"")
    assert value["payload"]["after"] == {"id": 1, "note": "n"}
    assert [f["field"] for f in value["schema"]["fields"][1]["fields"]] == ["id", "note"]


def test_transaction_block_is_carried_in_the_payload() -> None:
    block = {"id": "7:100", "total_order": 2, "data_collection_order": 1}
    [record] = _serializer().records(
        _change(Op.CREATE, None, (1, None, None)), tombstones=True, transaction=lambda: block
    )
    assert orjson.loads(record.value or b"")["payload"]["transaction"] == block


def test_transaction_end_counts_events_per_collection() -> None:
    side = SideRecords(
        Framing(topics=TOPICS, source_schema=SOURCE_SCHEMA, value_schemas=False, key_schemas=False)
    )
    record = side.transaction(
        status="END", tx_id="7:100", counts={"public.a": 2, "public.b": 1}, ts_ms=5
    )
    assert record.topic == "shop.transaction"
    assert orjson.loads(record.value or b"") == {
        "status": "END",
        "id": "7:100",
        "event_count": 3,
        "data_collections": [
            {"data_collection": "public.a", "event_count": 2},
            {"data_collection": "public.b", "event_count": 1},
        ],
        "ts_ms": 5,
    }


def test_heartbeat_goes_to_the_prefixed_topic_keyed_by_server_name() -> None:
    side = SideRecords(
        Framing(topics=TOPICS, source_schema=SOURCE_SCHEMA, value_schemas=False, key_schemas=False)
    )
    record = side.heartbeat()
    assert record.topic == "__debezium-heartbeat.shop"
    assert orjson.loads(record.key or b"") == {"serverName": "shop"}


def _hashed(value: Any) -> Any:
    return None if value is None else f"hash({value})"


#: ``code`` is the key and has a column mapper: Debezium maps its value field only.
MAPPED_KEY = TableSchema(
    TableId("public", "codes"),
    (
        Column(
            "code",
            "varchar",
            {"type": "string", "optional": False},
            str,
            optional=False,
            value_schema={"type": "string", "optional": False, "parameters": {"masked": "true"}},
            value_map=_hashed,
        ),
        Column("note", "text", {"type": "string", "optional": True}, str),
    ),
    ("code",),
)


def _mapped_key_records(change: RowChange) -> list[Any]:
    framing = Framing(topics=TOPICS, source_schema=SOURCE_SCHEMA)
    serializer = TableSerializer(MAPPED_KEY, framing=framing, value_columns=("code", "note"))
    return serializer.records(change, tombstones=True)


def test_a_mapped_key_column_keeps_its_value_in_the_key_and_is_mapped_in_the_value() -> None:
    change = RowChange(MAPPED_KEY, Op.CREATE, None, ("a1", "n"), {"ts_ms": 1})
    [record] = _mapped_key_records(change)
    key, value = orjson.loads(record.key or b""), orjson.loads(record.value or b"")
    assert key["payload"] == {"code": "a1"}
    assert key["schema"]["fields"] == [{"type": "string", "optional": False, "field": "code"}]
    assert value["payload"]["after"] == {"code": "hash(a1)", "note": "n"}
    after = next(f for f in value["schema"]["fields"] if f["field"] == "after")
    assert after["fields"][0]["parameters"] == {"masked": "true"}


def test_a_key_change_of_a_mapped_key_carries_raw_keys_and_mapped_values() -> None:
    change = RowChange(MAPPED_KEY, Op.UPDATE, ("a1", "n"), ("b2", "n"), {"ts_ms": 1})
    delete, tombstone, create = _mapped_key_records(change)
    assert orjson.loads(delete.key or b"")["payload"] == {"code": "a1"}
    assert orjson.loads(delete.value or b"")["payload"]["before"]["code"] == "hash(a1)"
    assert dict(delete.headers)["__debezium.newkey"] == b'{"code":"b2"}'
    assert tombstone.value is None
    assert orjson.loads(create.key or b"")["payload"] == {"code": "b2"}
    assert orjson.loads(create.value or b"")["payload"]["after"]["code"] == "hash(b2)"
    assert dict(create.headers)["__debezium.oldkey"] == b'{"code":"a1"}'


def test_rows_sharing_a_source_block_carry_it_whole_and_a_new_block_replaces_it() -> None:
    """A snapshot's rows of a table share one source dict (serialised once); the next block
    must not be taken for it."""
    serializer = _serializer(schemas=False)
    shared = {"ts_ms": 1, "snapshot": "true", "table": "orders", "lsn": 7}
    sources = [shared, shared, shared, {**shared, "snapshot": "last"}, shared]
    payloads = [
        orjson.loads(serializer.value(RowChange(TABLE, Op.READ, None, (n, "n", "s"), source)))
        for n, source in enumerate(sources)
    ]
    assert [payload["source"] for payload in payloads] == sources
    assert [payload["after"]["id"] for payload in payloads] == [0, 1, 2, 3, 4]
