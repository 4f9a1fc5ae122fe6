"""A real MariaDB's values convert to Debezium's JSON values, alike from the binlog and a snapshot.

One table holds every type the MySQL connector maps, with rows of edge values (NULLs, zero dates,
negative and long TIMEs, extreme integers, fractional seconds, multibyte and latin1 text, padded
BINARY, BIT(1) and BIT(12), ENUM/SET, JSON, geometry). The rows are read twice, as the
connector reads them: from the binlog through python-mysql-replication and from a ``SELECT``
through PyMySQL with the snapshot conversions (in a +05:30 session, so TIMESTAMP text is not
UTC). Each value converts through the column built from a hand-written structure; the two reads
must agree, and equal the values worked out here from Debezium's rules.
"""

from __future__ import annotations

import base64
import struct
from collections.abc import Iterator
from typing import Any
from unittest import mock

import pymysql
import pytest
from pymysqlreplication import BinLogStreamReader, binlogstream
from pymysqlreplication.constants import NONE_SOURCE
from pymysqlreplication.row_event import WriteRowsEvent

from cdcflow.capture.connectors.mysql import types
from cdcflow.capture.spi import ColumnStructure, TableId, TableStructure
from tests.services.mariadb import MariaDbServer

TABLE = "mysql_type_values"
BINLOG_READER_SERVER_ID = 4717  # outside the connector's default range (5400-6400)
SESSION_ZONE = "+05:30"

# java.sql.Types codes, as Debezium's MySQL DDL parser assigns them.
BIT, TINYINT, BIGINT, BINARY, VARBINARY, CHAR = -7, -6, -5, -2, -3, 1
DECIMAL, INTEGER, SMALLINT, FLOAT, DOUBLE, VARCHAR, BOOLEAN = 3, 4, 5, 6, 8, 12, 16
DATE, TIME, TIMESTAMP, OTHER, BLOB, TIMESTAMP_TZ = 91, 92, 93, 1111, 2004, 2014


def _column(
    position: int,
    name: str,
    jdbc: int,
    type_name: str,
    *,
    length: int | None = None,
    scale: int | None = None,
    optional: bool = True,
    charset: str | None = None,
    members: tuple[str, ...] | None = None,
    default: str | None = None,
) -> ColumnStructure:
    return ColumnStructure(
        name=name,
        jdbc_type=jdbc,
        type_name=type_name,
        position=position,
        optional=optional,
        length=length,
        scale=scale,
        charset_name=charset,
        enum_values=members,
        default_value_expression=default,
    )


