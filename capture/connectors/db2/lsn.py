"""Db2 log sequence numbers and the connector's position, as Debezium stores them.

An LSN is 16 bytes (``IBMSNAP_COMMITSEQ``/``IBMSNAP_INTENTSEQ`` are ``VARCHAR(16) FOR BIT
DATA``), compared as unsigned bytes and printed as 32 hex digits with a colon after bytes 4
and 8: ``00000000:0000a3f0:0000000000000012``. A position is the change's (commit LSN, change
LSN) and its ``event_serial_no`` (1, or 2 for an update's after image): Debezium's offset
``{commit_lsn, change_lsn, event_serial_no}``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cdcflow.capture.spi import Offset

SIZE = 16


@dataclass(frozen=True, slots=True, order=True)
class Lsn:
    """A 16-byte LSN; orders as unsigned bytes."""

    value: bytes

    def __post_init__(self) -> None:
        if len(self.value) != SIZE:
            raise ValueError(f"a Db2 LSN has {SIZE} bytes, not {len(self.value)}")

    @classmethod
    def of(cls, raw: bytes | bytearray | memoryview) -> Lsn:
        """An LSN as the driver returns it (shorter values are left-padded, as Db2's
        comparison of ``FOR BIT DATA`` values treats them)."""
        data = bytes(raw)
        if len(data) > SIZE:
            raise ValueError(f"a Db2 LSN has at most {SIZE} bytes, not {len(data)}")
        return cls(data.rjust(SIZE, b"\0"))

    @classmethod
    def parse(cls, text: str) -> Lsn:
        """Debezium's text form (colons optional)."""
        digits = text.replace(":", "")
        try:
            return cls.of(bytes.fromhex(digits))
        except ValueError:
            raise ValueError(f"{text!r} is not a Db2 LSN (32 hex digits)") from None

    @classmethod
    def from_int(cls, number: int) -> Lsn:
        return cls(number.to_bytes(SIZE, "big"))

    def __int__(self) -> int:
        return int.from_bytes(self.value, "big")

    def increment(self) -> Lsn:
        """The next LSN: the first one after this (windows are inclusive at both ends)."""
        return Lsn.from_int(int(self) + 1)

    def __str__(self) -> str:
        digits = self.value.hex()
        return f"{digits[:8]}:{digits[8:16]}:{digits[16:]}"


ZERO = Lsn(bytes(SIZE))


@dataclass(frozen=True, slots=True)
class Db2Position:
    """Where a change is: its commit LSN, change LSN and serial number within that change.

    A snapshot position has only ``commit_lsn`` (the ASN synchpoint the snapshot read at).
    """

    commit_lsn: Lsn
    change_lsn: Lsn | None = None
    event_serial_no: int = 0

    def to_dict(self) -> dict[str, Any]:
        values: dict[str, Any] = {"commit_lsn": str(self.commit_lsn)}
        if self.change_lsn is not None:
            values["change_lsn"] = str(self.change_lsn)
            values["event_serial_no"] = self.event_serial_no
        return values

    def order_key(self) -> tuple[bytes, bytes, int]:
        change = self.change_lsn.value if self.change_lsn is not None else b""
        return (self.commit_lsn.value, change, self.event_serial_no)

    def offset(self) -> Offset:
        return Offset.of(self)

    @property
    def streamed(self) -> bool:
        """Whether this is a streamed change's position (a snapshot's has no change LSN)."""
        return self.change_lsn is not None

    @classmethod
    def from_offset(cls, offset: Offset) -> Db2Position:
        """The position of a stored offset; raises ValueError naming a malformed key."""
        commit = offset.get("commit_lsn")
        if not isinstance(commit, str):
            raise ValueError(f"the stored offset has no commit_lsn: {offset.connector_values()}")
        change = offset.get("change_lsn")
        return cls(
            commit_lsn=Lsn.parse(commit),
            change_lsn=Lsn.parse(change) if isinstance(change, str) else None,
            event_serial_no=int(offset.get("event_serial_no") or 0),
        )
