"""Streamed in-progress transactions (pgoutput protocol 2) on disk until their commit: played
back as the server would send them unstreamed, aborted work left out, nothing kept after."""

from __future__ import annotations

import os
import struct
import time
from pathlib import Path

import pytest

from cdcflow.capture.connectors.postgres import pgoutput
from cdcflow.capture.connectors.postgres.pgoutput import ProtocolError, XLogData
from cdcflow.capture.connectors.postgres.spool import TransactionSpool


def _frame(lsn: int, payload: bytes) -> XLogData:
    return XLogData(lsn, lsn + 100, 0, payload)


def _insert(xid: int, value: str) -> bytes:
    """A streamed insert into relation 16384: 'I', the (sub)transaction's xid, the tuple."""
    text = value.encode()
    row = b"N" + struct.pack(">h", 1) + b"t" + struct.pack(">i", len(text)) + text
    return b"I" + struct.pack(">I", xid) + struct.pack(">I", 16384) + row


def _start(xid: int, first: bool) -> bytes:
    return b"S" + struct.pack(">IB", xid, int(first))


def _commit(xid: int, commit_lsn: int, end_lsn: int) -> bytes:
    return b"c" + struct.pack(">IBqqq", xid, 0, commit_lsn, end_lsn, 777)


def _abort(xid: int, subxid: int) -> bytes:
    return b"A" + struct.pack(">II", xid, subxid)


def _play(spool: TransactionSpool, frames: list[XLogData]) -> list[tuple[int, object]]:
    return [
        (replayed.data_start, pgoutput.decode_message(replayed.payload))
        for frame in frames
        for replayed in spool.feed(frame)
    ]


def test_a_streamed_transaction_is_played_back_at_its_commit_as_an_unstreamed_one(
    tmp_path: Path,
) -> None:
    spool = TransactionSpool(tmp_path)
    played = _play(
        spool,
        [
            _frame(10, _start(500, True)),
            _frame(11, _insert(500, "first")),
            _frame(12, _insert(501, "in a savepoint rolled back")),
            _frame(13, b"E"),
            _frame(20, _start(500, False)),
            _frame(21, _insert(500, "second")),
            _frame(22, b"E"),
            _frame(23, _abort(500, 501)),
            _frame(30, _commit(500, 40, 48)),
        ],
    )
    begin, first, second, commit = (message for _, message in played)
    assert [lsn for lsn, _ in played] == [10, 11, 21, 40]
    assert isinstance(begin, pgoutput.Begin)
    assert (begin.xid, begin.final_lsn, begin.commit_time_us) == (500, 40, 777)
    assert isinstance(first, pgoutput.Insert) and first.new == ("first",)
    assert isinstance(second, pgoutput.Insert) and second.new == ("second",)
    assert isinstance(commit, pgoutput.Commit)
    assert (commit.commit_lsn, commit.end_lsn) == (40, 48)
    assert spool.transactions == 0 and not list(tmp_path.rglob("*.spool"))


def test_an_aborted_streamed_transaction_leaves_nothing_and_others_go_on(tmp_path: Path) -> None:
    spool = TransactionSpool(tmp_path)
    played = _play(
        spool,
        [
            _frame(10, _start(600, True)),
            _frame(11, _insert(600, "never committed")),
            _frame(12, b"E"),
            _frame(13, _start(601, True)),
            _frame(14, _insert(601, "kept")),
            _frame(15, b"E"),
            _frame(16, _abort(600, 600)),
            _frame(17, _commit(601, 18, 19)),
        ],
    )
    assert [type(m).__name__ for _, m in played] == ["Begin", "Insert", "Commit"]
    assert played[1][1].new == ("kept",)  # type: ignore[attr-defined]
    spool.close()
    assert not list(tmp_path.rglob("*")), "closing removes the spool's folder"


def test_streaming_messages_out_of_their_frame_are_protocol_errors(tmp_path: Path) -> None:
    spool = TransactionSpool(tmp_path)
    with pytest.raises(ProtocolError, match="never streamed"):
        list(spool.feed(_frame(1, _commit(700, 2, 3))))
    with pytest.raises(ProtocolError, match="outside a stream block"):
        list(spool.feed(_frame(1, _insert(700, "x"))))


def test_a_spool_left_by_a_killed_run_is_removed_and_a_live_one_kept(tmp_path: Path) -> None:
    live = TransactionSpool(tmp_path)
    abandoned = tmp_path / "4242-killed"
    abandoned.mkdir()
    (abandoned / "600.spool").write_bytes(b"half a transaction")
    (abandoned / "lock").touch()
    an_hour_ago = time.time() - 3600
    os.utime(abandoned, (an_hour_ago, an_hour_ago))

    being_made = tmp_path / "4243-being-made"  # no lock yet, but young: another capture's
    being_made.mkdir()

    other = TransactionSpool(tmp_path)

    assert not abandoned.exists(), "nobody held its lock"
    assert len(list(tmp_path.iterdir())) == 3, "the live spools and the young folder stay"
    live.close()
    other.close()
    assert list(tmp_path.iterdir()) == [being_made]
