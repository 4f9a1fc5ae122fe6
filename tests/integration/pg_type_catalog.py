"""One column of every PostgreSQL type cdcflow maps, with a literal and Debezium's value.

Shared by the tests that check the converters against what the server prints and the tests
that compare cdcflow's events with the real Debezium's. The enum and domain types get a random
suffix so concurrent test sessions on one server do not collide.
"""

from __future__ import annotations

import uuid
from typing import Any

import psycopg

EXTENSIONS = ("hstore", "ltree", "citext")
SUFFIX = uuid.uuid4().hex[:8]
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
        "2018-06-20T15:13:16.900Z",
    ),
    ("c_timestamptz_inf", "timestamptz", "'infinity'", "infinity"),
    (
        "c_timestamptz_bc",
        "timestamptz",
        "'0044-03-15 12:00:00+00 BC'",
        "-0043-03-15T12:00:00.000000Z",
    ),
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
    ("c_tsvector", "tsvector", "'fat cats ate'", "'ate' 'cats' 'fat'"),
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
    ("c_domain_over_domain", PRICE_ALIAS, "1.5", "Bdw="),
    ("c_date", "date", "'2018-06-20'", 17702),
    ("c_date_bc", "date", "'0001-01-01 BC'", -719528),
    ("c_date_inf", "date", "'infinity'", -2147472692),
    ("c_time", "time", "'15:13:16.945104'", 54796945104),
    ("c_time_3", "time(3)", "'15:13:16.945'", 54796945),
    ("c_time_end", "time", "'24:00:00'", 86400000000),
    ("c_timestamp", "timestamp", "'2018-06-20 15:13:16.945104'", 1529507596945104),
    ("c_timestamp_3", "timestamp(3)", "'2018-06-20 15:13:16.945104'", 1529507596945),
    ("c_timestamp_ninf", "timestamp", "'-infinity'", -9223372036854775808),
    ("c_timestamp_pinf", "timestamp(2)", "'infinity'", 9223372036825200000),
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
    (
        "c_box",
        "box",
        "box(point(1,1), point(0,0))",
        {
            "wkb": "AQMAAAABAAAABQAAAAAAAAAAAPA/AAAAAAAA8D8AAAAAAADwPwAAAAAAAAAAAAAAAAAAAA"
            "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA8D8AAAAAAADwPwAAAAAAAPA/",
            "srid": None,
            "extensions": {"type": "box"},
        },
    ),
    (
        "c_lseg",
        "lseg",
        "'[(0,0),(1,2)]'",
        {
            "wkb": "AQIAAAACAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAPA/AAAAAAAAAEA=",
            "srid": None,
            "extensions": {"type": "lseg"},
        },
    ),
    (
        "c_path_open",
        "path",
        "'[(0,0),(1,1),(2,0)]'",
        {
            "wkb": "AQIAAAADAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAPA/AAAAAAAA8D8AAAAAAAAAQAAAAAAAAAAA",
            "srid": None,
            "extensions": {"type": "path", "closed": "false"},
        },
    ),
    (
        "c_path_closed",
        "path",
        "'((0,0),(1,1),(2,0))'",
        {
            "wkb": "AQIAAAADAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAPA/AAAAAAAA8D8AAAAAAAAAQAAAAAAAAAAA",
            "srid": None,
            "extensions": {"type": "path", "closed": "true"},
        },
    ),
    (
        "c_polygon",
        "polygon",
        "'((0,0),(0,1),(1,1))'",
        {
            "wkb": "AQMAAAABAAAABAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAPA/AAAAAAAA8D"
            "8AAAAAAADwPwAAAAAAAAAAAAAAAAAAAAA=",
            "srid": None,
            "extensions": {"type": "polygon"},
        },
    ),
    (
        "c_circle",
        "circle",
        "'<(1,2),3>'",
        {
            "center": {"x": 1.0, "y": 2.0, "wkb": "AQEAAAAAAAAAAADwPwAAAAAAAABA", "srid": None},
            "radius": 3.0,
        },
    ),
    ("c_line", "line", "'{1,-1,0}'", {"a": 1.0, "b": -1.0, "c": 0.0}),
    ("c_tsquery", "tsquery", "'fat & rat'", None),  # unknown: left out by default
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
    ("c_tsquery", {"include_unknown_datatypes": True}, "J2ZhdCcgJiAncmF0Jw=="),
]


def column_definitions() -> str:
    """``name type, …`` for every catalog column, to follow a table's key column."""
    return ", ".join(f"{name} {sql_type}" for name, sql_type, _, _ in COLUMNS)


def insert_values_sql(table: str, row_id: int) -> str:
    """An INSERT of the catalog's representative value into every column."""
    names = ", ".join(name for name, _, _, _ in COLUMNS)
    literals = ", ".join(literal for _, _, literal, _ in COLUMNS)
    return f"INSERT INTO {table} (id, {names}) VALUES ({row_id}, {literals})"


def create_type_objects(conn: psycopg.Connection[Any]) -> None:
    """The extensions, enum and domains the catalog's columns use."""
    for extension in EXTENSIONS:
        conn.execute(f"CREATE EXTENSION IF NOT EXISTS {extension}")
    conn.execute(f"CREATE TYPE {MOOD} AS ENUM ('sad', 'happy')")
    conn.execute(f"ALTER TYPE {MOOD} ADD VALUE 'ok' BEFORE 'happy'")
    conn.execute(f"CREATE DOMAIN {PRICE} AS numeric(8,3)")
    conn.execute(f"CREATE DOMAIN {PRICE_ALIAS} AS {PRICE}")


def drop_type_objects(conn: psycopg.Connection[Any]) -> None:
    """Remove the enum and domains again (after the tables that use them)."""
    conn.execute(f"DROP DOMAIN {PRICE_ALIAS}, {PRICE}")
    conn.execute(f"DROP TYPE {MOOD}")
