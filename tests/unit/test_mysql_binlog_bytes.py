"""MySQL 8 binlog events from hand-built bytes, through the library's parsers and our decoders.

No MySQL 8 server runs on the project's machines (the integration tests use MariaDB), so the
event forms only MySQL 8 writes are proven here with byte fixtures: a GTID_LOG_EVENT, a
TABLE_MAP with ``binlog_row_metadata`` MINIMAL and FULL optional metadata, and v2 WRITE,
UPDATE and DELETE rows events (the ones with the extra-data header). Each event is laid out
field by field as MySQL's binlog format documents it (``libbinlogevents`` / "Binary log
events" in the MySQL source documentation), framed as the server sends it to a replica: the
OK byte, the 19-byte common header, the body and the CRC32 checksum. The library's own
``BinLogPacketWrapper`` parses each one from a PyMySQL packet, exactly as
``BinLogStreamReader.fetchone`` does; the parsed event then goes through
:func:`binlog._item` (our compiled row decoder, or the library's for MySQL's binary JSON) and
:class:`BinlogStream` (the schema history's converters), and the values must equal what
Debezium's MySQL connector writes.
"""

from __future__ import annotations

import base64
import logging
import struct
import uuid
import zlib
from collections.abc import Iterator
from datetime import datetime
from decimal import Decimal
from itertools import islice
from typing import Any

import pymysql.protocol
import pytest
from pymysqlreplication.constants import BINLOG
from pymysqlreplication.event import GtidEvent, QueryEvent, XidEvent
from pymysqlreplication.packet import BinLogPacketWrapper
from pymysqlreplication.row_event import (
    DeleteRowsEvent,
    TableMapEvent,
    UpdateRowsEvent,
    WriteRowsEvent,
)

from cdcflow.capture.connectors.mysql import binlog, checks, rowimages, types
from cdcflow.capture.connectors.mysql.position import BinlogPosition, GtidSet
from cdcflow.capture.connectors.mysql.properties import parse_properties
from cdcflow.capture.connectors.mysql.source import BinlogStream, SourceBlock
from cdcflow.capture.connectors.mysql.tables import Structures
from cdcflow.capture.filters import Filters
from cdcflow.capture.spi import Event, Op, RowChange, SchemaChange, TableId, TxBegin, TxCommit

FILE = "binlog.000007"
SERVER_UUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
SERVER_ID = 1
MYSQL_VERSION = (8, 0, 36)
TABLE_ID = 0x5A  # the server's in-memory table number, 6 bytes in TABLE_MAP and rows events
TS = 1_709_251_200

DDL = (
    "CREATE TABLE items (id INT NOT NULL PRIMARY KEY, qty INT UNSIGNED, "
    "name VARCHAR(100) CHARACTER SET utf8mb4, at DATETIME(6), doc JSON, price DECIMAL(10,2))"
)
NAMES = ("id", "qty", "name", "at", "doc", "price")
WITHOUT_JSON_DDL = DDL.replace(" doc JSON,", "")

# MySQL field types (include/field_types.h, enum_field_types).
MYSQL_TYPE_LONG = 3
MYSQL_TYPE_VARCHAR = 15
MYSQL_TYPE_DATETIME2 = 18
MYSQL_TYPE_JSON = 245
MYSQL_TYPE_NEWDECIMAL = 246
# Table_map_log_event optional metadata field types (Table_map_event::Optional_metadata_field_type).
SIGNEDNESS, DEFAULT_CHARSET, COLUMN_NAME, SIMPLE_PRIMARY_KEY, VISIBILITY = 1, 2, 4, 8, 12
UTF8MB4_0900_AI_CI = 255
STMT_END_F = 0x0001  # rows event flag: the last rows event of the statement


# -- framing ---------------------------------------------------------------------------------


class _ControlConnection:
    """The library's control connection, as far as parsing an event touches it."""

    charset = "utf8mb4"

    def _get_dbms(self) -> str:
        return "mysql"


def _packed_int(value: int) -> bytes:
    """A length-encoded integer: below 251 one byte, else 0xFC + 2, 0xFD + 3, 0xFE + 8."""
    if value < 251:
        return bytes([value])
    if value < 1 << 16:
        return b"\xfc" + struct.pack("<H", value)
    if value < 1 << 24:
        return b"\xfd" + value.to_bytes(3, "little")
    return b"\xfe" + struct.pack("<Q", value)


