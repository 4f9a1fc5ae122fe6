"""The connector-neutral encodings, on Python values, against the documented forms.

Expected values come from the specifications, not from our own output: Kafka Connect's Decimal
(the unscaled value as big-endian two's-complement bytes, as ``BigInteger.toByteArray``),
Debezium's semantic types (days/microseconds since the epoch, ``Bits`` little-endian,
``MicroDuration``'s 365.25/12-day month, the ``P1Y2M3DT4H5M6.78S`` interval string), Java's
``ISO_LOCAL_DATE``/``ISO_LOCAL_TIME`` (four-digit years, a sign outside 0000-9999, a trimmed
fraction), OGC WKB, RFC 4648 base64 and the stdlib's own calendar arithmetic.
"""

from __future__ import annotations

import base64
import struct
import subprocess
import sys
from datetime import UTC, date, datetime, time, timedelta, timezone
from decimal import Decimal

import pytest

from cdcflow.capture import encoders
from cdcflow.capture.encoders import MICROS_PER_DAY, DurationFields

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
IST = timezone(timedelta(hours=5, minutes=30))

# --------------------------------------------------------------------------------------------
# Decimals
# --------------------------------------------------------------------------------------------


def test_connect_decimal_is_the_unscaled_value_in_minimal_big_endian_twos_complement() -> None:
    unscaled, scale = encoders.decimal_parts(Decimal("-1.5"))
    assert (unscaled, scale) == (-15, 1)
    # -1.50 at scale 2: unscaled -150 = 0xFF6A (BigInteger.toByteArray gives [-1, 106]).
    assert encoders.decimal_bytes(unscaled, scale, target_scale=2) == "/2o="
    # 128 needs a leading zero byte to stay positive; zero is one zero byte.
    assert encoders.unscaled_bytes(128) == base64.b64encode(b"\x00\x80").decode()
    assert encoders.unscaled_bytes(0) == "AA=="
    assert encoders.unscaled_bytes(-1) == base64.b64encode(b"\xff").decode()


def test_connect_decimal_never_rounds_to_fit_its_scale() -> None:
    with pytest.raises(ValueError, match="without rounding"):
        encoders.decimal_bytes(-15, 1, target_scale=0)


def test_decimal_parts_of_python_decimals() -> None:
    assert encoders.decimal_parts(Decimal("12.340")) == (12340, 3)
    assert encoders.decimal_parts(Decimal("1E+2")) == (100, 0)
    assert encoders.decimal_parts(Decimal("-0")) == (0, 0)
    with pytest.raises(ValueError):
        encoders.decimal_parts(Decimal("NaN"))


def test_variable_scale_decimal_is_a_scale_and_the_unscaled_bytes() -> None:
    # 12.34: scale 2, unscaled 1234 = 0x04D2.
    assert encoders.variable_scale_decimal(1234, 2) == {"scale": 2, "value": "BNI="}


def test_decimal_string_is_bigdecimal_to_string() -> None:
    assert encoders.decimal_string(-15, 1, target_scale=2) == "-1.50"
    # BigDecimal.toString goes scientific once the adjusted exponent is below -6.
    assert encoders.decimal_string(1, 8, target_scale=8) == "1E-8"
    assert encoders.decimal_string(1, 0, target_scale=8) == "1.00000000"


# --------------------------------------------------------------------------------------------
# Dates and times
# --------------------------------------------------------------------------------------------


def test_date_is_days_since_the_epoch() -> None:
    assert encoders.date_epoch_days(date(1970, 1, 2)) == 1
    assert encoders.date_epoch_days(date(1969, 12, 31)) == -1
    for value in (date(1, 1, 1), date(1900, 3, 1), date(2000, 2, 29), date(9999, 12, 31)):
        assert encoders.date_epoch_days(value) == (value - date(1970, 1, 1)).days


