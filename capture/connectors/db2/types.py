"""Db2 column types mapped to Kafka Connect schemas and converters, the way Debezium does.

A column's structure (:mod:`.structure`: the JDBC code and name JCC reports) decides its
Connect schema and converter, following Debezium's ``Db2ValueConverters`` over
``JdbcValueConverters``: ``DECFLOAT`` is ``io.debezium.data.VariableScaleDecimal`` in
``precise`` mode, ``XML`` is ``io.debezium.data.Xml``, ``TIME``/``TIMESTAMP`` precision is
the catalog's scale (``TIMESTAMP(3)`` → ``io.debezium.time.Timestamp``, ``(6)`` →
``MicroTimestamp``, ``(9)``/``(12)`` → ``NanoTimestamp`` in ``adaptive`` mode), and a zone-less
``TIMESTAMP`` is read as UTC. A type Debezium cannot map is left out of the event, as Debezium
does (with a warning).

Converters take what a DB-API driver returns — ``int``, ``float``, ``Decimal`` or its text
(``ibm_db`` gives ``DECIMAL``/``DECFLOAT`` as text), ``str``, ``bytes``/``memoryview``,
``date``/``time``/``datetime``, ``bool`` — and return what ``JsonConverter`` writes. Column
defaults go into the field schema as Debezium's ``Db2DefaultValueConverter`` parses
``SYSCAT.COLUMNS.DEFAULT``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, time
from decimal import MAX_EMAX, MAX_PREC, MIN_EMIN, Context, Decimal, InvalidOperation
from functools import partial
from typing import Any, Final, Literal

from cdcflow.capture import encoders
from cdcflow.capture.connectors.db2 import structure as jdbc
from cdcflow.capture.encoders import BinaryHandlingMode, ConnectSpec, named_schema
from cdcflow.capture.spi import Column, ColumnStructure, Converter, TableSchema, TableStructure

log = logging.getLogger(__name__)

DecimalMode = Literal["precise", "double", "string"]
TimePrecisionMode = Literal["adaptive", "adaptive_time_microseconds", "connect"]


@dataclass(frozen=True, slots=True)
class TypeOptions:
    """The connector properties that change type mapping; defaults are Debezium's."""

    decimal_handling_mode: DecimalMode = "precise"
    time_precision_mode: TimePrecisionMode = "adaptive"
    binary_handling_mode: BinaryHandlingMode = "bytes"
    #: JsonConverter's ``replace.null.with.default``: a null is written as the column default.
    replace_null_with_default: bool = True


# --------------------------------------------------------------------------------------------
# Value converters
# --------------------------------------------------------------------------------------------


def _nullable(convert: Callable[[Any], Any]) -> Converter:
    def or_none(value: Any) -> Any:
        return None if value is None else convert(value)

    return or_none


def _as_decimal(value: Any) -> Decimal:
    if isinstance(value, Decimal):
        return value
    if isinstance(value, float):
        return Decimal(repr(value))
    return Decimal(str(value).strip())


def _plain(value: Decimal) -> str:
    """``BigDecimal.toPlainString()``: never scientific, no negative zero."""
    text = f"{value:f}"
    return text[1:] if value == 0 and text.startswith("-") else text


#: Decimal arithmetic that never rounds.
_EXACT: Final = Context(prec=MAX_PREC, Emax=MAX_EMAX, Emin=MIN_EMIN)


def _decimal_precise(scale: int, value: Any) -> str:
    number = _as_decimal(value)
    shifted = number.scaleb(scale, _EXACT)
    if shifted.is_finite() and shifted == shifted.to_integral_value():
        return encoders.unscaled_bytes(int(shifted))  # the common case: no digit past the scale
    unscaled, found = encoders.decimal_parts(number)
    # withScaleAdjustedIfNeeded: a value of a smaller scale is padded to the column's.
    return encoders.decimal_bytes(unscaled, found, target_scale=max(scale, found))


def _decfloat_precise(value: Any) -> dict[str, Any] | None:
    number = _as_decimal(value)
    if not number.is_finite():
        return None  # NaN and infinities have no VariableScaleDecimal form
    return encoders.variable_scale_decimal(*encoders.decimal_parts(number))


def _decimal_double(value: Any) -> float:
    return float(_as_decimal(value))


def _decimal_string(scale: int, value: Any) -> str:
    number = _as_decimal(value)
    if not number.is_finite():
        return str(number)
    unscaled, found = encoders.decimal_parts(number)
    # withScaleAdjustedIfNeeded, as in precise mode
    return _plain(
        Decimal(encoders.rescale(unscaled, found, max(scale, found))).scaleb(-max(scale, found))
    )


def _bytes(encode: Callable[[bytes], Any], value: Any) -> Any:
    return encode(bytes(value))


def _date(value: Any) -> int:
    if isinstance(value, datetime):
        value = value.date()
    if isinstance(value, str):
        value = date.fromisoformat(value.strip())
    return encoders.date_epoch_days(value)


def _time_micros(value: Any) -> int:
    if isinstance(value, datetime):
        value = value.time()
    if isinstance(value, str):
        value = time.fromisoformat(value.strip().replace(".", ":", 2))
    return encoders.time_micros(value)


