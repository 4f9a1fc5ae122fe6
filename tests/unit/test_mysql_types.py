"""MySQL/MariaDB column types map to Debezium's Connect schemas and JSON values.

Values are given in both forms the connector reads: as python-mysql-replication yields them
from the binlog (ints, ``Decimal``, ``date``/``datetime``/``timedelta``, bit strings, sets) and
as a PyMySQL snapshot with the snapshot conversions returns them (temporal text, BIT bytes,
comma-joined SETs). Expected values are worked out from Debezium's converters by hand.
"""

from __future__ import annotations

import base64
import struct
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import pymysql.converters
import pytest
from pymysql.constants import FIELD_TYPE

from cdcflow.capture.connectors.mysql import types
from cdcflow.capture.spi import Column, ColumnStructure, TableId, TableStructure

# java.sql.Types codes, as Debezium's MySQL DDL parser assigns them.
BIT, TINYINT, BIGINT, BINARY, VARBINARY, CHAR, NUMERIC, DECIMAL = -7, -6, -5, -2, -3, 1, 2, 3
INTEGER, SMALLINT, FLOAT, REAL, DOUBLE, VARCHAR, BOOLEAN = 4, 5, 6, 7, 8, 12, 16
DATE, TIME, TIMESTAMP, OTHER, BLOB, TIMESTAMP_TZ = 91, 92, 93, 1111, 2004, 2014


def _structure(type_name: str, jdbc: int, **fields: Any) -> ColumnStructure:
    return ColumnStructure(
        name=fields.pop("name", "c"), jdbc_type=jdbc, type_name=type_name, position=1, **fields
    )


def _column(type_name: str, jdbc: int, *, options: types.TypeOptions | None = None,
            **fields: Any) -> Column:  # fmt: skip
    return types.column(_structure(type_name, jdbc, **fields), options or types.TypeOptions())


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _days(day: date) -> int:
    return (day - date(1970, 1, 1)).days


def _schema(column: Column) -> dict[str, Any]:
    """The schema without ``optional`` (checked where it matters)."""
    return {k: v for k, v in column.schema.items() if k != "optional"}


# --------------------------------------------------------------------------------------------
# Integers


@pytest.mark.parametrize(
    ("type_name", "jdbc", "schema_type"),
    [
        ("TINYINT", TINYINT, "int8"),
        ("SMALLINT", SMALLINT, "int16"),
        ("MEDIUMINT", INTEGER, "int32"),
        ("INT", INTEGER, "int32"),
        ("BIGINT", BIGINT, "int64"),
    ],
)
def test_signed_integers_map_to_connect_integers_of_their_size(
    type_name: str, jdbc: int, schema_type: str
) -> None:
    column = _column(type_name, jdbc)
    assert column.schema == {"type": schema_type, "optional": True}
    assert column.convert(-7) == -7
    assert column.convert(None) is None


@pytest.mark.parametrize(
    ("type_name", "jdbc", "schema_type", "largest"),
    [
        ("TINYINT UNSIGNED", TINYINT, "int16", 255),
        ("TINYINT UNSIGNED ZEROFILL", TINYINT, "int16", 255),
        ("SMALLINT UNSIGNED", SMALLINT, "int32", 65535),
        ("MEDIUMINT UNSIGNED", INTEGER, "int32", 16777215),
        ("INT UNSIGNED", INTEGER, "int64", 4294967295),
        ("INTEGER UNSIGNED ZEROFILL", INTEGER, "int64", 4294967295),
    ],
)
def test_unsigned_integers_widen_to_the_next_connect_type(
    type_name: str, jdbc: int, schema_type: str, largest: int
) -> None:
    column = _column(type_name, jdbc)
    assert column.schema["type"] == schema_type
    assert column.convert(largest) == largest


@pytest.mark.parametrize(
    ("type_name", "jdbc", "signed_reading", "value"),
    [
        ("TINYINT UNSIGNED", TINYINT, -1, 255),
        ("SMALLINT UNSIGNED", SMALLINT, -32768, 32768),
        ("MEDIUMINT UNSIGNED", INTEGER, -1, 16777215),
        ("INT UNSIGNED ZEROFILL", INTEGER, -1294967296, 3000000000),
    ],
)
def test_a_signed_binlog_reading_of_an_unsigned_integer_is_corrected_as_debezium_does(
    type_name: str, jdbc: int, signed_reading: int, value: int
) -> None:
    """Without binlog_row_metadata=FULL the library reads every integer signed."""
    column = _column(type_name, jdbc)
    assert column.convert(signed_reading) == value
    assert column.convert(value) == value