def test_year_zero_is_1_bc_and_a_leap_year_as_in_java_local_date() -> None:
    # LocalDate.of(0, 1, 1).toEpochDay() == -719528 (DAYS_0000_TO_1970).
    assert encoders.epoch_days(0, 1, 1) == -719528
    assert encoders.epoch_days(0, 3, 1) - encoders.epoch_days(0, 2, 28) == 2
    assert encoders.civil_from_days(-719528) == (0, 1, 1)


def test_time_and_timestamp_units() -> None:
    assert encoders.time_micros(time(10, 0, 0, 500)) == 36_000_000_500  # MicroTime
    assert encoders.millis(encoders.time_micros(time(10, 0, 0, 500))) == 36_000_000  # Time
    assert encoders.timedelta_micros(timedelta(hours=-1, microseconds=5)) == -3_599_999_995
    instant = datetime(2018, 6, 20, 15, 13, 16, 945104, tzinfo=UTC)
    expected = (instant - EPOCH) // timedelta(microseconds=1)
    assert encoders.datetime_epoch_micros(instant) == expected  # MicroTimestamp
    assert encoders.datetime_epoch_micros(instant.replace(tzinfo=None)) == expected  # as UTC
    assert encoders.datetime_epoch_micros(instant.astimezone(IST)) == expected
    # Timestamp (millis) floors like Instant.toEpochMilli: one microsecond before the epoch.
    before = encoders.datetime_epoch_micros(datetime(1969, 12, 31, 23, 59, 59, 999999))
    assert (before, encoders.millis(before)) == (-1, -1)


def test_zoned_timestamp_is_utc_with_the_fraction_at_the_column_precision() -> None:
    local = datetime(2018, 6, 20, 20, 43, 16, 900000, tzinfo=IST)
    micros = encoders.datetime_epoch_micros(local)
    assert encoders.zoned_timestamp(micros, precision=3) == "2018-06-20T15:13:16.900Z"
    assert encoders.zoned_timestamp(micros, precision=6) == "2018-06-20T15:13:16.900000Z"
    assert encoders.zoned_timestamp(micros, precision=0) == "2018-06-20T15:13:16Z"


def test_zoned_timestamp_years_follow_iso_local_date() -> None:
    # Four digits within 0000..9999, a sign outside it (DateTimeFormatter.ISO_LOCAL_DATE).
    year_zero = encoders.epoch_days(0, 1, 1) * MICROS_PER_DAY
    assert encoders.zoned_timestamp(year_zero, precision=0) == "0000-01-01T00:00:00Z"
    noon_2_bc = encoders.epoch_days(-1, 12, 31) * MICROS_PER_DAY + 12 * 3_600_000_000 + 500_000
    assert encoders.zoned_timestamp(noon_2_bc, precision=1) == "-0001-12-31T12:00:00.5Z"
    year_10000 = encoders.epoch_days(10000, 1, 1) * MICROS_PER_DAY
    assert encoders.zoned_timestamp(year_10000, precision=2) == "+10000-01-01T00:00:00.00Z"


def test_zoned_time_is_shifted_to_utc_with_a_trimmed_fraction() -> None:
    ten = encoders.time_micros(time(10, 0))
    assert encoders.zoned_time(ten, 19_800) == "04:30:00Z"
    half = encoders.time_micros(time(10, 0, 0, 500000))
    assert encoders.zoned_time(half, 19_800) == "04:30:00.5Z"
    assert encoders.zoned_time(encoders.time_micros(time(1, 0)), 7_200) == "23:00:00Z"


def test_durations() -> None:
    # MicroDuration: a year is 365.25 days, a month 365.25/12 days.
    assert encoders.micro_duration(DurationFields(1, 0, 0, 0, 0, 0.0)) == 31_557_600_000_000
    assert encoders.micro_duration(DurationFields(0, 1, 0, 0, 0, 0.0)) == 2_629_800_000_000
    assert encoders.micro_duration(DurationFields(0, 0, 1, 1, 1, 1.5)) == 90_061_500_000
    # interval.handling.mode=string, Debezium's documented example.
    fields = DurationFields(1, 2, 3, 4, 5, 6.78)
    assert encoders.interval_string(fields) == "P1Y2M3DT4H5M6.78S"


