"""Offset stores that need no Kafka: a local JSON file (the default) and memory (tests).

Offsets are keyed like Kafka Connect's (``["<connector>", {"server": "<topic.prefix>"}]``) so
the same value moves between the file and the Kafka store unchanged. A save is atomic: the
file is written beside the old one, fsynced and renamed over it, so a crash never leaves a
half-written offset.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson

from cdcflow.capture.errors import FatalError
from cdcflow.capture.spi import Offset


def partition_key(connector: str, server: str) -> list[Any]:
    """Kafka Connect's offset key: the connector name and the source partition."""
    return [connector, {"server": server}]


class FileOffsetStore:
    """One JSON document holding the key and the latest offset."""

    def __init__(self, path: Path, *, connector: str, server: str) -> None:
        self.path = path
        self._key = partition_key(connector, server)

    def load(self) -> Offset | None:
        if not self.path.exists():
            return None
        try:
            document = orjson.loads(self.path.read_bytes())
            key, value = document.get("key"), document["value"]
            offset = Offset.from_dict(value)
        except (orjson.JSONDecodeError, AttributeError, KeyError, TypeError, ValueError):
            raise FatalError(
                f"the offsets file {self.path} is damaged (truncated or not cdcflow's). Move it "
                "away to keep it for inspection, then either restore a good copy or start over: "
                "`cdcflow offsets reset -f <connector.yaml>` (in Kubernetes raise "
                "spec.offsets.resetRequest while the connector is stopped); the next start takes "
                "a snapshot as snapshot.mode says"
            ) from None
        if key != self._key:
            raise FatalError(
                f"the offsets file {self.path} belongs to another connector ({key}, not "
                f"{self._key}): using it would lose or repeat changes. Point this connector at "
                "its own offsets file, or reset it: `cdcflow offsets reset -f <connector.yaml>`"
            )
        return offset

    def save(self, offset: Offset) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_suffix(".tmp")
        data = orjson.dumps({"key": self._key, "value": offset.to_dict()})
        with temporary.open("wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        temporary.replace(self.path)

    def reset(self) -> None:
        self.path.unlink(missing_ok=True)

    def close(self) -> None:
        return None


class MemoryOffsetStore:
    """Offsets kept in memory, for tests."""

    def __init__(self, initial: Offset | None = None) -> None:
        self.offset = initial
        self.saved: list[Offset] = []

    def load(self) -> Offset | None:
        return self.offset

    def save(self, offset: Offset) -> None:
        self.offset = offset
        self.saved.append(offset)

    def reset(self) -> None:
        self.offset = None

    def close(self) -> None:
        return None