def test_unsigned_bigint_is_a_java_long_by_default_so_large_values_wrap() -> None:
    column = _column("BIGINT UNSIGNED", BIGINT)
    assert column.schema == {"type": "int64", "optional": True}
    assert column.convert(18446744073709551615) == -1
    assert column.convert(9223372036854775808) == -9223372036854775808
    assert column.convert(42) == 42


def test_unsigned_bigint_is_precise_decimal_when_asked() -> None:
    options = types.TypeOptions(bigint_unsigned_handling_mode="precise")
    column = _column("BIGINT UNSIGNED", BIGINT, options=options)
    assert _schema(column) == {
        "type": "bytes",
        "name": "org.apache.kafka.connect.data.Decimal",
        "version": 1,
        "parameters": {"scale": "0", "connect.decimal.precision": "20"},
    }
    # BigInteger.toByteArray of 2^64 - 1: a zero sign byte and eight 0xFF.
    assert column.convert(18446744073709551615) == _b64(b"\x00" + b"\xff" * 8)
    assert column.convert(1) == _b64(b"\x01")
    # A signed (wrapped) reading gains 2^64, as BinlogUnsignedIntegerConverter does.
    assert column.convert(-1) == _b64(b"\x00" + b"\xff" * 8)


def test_boolean_columns_are_connect_booleans() -> None:
    column = _column("BOOLEAN", BOOLEAN)
    assert column.schema == {"type": "boolean", "optional": True}
    assert [column.convert(v) for v in (1, 0, 2, None)] == [True, False, True, None]


def test_tinyint_1_stays_an_int8_without_a_boolean_converter() -> None:
    column = _column("TINYINT", TINYINT, length=1)
    assert column.schema["type"] == "int8"
    assert column.convert(1) == 1


# --------------------------------------------------------------------------------------------
# Decimals and floats


def test_decimal_is_a_connect_decimal_with_scale_and_precision_by_default() -> None:
    column = _column("DECIMAL", DECIMAL, length=10, scale=2)
    assert _schema(column) == {
        "type": "bytes",
        "name": "org.apache.kafka.connect.data.Decimal",
        "version": 1,
        "parameters": {"scale": "2", "connect.decimal.precision": "10"},
    }
    # -12345.67: unscaled -1234567 = 0xED2979 in three two's-complement bytes.
    assert column.convert(Decimal("-12345.67")) == _b64(bytes.fromhex("ed2979"))
    assert column.convert(Decimal("1.5")) == _b64(bytes([150]).rjust(2, b"\x00"))


def test_decimal_values_are_rescaled_to_the_column_scale() -> None:
    column = _column("NUMERIC", NUMERIC, length=5, scale=3)
    assert column.convert(Decimal("2")) == _b64((2000).to_bytes(2, "big"))


def test_decimal_is_a_double_in_double_mode() -> None:
    options = types.TypeOptions(decimal_handling_mode="double")
    column = _column("DECIMAL", DECIMAL, length=10, scale=2, options=options)
    assert column.schema == {"type": "double", "optional": True}
    assert column.convert(Decimal("-12345.67")) == -12345.67


def test_decimal_is_a_plain_string_in_string_mode() -> None:
    options = types.TypeOptions(decimal_handling_mode="string")
    column = _column("DECIMAL", DECIMAL, length=20, scale=10, options=options)
    assert column.schema == {"type": "string", "optional": True}
    # BigDecimal.toPlainString: never scientific, trailing zeros of the scale kept.
    assert column.convert(Decimal("1E-10")) == "0.0000000001"
    assert column.convert(Decimal("-1.5000000000")) == "-1.5000000000"
    assert column.convert(Decimal("0E-10")) == "0.0000000000"


def test_float_is_float32_written_in_its_shortest_form() -> None:
    column = _column("FLOAT", FLOAT)
    assert column.schema == {"type": "float", "optional": True}
    assert column.convert(1.100000023841858) == 1.1  # the binlog's widened float32
    assert column.convert(1.1) == 1.1  # a snapshot's text
    assert column.convert(16777217.0) == 16777216.0  # rounds to what a FLOAT stores


@pytest.mark.parametrize("sign", [1, -1])
def test_a_float_at_the_edge_of_single_precision_is_published_as_debezium_does(sign: int) -> None:
    column = _column("FLOAT", FLOAT)
    largest = sign * 3.4028234663852886e38  # Float.MAX_VALUE, as the binlog widens it
    assert column.convert(largest) == sign * 3.4028235e38  # Float.toString's digits
    assert column.convert(sign * 3.40282e38) == sign * 3.40282e38  # the snapshot's text form


