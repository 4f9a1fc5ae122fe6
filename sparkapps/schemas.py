"""Kafka Connect schemas as Spark types: what the JSON carries and what the table stores.

A Debezium value written by ``JsonConverter`` with ``schemas.enable=true`` describes itself: a
Connect schema (``{"type":"struct","fields":[…]}``) with logical names such as
``io.debezium.time.MicroTimestamp`` or ``org.apache.kafka.connect.data.Decimal``. For every
Connect type this module derives a :class:`TypePlan`: the *wire* type Spark's JSON reader
parses (bytes are base64 strings, dates are day numbers) and the *typed* type the target table
stores, joined by a :class:`Conversion` that :mod:`cdcflow.sparkapps.decoding` turns into a
Spark expression.

Everything here is pure Python over ``pyspark.sql.types`` (no JVM), so it is unit-tested
without Spark. The mapping:

========================================  ===========================  ======================
Connect type / logical name               wire (JSON)                  typed (table)
========================================  ===========================  ======================
int8, int16, int32, int64                 byte, short, int, long       same
float, double, boolean, string            float, double, bool, string  same
bytes (and ``io.debezium.data.Bits``)     base64 string                binary
``…connect.data.Decimal``                 base64 string                decimal(p, s); p from
                                                                       connect.decimal.precision
                                                                       or 38; exact string when
                                                                       p > 38 or s < 0
``io.debezium.data.VariableScaleDecimal`` struct{scale, value}         exact decimal string
``io.debezium.time.Date``, Connect Date   int days                     date
``io.debezium.time.Timestamp``            long ms                      timestamp_ntz
``io.debezium.time.MicroTimestamp``       long µs                      timestamp_ntz
``io.debezium.time.NanoTimestamp``        long ns                      timestamp_ntz (µs)
Connect Timestamp (an instant)            long ms                      timestamp
``io.debezium.time.ZonedTimestamp``       ISO-8601 string              timestamp
struct, array, map (string keys)          struct, array, map           converted inside
everything else (Json, Uuid, Enum, time   its wire type                same
of day, durations, maps with other keys)
========================================  ===========================  ======================

``float`` and ``double`` are JsonConverter's names for FLOAT32 and FLOAT64 (what Debezium
writes); ``float32`` and ``float64`` are accepted as legacy aliases, for topics written by
earlier cdcflow versions.

Decimals are exact or not stored: the column type comes from the schema alone (a ``Decimal``
with ``0 <= scale`` and ``max(precision, scale) <= 38`` is ``decimal(p, s)``; every other
``Decimal`` and every ``VariableScaleDecimal`` is a string holding the exact value in plain
notation), and a value that does not fit its ``decimal(p, s)`` column is a dead letter
(:func:`cdcflow.sparkapps.decoding.decimal_problem`), never a null.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pyspark.sql import types as st

from cdcflow.sparkapps import evolution

DECIMAL = "org.apache.kafka.connect.data.Decimal"
VARIABLE_DECIMAL = "io.debezium.data.VariableScaleDecimal"
MAX_PRECISION = 38

_PRIMITIVES: Mapping[str, st.DataType] = {
    "int8": st.ByteType(),
    "int16": st.ShortType(),
    "int32": st.IntegerType(),
    "int64": st.LongType(),
    "float": st.FloatType(),
    "double": st.DoubleType(),
    "boolean": st.BooleanType(),
    "string": st.StringType(),
    # Legacy aliases: earlier cdcflow versions wrote these instead of JsonConverter's "float"
    # and "double" (Connect's FLOAT32 and FLOAT64); topics holding them may still be read.
    "float32": st.FloatType(),
    "float64": st.DoubleType(),
}


class Conversion(enum.Enum):
    """How a wire value becomes the stored value."""

    NONE = "none"
    BASE64 = "base64"
    DECIMAL = "decimal"
    VARIABLE_DECIMAL = "variable_decimal"
    EPOCH_DAYS = "epoch_days"
    INSTANT_MILLIS = "instant_millis"
    LOCAL_MILLIS = "local_millis"
    LOCAL_MICROS = "local_micros"
    LOCAL_NANOS = "local_nanos"
    ISO_INSTANT = "iso_instant"
    STRUCT = "struct"
    ARRAY = "array"
    MAP = "map"


_LOGICAL: Mapping[str, tuple[Conversion, st.DataType]] = {
    "io.debezium.time.Date": (Conversion.EPOCH_DAYS, st.DateType()),
    "org.apache.kafka.connect.data.Date": (Conversion.EPOCH_DAYS, st.DateType()),
    "io.debezium.time.Timestamp": (Conversion.LOCAL_MILLIS, st.TimestampNTZType()),
    "io.debezium.time.MicroTimestamp": (Conversion.LOCAL_MICROS, st.TimestampNTZType()),
    "io.debezium.time.NanoTimestamp": (Conversion.LOCAL_NANOS, st.TimestampNTZType()),
    "org.apache.kafka.connect.data.Timestamp": (Conversion.INSTANT_MILLIS, st.TimestampType()),
    "io.debezium.time.ZonedTimestamp": (Conversion.ISO_INSTANT, st.TimestampType()),
}


@dataclass(frozen=True)
class TypePlan:
    """One value's wire type, stored type and the conversion between them.

    ``fields`` is set for structs, ``element`` for arrays, ``value`` for maps; ``scale`` for
    fixed-scale decimals.
    """

    wire: st.DataType
    typed: st.DataType
    conversion: Conversion = Conversion.NONE
    fields: tuple[FieldPlan, ...] = ()
    element: TypePlan | None = None
    value: TypePlan | None = None
    scale: int = 0

    @property
    def converts(self) -> bool:
        """Whether the stored value differs from the parsed one anywhere inside."""
        return self.conversion is not Conversion.NONE

    def field(self, name: str) -> FieldPlan | None:
        """The struct field named ``name``, if there is one."""
        return next((f for f in self.fields if f.name == name), None)

    @property
    def names(self) -> tuple[str, ...]:
        """The struct's field names, in order."""
        return tuple(f.name for f in self.fields)


