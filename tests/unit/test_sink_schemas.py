"""Connect schemas to Spark types, schema evolution and version reconciliation (no Spark)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pyspark.sql import types as st

from cdcflow.sparkapps import evolution, planning, positions, schemas
from cdcflow.sparkapps.schemas import Conversion

PG_SOURCE: dict[str, Any] = {
    "type": "struct",
    "name": "io.debezium.connector.postgresql.Source",
    "fields": [
        {"type": "int64", "optional": False, "field": "ts_ms"},
        {"type": "string", "optional": True, "field": "sequence"},
        {"type": "int64", "optional": True, "field": "lsn"},
    ],
}


def _column(field: str, type_: str, **extra: Any) -> dict[str, Any]:
    return {"type": type_, "optional": True, "field": field, **extra}


def _envelope(*columns: dict[str, Any], source: dict[str, Any] = PG_SOURCE) -> dict[str, Any]:
    row = {"type": "struct", "optional": True, "name": "p.public.t.Value", "fields": list(columns)}
    return {
        "type": "struct",
        "name": "p.public.t.Envelope",
        "fields": [
            {**row, "field": "before"},
            {**row, "field": "after"},
            {**source, "field": "source"},
            {"type": "string", "optional": False, "field": "op"},
            {"type": "int64", "optional": True, "field": "ts_ms"},
        ],
    }


def _typed(plan: schemas.EnvelopePlan) -> dict[str, str]:
    typed = plan.row.typed
    assert isinstance(typed, st.StructType)
    return {f.name: f.dataType.simpleString() for f in typed.fields}


def test_postgres_column_types_map_to_the_spark_types_users_query() -> None:
    plan = schemas.envelope_plan(
        _envelope(
            _column("id", "int32", optional=False),
            _column("small", "int16"),
            _column("big", "int64"),
            _column("level", "float"),
            _column("ratio", "double"),
            _column("flag", "boolean"),
            _column("name", "string"),
            _column("blob", "bytes"),
            _column(
                "amount",
                "bytes",
                name="org.apache.kafka.connect.data.Decimal",
                parameters={"scale": "2", "connect.decimal.precision": "12"},
            ),
            _column(
                "unbounded",
                "bytes",
                name="org.apache.kafka.connect.data.Decimal",
                parameters={"scale": "4"},
            ),
            _column("day", "int32", name="io.debezium.time.Date"),
            _column("at", "int64", name="io.debezium.time.MicroTimestamp"),
            _column("at_ms", "int64", name="io.debezium.time.Timestamp"),
            _column("at_tz", "string", name="io.debezium.time.ZonedTimestamp"),
            _column("clock", "int64", name="io.debezium.time.MicroTime"),
            _column("doc", "string", name="io.debezium.data.Json"),
            _column("tags", "array", items={"type": "string", "optional": True}),
            _column("attrs", "map", keys={"type": "string"}, values={"type": "string"}),
        )
    )

    assert _typed(plan) == {
        "id": "int",
        "small": "smallint",
        "big": "bigint",
        "level": "float",
        "ratio": "double",
        "flag": "boolean",
        "name": "string",
        "blob": "binary",
        "amount": "decimal(12,2)",
        "unbounded": "decimal(38,4)",
        "day": "date",
        "at": "timestamp_ntz",
        "at_ms": "timestamp_ntz",
        "at_tz": "timestamp",
        "clock": "bigint",
        "doc": "string",
        "tags": "array<string>",
        "attrs": "map<string,string>",
    }


def test_wire_types_are_what_the_json_carries() -> None:
    plan = schemas.envelope_plan(
        _envelope(
            _column("blob", "bytes"),
            _column("day", "int32", name="io.debezium.time.Date"),
            _column(
                "n",
                "struct",
                name="io.debezium.data.VariableScaleDecimal",
                fields=[_column("scale", "int32"), _column("value", "bytes")],
            ),
        )
    )
    wire = plan.row.wire
    assert isinstance(wire, st.StructType)

    assert [f.dataType.simpleString() for f in wire.fields] == [
        "string",
        "int",
        "struct<scale:int,value:string>",
    ]
    assert [f.plan.conversion for f in plan.row.fields] == [
        Conversion.BASE64,
        Conversion.EPOCH_DAYS,
        Conversion.VARIABLE_DECIMAL,
    ]
    assert plan.row.conversion is Conversion.STRUCT


def test_nested_logical_types_are_converted_inside_structs_and_arrays() -> None:
    geometry = {
        "type": "struct",
        "name": "io.debezium.data.geometry.Geometry",
        "fields": [_column("wkb", "bytes"), _column("srid", "int32")],
    }
    plan = schemas.envelope_plan(
        _envelope(
            {**geometry, "field": "shape", "optional": True},
            _column("days", "array", items={"type": "int32", "name": "io.debezium.time.Date"}),
            _column("plain", "array", items={"type": "int32"}),
        )
    )

    assert _typed(plan)["shape"] == "struct<wkb:binary,srid:int>"
    assert _typed(plan)["days"] == "array<date>"
    assert [f.plan.conversion for f in plan.row.fields] == [
        Conversion.STRUCT,
        Conversion.ARRAY,
        Conversion.NONE,
    ]


@pytest.mark.parametrize(
    ("connect_type", "spark_type"),
    [("float", st.FloatType()), ("double", st.DoubleType())],
)
def test_float_and_double_are_the_names_jsonconverter_and_debezium_write(
    connect_type: str, spark_type: st.DataType
) -> None:
    plan = schemas.plan_for({"type": connect_type, "optional": True})

    assert (plan.wire, plan.typed, plan.conversion) == (spark_type, spark_type, Conversion.NONE)


@pytest.mark.parametrize(("legacy", "current"), [("float32", "float"), ("float64", "double")])
def test_float32_and_float64_from_earlier_cdcflow_topics_are_read_as_aliases(
    legacy: str, current: str
) -> None:
    assert schemas.plan_for({"type": legacy}) == schemas.plan_for({"type": current})


def test_a_topic_switching_from_float64_to_double_keeps_one_double_column() -> None:
    old = schemas.envelope_plan(_envelope(_column("id", "int32"), _column("x", "float64")))
    new = schemas.envelope_plan(_envelope(_column("id", "int32"), _column("x", "double")))
    target = st.StructType(
        [st.StructField("id", st.IntegerType()), st.StructField("x", st.DoubleType())]
    )

    result = planning.reconcile([(1, old), (2, new)], target)

    assert result.accepted == (1, 2)
    assert result.plan is not None and _typed(result.plan) == {"id": "int", "x": "double"}
    assert result.fit.ok and not result.fit.added and not result.fit.casts


def _decimal_schema(**parameters: str) -> dict[str, Any]:
    return {
        "type": "bytes",
        "name": "org.apache.kafka.connect.data.Decimal",
        "parameters": parameters,
    }


@pytest.mark.parametrize(
    ("parameters", "stored"),
    [
        ({"scale": "2", "connect.decimal.precision": "12"}, st.DecimalType(12, 2)),
        ({"scale": "4"}, st.DecimalType(38, 4)),  # no precision: Spark's widest
        ({"scale": "0", "connect.decimal.precision": "38"}, st.DecimalType(38, 0)),
        ({"scale": "38", "connect.decimal.precision": "38"}, st.DecimalType(38, 38)),
        ({"scale": "5", "connect.decimal.precision": "2"}, st.DecimalType(5, 5)),
        ({"scale": "2", "connect.decimal.precision": "39"}, st.StringType()),
        ({"scale": "2", "connect.decimal.precision": "60"}, st.StringType()),
        ({"scale": "40"}, st.StringType()),
        ({"scale": "-2", "connect.decimal.precision": "5"}, st.StringType()),
    ],
)
def test_a_decimal_is_typed_by_its_schema_alone_decimal_up_to_38_digits_else_exact_string(
    parameters: dict[str, str], stored: st.DataType
) -> None:
    plan = schemas.plan_for(_decimal_schema(**parameters))

    assert (plan.wire, plan.typed, plan.conversion) == (st.StringType(), stored, Conversion.DECIMAL)
    assert plan.scale == int(parameters["scale"])


def test_a_variable_scale_decimal_is_always_an_exact_string() -> None:
    plan = schemas.plan_for(
        {
            "type": "struct",
            "name": "io.debezium.data.VariableScaleDecimal",
            "fields": [_column("scale", "int32"), _column("value", "bytes")],
        }
    )

    assert (plan.typed, plan.conversion) == (st.StringType(), Conversion.VARIABLE_DECIMAL)


def test_a_decimal_with_unreadable_parameters_is_refused_with_the_reason() -> None:
    with pytest.raises(schemas.SchemaError, match="Decimal with unreadable parameters"):
        schemas.plan_for(_decimal_schema(scale="two"))


def test_schemas_that_are_not_envelopes_are_refused_with_the_reason() -> None:
    with pytest.raises(schemas.SchemaError, match="not a Debezium envelope"):
        schemas.envelope_plan({"type": "struct", "fields": [_column("id", "int32")]})
    with pytest.raises(schemas.SchemaError, match="unknown Connect type 'int128'"):
        schemas.envelope_plan(_envelope(_column("id", "int128")))
    with pytest.raises(schemas.SchemaError, match="not JSON"):
        schemas.plan_from_text("{nope")


def test_a_newer_schema_version_appends_its_new_columns() -> None:
    old = schemas.envelope_plan(_envelope(_column("id", "int32"), _column("name", "string")))
    new = schemas.envelope_plan(
        _envelope(_column("id", "int32"), _column("email", "string"), _column("name", "string"))
    )

    merged = schemas.merge_envelopes([old, new])

    assert list(_typed(merged)) == ["id", "name", "email"]


@pytest.mark.parametrize(
    ("key", "columns"),
    [
        ('{"id": 1}', ("id",)),
        ('{"a": 1, "b": "x"}', ("a", "b")),
        (
            json.dumps(
                {
                    "schema": {"type": "struct", "fields": [{"type": "int32", "field": "id"}]},
                    "payload": {"id": 1},
                }
            ),
            ("id",),
        ),
        (None, ()),
        ("not json", ()),
        ("[1, 2]", ()),
    ],
)
def test_key_columns_come_from_the_kafka_key_with_or_without_schema(
    key: str | None, columns: tuple[str, ...]
) -> None:
    assert schemas.key_columns(key) == columns


@pytest.mark.parametrize(
    ("fields", "connector"),
    [
        ({"ts_ms", "lsn", "sequence", "txId"}, "postgresql"),
        ({"ts_ms", "file", "pos", "row", "gtid"}, "mysql"),
        ({"ts_ms", "commit_lsn", "change_lsn"}, "db2"),
        ({"ts_ms", "scn"}, None),
    ],
)
def test_the_position_ordering_is_chosen_by_the_source_blocks_fields(
    fields: set[str], connector: str | None
) -> None:
    ordering = positions.ordering_for(fields)

    assert (ordering.connector if ordering else None) == connector


def test_evolution_adds_missing_columns_and_widens_compatible_types() -> None:
    target = st.StructType(
        [
            st.StructField("id", st.LongType()),
            st.StructField("amount", st.DecimalType(14, 2)),
            st.StructField("gone", st.StringType()),
        ]
    )
    incoming = st.StructType(
        [
            st.StructField("id", st.IntegerType(), False),
            st.StructField("amount", st.DecimalType(12, 2)),
            st.StructField("email", st.StringType(), False),
        ]
    )

    fit = evolution.fit(incoming, target)

    assert fit.ok
    assert fit.added == (st.StructField("email", st.StringType(), True),)
    assert dict(fit.casts) == {"id": st.LongType(), "amount": st.DecimalType(14, 2)}


@pytest.mark.parametrize(
    ("incoming", "stored"),
    [
        (st.LongType(), st.IntegerType()),
        (st.StringType(), st.IntegerType()),
        (st.DecimalType(12, 4), st.DecimalType(12, 2)),
        (st.DoubleType(), st.FloatType()),
        (st.TimestampType(), st.TimestampNTZType()),
    ],
)
def test_evolution_calls_narrowing_or_unrelated_type_changes_a_conflict(
    incoming: st.DataType, stored: st.DataType
) -> None:
    fit = evolution.fit(
        st.StructType([st.StructField("c", incoming)]), st.StructType([st.StructField("c", stored)])
    )

    assert not fit.ok
    assert fit.conflicts == (
        f"column c is {incoming.simpleString()} in the change events but "
        f"{stored.simpleString()} in the target table",
    )


def test_reconcile_rejects_only_the_schema_version_that_clashes_with_the_target() -> None:
    target = st.StructType(
        [st.StructField("id", st.IntegerType()), st.StructField("n", st.StringType())]
    )
    good = schemas.envelope_plan(_envelope(_column("id", "int32"), _column("n", "string")))
    evolved = schemas.envelope_plan(
        _envelope(_column("id", "int32"), _column("n", "string"), _column("extra", "int64"))
    )
    clashing = schemas.envelope_plan(_envelope(_column("id", "int32"), _column("n", "int32")))

    result = planning.reconcile(
        [(1, good), (2, clashing), (3, evolved), (4, "unusable value schema: x")], target
    )

    assert result.accepted == (1, 3)
    assert result.rejected == {
        2: "schema mismatch: column n is int in the change events but string in the target table",
        4: "unusable value schema: x",
    }
    assert result.plan is not None and result.plan.row.names == ("id", "n", "extra")
    assert [f.name for f in result.fit.added] == ["extra"]


def test_reconcile_rejects_events_whose_source_has_no_known_position() -> None:
    source = {"type": "struct", "fields": [_column("ts_ms", "int64"), _column("scn", "string")]}
    plan = schemas.envelope_plan(_envelope(_column("id", "int32"), source=source))

    result = planning.reconcile([(7, plan)], None)

    assert result.plan is None
    assert "no source position" in result.rejected[7]
    assert "postgresql: lsn" in result.rejected[7]


def _decimal_column(field: str, scale: int, precision: int) -> dict[str, Any]:
    parameters = {"scale": str(scale), "connect.decimal.precision": str(precision)}
    return _column(field, "bytes", **_decimal_schema(**parameters))


def _row_plans(result: planning.Reconciled, column: str) -> list[schemas.TypePlan]:
    """The plan each accepted version decodes ``column`` with, oldest version first."""
    found = [plan.row.field(column) for _, plan in result.versions]
    assert all(found)
    return [f.plan for f in found if f is not None]


def _columns(result: planning.Reconciled) -> dict[str, str]:
    return {f.name: f.dataType.simpleString() for f in result.columns.fields}


def test_reconcile_keeps_each_versions_own_decimal_scale_to_decode_its_records() -> None:
    target = st.StructType(
        [st.StructField("id", st.IntegerType()), st.StructField("amount", st.DecimalType(12, 4))]
    )
    numeric_10_2 = _envelope(_column("id", "int32"), _decimal_column("amount", 2, 10))
    numeric_12_4 = _envelope(_column("id", "int32"), _decimal_column("amount", 4, 12))

    result = planning.reconcile(
        [(1, schemas.envelope_plan(numeric_10_2)), (2, schemas.envelope_plan(numeric_12_4))],
        target,
    )

    assert result.accepted == (1, 2)
    assert [p.scale for p in _row_plans(result, "amount")] == [2, 4]
    assert _columns(result) == {"id": "int", "amount": "decimal(12,4)"}


def test_reconcile_keeps_each_versions_own_time_unit_to_decode_its_records() -> None:
    versions = [
        schemas.envelope_plan(
            _envelope(_column("id", "int32"), _column("at", "int64", name=f"io.debezium.time.{n}"))
        )
        for n in ("Timestamp", "MicroTimestamp", "NanoTimestamp")
    ]

    result = planning.reconcile(list(enumerate(versions)), None)

    assert result.accepted == (0, 1, 2)
    assert [p.conversion for p in _row_plans(result, "at")] == [
        Conversion.LOCAL_MILLIS,
        Conversion.LOCAL_MICROS,
        Conversion.LOCAL_NANOS,
    ]
    assert _columns(result) == {"id": "int", "at": "timestamp_ntz"}


def test_reconciled_rows_take_the_target_type_even_where_the_merged_plan_is_narrower() -> None:
    target = st.StructType(
        [st.StructField("id", st.LongType()), st.StructField("amount", st.DecimalType(12, 4))]
    )
    numeric_10_2 = _envelope(_column("id", "int32"), _decimal_column("amount", 2, 10))
    numeric_10_4 = _envelope(_column("id", "int32"), _decimal_column("amount", 4, 10))

    result = planning.reconcile(
        [(1, schemas.envelope_plan(numeric_10_2)), (2, schemas.envelope_plan(numeric_10_4))],
        target,
    )

    assert result.accepted == (1, 2)
    assert result.plan is not None and _typed(result.plan)["amount"] == "decimal(10,4)"
    assert _columns(result) == {"id": "bigint", "amount": "decimal(12,4)"}


def test_reconciled_rows_of_a_new_column_take_the_type_of_its_first_version() -> None:
    bigint = _envelope(_column("id", "int32"), _column("n", "int64"))
    int_ = _envelope(_column("id", "int32"), _column("n", "int32"))
    target = st.StructType([st.StructField("id", st.IntegerType())])

    result = planning.reconcile(
        [(1, schemas.envelope_plan(bigint)), (2, schemas.envelope_plan(int_))], target
    )

    assert result.accepted == (1, 2)
    assert [p.typed for p in _row_plans(result, "n")] == [st.LongType(), st.IntegerType()]
    assert _columns(result) == {"id": "int", "n": "bigint"}
