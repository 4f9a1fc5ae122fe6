"""``snapshot.max.threads``: read snapshot tables on several connections at once.

Every connection runs a REPEATABLE READ transaction on one exported snapshot, so the tables
read in parallel are still one consistent state (Debezium imports the slot's snapshot on each
of its pooled connections the same way). Tables are handed to the workers in snapshot order
and their rows come out in that order too, table after table, each table's rows buffered in a
bounded queue meanwhile: consumers see the same sequence, and the same ``source.snapshot``
markers, as from a single thread, while the server scans several tables at a time.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import psycopg

from cdcflow.capture.connectors.postgres.tables import DecodedTable
from cdcflow.capture.spi import RowChange

Connection = psycopg.Connection[tuple[Any, ...]]
ReadTable = Callable[[Connection, DecodedTable], Iterator[RowChange]]
#: How long a blocked worker waits before checking whether the reader gave up.
_POLL_S = 0.1


@dataclass(frozen=True)
class _Failed:
    error: BaseException


_DONE = object()


def read_tables(
    connections: Sequence[Connection],
    tables: Sequence[DecodedTable],
    *,
    read: ReadTable,
    buffer: int,
) -> Iterator[RowChange]:
    """The rows of ``tables`` in order, read by one worker per connection.

    Each table's rows wait in a queue of at most ``buffer`` rows; a worker's error is raised
    here when the reader reaches that table. Closing the iterator early stops the workers.
    """
    pool: queue.Queue[Connection] = queue.Queue()
    for connection in connections:
        pool.put(connection)
    stop = threading.Event()
    queues: list[queue.Queue[object]] = [queue.Queue(maxsize=max(1, buffer)) for _ in tables]

    def work(index: int) -> None:
        connection = pool.get()
        rows = read(connection, tables[index])
        try:
            for row in rows:
                if not _put(queues[index], row, stop):
                    return
            _put(queues[index], _DONE, stop)
        except BaseException as error:  # handed to the reader, which raises it
            _put(queues[index], _Failed(error), stop)
        finally:
            close = getattr(rows, "close", None)
            if close is not None:
                close()  # a generator: ends its server-side cursor
            pool.put(connection)

    with ThreadPoolExecutor(len(connections), thread_name_prefix="cdcflow-snapshot") as workers:
        futures = [workers.submit(work, index) for index in range(len(tables))]
        try:
            for rows in queues:
                yield from _drain(rows)
        finally:
            stop.set()
            for future in futures:
                future.cancel()


def _drain(rows: queue.Queue[object]) -> Iterator[RowChange]:
    while (item := rows.get()) is not _DONE:
        if isinstance(item, _Failed):
            raise item.error
        assert isinstance(item, RowChange)
        yield item


def _put(rows: queue.Queue[object], item: object, stop: threading.Event) -> bool:
    """Queue ``item`` unless the reader stopped; False when it did."""
    while not stop.is_set():
        try:
            rows.put(item, timeout=_POLL_S)
        except queue.Full:
            continue
        return True
    return False