#: (SQL definition, (name, JDBC type, type name), other structure fields) per column.
_SPECS: list[tuple[str, tuple[str, int, str], dict[str, Any]]] = [
    ("id INT NOT NULL PRIMARY KEY", ("id", INTEGER, "INT"), {"optional": False}),
    ("ti TINYINT", ("ti", TINYINT, "TINYINT"), {}),
    ("tiu TINYINT UNSIGNED", ("tiu", TINYINT, "TINYINT UNSIGNED"), {}),
    ("si SMALLINT", ("si", SMALLINT, "SMALLINT"), {}),
    ("siu SMALLINT UNSIGNED", ("siu", SMALLINT, "SMALLINT UNSIGNED"), {}),
    ("mi MEDIUMINT", ("mi", INTEGER, "MEDIUMINT"), {}),
    ("miu MEDIUMINT UNSIGNED", ("miu", INTEGER, "MEDIUMINT UNSIGNED"), {}),
    ("i INT", ("i", INTEGER, "INT"), {}),
    ("iu INT UNSIGNED", ("iu", INTEGER, "INT UNSIGNED"), {}),
    ("bi BIGINT", ("bi", BIGINT, "BIGINT"), {}),
    ("biu BIGINT UNSIGNED", ("biu", BIGINT, "BIGINT UNSIGNED"), {}),
    ("bo BOOLEAN", ("bo", BOOLEAN, "BOOLEAN"), {}),
    ("de DECIMAL(10,2)", ("de", DECIMAL, "DECIMAL"), {"length": 10, "scale": 2}),
    ("fl FLOAT", ("fl", FLOAT, "FLOAT"), {}),
    ("fl2 FLOAT(7,3)", ("fl2", FLOAT, "FLOAT"), {"length": 7, "scale": 3}),
    ("db DOUBLE", ("db", DOUBLE, "DOUBLE"), {}),
    ("b1 BIT(1)", ("b1", BIT, "BIT"), {"length": 1}),
    ("b12 BIT(12)", ("b12", BIT, "BIT"), {"length": 12}),
    ("c CHAR(5) CHARACTER SET utf8mb4", ("c", CHAR, "CHAR"), {"length": 5, "charset": "utf8mb4"}),
    (
        "vc VARCHAR(20) CHARACTER SET utf8mb4",
        ("vc", VARCHAR, "VARCHAR"),
        {"length": 20, "charset": "utf8mb4"},
    ),
    ("tx TEXT CHARACTER SET utf8mb4", ("tx", VARCHAR, "TEXT"), {"charset": "utf8mb4"}),
    (
        "l1 VARCHAR(10) CHARACTER SET latin1",
        ("l1", VARCHAR, "VARCHAR"),
        {"length": 10, "charset": "latin1"},
    ),
    ("bn BINARY(4)", ("bn", BINARY, "BINARY"), {"length": 4}),
    ("vb VARBINARY(8)", ("vb", VARBINARY, "VARBINARY"), {"length": 8}),
    ("bl BLOB", ("bl", BLOB, "BLOB"), {}),
    ("d DATE", ("d", DATE, "DATE"), {}),
    ("dnn DATE NOT NULL", ("dnn", DATE, "DATE"), {"optional": False}),
    ("t TIME(6)", ("t", TIME, "TIME"), {"length": 6}),
    ("t0 TIME", ("t0", TIME, "TIME"), {}),
    ("dt DATETIME", ("dt", TIMESTAMP, "DATETIME"), {}),
    ("dt3 DATETIME(3)", ("dt3", TIMESTAMP, "DATETIME"), {"length": 3}),
    ("dt6 DATETIME(6)", ("dt6", TIMESTAMP, "DATETIME"), {"length": 6}),
    ("dtnn DATETIME NOT NULL", ("dtnn", TIMESTAMP, "DATETIME"), {"optional": False}),
    ("ts TIMESTAMP(6) NULL", ("ts", TIMESTAMP_TZ, "TIMESTAMP"), {"length": 6}),
    (
        "tsnn TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP",
        ("tsnn", TIMESTAMP_TZ, "TIMESTAMP"),
        {"optional": False, "default": "1970-01-01 00:00:00"},
    ),
    ("y YEAR", ("y", INTEGER, "YEAR"), {}),
    (
        "e ENUM('small','medium','large')",
        ("e", CHAR, "ENUM"),
        {"members": ("small", "medium", "large")},
    ),
    ("s SET('a','b','c')", ("s", CHAR, "SET"), {"members": ("a", "b", "c")}),
    (
        "snn SET('x','y') NOT NULL",
        ("snn", CHAR, "SET"),
        {"optional": False, "members": ("x", "y")},
    ),
    ("j JSON", ("j", OTHER, "JSON"), {}),
    ("g GEOMETRY", ("g", OTHER, "GEOMETRY"), {}),
    ("p POINT", ("p", OTHER, "POINT"), {}),
    ("u UUID", ("u", OTHER, "UUID"), {}),
]
#: (SQL definition, structure as Debezium's parser records it) per column, in table order.
COLUMNS: list[tuple[str, ColumnStructure]] = [
    (sql, _column(position, *spec, **fields))
    for position, (sql, spec, fields) in enumerate(_SPECS, start=1)
]
NAMES = [structure.name for _, structure in COLUMNS]

