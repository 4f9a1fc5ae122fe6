"""Schema history records are Debezium's documents field by field; the stores keep them in
order and durably; schema-change records carry Debezium's SchemaChangeKey/Value.

The expected documents below are written by hand from Debezium's ``HistoryRecord``,
``JsonTableChangeSerializer``, ``ConnectTableChangeSerializer`` and ``SchemaFactory``, not
from this code's output.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import orjson
import pytest

from cdcflow.capture.errors import FatalError
from cdcflow.capture.history import (
    FileSchemaHistory,
    MemorySchemaHistory,
    change_from_document,
    history_document,
    parse_quoted_id,
    quoted_id,
)
from cdcflow.capture.kafka.history import RETENTION_MS_MIN, topic_problems
from cdcflow.capture.schema_changes import SchemaChangeRecords
from cdcflow.capture.spi import (
    ColumnStructure,
    Offset,
    SchemaChange,
    TableChange,
    TableChangeType,
    TableId,
    TableStructure,
)

CUSTOMERS = TableId("inventory", "customers")
DDL = (
    "CREATE TABLE customers (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, first_name "
    "VARCHAR(255) NOT NULL, email VARCHAR(255) DEFAULT 'none' COMMENT 'contact', "
    "status ENUM('new','old'), price DECIMAL(10,2)) COMMENT 'people'"
)
COLUMNS = (
    ColumnStructure("id", 4, "INT", 1, optional=False, type_expression="INT",
                    auto_incremented=True, generated=True),
    ColumnStructure("first_name", 12, "VARCHAR", 2, optional=False, type_expression="VARCHAR",
                    charset_name="utf8mb4", length=255),
    ColumnStructure("email", 12, "VARCHAR", 3, type_expression="VARCHAR",
                    charset_name="utf8mb4", length=255, comment="contact",
                    default_value_expression="none"),
    ColumnStructure("status", 1, "ENUM", 4, type_expression="ENUM", charset_name="utf8mb4",
                    length=1, enum_values=("'new'", "'old'")),
    ColumnStructure("price", 3, "DECIMAL", 5, type_expression="DECIMAL", native_type=246,
                    length=10, scale=2),
)  # fmt: skip
CREATE = SchemaChange(
    database="inventory",
    schema=None,
    ddl=DDL,
    changes=(
        TableChange(
            TableChangeType.CREATE,
            TableStructure(CUSTOMERS, COLUMNS, ("id",), "utf8mb4", comment="people"),
        ),
    ),
    source={"version": "3.7.0", "connector": "mysql", "db": "inventory"},
    offset=Offset({"file": "mysql-bin.000003", "pos": 154, "snapshot": True}),
)

# HistoryRecord(source, position, databaseName, schemaName=null, ddl, changes, timestamp):
# source, position, ts_ms, then only the non-null names; per change type, id, [previousId],
# table and then the table's comment *beside* it; per column the optional fields in order.
EXPECTED_DOCUMENT: dict[str, Any] = {
    "source": {"server": "dbserver1"},
    "position": {"file": "mysql-bin.000003", "pos": 154, "snapshot": True},
    "ts_ms": 1_700_000_000_000,
    "databaseName": "inventory",
    "ddl": DDL,
    "tableChanges": [
        {
            "type": "CREATE",
            "id": '"inventory"."customers"',
            "table": {
                "defaultCharsetName": "utf8mb4",
                "primaryKeyColumnNames": ["id"],
                "columns": [
                    {
                        "name": "id",
                        "jdbcType": 4,
                        "typeName": "INT",
                        "typeExpression": "INT",
                        "charsetName": None,
                        "position": 1,
                        "optional": False,
                        "autoIncremented": True,
                        "generated": True,
                        "comment": None,
                        "hasDefaultValue": False,
                        "enumValues": [],
                    },
                    {
                        "name": "first_name",
                        "jdbcType": 12,
                        "typeName": "VARCHAR",
                        "typeExpression": "VARCHAR",
                        "charsetName": "utf8mb4",
                        "length": 255,
                        "position": 2,
                        "optional": False,
                        "autoIncremented": False,
                        "generated": False,
                        "comment": None,
                        "hasDefaultValue": False,
                        "enumValues": [],
                    },
                    {
                        "name": "email",
                        "jdbcType": 12,
                        "typeName": "VARCHAR",
                        "typeExpression": "VARCHAR",
                        "charsetName": "utf8mb4",
                        "length": 255,
                        "position": 3,
                        "optional": True,
                        "autoIncremented": False,
                        "generated": False,
                        "comment": "contact",
                        "hasDefaultValue": True,
                        "defaultValueExpression": "none",
                        "enumValues": [],
                    },
                    {
                        "name": "status",
                        "jdbcType": 1,
                        "typeName": "ENUM",
                        "typeExpression": "ENUM",
                        "charsetName": "utf8mb4",
                        "length": 1,
                        "position": 4,
                        "optional": True,
                        "autoIncremented": False,
                        "generated": False,
                        "comment": None,
                        "hasDefaultValue": False,
                        "enumValues": ["'new'", "'old'"],
                    },
                    {
                        "name": "price",
                        "jdbcType": 3,
                        "nativeType": 246,
                        "typeName": "DECIMAL",
                        "typeExpression": "DECIMAL",
                        "charsetName": None,
                        "length": 10,
                        "scale": 2,
                        "position": 5,
                        "optional": True,
                        "autoIncremented": False,
                        "generated": False,
                        "comment": None,
                        "hasDefaultValue": False,
                        "enumValues": [],
                    },
                ],
                "attributes": [],
            },
            "comment": "people",
        }
    ],
}


def _document(change: SchemaChange = CREATE) -> dict[str, Any]:
    return history_document(change, server="dbserver1", ts_ms=1_700_000_000_000)


def _without_source(change: SchemaChange) -> SchemaChange:
    return SchemaChange(
        change.database, change.schema, change.ddl, change.changes, {}, change.offset
    )


# --------------------------------------------------------------------------------------------
# Documents


def test_a_mysql_create_is_debeziums_history_record_field_by_field_and_in_order() -> None:
    document = _document()
    assert document == EXPECTED_DOCUMENT
    # Same keys in the same order at every level: compare the encoded bytes.
    assert orjson.dumps(document) == orjson.dumps(EXPECTED_DOCUMENT)


def test_each_column_document_has_its_fields_in_the_serializers_order() -> None:
    columns = _document()["tableChanges"][0]["table"]["columns"]
    assert list(columns[4]) == [
        "name", "jdbcType", "nativeType", "typeName", "typeExpression", "charsetName", "length",
        "scale", "position", "optional", "autoIncremented", "generated", "comment",
        "hasDefaultValue", "enumValues",
    ]  # fmt: skip
    assert list(columns[2])[-3:] == ["hasDefaultValue", "defaultValueExpression", "enumValues"]


def test_a_drop_carries_only_type_and_id_and_a_rename_its_previous_id() -> None:
    structure = TableStructure(CUSTOMERS, COLUMNS[:1], ("id",), comment="people")
    change = SchemaChange(
        "inventory",
        None,
        "RENAME TABLE clients TO customers; DROP TABLE customers",
        (
            TableChange(TableChangeType.ALTER, structure, TableId("inventory", "clients")),
            TableChange(TableChangeType.DROP, structure),
        ),
        {},
        Offset({"pos": 9}),
    )
    rename, drop = _document(change)["tableChanges"]
    assert list(rename) == ["type", "id", "previousId", "table", "comment"]
    assert rename["previousId"] == '"inventory"."clients"'
    assert drop == {"type": "DROP", "id": '"inventory"."customers"'}


def test_a_change_with_a_schema_names_database_schema_and_table_as_db2_does() -> None:
    table = TableStructure(TableId("DB2INST1", "CUSTOMERS"), COLUMNS[:1])
    change = SchemaChange(
        "TESTDB", "DB2INST1", "", (TableChange(TableChangeType.CREATE, table),), {}, Offset()
    )
    document = _document(change)
    assert [key for key in document if key != "tableChanges"] == [
        "source", "position", "ts_ms", "databaseName", "schemaName",
    ]  # fmt: skip
    assert document["schemaName"] == "DB2INST1"
    assert document["tableChanges"][0]["id"] == '"TESTDB"."DB2INST1"."CUSTOMERS"'
    assert "ddl" not in document  # Java's null DDL is left out


@pytest.mark.parametrize(
    ("table", "schema", "quoted"),
    [
        (TableId("inventory", "customers"), None, '"inventory"."customers"'),
        (TableId("inv", 'my"table'), None, '"inv"."my""table"'),
        (TableId("inv", "a.b c"), None, '"inv"."a.b c"'),
        (TableId("", "solo"), None, '"solo"'),
        (TableId("S", "T"), "S", '"DB"."S"."T"'),
    ],
)
def test_table_ids_are_quoted_as_table_id_to_double_quoted_string(
    table: TableId, schema: str | None, quoted: str
) -> None:
    assert quoted_id(table, database="DB", schema=schema) == quoted
    assert parse_quoted_id(quoted) == table


def test_ids_parse_as_debeziums_parser_reads_them() -> None:
    assert parse_quoted_id(" inventory . customers ") == CUSTOMERS
    assert parse_quoted_id('"db"."s"."t"') == TableId("s", "t")
    for bad in ('"inventory"."customers', "a..b", '"a"x', "a.b.c.d", ""):
        with pytest.raises(ValueError, match="is not a table id"):
            parse_quoted_id(bad)


def test_a_document_debezium_wrote_reads_back_including_fields_cdcflow_does_not_model() -> None:
    line = (
        '{"source":{"server":"dbserver1"},"position":{"ts_sec":1,"file":"binlog.000002",'
        '"pos":860},"ts_ms":1,"databaseName":"inventory","ddl":"ALTER TABLE t ADD c INT",'
        '"tableChanges":[{"type":"ALTER","id":"\\"inventory\\".\\"t\\"","table":{'
        '"defaultCharsetName":"latin1","primaryKeyColumnNames":[],"columns":[{"name":"c",'
        '"jdbcType":4,"typeName":"INT","typeExpression":"INT","charsetName":null,"position":1,'
        '"optional":true,"autoIncremented":false,"generated":false,"comment":null,'
        '"hasDefaultValue":false,"enumValues":[]}],"attributes":[{"name":"a","value":"b"}]},'
        '"comment":null}]}'
    )
    change = change_from_document(orjson.loads(line))
    assert change.ddl == "ALTER TABLE t ADD c INT"
    assert change.offset.to_dict() == {"ts_sec": 1, "file": "binlog.000002", "pos": 860}
    [table_change] = change.changes
    assert table_change.table == TableStructure(
        TableId("inventory", "t"),
        (ColumnStructure("c", 4, "INT", 1, type_expression="INT"),),
        (),
        "latin1",
    )


def test_a_document_that_is_no_history_record_is_refused_with_the_reason() -> None:
    with pytest.raises(ValueError, match="missing 'position'"):
        change_from_document({"source": {}})
    with pytest.raises(ValueError, match="'RENAME' is not a valid TableChangeType"):
        change_from_document({"position": {}, "tableChanges": [{"type": "RENAME", "id": "t"}]})


# A few hundred structures: every optional field present or absent, awkward names.
NAME_CHARS = 'abcXYZ_09 ."é$'


def _name(rng: random.Random) -> str:
    while True:
        name = "".join(rng.choice(NAME_CHARS) for _ in range(rng.randint(1, 8)))
        if name[0] != '"' and name[-1] != '"':  # Debezium leaves such names unquoted
            return name


def _maybe(rng: random.Random, value: Any) -> Any:
    return value if rng.random() < 0.5 else None


def _column(rng: random.Random, position: int) -> ColumnStructure:
    return ColumnStructure(
        name=_name(rng),
        jdbc_type=rng.choice([-5, 1, 3, 4, 12, 93, 2005]),
        type_name=rng.choice(["INT", "VARCHAR", "DECIMAL", "ENUM", "TIMESTAMP"]),
        position=position,
        optional=rng.random() < 0.5,
        type_expression=_maybe(rng, "VARCHAR"),
        native_type=_maybe(rng, rng.randint(0, 300)),
        charset_name=_maybe(rng, "utf8mb4"),
        length=_maybe(rng, rng.randint(0, 65535)),
        scale=_maybe(rng, rng.randint(0, 30)),
        auto_incremented=rng.random() < 0.5,
        generated=rng.random() < 0.5,
        comment=_maybe(rng, _name(rng)),
        default_value_expression=_maybe(rng, rng.choice(["0", "", "CURRENT_TIMESTAMP", "'x'"])),
        enum_values=_maybe(rng, tuple(_name(rng) for _ in range(rng.randint(1, 3)))),
    )


def _table_change(rng: random.Random) -> TableChange:
    table_id = TableId(_name(rng), _name(rng))
    kind = rng.choice(list(TableChangeType))
    if kind is TableChangeType.DROP:  # Debezium's drop keeps only the id
        return TableChange(kind, TableStructure(table_id, ()))
    columns = tuple(_column(rng, n) for n in range(1, rng.randint(0, 5) + 1))
    structure = TableStructure(
        table_id,
        columns,
        tuple(column.name for column in columns if rng.random() < 0.3),
        _maybe(rng, "latin1"),
        _maybe(rng, _name(rng)),
    )
    previous = TableId(_name(rng), _name(rng)) if kind is TableChangeType.ALTER else None
    return TableChange(kind, structure, _maybe(rng, previous))


@pytest.mark.parametrize("seed", range(200))
def test_documents_round_trip_exactly(seed: int) -> None:
    rng = random.Random(seed)
    change = SchemaChange(
        database=_name(rng),
        schema=_maybe(rng, _name(rng)),
        ddl=rng.choice(["", "CREATE TABLE t (a INT)", "ALTER TABLE `é` ADD b INT"]),
        changes=tuple(_table_change(rng) for _ in range(rng.randint(0, 3))),
        source={},
        offset=Offset({"file": "binlog.000001", "pos": rng.randint(0, 2**40), "row": None}),
    )
    text = orjson.dumps(history_document(change, server="s"))
    assert change_from_document(orjson.loads(text)) == change


# --------------------------------------------------------------------------------------------
# Stores


def _change(number: int) -> SchemaChange:
    table = TableStructure(TableId("inventory", f"t{number}"), COLUMNS[:2], ("id",))
    return SchemaChange(
        "inventory",
        None,
        f"CREATE TABLE t{number} (id INT PRIMARY KEY, first_name VARCHAR(255))",
        (TableChange(TableChangeType.CREATE, table),),
        {"ts_ms": number},
        Offset({"file": "binlog.000001", "pos": number}),
    )


def test_memory_history_returns_the_changes_in_order_without_their_source() -> None:
    history = MemorySchemaHistory()
    history.start()
    assert not history.exists()
    history.record(_change(1))
    history.record(_change(2))
    assert history.exists()
    assert list(history.changes()) == [_without_source(_change(1)), _without_source(_change(2))]


def test_file_history_creates_its_folder_and_keeps_one_document_per_line(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "folder" / "history.dat"
    history = FileSchemaHistory(path, server="dbserver1")
    history.start()
    assert path.exists()
    assert not history.exists()
    history.record(CREATE)
    history.record(_change(2))
    history.close()

    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b""
    first = orjson.loads(lines[0])
    assert orjson.dumps({**first, "ts_ms": EXPECTED_DOCUMENT["ts_ms"]}) == orjson.dumps(
        EXPECTED_DOCUMENT
    )
    assert lines[0] == orjson.dumps(first)  # compact, one line

    restarted = FileSchemaHistory(path, server="dbserver1")
    restarted.start()
    assert restarted.exists()
    assert list(restarted.changes()) == [_without_source(CREATE), _without_source(_change(2))]
    restarted.record(_change(3))
    assert [c.offset.get("pos") for c in restarted.changes()] == [154, 2, 3]


def _three_records(path: Path) -> list[bytes]:
    history = FileSchemaHistory(path, server="s")
    history.start()
    for number in range(1, 4):
        history.record(_change(number))
    return path.read_bytes().split(b"\n")[:3]


def test_a_partial_last_line_is_reported_with_file_line_and_fix(tmp_path: Path) -> None:
    path = tmp_path / "history.dat"
    lines = _three_records(path)
    path.write_bytes(lines[0] + b"\n" + lines[1] + b"\n" + lines[2][:40])  # crash mid-write

    history = FileSchemaHistory(path, server="s")
    with pytest.raises(FatalError) as caught:
        history.start()
    message = str(caught.value)
    assert f"schema history file {path} is damaged at line 3" in message
    assert f"sed -i '3d' {path}" in message
    with pytest.raises(FatalError, match="line 3"):
        list(history.changes())


def test_a_damaged_line_inside_the_file_is_never_skipped(tmp_path: Path) -> None:
    path = tmp_path / "history.dat"
    lines = _three_records(path)
    path.write_bytes(b"\n".join([lines[0], b'{"source":{}}', lines[2], b""]))
    with pytest.raises(FatalError) as caught:
        FileSchemaHistory(path, server="s").start()
    assert f"{path} is damaged at line 2 (not a Debezium schema history record: missing " in str(
        caught.value
    )
    assert "snapshot.mode=recovery" in str(caught.value)


def test_a_complete_last_line_without_its_newline_is_ended_before_the_next_record(
    tmp_path: Path,
) -> None:
    path = tmp_path / "history.dat"
    lines = _three_records(path)
    path.write_bytes(b"\n".join(lines))  # the crash came between the record and its newline
    history = FileSchemaHistory(path, server="s")
    history.start()
    history.record(_change(4))
    assert [c.offset.get("pos") for c in history.changes()] == [1, 2, 3, 4]


def test_blank_lines_are_ignored_like_debeziums_reader(tmp_path: Path) -> None:
    path = tmp_path / "history.dat"
    lines = _three_records(path)
    path.write_bytes(b"\n\n".join(lines) + b"\n\n")
    history = FileSchemaHistory(path, server="s")
    history.start()
    assert len(list(history.changes())) == 3


# --------------------------------------------------------------------------------------------
# Schema-change topic records

SOURCE_SCHEMA = {
    "type": "struct",
    "optional": False,
    "name": "io.debezium.connector.mysql.Source",
    "fields": [{"type": "string", "optional": False, "field": "db"}],
}


def _records(*, schemas: bool) -> SchemaChangeRecords:
    return SchemaChangeRecords(
        topic="dbserver1",
        connector="mysql",
        source_schema=SOURCE_SCHEMA,
        key_schemas=schemas,
        value_schemas=schemas,
    )


def _string(name: str, *, optional: bool = True) -> dict[str, Any]:
    return {"type": "string", "optional": optional, "field": name}


def _int32(name: str, *, optional: bool = True) -> dict[str, Any]:
    return {"type": "int32", "optional": optional, "field": name}


def _boolean(name: str) -> dict[str, Any]:
    return {"type": "boolean", "optional": True, "field": name}


# SchemaFactory.schemaHistoryColumnSchema / TableSchema / ChangeSchema, field by field.
EXPECTED_COLUMN_SCHEMA = {
    "type": "struct",
    "optional": False,
    "name": "io.debezium.connector.schema.Column",
    "version": 1,
    "fields": [
        _string("name", optional=False),
        _int32("jdbcType", optional=False),
        _int32("nativeType"),
        _string("typeName", optional=False),
        _string("typeExpression"),
        _string("charsetName"),
        _int32("length"),
        _int32("scale"),
        _int32("position", optional=False),
        _boolean("optional"),
        _boolean("autoIncremented"),
        _boolean("generated"),
        _string("comment"),
        _string("defaultValueExpression"),
        {
            "type": "array",
            "items": {"type": "string", "optional": False},
            "optional": True,
            "field": "enumValues",
        },
    ],
}
EXPECTED_CHANGE_SCHEMA = {
    "type": "struct",
    "optional": False,
    "name": "io.debezium.connector.schema.Change",
    "version": 1,
    "fields": [
        _string("type", optional=False),
        _string("id", optional=False),
        {
            "type": "struct",
            "optional": True,
            "name": "io.debezium.connector.schema.Table",
            "version": 1,
            "fields": [
                _string("defaultCharsetName"),
                {
                    "type": "array",
                    "items": {"type": "string", "optional": False},
                    "optional": True,
                    "field": "primaryKeyColumnNames",
                },
                {
                    "type": "array",
                    "items": EXPECTED_COLUMN_SCHEMA,
                    "optional": False,
                    "field": "columns",
                },
                _string("comment"),
            ],
            "field": "table",
        },
    ],
}


def test_the_key_is_the_database_under_schema_change_key() -> None:
    record = _records(schemas=True).record(CREATE)
    assert record.topic == "dbserver1"
    assert orjson.loads(record.key or b"") == {
        "schema": {
            "type": "struct",
            "optional": False,
            "name": "io.debezium.connector.mysql.SchemaChangeKey",
            "version": 1,
            "fields": [_string("databaseName", optional=False)],
        },
        "payload": {"databaseName": "inventory"},
    }


def test_the_value_schema_is_schema_change_value_with_debeziums_table_change_schemas() -> None:
    value = orjson.loads(_records(schemas=True).record(CREATE).value or b"")
    assert value["schema"] == {
        "type": "struct",
        "optional": False,
        "name": "io.debezium.connector.mysql.SchemaChangeValue",
        "version": 1,
        "fields": [
            {**SOURCE_SCHEMA, "field": "source"},
            {"type": "int64", "optional": False, "field": "ts_ms"},
            _string("databaseName"),
            _string("schemaName"),
            _string("ddl"),
            {
                "type": "array",
                "items": EXPECTED_CHANGE_SCHEMA,
                "optional": False,
                "field": "tableChanges",
            },
        ],
    }


def test_the_value_payload_is_the_change_as_connect_table_change_serializer_builds_it() -> None:
    payload = orjson.loads(_records(schemas=True).record(CREATE).value or b"")["payload"]
    assert isinstance(payload.pop("ts_ms"), int)
    id_column, email, status, price = (
        payload["tableChanges"][0]["table"]["columns"][i] for i in (0, 2, 3, 4)
    )
    assert payload == {
        "source": {"version": "3.7.0", "connector": "mysql", "db": "inventory"},
        "databaseName": "inventory",
        "schemaName": None,
        "ddl": DDL,
        "tableChanges": [
            {
                "type": "CREATE",
                "id": '"inventory"."customers"',
                "table": {
                    "defaultCharsetName": "utf8mb4",
                    "primaryKeyColumnNames": ["id"],
                    "columns": payload["tableChanges"][0]["table"]["columns"],
                    "comment": "people",
                },
            }
        ],
    }
    # Every field of the Column schema is in the payload, unset ones null; no hasDefaultValue,
    # and enumValues only when there are some.
    assert id_column == {
        "name": "id",
        "jdbcType": 4,
        "nativeType": None,
        "typeName": "INT",
        "typeExpression": "INT",
        "charsetName": None,
        "length": None,
        "scale": None,
        "position": 1,
        "optional": False,
        "autoIncremented": True,
        "generated": True,
        "comment": None,
        "defaultValueExpression": None,
        "enumValues": None,
    }
    assert (email["defaultValueExpression"], email["comment"]) == ("none", "contact")
    assert status["enumValues"] == ["'new'", "'old'"]
    assert (price["nativeType"], price["length"], price["scale"]) == (246, 10, 2)


def test_a_dropped_table_has_a_null_table_in_the_value() -> None:
    change = SchemaChange(
        "inventory",
        None,
        "DROP TABLE customers",
        (TableChange(TableChangeType.DROP, TableStructure(CUSTOMERS, COLUMNS)),),
        {"db": "inventory"},
        Offset(),
    )
    payload = orjson.loads(_records(schemas=False).record(change).value or b"")
    assert payload["tableChanges"] == [
        {"type": "DROP", "id": '"inventory"."customers"', "table": None}
    ]


def test_without_schemas_key_and_value_are_the_bare_payloads() -> None:
    record = _records(schemas=False).record(CREATE)
    assert record.key == b'{"databaseName":"inventory"}'
    value = orjson.loads(record.value or b"")
    assert list(value) == [
        "source", "ts_ms", "databaseName", "schemaName", "ddl", "tableChanges",
    ]  # fmt: skip
    assert value["tableChanges"][0]["id"] == '"inventory"."customers"'


def test_headers_go_on_every_schema_change_record() -> None:
    headers = (("__debezium.context.connectorName", b"inventory"),)
    records = SchemaChangeRecords(
        topic="dbserver1",
        connector="db2",
        source_schema=SOURCE_SCHEMA,
        key_schemas=True,
        value_schemas=True,
        headers=headers,
    )
    record = records.record(CREATE)
    assert record.headers == headers
    assert orjson.loads(record.value or b"")["schema"]["name"] == (
        "io.debezium.connector.db2.SchemaChangeValue"
    )


# --------------------------------------------------------------------------------------------
# Kafka topic checks (the pure part; the topic itself is in the integration tier)


def test_a_fit_history_topic_has_no_problems() -> None:
    fit = {"cleanup.policy": "delete", "retention.ms": "-1", "retention.bytes": "-1"}
    assert topic_problems("h", partitions=1, config=fit) == []
    long_enough = {**fit, "retention.ms": str(RETENTION_MS_MIN)}
    assert topic_problems("h", partitions=1, config=long_enough) == []
    assert topic_problems("h", partitions=1, config={}) == []  # settings unreadable


@pytest.mark.parametrize(
    ("partitions", "config", "fix"),
    [
        (3, {}, "point schema.history.internal.kafka.topic at a new topic"),
        (1, {"cleanup.policy": "compact"}, "--add-config cleanup.policy=delete"),
        (1, {"cleanup.policy": "compact,delete"}, "--add-config cleanup.policy=delete"),
        (1, {"retention.ms": "604800000"}, "--add-config retention.ms=-1,retention.bytes=-1"),
        (1, {"retention.bytes": "1073741824"}, "retention.ms=-1,retention.bytes=-1"),
    ],
)
def test_an_unfit_history_topic_is_named_with_its_fix(
    partitions: int, config: dict[str, str], fix: str
) -> None:
    [problem] = topic_problems("h", partitions=partitions, config=config)
    assert fix in problem


def test_a_default_null_column_keeps_its_default_through_history() -> None:
    from cdcflow.capture.history import change_from_document, history_document
    from cdcflow.capture.spi import (
        ColumnStructure,
        Offset,
        SchemaChange,
        TableChange,
        TableChangeType,
        TableId,
        TableStructure,
    )

    column = ColumnStructure("note", 12, "VARCHAR", 1, has_default_value=True)  # DEFAULT NULL
    change = SchemaChange(
        database="inventory",
        schema=None,
        ddl="CREATE TABLE t (note VARCHAR(9) DEFAULT NULL)",
        changes=(
            TableChange(
                TableChangeType.CREATE, TableStructure(TableId("inventory", "t"), (column,))
            ),
        ),
        source={},
        offset=Offset({"pos": 1}),
    )
    document = history_document(change, server="s")
    assert document["tableChanges"][0]["table"]["columns"][0]["hasDefaultValue"] is True
    assert change_from_document(document).changes[0].table.columns[0] == column
