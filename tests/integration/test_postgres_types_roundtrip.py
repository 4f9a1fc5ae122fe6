"""The converters parse what a real PostgreSQL prints.

One table holds a column of every mapped type. A row of representative values and a row of
NULLs are read back as text on a connection carrying ``SESSION_SETTINGS`` (passed as ``-c``
options, as the connector does), the registry is built with ``CATALOG_QUERY``, and
``column_for`` must turn each text into Debezium's value.

The text is read the way pgoutput sends it: the type's output function, here as psycopg's
text-format result with every column loaded as ``str``. ``SELECT col::text`` is *not* the same
for three types (bool prints ``true``, ``char(n)`` loses its padding, a host ``inet`` gains
``/32``); a test below pins exactly that difference.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import psycopg
import pytest
from psycopg.types.string import TextLoader

from cdcflow.capture.connectors.postgres import types
from cdcflow.capture.connectors.postgres.types import TypeOptions, TypeRegistry
from cdcflow.capture.spi import Column
from cdcflow.operator.devservices.postgres import PostgresServer

SUFFIX = uuid.uuid4().hex[:8]
TABLE = f"types_roundtrip_{SUFFIX}"
MOOD = f"mood_{SUFFIX}"
PRICE = f"price_{SUFFIX}"
PRICE_ALIAS = f"price_alias_{SUFFIX}"

#: (column, SQL type, SQL literal, Debezium value with default options)
COLUMNS: list[tuple[str, str, str, Any]] = [
    ("c_bool", "boolean", "true", True),
    ("c_bit1", "bit(1)", "B'1'", True),
    ("c_bit10", "bit(10)", "B'1000000000'", "AAI="),
    ("c_varbit", "bit varying", "B'101'", "BQ=="),
    ("c_int2", "smallint", "-32768", -32768),
    ("c_int4", "integer", "2147483647", 2147483647),
    ("c_int8", "bigint", "-9223372036854775808", -9223372036854775808),
    ("c_smallserial", "smallserial", "7", 7),
    ("c_serial", "serial", "7", 7),
    ("c_bigserial", "bigserial", "7", 7),
    ("c_oid", "oid", "4294967295", 4294967295),
    ("c_float4", "real", "1.1", 1.1),
    ("c_float8", "double precision", "-1.5e300", -1.5e300),
    ("c_float8_nan", "float8", "'NaN'", "NaN"),
    ("c_float8_inf", "float8", "'-Infinity'", "-Infinity"),
    ("c_numeric_10_2", "numeric(10,2)", "1.5", "AJY="),
    ("c_numeric", "numeric", "1.50", {"scale": 1, "value": "Dw=="}),
    (
        "c_numeric_big",
        "numeric",
        "123456789012345678901234567890.123456789",
        {"scale": 9, "value": "XODppWAV/sWq36MorjmBFQ=="},
    ),
    ("c_money", "money", "1234.56", "AeJA"),
    ("c_money_negative", "money", "-1.50", "/2o="),
    ("c_char", "char(5)", "'ab'", "ab   "),
    ("c_varchar", "varchar(10)", "'héllo'", "héllo"),
    ("c_text", "text", "E'multi\\nline \"quoted\" \\\\'", 'multi\nline "quoted" \\'),
    ("c_name", "name", "'pg_name'", "pg_name"),
    ("c_citext", "citext", "'MiXeD'", "MiXeD"),
    (
        "c_timestamptz",
        "timestamptz",
        "'2018-06-20 15:13:16.945104+02'",
        "2018-06-20T13:13:16.945104Z",
    ),
    (
        "c_timestamptz_trim",
        "timestamptz(3)",
        "'2018-06-20 15:13:16.9+00'",
        "2018-06-20T15:13:16.9Z",
    ),
    ("c_timestamptz_inf", "timestamptz", "'infinity'", "infinity"),
    ("c_timestamptz_bc", "timestamptz", "'0044-03-15 12:00:00+00 BC'", "-0043-03-15T12:00:00Z"),
    ("c_timetz", "timetz", "'10:00:00.5+05:30'", "04:30:00.5Z"),
    ("c_interval", "interval", "'1 year 2 months 3 days 04:05:06.78'", 37091106780000),
    ("c_interval_negative", "interval", "'-1 day -00:00:00.5'", -86400500000),
    ("c_bytea", "bytea", "'\\x0102ff'::bytea", "AQL/"),
    ("c_json", "json", "'{\"a\": [1, 2]}'", '{"a": [1, 2]}'),
    ("c_jsonb", "jsonb", '\'{"b": 1, "a": [1, 2]}\'', '{"a": [1, 2], "b": 1}'),
    ("c_xml", "xml", "'<a>1</a>'", "<a>1</a>"),
    (
        "c_uuid",
        "uuid",
        "'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11'",
        "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
    ),
    (
        "c_point",
        "point",
        "point(1.5, 2.5)",
        {"x": 1.5, "y": 2.5, "wkb": "AQEAAAAAAAAAAAD4PwAAAAAAAARA", "srid": None},
    ),
    ("c_ltree", "ltree", "'Top.Science.Astronomy'", "Top.Science.Astronomy"),
    ("c_inet", "inet", "'10.1.2.3'", "10.1.2.3"),
    ("c_inet_net", "inet", "'10.1.2.3/8'", "10.1.2.3/8"),
    ("c_cidr", "cidr", "'10.0.0.0/8'", "10.0.0.0/8"),
    ("c_macaddr", "macaddr", "'08-00-2B-01-02-03'", "08:00:2b:01:02:03"),
    ("c_macaddr8", "macaddr8", "'08:00:2b:01:02:03:04:05'", "08:00:2b:01:02:03:04:05"),
    ("c_int4range", "int4range", "'[1,10)'", "[1,10)"),
    ("c_int8range", "int8range", "'(1,10]'", "[2,11)"),
    ("c_numrange", "numrange", "'(1.5,2.5]'", "(1.5,2.5]"),
    (
        "c_tsrange",
        "tsrange",
        "'[2018-01-01,2018-02-01)'",
        '["2018-01-01 00:00:00","2018-02-01 00:00:00")',
    ),
    ("c_tstzrange", "tstzrange", "'[2018-01-01 02:00+02,)'", '["2018-01-01 00:00:00+00",)'),
    ("c_daterange", "daterange", "'[2018-01-01,2018-02-01]'", "[2018-01-01,2018-02-02)"),
    ("c_enum", MOOD, "'happy'", "happy"),
    ("c_domain", PRICE, "1.5", "Bdw="),
    ("c_domain_over_domain", PRICE_ALIAS, "1.5", {"scale": 1, "value": "Dw=="}),
    ("c_date", "date", "'2018-06-20'", 17702),
    ("c_date_bc", "date", "'0001-01-01 BC'", -719528),
    ("c_date_inf", "date", "'infinity'", -2147472692),
    ("c_time", "time", "'15:13:16.945104'", 54796945104),
    ("c_time_3", "time(3)", "'15:13:16.945'", 54796945),
    ("c_time_end", "time", "'24:00:00'", 86400000000),
    ("c_timestamp", "timestamp", "'2018-06-20 15:13:16.945104'", 1529507596945104),
    ("c_timestamp_3", "timestamp(3)", "'2018-06-20 15:13:16.945104'", 1529507596945),
    ("c_timestamp_ninf", "timestamp", "'-infinity'", -9223372036832400000),
    ("c_timestamp_pinf", "timestamp(2)", "'infinity'", 9223372036825200),
    ("c_timestamp_bc", "timestamp", "'0044-03-15 12:00:00 BC'", -63517780800000000),
    ("c_hstore", "hstore", '\'a=>1, b=>NULL, "c d"=>"x\\"y"\'', '{"a":"1","b":null,"c d":"x\\"y"}'),
    ("c_int_array", "integer[]", "'{1,NULL,3}'", [1, None, 3]),
    (
        "c_text_array",
        "text[]",
        "ARRAY['a b', NULL, 'NULL', 'x\"y', 'c\\d', '', 'é,{}']",
        ["a b", None, "NULL", 'x"y', "c\\d", "", "é,{}"],
    ),
    ("c_numeric_array", "numeric(10,2)[]", "'{1.5,NULL}'", ["AJY=", None]),
    ("c_enum_array", f"{MOOD}[]", "'{sad,happy}'", ["sad", "happy"]),
    (
        "c_timestamptz_array",
        "timestamptz[]",
        "ARRAY['2018-06-20 15:13:16.945104+00'::timestamptz, 'infinity']",
        ["2018-06-20T15:13:16.945104Z", "infinity"],
    ),
    ("c_date_array", "date[]", "'{2018-06-20,NULL}'", [17702, None]),
    ("c_bytea_array", "bytea[]", "ARRAY['\\x01ff'::bytea, NULL]", ["Af8=", None]),
    (
        "c_uuid_array",
        "uuid[]",
        "'{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}'",
        ["a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"],
    ),
    ("c_jsonb_array", "jsonb[]", "ARRAY['{\"a\": 1}'::jsonb]", ['{"a": 1}']),
    ("c_hstore_array", "hstore[]", "ARRAY['a=>1'::hstore]", ['{"a":"1"}']),
    ("c_box", "box", "box(point(1,1), point(0,0))", None),  # unknown: left out by default
]

#: Columns with other options: (column, options, expected value).
MODES: list[tuple[str, dict[str, Any], Any]] = [
    ("c_numeric_10_2", {"decimal_handling_mode": "double"}, 1.5),
    ("c_numeric", {"decimal_handling_mode": "double"}, 1.5),
    ("c_money", {"decimal_handling_mode": "double"}, 1234.56),
    ("c_numeric_10_2", {"decimal_handling_mode": "string"}, "1.50"),
    (
        "c_numeric_big",
        {"decimal_handling_mode": "string"},
        "123456789012345678901234567890.123456789",
    ),
    ("c_money_negative", {"decimal_handling_mode": "string"}, "-1.50"),
    ("c_time", {"time_precision_mode": "connect"}, 54796945),
    ("c_timestamp", {"time_precision_mode": "connect"}, 1529507596945),
    ("c_date", {"time_precision_mode": "connect"}, 17702),
    ("c_time_3", {"time_precision_mode": "adaptive_time_microseconds"}, 54796945000),
    ("c_interval", {"interval_handling_mode": "string"}, "P1Y2M3DT4H5M6.78S"),
    ("c_interval_negative", {"interval_handling_mode": "string"}, "P0Y0M-1DT0H0M-0.5S"),
    ("c_bytea", {"binary_handling_mode": "hex"}, "0102ff"),
    ("c_bytea", {"binary_handling_mode": "base64"}, "AQL/"),
    ("c_hstore", {"hstore_handling_mode": "map"}, {"a": "1", "b": None, "c d": 'x"y'}),
    ("c_box", {"include_unknown_datatypes": True}, "KDEsMSksKDAsMCk="),
]


@dataclass(frozen=True)
class Captured:
    """What the server printed and told us about each column."""

    registry: TypeRegistry
    attributes: dict[str, tuple[int, int]]
    values: dict[str, str | None]
    nulls: dict[str, str | None]
    casts: dict[str, str | None]

    def column(self, name: str, options: TypeOptions | None = None) -> Column | None:
        type_oid, typmod = self.attributes[name]
        return types.column_for(
            name=name,
            type_oid=type_oid,
            typmod=typmod,
            optional=True,
            registry=self.registry,
            options=options or TypeOptions(),
        )


def _session_options() -> str:
    return " ".join(f"-c {name}={value}" for name, value in types.SESSION_SETTINGS.items())


@pytest.fixture(scope="module")
def captured(postgres_server: PostgresServer) -> Iterator[Captured]:
    with psycopg.connect(
        postgres_server.dsn(), autocommit=True, options=_session_options()
    ) as conn:
        for extension in ("hstore", "ltree", "citext"):
            conn.execute(f"CREATE EXTENSION IF NOT EXISTS {extension}")
        conn.execute(f"CREATE TYPE {MOOD} AS ENUM ('sad', 'happy')")
        conn.execute(f"ALTER TYPE {MOOD} ADD VALUE 'ok' BEFORE 'happy'")
        conn.execute(f"CREATE DOMAIN {PRICE} AS numeric(8,3)")
        conn.execute(f"CREATE DOMAIN {PRICE_ALIAS} AS {PRICE}")
        definitions = ", ".join(f"{name} {sql_type}" for name, sql_type, _, _ in COLUMNS)
        conn.execute(f"CREATE TABLE {TABLE} (id int PRIMARY KEY, {definitions})")
        try:
            yield _capture(conn)
        finally:
            conn.execute(f"DROP TABLE {TABLE}")
            conn.execute(f"DROP DOMAIN {PRICE_ALIAS}, {PRICE}")
            conn.execute(f"DROP TYPE {MOOD}")


def _capture(conn: psycopg.Connection[Any]) -> Captured:
    names = [name for name, _, _, _ in COLUMNS]
    literals = ", ".join(literal for _, _, literal, _ in COLUMNS)
    conn.execute(f"INSERT INTO {TABLE} (id, {', '.join(names)}) VALUES (1, {literals})")
    conn.execute(f"INSERT INTO {TABLE} (id) VALUES (2)")
    attributes = {
        str(name): (int(oid), int(mod))
        for name, oid, mod in conn.execute(
            "SELECT attname, atttypid::int8, atttypmod FROM pg_attribute "
            "WHERE attrelid = %s::regclass AND attnum > 0 AND NOT attisdropped",
            (TABLE,),
        ).fetchall()
    }
    rows = _output_function_texts(conn, names, {oid for oid, _ in attributes.values()})
    casts = ", ".join(f"{name}::text" for name in names)
    cast_row = conn.execute(f"SELECT {casts} FROM {TABLE} WHERE id = 1").fetchone()
    assert cast_row is not None
    registry = TypeRegistry.from_rows(conn.execute(types.CATALOG_QUERY).fetchall())
    return Captured(
        registry=registry,
        attributes=attributes,
        values=dict(zip(names, rows[0], strict=True)),
        nulls=dict(zip(names, rows[1], strict=True)),
        casts=dict(zip(names, cast_row, strict=True)),
    )


def _output_function_texts(
    conn: psycopg.Connection[Any], names: list[str], oids: set[int]
) -> list[tuple[Any, ...]]:
    """The rows as the server's text-format result: each type's output function, unparsed."""
    with conn.cursor() as cursor:
        for oid in oids:
            cursor.adapters.register_loader(oid, TextLoader)
        cursor.execute(f"SELECT {', '.join(names)} FROM {TABLE} ORDER BY id")
        return cursor.fetchall()


@pytest.mark.parametrize(
    ("name", "expected"),
    [(name, expected) for name, _, _, expected in COLUMNS if expected is not None],
)
def test_each_type_converts_what_the_server_prints_to_debeziums_value(
    captured: Captured, name: str, expected: Any
) -> None:
    column = captured.column(name)
    assert column is not None, f"{name} is not mapped"
    assert column.convert(captured.values[name]) == expected, captured.values[name]


@pytest.mark.parametrize(("name", "options", "expected"), MODES)
def test_each_mode_converts_what_the_server_prints(
    captured: Captured, name: str, options: dict[str, Any], expected: Any
) -> None:
    column = captured.column(name, TypeOptions(**options))
    assert column is not None
    assert column.convert(captured.values[name]) == expected, captured.values[name]


def test_sql_nulls_convert_to_none(captured: Captured) -> None:
    for name, sql_type, _, expected in COLUMNS:
        assert captured.nulls[name] == ("1" if sql_type.endswith("serial") else None)
        column = captured.column(name)
        assert (column is None) == (expected is None), name
        if column is not None:
            assert column.convert(None) is None


def test_a_text_cast_differs_from_the_output_function_only_for_bool_char_and_host_inet(
    captured: Captured,
) -> None:
    differing = {
        name: (captured.values[name], captured.casts[name])
        for name, _, _, _ in COLUMNS
        if captured.values[name] != captured.casts[name]
    }
    assert differing == {
        "c_bool": ("t", "true"),
        "c_char": ("ab   ", "ab"),
        "c_inet": ("10.1.2.3", "10.1.2.3/32"),
    }


def test_unknown_types_are_left_out_unless_asked_for(captured: Captured) -> None:
    assert captured.column("c_box") is None
    opaque = captured.column("c_box", TypeOptions(include_unknown_datatypes=True))
    assert opaque is not None and opaque.schema["type"] == "bytes"


def test_enum_allowed_values_follow_the_enum_sort_order(captured: Captured) -> None:
    column = captured.column("c_enum")
    assert column is not None
    assert column.schema["parameters"] == {"allowed": "sad,ok,happy"}
    assert column.type_name == MOOD


def test_domain_over_numeric_inherits_its_precision_and_scale(captured: Captured) -> None:
    direct = captured.column("c_domain")
    nested = captured.column("c_domain_over_domain")
    assert direct is not None and nested is not None
    assert direct.schema["parameters"] == {"scale": "3", "connect.decimal.precision": "8"}
    assert nested.schema["name"] == "io.debezium.data.VariableScaleDecimal"


def test_registry_reads_the_real_catalog(captured: Captured) -> None:
    registry = captured.registry
    assert len(registry) > 400
    int2vector = registry.get(22)
    assert int2vector is not None and int2vector.name == "int2vector"
    assert not int2vector.is_array
    int_array = registry.get(1007)
    assert int_array is not None and int_array.is_array
    hstore_type, _ = captured.attributes["c_hstore"]
    hstore = registry.get(hstore_type)
    assert hstore is not None and hstore.namespace == "public"


def test_schemas_from_the_real_catalog_carry_debeziums_names(captured: Captured) -> None:
    expected = {
        "c_timestamptz": "io.debezium.time.ZonedTimestamp",
        "c_timetz": "io.debezium.time.ZonedTime",
        "c_interval": "io.debezium.time.MicroDuration",
        "c_json": "io.debezium.data.Json",
        "c_xml": "io.debezium.data.Xml",
        "c_uuid": "io.debezium.data.Uuid",
        "c_ltree": "io.debezium.data.Ltree",
        "c_point": "io.debezium.data.geometry.Point",
        "c_bit10": "io.debezium.data.Bits",
        "c_date": "io.debezium.time.Date",
        "c_time_3": "io.debezium.time.Time",
        "c_time": "io.debezium.time.MicroTime",
        "c_timestamp_3": "io.debezium.time.Timestamp",
        "c_timestamp": "io.debezium.time.MicroTimestamp",
        "c_numeric_10_2": "org.apache.kafka.connect.data.Decimal",
    }
    for name, semantic in expected.items():
        column = captured.column(name)
        assert column is not None and column.schema["name"] == semantic, name
