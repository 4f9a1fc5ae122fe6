"""A sink for local debugging: one JSON object per record on standard output."""

from __future__ import annotations

import sys
from typing import IO

import orjson

from cdcflow.capture.spi import Record


class StdoutSink:
    """Prints ``{"topic", "key", "value", "headers"}`` per record; flush flushes the stream."""

    def __init__(self, stream: IO[str] | None = None) -> None:
        self._stream = stream or sys.stdout

    def write(self, record: Record) -> None:
        line = {
            "topic": record.topic,
            "key": orjson.loads(record.key) if record.key else None,
            "value": orjson.loads(record.value) if record.value else None,
            "headers": {name: value.decode() for name, value in record.headers} or None,
        }
        self._stream.write(orjson.dumps(line).decode() + "\n")

    def flush(self) -> None:
        self._stream.flush()

    def close(self) -> None:
        self.flush()
