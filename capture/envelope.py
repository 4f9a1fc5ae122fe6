"""Debezium's event contract: keys, envelopes, transaction and heartbeat records as JSON bytes.

Per table, everything that does not change per event is computed once in
:class:`TableSerializer`: the key and envelope schemas (already encoded JSON), field names,
the column projection. Per event only the payload is encoded with orjson and spliced into the
prebuilt ``{"schema":…,"payload":…}`` frame, which is what Kafka Connect's JsonConverter with
``schemas.enable=true`` reads. With schemas disabled the payload alone is written.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from cdcflow.capture.java_order import hashmap_order
from cdcflow.capture.spi import Column, ConnectSchema, Op, Record, RowChange, TableSchema
from cdcflow.capture.topics import TopicNames

#: Debezium 3.x writes version 2 of the change event envelope schema.
ENVELOPE_VERSION = 2

TRANSACTION_BLOCK: ConnectSchema = {
    "type": "struct",
    "optional": True,
    "name": "event.block",
    "version": 1,
    "field": "transaction",
    "fields": [
        {"type": "string", "optional": False, "field": "id"},
        {"type": "int64", "optional": False, "field": "total_order"},
        {"type": "int64", "optional": False, "field": "data_collection_order"},
    ],
}


def _field(name: str, schema: Mapping[str, Any]) -> ConnectSchema:
    return {**schema, "field": name}


def _int64(name: str, *, optional: bool = True) -> ConnectSchema:
    return {"type": "int64", "optional": optional, "field": name}


def frame(schema: Mapping[str, Any] | None) -> tuple[bytes, bytes]:
    """The bytes before and after a payload: the schema frame, or nothing when schemaless."""
    if schema is None:
        return b"", b""
    return b'{"schema":' + orjson.dumps(schema) + b',"payload":', b"}"


Headers = tuple[tuple[str, bytes], ...]
#: Makes the next ``transaction`` block of an event (each call counts one event).
BlockMaker = Callable[[], dict[str, Any]]


@dataclass(frozen=True)
class Framing:
    """Connector-wide settings every serializer shares.

    ``context_headers`` are Debezium 3.x's ``__debezium.context.*`` headers
    (``extended.headers.enabled``), put on every data change record.
    """

    topics: TopicNames
    source_schema: ConnectSchema
    key_schemas: bool = True
    value_schemas: bool = True
    context_headers: Headers = ()


def _next_block(transaction: BlockMaker | None) -> dict[str, Any] | None:
    """The next event's ``transaction`` block, or None outside transaction metadata."""
    return transaction() if transaction is not None else None


def context_headers(*, logical_name: str, connector_name: str, run_id: str) -> Headers:
    """The ``__debezium.context.*`` headers of one connector run (one task: id 0)."""
    return (
        ("__debezium.context.connectorLogicalName", logical_name.encode()),
        ("__debezium.context.taskId", b"0"),
        ("__debezium.context.connectorName", connector_name.encode()),
        ("__debezium.context.runId", run_id.encode()),
    )


def _value_schema(column: Column) -> ConnectSchema:
    """A column's field schema in the event value (a mapped key column's differs)."""
    return column.value_schema if column.value_schema is not None else column.schema


