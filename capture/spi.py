"""The connector contract: plain values and Protocols shared by every connector and the pipeline.

Nothing here does I/O or imports a third-party library. Connectors turn their database's log
into these values; the pipeline turns them into Kafka records and decides when a position is
durable. Row images are tuples aligned with :attr:`TableSchema.columns`, already converted to
the JSON-ready values the event contract expects, so the hot path allocates as little as it can.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

#: A Kafka Connect schema in its JSON form, e.g. ``{"type": "int32", "optional": False}``.
ConnectSchema = dict[str, Any]
#: Converts one column value as the connector reads it (PostgreSQL: the text form; a binlog or
#: DB-API driver: a Python value; None for NULL) to its event form.
Converter = Callable[[Any], Any]
#: A row's key as the connector reads and compares it (PostgreSQL: text; others: Python
#: values), passed back unchanged as the next chunk's lower bound.
ChunkKey = tuple[Any, ...]


class Op(enum.StrEnum):
    """Debezium's operation codes."""

    CREATE = "c"
    UPDATE = "u"
    DELETE = "d"
    READ = "r"
    TRUNCATE = "t"
    MESSAGE = "m"


@dataclass(frozen=True, slots=True, order=True)
class TableId:
    """A captured table: ``schema`` is the PostgreSQL/Db2 schema or the MySQL database."""

    schema: str
    table: str

    def __str__(self) -> str:
        return f"{self.schema}.{self.table}"

    @classmethod
    def parse(cls, name: str) -> TableId:
        """A table named as in Debezium's properties: ``schema.table`` (PostgreSQL, and
        ``database.table`` for MySQL) or ``database.schema.table`` (Db2's data collections:
        the database is the connector's one and is dropped)."""
        parts = name.split(".")
        if len(parts) not in (2, 3) or not all(parts):
            raise ValueError(
                f"{name!r} is not a table name: write schema.table (or database.schema.table)"
            )
        return cls(parts[-2], parts[-1])


@dataclass(frozen=True, slots=True)
class Column:
    """One captured column: its event schema and the converter from the connector's value.

    A key column with a column mapper keeps its own value in the key (and in row tuples);
    ``value_schema`` and ``value_map`` then describe its field in the event value, as
    Debezium maps only that field.
    """

    name: str
    type_name: str
    schema: ConnectSchema
    convert: Converter
    optional: bool = True
    value_schema: ConnectSchema | None = None
    value_map: Callable[[Any], Any] | None = None


@dataclass(frozen=True, slots=True)
class TableSchema:
    """A table as events see it: columns in order and the columns that form the message key."""

    id: TableId
    columns: tuple[Column, ...]
    key_columns: tuple[str, ...]

    def key_indexes(self) -> tuple[int, ...]:
        """Positions of the key columns inside a row tuple."""
        names = [column.name for column in self.columns]
        return tuple(names.index(name) for name in self.key_columns)


class Position(Protocol):
    """A connector's own position: a frozen value with its stored form and its order."""

    def to_dict(self) -> dict[str, Any]:
        """The connector's keys of the stored offset (JSON-safe scalars)."""
        ...

    def order_key(self) -> tuple[Any, ...]:
        """Sorts positions in log order."""
        ...


ENGINE_OFFSET_KEYS = ("snapshot", "incremental_snapshot")
"""Keys of the stored offset the engine owns (snapshot progress); a connector's own
:class:`Position` never uses them."""
TRANSACTION_OFFSET_PREFIX = "transaction_"
"""The engine's keys of an offset taken inside a transaction, as Debezium names them
(``transaction_id``, ``transaction_data_collection_order_<collection>``): where the
transaction metadata of the open transaction stands."""
REPLAY_OFFSET_PREFIX = "replay."
"""The engine's keys of an offset inside a replay window (:mod:`cdcflow.capture.replay`): the
connector's keys of the position the log is read again from, after a redone snapshot."""


