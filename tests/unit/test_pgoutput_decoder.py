"""The pgoutput decoder turns the server's bytes into messages, including the awkward cases."""

from __future__ import annotations

import struct

import pytest

from cdcflow.capture.connectors.postgres import pgoutput


def _s(text: str) -> bytes:
    return text.encode() + b"\x00"


def _tuple(*values: str | bytes | None) -> bytes:
    out = struct.pack(">h", len(values))
    for value in values:
        if value is None:
            out += b"n"
        elif value == b"u":
            out += b"u"
        else:
            assert isinstance(value, str)
            data = value.encode()
            out += b"t" + struct.pack(">i", len(data)) + data
    return out


def test_xlogdata_frame_carries_positions_and_payload() -> None:
    frame = b"w" + struct.pack(">qqq", 100, 200, 300) + b"B..."
    decoded = pgoutput.decode_copy_data(frame)
    assert decoded == pgoutput.XLogData(100, 200, 300, b"B...")


def test_keepalive_frame_says_whether_a_reply_is_due() -> None:
    decoded = pgoutput.decode_copy_data(b"k" + struct.pack(">qqB", 77, 5, 1))
    assert decoded == pgoutput.Keepalive(77, 5, True)


def test_begin_and_commit_carry_lsns_time_and_xid() -> None:
    begin = pgoutput.decode_message(b"B" + struct.pack(">qqi", 0x16B3748, 12345, 571))
    commit = pgoutput.decode_message(b"C" + struct.pack(">bqqq", 0, 10, 20, 12345))
    assert begin == pgoutput.Begin(0x16B3748, 12345, 571)
    assert commit == pgoutput.Commit(0, 10, 20, 12345)


def test_relation_lists_columns_with_key_flags_types_and_identity() -> None:
    body = struct.pack(">i", 16384) + _s("public") + _s("customers") + b"d" + struct.pack(">h", 2)
    body += b"\x01" + _s("id") + struct.pack(">ii", 23, -1)
    body += b"\x00" + _s("name") + struct.pack(">ii", 1043, 259)
    relation = pgoutput.decode_message(b"R" + body)
    assert relation == pgoutput.Relation(
        16384,
        "public",
        "customers",
        "d",
        (
            pgoutput.RelationColumn(True, "id", 23, -1),
            pgoutput.RelationColumn(False, "name", 1043, 259),
        ),
    )


def test_insert_decodes_text_null_and_multibyte_values() -> None:
    message = b"I" + struct.pack(">i", 16384) + b"N" + _tuple("1", None, "żółw")
    assert pgoutput.decode_message(message) == pgoutput.Insert(16384, ("1", None, "żółw"))


def test_update_with_key_only_old_tuple_and_unchanged_toast() -> None:
    message = b"U" + struct.pack(">i", 7) + b"K" + _tuple("1", None) + b"N" + _tuple("2", b"u")
    update = pgoutput.decode_message(message)
    assert update == pgoutput.Update(7, "K", ("1", None), ("2", pgoutput.UNCHANGED_TOAST))


def test_update_without_old_tuple() -> None:
    update = pgoutput.decode_message(b"U" + struct.pack(">i", 7) + b"N" + _tuple("1", "x"))
    assert update == pgoutput.Update(7, None, None, ("1", "x"))


def test_delete_with_full_old_row() -> None:
    delete = pgoutput.decode_message(b"D" + struct.pack(">i", 7) + b"O" + _tuple("1", "x"))
    assert delete == pgoutput.Delete(7, "O", ("1", "x"))


def test_truncate_lists_relations_and_options() -> None:
    truncate = pgoutput.decode_message(b"T" + struct.pack(">ibII", 2, 3, 7, 8))
    assert truncate == pgoutput.Truncate(True, True, (7, 8))


def test_logical_decoding_message_keeps_prefix_and_raw_content() -> None:
    body = b"\x01" + struct.pack(">q", 99) + _s("audit") + struct.pack(">i", 3) + b"\x00\xffa"
    message = pgoutput.decode_message(b"M" + body)
    assert message == pgoutput.Message(True, 99, "audit", b"\x00\xffa")


def test_unknown_message_is_a_protocol_error() -> None:
    with pytest.raises(pgoutput.ProtocolError, match="unsupported pgoutput message"):
        pgoutput.decode_message(b"Z123")


def test_binary_tuple_values_are_rejected_with_a_clear_error() -> None:
    message = b"I" + struct.pack(">i", 1) + b"N" + struct.pack(">h", 1) + b"b" + b"\x00" * 4
    with pytest.raises(pgoutput.ProtocolError, match="binary"):
        pgoutput.decode_message(message)


def test_lsn_text_round_trip() -> None:
    assert pgoutput.format_lsn(0x16B3748) == "0/16B3748"
    assert pgoutput.parse_lsn("1/2A") == (1 << 32) | 0x2A


def test_standby_status_frame_layout() -> None:
    frame = pgoutput.standby_status(written=5, flushed=4, applied=3)
    tag, written, flushed, applied, _clock, reply = struct.unpack(">cqqqqB", frame)
    assert (tag, written, flushed, applied, reply) == (b"r", 5, 4, 3, 0)
