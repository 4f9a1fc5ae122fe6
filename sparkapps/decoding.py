"""Kafka records to typed change rows: the envelope decoding, as pure DataFrame transforms.

Two steps, because a Debezium value describes its own schema:

1. :func:`records` reads every Kafka record once, drops tombstones and splits the value into
   its Connect schema (text) and payload (text), so schemas can be collected per topic.
   Records that are not JSON, or not change events, get a ``_cdc_problem``.
2. :func:`changes` parses one schema version's payloads with the Spark schema derived from
   that Connect schema (:mod:`cdcflow.sparkapps.schemas`) and converts wire values to stored
   values (base64 to binary and decimals, day numbers to dates, ...), then to the table's
   column types. Rows that do not match the schema, or carry an unknown op or no position,
   get a ``_cdc_problem``.

The change rows have the table's columns (the ``after`` image, or ``before`` for deletes) and
the metadata columns named in :data:`META_COLUMNS`, plus what the key-change headers say
(:data:`OLD_KEY`, :data:`KEY_MOVED`).
"""

from __future__ import annotations

import decimal
import functools
import operator
from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as sf
from pyspark.sql import types as st

from cdcflow.sparkapps import evolution
from cdcflow.sparkapps.positions import Ordering
from cdcflow.sparkapps.schemas import Conversion, EnvelopePlan, TypePlan

OP = "_cdc_op"
POSITION = "_cdc_position"
SOURCE_TS = "_cdc_source_ts"
TOPIC = "_cdc_topic"
PARTITION = "_cdc_partition"
OFFSET = "_cdc_offset"
KEY = "_cdc_key"
VALUE = "_cdc_value"
SCHEMA = "_cdc_schema"
SCHEMA_ID = "_cdc_schema_id"
PAYLOAD = "_cdc_payload"
PROBLEM = "_cdc_problem"
META_COLUMNS = (OP, POSITION, SOURCE_TS, TOPIC, PARTITION, OFFSET)
"""Metadata every change row carries besides the table's columns."""
OLD_KEY = "_cdc_old_key"
"""On the create of a primary-key change: the old key's row (its key columns set), else null."""
KEY_MOVED = "_cdc_key_moved"
"""On the delete of a primary-key change: true (the row lives on under a new key)."""
OLD_KEY_HEADER = "__debezium.oldkey"
NEW_KEY_HEADER = "__debezium.newkey"

ROW_OPS = ("c", "u", "d", "r")
KNOWN_OPS = (*ROW_OPS, "t", "m")
_CORRUPT = "_cdc_corrupt"
_EPOCH_NTZ = "TIMESTAMP_NTZ '1970-01-01 00:00:00'"
_DECIMAL_ACCUMULATOR = st.DecimalType(38, 0)
_TWO_TO_64 = decimal.Decimal(2**64)
_HEX = "0123456789ABCDEF"
_INVERTED_HEX = _HEX[::-1]
_CHUNK_HEX = 7
_CHUNK_RADIX = 16**_CHUNK_HEX
_LIMB_DIGITS = 9
_LIMB = 10**_LIMB_DIGITS
_LIMBS = st.ArrayType(st.LongType())

_FRAME = st.StructType(
    [
        st.StructField("schema", st.StringType()),
        st.StructField("payload", st.StringType()),
        st.StructField("op", st.StringType()),
        st.StructField(_CORRUPT, st.StringType()),
    ]
)