@dataclass(init=False, slots=True)
class Offset:
    """A stored position as JSON-safe scalars (the ``sourceOffset`` of Kafka Connect): the
    connector's :class:`Position` keys plus the engine's :data:`ENGINE_OFFSET_KEYS`.

    Offsets, transaction and idle events, row changes and records are made per event or per
    transaction: Final fields set by an explicit __init__ instead of frozen=True, whose
    generated __init__ calls object.__setattr__ per field (about three times the cost); Final
    keeps them immutable for mypy (and at run time where the module is compiled)."""

    values: Final[Mapping[str, Any]]

    def __init__(self, values: Mapping[str, Any] | None = None) -> None:
        self.values = {} if values is None else values

    def to_dict(self) -> dict[str, Any]:
        return dict(self.values)

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> Offset:
        return cls(dict(values))

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)

    @classmethod
    def of(cls, position: Position) -> Offset:
        """The stored form of a connector's position."""
        return cls(position.to_dict())

    def connector_values(self) -> dict[str, Any]:
        """The connector's keys only: what its :class:`Position` reads back."""
        return {
            k: v
            for k, v in self.values.items()
            if k not in ENGINE_OFFSET_KEYS
            and not k.startswith(TRANSACTION_OFFSET_PREFIX)
            and not k.startswith(REPLAY_OFFSET_PREFIX)
        }

    def replay_start(self) -> Offset | None:
        """Where the log is read again from, when this offset is inside a replay window."""
        prefix = REPLAY_OFFSET_PREFIX
        start = {k[len(prefix) :]: v for k, v in self.values.items() if k.startswith(prefix)}
        return Offset(start) if start else None

    def replaying_from(self, start: Offset) -> Offset:
        """This offset, with the log to be read again from ``start`` up to it."""
        values = {k: v for k, v in self.values.items() if not k.startswith(REPLAY_OFFSET_PREFIX)}
        for key, value in start.connector_values().items():
            values[REPLAY_OFFSET_PREFIX + key] = value
        return Offset(values)

    def without_replay(self) -> Offset:
        """This offset without its replay window."""
        prefix = REPLAY_OFFSET_PREFIX
        return Offset({k: v for k, v in self.values.items() if not k.startswith(prefix)})


@dataclass(init=False, slots=True)
class RowChange:
    """One row event. ``source`` holds the connector-specific ``source`` block values."""

    table: Final[TableSchema]
    op: Final[Op]
    before: Final[tuple[Any, ...] | None]
    after: Final[tuple[Any, ...] | None]
    source: Final[dict[str, Any]]
    tx_id: Final[str | None]

    def __init__(
        self,
        table: TableSchema,
        op: Op,
        before: tuple[Any, ...] | None,
        after: tuple[Any, ...] | None,
        source: dict[str, Any],
        tx_id: str | None = None,
    ) -> None:
        self.table = table
        self.op = op
        self.before = before
        self.after = after
        self.source = source
        self.tx_id = tx_id


@dataclass(init=False, slots=True)
class TxBegin:
    """A source transaction starts; ``tx_id`` matches the RowChanges that follow.

    ``commits_at``, when the connector knows it at the start, is the position the transaction
    commits at: on a restart the engine drops, unread, every transaction that commits before
    the stored position (it was delivered before the stop).
    """

    tx_id: Final[str]
    source: Final[dict[str, Any]]
    commits_at: Final[Offset | None]

    def __init__(
        self, tx_id: str, source: dict[str, Any], commits_at: Offset | None = None
    ) -> None:
        self.tx_id = tx_id
        self.source = source
        self.commits_at = commits_at


@dataclass(init=False, slots=True)
class TxCommit:
    """A source transaction committed; every change before it is covered by ``offset``."""

    tx_id: Final[str]
    offset: Final[Offset]
    source: Final[dict[str, Any]]

    def __init__(self, tx_id: str, offset: Offset, source: dict[str, Any]) -> None:
        self.tx_id = tx_id
        self.offset = offset
        self.source = source


@dataclass(frozen=True, slots=True)
class LogMessage:
    """A logical decoding message (PostgreSQL ``pg_logical_emit_message``)."""

    prefix: str
    content: bytes
    transactional: bool
    source: dict[str, Any]
    tx_id: str | None = None


@dataclass(frozen=True, slots=True)
class Truncate:
    """Tables truncated in one statement; one ``op: t`` event per table, each with the
    ``source`` block at the same index of ``sources`` (the connector names the table there)."""

    tables: tuple[TableSchema, ...]
    sources: tuple[dict[str, Any], ...]
    tx_id: str | None = None

    @property
    def source(self) -> dict[str, Any]:
        """The first table's block: what the statement shares (time, position)."""
        return self.sources[0]


@dataclass(init=False, slots=True)
class Idle:
    """Nothing new; ``offset`` is a position the source may confirm once earlier work is durable."""

    offset: Final[Offset | None]

    def __init__(self, offset: Offset | None = None) -> None:
        self.offset = offset