def test_float_with_a_precision_above_24_is_float64() -> None:
    column = _column("FLOAT", FLOAT, length=30)
    assert column.schema == {"type": "double", "optional": True}
    assert column.convert(0.1) == 0.1


def test_float_with_a_scale_is_float64_of_the_single_precision_value() -> None:
    column = _column("FLOAT", FLOAT, length=7, scale=3)
    assert column.schema["type"] == "double"
    # float32(1.1) widened: 1.10000002384185791015625; the snapshot's "1.100" gives the same.
    assert column.convert(1.1) == 1.10000002384185791015625
    assert column.convert(1.10000002384185791015625) == 1.10000002384185791015625


def test_real_is_float32_as_debezium_maps_it() -> None:
    column = _column("REAL", REAL)
    assert column.schema["type"] == "float"
    assert column.convert(0.1) == 0.1


def test_double_is_float64_as_it_is() -> None:
    column = _column("DOUBLE PRECISION", DOUBLE)
    assert column.schema == {"type": "double", "optional": True}
    assert column.convert(0.30000000000000004) == 0.30000000000000004


# --------------------------------------------------------------------------------------------
# Bits


def test_bit_1_is_a_boolean_from_either_read() -> None:
    column = _column("BIT", BIT, length=1)
    assert column.schema == {"type": "boolean", "optional": True}
    assert [column.convert(v) for v in ("1", "0", b"\x01", b"\x00")] == [True, False, True, False]


def test_bit_n_is_little_endian_bits_padded_to_the_column_size() -> None:
    column = _column("BIT", BIT, length=12)
    assert _schema(column) == {
        "type": "bytes",
        "name": "io.debezium.data.Bits",
        "version": 1,
        "parameters": {"length": "12"},
    }
    # 0b1010_0000_0001 = 0x0A01: bytes 01 0A, little-endian; the binlog's bit string and the
    # snapshot's big-endian bytes agree.
    assert column.convert("101000000001") == _b64(b"\x01\x0a")
    assert column.convert(b"\x0a\x01") == _b64(b"\x01\x0a")
    assert column.convert("000000000001") == _b64(b"\x01\x00")
    assert column.convert("000000000000") == _b64(b"\x00\x00")


# --------------------------------------------------------------------------------------------
# Strings and binary data


def test_character_columns_are_strings_decoded_in_their_charset() -> None:
    column = _column("VARCHAR", VARCHAR, length=10, charset_name="latin1")
    assert column.schema == {"type": "string", "optional": True}
    assert column.convert("é€") == "é€"
    # MySQL's latin1 is Windows-1252: 0x80 is the euro sign.
    assert column.convert(b"\xe9\x80") == "é€"


def test_binary_columns_are_bytes_in_base64_by_default() -> None:
    column = _column("VARBINARY", VARBINARY, length=8)
    assert column.schema == {"type": "bytes", "optional": True}
    assert column.convert(b"\x00\xff") == "AP8="


def test_binary_n_values_are_padded_with_zero_bytes_as_debezium_restores_them() -> None:
    column = _column("BINARY", BINARY, length=4)
    assert column.convert(b"\x01") == _b64(b"\x01\x00\x00\x00")
    assert column.convert(b"\x01\x02\x03\x04") == _b64(b"\x01\x02\x03\x04")


def test_binary_text_from_the_binlog_reader_is_its_utf8_bytes() -> None:
    column = _column("BLOB", BLOB)
    assert column.convert("") == ""
    assert column.convert("é") == _b64("é".encode())


@pytest.mark.parametrize(
    ("mode", "schema_type", "expected"),
    [
        ("base64", "string", "+/8="),
        ("base64-url-safe", "string", "-_8="),
        ("hex", "string", "fbff"),
        ("bytes", "bytes", "+/8="),
    ],
)
def test_binary_handling_mode_decides_the_encoding(
    mode: types.BinaryMode, schema_type: str, expected: str
) -> None:
    column = _column("BLOB", BLOB, options=types.TypeOptions(binary_handling_mode=mode))
    assert column.schema["type"] == schema_type
    assert column.convert(b"\xfb\xff") == expected


def test_json_is_a_debezium_json_string() -> None:
    column = _column("JSON", OTHER)
    assert _schema(column) == {"type": "string", "name": "io.debezium.data.Json", "version": 1}
    assert column.convert('{"a": [1, 2.50]}') == '{"a": [1, 2.50]}'
    assert column.convert(b'{"a":1}') == '{"a":1}'