def records(kafka: DataFrame) -> DataFrame:
    """Kafka source rows to ``(topic, partition, offset, key, schema, payload, problem)``.

    Tombstones (null values) are dropped: deletes are applied from the ``d`` event before them.
    ``_cdc_value`` keeps the raw value of records with a problem only. The key-change headers
    (read when the source includes headers) become :data:`OLD_KEY` (the old key's JSON text)
    and :data:`KEY_MOVED`.
    """
    value = sf.col("value").cast("string")
    framed = kafka.where(sf.col("value").isNotNull()).select(
        sf.col("topic").alias(TOPIC),
        sf.col("partition").alias(PARTITION),
        sf.col("offset").alias(OFFSET),
        sf.col("key").cast("string").alias(KEY),
        value.alias(VALUE),
        sf.from_json(value, _FRAME, {"columnNameOfCorruptRecord": _CORRUPT}).alias("frame"),
        _header(kafka, OLD_KEY_HEADER).alias(OLD_KEY),
        _header(kafka, NEW_KEY_HEADER).isNotNull().alias(KEY_MOVED),
    )
    frame = sf.col("frame")
    wrapped = frame["schema"].isNotNull() & frame["payload"].isNotNull()
    problem = (
        sf.when(frame.isNull() | frame[_CORRUPT].isNotNull(), sf.lit("malformed JSON value"))
        .when(wrapped | frame["op"].isNotNull(), sf.lit(None).cast("string"))
        .otherwise(sf.lit("not a Debezium change event (no payload and no op)"))
    )
    schema = sf.when(wrapped, frame["schema"])
    return framed.select(
        TOPIC,
        PARTITION,
        OFFSET,
        KEY,
        sf.when(problem.isNotNull(), sf.col(VALUE)).alias(VALUE),
        schema.alias(SCHEMA),
        sf.xxhash64(schema).alias(SCHEMA_ID),
        sf.when(wrapped, frame["payload"]).otherwise(sf.col(VALUE)).alias(PAYLOAD),
        problem.alias(PROBLEM),
        OLD_KEY,
        KEY_MOVED,
    )


def _header(kafka: DataFrame, name: str) -> Column:
    """The text of the record's first header ``name``; null if none (or no headers read)."""
    if "headers" not in kafka.columns:
        return sf.lit(None).cast("string")
    found = sf.filter(sf.col("headers"), lambda header: header["key"] == sf.lit(name))
    return sf.get(found, 0)["value"].cast("string")


def envelope_type(plan: EnvelopePlan) -> st.StructType:
    """The Spark schema ``from_json`` parses one table's payloads with."""
    return st.StructType(
        [
            st.StructField("op", st.StringType()),
            st.StructField("before", plan.row.wire),
            st.StructField("after", plan.row.wire),
            st.StructField("source", plan.source.wire),
            st.StructField(_CORRUPT, st.StringType()),
        ]
    )


def changes(
    records_of_table: DataFrame,
    plan: EnvelopePlan,
    ordering: Ordering,
    *,
    keyed: bool,
    columns: st.StructType | None = None,
) -> DataFrame:
    """One table's records as change rows: its columns, :data:`META_COLUMNS` and a problem.

    Every record is parsed and converted with ``plan``, which must be the plan of the schema
    the records were written with: the wire alone does not say a decimal's scale or a
    timestamp's unit. ``columns`` (default: the plan's own) are the columns the rows get, in
    that order: a converted value is cast to its column's type (which holds every value of
    the plan's type), a column the plan lacks is null.

    ``m`` (logical decoding message) events are not row changes and are dropped. With
    ``keyed``, a row change without a Kafka key (a table without a primary key) is a problem,
    and so is a decimal that has no exact stored value (:func:`decimal_problem`).
    """
    parsed = sf.from_json(
        sf.col(PAYLOAD), envelope_type(plan), {"columnNameOfCorruptRecord": _CORRUPT}
    )
    decoded = records_of_table.select(
        TOPIC, PARTITION, OFFSET, KEY, PAYLOAD, OLD_KEY, KEY_MOVED, parsed.alias("event")
    ).where(sf.col("event.op").isNull() | (sf.col("event.op") != "m"))
    event = sf.col("event")
    op = event["op"]
    image = sf.when(op == "d", event["before"]).otherwise(event["after"])
    position = ordering.position(event["source"])
    stored = stored_columns(image, plan.row, columns)
    problem = _problem(event, op, position, keyed=keyed)
    wire = plan.row.wire
    assert isinstance(wire, st.StructType)
    old_key = sf.from_json(sf.col(OLD_KEY), wire)
    old_row = sf.when(
        (op == "c") & old_key.isNotNull(), sf.struct(*stored_columns(old_key, plan.row, columns))
    )
    decimals = decimal_problem(image, plan.row)
    if decimals is not None:
        problem = sf.coalesce(problem, decimals)
    rows = decoded.select(
        *stored,
        op.alias(OP),
        position.alias(POSITION),
        sf.timestamp_millis(event["source"]["ts_ms"]).alias(SOURCE_TS),
        TOPIC,
        PARTITION,
        OFFSET,
        KEY,
        problem.alias(PROBLEM),
        sf.col(PAYLOAD),
        old_row.alias(OLD_KEY),
        ((op == "d") & sf.col(KEY_MOVED)).alias(KEY_MOVED),
    )
    # Keep the payload only where a dead letter needs it: the rows are persisted.
    return rows.withColumn(PAYLOAD, sf.when(sf.col(PROBLEM).isNotNull(), sf.col(PAYLOAD)))