def _timestamp_micros(value: Any) -> int:
    if isinstance(value, str):
        text = value.strip()
        # Db2's text form: 2026-11-23-10.15.00.123456
        if len(text) >= 19 and text[10] == "-":
            text = f"{text[:10]} {text[11:13]}:{text[14:16]}:{text[17:]}"
        value = datetime.fromisoformat(text)
    elif isinstance(value, date) and not isinstance(value, datetime):
        value = datetime(value.year, value.month, value.day)
    return encoders.datetime_epoch_micros(value)


def _boolean(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "t", "y", "yes")
    return bool(value)


# --------------------------------------------------------------------------------------------
# Schemas
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Mapping:
    """A column's Connect spec and the value a NOT NULL column's null becomes."""

    spec: ConnectSpec
    fallback: Any = None


def _primitive(type_: str, convert: Callable[[Any], Any], fallback: Any) -> _Mapping:
    return _Mapping(ConnectSpec(type_, _nullable(convert)), fallback)


def _decimal(column: ColumnStructure, options: TypeOptions) -> _Mapping:
    mode = options.decimal_handling_mode
    scale = column.scale or 0
    if mode == "double":
        return _primitive("double", _decimal_double, 0.0)
    if mode == "string":
        return _primitive("string", partial(_decimal_string, scale), _decimal_string(scale, 0))
    convert = _nullable(partial(_decimal_precise, scale))
    spec = encoders.decimal_schema(convert, scale, precision=column.length)
    return _Mapping(spec, encoders.unscaled_bytes(0))


def _decfloat(_column: ColumnStructure, options: TypeOptions) -> _Mapping:
    mode = options.decimal_handling_mode
    if mode == "double":
        return _primitive("double", _decimal_double, 0.0)
    if mode == "string":
        return _primitive("string", partial(_decimal_string, 0), "0")
    convert = _nullable(_decfloat_precise)
    return _Mapping(encoders.variable_scale_decimal_schema(convert))


def _binary(_column: ColumnStructure, options: TypeOptions) -> _Mapping:
    mode = options.binary_handling_mode
    encode = encoders.binary_encoder(mode)
    return _primitive(encoders.binary_schema_type(mode), partial(_bytes, encode), encode(b""))


def _date_mapping(_column: ColumnStructure, options: TypeOptions) -> _Mapping:
    name = (
        "org.apache.kafka.connect.data.Date"
        if options.time_precision_mode == "connect"
        else "io.debezium.time.Date"
    )
    return _Mapping(named_schema("int32", name, _nullable(_date)), 0)


def _millis(micros_of: Callable[[Any], int]) -> Callable[[Any], int]:
    return lambda value: encoders.millis(micros_of(value))


def _nanos(micros_of: Callable[[Any], int]) -> Callable[[Any], int]:
    return lambda value: micros_of(value) * 1000


def _time_mapping(column: ColumnStructure, options: TypeOptions) -> _Mapping:
    precision = column.scale or 0
    mode = options.time_precision_mode
    if mode == "connect":
        type_, name, convert = "int32", "org.apache.kafka.connect.data.Time", _millis(_time_micros)
    elif mode == "adaptive_time_microseconds" or 3 < precision <= 6:
        type_, name, convert = "int64", "io.debezium.time.MicroTime", _time_micros
    elif precision <= 3:
        type_, name, convert = "int32", "io.debezium.time.Time", _millis(_time_micros)
    else:
        type_, name, convert = "int64", "io.debezium.time.NanoTime", _nanos(_time_micros)
    return _Mapping(named_schema(type_, name, _nullable(convert)), 0)


def _timestamp_mapping(column: ColumnStructure, options: TypeOptions) -> _Mapping:
    precision = column.scale if column.scale is not None else 6
    if options.time_precision_mode == "connect":
        name, convert = "org.apache.kafka.connect.data.Timestamp", _millis(_timestamp_micros)
    elif precision <= 3:
        name, convert = "io.debezium.time.Timestamp", _millis(_timestamp_micros)
    elif precision <= 6:
        name, convert = "io.debezium.time.MicroTimestamp", _timestamp_micros
    else:
        name, convert = "io.debezium.time.NanoTimestamp", _nanos(_timestamp_micros)
    return _Mapping(named_schema("int64", name, _nullable(convert)), 0)


def _xml(_column: ColumnStructure, _options: TypeOptions) -> _Mapping:
    return _Mapping(named_schema("string", "io.debezium.data.Xml", _nullable(str)), "")


_Mapper = Callable[[ColumnStructure, TypeOptions], _Mapping]


def _simple(mapping: _Mapping) -> _Mapper:
    return lambda _column, _options: mapping