class TableSerializer:
    """Turns the row changes of one table into Kafka records.

    Keys are built from the row's own values; the event value applies the value maps of key
    columns that have a column mapper, as Debezium maps only their value field.
    """

    def __init__(
        self, table: TableSchema, *, framing: Framing, value_columns: Sequence[str]
    ) -> None:
        self.table = table
        self.topic = framing.topics.data(table.id)
        names = [column.name for column in table.columns]
        self._value_indexes = tuple(names.index(name) for name in value_columns)
        self._project = self._value_indexes != tuple(range(len(names)))
        self._value_names = tuple(value_columns)
        self._key_indexes = table.key_indexes()
        self._key_names = table.key_columns
        by_name = {column.name: column for column in table.columns}
        #: Key columns with a column mapper: their value field is mapped, their key is not.
        self._value_maps = tuple(
            (name, value_map)
            for name in value_columns
            if (value_map := by_name[name].value_map) is not None
        )
        key_schema, value_schema = self._schemas(framing, value_columns)
        self._headers = framing.context_headers
        self._key_head, self._key_tail = frame(key_schema if framing.key_schemas else None)
        self._value_head, self._value_tail = frame(value_schema if framing.value_schemas else None)
        #: The last source block seen and, once a second row shares it, its JSON.
        self._last_source: dict[str, Any] | None = None
        self._source_json: orjson.Fragment | None = None

    def _schemas(
        self, framing: Framing, value_columns: Sequence[str]
    ) -> tuple[ConnectSchema, ConnectSchema]:
        by_name = {column.name: column for column in self.table.columns}
        topics, table_id = framing.topics, self.table.id
        key_schema = {
            "type": "struct",
            "optional": False,
            "name": topics.schema_name(table_id, "Key"),
            "fields": [_field(name, by_name[name].schema) for name in self._key_names],
        }
        row = {
            "type": "struct",
            "optional": True,
            "name": topics.schema_name(table_id, "Value"),
            "fields": [_field(name, _value_schema(by_name[name])) for name in value_columns],
        }
        fields = [
            {**row, "field": "before"},
            {**row, "field": "after"},
            _field("source", framing.source_schema),
            TRANSACTION_BLOCK,
            {"type": "string", "optional": False, "field": "op"},
            _int64("ts_ms"),
            _int64("ts_us"),
            _int64("ts_ns"),
        ]
        envelope = {
            "type": "struct",
            "optional": False,
            "name": topics.schema_name(table_id, "Envelope"),
            "version": ENVELOPE_VERSION,
            "fields": fields,
        }
        return key_schema, envelope

    def key(self, row: tuple[Any, ...]) -> bytes | None:
        """The key record bytes, or None for a table without key columns."""
        if not self._key_names:
            return None
        return b"".join((self._key_head, self._key_payload(row), self._key_tail))

    def _key_payload(self, row: tuple[Any, ...]) -> bytes:
        """The key's fields as bare JSON: what the primary-key-change headers carry."""
        # Indexed loops, not zip(strict=True), here and in _image: compiled, they are C loops
        # without a tuple per column (the names and indexes are built together, equally long).
        indexes = self._key_indexes
        return orjson.dumps({name: row[indexes[i]] for i, name in enumerate(self._key_names)})

    def _image(self, row: tuple[Any, ...] | None) -> dict[str, Any] | None:
        if row is None:
            return None
        if self._project:
            indexes = self._value_indexes
            image = {name: row[indexes[i]] for i, name in enumerate(self._value_names)}
        else:
            image = {name: row[i] for i, name in enumerate(self._value_names)}
        for name, value_map in self._value_maps:
            image[name] = value_map(image[name])
        return image

    def value(
        self,
        change: RowChange,
        *,
        op: Op | None = None,
        transaction: dict[str, Any] | None = None,
    ) -> bytes:
        """The envelope bytes for ``change`` (``op`` overrides for primary-key-change splits)."""
        now_ns = time.time_ns()
        payload = {
            "before": self._image(change.before) if op is not Op.CREATE else None,
            "after": self._image(change.after) if op is not Op.DELETE else None,
            "source": self._source(change.source),
            "transaction": transaction,
            "op": op or change.op,  # orjson writes a StrEnum member as its value
            "ts_ms": now_ns // 1_000_000,
            "ts_us": now_ns // 1_000,
            "ts_ns": now_ns,
        }
        return b"".join((self._value_head, orjson.dumps(payload), self._value_tail))

    def _source(self, source: dict[str, Any]) -> dict[str, Any] | orjson.Fragment:
        """``source``, serialised once while consecutive rows share the block (a snapshot's
        rows of a table do; a streamed row has its own, and costs one identity test)."""
        if source is not self._last_source:
            self._last_source, self._source_json = source, None
            return source
        if self._source_json is None:
            self._source_json = orjson.Fragment(orjson.dumps(source))
        return self._source_json

    def records(
        self,
        change: RowChange,
        *,
        tombstones: bool,
        transaction: BlockMaker | None = None,
    ) -> list[Record]:
        """The records for one change: deletes get a tombstone, key changes become d + c."""
        op, headers = change.op, self._headers
        if op is Op.DELETE:
            key = self.key(change.before or ())
            value = self.value(change, transaction=_next_block(transaction))
            out = [Record(self.topic, key, value, headers)]
            if tombstones:
                out.append(Record(self.topic, key, None, headers))
            return out
        after = change.after or ()
        key = self.key(after)
        if op is Op.UPDATE and change.before is not None and self._key_names:
            old_key = self.key(change.before)
            if old_key != key and self._key_present(change.before):
                return self._key_change(change, old_key, key, tombstones, transaction)
        value = self.value(change, transaction=_next_block(transaction))
        return [Record(self.topic, key, value, headers)]

    def _key_present(self, before: Sequence[Any]) -> bool:
        return all(before[index] is not None for index in self._key_indexes)

    def _key_change(
        self,
        change: RowChange,
        old_key: bytes | None,
        new_key: bytes | None,
        tombstones: bool,
        transaction: BlockMaker | None,
    ) -> list[Record]:
        """Debezium's primary-key update: delete(old) + tombstone + create(new).

        The delete and its tombstone carry ``__debezium.newkey``, the create
        ``__debezium.oldkey``: the other key's fields as bare JSON. The delete and the create
        are two events of the transaction.
        """
        assert change.before is not None and change.after is not None
        new_key_header = (("__debezium.newkey", self._key_payload(change.after)), *self._headers)
        old_key_header = (("__debezium.oldkey", self._key_payload(change.before)), *self._headers)
        delete = self.value(change, op=Op.DELETE, transaction=_next_block(transaction))
        out = [Record(self.topic, old_key, delete, new_key_header)]
        if tombstones:
            out.append(Record(self.topic, old_key, None, new_key_header))
        create = self.value(change, op=Op.CREATE, transaction=_next_block(transaction))
        out.append(Record(self.topic, new_key, create, old_key_header))
        return out

    def truncate(self, source: dict[str, Any], transaction: dict[str, Any] | None) -> Record:
        """A truncate event: null key, no before/after."""
        now_ns = time.time_ns()
        payload = {
            "before": None,
            "after": None,
            "source": source,
            "transaction": transaction,
            "op": Op.TRUNCATE,
            "ts_ms": now_ns // 1_000_000,
            "ts_us": now_ns // 1_000,
            "ts_ns": now_ns,
        }
        value = self._value_head + orjson.dumps(payload) + self._value_tail
        return Record(self.topic, None, value, self._headers)