def stored_columns(image: Column, row: TypePlan, columns: st.StructType | None) -> list[Column]:
    """The row ``image`` converted with its own plan ``row``, as ``columns`` (see ``changes``)."""
    if columns is None:
        return [convert(image[f.name], f.plan).alias(f.name) for f in row.fields]
    stored = []
    for column in columns.fields:
        field = row.field(column.name)
        if field is None:
            value = sf.lit(None).cast(column.dataType)
        elif evolution.same_type(field.plan.typed, column.dataType):
            value = convert(image[field.name], field.plan)
        else:
            value = convert(image[field.name], field.plan).cast(column.dataType)
        stored.append(value.alias(column.name))
    return stored


def _problem(event: Column, op: Column, position: Column, *, keyed: bool) -> Column:
    """Why a parsed event cannot be applied, or null."""
    unkeyed = sf.lit(keyed) & op.isin(*ROW_OPS) & sf.col(KEY).isNull()
    return (
        sf.when(
            event.isNull() | event[_CORRUPT].isNotNull(),
            sf.lit("schema mismatch: the payload does not match the value schema"),
        )
        .when(
            ~op.isin(*KNOWN_OPS) | op.isNull(),
            sf.concat(sf.lit("unknown op "), sf.coalesce(op, sf.lit("null"))),
        )
        .when(position.isNull(), sf.lit("no source position in the event's source block"))
        .when(
            op.isin("c", "u", "r") & event["after"].isNull(),
            sf.concat(sf.lit("op "), op, sf.lit(" without after")),
        )
        .when((op == "d") & event["before"].isNull(), sf.lit("op d without before"))
        .when(unkeyed, sf.lit("no primary key: a row change with a null Kafka key"))
    )


@dataclass(frozen=True)
class _DecimalCheck:
    """A way a decimal can fail to get a stored value: which plans it concerns, the test."""

    applies: Callable[[TypePlan], bool]
    fails: Callable[[Column, TypePlan], Column]
    reason: str
    """With ``{column}`` and ``{type}`` (the column's stored type) to fill in."""


def _is_decimal(plan: TypePlan) -> bool:
    return plan.conversion in (Conversion.DECIMAL, Conversion.VARIABLE_DECIMAL)


def _is_fixed_decimal(plan: TypePlan) -> bool:
    return plan.conversion is Conversion.DECIMAL and isinstance(plan.typed, st.DecimalType)


def _malformed(value: Column, plan: TypePlan) -> Column:
    return value.isNotNull() & _decimal_text_of(value, plan).isNull()


def _out_of_range(value: Column, plan: TypePlan) -> Column:
    text = _decimal_text_of(value, plan)
    return text.isNotNull() & text.try_cast(plan.typed).isNull()


_DECIMAL_CHECKS = (
    _DecimalCheck(
        _is_decimal,
        _malformed,
        "schema mismatch: column {column} has a decimal that cannot be read (not base64, "
        "or no scale or value)",
    ),
    _DecimalCheck(
        _is_fixed_decimal,
        _out_of_range,
        "decimal out of range: column {column} has a value that does not fit {type}",
    ),
)


def decimal_problem(image: Column, row: TypePlan) -> Column | None:
    """Why a decimal in the row ``image`` has no exact stored value, or null.

    A decimal is never stored as a silent null: one that cannot be read is a schema
    mismatch, and one whose exact value does not fit its ``decimal(p, s)`` column (a Decimal
    without ``connect.decimal.precision`` is ``decimal(38, s)``) is out of range. Returns
    None when the row has no decimals at all, nested ones included.
    """
    reason: Column | None = None
    for field in row.fields:
        for check in _DECIMAL_CHECKS:
            if not _contains(field.plan, check.applies):
                continue
            failed = _anywhere(image[field.name], field.plan, check)
            typed = field.plan.typed.simpleString()
            text = sf.lit(check.reason.format(column=field.name, type=typed))
            reason = sf.when(failed, text) if reason is None else reason.when(failed, text)
    return reason


def _contains(plan: TypePlan, wanted: Callable[[TypePlan], bool]) -> bool:
    """Whether ``plan`` or any plan inside it is ``wanted``."""
    inner = [f.plan for f in plan.fields] + [p for p in (plan.element, plan.value) if p]
    return wanted(plan) or any(_contains(p, wanted) for p in inner)


