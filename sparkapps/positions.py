"""Source positions: a string per change event that sorts in the order the source applied them.

Each connector states where an event sits in the database log in its ``source`` block.
The sink turns that into one string, ``_cdc_position``, whose plain string order is the
source's order, stores it in every target row, and only ever applies an event whose position
is greater than the row's. That one column makes replays (a restarted capture engine
re-sending events, a Spark micro-batch run twice) harmless, whichever connector wrote them:

* PostgreSQL: ``source.sequence`` as Debezium defines it, ``[last commit LSN, LSN]``, each
  zero-padded (a null last commit sorts first). The commit part matters at the snapshot
  boundary: snapshot rows carry ``[null, snapshot LSN]``, and a transaction that changed a row
  before the snapshot point but committed after it has change LSNs *below* the snapshot's,
  yet sorts after it because the last commit the engine saw before it is at least the
  snapshot point. The engine never leaves the last commit null after a (re)start.
* MySQL/MariaDB: binlog file number, ``source.pos`` and ``source.row``, each zero-padded.
* Db2: ``source.commit_lsn`` then ``source.change_lsn`` (fixed-width hexadecimal already).

A connector is recognised by the fields its ``source`` block has; adding one is a new
:class:`Ordering` in :data:`ORDERINGS`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass

from pyspark.sql import Column
from pyspark.sql import functions as sf

_SEPARATOR = ":"


@dataclass(frozen=True)
class Ordering:
    """How one connector's ``source`` block becomes a sortable position string."""

    connector: str
    fields: tuple[str, ...]
    build: Callable[[Column], Column]

    def position(self, source: Column) -> Column:
        """The position expression over the parsed ``source`` struct (null if unknown)."""
        return self.build(source)


def _padded(value: Column, width: int) -> Column:
    return sf.lpad(value.cast("string"), width, "0")


def _postgres(source: Column) -> Column:
    # get_json_object gives JSON null as the text "null", which would sort after every LSN.
    first = sf.nullif(sf.get_json_object(source["sequence"], "$[0]"), sf.lit("null"))
    last_commit = sf.coalesce(first, sf.lit("0"))
    return sf.concat_ws(_SEPARATOR, _padded(last_commit, 20), _padded(source["lsn"], 20))


def _postgres_without_sequence(source: Column) -> Column:
    """Events written without ``source.sequence`` (not cdcflow's): the LSN alone."""
    return sf.concat_ws(_SEPARATOR, sf.lit("0" * 20), _padded(source["lsn"], 20))


def _mysql(source: Column) -> Column:
    file_number = sf.regexp_extract(source["file"], r"(\d+)$", 1)
    return sf.concat_ws(
        _SEPARATOR,
        _padded(file_number, 12),
        _padded(source["pos"], 20),
        _padded(sf.coalesce(source["row"].cast("long"), sf.lit(0)), 10),
    )


def _db2(source: Column) -> Column:
    return sf.concat(
        source["commit_lsn"], sf.lit(_SEPARATOR), sf.coalesce(source["change_lsn"], sf.lit(""))
    )


ORDERINGS: tuple[Ordering, ...] = (
    Ordering("postgresql", ("lsn", "sequence"), _postgres),
    Ordering("postgresql", ("lsn",), _postgres_without_sequence),
    Ordering("mysql", ("file", "pos", "row"), _mysql),
    Ordering("db2", ("commit_lsn", "change_lsn"), _db2),
)


def ordering_for(source_fields: Collection[str]) -> Ordering | None:
    """The ordering whose fields the ``source`` block has, or None when none fits."""
    present = set(source_fields)
    return next((o for o in ORDERINGS if set(o.fields) <= present), None)


def describe_orderings() -> str:
    """The recognised position fields, for error messages."""
    return "; ".join(f"{o.connector}: {', '.join(o.fields)}" for o in ORDERINGS)