class _Binlog:
    """Frames event bodies as consecutive events of one binlog file and parses them."""

    def __init__(self, *, full_metadata: bool, start: int = 1000) -> None:
        self.full_metadata = full_metadata
        self.next_pos = start
        self.table_map: dict[int, Any] = {}

    def frame(self, event_type: int, body: bytes) -> bytes:
        """The event as the server sends it on the replication connection."""
        size = 19 + len(body) + 4
        self.next_pos += size
        header = struct.pack(
            "<IBIIIH",
            TS,  # timestamp: seconds since the epoch
            event_type,  # type code (Log_event_type)
            SERVER_ID,  # server_id of the server that wrote the event
            size,  # event_size: header, body and checksum
            self.next_pos,  # log_pos: where the next event starts
            0,  # flags
        )
        event = header + body
        return b"\x00" + event + struct.pack("<I", zlib.crc32(event))  # OK byte ... CRC32

    def parse(self, event_type: int, body: bytes) -> Any:
        """The library's event for these bytes, parsed as ``BinLogStreamReader`` parses it
        (checksums on and verified, optional metadata as the server's binlog_row_metadata)."""
        packet = pymysql.protocol.MysqlPacket(self.frame(event_type, body), "utf8mb4")
        wrapper = BinLogPacketWrapper(
            packet,
            self.table_map,
            _ControlConnection(),
            MYSQL_VERSION,
            True,  # use_checksum
            frozenset(
                {
                    GtidEvent,
                    QueryEvent,
                    XidEvent,
                    TableMapEvent,
                    WriteRowsEvent,
                    UpdateRowsEvent,
                    DeleteRowsEvent,
                }
            ),
            None,
            None,
            None,
            None,
            False,  # freeze_schema
            False,  # ignore_decode_errors
            True,  # verify_checksum
            self.full_metadata,  # what the library sets from SHOW VARIABLES binlog_row_metadata
            False,  # enable_logging
        )
        event = wrapper.event
        assert event is not None
        assert event._is_event_valid, "the fixture's CRC32 must match its bytes"
        if isinstance(event, TableMapEvent):  # as BinLogStreamReader.fetchone keeps it
            self.table_map[event.table_id] = event.get_table()
        return event


# -- event bodies ----------------------------------------------------------------------------


def _gtid_body(sid: str, gno: int) -> bytes:
    """Gtid_log_event (type 33) as MySQL 8.0 writes it."""
    return b"".join(
        [
            b"\x00",  # gtid_flags: 0 = the transaction has row events only (5.7.19+, 8.0.2+)
            uuid.UUID(sid).bytes,  # SID: the source server's server_uuid, 16 bytes
            struct.pack("<q", gno),  # GNO: the transaction number
            b"\x02",  # lt_type: LOGICAL_TIMESTAMP_TYPECODE
            struct.pack("<q", 41),  # last_committed
            struct.pack("<q", 42),  # sequence_number
            # immediate_commit_timestamp: 7 bytes of microseconds, the top bit clear (so no
            # original_commit_timestamp follows: this server committed it).
            (TS * 1_000_000).to_bytes(7, "little"),
            _packed_int(300),  # transaction_length (8.0.2+)
            struct.pack("<I", 80036),  # immediate_server_version, top bit clear (8.0.14+)
        ]
    )


def _query_body(query: str, *, schema: str = "shop", thread: int = 77) -> bytes:
    """Query_log_event (type 2): BEGIN of a transaction, or DDL."""
    return b"".join(
        [
            struct.pack("<I", thread),  # thread_id: the session that ran it
            struct.pack("<I", 0),  # query_exec_time
            bytes([len(schema)]),  # db_len
            struct.pack("<H", 0),  # error_code
            struct.pack("<H", 0),  # status_vars_len: no status variables here
            schema.encode(),  # db, NUL-terminated
            b"\x00",
            query.encode(),  # the statement, up to the event's end
        ]
    )


def _xid_body(xid: int) -> bytes:
    """Xid_log_event (type 16): the transaction committed."""
    return struct.pack("<Q", xid)