def test_mysql_binary_json_parsed_by_the_binlog_library_is_written_back_as_text() -> None:
    column = _column("JSON", OTHER)
    assert column.convert({b"a": [1, None, b"x"]}) == '{"a": [1, null, "x"]}'


def test_uuid_is_a_debezium_uuid_string_from_text_or_the_binlogs_bytes() -> None:
    column = _column("UUID", OTHER)
    assert _schema(column) == {"type": "string", "name": "io.debezium.data.Uuid", "version": 1}
    text = "123e4567-e89b-12d3-a456-426614174000"
    assert column.convert(text) == text
    # The binlog drops the trailing zero byte, like a BINARY(16)'s.
    assert column.convert(bytes.fromhex("123e4567e89b12d3a456426614174000")[:-1]) == text


def test_vector_is_a_float_vector_of_little_endian_floats() -> None:
    column = _column("VECTOR", OTHER, length=2)
    assert _schema(column) == {
        "type": "array",
        "items": {"type": "float", "optional": False},
        "name": "io.debezium.data.FloatVector",
        "version": 1,
    }
    assert column.convert(struct.pack("<2f", 1.5, 0.1)) == [1.5, 0.1]


# --------------------------------------------------------------------------------------------
# ENUM and SET


def test_enum_is_a_debezium_enum_with_its_allowed_values_escaped() -> None:
    column = _column("ENUM", CHAR, enum_values=("a", "b,c", "d\\e"))
    assert _schema(column) == {
        "type": "string",
        "name": "io.debezium.data.Enum",
        "version": 1,
        "parameters": {"allowed": "a,b\\,c,d\\\\e"},
    }
    assert column.convert("b,c") == "b,c"
    assert column.convert(2) == "b,c"  # a 1-based index
    assert column.convert(0) == ""  # the invalid value


def test_enum_members_quoted_as_debeziums_parser_stores_them_are_unquoted() -> None:
    column = _column("ENUM", CHAR, enum_values=("'it''s'", "'b'"))
    assert column.schema["parameters"] == {"allowed": "it's,b"}


def test_set_members_join_in_definition_order_from_either_read() -> None:
    column = _column("SET", CHAR, enum_values=("a", "b", "c"))
    assert _schema(column) == {
        "type": "string",
        "name": "io.debezium.data.EnumSet",
        "version": 1,
        "parameters": {"allowed": "a,b,c"},
    }
    assert column.convert({"c", "a"}) == "a,c"  # the binlog library's Python set
    assert column.convert("a,c") == "a,c"  # the snapshot's text
    assert column.convert(0b101) == "a,c"  # a bit mask
    assert column.convert(set()) == ""  # an empty set, as the binlog reader passes it on


def test_an_empty_set_in_a_not_null_column_is_an_empty_string_not_a_null() -> None:
    column = _column("SET", CHAR, enum_values=("x", "y"), optional=False)
    assert column.convert(None) == ""


# --------------------------------------------------------------------------------------------
# Dates and times


def test_date_is_epoch_days_from_either_read() -> None:
    column = _column("DATE", DATE)
    assert _schema(column) == {"type": "int32", "name": "io.debezium.time.Date", "version": 1}
    assert column.convert(date(2024, 2, 29)) == _days(date(2024, 2, 29))
    assert column.convert("2024-02-29") == _days(date(2024, 2, 29))
    assert column.convert("1000-01-01") == _days(date(1000, 1, 1))


@pytest.mark.parametrize("zero", ["0000-00-00", "2024-00-15", "2024-05-00", "0000-01-01", None])
def test_zero_dates_are_null_in_a_nullable_column(zero: str | None) -> None:
    assert _column("DATE", DATE).convert(zero) is None


def test_zero_dates_are_the_epoch_in_a_not_null_column() -> None:
    column = _column("DATE", DATE, optional=False)
    assert column.convert("0000-00-00") == 0
    assert column.convert(None) == 0  # the binlog library's zero date


def test_the_time_adjuster_reads_two_digit_years_as_debezium_does() -> None:
    column = _column("DATE", DATE)
    assert column.convert(date(18, 4, 1)) == _days(date(2018, 4, 1))
    assert column.convert("0078-04-01") == _days(date(1978, 4, 1))
    assert column.convert("0100-04-01") == _days(date(100, 4, 1))


