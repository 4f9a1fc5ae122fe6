"""Binlog positions and GTID sets: the MySQL connector's offsets, as Debezium stores them.

An offset names the binlog ``file`` and ``pos`` a restart reads from (the start of the
transaction in progress), how many ``event``\\ s and ``row``\\ s of that transaction were already
sent, and the ``gtids`` of every completed transaction. Two GTID dialects exist:

* MySQL: ``uuid:1-5:7,uuid2:1-3`` — per source server uuid, intervals of transaction numbers;
* MariaDB: ``0-1-100,1-2-7`` — per replication domain, the last ``domain-server-sequence``.

Both parse to :class:`GtidSet`, which merges a committed transaction in, filters by source
(``gtid.source.includes``/``excludes``) and formats back in its own dialect.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from cdcflow.capture.spi import Offset

_MARIADB_GTID = re.compile(r"^(\d+)-(\d+)-(\d+)$")
_MYSQL_INTERVAL = re.compile(r"^(\d+)(?:-(\d+))?$")


@dataclass(frozen=True, slots=True)
class GtidSet:
    """Completed transactions. ``mariadb`` maps domain → (server, sequence) of its last
    transaction; ``mysql`` maps a source uuid → sorted disjoint closed intervals."""

    mariadb: tuple[tuple[int, int, int], ...] = ()
    mysql: tuple[tuple[str, tuple[tuple[int, int], ...]], ...] = ()

    @classmethod
    def parse(cls, text: str | None) -> GtidSet:
        """Either dialect; empty text is the empty set. Raises ValueError naming the entry."""
        entries = [e.strip() for e in (text or "").replace("\n", "").split(",") if e.strip()]
        if not entries:
            return cls()
        if all(_MARIADB_GTID.match(e) for e in entries):
            return cls.of_mariadb(_mariadb_triple(e) for e in entries)
        return cls(mysql=_normalised_mysql(_mysql_entry(e) for e in entries))

    @classmethod
    def of_mariadb(cls, gtids: Iterable[tuple[int, int, int]]) -> GtidSet:
        """The last GTID per domain (a later sequence wins)."""
        last: dict[int, tuple[int, int, int]] = {}
        for domain, server, sequence in gtids:
            if domain not in last or sequence >= last[domain][2]:
                last[domain] = (domain, server, sequence)
        return cls(mariadb=tuple(last[d] for d in sorted(last)))

    def with_mariadb(self, gtid: str) -> GtidSet:
        """This set with the MariaDB transaction ``gtid`` completed."""
        return GtidSet.of_mariadb([*self.mariadb, _mariadb_triple(gtid)])

    def with_mysql(self, gtid: str) -> GtidSet:
        """This set with the MySQL transaction ``uuid:number`` completed."""
        uuid, _, number = gtid.rpartition(":")
        entry = (uuid.lower(), ((int(number), int(number)),))
        return GtidSet(mysql=_normalised_mysql([*self.mysql, entry]))

    def with_gtid(self, gtid: str) -> GtidSet:
        """This set with one transaction's GTID (either dialect) completed."""
        return self.with_mariadb(gtid) if _MARIADB_GTID.match(gtid) else self.with_mysql(gtid)

    def filtered(self, *, includes: list[str], excludes: list[str]) -> GtidSet:
        """``gtid.source.includes``/``excludes``: keep the sources (MySQL uuids, MariaDB
        ``domain-server`` prefixes) a regex of ``includes`` matches, or none of ``excludes``."""

        def kept(source: str) -> bool:
            if includes:
                return any(re.fullmatch(p, source, re.IGNORECASE) for p in includes)
            return not any(re.fullmatch(p, source, re.IGNORECASE) for p in excludes)

        return GtidSet(
            mariadb=tuple(g for g in self.mariadb if kept(f"{g[0]}-{g[1]}")),
            mysql=tuple(e for e in self.mysql if kept(e[0])),
        )

    def contains(self, other: GtidSet) -> bool:
        """Whether every transaction of ``other`` is in this set (MariaDB: per domain, the
        sequence is at least as far)."""
        mine = {d: s for d, _, s in self.mariadb}
        if any(mine.get(d, -1) < s for d, _, s in other.mariadb):
            return False
        intervals = dict(self.mysql)
        return all(
            any(lo <= a and b <= hi for lo, hi in intervals.get(uuid, ()))
            for uuid, spans in other.mysql
            for a, b in spans
        )

    def __str__(self) -> str:
        mariadb = [f"{d}-{s}-{n}" for d, s, n in self.mariadb]
        mysql = [
            ":".join([uuid, *(f"{a}" if a == b else f"{a}-{b}" for a, b in spans)])
            for uuid, spans in self.mysql
        ]
        return ",".join(mariadb + mysql)

    def __bool__(self) -> bool:
        return bool(self.mariadb or self.mysql)


