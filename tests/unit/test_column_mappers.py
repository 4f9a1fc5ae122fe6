"""Column mappers and name adjustment behave as Debezium's ColumnMappers and SchemaNameAdjuster.

Digests were computed with the JDK (``MessageDigest`` over the salt and the value written by
``ObjectOutputStream`` for v1, ``String.getBytes(UTF_8)`` for v2); adjusted names with
Debezium 3.7's ``SchemaNameAdjuster.AVRO``/``AVRO_UNICODE``/``AVRO_FIELD_NAMER``/
``AVRO_UNICODE_FIELD_NAMER``.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest

from cdcflow.capture.mapping import (
    ColumnMappers,
    ColumnRule,
    SourceColumn,
    apply_rule,
    apply_rule_to_value_field,
    java_serialized,
    parse_rule,
    propagated_parameters,
    propagation_rules,
    truncate_string,
    with_doc,
)
from cdcflow.capture.names import NameAdjuster, NameConflictError, adjust_name
from cdcflow.capture.spi import Column, TableId

TABLE = TableId("public", "users")
VARCHAR_10 = SourceColumn("code", "varchar", 10, 0, character=True)
TEXT = SourceColumn("note", "text", 2_147_483_647, 0, character=True)
INT = SourceColumn("n", "int4", 10, 0, character=False)


def _column(type_: str = "string", name: str | None = None, **extra: Any) -> Column:
    schema: dict[str, Any] = {"type": type_, "optional": True, **extra}
    if name:
        schema["name"] = name
    return Column("c", "t", schema, lambda text: text)


def _mapped(rule: ColumnRule, source: SourceColumn, column: Column | None = None) -> Column:
    return apply_rule(column or _column(), source, rule)[0]


# -- parsing -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "kind", "length", "algorithm", "salt"),
    [
        ("column.truncate.to.20.chars", "truncate", 20, "", ""),
        ("column.mask.with.0.chars", "mask", 0, "", ""),
        ("column.mask.hash.SHA-256.with.salt.pepper", "hash", 0, "SHA-256", "pepper"),
        ("column.mask.hash.v2.MD5.with.salt.a.b", "hash_v2", 0, "MD5", "a.b"),
    ],
)
def test_rule_properties_carry_their_arguments_in_the_name(
    name: str, kind: str, length: int, algorithm: str, salt: str
) -> None:
    rule = parse_rule(name, "public.users.a, public.users.b")
    assert rule == ColumnRule(
        kind,  # type: ignore[arg-type]
        ("public.users.a", "public.users.b"),
        length=length,
        algorithm=algorithm,
        salt=salt,
    )


def test_other_property_names_are_not_rules() -> None:
    assert parse_rule("column.mask.with.x.chars", "a") is None
    assert parse_rule("table.include.list", "a") is None


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("column.mask.hash.MD2.with.salt.x", "a", "unsupported hash algorithm"),
        ("column.truncate.to.3.chars", "public.(", "not a regular expression"),
    ],
)
def test_a_bad_rule_argument_is_an_error(name: str, value: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_rule(name, value)


def test_rules_match_the_whole_name_case_insensitively() -> None:
    rule = ColumnRule("mask", ("PUBLIC.USERS.CO.*",), length=3)
    assert rule.matches(TABLE, VARCHAR_10)
    assert not ColumnRule("mask", ("users.code",), length=3).matches(TABLE, VARCHAR_10)


def test_datatype_propagation_matches_schema_table_and_type_name() -> None:
    [rule] = propagation_rules((), (r"public\.users\.varchar",))
    assert rule.matches(TABLE, VARCHAR_10) and not rule.matches(TABLE, TEXT)


def test_the_first_rule_in_debeziums_order_wins() -> None:
    everything = (".*",)
    mappers = ColumnMappers(
        [
            ColumnRule("hash", everything, algorithm="MD5", salt="s"),
            *propagation_rules(everything, ()),
            ColumnRule("mask", everything, length=2),
            ColumnRule("truncate", everything, length=5),
        ]
    )
    assert [r.kind for r in mappers.rules] == ["truncate", "mask", "propagate", "hash"]
    rule = mappers.rule_for(TABLE, TEXT)
    assert rule is not None and rule.kind == "truncate"


# -- masking and hashing -------------------------------------------------------------------


def test_masking_replaces_character_values_and_null_with_stars() -> None:
    masked = _mapped(ColumnRule("mask", (".*",), length=4), TEXT)
    assert [masked.convert("secret"), masked.convert(None)] == ["****", "****"]
    assert masked.schema["parameters"] == {"masked": "true"}


def test_masking_marks_but_keeps_other_types() -> None:
    masked = _mapped(ColumnRule("mask", (".*",), length=4), INT, _column("int32"))
    assert masked.convert(7) == 7
    assert masked.schema["parameters"] == {"masked": "true"}


@pytest.mark.parametrize(
    ("value", "v1", "v2"),
    [
        (
            "hello",
            "aabd2fe7a97c53b45502d4592a8e255fd7d25c172c4e58b6411a2e01ebafb06e",
            "711394d33945fda478f3c0c38d0211ccf58e1f50416321a305e09e6709d00564",
        ),
        (
            "café €",
            "63185ab66559cf262d19e433e00bc23f10e61744b3ebb6f29ed075bba623ffc9",
            "0669b0ef9258fdf7202a931132111934e2fdebc7d8b5d03690e62b67e4deea07",
        ),
        (
            "emoji \U0001f600",
            "25292caed7ba37851d7a8e5ed844311e9347dc5868facfa26b05644436888519",
            "16ec9e1e830ec42a305d6703db35e75852ca9610830733b9a95569491a2d80cb",
        ),
        (
            "nul\x00x",
            "6d727e9967e616d1894c6abe286e203f354255656178b5a768329c2540827272",
            "532c48fca3ab855fae643e4d3a50306cc66c0badcbb0e3276dc1e8c7f472cfa0",
        ),
        (
            "a" * 70000,
            "ac2aa9f87b19c987da840e714cccbaf6b9036ee7a16483414d09d15054f02ca4",
            "ee7a309bab252035ac308b7db59d4963acaf6b01265651febebf5a4d33bf582c",
        ),
    ],
)
def test_hashing_matches_the_jdk_digest_of_salt_and_value(value: str, v1: str, v2: str) -> None:
    hashed = _mapped(ColumnRule("hash", (".*",), algorithm="SHA-256", salt="pepper"), TEXT)
    hashed_v2 = _mapped(ColumnRule("hash_v2", (".*",), algorithm="sha-256", salt="pepper"), TEXT)
    assert hashed.convert(value) == v1
    assert hashed_v2.convert(value) == v2


def test_hashes_are_cut_to_the_column_length_and_null_stays_null() -> None:
    rule = ColumnRule("hash", (".*",), algorithm="MD5", salt="pepper")
    hashed = _mapped(rule, VARCHAR_10)
    assert hashed.convert("hello") == "a2be34c73b"
    assert hashed.convert(None) is None
    assert hashed.schema["parameters"] == {"masked": "true"}


def test_java_serialization_writes_the_stream_header_and_modified_utf8() -> None:
    assert java_serialized("a\x00é") == b"\xac\xed\x00\x05\x74\x00\x05a\xc0\x80\xc3\xa9"
    assert java_serialized("x" * 65536)[:13] == b"\xac\xed\x00\x05\x7c" + (65536).to_bytes(8, "big")


# -- truncation ----------------------------------------------------------------------------


def test_truncation_cuts_strings_and_names_the_length() -> None:
    cut = _mapped(ColumnRule("truncate", (".*",), length=3), TEXT)
    assert [cut.convert("abcdef"), cut.convert("ab"), cut.convert(None)] == ["abc", "ab", None]
    assert cut.schema["parameters"] == {"truncateLength": "3"}


def test_truncation_skips_columns_no_longer_than_the_limit() -> None:
    untouched = _mapped(ColumnRule("truncate", (".*",), length=10), VARCHAR_10)
    assert untouched.convert("abcdefghij") == "abcdefghij"
    assert "parameters" not in untouched.schema


def test_truncation_counts_utf16_units_like_java() -> None:
    assert truncate_string("a\U0001f600b", 3) == "a\U0001f600"
    assert truncate_string("a\U0001f600b", 2) == "a"  # half a pair cannot be sent


def test_truncation_cuts_plain_binary_bytes_and_leaves_decimals() -> None:
    binary = _mapped(ColumnRule("truncate", (".*",), length=2), TEXT, _column("bytes"))
    encoded = base64.b64encode(b"\x01\x02\x03").decode()
    assert binary.convert(encoded) == base64.b64encode(b"\x01\x02").decode()
    decimal = _column("bytes", "org.apache.kafka.connect.data.Decimal", parameters={"scale": "2"})
    kept = _mapped(ColumnRule("truncate", (".*",), length=1), TEXT, decimal)
    assert kept.convert(encoded) == encoded
    assert kept.schema["parameters"] == {"scale": "2", "truncateLength": "1"}


# -- propagation ---------------------------------------------------------------------------


def test_propagation_adds_type_length_scale_and_name_after_existing_parameters() -> None:
    decimal = _column("bytes", "org.apache.kafka.connect.data.Decimal", parameters={"scale": "2"})
    source = SourceColumn("price", "numeric", 10, 2, character=False)
    [rule] = propagation_rules((".*",), ())
    mapped = _mapped(rule, source, decimal)
    assert list(mapped.schema) == ["type", "optional", "name", "parameters"]
    assert mapped.schema["parameters"] == {
        "scale": "2",
        "__debezium.source.column.type": "NUMERIC",
        "__debezium.source.column.length": "10",
        "__debezium.source.column.scale": "2",
        "__debezium.source.column.name": "price",
    }


def test_propagation_leaves_out_an_unset_length_and_scale() -> None:
    [rule] = propagation_rules((".*",), ())
    mapped = _mapped(rule, SourceColumn("x", "numeric", -1, None, character=False))
    assert mapped.schema["parameters"] == {
        "__debezium.source.column.type": "NUMERIC",
        "__debezium.source.column.name": "x",
    }


# -- name adjustment -----------------------------------------------------------------------

NAMES = [
    # name, schema avro, schema avro_unicode, field avro, field avro_unicode
    ("plain", "plain", "plain", "plain", "plain"),
    ("my-col", "my_col", "my_u002dcol", "my_col", "my_u002dcol"),
    ("1abc", "_1abc", "_u0031abc", "_1abc", "_u0031abc"),
    ("a.b", "a.b", "a.b", "a_b", "a_u002eb"),
    ("a_b", "a_b", "a_u005fb", "a_b", "a_u005fb"),
    ("café", "caf_", "caf_u00e9", "caf_", "caf_u00e9"),
    ("\u0101x", "_x", "_u101x", "_x", "_u101x"),
    ("emoji\U0001f600", "emoji__", "emoji_ud83d_ude00", "emoji__", "emoji_ud83d_ude00"),
    ("x y.z-1", "x_y.z_1", "x_u0020y.z_u002d1", "x_y_z_1", "x_u0020y_u002ez_u002d1"),
]


@pytest.mark.parametrize(("name", "avro", "unicode", "field_avro", "field_unicode"), NAMES)
def test_names_are_adjusted_exactly_as_debezium_adjusts_them(
    name: str, avro: str, unicode: str, field_avro: str, field_unicode: str
) -> None:
    assert adjust_name(name, "none", field=False) == name
    assert adjust_name(name, "avro", field=False) == avro
    assert adjust_name(name, "avro_unicode", field=False) == unicode
    assert adjust_name(name, "avro", field=True) == field_avro
    assert adjust_name(name, "avro_unicode", field=True) == field_unicode


def test_two_names_adjusted_into_one_are_a_conflict() -> None:
    adjust = NameAdjuster("avro", fields=True)
    assert adjust("a-b") == "a_b"
    assert adjust("a_b") == "a_b"  # unchanged names never conflict
    with pytest.raises(NameConflictError, match=r"'a-b' and 'a\.b'"):
        adjust("a.b")


# -- key columns and comments --------------------------------------------------------------


def test_a_key_columns_mapper_applies_to_its_value_field_only() -> None:
    column = Column("code", "varchar", {"type": "string", "optional": False}, str)
    rule = ColumnRule("hash_v2", (r"public\.users\.code",), algorithm="SHA-256", salt="s")
    mapped = apply_rule_to_value_field(column, VARCHAR_10, rule)
    assert mapped.schema == column.schema and mapped.convert is column.convert
    assert mapped.value_schema == {
        "type": "string",
        "optional": False,
        "parameters": {"masked": "true"},
    }
    assert mapped.value_map is not None and len(mapped.value_map("abc")) == 10


def test_propagation_on_a_key_column_changes_only_its_value_schema() -> None:
    column = Column("code", "varchar", {"type": "string", "optional": False}, str)
    mapped = apply_rule_to_value_field(column, VARCHAR_10, ColumnRule("propagate", (".*",)))
    assert mapped.value_map is None
    assert mapped.value_schema is not None and "parameters" in mapped.value_schema


def test_a_comment_documents_the_field_before_its_parameters_and_default() -> None:
    schema = {"type": "int32", "optional": True, "parameters": {"a": "b"}, "default": 0}
    assert list(with_doc(schema, "the count")) == [
        "type",
        "optional",
        "doc",
        "parameters",
        "default",
    ]


def test_propagation_carries_the_comment_when_comments_are_read() -> None:
    commented = SourceColumn("code", "varchar", 10, 0, character=True, comment="the code")
    assert list(propagated_parameters(commented)) == [
        "__debezium.source.column.type",
        "__debezium.source.column.length",
        "__debezium.source.column.scale",
        "__debezium.source.column.comment",
        "__debezium.source.column.name",
    ]
    assert "__debezium.source.column.comment" not in propagated_parameters(VARCHAR_10)
