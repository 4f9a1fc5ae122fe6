"""Binlog offsets and GTID sets in both dialects, as Debezium stores and compares them."""

from __future__ import annotations

import pytest

from cdcflow.capture.connectors.mysql.position import BinlogPosition, GtidSet
from cdcflow.capture.spi import Offset

UUID_A = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
UUID_B = "5f1e9a3c-0000-11e1-9e33-c80aa9429562"


def test_a_mariadb_gtid_list_keeps_the_last_sequence_per_domain() -> None:
    gtids = GtidSet.parse("0-1-100,1-2-7").with_gtid("0-1-101").with_gtid("1-3-8")

    assert str(gtids) == "0-1-101,1-3-8"


def test_a_mysql_gtid_set_merges_adjacent_intervals_and_formats_like_mysql() -> None:
    gtids = GtidSet.parse(f"{UUID_A}:1-5:7,{UUID_B.upper()}:3").with_gtid(f"{UUID_A}:6")

    assert str(gtids) == f"{UUID_A}:1-7,{UUID_B}:3"


def test_a_completed_transaction_is_contained_and_a_later_one_is_not() -> None:
    mariadb = GtidSet.parse("0-1-100")
    mysql = GtidSet.parse(f"{UUID_A}:1-5")

    assert mariadb.contains(GtidSet().with_gtid("0-1-99"))
    assert not mariadb.contains(GtidSet().with_gtid("0-1-101"))
    assert not mariadb.contains(GtidSet().with_gtid("2-1-1"))  # an unknown domain
    assert mysql.contains(GtidSet().with_gtid(f"{UUID_A}:5"))
    assert not mysql.contains(GtidSet().with_gtid(f"{UUID_A}:6"))


def test_gtid_source_filters_keep_included_sources_or_drop_excluded_ones() -> None:
    gtids = GtidSet.parse(f"{UUID_A}:1-5,{UUID_B}:1-2")

    assert str(gtids.filtered(includes=[UUID_A], excludes=[])) == f"{UUID_A}:1-5"
    assert str(gtids.filtered(includes=[], excludes=["5f1e.*"])) == f"{UUID_A}:1-5"
    assert str(GtidSet.parse("0-1-5,1-9-3").filtered(includes=["1-.*"], excludes=[])) == "1-9-3"


@pytest.mark.parametrize("text", ["0-1", "uuid:1-5", f"{UUID_A}:x"])
def test_a_malformed_gtid_set_names_the_bad_entry(text: str) -> None:
    with pytest.raises(ValueError, match=r"is not|neither"):
        GtidSet.parse(text)


def test_an_offset_round_trips_with_debeziums_keys_and_orders_by_file_number() -> None:
    position = BinlogPosition("mysql-bin.000010", 4, GtidSet.parse("0-1-5"), server_id=1)
    stored = Offset.of(position).to_dict()

    assert stored == {"file": "mysql-bin.000010", "pos": 4, "gtids": "0-1-5", "server_id": 1,
                      "ts_sec": 0}  # fmt: skip
    assert BinlogPosition.from_offset(Offset(stored)) == position
    earlier = BinlogPosition("mysql-bin.000009", 99999)
    assert earlier.order_key() < position.order_key()


def test_an_offset_of_another_connector_is_refused_with_the_fix() -> None:
    with pytest.raises(ValueError, match="offsets reset"):
        BinlogPosition.from_offset(Offset({"lsn": 42}))