@dataclass(frozen=True)
class FieldPlan:
    """A named struct field and its plan."""

    name: str
    plan: TypePlan


@dataclass(frozen=True)
class EnvelopePlan:
    """The parts of one table's change events the sink reads.

    ``row`` is the union of the ``before`` and ``after`` structs (the table's columns);
    ``source`` is parsed as is (positions are read from it).
    """

    row: TypePlan
    source: TypePlan


class SchemaError(ValueError):
    """A Connect schema that cannot be mapped, or two that cannot be reconciled."""


def plain(data_type: st.DataType) -> TypePlan:
    """A plan that parses ``data_type`` and stores it unchanged (schemaless JSON)."""
    return TypePlan(data_type, data_type)


def plan_for(schema: Mapping[str, Any]) -> TypePlan:
    """The plan of one Connect schema (a field's schema, or a whole struct)."""
    kind = schema.get("type")
    name = schema.get("name")
    if name == DECIMAL:
        return _decimal(schema)
    if name == VARIABLE_DECIMAL:
        return TypePlan(_variable_wire(), st.StringType(), Conversion.VARIABLE_DECIMAL)
    if isinstance(name, str) and name in _LOGICAL:
        conversion, typed = _LOGICAL[name]
        return TypePlan(_primitive(kind), typed, conversion)
    if kind == "bytes":
        return TypePlan(st.StringType(), st.BinaryType(), Conversion.BASE64)
    if kind == "struct":
        return struct_plan(
            FieldPlan(str(child["field"]), plan_for(child)) for child in schema.get("fields", [])
        )
    if kind == "array":
        return _array(plan_for(schema.get("items") or {}))
    if kind == "map":
        return _map(schema)
    return plain(_primitive(kind))


def struct_plan(fields: Iterable[FieldPlan]) -> TypePlan:
    """The plan of a struct made of ``fields``."""
    members = tuple(fields)
    wire = st.StructType([st.StructField(f.name, f.plan.wire, True) for f in members])
    typed = st.StructType([st.StructField(f.name, f.plan.typed, True) for f in members])
    converts = any(f.plan.converts for f in members)
    return TypePlan(wire, typed, Conversion.STRUCT if converts else Conversion.NONE, members)


def envelope_plan(value_schema: Mapping[str, Any]) -> EnvelopePlan:
    """The :class:`EnvelopePlan` of a Debezium ``…Envelope`` value schema."""
    if value_schema.get("type") != "struct":
        raise SchemaError("the value schema is not a struct")
    parts = {str(f.get("field")): f for f in value_schema.get("fields", [])}
    missing = [name for name in ("op", "source") if name not in parts]
    images = [parts[name] for name in ("before", "after") if name in parts]
    if missing or not images:
        raise SchemaError(
            f"the value schema is not a Debezium envelope (no {', '.join(missing) or 'after'})"
        )
    row = plan_for(images[0])
    for image in images[1:]:
        row = merge(row, plan_for(image))
    return EnvelopePlan(row=row, source=plan_for(parts["source"]))


