"""PostgreSQL type mapping: Connect schemas and converters from PostgreSQL's text output.

Expected values that depend on Java behaviour (BigDecimal/BigInteger encodings, ISO formatters,
MicroDuration arithmetic, BitSet byte order, HashMap iteration order) were produced by running
the corresponding JDK code, so these tests pin Debezium's exact output.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import struct
from typing import Any

import pytest

from cdcflow.capture.connectors.postgres import types
from cdcflow.capture.connectors.postgres.types import TypeOptions, TypeRegistry
from cdcflow.capture.spi import Column

# --------------------------------------------------------------------------------------------
# A hand-made catalog: the built-in types the tests use, their arrays, and user types.
# --------------------------------------------------------------------------------------------

BUILTINS: dict[int, tuple[str, str, int]] = {
    # oid: (name, category, array oid)
    16: ("bool", "B", 1000),
    17: ("bytea", "U", 1001),
    18: ("char", "Z", 1002),
    19: ("name", "S", 1003),
    20: ("int8", "N", 1016),
    21: ("int2", "N", 1005),
    23: ("int4", "N", 1007),
    25: ("text", "S", 1009),
    26: ("oid", "N", 1028),
    114: ("json", "U", 199),
    142: ("xml", "U", 143),
    600: ("point", "G", 1017),
    601: ("lseg", "G", 1018),
    602: ("path", "G", 1019),
    603: ("box", "G", 1020),
    604: ("polygon", "G", 1027),
    628: ("line", "G", 629),
    718: ("circle", "G", 719),
    650: ("cidr", "I", 651),
    700: ("float4", "N", 1021),
    701: ("float8", "N", 1022),
    774: ("macaddr8", "U", 775),
    790: ("money", "N", 791),
    829: ("macaddr", "U", 1040),
    869: ("inet", "I", 1041),
    1042: ("bpchar", "S", 1014),
    1043: ("varchar", "S", 1015),
    1082: ("date", "D", 1182),
    1083: ("time", "D", 1183),
    1114: ("timestamp", "D", 1115),
    1184: ("timestamptz", "D", 1185),
    1186: ("interval", "T", 1187),
    1266: ("timetz", "D", 1270),
    1560: ("bit", "V", 1561),
    1562: ("varbit", "V", 1563),
    1700: ("numeric", "N", 1231),
    2950: ("uuid", "U", 2951),
    3220: ("pg_lsn", "U", 3221),
    3802: ("jsonb", "U", 3807),
    3904: ("int4range", "R", 3905),
    3906: ("numrange", "R", 3907),
    3908: ("tsrange", "R", 3909),
    3910: ("tstzrange", "R", 3911),
    3912: ("daterange", "R", 3913),
    3926: ("int8range", "R", 3927),
}
MOOD, MOOD_ARRAY = 50001, 50002
HSTORE, HSTORE_ARRAY = 50011, 50012
LTREE, CITEXT, GEOMETRY, GEOGRAPHY = 50021, 50022, 50023, 50024
PRICE, PRICE_ARRAY, PRICE_ALIAS, SHORT_TEXT = 50031, 50032, 50033, 50034
INT_LIST, INT2VECTOR = 50041, 22
BOX_ARRAY = 1020


def _row(
    oid: int,
    name: str,
    *,
    typtype: str = "b",
    base: int = 0,
    elem: int = 0,
    typmod: int = -1,
    labels: list[str] | None = None,
    category: str = "U",
    namespace: str = "pg_catalog",
) -> tuple[Any, ...]:
    return (oid, name, namespace, typtype, base, elem, typmod, labels, category)


def _rows() -> list[tuple[Any, ...]]:
    rows = []
    for oid, (name, category, array) in BUILTINS.items():
        rows.append(_row(oid, name, category=category))
        rows.append(_row(array, f"_{name}", elem=oid, category="A"))
    rows += [
        _row(INT2VECTOR, "int2vector", elem=21, category="A"),
        _row(MOOD, "mood", typtype="e", labels=["sad", "ok", "happy"], namespace="public"),
        _row(MOOD_ARRAY, "_mood", elem=MOOD, category="A", namespace="public"),
        _row(HSTORE, "hstore", namespace="public"),
        _row(HSTORE_ARRAY, "_hstore", elem=HSTORE, category="A", namespace="public"),
        _row(LTREE, "ltree", namespace="public"),
        _row(CITEXT, "citext", category="S", namespace="public"),
        _row(GEOMETRY, "geometry", namespace="postgis"),
        _row(GEOGRAPHY, "geography", namespace="postgis"),
        _row(PRICE, "price", typtype="d", base=1700, typmod=numeric(8, 3), namespace="public"),
        _row(PRICE_ARRAY, "_price", elem=PRICE, category="A", namespace="public"),
        _row(PRICE_ALIAS, "price_alias", typtype="d", base=PRICE, namespace="public"),
        _row(SHORT_TEXT, "short_text", typtype="d", base=1043, typmod=14, namespace="public"),
        _row(INT_LIST, "int_list", typtype="d", base=1007, namespace="public"),
    ]
    return rows


def numeric(precision: int, scale: int) -> int:
    """The typmod of numeric(p, s)."""
    return ((precision << 16) | (scale & 0x7FF)) + 4


REGISTRY = TypeRegistry.from_rows(_rows())
OID = {name: oid for oid, (name, _category, _array) in BUILTINS.items()}
ARRAY = {name: array for _oid, (name, _category, array) in BUILTINS.items()}


def column(type_oid: int, typmod: int = -1, *, optional: bool = True, **options: Any) -> Column:
    found = maybe_column(type_oid, typmod, optional=optional, **options)
    assert found is not None
    return found


def maybe_column(
    type_oid: int, typmod: int = -1, *, optional: bool = True, **options: Any
) -> Column | None:
    return types.column_for(
        name="c",
        type_oid=type_oid,
        typmod=typmod,
        optional=optional,
        registry=REGISTRY,
        options=TypeOptions(**options),
    )


def convert(type_oid: int, text: str | None, typmod: int = -1, **options: Any) -> Any:
    return column(type_oid, typmod, **options).convert(text)


# --------------------------------------------------------------------------------------------
# Session settings, options and the catalog
# --------------------------------------------------------------------------------------------


def test_session_settings_fix_every_text_format_the_converters_parse() -> None:
    assert dict(types.SESSION_SETTINGS) == {
        "DateStyle": "ISO",
        "IntervalStyle": "iso_8601",
        "TimeZone": "UTC",
        "extra_float_digits": "3",
        "bytea_output": "hex",
        "lc_monetary": "C",
    }


def test_session_setting_values_fit_libpq_dash_c_options_without_escaping() -> None:
    for name, value in types.SESSION_SETTINGS.items():
        assert " " not in name + value and "\\" not in value


def test_catalog_query_reads_types_with_their_namespace_and_ordered_enum_labels() -> None:
    query = types.CATALOG_QUERY
    for needle in ("pg_type", "pg_namespace", "pg_enum", "enumsortorder", "typtypmod"):
        assert needle in query


def test_options_default_to_debeziums_defaults() -> None:
    assert TypeOptions() == TypeOptions(
        decimal_handling_mode="precise",
        time_precision_mode="adaptive",
        hstore_handling_mode="json",
        interval_handling_mode="numeric",
        binary_handling_mode="bytes",
        include_unknown_datatypes=False,
    )


def test_options_reject_a_mode_debezium_does_not_have() -> None:
    with pytest.raises(ValueError, match="decimal_handling_mode"):
        TypeOptions(decimal_handling_mode="exact")  # type: ignore[arg-type]


def test_registry_is_built_from_plain_catalog_rows() -> None:
    mood = REGISTRY.get(MOOD)
    assert mood is not None
    assert mood.is_enum and mood.enum_labels == ("sad", "ok", "happy")
    assert mood.namespace == "public"
    assert REGISTRY.get(999_999) is None


def test_registry_resolves_arrays_to_their_element_type() -> None:
    array = REGISTRY.get(ARRAY["int4"])
    assert array is not None and array.is_array
    element = REGISTRY.element(array)
    assert element is not None and element.name == "int4"


def test_int2vector_is_not_mistaken_for_an_array() -> None:
    vector = REGISTRY.get(INT2VECTOR)
    assert vector is not None and not vector.is_array


def test_a_domain_over_a_base_type_lends_the_column_its_typmod() -> None:
    resolved = REGISTRY.resolve(PRICE)
    assert resolved is not None
    base, typmod = resolved
    assert base.name == "numeric" and typmod == numeric(8, 3)


def test_a_domain_over_a_domain_inherits_the_inner_typmod() -> None:
    resolved = REGISTRY.resolve(PRICE_ALIAS)
    assert resolved is not None
    base, typmod = resolved
    assert base.name == "numeric" and typmod == numeric(8, 3)


def test_a_column_typmod_wins_over_the_domain_typmod() -> None:
    resolved = REGISTRY.resolve(PRICE, numeric(5, 1))
    assert resolved is not None
    assert resolved[1] == numeric(5, 1)


# --------------------------------------------------------------------------------------------
# Column shape
# --------------------------------------------------------------------------------------------


def test_column_carries_name_declared_type_name_optionality_and_schema() -> None:
    found = column(SHORT_TEXT, optional=False)
    assert found.name == "c"
    assert found.type_name == "short_text"
    assert found.optional is False
    assert found.schema == {"type": "string", "optional": False}


def test_schema_keys_follow_json_converter_order_without_a_field_key() -> None:
    found = column(OID["numeric"], numeric(10, 2))
    assert list(found.schema) == ["type", "optional", "name", "version", "parameters"]
    struct = column(OID["point"]).schema
    assert list(struct) == ["type", "fields", "optional", "name", "version", "doc"]
    assert "field" not in found.schema


NULLABLE_COLUMNS = [
    *[(oid, -1) for oid in BUILTINS if oid not in (603, 3220)],
    *[(array, -1) for name, array in ARRAY.items() if name in ("int4", "text", "numeric")],
    (OID["numeric"], numeric(10, 2)),
    (OID["bit"], 8),
    (OID["time"], 3),
    (OID["timestamp"], 3),
    (MOOD, -1),
    (MOOD_ARRAY, -1),
    (HSTORE, -1),
    (LTREE, -1),
    (CITEXT, -1),
    (GEOMETRY, -1),
    (PRICE, -1),
]


@pytest.mark.parametrize(("type_oid", "typmod"), NULLABLE_COLUMNS)
def test_sql_null_converts_to_none_for_every_type(type_oid: int, typmod: int) -> None:
    assert column(type_oid, typmod).convert(None) is None


@pytest.mark.parametrize(
    "options",
    [
        {"decimal_handling_mode": "double"},
        {"decimal_handling_mode": "string"},
        {"time_precision_mode": "connect"},
        {"hstore_handling_mode": "map"},
        {"interval_handling_mode": "string"},
        {"binary_handling_mode": "hex"},
        {"include_unknown_datatypes": True},
    ],
)
def test_sql_null_converts_to_none_in_every_mode(options: dict[str, Any]) -> None:
    for type_oid, typmod in [*NULLABLE_COLUMNS, (OID["pg_lsn"], -1), (ARRAY["box"], -1)]:
        found = maybe_column(type_oid, typmod, **options)
        assert found is None or found.convert(None) is None


# --------------------------------------------------------------------------------------------
# Basic types
# --------------------------------------------------------------------------------------------


def test_boolean_is_a_connect_boolean() -> None:
    found = column(OID["bool"])
    assert found.schema == {"type": "boolean", "optional": True}
    assert (found.convert("t"), found.convert("f")) == (True, False)
    assert (found.convert("true"), found.convert("false")) == (True, False)


def test_bit_1_is_a_boolean() -> None:
    found = column(OID["bit"], 1)
    assert found.schema == {"type": "boolean", "optional": True}
    assert (found.convert("1"), found.convert("0")) == (True, False)


def test_bit_n_is_bits_of_little_endian_bytes_sized_by_the_highest_set_bit() -> None:
    found = column(OID["bit"], 10)
    assert found.schema == {
        "type": "bytes",
        "optional": True,
        "name": "io.debezium.data.Bits",
        "version": 1,
        "parameters": {"length": "10"},
    }
    assert found.convert("1000000000") == "AAI="
    assert found.convert("0000000011") == "Aw=="
    assert found.convert("0000000000") == ""


def test_varbit_without_length_reports_the_maximum_length() -> None:
    found = column(OID["varbit"])
    assert found.schema["parameters"] == {"length": "2147483647"}
    assert found.convert("101") == "BQ=="
    assert found.convert("100000000") == "AAE="


def test_varbit_1_is_a_boolean() -> None:
    assert column(OID["varbit"], 1).schema["type"] == "boolean"


@pytest.mark.parametrize(
    ("name", "connect_type", "text", "value"),
    [
        ("int2", "int16", "-32768", -32768),
        ("int4", "int32", "2147483647", 2147483647),
        ("int8", "int64", "-9223372036854775808", -9223372036854775808),
        ("int8", "int64", "999999999999999999", 999_999_999_999_999_999),
        ("int8", "int64", "-99999999999999999", -99_999_999_999_999_999),
        ("oid", "int64", "4294967295", 4294967295),
        ("float4", "float", "1.1", 1.1),
        ("float8", "double", "3.141592653589793", 3.141592653589793),
        ("float8", "double", "1e+300", 1e300),
    ],
)
def test_integers_and_floats_map_to_their_connect_width(
    name: str, connect_type: str, text: str, value: Any
) -> None:
    found = column(OID[name])
    assert found.schema == {"type": connect_type, "optional": True}
    assert found.convert(text) == value


@pytest.mark.parametrize("name", ["float4", "float8"])
@pytest.mark.parametrize("special", ["NaN", "Infinity", "-Infinity"])
def test_float_specials_are_the_strings_json_converter_writes(name: str, special: str) -> None:
    assert convert(OID[name], special) == special


@pytest.mark.parametrize("name", ["char", "name", "text", "varchar", "bpchar"])
def test_character_types_are_plain_strings(name: str) -> None:
    found = column(OID[name])
    assert found.schema == {"type": "string", "optional": True}
    assert found.convert("héllo, wörld ") == "héllo, wörld "


def test_citext_is_a_plain_string() -> None:
    found = column(CITEXT)
    assert found.schema == {"type": "string", "optional": True}
    assert found.convert("MiXeD") == "MiXeD"


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("inet", "10.1.2.3/8"),
        ("cidr", "10.0.0.0/8"),
        ("macaddr", "08:00:2b:01:02:03"),
        ("macaddr8", "08:00:2b:01:02:03:04:05"),
        ("int4range", "[1,10)"),
        ("int8range", "empty"),
        ("numrange", "(1.5,2.5]"),
        ("tsrange", '["2018-01-01 00:00:00","2018-02-01 00:00:00")'),
        ("tstzrange", '["2018-01-01 00:00:00+00",)'),
        ("daterange", "[2018-01-01,2018-02-01)"),
    ],
)
def test_network_and_range_types_are_strings_as_postgres_prints_them(name: str, text: str) -> None:
    found = column(OID[name])
    assert found.schema == {"type": "string", "optional": True}
    assert found.convert(text) == text


@pytest.mark.parametrize(
    ("type_oid", "semantic"),
    [
        (OID["json"], "io.debezium.data.Json"),
        (OID["jsonb"], "io.debezium.data.Json"),
        (OID["xml"], "io.debezium.data.Xml"),
        (OID["uuid"], "io.debezium.data.Uuid"),
        (LTREE, "io.debezium.data.Ltree"),
    ],
)
def test_semantic_strings_pass_the_text_through(type_oid: int, semantic: str) -> None:
    found = column(type_oid)
    assert found.schema == {"type": "string", "optional": True, "name": semantic, "version": 1}
    assert found.convert('{"a": [1, 2]}') == '{"a": [1, 2]}'


def test_enum_lists_its_labels_in_sort_order_as_allowed_values() -> None:
    found = column(MOOD)
    assert found.schema == {
        "type": "string",
        "optional": True,
        "name": "io.debezium.data.Enum",
        "version": 1,
        "parameters": {"allowed": "sad,ok,happy"},
    }
    assert found.convert("happy") == "happy"


# --------------------------------------------------------------------------------------------
# Decimals and money
# --------------------------------------------------------------------------------------------


def test_numeric_with_scale_is_a_connect_decimal_of_unscaled_bytes() -> None:
    found = column(OID["numeric"], numeric(10, 2))
    assert found.schema == {
        "type": "bytes",
        "optional": True,
        "name": "org.apache.kafka.connect.data.Decimal",
        "version": 1,
        "parameters": {"scale": "2", "connect.decimal.precision": "10"},
    }
    assert found.convert("1.50") == "AJY="
    assert found.convert("-1.50") == "/2o="
    assert found.convert("0.00") == "AA=="
    assert found.convert("1.28") == "AIA="


def test_numeric_with_scale_zero_is_a_decimal_not_a_variable_scale_struct() -> None:
    found = column(OID["numeric"], numeric(5, 0))
    assert found.schema["parameters"] == {"scale": "0", "connect.decimal.precision": "5"}
    assert found.convert("100") == "ZA=="


def test_numeric_value_is_rescaled_to_the_column_scale() -> None:
    assert convert(OID["numeric"], "1.5", numeric(10, 2)) == "AJY="


def test_numeric_with_negative_scale_keeps_the_unscaled_value() -> None:
    found = column(OID["numeric"], numeric(2, -3))
    assert found.schema["parameters"] == {"scale": "-3", "connect.decimal.precision": "2"}
    assert found.convert("12000") == "DA=="


def test_numeric_without_scale_is_a_variable_scale_decimal_struct() -> None:
    found = column(OID["numeric"])
    assert found.schema == {
        "type": "struct",
        "fields": [
            {"type": "int32", "optional": False, "field": "scale"},
            {"type": "bytes", "optional": False, "field": "value"},
        ],
        "optional": True,
        "name": "io.debezium.data.VariableScaleDecimal",
        "version": 1,
        "doc": "Variable scaled decimal",
    }
    assert found.convert("1.50") == {"scale": 1, "value": "Dw=="}
    assert found.convert("-12.340") == {"scale": 2, "value": "+y4="}
    assert found.convert("100") == {"scale": 0, "value": "ZA=="}
    assert found.convert("0.0000001") == {"scale": 7, "value": "AQ=="}
    assert found.convert("123456789012345678901234567890.123456789") == {
        "scale": 9,
        "value": "XODppWAV/sWq36MorjmBFQ==",
    }


@pytest.mark.parametrize("typmod", [-1, numeric(10, 2)])
def test_numeric_nan_fails_in_precise_mode_as_in_debezium(typmod: int) -> None:
    with pytest.raises(ValueError, match=r"decimal\.handling\.mode"):
        convert(OID["numeric"], "NaN", typmod)


@pytest.mark.parametrize("typmod", [-1, numeric(10, 2)])
def test_numeric_in_double_mode_is_a_float64(typmod: int) -> None:
    found = column(OID["numeric"], typmod, decimal_handling_mode="double")
    assert found.schema == {"type": "double", "optional": True}
    assert found.convert("-12.34") == -12.34
    assert found.convert("NaN") == "NaN"
    assert found.convert("Infinity") == "Infinity"


def test_numeric_in_string_mode_is_bigdecimal_to_string() -> None:
    scaled = column(OID["numeric"], numeric(20, 10), decimal_handling_mode="string")
    assert scaled.schema == {"type": "string", "optional": True}
    assert scaled.convert("1.5000000000") == "1.5000000000"
    assert scaled.convert("0.0000000001") == "1E-10"
    unscaled = column(OID["numeric"], decimal_handling_mode="string")
    assert unscaled.convert("1.50") == "1.50"
    assert unscaled.convert("0.0000001") == "1E-7"
    assert unscaled.convert("-12.340") == "-12.340"


@pytest.mark.parametrize(
    ("text", "value"),
    [("NaN", "NAN"), ("Infinity", "POSITIVE_INFINITY"), ("-Infinity", "NEGATIVE_INFINITY")],
)
def test_numeric_specials_in_string_mode_are_debezium_names(text: str, value: str) -> None:
    assert convert(OID["numeric"], text, decimal_handling_mode="string") == value


def test_money_is_a_decimal_of_scale_two() -> None:
    found = column(OID["money"])
    assert found.schema == {
        "type": "bytes",
        "optional": True,
        "name": "org.apache.kafka.connect.data.Decimal",
        "version": 1,
        "parameters": {"scale": "2"},
    }
    assert found.convert("$1.50") == "AJY="
    assert found.convert("-$1.50") == "/2o="
    assert found.convert("$1,234.56") == "AeJA"


def test_money_in_double_and_string_modes() -> None:
    assert convert(OID["money"], "-$1,234.56", decimal_handling_mode="double") == -1234.56
    assert convert(OID["money"], "($1,234.50)", decimal_handling_mode="string") == "-1234.50"
    assert column(OID["money"], decimal_handling_mode="string").schema["type"] == "string"


def test_numeric_domain_and_a_domain_over_it_take_the_domain_scale() -> None:
    for domain in (PRICE, PRICE_ALIAS):
        found = column(domain)
        assert found.schema["parameters"] == {"scale": "3", "connect.decimal.precision": "8"}
        assert found.convert("1.500") == "Bdw="


# --------------------------------------------------------------------------------------------
# Dates and times
# --------------------------------------------------------------------------------------------


def _semantic(found: Column) -> tuple[str, str]:
    return found.schema["type"], found.schema["name"]


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("adaptive", ("int32", "io.debezium.time.Date")),
        ("adaptive_time_microseconds", ("int32", "io.debezium.time.Date")),
        ("connect", ("int32", "org.apache.kafka.connect.data.Date")),
    ],
)
def test_date_is_days_since_epoch_in_every_mode(mode: str, expected: tuple[str, str]) -> None:
    found = column(OID["date"], time_precision_mode=mode)
    assert _semantic(found) == expected
    assert found.schema["version"] == 1
    assert found.convert("2018-06-20") == 17702
    assert found.convert("1969-12-31") == -1


def test_date_before_christ_and_after_9999() -> None:
    assert convert(OID["date"], "0001-01-01 BC") == -719528
    assert convert(OID["date"], "10000-01-01") == 2932897


def test_date_infinities_are_debeziums_pgjdbc_local_dates() -> None:
    assert convert(OID["date"], "infinity") == -2147472692
    assert convert(OID["date"], "-infinity") == -2147472691


@pytest.mark.parametrize(
    ("mode", "typmod", "expected", "value"),
    [
        ("adaptive", 0, ("int32", "io.debezium.time.Time"), 54796000),
        ("adaptive", 3, ("int32", "io.debezium.time.Time"), 54796945),
        ("adaptive", 4, ("int64", "io.debezium.time.MicroTime"), 54796945104),
        ("adaptive", -1, ("int64", "io.debezium.time.MicroTime"), 54796945104),
        ("adaptive_time_microseconds", 2, ("int64", "io.debezium.time.MicroTime"), 54796945104),
        ("connect", 6, ("int32", "org.apache.kafka.connect.data.Time"), 54796945),
    ],
)
def test_time_precision_picks_milli_or_micro_time(
    mode: str, typmod: int, expected: tuple[str, str], value: int
) -> None:
    found = column(OID["time"], typmod, time_precision_mode=mode)
    assert _semantic(found) == expected
    text = "15:13:16" if typmod == 0 else "15:13:16.945104"
    assert found.convert(text) == value


def test_time_accepts_the_end_of_day_boundary() -> None:
    assert convert(OID["time"], "24:00:00") == 86_400_000_000


@pytest.mark.parametrize(
    ("mode", "typmod", "expected", "value"),
    [
        ("adaptive", 3, ("int64", "io.debezium.time.Timestamp"), 1529507596945),
        ("adaptive", 6, ("int64", "io.debezium.time.MicroTimestamp"), 1529507596945104),
        ("adaptive", -1, ("int64", "io.debezium.time.MicroTimestamp"), 1529507596945104),
        ("adaptive_time_microseconds", 1, ("int64", "io.debezium.time.Timestamp"), 1529507596945),
        ("connect", 6, ("int64", "org.apache.kafka.connect.data.Timestamp"), 1529507596945),
    ],
)
def test_timestamp_is_utc_epoch_milli_or_micro_by_precision(
    mode: str, typmod: int, expected: tuple[str, str], value: int
) -> None:
    found = column(OID["timestamp"], typmod, time_precision_mode=mode)
    assert _semantic(found) == expected
    assert found.convert("2018-06-20 15:13:16.945104") == value


@pytest.mark.parametrize(
    "text",
    [
        "2026-11-27 21:31:29",
        "2026-11-27 21:31:29.1",
        "2026-11-27 21:31:29.12",
        "2026-11-27 21:31:29.123",
        "2026-11-27 21:31:29.1234",
        "2026-11-27 21:31:29.12345",
        "2026-11-27 21:31:29.123456",
        "1900-02-28 00:00:00.000001",
        "0001-01-01 00:00:00",
    ],
)
def test_timestamp_micros_match_the_calendar_for_every_fraction_length(text: str) -> None:
    parsed = datetime.datetime.fromisoformat(text).replace(tzinfo=datetime.UTC)
    epoch = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
    assert convert(OID["timestamp"], text, 6) == (parsed - epoch) // datetime.timedelta(
        microseconds=1
    )


@pytest.mark.parametrize(
    "text", ["2026-11-27 2x:31:29", "2026-11-27 21:31:29.1234567", "2026-11-27 21:31:29,5"]
)
def test_malformed_timestamp_text_is_a_conversion_error(text: str) -> None:
    with pytest.raises(ValueError, match="2026-11-27"):
        convert(OID["timestamp"], text, 6)


@pytest.mark.parametrize(
    "text",
    ["0", "-0.50", "12.34", "-12.34", "99999999.99", "-1234567890123.45", "12345678901234567.89"],
)
def test_numeric_of_any_length_is_its_exact_unscaled_value(text: str) -> None:
    encoded = convert(OID["numeric"], text, numeric(20, 2))
    unscaled = int.from_bytes(base64.b64decode(encoded), "big", signed=True)
    assert decimal.Decimal(unscaled).scaleb(-2) == decimal.Decimal(text)


def test_timestamp_before_the_epoch_floors_to_milliseconds() -> None:
    assert convert(OID["timestamp"], "1969-12-31 23:59:59.9995", 6) == -500
    assert convert(OID["timestamp"], "1969-12-31 23:59:59.9995", 3) == -1


def test_timestamp_before_christ() -> None:
    assert convert(OID["timestamp"], "0044-03-15 12:00:00 BC") == -63517780800000000


def test_timestamp_infinities_are_the_values_debezium_3_writes() -> None:
    assert convert(OID["timestamp"], "infinity") == 9223372036825200000
    assert convert(OID["timestamp"], "-infinity") == -(2**63)
    assert convert(OID["timestamp"], "infinity", 3) == 9223372036825200000
    assert convert(OID["timestamp"], "-infinity", 3) == -9223372036832400000


def test_timestamptz_is_a_zoned_timestamp_string_in_utc() -> None:
    found = column(OID["timestamptz"], time_precision_mode="connect")
    assert found.schema == {
        "type": "string",
        "optional": True,
        "name": "io.debezium.time.ZonedTimestamp",
        "version": 1,
    }
    assert found.convert("2018-06-20 15:13:16.945104+00") == "2018-06-20T15:13:16.945104Z"


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("2018-06-20 15:13:16.9451+00", "2018-06-20T15:13:16.945100Z"),
        ("2018-06-20 15:13:00+00", "2018-06-20T15:13:00.000000Z"),
        ("2018-06-20 15:13:16.9451+05:30", "2018-06-20T09:43:16.945100Z"),
        ("2018-01-01 01:00:00-02", "2018-01-01T03:00:00.000000Z"),
        ("0044-03-15 12:00:00+00 BC", "-0043-03-15T12:00:00.000000Z"),
        ("10000-01-01 00:00:00+00", "+10000-01-01T00:00:00.000000Z"),
        ("infinity", "infinity"),
        ("-infinity", "-infinity"),
    ],
)
def test_timestamptz_pads_the_fraction_to_six_digits_in_utc(text: str, value: str) -> None:
    assert convert(OID["timestamptz"], text) == value


@pytest.mark.parametrize(
    ("precision", "text", "value"),
    [
        (3, "2018-06-20 15:13:16.9+00", "2018-06-20T15:13:16.900Z"),
        (3, "2018-06-20 15:13:16.9+05", "2018-06-20T10:13:16.900Z"),
        (0, "2018-06-20 15:13:16+00", "2018-06-20T15:13:16Z"),
    ],
)
def test_timestamptz_pads_the_fraction_to_the_column_precision(
    precision: int, text: str, value: str
) -> None:
    assert convert(OID["timestamptz"], text, typmod=precision) == value


def test_timetz_is_a_zoned_time_string_shifted_to_utc() -> None:
    found = column(OID["timetz"])
    assert _semantic(found) == ("string", "io.debezium.time.ZonedTime")
    assert found.convert("10:00:00+05:30") == "04:30:00Z"
    assert found.convert("01:02:03.4-03") == "04:02:03.4Z"
    assert found.convert("15:13:16.945104+00") == "15:13:16.945104Z"
    assert found.convert("23:00:00-02") == "01:00:00Z"
    assert found.convert("24:00:00+00") == "24:00:00Z"


# --------------------------------------------------------------------------------------------
# Intervals
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "micros"),
    [
        ("P1Y2M3DT4H5M6.78S", 37091106780000),
        ("P-1Y-2M3DT-4H-5M-6.78S", -36572706780000),
        ("PT-0.5S", -500000),
        ("P1MT0.000001S", 2629800000001),
        ("PT0S", 0),
        ("PT100H", 360000000000),
    ],
)
def test_interval_is_micro_duration_with_average_month_length(text: str, micros: int) -> None:
    found = column(OID["interval"])
    assert _semantic(found) == ("int64", "io.debezium.time.MicroDuration")
    assert found.convert(text) == micros


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("P1Y2M3DT4H5M6.78S", "P1Y2M3DT4H5M6.78S"),
        ("P-1Y-2M3DT-4H-5M-6.78S", "P-1Y-2M3DT-4H-5M-6.78S"),
        ("PT0S", "P0Y0M0DT0H0M0S"),
        ("PT0.000001S", "P0Y0M0DT0H0M0.000001S"),
        ("PT59.999999S", "P0Y0M0DT0H0M59.999999S"),
        ("PT-0.5S", "P0Y0M0DT0H0M-0.5S"),
        ("PT100S", "P0Y0M0DT0H0M100S"),
        ("P-1D", "P0Y0M-1DT0H0M0S"),
    ],
)
def test_interval_in_string_mode_spells_every_field(text: str, value: str) -> None:
    found = column(OID["interval"], interval_handling_mode="string")
    assert _semantic(found) == ("string", "io.debezium.time.Interval")
    assert found.convert(text) == value


def test_interval_in_postgres_style_is_refused_with_a_hint() -> None:
    with pytest.raises(ValueError, match="SESSION_SETTINGS"):
        convert(OID["interval"], "1 year 2 mons")


# --------------------------------------------------------------------------------------------
# Binary
# --------------------------------------------------------------------------------------------


def test_bytea_in_bytes_mode_is_connect_bytes_written_as_base64() -> None:
    found = column(OID["bytea"])
    assert found.schema == {"type": "bytes", "optional": True}
    assert found.convert("\\x0102ff") == "AQL/"
    assert found.convert("\\x") == ""


def test_bytea_in_base64_mode_is_a_base64_string() -> None:
    found = column(OID["bytea"], binary_handling_mode="base64")
    assert found.schema == {"type": "string", "optional": True}
    assert found.convert("\\x0102ff") == "AQL/"


def test_bytea_in_hex_mode_is_a_lowercase_hex_string() -> None:
    found = column(OID["bytea"], binary_handling_mode="hex")
    assert found.schema == {"type": "string", "optional": True}
    assert found.convert("\\x0102ff") == "0102ff"


# --------------------------------------------------------------------------------------------
# Geometry
# --------------------------------------------------------------------------------------------


def test_point_is_a_point_struct_with_x_y_and_its_wkb() -> None:
    found = column(OID["point"])
    assert found.schema == {
        "type": "struct",
        "fields": [
            {"type": "double", "optional": False, "field": "x"},
            {"type": "double", "optional": False, "field": "y"},
            {"type": "bytes", "optional": True, "field": "wkb"},
            {"type": "int32", "optional": True, "field": "srid"},
        ],
        "optional": True,
        "name": "io.debezium.data.geometry.Point",
        "version": 1,
        "doc": "Geometry (POINT)",
    }
    assert found.convert("(1.5,2.5)") == {
        "x": 1.5,
        "y": 2.5,
        "wkb": "AQEAAAAAAAAAAAD4PwAAAAAAAARA",
        "srid": None,
    }


def test_postgis_geometry_keeps_the_ewkb_and_reads_its_srid() -> None:
    found = column(GEOMETRY)
    assert found.schema["name"] == "io.debezium.data.geometry.Geometry"
    assert (found.schema["version"], found.schema["optional"]) == (2, True)
    assert found.schema["fields"] == [
        {"type": "bytes", "optional": False, "field": "wkb"},
        {"type": "int32", "optional": True, "field": "srid"},
        {
            "type": "map",
            "keys": {"type": "string", "optional": False},
            "values": {"type": "string", "optional": False},
            "optional": True,
            "field": "extensions",
        },
    ]
    with_srid = "0101000020E6100000000000000000F03F0000000000000040"
    assert found.convert(with_srid) == {
        "wkb": "AQEAACDmEAAAAAAAAAAA8D8AAAAAAAAAQA==",
        "srid": 4326,
        "extensions": None,
    }
    assert found.convert("0101000000000000000000F03F0000000000000040")["srid"] == 0


@pytest.mark.parametrize(
    ("name", "text", "kind", "points"),
    [
        ("box", "(1,1),(0,0)", "box", [(1, 1), (1, 0), (0, 0), (0, 1), (1, 1)]),
        ("lseg", "[(0,0),(1,2)]", "lseg", [(0, 0), (1, 2)]),
        ("path", "[(0,0),(1,1)]", "path", [(0, 0), (1, 1)]),
        ("polygon", "((0,0),(0,1),(1,1))", "polygon", [(0, 0), (0, 1), (1, 1), (0, 0)]),
    ],
)
def test_built_in_geometric_types_are_geometry_wkb_with_their_type_in_extensions(
    name: str, text: str, kind: str, points: list[tuple[float, float]]
) -> None:
    found = column(OID[name], optional=False)
    assert (found.schema["name"], found.schema["version"]) == (
        "io.debezium.data.geometry.Geometry",
        2,
    )
    assert found.schema["optional"] is True  # Debezium builds Geometry optional
    value = found.convert(text)
    wkb = base64.b64decode(value["wkb"])
    count = struct.unpack_from("<I", wkb, 9 if kind in ("box", "polygon") else 5)[0]
    coordinates = struct.unpack_from(f"<{2 * count}d", wkb, len(wkb) - 16 * count)
    assert list(zip(coordinates[::2], coordinates[1::2], strict=True)) == points
    assert value["extensions"]["type"] == kind


def test_a_path_says_whether_it_is_closed() -> None:
    found = column(OID["path"])
    assert found.convert("((0,0),(1,1))")["extensions"] == {"type": "path", "closed": "true"}
    assert found.convert("[(0,0),(1,1)]")["extensions"] == {"type": "path", "closed": "false"}


def test_circle_and_line_are_their_own_structs() -> None:
    circle = column(OID["circle"]).convert("<(1.5,-2),3>")
    assert (circle["center"]["x"], circle["center"]["y"], circle["radius"]) == (1.5, -2.0, 3.0)
    assert column(OID["line"]).convert("{1,-1,0.5}") == {"a": 1.0, "b": -1.0, "c": 0.5}
    assert column(OID["circle"]).schema["name"] == "io.debezium.data.geometry.Circle"


def test_postgis_geography_is_the_geography_struct() -> None:
    found = column(GEOGRAPHY)
    assert (found.schema["name"], found.schema["doc"]) == (
        "io.debezium.data.geometry.Geography",
        "Geography",
    )


# --------------------------------------------------------------------------------------------
# hstore
# --------------------------------------------------------------------------------------------


def test_hstore_in_json_mode_is_a_compact_json_string() -> None:
    found = column(HSTORE)
    assert found.schema == {
        "type": "string",
        "optional": True,
        "name": "io.debezium.data.Json",
        "version": 1,
    }
    assert found.convert('"a"=>"1", "b"=>NULL') == '{"a":"1","b":null}'
    assert found.convert("") == "{}"


def test_hstore_unescapes_postgres_quoting_and_escapes_like_jackson() -> None:
    text = '"say \\"hi\\""=>"back\\\\slash", "tab"=>"a\tb\x01"'
    assert convert(HSTORE, text) == '{"tab":"a\\tb\\u0001","say \\"hi\\"":"back\\\\slash"}'


def test_hstore_keys_come_out_in_java_hashmap_order() -> None:
    text = '"zebra"=>"1", "apple"=>"2", "key 1"=>"3", "Mango"=>"4", "b"=>"5"'
    assert convert(HSTORE, text) == ('{"zebra":"1","apple":"2","b":"5","key 1":"3","Mango":"4"}')
    many = ", ".join(f'"k{i}"=>"{i}"' for i in range(20))
    order = list(convert(HSTORE, many, hstore_handling_mode="map"))
    assert order == [
        f"k{i}" for i in (0, 1, 2, 3, 4, 5, 11, 6, 10, 7, 13, 8, 12, 9, 15, 14, 17, 16, 19, 18)
    ]


def test_hstore_in_map_mode_is_a_string_map_with_optional_values() -> None:
    found = column(HSTORE, hstore_handling_mode="map")
    assert found.schema == {
        "type": "map",
        "keys": {"type": "string", "optional": False},
        "values": {"type": "string", "optional": True},
        "optional": True,
    }
    assert found.convert('"a"=>"1", "b"=>NULL, "c"=>"NULL"') == {"a": "1", "b": None, "c": "NULL"}


def test_hstore_garbage_is_refused() -> None:
    with pytest.raises(ValueError, match="hstore"):
        convert(HSTORE, '"a"=>"1" junk')


# --------------------------------------------------------------------------------------------
# Arrays
# --------------------------------------------------------------------------------------------


def test_int_array_is_a_connect_array_with_optional_items() -> None:
    found = column(ARRAY["int4"])
    assert found.schema == {
        "type": "array",
        "items": {"type": "int32", "optional": True},
        "optional": True,
    }
    assert found.convert("{1,NULL,-3}") == [1, None, -3]
    assert found.convert("{}") == []


def test_text_array_parses_quotes_escapes_and_the_null_marker() -> None:
    text = '{"a b",NULL,"NULL","x\\"y","c\\\\d","",plain}'
    assert convert(ARRAY["text"], text) == ["a b", None, "NULL", 'x"y', "c\\d", "", "plain"]


def test_array_with_explicit_bounds_drops_the_bounds() -> None:
    assert convert(ARRAY["int4"], "[0:1]={1,2}") == [1, 2]


def test_multidimensional_arrays_are_refused() -> None:
    with pytest.raises(ValueError, match="one-dimensional"):
        convert(ARRAY["int4"], "{{1,2},{3,4}}")
    with pytest.raises(ValueError, match="one-dimensional"):
        convert(ARRAY["text"], '{{"a b"},{c}}')


def test_numeric_array_items_take_the_column_scale() -> None:
    found = column(ARRAY["numeric"], numeric(10, 2))
    assert found.schema["items"] == {
        "type": "bytes",
        "optional": True,
        "name": "org.apache.kafka.connect.data.Decimal",
        "version": 1,
        "parameters": {"scale": "2", "connect.decimal.precision": "10"},
    }
    assert found.convert("{1.50,NULL}") == ["AJY=", None]


def test_temporal_arrays_convert_each_element() -> None:
    zoned = '{"2018-06-20 15:13:16.945104+00",infinity}'
    assert convert(ARRAY["timestamptz"], zoned) == ["2018-06-20T15:13:16.945104Z", "infinity"]
    assert convert(ARRAY["date"], "{2018-06-20,NULL}") == [17702, None]
    assert column(ARRAY["time"], 3).schema["items"]["name"] == "io.debezium.time.Time"


def test_enum_array_items_are_required_enums_as_in_debezium() -> None:
    found = column(MOOD_ARRAY)
    assert found.schema["items"] == {
        "type": "string",
        "optional": False,
        "name": "io.debezium.data.Enum",
        "version": 1,
        "parameters": {"allowed": "sad,ok,happy"},
    }
    assert found.convert("{sad,happy}") == ["sad", "happy"]


def test_extension_arrays_use_the_element_mapping() -> None:
    found = column(HSTORE_ARRAY, hstore_handling_mode="map")
    assert found.convert('{"\\"a\\"=>\\"1\\""}') == [{"a": "1"}]


def test_bytea_array_items_follow_binary_mode() -> None:
    found = column(ARRAY["bytea"])
    assert found.schema["items"] == {"type": "bytes", "optional": True}
    assert found.convert('{"\\\\x01ff"}') == ["Af8="]


@pytest.mark.parametrize("name", ["money", "name", "interval", "bit", "varbit", "xml", "point"])
def test_arrays_debezium_has_no_schema_for_are_left_out(name: str) -> None:
    assert maybe_column(ARRAY[name]) is None
    assert maybe_column(ARRAY[name], include_unknown_datatypes=True) is None


def test_arrays_of_unknown_elements_are_opaque_bytes_only_when_asked() -> None:
    assert maybe_column(ARRAY["box"]) is None
    found = column(ARRAY["box"], include_unknown_datatypes=True)
    assert found.schema["items"] == {"type": "bytes", "optional": False}
    assert found.convert("{(1,1),(0,0);(2,2),(1,1)}") == ["KDEsMSksKDAsMCk=", "KDIsMiksKDEsMSk="]


def test_domain_element_arrays_are_unknown_but_domains_over_arrays_resolve() -> None:
    assert maybe_column(PRICE_ARRAY) is None
    assert column(INT_LIST).convert("{1,2}") == [1, 2]


# --------------------------------------------------------------------------------------------
# Unknown types
# --------------------------------------------------------------------------------------------


def test_unknown_types_are_left_out_by_default() -> None:
    assert maybe_column(OID["pg_lsn"]) is None
    assert maybe_column(999_999) is None


@pytest.mark.parametrize(
    ("mode", "schema_type", "value"),
    [
        ("bytes", "bytes", "MC8xNkIzRDgw"),
        ("base64", "string", "MC8xNkIzRDgw"),
        ("hex", "string", "302f31364233443830"),
    ],
)
def test_unknown_types_are_utf8_text_bytes_per_binary_mode(
    mode: str, schema_type: str, value: str
) -> None:
    found = column(OID["pg_lsn"], include_unknown_datatypes=True, binary_handling_mode=mode)
    assert found.schema == {"type": schema_type, "optional": True}
    assert found.convert("0/16B3D80") == value


def test_an_oid_missing_from_the_registry_is_opaque_when_unknowns_are_included() -> None:
    found = column(999_999, include_unknown_datatypes=True)
    assert found.type_name == "999999"
    assert found.convert("x") == "eA=="