def _anywhere(value: Column, plan: TypePlan, check: _DecimalCheck) -> Column:
    """Whether ``check`` fails for ``value`` or any value inside it (``plan`` contains one)."""
    if check.applies(plan):
        return check.fails(value, plan)
    if plan.element is not None:
        element = plan.element
        return sf.exists(value, lambda item: _anywhere(item, element, check))
    if plan.value is not None:
        member = plan.value
        return sf.exists(sf.map_values(value), lambda item: _anywhere(item, member, check))
    found = [
        _anywhere(value[f.name], f.plan, check)
        for f in plan.fields
        if _contains(f.plan, check.applies)
    ]
    return functools.reduce(operator.or_, found)


def convert(value: Column, plan: TypePlan) -> Column:
    """The stored value of a parsed wire ``value`` (see the table in ``schemas``)."""
    conversion = plan.conversion
    if conversion is Conversion.NONE:
        return value
    if conversion is Conversion.STRUCT:
        members = [convert(value[f.name], f.plan).alias(f.name) for f in plan.fields]
        return sf.when(value.isNotNull(), sf.struct(*members))
    if conversion is Conversion.ARRAY:
        element = plan.element
        assert element is not None
        return sf.transform(value, lambda item: convert(item, element))
    if conversion is Conversion.MAP:
        member = plan.value
        assert member is not None
        return sf.transform_values(value, lambda _key, item: convert(item, member))
    return _scalar(value, plan)


def _scalar(value: Column, plan: TypePlan) -> Column:
    conversion = plan.conversion
    if conversion is Conversion.BASE64:
        return sf.unbase64(value)
    if conversion is Conversion.DECIMAL and isinstance(plan.typed, st.DecimalType):
        # try_cast: a value that does not fit is a problem (decimal_problem), not an error.
        return _decimal_text_of(value, plan).try_cast(plan.typed)
    if conversion in (Conversion.DECIMAL, Conversion.VARIABLE_DECIMAL):
        return _decimal_text_of(value, plan)
    if conversion is Conversion.EPOCH_DAYS:
        return sf.date_from_unix_date(value)
    if conversion is Conversion.INSTANT_MILLIS:
        return sf.timestamp_millis(value)
    if conversion is Conversion.ISO_INSTANT:
        return sf.try_to_timestamp(value)
    units = {
        Conversion.LOCAL_MILLIS: ("MILLISECOND", value),
        Conversion.LOCAL_MICROS: ("MICROSECOND", value),
        Conversion.LOCAL_NANOS: ("MICROSECOND", sf.floor(value / 1000)),
    }
    unit, amount = units[conversion]
    return sf.timestamp_add(unit, amount, sf.expr(_EPOCH_NTZ))


def _decimal_text_of(value: Column, plan: TypePlan) -> Column:
    """The exact text of a wire decimal: Connect's base64 string, or Debezium's struct."""
    if plan.conversion is Conversion.VARIABLE_DECIMAL:
        return decimal_text(_base64(value["value"]), value["scale"])
    return decimal_text(_base64(value), sf.lit(plan.scale))


def _base64(text: Column) -> Column:
    """The bytes of base64 ``text``; null (not an error) when it is not base64."""
    return sf.try_to_binary(text, sf.lit("base64"))


def decimal_text(unscaled: Column, scale: Column) -> Column:
    """The exact decimal text of a big-endian two's-complement ``unscaled`` integer.

    Any size, in native expressions: up to 8 bytes go through ``conv`` sign-extended to 64
    bits; up to 16 bytes within 38 digits as a high signed and a low unsigned 64-bit half in
    ``decimal(38, 0)``; anything longer through :func:`_hex_digits`. The text is plain
    notation (see :func:`_with_point`). Null only for a null or empty ``unscaled`` or a null
    ``scale``.
    """
    hexed = sf.hex(unscaled)
    size = sf.length(hexed)
    negative = hexed.substr(1, 1) >= sf.lit("8")
    fill = sf.when(negative, sf.lit("F")).otherwise(sf.lit("0"))
    short = _unsigned(sf.conv(sf.lpad(hexed, 16, fill), 16, -10))
    wide = sf.lpad(hexed, 32, fill)
    high = sf.conv(wide.substr(1, 16), 16, -10).cast(_DECIMAL_ACCUMULATOR)
    low = sf.conv(wide.substr(17, 16), 16, 10).cast(_DECIMAL_ACCUMULATOR)
    # For a negative value, borrow 2**64 from the high half so that neither partial result
    # is further from zero than the value itself.
    high = sf.when(negative, high + 1).otherwise(high)
    low = sf.when(negative, low - sf.lit(_TWO_TO_64)).otherwise(low)
    long_value = sf.try_add(sf.try_multiply(high, sf.lit(_TWO_TO_64)), low)
    # The bits of |value| - 1 for a negative value (two's complement), else of the value.
    inverted = sf.when(negative, sf.translate(hexed, _HEX, _INVERTED_HEX)).otherwise(hexed)
    any_size = _hex_digits(inverted, plus_one=negative)
    # 16 bytes hold up to 39 digits: where the halves overflow 38, take the general path.
    digits = (
        sf.when(size == 0, sf.lit(None))
        .when(size <= 16, short)
        .otherwise(sf.coalesce(sf.when(size <= 32, _unsigned(long_value.cast("string"))), any_size))
    )
    return _with_point(negative, digits, scale)