def test_the_time_adjuster_can_be_switched_off() -> None:
    options = types.TypeOptions(enable_time_adjuster=False)
    column = _column("DATE", DATE, options=options)
    assert column.convert("0018-04-01") == _days(date(18, 4, 1))


def test_time_is_microtime_including_negative_and_long_durations() -> None:
    column = _column("TIME", TIME, length=6)
    assert _schema(column) == {"type": "int64", "name": "io.debezium.time.MicroTime", "version": 1}
    assert column.convert("838:59:59.000000") == 3_020_399_000_000
    assert column.convert(timedelta(hours=838, minutes=59, seconds=59)) == 3_020_399_000_000
    assert column.convert("-12:34:56.5") == -45_296_500_000
    assert column.convert("-00:00:01") == -1_000_000
    assert column.convert(timedelta(seconds=-1)) == -1_000_000


@pytest.mark.parametrize(
    ("garbled", "expected"),
    [
        # -00:00:00.000001 arrives as -1 s + 1 us; -12:34:56.5 as -12:34:57 + 0.5 s.
        (timedelta(seconds=-1, microseconds=1), -1),
        (timedelta(seconds=-45297, microseconds=500_000), -45_296_500_000),
        (timedelta(seconds=-2, microseconds=500_000), -1_500_000),
    ],
)
def test_a_negative_binlog_time_with_a_fraction_is_decoded_again(
    garbled: timedelta, expected: int
) -> None:
    assert _column("TIME", TIME, length=6).convert(garbled) == expected


def test_time_in_connect_mode_is_milliseconds_within_a_day_only() -> None:
    column = _column("TIME", TIME, options=types.TypeOptions(time_precision_mode="connect"))
    assert _schema(column) == {
        "type": "int32",
        "name": "org.apache.kafka.connect.data.Time",
        "version": 1,
    }
    assert column.convert("12:00:00.1239") == 43_200_123
    with pytest.raises(ValueError, match="00:00 to 24:00"):
        column.convert("-00:00:01")
    with pytest.raises(ValueError, match="00:00 to 24:00"):
        column.convert("25:00:00")


@pytest.mark.parametrize(
    ("length", "name", "expected"),
    [
        (None, "io.debezium.time.Timestamp", 1_704_164_645_123),
        (3, "io.debezium.time.Timestamp", 1_704_164_645_123),
        (4, "io.debezium.time.MicroTimestamp", 1_704_164_645_123_456),
        (6, "io.debezium.time.MicroTimestamp", 1_704_164_645_123_456),
    ],
)
def test_datetime_precision_picks_milli_or_micro_timestamps(
    length: int | None, name: str, expected: int
) -> None:
    column = _column("DATETIME", TIMESTAMP, length=length)
    assert _schema(column) == {"type": "int64", "name": name, "version": 1}
    # 2024-01-02 03:04:05.123456 read as UTC: 19724 days and 11045.123456 s.
    assert column.convert(datetime(2024, 1, 2, 3, 4, 5, 123_456)) == expected
    assert column.convert("2024-01-02 03:04:05.123456") == expected


def test_datetime_before_the_epoch_floors_to_milliseconds() -> None:
    column = _column("DATETIME", TIMESTAMP, length=3)
    assert column.convert("1969-12-31 23:59:59.999") == -1


def test_zero_datetimes_are_null_or_the_epoch() -> None:
    assert _column("DATETIME", TIMESTAMP).convert("0000-00-00 00:00:00") is None
    assert _column("DATETIME", TIMESTAMP, optional=False).convert("2024-00-01 00:00:00") == 0


def test_datetime_in_connect_mode_is_a_connect_timestamp() -> None:
    options = types.TypeOptions(time_precision_mode="connect")
    column = _column("DATETIME", TIMESTAMP, length=6, options=options)
    assert column.schema["name"] == "org.apache.kafka.connect.data.Timestamp"
    assert column.convert("1970-01-01 00:00:01.999999") == 1999


def test_date_in_connect_mode_is_a_connect_date() -> None:
    column = _column("DATE", DATE, options=types.TypeOptions(time_precision_mode="connect"))
    assert column.schema["name"] == "org.apache.kafka.connect.data.Date"
    assert column.convert("1970-01-02") == 1