def _bits_msb_first(flags: list[bool]) -> bytes:
    """An optional-metadata bitmap: one bit per column, the first column in the top bit."""
    data = bytearray((len(flags) + 7) // 8)
    for index, flag in enumerate(flags):
        if flag:
            data[index // 8] |= 0x80 >> (index % 8)
    return bytes(data)


def _tlv(field: int, value: bytes) -> bytes:
    """One optional-metadata field: type byte, packed length, value."""
    return bytes([field]) + _packed_int(len(value)) + value


def _table_map_body(*, with_json: bool, full: bool) -> bytes:
    """Table_map_log_event (type 19) for ``shop.items`` (:data:`DDL`).

    MINIMAL metadata carries signedness and charsets only; FULL adds column names, the
    primary key and (8.0.23+) column visibility."""
    # (type, per-column metadata, numeric, unsigned, character) in column order
    columns = [
        (MYSQL_TYPE_LONG, b"", True, False, False),  # id INT
        (MYSQL_TYPE_LONG, b"", True, True, False),  # qty INT UNSIGNED
        (MYSQL_TYPE_VARCHAR, struct.pack("<H", 400), False, False, True),  # 100 x 4 bytes
        (MYSQL_TYPE_DATETIME2, b"\x06", False, False, False),  # fractional digits
        (MYSQL_TYPE_JSON, b"\x04", False, False, False),  # bytes of the length prefix
        (MYSQL_TYPE_NEWDECIMAL, b"\x0a\x02", True, False, False),  # precision, scale
    ]
    names = list(NAMES)
    if not with_json:
        del columns[4], names[4]
    count = len(columns)
    metadata = b"".join(column[1] for column in columns)
    nullable = [index != 0 for index in range(count)]  # id is NOT NULL
    optional = _tlv(SIGNEDNESS, _bits_msb_first([c[3] for c in columns if c[2]]))
    # DEFAULT_CHARSET: the default collation, then (character column index, collation)
    # pairs for the columns that differ (none here).
    optional += _tlv(DEFAULT_CHARSET, _packed_int(UTF8MB4_0900_AI_CI))
    if full:
        optional += _tlv(
            COLUMN_NAME, b"".join(bytes([len(n)]) + n.encode() for n in names)
        )  # each name: length byte, bytes
        optional += _tlv(SIMPLE_PRIMARY_KEY, _packed_int(0))  # column indexes of the key
        optional += _tlv(VISIBILITY, _bits_msb_first([True] * count))
    return b"".join(
        [
            TABLE_ID.to_bytes(6, "little"),  # table_id
            struct.pack("<H", 1),  # flags: TM_BIT_LEN_EXACT_F
            bytes([4]) + b"shop\x00",  # schema name: length, bytes, NUL
            bytes([5]) + b"items\x00",  # table name: length, bytes, NUL
            _packed_int(count),  # column count
            bytes(c[0] for c in columns),  # column types
            _packed_int(len(metadata)),  # metadata block length
            metadata,
            sum(1 << i for i, flag in enumerate(nullable) if flag).to_bytes(
                (count + 7) // 8, "little"
            ),  # null bitmap: bit set = nullable
            optional,
        ]
    )


def _rows_body(rows: list[bytes], *, count: int, update: bool = False) -> bytes:
    """Rows_log_event v2 (types 30-32): table id, flags, the extra-data header (its length
    counts itself: 2 = no extra data), the column count and the columns-present bitmap(s),
    then each row image."""
    present = ((1 << count) - 1).to_bytes((count + 7) // 8, "little")
    return b"".join(
        [
            TABLE_ID.to_bytes(6, "little"),
            struct.pack("<H", STMT_END_F),
            struct.pack("<H", 2),  # var_header_len: the extra row info, none
            _packed_int(count),
            present,
            present if update else b"",  # UPDATE: the after image's columns
            *rows,
        ]
    )


# -- row values (sql/field.cc, the binary forms of each type) --------------------------------


def _datetime2(year: int, month: int, day: int, h: int, m: int, s: int, micros: int) -> bytes:
    """DATETIME(6): 40 bits big-endian (sign bit set for non-negative, 17 bits year*13+month,
    5 day, 5 hour, 6 minute, 6 second), then the fraction in 3 bytes big-endian."""
    year_month = year * 13 + month
    packed = (year_month << 22 | day << 17 | h << 12 | m << 6 | s) + 0x80_0000_0000
    return packed.to_bytes(5, "big") + micros.to_bytes(3, "big", signed=True)


def _decimal_10_2(value: Decimal) -> bytes:
    """DECIMAL(10,2) in MySQL's packed form (decimal2bin): 8 integer digits in 4 bytes,
    2 fraction digits in 1, big-endian; the top bit flipped, a negative number's every bit
    inverted."""
    whole, fraction = divmod(abs(value) * 100, 100)
    data = bytearray(int(whole).to_bytes(4, "big") + int(fraction).to_bytes(1, "big"))
    if value < 0:
        data = bytearray(b ^ 0xFF for b in data)
    data[0] ^= 0x80
    return bytes(data)


def _varchar(text: str) -> bytes:
    """VARCHAR whose maximum exceeds 255 bytes: a 2-byte length, the utf8mb4 bytes."""
    data = text.encode("utf-8")
    return struct.pack("<H", len(data)) + data


# MySQL's binary JSON (sql-common/json_binary.cc) for {"k": 1, "list": [true, null, "x"]}.
# Offsets count from the first byte after the value's type byte.
_JSON_ARRAY = b"".join(
    [
        struct.pack("<HH", 3, 15),  # small array: element count, size in bytes
        b"\x04" + struct.pack("<H", 1),  # literal true, inlined
        b"\x04" + struct.pack("<H", 0),  # literal null, inlined
        b"\x0c" + struct.pack("<H", 13),  # string, at offset 13
        b"\x01x",  # its length (variable-length integer) and its utf8mb4 bytes
    ]
)
_JSON_OBJECT = b"".join(
    [
        struct.pack("<HH", 2, 38),  # small object: member count, size in bytes
        struct.pack("<HH", 18, 1),  # key entry: offset, length ("k")
        struct.pack("<HH", 19, 4),  # key entry: offset, length ("list")
        b"\x05" + struct.pack("<h", 1),  # int16 1, inlined
        b"\x02" + struct.pack("<H", 23),  # small array, at offset 23
        b"klist",  # the keys, sorted by length then bytes as MySQL stores them
        _JSON_ARRAY,
    ]
)
JSON_DOC = b"\x00" + _JSON_OBJECT  # the value type byte: small object
JSON_TEXT = '{"k": 1, "list": [true, null, "x"]}'  # MySQL's text form, as Debezium writes it


def _row(values: list[bytes | None], *, with_json: bool = True) -> bytes:
    """A full row image: the null bitmap (bit set = NULL), then the non-NULL values."""
    if not with_json:
        values = values[:4] + values[5:]
    nulls = sum(1 << i for i, value in enumerate(values) if value is None)
    return nulls.to_bytes((len(values) + 7) // 8, "little") + b"".join(
        value for value in values if value is not None
    )


FIRST: list[bytes | None] = [
    struct.pack("<i", -2147483648),  # id INT: its minimum
    struct.pack("<I", 4294967295),  # qty INT UNSIGNED: its maximum (a signed read is -1)
    _varchar("héllo wörld"),
    _datetime2(2024, 2, 29, 23, 59, 59, 123456),
    struct.pack("<I", len(JSON_DOC)) + JSON_DOC,  # JSON: 4-byte length, binary JSON
    _decimal_10_2(Decimal("-12345.67")),
]
SECOND: list[bytes | None] = [
    struct.pack("<i", 7),
    struct.pack("<I", 3000000000),
    _varchar(""),
    _datetime2(1969, 12, 31, 23, 59, 59, 999999),
    None,  # JSON NULL
    _decimal_10_2(Decimal("99999999.99")),
]
# What Debezium's MySqlConnector writes for these rows (default converters: INT UNSIGNED as
# int64, DATETIME(6) as io.debezium.time.MicroTimestamp, JSON as io.debezium.data.Json text,
# DECIMAL as Kafka Connect Decimal: base64 of the unscaled two's-complement bytes).
FIRST_VALUES = (
    -2147483648,
    4294967295,
    "héllo wörld",
    1_709_251_199_123_456,  # 2024-02-29T23:59:59.123456 as UTC microseconds
    JSON_TEXT,
    base64.b64encode(bytes.fromhex("ed2979")).decode(),  # -1234567, scale 2
)
SECOND_VALUES = (
    7,
    3000000000,
    "",
    -1,  # 1969-12-31T23:59:59.999999: one microsecond before the epoch
    None,
    base64.b64encode(bytes.fromhex("02540be3ff")).decode(),  # 9999999999, scale 2
)


def _without_json(values: tuple[Any, ...]) -> tuple[Any, ...]:
    return values[:4] + values[5:]


# -- the pipeline after the library ----------------------------------------------------------


class _ScriptedReader:
    def __init__(self, items: list[binlog.BinlogItem]) -> None:
        self.items = items

    def next(self, timeout_s: float) -> binlog.BinlogItem | None:
        return self.items.pop(0) if self.items else None

    def close(self) -> None:
        pass


def _filters() -> Filters:
    properties = parse_properties({"topic.prefix": "shop", "table.include.list": r"shop\.items"})
    return Filters.from_properties(properties)


def _stream(items: list[binlog.BinlogItem], start: GtidSet) -> BinlogStream:
    structures = Structures(filters=_filters(), options=types.TypeOptions(), skip_unparseable=False)
    return BinlogStream(
        _ScriptedReader(items),  # type: ignore[arg-type]
        structures=structures,
        filters=_filters(),
        source_block=SourceBlock(version="0.1.0", connector="mysql", server="shop"),
        start=BinlogPosition(FILE, 4, start),
        include_query=False,
        idle_s=0,
    )


def _items(log: _Binlog, bodies: list[tuple[int, bytes]]) -> list[binlog.BinlogItem]:
    """Each event parsed by the library, then turned into our items as the reader thread
    does (TABLE_MAP events only feed the library's table map)."""
    decoders = rowimages.RowDecoders()
    items = []
    for event_type, body in bodies:
        item = binlog._item(log.parse(event_type, body), FILE, decoders)
        if item is not None:
            items.append(item)
    return items


def _transaction(
    log: _Binlog, gno: int, *rows_events: tuple[int, bytes]
) -> list[tuple[int, bytes]]:
    return [
        (BINLOG.GTID_LOG_EVENT, _gtid_body(SERVER_UUID, gno)),
        (BINLOG.QUERY_EVENT, _query_body("BEGIN")),
        (BINLOG.TABLE_MAP_EVENT, _table_map_body(with_json=True, full=log.full_metadata)),
        *rows_events,
        (BINLOG.XID_EVENT, _xid_body(9001)),
    ]


def _events(stream: BinlogStream, count: int) -> list[Event]:
    events: Iterator[Event] = stream.events()
    return list(islice(events, count))


def _ddl_item() -> binlog.Statement:
    header = binlog.Header(file=FILE, pos=500, next_pos=900, ts_sec=TS, server_id=SERVER_ID)
    return binlog.Statement(header, DDL, "shop", 77)


# -- (1) GTID_LOG_EVENT ----------------------------------------------------------------------


def test_a_mysql_gtid_event_becomes_the_begin_of_its_uuid_colon_number_transaction() -> None:
    log = _Binlog(full_metadata=True)
    event = log.parse(BINLOG.GTID_LOG_EVENT, _gtid_body(SERVER_UUID, 23))
    item = binlog._item(event, FILE, rowimages.RowDecoders())

    size = 19 + 56 + 4  # header, body (1+16+8+1+8+8+7+3+4), checksum
    assert item == binlog.Begin(
        binlog.Header(file=FILE, pos=1000, next_pos=1000 + size, ts_sec=TS, server_id=1),
        f"{SERVER_UUID}:23",
    )


def test_the_gtid_travels_into_source_and_the_committed_offsets_gtid_set() -> None:
    log = _Binlog(full_metadata=True)
    insert = (BINLOG.WRITE_ROWS_EVENT_V2, _rows_body([_row(FIRST)], count=6))
    items = [_ddl_item(), *_items(log, _transaction(log, 23, insert))]
    stream = _stream(items, GtidSet.parse(f"{SERVER_UUID}:1-22"))

    _, begin, row, commit = _events(stream, 4)

    gtid = "3e11fa47-71ca-11e1-9e33-c80aa9429562:23"  # lowercase, as Debezium prints it
    assert isinstance(begin, TxBegin) and begin.tx_id == gtid
    assert isinstance(row, RowChange)
    assert (row.source["gtid"], row.source["server_id"], row.source["file"]) == (gtid, 1, FILE)
    assert row.source["thread"] == 77  # from the BEGIN query event
    assert isinstance(commit, TxCommit)
    offset = commit.offset.connector_values()
    assert offset["gtids"] == f"{SERVER_UUID}:1-23"
    assert (offset["file"], offset["pos"]) == (FILE, log.next_pos)


def test_a_resent_mysql_transaction_already_in_the_gtid_set_is_skipped() -> None:
    log = _Binlog(full_metadata=True)
    insert = (BINLOG.WRITE_ROWS_EVENT_V2, _rows_body([_row(FIRST)], count=6))
    items = [_ddl_item(), *_items(log, _transaction(log, 23, insert))]
    stream = _stream(items, GtidSet.parse(f"{SERVER_UUID}:1-23"))

    events = _events(stream, 3)

    assert not any(isinstance(e, RowChange | TxBegin) for e in events)


# -- (2) TABLE_MAP with MINIMAL and FULL metadata --------------------------------------------


def test_full_row_metadata_gives_the_library_names_signedness_charset_and_key() -> None:
    log = _Binlog(full_metadata=True)
    event = log.parse(BINLOG.TABLE_MAP_EVENT, _table_map_body(with_json=True, full=True))

    assert (event.schema, event.table, event.table_id) == ("shop", "items", TABLE_ID)
    columns = event.get_table().columns
    assert [c.name for c in columns] == list(NAMES)
    assert [c.unsigned for c in columns] == [False, True, False, False, False, False]
    assert columns[2].character_set_name == "utf8"  # utf8mb4_0900_ai_ci, Python's codec
    assert (columns[2].max_length, columns[3].fsp, columns[4].length_size) == (400, 6, 4)
    assert (columns[5].precision, columns[5].decimals) == (10, 2)
    assert event.get_table().primary_key == "id"


def test_minimal_row_metadata_leaves_the_library_without_names_or_signedness() -> None:
    """MySQL 8's default binlog_row_metadata: the library reads the TABLE_MAP but applies
    none of its optional metadata, so columns are known by position only."""
    log = _Binlog(full_metadata=False)
    event = log.parse(BINLOG.TABLE_MAP_EVENT, _table_map_body(with_json=True, full=False))

    columns = event.get_table().columns
    assert [c.name for c in columns] == [None] * 6
    assert [c.unsigned for c in columns] == [False] * 6
    assert [c.type for c in columns] == [3, 3, 15, 18, 245, 246]


@pytest.mark.parametrize("full", [True, False], ids=["full-metadata", "minimal-metadata"])
@pytest.mark.parametrize("with_json", [True, False], ids=["library-json", "compiled-decoder"])
def test_rows_decode_to_debeziums_values_with_either_row_metadata(
    full: bool, with_json: bool
) -> None:
    """Columns are matched by position with the schema history's structure, never by the
    binlog's names: MINIMAL decodes like FULL, an INT UNSIGNED beyond 2^31 included."""
    log = _Binlog(full_metadata=full)
    count = 6 if with_json else 5
    table_map = _table_map_body(with_json=with_json, full=full)
    rows = [_row(FIRST, with_json=with_json), _row(SECOND, with_json=with_json)]
    bodies = [
        (BINLOG.GTID_LOG_EVENT, _gtid_body(SERVER_UUID, 23)),
        (BINLOG.TABLE_MAP_EVENT, table_map),
        (BINLOG.WRITE_ROWS_EVENT_V2, _rows_body(rows, count=count)),
        (BINLOG.XID_EVENT, _xid_body(9001)),
    ]
    ddl = (
        _ddl_item()
        if with_json
        else binlog.Statement(_ddl_item().header, WITHOUT_JSON_DDL, "shop", 77)
    )
    stream = _stream([ddl, *_items(log, bodies)], GtidSet())

    _, _, first, second, _ = _events(stream, 5)

    expected = (FIRST_VALUES, SECOND_VALUES)
    if not with_json:
        expected = (_without_json(FIRST_VALUES), _without_json(SECOND_VALUES))
    assert isinstance(first, RowChange) and isinstance(second, RowChange)
    assert (first.op, first.before) == (Op.CREATE, None)
    assert (first.after, second.after) == expected
    assert [c.name for c in first.table.columns] == [n for n in NAMES if with_json or n != "doc"]
    assert first.table.key_columns == ("id",)


def test_the_compiled_decoder_reads_a_json_free_table_itself() -> None:
    """Without JSON every column has a compiled reader: the library never decodes the rows."""
    log = _Binlog(full_metadata=True)
    log.parse(BINLOG.TABLE_MAP_EVENT, _table_map_body(with_json=False, full=True))
    event = log.parse(
        BINLOG.WRITE_ROWS_EVENT_V2, _rows_body([_row(FIRST, with_json=False)], count=5)
    )

    images = rowimages.RowDecoders().images(event, per_row=1)

    assert images == [
        (
            -2147483648,
            4294967295,
            "héllo wörld",
            datetime(2024, 2, 29, 23, 59, 59, 123456),
            Decimal("-12345.67"),
        )
    ]


def test_minimal_row_metadata_is_accepted_at_startup_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    conn = _VariablesConnection(
        {
            "version": "8.0.36",
            "log_bin": "ON",
            "binlog_format": "ROW",
            "binlog_row_image": "FULL",
            "binlog_row_metadata": "MINIMAL",
            "server_id": "1",
            "gtid_mode": "ON",
        }
    )

    with caplog.at_level(logging.WARNING):
        info = checks.server_info(conn)  # type: ignore[arg-type]

    assert (info.mariadb, info.gtid_mode, info.row_metadata_full) == (False, True, False)
    assert "binlog_row_metadata is MINIMAL" in caplog.text


class _VariablesConnection:
    """Answers ``SHOW GLOBAL VARIABLES`` as a server would."""

    def __init__(self, variables: dict[str, str]) -> None:
        self.variables = variables

    def cursor(self) -> _VariablesCursor:
        return _VariablesCursor(self.variables)


class _VariablesCursor:
    def __init__(self, variables: dict[str, str]) -> None:
        self.variables = variables

    def __enter__(self) -> _VariablesCursor:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def execute(self, statement: str, args: Any = None) -> int:
        return len(self.variables)

    def fetchall(self) -> list[tuple[str, str]]:
        return list(self.variables.items())


# -- (3) WRITE/UPDATE/DELETE_ROWS v2 ---------------------------------------------------------


def test_update_rows_v2_pairs_each_before_image_with_its_after_image() -> None:
    log = _Binlog(full_metadata=True)
    update = (
        BINLOG.UPDATE_ROWS_EVENT_V2,
        _rows_body([_row(FIRST) + _row(SECOND)], count=6, update=True),
    )
    items = [_ddl_item(), *_items(log, _transaction(log, 24, update))]

    _, _, row, _ = _events(_stream(items, GtidSet()), 4)

    assert isinstance(row, RowChange) and row.op is Op.UPDATE
    assert (row.before, row.after) == (FIRST_VALUES, SECOND_VALUES)
    assert row.source["gtid"] == f"{SERVER_UUID}:24"


def test_delete_rows_v2_carries_the_before_image() -> None:
    log = _Binlog(full_metadata=True)
    delete = (BINLOG.DELETE_ROWS_EVENT_V2, _rows_body([_row(SECOND)], count=6))
    items = [_ddl_item(), *_items(log, _transaction(log, 25, delete))]

    _, _, row, _ = _events(_stream(items, GtidSet()), 4)

    assert isinstance(row, RowChange) and row.op is Op.DELETE
    assert (row.before, row.after) == (SECOND_VALUES, None)


def test_rows_v2_with_extra_row_info_are_read_past_it() -> None:
    """MySQL 8 puts partition information in the extra-data header of a partitioned table's
    rows events (type 1: partition id, 2 bytes); the rows after it still decode."""
    log = _Binlog(full_metadata=True)
    plain = _rows_body([_row(FIRST, with_json=False)], count=5)
    extra = b"\x01" + struct.pack("<H", 3)  # ROWS_V_EXTRAINFO_TAG 1 = partition, id 3
    body = plain[:8] + struct.pack("<H", 2 + len(extra)) + extra + plain[10:]
    log.parse(BINLOG.TABLE_MAP_EVENT, _table_map_body(with_json=False, full=True))
    event = log.parse(BINLOG.WRITE_ROWS_EVENT_V2, body)

    item = binlog._item(event, FILE, rowimages.RowDecoders())

    assert isinstance(item, binlog.Rows) and item.kind == "c"
    assert item.rows[0][:3] == (-2147483648, 4294967295, "héllo wörld")
    assert event.partition_id == 3


def test_the_ddl_fixture_is_the_structure_the_history_holds() -> None:
    stream = _stream([_ddl_item()], GtidSet())
    (change,) = _events(stream, 1)

    assert isinstance(change, SchemaChange)
    table = change.changes[0].table
    assert table.id == TableId("shop", "items")
    assert [c.name for c in table.columns] == list(NAMES)