#: The rows inserted, as SQL literals per column (in a UTC session with sql_mode '').
ROWS: list[dict[str, str]] = [
    {"id": "1", "dnn": "'0000-00-00'", "dtnn": "'0000-00-00 00:00:00'",
     "tsnn": "'0000-00-00 00:00:00'", "snn": "''"},
    {
        "id": "2", "ti": "-128", "tiu": "255", "si": "-32768", "siu": "65535",
        "mi": "-8388608", "miu": "16777215", "i": "-2147483648", "iu": "4294967295",
        "bi": "-9223372036854775808", "biu": "18446744073709551615", "bo": "TRUE",
        "de": "-12345678.90", "fl": "16777217", "fl2": "1.1", "db": "1.7976931348623157e308",
        "b1": "b'1'", "b12": "b'101000000001'", "c": "'ab'", "vc": "'héllo wörld'",
        "tx": "'ß😀中文'", "l1": "'é€'", "bn": "X'0102'", "vb": "X'00FF'", "bl": "X'DEADBEEF'",
        "d": "'2024-02-29'", "dnn": "'0018-04-01'", "t": "'-838:59:59.000000'",
        "t0": "'838:59:59'", "dt": "'2024-01-02 03:04:05'", "dt3": "'1969-12-31 23:59:59.999'",
        "dt6": "'9999-12-31 23:59:59.999999'", "dtnn": "'2000-01-01 00:00:00'",
        "ts": "'2038-01-19 03:14:07.999999'", "tsnn": "'1970-01-01 00:00:01'", "y": "2155",
        "e": "'medium'", "s": "'c,a'", "snn": "'y'", "j": """'{"k": [1, 2.50, null]}'""",
        "g": "ST_GeomFromText('LINESTRING(0 0,1 1)', 4326)",
        "p": "ST_GeomFromText('POINT(1.5 -2)')", "u": "'123e4567-e89b-12d3-a456-426614174000'",
    },
    {
        "id": "3", "ti": "127", "tiu": "0", "biu": "9223372036854775808", "bo": "FALSE",
        "de": "0.05", "fl": "0.1", "fl2": "-0.5", "db": "-0.1", "b1": "b'0'", "b12": "b'0'",
        "c": "''", "bn": "X''", "vb": "X''", "d": "'0000-00-00'", "dnn": "'1999-12-31'",
        "t": "'-00:00:00.000001'", "t0": "'-00:00:01'", "dt": "'0000-00-00 00:00:00'",
        "dt3": "'2024-00-10 00:00:00'", "dt6": "'1000-01-01 00:00:00.000001'",
        "dtnn": "'2024-05-00 00:00:00'", "ts": "'0000-00-00 00:00:00'",
        "tsnn": "'2024-06-01 12:00:00'", "y": "0", "e": "''", "s": "''", "snn": "'x,y'",
        "j": "'[]'", "p": "ST_GeomFromText('POINT(1 2)', 3857)",
    },
    {"id": "4", "dnn": "'0000-00-00'", "dtnn": "'0000-00-00 00:00:00'",
     "tsnn": "'0000-00-00 00:00:00'", "t": "'-12:34:56.5'", "t0": "'00:00:00'",
     "dt6": "'2024-02-29 23:59:59.5'", "ts": "'2024-01-01 00:00:00.000001'", "y": "1901",
     "s": "'a,b,c'", "snn": "'x'"},
]  # fmt: skip


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _days(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 by counting, independent of the code under test."""
    from datetime import date

    return (date(year, month, day) - date(1970, 1, 1)).days


def _micros(year: int, month: int, day: int, h: int, m: int, s: int, us: int = 0) -> int:
    return (_days(year, month, day) * 86_400 + (h * 60 + m) * 60 + s) * 1_000_000 + us


LINESTRING_WKB = struct.pack("<BII4d", 1, 2, 2, 0.0, 0.0, 1.0, 1.0)
POINT_WKB = struct.pack("<BIdd", 1, 1, 1.5, -2.0)
POINT_1_2_WKB = struct.pack("<BIdd", 1, 1, 1.0, 2.0)
ALL_NULL: dict[str, Any] = dict.fromkeys(NAMES)

#: Debezium's JSON values, worked out by hand from its converters (default modes).
EXPECTED: dict[int, dict[str, Any]] = {
    # Zero dates in NOT NULL columns: the default if any (CURRENT_TIMESTAMP's epoch), else
    # the epoch; the empty SET of a NOT NULL column is "".
    1: {**ALL_NULL, "id": 1, "dnn": 0, "dtnn": 0, "tsnn": "1970-01-01T00:00:00Z", "snn": ""},
    2: {
        "id": 2, "ti": -128, "tiu": 255, "si": -32768, "siu": 65535, "mi": -8388608,
        "miu": 16777215, "i": -2147483648, "iu": 4294967295, "bi": -9223372036854775808,
        # bigint.unsigned.handling.mode=long: Java's long, so 2^64 - 1 wraps to -1.
        "biu": -1, "bo": True,
        "de": _b64((-1234567890).to_bytes(4, "big", signed=True)),
        # FLOAT keeps 16777216 (float32); FLOAT(7,3) is a FLOAT64 of the float32 1.1.
        "fl": 16777216.0, "fl2": 1.100000023841858, "db": 1.7976931348623157e308,
        "b1": True, "b12": _b64(bytes([0x01, 0x0A])), "c": "ab", "vc": "héllo wörld",
        "tx": "ß😀中文", "l1": "é€", "bn": _b64(b"\x01\x02\x00\x00"), "vb": _b64(b"\x00\xff"),
        "bl": _b64(bytes.fromhex("deadbeef")), "d": _days(2024, 2, 29),
        # enable.time.adjuster: year 0018 is 2018.
        "dnn": _days(2018, 4, 1), "t": -(838 * 3600 + 59 * 60 + 59) * 1_000_000,
        "t0": (838 * 3600 + 59 * 60 + 59) * 1_000_000,
        "dt": _micros(2024, 1, 2, 3, 4, 5) // 1000, "dt3": -1,
        "dt6": _micros(9999, 12, 31, 23, 59, 59, 999_999), "dtnn": 946_684_800_000,
        "ts": "2038-01-19T03:14:07.999999Z", "tsnn": "1970-01-01T00:00:01Z", "y": 2155,
        "e": "medium", "s": "a,c", "snn": "y", "j": '{"k": [1, 2.50, null]}',
        "g": {"wkb": _b64(LINESTRING_WKB), "srid": 4326, "extensions": None},
        "p": {"x": 1.5, "y": -2.0, "wkb": _b64(POINT_WKB), "srid": None},
        "u": "123e4567-e89b-12d3-a456-426614174000",
    },
    3: {
        **ALL_NULL, "id": 3, "ti": 127, "tiu": 0, "biu": -9223372036854775808, "bo": False,
        "de": _b64(bytes([5])), "fl": 0.1, "fl2": -0.5, "db": -0.1, "b1": False,
        "b12": _b64(b"\x00\x00"), "c": "", "bn": _b64(b"\x00" * 4), "vb": "",
        "dnn": _days(1999, 12, 31), "t": -1, "t0": -1_000_000, "dtnn": 0,
        "dt6": _micros(1000, 1, 1, 0, 0, 0, 1), "tsnn": "2024-06-01T12:00:00Z",
        # YEAR 0000: the binlog reader's 1900.
        "y": 1900, "e": "", "s": "", "snn": "x,y", "j": "[]",
        "p": {"x": 1.0, "y": 2.0, "wkb": _b64(POINT_1_2_WKB), "srid": 3857},
    },
    4: {
        **ALL_NULL, "id": 4, "dnn": 0, "dtnn": 0, "tsnn": "1970-01-01T00:00:00Z", "snn": "x",
        "t": -45_296_500_000, "t0": 0, "dt6": _micros(2024, 2, 29, 23, 59, 59, 500_000),
        "ts": "2024-01-01T00:00:00.000001Z", "y": 1901, "s": "a,b,c",
    },
}  # fmt: skip


def _connect(server: MariaDbServer, **options: Any) -> pymysql.Connection[Any]:
    settings = server.connection_settings()
    return pymysql.connect(
        host=str(settings["host"]),
        port=int(settings["port"]),
        user=str(settings["user"]),
        password=str(settings["password"]),
        database=server.database,
        autocommit=True,
        charset="utf8mb4",
        **options,
    )


def _insert_rows(server: MariaDbServer) -> str:
    """Create the table and insert the rows; the server's GTID position before the inserts."""
    with _connect(server) as conn, conn.cursor() as cursor:
        cursor.execute("SET SESSION sql_mode = '', time_zone = '+00:00'")
        cursor.execute(f"DROP TABLE IF EXISTS {TABLE}")
        definitions = ", ".join(sql for sql, _ in COLUMNS)
        cursor.execute(f"CREATE TABLE {TABLE} ({definitions}) DEFAULT CHARSET=utf8mb4")
        cursor.execute("SELECT @@GLOBAL.gtid_binlog_pos")
        status = cursor.fetchone()
        assert status is not None, "the binlog is not enabled"
        for row in ROWS:
            values = ", ".join(row.get(name, "NULL") for name in NAMES)
            cursor.execute(f"INSERT INTO {TABLE} ({', '.join(NAMES)}) VALUES ({values})")
    return str(status[0])


def _binlog_values(row: dict[str, Any]) -> tuple[Any, ...]:
    """A row's values as the connector's binlog reader passes them on: python-mysql-replication
    reads an empty SET as None and says so only in ``none_sources``; the reader gives set()."""
    sources = row["none_sources"]
    return tuple(
        set() if sources.get(name) == NONE_SOURCE.EMPTY_SET else value
        for name, value in row["values"].items()
    )


def _binlog_events(server: MariaDbServer, after_gtid: str) -> list[dict[str, Any]]:
    """The rows the library reads after ``after_gtid``. From a GTID: for MariaDB the library
    ignores log_file/log_pos and dumps from the oldest binlog, which after the crash-safety
    tests' traffic the server cut off (a CI run hung 600 s in the library's reconnect loop)."""
    stream = BinLogStreamReader(
        connection_settings=server.connection_settings(cdc=True),
        server_id=BINLOG_READER_SERVER_ID,
        auto_position=after_gtid,
        blocking=False,
        is_mariadb=True,
        only_events=[WriteRowsEvent],
        only_schemas=[server.database],
        only_tables=[TABLE],
    )
    # a non-blocking read of a finished range needs no reconnect: a lost connection raises
    with mock.patch.object(binlogstream, "MYSQL_EXPECTED_ERROR_CODES", []):
        try:
            return [
                row for event in stream if isinstance(event, WriteRowsEvent) for row in event.rows
            ]
        finally:
            stream.close()


def _snapshot_rows(server: MariaDbServer) -> list[tuple[Any, ...]]:
    """The rows as the snapshot reads them, in a session whose zone is not UTC."""
    select = ", ".join(types.snapshot_expression(structure) for _, structure in COLUMNS)
    with (
        _connect(server, conv=types.SNAPSHOT_CONVERSIONS) as conn,
        conn.cursor() as cursor,
    ):
        cursor.execute(f"SET SESSION time_zone = '{SESSION_ZONE}'")
        cursor.execute(f"SELECT {select} FROM {TABLE} ORDER BY id")
        return [tuple(row) for row in cursor.fetchall()]


@pytest.fixture(scope="module")
def raw_rows(mariadb_server: MariaDbServer) -> Iterator[dict[str, list[Any]]]:
    """The inserted rows as the binlog library (its row dicts), the connector's binlog reader
    and the snapshot read them."""
    before = _insert_rows(mariadb_server)
    events = _binlog_events(mariadb_server, before)
    yield {
        "events": events,
        "binlog": [_binlog_values(row) for row in events],
        "snapshot": _snapshot_rows(mariadb_server),
    }


def _table(options: types.TypeOptions) -> list[Any]:
    structure = TableStructure(TableId("inventory", TABLE), tuple(s for _, s in COLUMNS), ("id",))
    return list(types.table_schema(structure, options).columns)


def _converted(row: tuple[Any, ...], options: types.TypeOptions) -> dict[str, Any]:
    """Each value through its column; a value the mode cannot carry is the error's type."""
    out: dict[str, Any] = {}
    for column, value in zip(_table(options), row, strict=True):
        try:
            out[column.name] = column.convert(value)
        except ValueError as error:
            out[column.name] = type(error).__name__
    return out


#: Where the two reads differ, as in Debezium: the binlog holds a zero TIMESTAMP as epoch second
#: 0, which Debezium's binlog reader publishes as the epoch; a snapshot reads the zero date
#: (null in a nullable column).
BINLOG_ONLY: dict[int, dict[str, Any]] = {3: {"ts": "1970-01-01T00:00:00.000000Z"}}


def _from_binlog(converted: dict[str, Any], row_id: int) -> dict[str, Any]:
    """A row converted from the snapshot as the binlog's read of it converts."""
    return {**converted, **BINLOG_ONLY.get(row_id, {})}


def test_the_binlog_and_the_snapshot_read_every_row(raw_rows: dict[str, list[Any]]) -> None:
    assert len(raw_rows["binlog"]) == len(ROWS)
    assert len(raw_rows["snapshot"]) == len(ROWS)


def test_the_binlog_library_marks_an_empty_set_only_in_none_sources(
    raw_rows: dict[str, list[Any]],
) -> None:
    """Why the binlog reader must pass set() on: the value alone reads like a NULL."""
    empty_set, null = raw_rows["events"][2], raw_rows["events"][0]
    assert empty_set["values"]["s"] is None
    assert empty_set["none_sources"]["s"] == NONE_SOURCE.EMPTY_SET
    assert null["none_sources"]["s"] == NONE_SOURCE.NULL
    options = types.TypeOptions(connection_time_zone=SESSION_ZONE)
    assert _converted(raw_rows["binlog"][2], options)["s"] == ""


@pytest.mark.parametrize("row_id", sorted(EXPECTED))
def test_binlog_values_convert_to_debeziums_json_values(
    raw_rows: dict[str, list[Any]], row_id: int
) -> None:
    options = types.TypeOptions(connection_time_zone=SESSION_ZONE)
    assert _converted(raw_rows["binlog"][row_id - 1], options) == _from_binlog(
        EXPECTED[row_id], row_id
    )


@pytest.mark.parametrize("row_id", sorted(EXPECTED))
def test_snapshot_values_convert_to_debeziums_json_values(
    raw_rows: dict[str, list[Any]], row_id: int
) -> None:
    options = types.TypeOptions(connection_time_zone=SESSION_ZONE)
    assert _converted(raw_rows["snapshot"][row_id - 1], options) == EXPECTED[row_id]


@pytest.mark.parametrize(
    "options",
    [
        types.TypeOptions(
            decimal_handling_mode="string",
            bigint_unsigned_handling_mode="precise",
            binary_handling_mode="hex",
            time_precision_mode="connect",
            connection_time_zone=SESSION_ZONE,
        ),
        types.TypeOptions(
            decimal_handling_mode="double",
            binary_handling_mode="base64-url-safe",
            enable_time_adjuster=False,
            connection_time_zone=SESSION_ZONE,
        ),
    ],
    ids=["string-precise-hex-connect", "double-urlsafe-unadjusted"],
)
def test_both_reads_agree_in_every_mode(
    raw_rows: dict[str, list[Any]], options: types.TypeOptions
) -> None:
    binlog = [_converted(row, options) for row in raw_rows["binlog"]]
    snapshot = [_converted(row, options) for row in raw_rows["snapshot"]]
    assert binlog == [_from_binlog(row, n) for n, row in enumerate(snapshot, 1)]


def test_other_modes_give_debeziums_values(raw_rows: dict[str, list[Any]]) -> None:
    options = types.TypeOptions(
        decimal_handling_mode="string",
        bigint_unsigned_handling_mode="precise",
        binary_handling_mode="hex",
        time_precision_mode="connect",
        enable_time_adjuster=False,
        connection_time_zone=SESSION_ZONE,
    )
    row = _converted(raw_rows["snapshot"][1], options)
    assert row["de"] == "-12345678.90"
    assert row["biu"] == _b64((2**64 - 1).to_bytes(9, "big", signed=True))
    assert row["bn"] == "01020000"
    # connect mode: TIME beyond a day cannot be carried (Debezium's converter rejects it).
    assert row["t0"] == "ValueError"
    assert row["dt"] == _micros(2024, 1, 2, 3, 4, 5) // 1000
    # Without the adjuster, year 0018 stays 0018.
    assert row["dnn"] == _days(18, 4, 1)
    later = _converted(raw_rows["binlog"][2], options)
    assert later["biu"] == _b64((2**63).to_bytes(9, "big", signed=True))
    assert later["de"] == "0.05"
    assert later["t0"] == "ValueError"  # a negative TIME


def test_a_float_read_as_it_is_loses_digits_the_snapshot_expression_keeps(
    mariadb_server: MariaDbServer, raw_rows: dict[str, list[Any]]
) -> None:
    with _connect(mariadb_server) as conn, conn.cursor() as cursor:
        cursor.execute(f"SELECT fl FROM {TABLE} WHERE id = 2")
        plain = cursor.fetchone()
    assert plain == (16777200.0,)  # six significant digits: why the expression exists
    assert raw_rows["snapshot"][1][NAMES.index("fl")] == 16777216.0