def test_timestamp_is_a_utc_zoned_timestamp_padded_to_the_column_precision() -> None:
    column = _column("TIMESTAMP", TIMESTAMP_TZ, length=3)
    assert _schema(column) == {
        "type": "string",
        "name": "io.debezium.time.ZonedTimestamp",
        "version": 1,
    }
    # The binlog's naive UTC datetime and the snapshot's text in a UTC session agree.
    assert column.convert(datetime(2024, 1, 2, 3, 4, 5, 100_000)) == "2024-01-02T03:04:05.100Z"
    assert column.convert("2024-01-02 03:04:05.100") == "2024-01-02T03:04:05.100Z"
    assert column.convert(datetime(2024, 1, 2, 3, 4, 5)) == "2024-01-02T03:04:05.000Z"


def test_timestamp_without_a_precision_has_no_fraction() -> None:
    column = _column("TIMESTAMP", TIMESTAMP_TZ)
    assert column.convert("2024-01-02 03:04:05") == "2024-01-02T03:04:05Z"


def test_timestamp_text_is_read_in_the_connection_time_zone() -> None:
    options = types.TypeOptions(connection_time_zone="+05:30")
    column = _column("TIMESTAMP", TIMESTAMP_TZ, options=options)
    assert column.convert("2024-01-01 05:30:00") == "2024-01-01T00:00:00Z"
    # The binlog is UTC whatever the session's zone.
    assert column.convert(datetime(2024, 1, 1, 5, 30)) == "2024-01-01T05:30:00Z"


def test_timestamp_text_in_a_named_zone_follows_its_daylight_saving_time() -> None:
    options = types.TypeOptions(connection_time_zone="Europe/Berlin")
    column = _column("TIMESTAMP", TIMESTAMP_TZ, options=options)
    assert column.convert("2024-01-15 12:00:00") == "2024-01-15T11:00:00Z"
    assert column.convert("2024-07-15 12:00:00") == "2024-07-15T10:00:00Z"


def test_an_aware_timestamp_is_shifted_to_utc() -> None:
    column = _column("TIMESTAMP", TIMESTAMP_TZ)
    aware = datetime(2024, 1, 1, 1, 0, tzinfo=timezone(timedelta(hours=1)))
    assert column.convert(aware) == "2024-01-01T00:00:00Z"


def test_the_zero_timestamp_is_the_epoch_from_the_binlog_and_null_from_a_snapshot() -> None:
    nullable = _column("TIMESTAMP", TIMESTAMP_TZ, length=6)
    # The binlog library reads the zero value as epoch second 0: Debezium publishes the epoch.
    assert nullable.convert(datetime(1970, 1, 1)) == "1970-01-01T00:00:00.000000Z"
    assert nullable.convert("0000-00-00 00:00:00.000000") is None
    not_null = _column("TIMESTAMP", TIMESTAMP_TZ, optional=False)
    assert not_null.convert(datetime(1970, 1, 1)) == "1970-01-01T00:00:00Z"


def test_an_unknown_connection_time_zone_is_rejected_up_front() -> None:
    with pytest.raises(ValueError, match="Mars/Olympus"):
        types.TypeOptions(connection_time_zone="Mars/Olympus")


def test_year_is_a_debezium_year() -> None:
    column = _column("YEAR", INTEGER)
    assert _schema(column) == {"type": "int32", "name": "io.debezium.time.Year", "version": 1}
    assert column.convert(2155) == 2155
    assert column.convert(1901) == 1901


def test_year_0000_reads_1900_on_both_paths_as_debeziums_binlog_reader_has_it() -> None:
    column = _column("YEAR", INTEGER)
    assert column.convert(1900) == 1900  # the binlog library: the stored byte 0 plus 1900
    assert column.convert(0) == 1900  # the snapshot's "0000"


# --------------------------------------------------------------------------------------------
# Geometry


def test_geometry_is_a_debezium_geometry_with_wkb_and_srid() -> None:
    column = _column("LINESTRING", OTHER)
    assert column.schema["name"] == "io.debezium.data.geometry.Geometry"
    assert column.schema["version"] == 2
    assert column.schema["optional"] is True
    wkb = struct.pack("<BII4d", 1, 2, 2, 0.0, 0.0, 1.0, 1.0)
    value = (4326).to_bytes(4, "little") + wkb
    assert column.convert(value) == {"wkb": _b64(wkb), "srid": 4326, "extensions": None}


def test_a_zero_srid_is_no_srid() -> None:
    column = _column("GEOMETRYCOLLECTION", OTHER)
    wkb = bytes.fromhex("010700000000000000")
    assert column.convert(b"\x00\x00\x00\x00" + wkb) == {
        "wkb": _b64(wkb),
        "srid": None,
        "extensions": None,
    }