_TEXT: Final = _primitive("string", str, "")
_MAPPERS: Final[dict[int, _Mapper]] = {
    jdbc.BOOLEAN: _simple(_primitive("boolean", _boolean, False)),
    jdbc.BIT: _simple(_primitive("boolean", _boolean, False)),
    # Db2ValueConverters: TINYINT is unsigned 0-255, so int16
    jdbc.TINYINT: _simple(_primitive("int16", int, 0)),
    jdbc.SMALLINT: _simple(_primitive("int16", int, 0)),
    jdbc.INTEGER: _simple(_primitive("int32", int, 0)),
    jdbc.BIGINT: _simple(_primitive("int64", int, 0)),
    jdbc.REAL: _simple(_primitive("float", float, 0.0)),
    jdbc.DOUBLE: _simple(_primitive("double", float, 0.0)),
    jdbc.DECIMAL: _decimal,
    jdbc.CHAR: _simple(_TEXT),
    jdbc.VARCHAR: _simple(_TEXT),
    jdbc.LONGVARCHAR: _simple(_TEXT),
    jdbc.CLOB: _simple(_TEXT),
    jdbc.BINARY: _binary,
    jdbc.VARBINARY: _binary,
    jdbc.LONGVARBINARY: _binary,
    jdbc.BLOB: _binary,
    jdbc.DATE: _date_mapping,
    jdbc.TIME: _time_mapping,
    jdbc.TIMESTAMP: _timestamp_mapping,
    jdbc.SQLXML: _xml,
}


def _mapping(column: ColumnStructure, options: TypeOptions) -> _Mapping | None:
    if column.jdbc_type == jdbc.OTHER and column.type_name.upper().startswith("DECFLOAT"):
        return _decfloat(column, options)
    mapper = _MAPPERS.get(column.jdbc_type)
    return mapper(column, options) if mapper is not None else None


# --------------------------------------------------------------------------------------------
# Defaults (Db2DefaultValueConverter)
# --------------------------------------------------------------------------------------------

_NUMBERS: Final = frozenset({jdbc.SMALLINT, jdbc.INTEGER, jdbc.BIGINT, jdbc.DECIMAL})
_CURRENT: Final = frozenset({"CURRENT DATE", "CURRENT TIME", "CURRENT TIMESTAMP"})


def _unquote(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] == "'":
        return text[1:-1].replace("''", "'")
    return text


def _default_raw(column: ColumnStructure) -> Any:
    """The default's value before conversion, as Debezium's mappers parse it (None: none)."""
    text = (column.default_value_expression or "").strip()
    if not text or text.upper() == "NULL":
        return None
    code = column.jdbc_type
    if code in _NUMBERS or (code == jdbc.OTHER and column.type_name.upper() == "DECFLOAT"):
        return _as_decimal(text)
    if code in (jdbc.DOUBLE, jdbc.REAL):
        return float(text)
    if code == jdbc.BOOLEAN:
        return _boolean(text)
    if code in (jdbc.DATE, jdbc.TIME, jdbc.TIMESTAMP):
        if " ".join(text.upper().split()) in _CURRENT:
            # the default is ignored in an optional column; a NOT NULL one's is the zero value
            return None if column.optional else _ZERO_TEMPORAL[code]
        return _unquote(text)
    if code == jdbc.CHAR:
        return _unquote(text).ljust(column.length or 0)
    if code == jdbc.VARCHAR:
        return _unquote(text)
    return None


_ZERO_TEMPORAL: Final[dict[int, Any]] = {
    jdbc.DATE: date(1970, 1, 1),
    jdbc.TIME: time(0, 0),
    jdbc.TIMESTAMP: datetime(1970, 1, 1),
}


def _default_value(column: ColumnStructure, mapping: _Mapping) -> Any:
    try:
        raw = _default_raw(column)
        converted = None if raw is None else mapping.spec.convert(raw)
    except (ValueError, InvalidOperation, ArithmeticError):
        log.warning(
            "cannot parse the default %r of column %s (%s); expressions are not evaluated",
            column.default_value_expression,
            column.name,
            column.type_name,
        )
        return None
    # Connect cannot hold a struct default (KAFKA-12694): VariableScaleDecimal gets none
    return None if isinstance(converted, dict) else converted


# --------------------------------------------------------------------------------------------
# Columns and tables
# --------------------------------------------------------------------------------------------


def column(structure: ColumnStructure, options: TypeOptions) -> Column | None:
    """The captured column of ``structure`` (None: a type Debezium does not map)."""
    mapping = _mapping(structure, options)
    if mapping is None:
        return None
    default = _default_value(structure, mapping)
    schema = mapping.spec.schema(structure.optional)
    if default is not None:
        schema["default"] = default
    convert = encoders.with_null_fill(
        mapping.spec.convert,
        optional=structure.optional,
        default=default,
        fallback=mapping.fallback,
        replace=options.replace_null_with_default,
    )
    return Column(structure.name, structure.type_name, schema, convert, structure.optional)


def table_schema(table: TableStructure, options: TypeOptions) -> TableSchema:
    """The event schema of ``table``: its mapped columns in order, keyed by its primary key."""
    columns = []
    for structure in table.columns:
        mapped = column(structure, options)
        if mapped is None:
            log.warning(
                "column %s.%s of type %s has no Debezium mapping and is left out of events",
                table.id,
                structure.name,
                structure.type_name,
            )
            continue
        columns.append(mapped)
    return TableSchema(table.id, tuple(columns), table.primary_key)