@dataclass(frozen=True, slots=True)
class ColumnStructure:
    """One column as schema history records it (Debezium's ``tableChanges[].table.columns``)."""

    name: str
    jdbc_type: int
    """``java.sql.Types`` code, e.g. 4 INTEGER, 12 VARCHAR."""
    type_name: str
    position: int
    """1-based ordinal."""
    optional: bool = True
    type_expression: str | None = None
    native_type: int | None = None
    charset_name: str | None = None
    length: int | None = None
    scale: int | None = None
    auto_incremented: bool = False
    generated: bool = False
    comment: str | None = None
    default_value_expression: str | None = None
    has_default_value: bool | None = None
    """Whether the column has a default; None: exactly when it has an expression (a
    ``DEFAULT NULL`` column has a default without one)."""
    enum_values: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class TableStructure:
    """A table's structure, independent of how its values are converted."""

    id: TableId
    columns: tuple[ColumnStructure, ...]
    primary_key: tuple[str, ...] = ()
    default_charset_name: str | None = None
    comment: str | None = None


class TableChangeType(enum.StrEnum):
    """What a DDL did to one table."""

    CREATE = "CREATE"
    ALTER = "ALTER"
    DROP = "DROP"


@dataclass(frozen=True, slots=True)
class TableChange:
    """One table's structure after a DDL (for a drop: the structure it had)."""

    type: TableChangeType
    table: TableStructure
    previous_id: TableId | None = None
    """The old name, when the DDL renamed the table."""


@dataclass(frozen=True, slots=True)
class SchemaChange:
    """A DDL statement the connector applied to its table structures, at ``offset``.

    Historized connectors yield it from the log (and from the snapshot's schema step); the
    engine records it to schema history before any offset past it is committed, and emits it
    on the schema-change topic when ``include.schema.changes`` is on.
    """

    database: str
    schema: str | None
    ddl: str
    changes: tuple[TableChange, ...]
    source: dict[str, Any]
    offset: Offset


Event = RowChange | TxBegin | TxCommit | LogMessage | Truncate | SchemaChange | Idle


@dataclass(init=False, slots=True)
class Record:
    """A Kafka record ready to produce; ``value`` None is a tombstone."""

    topic: Final[str]
    key: Final[bytes | None]
    value: Final[bytes | None]
    headers: Final[tuple[tuple[str, bytes], ...]]

    def __init__(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        headers: tuple[tuple[str, bytes], ...] = (),
    ) -> None:
        self.topic = topic
        self.key = key
        self.value = value
        self.headers = headers


class StreamingSource(Protocol):
    """A connector's log reader."""

    def events(self) -> Iterator[Event]:
        """Yield events in log order, and :class:`Idle` at least every status interval."""
        ...

    def acknowledge(self, offset: Offset) -> None:
        """Everything up to ``offset`` is durable in Kafka and the offset store."""
        ...

    def close(self) -> None:
        """Release connections; never confirms anything not acknowledged."""
        ...


class Sink(Protocol):
    """Where records go. ``flush`` returns only when every record written so far is durable."""

    def write(self, record: Record) -> None: ...

    def flush(self) -> None: ...

    def close(self) -> None: ...


class OffsetStore(Protocol):
    """Durable connector positions, keyed like Kafka Connect's ``[name, {"server": prefix}]``."""

    def load(self) -> Offset | None: ...

    def save(self, offset: Offset) -> None: ...

    def reset(self) -> None:
        """Forget the stored offset."""
        ...

    def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class ChunkRow:
    """A row read by an incremental snapshot chunk: its key (for the next query) and values."""

    key: ChunkKey
    values: tuple[Any, ...]


class ChunkSource(Protocol):
    """What a connector offers for incremental and blocking snapshots."""

    def matching_tables(self, patterns: tuple[str, ...]) -> list[TableId]:
        """Captured tables whose ``schema.table`` fully matches one of the regexes."""
        ...

    def snapshot_schema(self, table: TableId) -> TableSchema | None:
        """The current schema of ``table`` (None if it does not exist)."""
        ...

    def max_key(
        self, table: TableSchema, *, key: tuple[str, ...], condition: str | None
    ) -> ChunkKey | None:
        """The largest key of the rows to snapshot, or None for an empty table."""
        ...

    def read_chunk(
        self,
        table: TableSchema,
        *,
        key: tuple[str, ...],
        after: ChunkKey | None,
        up_to: ChunkKey,
        condition: str | None,
        limit: int,
    ) -> list[ChunkRow]:
        """Rows with ``after < key <= up_to`` in key order, at most ``limit``."""
        ...

    def missed(self, change: RowChange) -> bool:
        """Whether the last chunk read could not see ``change`` (its transaction was not yet
        visible). Such a change drops the chunk's row even before the window opens."""
        ...

    def write_signal(self, *, signal_id: str, signal_type: str, data: str) -> None:
        """Insert a row into the signal table (watermarks), committed at once."""
        ...

    def delete_signal(self, *, signal_id: str) -> None:
        """Delete a row of the signal table, committed at once."""
        ...

    def source_for(
        self, source: Mapping[str, Any], table: TableId, *, snapshot: str
    ) -> dict[str, Any]:
        """``source`` (a streamed event's block, or empty) as the block of a snapshot row of
        ``table``: the connector's own table fields, ``snapshot`` set to ``snapshot``."""
        ...