# --------------------------------------------------------------------------------------------
# Bits, binary data and geometry
# --------------------------------------------------------------------------------------------


def test_bits_are_little_endian_bytes() -> None:
    # Bit 1 and bit 8 set (0x0102): byte 0 holds bits 0-7, byte 1 bits 8-15.
    assert encoders.bits(0x0102) == base64.b64encode(b"\x02\x01").decode()
    assert encoders.bit_string("0000000100000010") == encoders.bits(0x0102)
    assert encoders.bit_string("") == encoders.bits(0) == ""


@pytest.mark.parametrize(
    ("mode", "schema_type", "expected"),
    [
        ("bytes", "bytes", "+/8="),
        ("base64", "string", "+/8="),
        ("base64-url-safe", "string", "-_8="),  # RFC 4648 section 5, padding kept
        ("hex", "string", "fbff"),
    ],
)
def test_binary_handling_modes(
    mode: encoders.BinaryHandlingMode, schema_type: str, expected: str
) -> None:
    assert encoders.binary_encoder(mode)(b"\xfb\xff") == expected
    assert encoders.binary_schema_type(mode) == schema_type


def _point_wkb(x: float, y: float) -> bytes:
    """OGC WKB: byte order 1 (little-endian), geometry type 1 (Point), then x and y."""
    return struct.pack("<BIdd", 1, 1, x, y)


def test_geometry_and_geography_carry_the_wkb_and_the_srid() -> None:
    wkb = _point_wkb(1.0, 2.0)
    assert encoders.geometry(wkb, 4326) == {
        "wkb": "AQEAAAAAAAAAAADwPwAAAAAAAABA",
        "srid": 4326,
        "extensions": None,
    }
    assert encoders.geography(wkb, 4326) == {"wkb": "AQEAAAAAAAAAAADwPwAAAAAAAABA", "srid": 4326}
    assert encoders.point(1.0, 2.0) == {
        "x": 1.0,
        "y": 2.0,
        "wkb": base64.b64encode(wkb).decode(),
        "srid": None,
    }


# --------------------------------------------------------------------------------------------
# Schema builders and neutrality
# --------------------------------------------------------------------------------------------


def test_schemas_are_in_json_converter_key_order() -> None:
    decimal = encoders.decimal_schema(str, 2, precision=10).schema(False)
    assert decimal == {
        "type": "bytes",
        "optional": False,
        "name": "org.apache.kafka.connect.data.Decimal",
        "version": 1,
        "parameters": {"scale": "2", "connect.decimal.precision": "10"},
    }
    assert list(decimal) == ["type", "optional", "name", "version", "parameters"]
    assert encoders.connect_field("scale", "int32", False) == {
        "type": "int32",
        "optional": False,
        "field": "scale",
    }
    date_schema = encoders.named_schema("int32", "io.debezium.time.Date", str).schema(True)
    assert date_schema == {
        "type": "int32",
        "optional": True,
        "name": "io.debezium.time.Date",
        "version": 1,
    }
    variable = encoders.variable_scale_decimal_schema(str).schema(True)
    assert [field["field"] for field in variable["fields"]] == ["scale", "value"]
    assert encoders.geometry_schema(str).schema(False)["optional"] is True  # always optional


def test_encoders_import_nothing_outside_the_stdlib_and_cdcflow() -> None:
    code = (
        "import sys; before = set(sys.modules); import cdcflow.capture.encoders; "
        "print('\\n'.join(sorted(set(sys.modules) - before)))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    ).stdout.split()
    # a compiled build loads mypyc's shared runtime (``<digest>__mypyc``) too
    roots = {name.split(".")[0] for name in loaded if not name.endswith("__mypyc")}
    assert roots - set(sys.stdlib_module_names) - {"cdcflow"} == set()
    assert not [name for name in loaded if name.startswith("cdcflow.capture.connectors")]