def test_point_is_debeziums_point_struct() -> None:
    column = _column("POINT", OTHER)
    assert column.schema["name"] == "io.debezium.data.geometry.Point"
    assert [f["field"] for f in column.schema["fields"]] == ["x", "y", "wkb", "srid"]
    wkb = struct.pack("<BIdd", 1, 1, 1.5, -2.0)
    assert column.convert((3857).to_bytes(4, "little") + wkb) == {
        "x": 1.5,
        "y": -2.0,
        "wkb": _b64(wkb),
        "srid": 3857,
    }


def test_a_point_column_holding_another_geometry_fails() -> None:
    column = _column("POINT", OTHER)
    with pytest.raises(ValueError, match="POINT"):
        column.convert(b"\x00\x00\x00\x00" + bytes.fromhex("010700000000000000"))


# --------------------------------------------------------------------------------------------
# Defaults


def test_number_and_string_defaults_go_into_the_schema() -> None:
    assert _column("INT", INTEGER, default_value_expression="42").schema["default"] == 42
    text = _column("VARCHAR", VARCHAR, default_value_expression=" a b ")
    assert text.schema["default"] == " a b "  # strings are not trimmed
    flt = _column("FLOAT", FLOAT, default_value_expression="1.1")
    assert flt.schema["default"] == 1.1


def test_a_default_replaces_a_null_as_jsonconverter_writes_it() -> None:
    column = _column("INT", INTEGER, default_value_expression="7")
    assert column.convert(None) == 7
    assert column.convert(3) == 3


def test_nulls_stay_null_when_replace_null_with_default_is_off() -> None:
    options = types.TypeOptions(replace_null_with_default=False)
    column = _column("INT", INTEGER, default_value_expression="7", options=options)
    assert column.schema["default"] == 7
    assert column.convert(None) is None


def test_a_not_null_columns_null_is_its_default_even_without_replacing() -> None:
    options = types.TypeOptions(replace_null_with_default=False)
    column = _column(
        "DATE", DATE, optional=False, default_value_expression="2000-01-01", options=options
    )
    assert column.convert("0000-00-00") == _days(date(2000, 1, 1))


def test_an_integer_default_goes_through_a_double_as_debezium_rounds_it() -> None:
    # Math.round(Double.parseDouble(...)): half up, and 2^53+ loses digits.
    assert _column("INT", INTEGER, default_value_expression="2.5").schema["default"] == 3
    assert _column("INT", INTEGER, default_value_expression="-2.5").schema["default"] == -2
    big = _column("BIGINT", BIGINT, default_value_expression="1234567890123456789")
    assert big.schema["default"] == 1234567890123456768


def test_boolean_words_are_numbers_for_numeric_defaults() -> None:
    assert _column("TINYINT", TINYINT, default_value_expression="TRUE").schema["default"] == 1
    assert _column("BOOL", BOOLEAN, default_value_expression="0").schema["default"] is False
    assert _column("BOOL", BOOLEAN, default_value_expression="true").schema["default"] is True


def test_decimal_defaults_round_half_up_to_the_scale() -> None:
    column = _column("DECIMAL", DECIMAL, length=5, scale=2, default_value_expression=" 1.005 ")
    assert column.schema["default"] == _b64(bytes([101]))


def test_bit_defaults_are_bits_or_booleans() -> None:
    bits = _column("BIT", BIT, length=12, default_value_expression="101")
    assert bits.schema["default"] == _b64(b"\x05\x00")
    assert _column("BIT", BIT, length=1, default_value_expression="1").schema["default"] is True
    no_default = _column("BIT", BIT, length=12, default_value_expression="true")
    assert "default" not in no_default.schema


def test_current_timestamp_defaults_are_the_epoch_in_not_null_columns_only() -> None:
    epoch = "1970-01-01 00:00:00"  # what the DDL parser records for CURRENT_TIMESTAMP
    timestamp = _column(
        "TIMESTAMP", TIMESTAMP_TZ, length=3, optional=False, default_value_expression=epoch
    )
    assert timestamp.schema["default"] == "1970-01-01T00:00:00Z"
    nullable = _column("TIMESTAMP", TIMESTAMP_TZ, default_value_expression=epoch)
    assert "default" not in nullable.schema
    datetime_column = _column("DATETIME", TIMESTAMP, default_value_expression=epoch)
    assert datetime_column.schema["default"] == 0