def _unsigned(signed: Column) -> Column:
    """Integer text without its sign (not ``abs``: Spark rounds that to 34 digits)."""
    return sf.regexp_replace(signed, "^-", "")


def _hex_digits(hexed: Column, *, plus_one: Column) -> Column:
    """The decimal digits of an unsigned hex integer of any length, plus one if asked.

    The hex digits are read in chunks of 28 bits into little-endian limbs of 9 decimal
    digits (each chunk multiplies the limbs by 2**28 and adds itself), then the limbs are
    printed most significant first, with leading zeros.
    """
    width = (sf.ceil(sf.length(hexed) / _CHUNK_HEX) * _CHUNK_HEX).cast("int")
    chunks = sf.regexp_extract_all(sf.lpad(hexed, width, "0"), sf.lit(f".{{{_CHUNK_HEX}}}"), 0)
    limbs = sf.aggregate(
        chunks,
        sf.array(sf.lit(0).cast("bigint")),
        lambda acc, chunk: _add_to_limbs(acc, _CHUNK_RADIX, sf.conv(chunk, 16, 10).cast("bigint")),
        lambda acc: _add_to_limbs(acc, 1, sf.when(plus_one, 1).otherwise(0).cast("bigint")),
    )
    printed = sf.transform(
        sf.reverse(limbs), lambda limb: sf.lpad(limb.cast("string"), _LIMB_DIGITS, "0")
    )
    return sf.array_join(printed, "")


def _add_to_limbs(limbs: Column, factor: int, addend: Column) -> Column:
    """``limbs * factor + addend`` in little-endian base-10**9 limbs.

    ``factor`` and ``addend`` are at most 2**28, so every intermediate stays below 2**59
    and the bigint arithmetic is exact; the carry left at the end becomes a new limb.
    """
    start = sf.struct(sf.array().cast(_LIMBS).alias("out"), addend.alias("carry"))

    def step(acc: Column, limb: Column) -> Column:
        total = limb * factor + acc["carry"]
        return sf.struct(
            sf.concat(acc["out"], sf.array(total % _LIMB)).alias("out"),
            sf.call_function("div", total, sf.lit(_LIMB)).alias("carry"),
        )

    def finish(acc: Column) -> Column:
        carried = sf.concat(acc["out"], sf.array(acc["carry"]))
        return sf.when(acc["carry"] > 0, carried).otherwise(acc["out"])

    return sf.aggregate(limbs, start, step, finish)


def _with_point(negative: Column, digits: Column, scale: Column) -> Column:
    """The decimal text of the unsigned integer ``digits`` times ``10**-scale``.

    Plain notation as ``BigDecimal.toPlainString`` writes it: exactly ``scale`` fraction
    digits, one ``0`` before the point when the value is below one, no exponent; a negative
    ``scale`` appends zeros. Each argument is used once, so the expression stays small.
    """
    zeros = sf.greatest(scale, sf.lit(0))
    padded = sf.concat(sf.repeat(sf.lit("0"), scale), digits, sf.repeat(sf.lit("0"), -scale))
    pointed = sf.regexp_replace(padded, sf.concat(sf.lit("(?=[0-9]{"), zeros, sf.lit("}$)")), ".")
    whole = sf.regexp_replace(sf.regexp_replace(pointed, "[.]$", ""), "^0+(?=[0-9])", "")
    return sf.concat(sf.when(negative, sf.lit("-")).otherwise(sf.lit("")), whole)