# --------------------------------------------------------------------------------------------
# The connector contract. The engine speaks to a connector only through these Protocols; what
# a database lacks (logical decoding messages, say) is an optional capability of its own.


class SnapshotSteps(Protocol):
    """Debezium's snapshot template, one step per method; the engine runs them in order.

    1. :meth:`lock` what must not change while the position and structure are read;
    2. :meth:`position`: the log position the snapshot is consistent with (streaming resumes
       there);
    3. :meth:`structure`: the tables' structure as schema changes (historized connectors; the
       engine records them to schema history);
    4. :meth:`release` the locks rows do not need (MySQL's minimal locking);
    5. :meth:`rows`: the ``op: r`` rows;
    6. :meth:`close`: end the snapshot's transactions, whatever happened.
    """

    def lock(self) -> None: ...

    def position(self) -> Offset: ...

    def structure(self) -> Iterator[SchemaChange]: ...

    def release(self) -> None: ...

    def rows(self) -> Iterator[RowChange]: ...

    def close(self) -> None: ...


class Connector(Protocol):
    """One database's capture: startup checks, the consistent snapshot and the log reader.

    The engine calls, in order: :meth:`prepare`; :meth:`position_available` for a stored
    offset; :meth:`prepare_stream` when it will stream (before the snapshot, so snapshot and
    stream meet exactly); :meth:`snapshot_tables` and :meth:`snapshot_steps` when it
    snapshots; :meth:`streaming`; :meth:`close`.
    """

    source_schema: ConnectSchema
    """The Connect schema of the connector's ``source`` block."""

    def prepare(self) -> list[TableId]:
        """Check the server and the privileges, set up what capture needs; the captured tables."""
        ...

    def position_available(self, offset: Offset | None) -> bool:
        """Whether the log still holds the changes after ``offset``."""
        ...

    def position(self, offset: Offset) -> Position:
        """The connector's typed position of a stored offset (its order decides what the
        engine skips after a restart)."""
        ...

    def prepare_stream(self, *, for_snapshot: bool, offset: Offset | None) -> None:
        """Fix the log position streaming starts from (and, ``for_snapshot``, the consistent
        point the snapshot reads at), before any snapshot row is read."""
        ...

    def snapshot_tables(self) -> dict[TableId, int]:
        """The tables the snapshot reads, in snapshot order, with row estimates."""
        ...

    def snapshot_steps(self, tables: list[TableId]) -> SnapshotSteps:
        """One consistent snapshot of ``tables``, run by the engine step by step."""
        ...

    def streaming(self, offset: Offset | None) -> StreamingSource:
        """The log reader, from ``offset`` (or the position :meth:`prepare_stream` fixed)."""
        ...

    def chunk_source(self) -> ChunkSource:
        """Chunk reads and watermark writes for incremental and blocking snapshots."""
        ...

    def close(self, *, stopping: bool = False) -> None:
        """Release connections; ``stopping`` is a clean stop (not a restart after a failure)."""
        ...


class SchemaHistory(Protocol):
    """Durable, ordered storage of the schema changes a historized connector applied.

    Debezium's internal schema history: one record per DDL with the position it was at, so a
    restarted connector rebuilds the table structures as of its offset before reading rows.
    """

    def start(self) -> None:
        """Check (and, where allowed, create) the storage; raise FatalError naming the fix."""
        ...

    def exists(self) -> bool:
        """Whether any change was recorded."""
        ...

    def record(self, change: SchemaChange) -> None:
        """Store ``change``; durable when this returns."""
        ...

    def changes(self) -> Iterator[SchemaChange]:
        """Every recorded change, in the order recorded (``source`` is not kept)."""
        ...

    def close(self) -> None: ...
