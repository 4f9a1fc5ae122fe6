"""Column defaults read from DEFAULT expressions the way Debezium reads them."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cdcflow.capture.connectors.postgres import defaults
from cdcflow.capture.spi import Column


@pytest.mark.parametrize(
    ("type_name", "expression", "text"),
    [
        ("int4", "7", "7"),
        ("int4", "nextval('t_id_seq'::regclass)", "0"),
        ("int8", "'9223372036854775807'::bigint", "9223372036854775807"),
        ("int4", "NULL::integer", None),
        ("text", "'x'::text", "x"),
        ("text", "NULL::text", None),
        ("varchar", "'abc'::character varying", "abc"),
        ("numeric", "1.5", "1.5"),
        ("numeric", "'-1.5'::numeric", "-1.5"),
        ("bool", "true", "true"),
        ("date", "'2020-01-01'::date", "2020-01-01"),
        ("date", "CURRENT_DATE", "1970-01-01"),
        ("time", "'10:00:00'::time without time zone", "10:00:00"),
        ("time", "LOCALTIME", "00:00:00"),
        ("timestamp", "now()", "1970-01-01 00:00:00"),
        ("timestamptz", "CURRENT_TIMESTAMP", "1970-01-01 00:00:00+00"),
        ("uuid", "gen_random_uuid()", "00000000-0000-0000-0000-000000000000"),
        ("jsonb", "'{\"a\": 1}'::jsonb", '{"a": 1}'),
        ("bytea", "'\\x00'::bytea", None),  # Debezium has no rule for bytea
        ("int4", None, None),
    ],
)
def test_default_expressions_reduce_to_debeziums_literal(
    type_name: str, expression: str | None, text: str | None
) -> None:
    assert defaults.literal(type_name, expression) == text


def test_enum_defaults_need_a_cast_to_the_columns_own_enum() -> None:
    assert defaults.literal("mood", "'ok'::mood", enum=True) == "ok"
    assert defaults.literal("mood", "'ok'::public.mood", enum=True) == "ok"
    assert defaults.literal("mood", "'ok'::other", enum=True) is None


def _int_column() -> Column:
    return Column(
        "n", "int4", {"type": "int32", "optional": True}, lambda t: None if t is None else int(t)
    )


def test_a_default_goes_into_the_schema_and_replaces_nulls_as_json_converter_does() -> None:
    column = defaults.with_default(_int_column(), "7")
    assert column.schema == {"type": "int32", "optional": True, "default": 7}
    assert column.convert(None) == 7
    assert column.convert("3") == 3


def test_a_default_that_does_not_convert_is_left_out() -> None:
    column = _int_column()
    assert defaults.with_default(column, "not a number") is column
    assert defaults.with_default(column, None) is column


def test_with_replace_null_with_default_off_nulls_stay_null_and_the_schema_keeps_the_default() -> (
    None
):
    column = defaults.with_default(_int_column(), "7", replace_nulls=False)
    assert column.schema["default"] == 7
    assert column.convert(None) is None
    required = replace(_int_column(), optional=False)
    assert defaults.with_default(required, "7", replace_nulls=False).convert(None) == 7