def plan_from_text(schema_text: str) -> EnvelopePlan:
    """:func:`envelope_plan` of the schema as the record's JSON carries it."""
    try:
        schema = json.loads(schema_text)
    except ValueError as error:
        raise SchemaError(f"the value schema is not JSON: {error}") from None
    if not isinstance(schema, dict):
        raise SchemaError("the value schema is not a JSON object")
    return envelope_plan(schema)


def merge(older: TypePlan, newer: TypePlan) -> TypePlan:
    """Two versions of a struct as one: every field of both.

    On a type clash the newer plan wins, unless its values fit the older type. Field order
    is the older version's, then the fields only the newer one has, so a column added at the
    source is appended to the target. The result names the table's columns; it must not
    decode records: a merged field has one version's scale, unit and wire type, so every
    record is decoded with the plan of its own version
    (:func:`cdcflow.sparkapps.planning.decode`).
    """
    if not (older.fields and newer.fields):
        return older if evolution.widens(newer.typed, older.typed) else newer
    by_name = {f.name: f for f in newer.fields}
    fields = [
        FieldPlan(f.name, merge(f.plan, by_name[f.name].plan)) if f.name in by_name else f
        for f in older.fields
    ]
    known = set(older.names)
    fields.extend(f for f in newer.fields if f.name not in known)
    return struct_plan(fields)


def merge_envelopes(plans: Sequence[EnvelopePlan]) -> EnvelopePlan:
    """The union of several schema versions of one table, oldest first."""
    if not plans:
        raise SchemaError("no schema to merge")
    row, source = plans[0].row, plans[0].source
    for plan in plans[1:]:
        row, source = merge(row, plan.row), merge(source, plan.source)
    return replace(plans[0], row=row, source=source)


def key_columns(key_text: str | None) -> tuple[str, ...]:
    """The primary-key column names from a Kafka key, with or without the Connect schema.

    Returns ``()`` for a null key (a table without a primary key) or one that is not a JSON
    object.
    """
    if not key_text:
        return ()
    try:
        key = json.loads(key_text)
    except ValueError:
        return ()
    if not isinstance(key, dict):
        return ()
    schema, payload = key.get("schema"), key.get("payload")
    if set(key) == {"schema", "payload"} and isinstance(schema, dict):
        return tuple(str(f["field"]) for f in schema.get("fields", []) if "field" in f)
    if set(key) == {"schema", "payload"} and isinstance(payload, dict):
        return tuple(payload)
    return tuple(key)


def _primitive(kind: object) -> st.DataType:
    if isinstance(kind, str) and kind in _PRIMITIVES:
        return _PRIMITIVES[kind]
    raise SchemaError(f"unknown Connect type {kind!r}")


def _decimal(schema: Mapping[str, Any]) -> TypePlan:
    """``decimal(p, s)`` when Spark can hold the declared type, else the exact string.

    p is ``connect.decimal.precision`` (38 when absent), raised to the scale when smaller
    (PostgreSQL allows ``numeric(2, 5)``). A negative scale or p above 38 gives a string.
    """
    parameters = schema.get("parameters") or {}
    try:
        scale = int(parameters.get("scale", 0))
        precision = int(parameters.get("connect.decimal.precision", MAX_PRECISION))
    except (TypeError, ValueError):
        raise SchemaError(f"Decimal with unreadable parameters {parameters!r}") from None
    precision = max(precision, scale, 1)
    if precision > MAX_PRECISION or scale < 0:
        return TypePlan(st.StringType(), st.StringType(), Conversion.DECIMAL, scale=scale)
    return TypePlan(
        st.StringType(), st.DecimalType(precision, scale), Conversion.DECIMAL, scale=scale
    )


def _variable_wire() -> st.StructType:
    return st.StructType(
        [st.StructField("scale", st.IntegerType(), True), st.StructField("value", st.StringType())]
    )


def _array(element: TypePlan) -> TypePlan:
    conversion = Conversion.ARRAY if element.converts else Conversion.NONE
    return TypePlan(
        st.ArrayType(element.wire, True),
        st.ArrayType(element.typed, True),
        conversion,
        element=element,
    )


def _map(schema: Mapping[str, Any]) -> TypePlan:
    keys = schema.get("keys") or {}
    if keys.get("type") != "string" or keys.get("name"):
        # JsonConverter writes maps with non-string keys as arrays of pairs: keep the JSON.
        return plain(st.StringType())
    value = plan_for(schema.get("values") or {})
    conversion = Conversion.MAP if value.converts else Conversion.NONE
    return TypePlan(
        st.MapType(st.StringType(), value.wire, True),
        st.MapType(st.StringType(), value.typed, True),
        conversion,
        value=value,
    )