class SideRecords:
    """Transaction metadata and heartbeat records, named and shaped as Debezium's."""

    def __init__(self, framing: Framing) -> None:
        self._topics = framing.topics
        tx_key = {
            "type": "struct",
            "optional": False,
            "name": "io.debezium.connector.common.TransactionMetadataKey",
            "version": 1,
            "fields": [{"type": "string", "optional": False, "field": "id"}],
        }
        tx_value = {
            "type": "struct",
            "optional": False,
            "name": "io.debezium.connector.common.TransactionMetadataValue",
            "version": 1,
            "fields": [
                {"type": "string", "optional": False, "field": "status"},
                {"type": "string", "optional": False, "field": "id"},
                {"type": "int64", "optional": True, "field": "event_count"},
                {
                    "type": "array",
                    "optional": True,
                    "field": "data_collections",
                    "items": {
                        "type": "struct",
                        "optional": True,
                        "name": "event.collection",
                        "version": 1,
                        "fields": [
                            {"type": "string", "optional": False, "field": "data_collection"},
                            {"type": "int64", "optional": False, "field": "event_count"},
                        ],
                    },
                },
                _int64("ts_ms", optional=False),
            ],
        }
        beat_key = {
            "type": "struct",
            "optional": False,
            "name": "io.debezium.connector.common.ServerNameKey",
            "version": 1,
            "fields": [{"type": "string", "optional": False, "field": "serverName"}],
        }
        beat_value = {
            "type": "struct",
            "optional": False,
            "name": "io.debezium.connector.common.Heartbeat",
            "version": 1,
            "fields": [_int64("ts_ms", optional=False)],
        }
        self._tx_key = frame(tx_key if framing.key_schemas else None)
        self._tx_value = frame(tx_value if framing.value_schemas else None)
        self._beat_key = frame(beat_key if framing.key_schemas else None)
        self._beat_value = frame(beat_value if framing.value_schemas else None)

    def transaction(
        self, *, status: str, tx_id: str, counts: Mapping[str, int] | None, ts_ms: int
    ) -> Record:
        """A BEGIN (``counts`` None) or END record for the transaction metadata topic."""
        payload: dict[str, Any] = {
            "status": status,
            "id": tx_id,
            "event_count": sum(counts.values()) if counts is not None else None,
            "data_collections": _data_collections(counts) if counts is not None else None,
            "ts_ms": ts_ms,
        }
        key = self._tx_key[0] + orjson.dumps({"id": tx_id}) + self._tx_key[1]
        value = self._tx_value[0] + orjson.dumps(payload) + self._tx_value[1]
        return Record(self._topics.transaction, key, value)

    def heartbeat(self) -> Record:
        """A heartbeat record keyed by the logical server name."""
        key = (
            self._beat_key[0]
            + orjson.dumps({"serverName": self._topics.prefix})
            + self._beat_key[1]
        )
        value = (
            self._beat_value[0]
            + orjson.dumps({"ts_ms": time.time_ns() // 1_000_000})
            + self._beat_value[1]
        )
        return Record(self._topics.heartbeat, key, value)


def _data_collections(counts: Mapping[str, int]) -> list[dict[str, Any]]:
    """Per-table counts in the order Debezium's HashMap of them iterates."""
    names = list(counts)
    return [
        {"data_collection": names[i], "event_count": counts[names[i]]} for i in hashmap_order(names)
    ]
