"""What a connector may do beyond :class:`~cdcflow.capture.spi.Connector`: optional
capabilities the engine finds with ``isinstance`` (runtime-checkable Protocols).

They live apart from :mod:`cdcflow.capture.spi` because that module is compiled with mypyc
(its per-event values are on the hot path), and a compiled Protocol is not runtime-checkable.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol, runtime_checkable

from cdcflow.capture.log_budget import LogBudget
from cdcflow.capture.spi import LogMessage, Offset, Record, SchemaChange


@runtime_checkable
class Heartbeats(Protocol):
    """A connector that acts on each heartbeat (e.g. runs ``heartbeat.action.query``)."""

    def heartbeat(self) -> None: ...


@runtime_checkable
class LogMessages(Protocol):
    """A connector whose log carries application messages (``op: m`` events)."""

    def message_record(self, message: LogMessage, transaction: dict[str, Any] | None) -> Record:
        """The Kafka record of one message, in the connector's own format."""
        ...


@runtime_checkable
class SignalWriter(Protocol):
    """A connector that can insert a row into its signal table (``CdcSnapshotSignal``)."""

    def insert_signal(self, *, table: str, signal_id: str, signal_type: str, data: str) -> bool:
        """Insert a signal row, committed at once; False when the id exists already."""
        ...


@runtime_checkable
class PositionWatermarks(Protocol):
    """A chunk source that brackets a chunk read with log positions instead of watermark rows
    it writes (``read.only``): the window closes once streaming passes the position read
    after the chunk, and no write reaches the database."""

    #: whether :meth:`~cdcflow.capture.spi.ChunkSource.missed` knows exactly which streamed
    #: changes the chunk read could not see (PostgreSQL: its ``pg_current_snapshot()``); if
    #: not, every change streamed while the window is open drops its chunk row
    sees_visibility: bool

    def log_position(self) -> Offset:
        """The log's position now: a change committed before it can be in a chunk read
        before this call, one after it only in the stream."""
        ...

    def position_key(self, offset: Offset) -> tuple[Any, ...]:
        """A streamed (or :meth:`log_position`) offset in log order."""
        ...

    def source_at(self, offset: Offset) -> dict[str, Any]:
        """The ``source`` block of snapshot rows emitted when streaming reached ``offset``."""
        ...


@runtime_checkable
class LogBudgets(Protocol):
    """A connector that can measure the log it holds back (on a connection of its own: the
    engine asks from another thread)."""

    def log_budget(self, offset: Offset | None) -> LogBudget: ...


@runtime_checkable
class Cleanup(Protocol):
    """A connector that leaves objects on the server (slots, publications) to drop on delete."""

    def cleanup(self) -> list[str]:
        """Drop them; what was dropped, e.g. ``["slot orders", "publication orders"]``."""
        ...


@runtime_checkable
class Historized(Protocol):
    """A connector that decodes rows with the structure current when they were written, so it
    needs schema history (MySQL, Db2)."""

    def recover(self, changes: Iterator[SchemaChange], offset: Offset | None) -> None:
        """Rebuild the table structures as of ``offset`` from the recorded ``changes`` (those
        after ``offset`` are the connector's to skip: only it can order its positions)."""
        ...


@runtime_checkable
class ResumableTransactions(Protocol):
    """A streaming source that can name a position inside an open transaction: a restart
    from it resumes after the last event read instead of at the transaction's start, so a
    large transaction interrupted by a crash is not sent again whole."""

    def offset_in_transaction(self) -> Offset | None:
        """The offset covering every event yielded so far, while a transaction with events
        is open (None otherwise: the last commit's offset covers everything)."""
        ...


@runtime_checkable
class Discarding(Protocol):
    """A sink that can drop what was written since its last commit (a transactional Kafka
    sink aborts its transaction), so a run restarted from the last committed offset does
    not deliver those records twice."""

    def discard(self) -> None: ...
