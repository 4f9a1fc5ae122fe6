"""event.converting.failure.handling.mode: a value that cannot be converted becomes null
(warn, skip) or fails its event (fail, or a NOT NULL column), as in Debezium."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from cdcflow.capture.converting import ConversionError, ConvertingFailures
from cdcflow.capture.spi import Column, TableId

TABLE = TableId("public", "prices")


def _number(text: str | None) -> Any:
    if text == "NaN":
        raise ValueError("numeric NaN has no Connect Decimal form")
    return None if text is None else int(text)


COLUMNS = (
    Column("id", "int4", {"type": "int32", "optional": False}, _number, optional=False),
    Column("amount", "numeric", {"type": "bytes", "optional": True}, _number),
)
CONVERTERS = tuple(column.convert for column in COLUMNS)


def test_a_row_without_failures_converts_in_one_pass() -> None:
    assert ConvertingFailures("fail").convert(TABLE, COLUMNS, CONVERTERS, ("1", "2")) == (1, 2)


@pytest.mark.parametrize(("mode", "level"), [("warn", logging.WARNING), ("skip", logging.DEBUG)])
def test_a_nullable_value_that_fails_becomes_null_and_is_logged(
    mode: Any, level: int, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG):
        row = ConvertingFailures(mode).convert(TABLE, COLUMNS, CONVERTERS, ("1", "NaN"))
    assert row == (1, None)
    [record] = [r for r in caplog.records if "public.prices.amount" in r.getMessage()]
    assert record.levelno == level
    assert "of type numeric" in record.getMessage()


def test_fail_mode_raises_for_the_column() -> None:
    with pytest.raises(ConversionError, match=r"'public\.prices\.amount' of type numeric"):
        ConvertingFailures("fail").convert(TABLE, COLUMNS, CONVERTERS, ("1", "NaN"))


def test_a_not_null_column_cannot_take_a_null_in_any_mode() -> None:
    with pytest.raises(ConversionError, match="NOT NULL"):
        ConvertingFailures("warn").convert(TABLE, COLUMNS, CONVERTERS, ("NaN", "2"))