def test_a_timestamp_literal_default_is_utc_with_the_columns_fraction() -> None:
    column = _column(
        "TIMESTAMP", TIMESTAMP_TZ, length=3, default_value_expression="2020-01-01 10:00:00.5"
    )
    assert column.schema["default"] == "2020-01-01T10:00:00.500Z"


def test_zero_date_defaults_are_no_default_when_nullable_and_the_epoch_otherwise() -> None:
    nullable = _column("DATE", DATE, default_value_expression="0000-00-00")
    assert "default" not in nullable.schema
    not_null = _column("DATE", DATE, optional=False, default_value_expression="0000-00-00")
    assert not_null.schema["default"] == 0


def test_a_two_digit_year_default_is_adjusted_like_a_value() -> None:
    column = _column("DATETIME", TIMESTAMP, default_value_expression="0018-04-01 12:34:56")
    assert column.schema["default"] == 1_522_586_096_000


def test_time_defaults_drop_a_date_part() -> None:
    column = _column("TIME", TIME, default_value_expression="2020-01-01 01:00:00")
    assert column.schema["default"] == 3_600_000_000


def test_year_defaults_are_adjusted_as_debezium_does_even_0000() -> None:
    assert _column("YEAR", INTEGER, default_value_expression="2024").schema["default"] == 2024
    assert _column("YEAR", INTEGER, default_value_expression="0000").schema["default"] == 2000


def test_binary_defaults_are_the_texts_utf8_bytes_unpadded() -> None:
    column = _column("BINARY", BINARY, length=4, default_value_expression="ab")
    assert column.schema["default"] == _b64(b"ab")


def test_a_charset_introducer_is_stripped_from_a_default() -> None:
    column = _column("VARCHAR", VARCHAR, default_value_expression="_utf8mb4'hi'")
    assert column.schema["default"] == "hi"


def test_defaults_debezium_cannot_read_are_left_out() -> None:
    for type_name, jdbc, text in [
        ("DATE", DATE, "curdate()"),  # nullable: an unparseable date is no default
        ("TIME", TIME, "curtime()"),
        ("INT", INTEGER, "abs(1)"),
        ("UUID", OTHER, "00000000-0000-0000-0000-000000000000"),
        ("POINT", OTHER, "POINT(1 1)"),
    ]:
        column = _column(type_name, jdbc, default_value_expression=text)
        assert "default" not in column.schema, type_name


# --------------------------------------------------------------------------------------------
# Tables, options and the snapshot's reading


def test_a_table_schema_keeps_column_order_and_the_primary_key() -> None:
    table = TableStructure(
        TableId("db", "t"),
        (
            ColumnStructure("id", INTEGER, "INT", 1, optional=False),
            ColumnStructure("name", VARCHAR, "VARCHAR", 2, length=10),
        ),
        primary_key=("id",),
    )
    schema = types.table_schema(table, types.TypeOptions())
    assert schema.id == TableId("db", "t")
    assert [c.name for c in schema.columns] == ["id", "name"]
    assert schema.key_columns == ("id",)
    assert schema.columns[0].schema == {"type": "int32", "optional": False}


def test_a_type_debezium_does_not_map_is_an_error() -> None:
    with pytest.raises(ValueError, match="does not map"):
        _column("WEIRD", 9999)


def test_an_unknown_mode_is_rejected() -> None:
    with pytest.raises(ValueError, match="decimal_handling_mode"):
        types.TypeOptions(decimal_handling_mode="exact")  # type: ignore[arg-type]


def test_snapshot_conversions_keep_temporal_text_and_pymysqls_encoders() -> None:
    conv = types.SNAPSHOT_CONVERSIONS
    for field_type in (FIELD_TYPE.DATE, FIELD_TYPE.DATETIME, FIELD_TYPE.TIMESTAMP, FIELD_TYPE.TIME):
        assert conv[field_type] is pymysql.converters.through
    assert conv[FIELD_TYPE.NEWDECIMAL] is Decimal
    # The encoders (keyed by Python type) stay, so query parameters are still escaped.
    assert conv[str] is pymysql.converters.conversions[str]


def test_the_snapshot_reads_single_precision_floats_as_doubles() -> None:
    single = _structure("FLOAT", FLOAT, name="f`x")
    assert types.snapshot_expression(single) == "(`f``x` + 0E0)"
    assert types.snapshot_expression(_structure("FLOAT", FLOAT, length=7, scale=3)) == "(`c` + 0E0)"
    assert types.snapshot_expression(_structure("FLOAT", FLOAT, length=30)) == "`c`"
    assert types.snapshot_expression(_structure("DOUBLE", DOUBLE)) == "`c`"
