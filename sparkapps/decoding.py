"""Kafka records to typed change rows: the envelope decoding, as pure DataFrame transforms.

Two steps, because a Debezium value describes its own schema:

1. :func:`records` reads every Kafka record once, drops tombstones and splits the value into
   its Connect schema (text) and payload (text), so schemas can be collected per topic.
   Records that are not JSON, or not change events, get a ``_cdc_problem``.
2. :func:`changes` parses one table's payloads with the Spark schema derived from its Connect
   schema(s) (:mod:`cdcflow.sparkapps.schemas`) and converts wire values to stored values
   (base64 to binary and decimals, day numbers to dates, ...). Rows that do not match the
   schema, or carry an unknown op or no position, get a ``_cdc_problem``.

The change rows have the table's columns (the ``after`` image, or ``before`` for deletes) and
the metadata columns named in :data:`META_COLUMNS`.
"""

from __future__ import annotations

import decimal

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as sf
from pyspark.sql import types as st

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

ROW_OPS = ("c", "u", "d", "r")
KNOWN_OPS = (*ROW_OPS, "t", "m")
_CORRUPT = "_cdc_corrupt"
_EPOCH_NTZ = "TIMESTAMP_NTZ '1970-01-01 00:00:00'"
_DECIMAL_ACCUMULATOR = st.DecimalType(38, 0)
_TWO_TO_64 = decimal.Decimal(2**64)

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
    ``_cdc_value`` keeps the raw value of records with a problem only.
    """
    value = sf.col("value").cast("string")
    framed = kafka.where(sf.col("value").isNotNull()).select(
        sf.col("topic").alias(TOPIC),
        sf.col("partition").alias(PARTITION),
        sf.col("offset").alias(OFFSET),
        sf.col("key").cast("string").alias(KEY),
        value.alias(VALUE),
        sf.from_json(value, _FRAME, {"columnNameOfCorruptRecord": _CORRUPT}).alias("frame"),
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
    )


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
    records_of_table: DataFrame, plan: EnvelopePlan, ordering: Ordering, *, keyed: bool
) -> DataFrame:
    """One table's records as change rows: its columns, :data:`META_COLUMNS` and a problem.

    ``m`` (logical decoding message) events are not row changes and are dropped. With
    ``keyed``, a row change without a Kafka key (a table without a primary key) is a problem.
    """
    parsed = sf.from_json(
        sf.col(PAYLOAD), envelope_type(plan), {"columnNameOfCorruptRecord": _CORRUPT}
    )
    decoded = records_of_table.select(
        TOPIC, PARTITION, OFFSET, KEY, PAYLOAD, parsed.alias("event")
    ).where(sf.col("event.op").isNull() | (sf.col("event.op") != "m"))
    event = sf.col("event")
    op = event["op"]
    image = sf.when(op == "d", event["before"]).otherwise(event["after"])
    position = ordering.position(event["source"])
    columns = [convert(image[f.name], f.plan).alias(f.name) for f in plan.row.fields]
    rows = decoded.select(
        *columns,
        op.alias(OP),
        position.alias(POSITION),
        sf.timestamp_millis(event["source"]["ts_ms"]).alias(SOURCE_TS),
        TOPIC,
        PARTITION,
        OFFSET,
        KEY,
        _problem(event, op, position, keyed=keyed).alias(PROBLEM),
        sf.col(PAYLOAD),
    )
    # Keep the payload only where a dead letter needs it: the rows are persisted.
    return rows.withColumn(PAYLOAD, sf.when(sf.col(PROBLEM).isNotNull(), sf.col(PAYLOAD)))


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
    if conversion is Conversion.DECIMAL:
        return decimal_text(sf.unbase64(value), sf.lit(plan.scale)).cast(plan.typed)
    if conversion is Conversion.VARIABLE_DECIMAL:
        return decimal_text(sf.unbase64(value["value"]), value["scale"])
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


def decimal_text(unscaled: Column, scale: Column) -> Column:
    """The exact decimal text of a big-endian two's-complement ``unscaled`` integer.

    Native expressions only (no lambdas): up to 8 bytes go through ``conv`` sign-extended to
    64 bits; up to 16 bytes (38 digits) as a high signed and a low unsigned 64-bit half.
    Larger values give null rather than a wrong number.
    """
    hexed = sf.hex(unscaled)
    size = sf.length(hexed)
    negative = hexed.substr(1, 1) >= sf.lit("8")
    fill = sf.when(negative, sf.lit("F")).otherwise(sf.lit("0"))
    short = sf.conv(sf.lpad(hexed, 16, fill), 16, -10)
    wide = sf.lpad(hexed, 32, fill)
    high = sf.conv(wide.substr(1, 16), 16, -10).cast(_DECIMAL_ACCUMULATOR)
    low = sf.conv(wide.substr(17, 16), 16, 10).cast(_DECIMAL_ACCUMULATOR)
    # For a negative value, borrow 2**64 from the high half so that neither partial result
    # is further from zero than the value itself (which fits 38 digits).
    high = sf.when(negative, high + 1).otherwise(high)
    low = sf.when(negative, low - sf.lit(_TWO_TO_64)).otherwise(low)
    long_value = sf.try_add(sf.try_multiply(high, sf.lit(_TWO_TO_64)), low)
    signed = (
        sf.when(size == 0, sf.lit(None))
        .when(size <= 16, short)
        .when(size <= 32, long_value.cast("string"))
    )
    return _with_point(signed, scale)


def _with_point(signed: Column, scale: Column) -> Column:
    """``signed`` integer text with the decimal point ``scale`` digits from the right."""
    negative = signed.startswith("-")
    magnitude = sf.regexp_replace(signed, "^-", "")
    width = sf.greatest(sf.length(magnitude), scale + 1)
    digits = sf.lpad(magnitude, width, "0")
    whole = digits.substr(sf.lit(1), sf.length(digits) - scale)
    fraction = digits.substr(sf.length(digits) - scale + 1, scale)
    return sf.concat(
        sf.when(negative, sf.lit("-")).otherwise(sf.lit("")),
        whole,
        sf.when(scale > 0, sf.concat(sf.lit("."), fraction)).otherwise(sf.lit("")),
    )