def _mariadb_triple(gtid: str) -> tuple[int, int, int]:
    found = _MARIADB_GTID.match(gtid.strip())
    if found is None:
        raise ValueError(f"{gtid!r} is not a MariaDB GTID (domain-server-sequence)")
    return int(found[1]), int(found[2]), int(found[3])


def _mysql_entry(text: str) -> tuple[str, tuple[tuple[int, int], ...]]:
    uuid, *intervals = text.split(":")
    if not intervals or not re.fullmatch(r"[0-9a-fA-F-]{32,36}", uuid):
        raise ValueError(
            f"{text!r} is neither a MySQL GTID set entry (uuid:1-5) nor a MariaDB GTID"
        )
    spans = []
    for interval in intervals:
        found = _MYSQL_INTERVAL.match(interval)
        if found is None:
            raise ValueError(f"{interval!r} in {text!r} is not an interval like 1-5 or 7")
        start = int(found[1])
        spans.append((start, int(found[2]) if found[2] else start))
    return uuid.lower(), tuple(spans)


def _normalised_mysql(
    entries: Iterable[tuple[str, tuple[tuple[int, int], ...]]],
) -> tuple[tuple[str, tuple[tuple[int, int], ...]], ...]:
    """Merge entries of one uuid and their overlapping or adjacent intervals."""
    by_uuid: dict[str, list[tuple[int, int]]] = {}
    for uuid, spans in entries:
        by_uuid.setdefault(uuid, []).extend(spans)
    return tuple((uuid, _merged_spans(by_uuid[uuid])) for uuid in sorted(by_uuid))


def _merged_spans(spans: list[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return tuple(merged)


@dataclass(frozen=True, slots=True)
class BinlogPosition:
    """A MySQL connector offset (Debezium's keys: ``file``, ``pos``, ``row``, ``event``,
    ``gtids``, ``server_id``, ``ts_sec``; ``snapshot`` while a snapshot's position)."""

    file: str
    pos: int
    gtids: GtidSet = field(default_factory=GtidSet)
    event: int = 0
    """Events of the transaction at ``pos`` already sent (skipped after a restart)."""
    row: int = 0
    """Rows of the next event already sent."""
    server_id: int = 0
    ts_sec: int = 0

    def to_dict(self) -> dict[str, Any]:
        values: dict[str, Any] = {"file": self.file, "pos": self.pos}
        if self.gtids:
            values["gtids"] = str(self.gtids)
        if self.event:
            values["event"] = self.event
        if self.row:
            values["row"] = self.row
        values["server_id"] = self.server_id
        values["ts_sec"] = self.ts_sec
        return values

    def order_key(self) -> tuple[Any, ...]:
        return (_file_number(self.file), self.pos, self.event, self.row)

    def is_before_file(self, file: str) -> bool:
        """Whether binlog ``file`` comes after this position's file."""
        return _file_number(file) > _file_number(self.file)

    @classmethod
    def from_offset(cls, offset: Offset) -> BinlogPosition:
        values = offset.connector_values()
        if "file" not in values or "pos" not in values:
            raise ValueError(
                f"stored offset {values} has no binlog file/pos: it was not written by a "
                "MySQL connector. Reset it (`cdcflow offsets reset`) to start again"
            )
        return cls(
            file=str(values["file"]),
            pos=int(values["pos"]),
            gtids=GtidSet.parse(values.get("gtids")),
            event=int(values.get("event", 0)),
            row=int(values.get("row", 0)),
            server_id=int(values.get("server_id", 0)),
            ts_sec=int(values.get("ts_sec", 0)),
        )

    def offset(self) -> Offset:
        return Offset.of(self)

    def moved(self, **changes: Any) -> BinlogPosition:
        return replace(self, **changes)


def _file_number(name: str) -> int:
    """``mysql-bin.000042`` → 42: binlog files order by their numeric suffix."""
    suffix = name.rpartition(".")[2]
    return int(suffix) if suffix.isdigit() else 0
