"""The schema-change topic's records: Debezium's ``SchemaChangeKey``/``SchemaChangeValue``.

Historized connectors (MySQL, MariaDB, Db2) with ``include.schema.changes`` publish every DDL
to the topic named ``topic.prefix``, keyed by the database. The value holds the connector's
``source`` block and the table changes as ``ConnectTableChangeSerializer`` builds them, with
the Connect schemas of ``SchemaFactory`` (``io.debezium.connector.schema.Change``, ``Table``,
``Column``). Schemas are framed as in :mod:`cdcflow.capture.envelope`, or left out.
"""

from __future__ import annotations

import time
from typing import Any

import orjson

from cdcflow.capture.envelope import Headers, frame
from cdcflow.capture.history import quoted_id
from cdcflow.capture.spi import (
    ColumnStructure,
    ConnectSchema,
    Record,
    SchemaChange,
    TableChange,
    TableChangeType,
    TableStructure,
)

SCHEMA_NAMESPACE = "io.debezium.connector.schema"


def _scalar(kind: str, name: str, *, optional: bool) -> ConnectSchema:
    return {"type": kind, "optional": optional, "field": name}


def _strings(name: str, *, optional: bool) -> ConnectSchema:
    return {
        "type": "array",
        "items": {"type": "string", "optional": False},
        "optional": optional,
        "field": name,
    }


COLUMN_SCHEMA: ConnectSchema = {
    "type": "struct",
    "optional": False,
    "name": f"{SCHEMA_NAMESPACE}.Column",
    "version": 1,
    "fields": [
        _scalar("string", "name", optional=False),
        _scalar("int32", "jdbcType", optional=False),
        _scalar("int32", "nativeType", optional=True),
        _scalar("string", "typeName", optional=False),
        _scalar("string", "typeExpression", optional=True),
        _scalar("string", "charsetName", optional=True),
        _scalar("int32", "length", optional=True),
        _scalar("int32", "scale", optional=True),
        _scalar("int32", "position", optional=False),
        _scalar("boolean", "optional", optional=True),
        _scalar("boolean", "autoIncremented", optional=True),
        _scalar("boolean", "generated", optional=True),
        _scalar("string", "comment", optional=True),
        _scalar("string", "defaultValueExpression", optional=True),
        _strings("enumValues", optional=True),
    ],
}
TABLE_SCHEMA: ConnectSchema = {
    "type": "struct",
    "optional": True,
    "name": f"{SCHEMA_NAMESPACE}.Table",
    "version": 1,
    "fields": [
        _scalar("string", "defaultCharsetName", optional=True),
        _strings("primaryKeyColumnNames", optional=True),
        {"type": "array", "items": COLUMN_SCHEMA, "optional": False, "field": "columns"},
        _scalar("string", "comment", optional=True),
    ],
}
CHANGE_SCHEMA: ConnectSchema = {
    "type": "struct",
    "optional": False,
    "name": f"{SCHEMA_NAMESPACE}.Change",
    "version": 1,
    "fields": [
        _scalar("string", "type", optional=False),
        _scalar("string", "id", optional=False),
        {**TABLE_SCHEMA, "field": "table"},
    ],
}


def key_schema(connector: str) -> ConnectSchema:
    """``schemaHistoryConnectorKeySchema``: the database name."""
    return {
        "type": "struct",
        "optional": False,
        "name": f"io.debezium.connector.{connector}.SchemaChangeKey",
        "version": 1,
        "fields": [_scalar("string", "databaseName", optional=False)],
    }


def value_schema(connector: str, source_schema: ConnectSchema) -> ConnectSchema:
    """``schemaHistoryConnectorValueSchema``: source, time, names, DDL and table changes."""
    return {
        "type": "struct",
        "optional": False,
        "name": f"io.debezium.connector.{connector}.SchemaChangeValue",
        "version": 1,
        "fields": [
            {**source_schema, "field": "source"},
            _scalar("int64", "ts_ms", optional=False),
            _scalar("string", "databaseName", optional=True),
            _scalar("string", "schemaName", optional=True),
            _scalar("string", "ddl", optional=True),
            {"type": "array", "items": CHANGE_SCHEMA, "optional": False, "field": "tableChanges"},
        ],
    }


class SchemaChangeRecords:
    """Builds the schema-change topic's record of a :class:`SchemaChange`.

    ``connector`` is Debezium's connector name in the schema names (``mysql``, ``mariadb``,
    ``db2``); ``key_schemas``/``value_schemas`` are JsonConverter's ``schemas.enable``;
    ``headers`` go on every record (Debezium's ``__debezium.context.*`` headers).
    """

    def __init__(
        self,
        *,
        topic: str,
        connector: str,
        source_schema: ConnectSchema,
        key_schemas: bool,
        value_schemas: bool,
        headers: Headers = (),
    ) -> None:
        self.topic = topic
        self._headers = headers
        self._key_head, self._key_tail = frame(key_schema(connector) if key_schemas else None)
        self._value_head, self._value_tail = frame(
            value_schema(connector, source_schema) if value_schemas else None
        )

    def record(self, change: SchemaChange) -> Record:
        """The key (the database) and the value of ``change``, timestamped now."""
        key = self._key_head + orjson.dumps({"databaseName": change.database}) + self._key_tail
        value = self._value_head + orjson.dumps(self.payload(change)) + self._value_tail
        return Record(self.topic, key, value, self._headers)

    @staticmethod
    def payload(change: SchemaChange, *, ts_ms: int | None = None) -> dict[str, Any]:
        """The value's payload; an empty ``ddl`` stands for Java's null (an empty database
        name stays: Debezium writes ``""`` for server-wide statements such as ``SET``)."""
        return {
            "source": change.source,
            "ts_ms": time.time_ns() // 1_000_000 if ts_ms is None else ts_ms,
            "databaseName": change.database,
            "schemaName": change.schema,
            "ddl": change.ddl or None,
            "tableChanges": [_change(item, change) for item in change.changes],
        }


def _change(item: TableChange, change: SchemaChange) -> dict[str, Any]:
    """``ConnectTableChangeSerializer.toStruct``: a drop has no table; no ``previousId``."""
    return {
        "type": item.type.value,
        "id": quoted_id(item.table.id, database=change.database, schema=change.schema),
        "table": None if item.type is TableChangeType.DROP else _table(item.table),
    }


def _table(table: TableStructure) -> dict[str, Any]:
    return {
        "defaultCharsetName": table.default_charset_name,
        "primaryKeyColumnNames": list(table.primary_key),
        "columns": [_column(column) for column in table.columns],
        "comment": table.comment,
    }


def _column(column: ColumnStructure) -> dict[str, Any]:
    return {
        "name": column.name,
        "jdbcType": column.jdbc_type,
        "nativeType": column.native_type,
        "typeName": column.type_name,
        "typeExpression": column.type_expression,
        "charsetName": column.charset_name,
        "length": column.length,
        "scale": column.scale,
        "position": column.position,
        "optional": column.optional,
        "autoIncremented": column.auto_incremented,
        "generated": column.generated,
        "comment": column.comment,
        "defaultValueExpression": column.default_value_expression,
        "enumValues": list(column.enum_values) if column.enum_values else None,
    }
