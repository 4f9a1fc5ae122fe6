"""In-memory stand-ins for the engine's edges (sink, offset store, log source) that journal
what happened in order, for tests of the pipeline and the engine without a database or Kafka."""

from __future__ import annotations

import threading
from collections.abc import Iterator

from cdcflow.capture.offsets import MemoryOffsetStore
from cdcflow.capture.spi import Event, Offset, Record

SOURCE_SCHEMA = {
    "type": "struct",
    "optional": False,
    "name": "test.Source",
    "fields": [{"type": "int64", "optional": False, "field": "ts_ms"}],
}
"""A minimal connector ``source`` schema: the block's ``ts_ms``."""


class Journal(list[str]):
    """What happened, in order, across the sink, the offset store and the source."""


class MemorySink:
    """Keeps the records; ``flush`` makes everything written so far durable."""

    def __init__(self, journal: Journal | None = None) -> None:
        self.journal = journal if journal is not None else Journal()
        self.records: list[Record] = []
        self.durable = 0

    def write(self, record: Record) -> None:
        self.records.append(record)
        self.journal.append(f"write {record.topic}")

    def flush(self) -> None:
        self.durable = len(self.records)
        self.journal.append("flush")

    def close(self) -> None:
        pass


class JournalingOffsets(MemoryOffsetStore):
    """A memory offset store that journals each save by the offset's ``pos``."""

    def __init__(self, journal: Journal, initial: Offset | None = None) -> None:
        super().__init__(initial)
        self.journal = journal

    def save(self, offset: Offset) -> None:
        super().save(offset)
        self.journal.append(f"save {offset.get('pos')}")


class ScriptedSource:
    """Yields the events it was given (then sets ``stop``, if given); journals what was
    acknowledged."""

    def __init__(
        self, journal: Journal, events: list[Event], stop: threading.Event | None = None
    ) -> None:
        self.journal, self.script, self.stop = journal, events, stop
        self.acknowledged: list[Offset] = []

    def events(self) -> Iterator[Event]:
        yield from self.script
        if self.stop is not None:
            self.stop.set()

    def acknowledge(self, offset: Offset) -> None:
        self.acknowledged.append(offset)
        self.journal.append(f"acknowledge {offset.get('pos')}")

    def close(self) -> None:
        pass
