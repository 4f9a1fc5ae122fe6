"""``event.converting.failure.handling.mode``: a column value that cannot be converted.

Debezium converts each column of a row on its own; when one conversion throws, the mode
decides: ``fail`` (cdcflow's default; Debezium's is ``warn``) stops on it, ``warn`` logs a
warning and leaves the column null, ``skip`` does the same with a debug message. A null in a
``NOT NULL`` column makes the event itself invalid, and so does a failure under ``fail``: the
whole event is then handled by ``event.processing.failure.handling.mode`` (stop, or leave the
event out). Rows are converted in one pass first; the column-by-column pass runs only for a
row that failed, so the mode costs the ordinary path nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from cdcflow.capture.spi import Column, Converter, TableId

log = logging.getLogger(__name__)

ConvertingMode = Literal["fail", "warn", "skip"]
#: What a converter raises for a value it cannot convert.
CONVERSION_ERRORS = (ValueError, TypeError, ArithmeticError)


class ConversionError(ValueError):
    """A value that cannot be converted where the event cannot carry a null instead."""


@dataclass(frozen=True)
class ConvertingFailures:
    """The ``event.converting.failure.handling.mode`` of one connector."""

    mode: ConvertingMode = "fail"

    def allow_null(self, table: TableId, column: Column, error: Exception) -> None:
        """Log a value that failed to convert, which becomes null; or raise ConversionError
        when the mode is ``fail`` or the column cannot hold a null."""
        what = f"'{table}.{column.name}' of type {column.type_name}"
        if self.mode == "fail":
            raise ConversionError(f"Failed to properly convert data value for {what}: {error}")
        if not column.optional:
            raise ConversionError(
                f"Failed to properly convert data value for {what}: {error}; the column is "
                "NOT NULL, so the event cannot carry a null in its place"
            )
        level = logging.WARNING if self.mode == "warn" else logging.DEBUG
        log.log(level, "Failed to properly convert data value for %s: %s", what, error)

    def row(
        self,
        table: TableId,
        columns: Sequence[Column],
        converters: Sequence[Converter],
        values: Iterable[Any],
    ) -> tuple[Any, ...]:
        """Convert ``values`` column by column, the failing ones replaced per the mode."""
        out: list[Any] = []
        for column, convert, value in zip(columns, converters, values, strict=True):
            try:
                out.append(convert(value))
            except CONVERSION_ERRORS as error:
                self.allow_null(table, column, error)
                out.append(None)
        return tuple(out)

    def convert(
        self,
        table: TableId,
        columns: Sequence[Column],
        converters: tuple[Converter, ...],
        values: tuple[Any, ...],
    ) -> tuple[Any, ...]:
        """Convert a row: in one pass, or column by column when a value fails."""
        if len(values) != len(converters):
            raise ValueError(f"{table}: {len(values)} values for {len(converters)} columns")
        try:
            # indexed, not zip(strict=True): compiled, this is a C loop; a zip with a keyword
            # is Python's zip object, a tuple per column
            return tuple([convert(values[i]) for i, convert in enumerate(converters)])
        except CONVERSION_ERRORS:
            return self.row(table, columns, converters, values)
