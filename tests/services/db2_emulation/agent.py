"""The emulation's capture agent: ASN's ``asncap``, played by PostgreSQL logical decoding.

A daemon thread wakes every ``sleep_s`` and, while ``ASNCDCSERVICES('start')`` is in force:

1. writes a non-transactional logical message (the cycle's *marker*);
2. peeks at the slot's pgoutput changes (``pg_logical_slot_peek_binary_changes``) on the
   publication of the registered source tables, decoded with cdcflow's own pgoutput decoder;
3. in ONE transaction: copies every committed transaction whose commit LSN is past the global
   ``SYNCHPOINT`` into the CD tables of the registrations it captures (insert → ``I``, delete
   → ``D``, update → ``D`` then ``I``, or one ``U`` row with the after image when the
   registration says ``CHG_UPD_TO_DEL_INS='N'``), moves each table's ``CD_NEW_SYNCHPOINT`` to
   its last captured commit, ``SYNCHPOINT`` to the last captured commit and ``SYNCHTIME`` to
   now (every cycle, even idle: asncap's heartbeat);
4. after the commit, advances the slot past what it captured (a crash in between re-reads
   those transactions and the ``SYNCHPOINT`` comparison drops them).

Like asncap, it reads the registrations and their CD tables' columns only when it starts and
on ``reinit``, never in between: a registration marked ``'A'`` or ``'I'``, or a CD table
altered, changes nothing until the next reinit (the schema procedures' reason for being). At
that reinit, a registration it did not capture before starts at the current ``SYNCHPOINT``,
which it writes to ``CD_OLD_SYNCHPOINT`` (and ``CD_NEW_SYNCHPOINT``): the point from which the
CD table holds every change of the table. A start with ``IBMSNAP_CAPPARMS.STARTMODE='COLD'``
is a cold start: the CD tables are emptied, what the log holds since the last capture is
skipped, and every registration starts again (a new ``CD_OLD_SYNCHPOINT``). Nothing is ever
pruned otherwise. Two modes make timing realistic: ``follow_capture_parameters`` sleeps
``SLEEP_INTERVAL`` seconds between cycles, and ``split_rows`` writes a large transaction's CD
rows across two capture commits, moving the synchpoints only with the second. A CD table
dropped under it (``REMOVETABLE``) stops
being written, as asncap deactivates a registration whose CD table is gone. LOB and XML
values are not copied (ASN logs only that a LOB changed): those CD columns stay NULL.

LSNs are 16 bytes as Db2 writes them: ``IBMSNAP_COMMITSEQ`` is the commit record's LSN,
``IBMSNAP_INTENTSEQ`` the change record's LSN * 4 + k (k orders an update's ``D`` before its
``I``). Only columns the CD table has are written, as the real agent does after an online
schema change until the CD table gets the new column.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import psycopg
from psycopg import sql

from cdcflow.capture.connectors.postgres import pgoutput

log = logging.getLogger(__name__)

PgConnection = psycopg.Connection[tuple[Any, ...]]

MARKER_PREFIX = "cdcflow.db2_emulation.cycle"
LSN_BYTES = 16


def lsn_bytes(lsn: int) -> bytes:
    """A PostgreSQL LSN as Db2's 16-byte LSN (eight zero bytes, then the LSN)."""
    return lsn.to_bytes(LSN_BYTES, "big")


def lsn_int(value: bytes | memoryview | None) -> int:
    """A 16-byte LSN read back (0 for NULL)."""
    return int.from_bytes(bytes(value), "big") if value is not None else 0


@dataclass(frozen=True, slots=True)
class RowImage:
    """One CD row to write: ``I`` or ``D``, its change LSN * 4 + k and the column values."""

    operation: str
    intent: int
    schema: str
    table: str
    values: dict[str, str | None]
    update_before: bool = False
    """The ``D`` row of an update (dropped where updates are stored as one ``U`` row)."""
    update_after: bool = False
    """The ``I`` row of an update (``U`` where updates are stored as one row)."""


@dataclass(slots=True)
class CommittedTransaction:
    """A transaction decoded from the slot: its commit LSN, commit end and row images."""

    commit_lsn: int = 0
    end_lsn: int = 0
    commit_time_us: int = 0
    rows: list[RowImage] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Registration:
    """A registration as the agent captures it: its CD table's columns (as of the last start
    or reinit), where capture started and how updates are stored."""

    cd_owner: str
    cd_table: str
    start: int | None
    columns: frozenset[str]
    updates_split: bool = True
    not_copied: frozenset[str] = frozenset()
    """Source columns whose values ASN does not copy (LOB, XML): written as NULL."""


@dataclass(slots=True)
class PeekResult:
    """What one peek decoded: committed transactions in commit order and the cycle marker."""

    transactions: list[CommittedTransaction] = field(default_factory=list)
    marker_lsn: int = 0


class ChangeDecoder:
    """Folds a stream of pgoutput messages into committed transactions of row images."""

    def __init__(self) -> None:
        self._relations: dict[int, pgoutput.Relation] = {}

    def decode(self, messages: Iterable[tuple[int, bytes]]) -> PeekResult:
        """``messages`` are (record LSN, pgoutput bytes) as the peek returns them."""
        result = PeekResult()
        current: CommittedTransaction | None = None
        for record_lsn, data in messages:
            message = pgoutput.decode_message(data)
            if isinstance(message, pgoutput.Relation):
                self._relations[message.relid] = message
            elif isinstance(message, pgoutput.Begin):
                current = CommittedTransaction()
            elif isinstance(message, pgoutput.Commit):
                if current is not None:
                    current.commit_lsn = message.commit_lsn
                    current.end_lsn = message.end_lsn
                    current.commit_time_us = message.commit_time_us
                    result.transactions.append(current)
                current = None
            elif isinstance(message, pgoutput.Message):
                if message.prefix == MARKER_PREFIX and not message.transactional:
                    result.marker_lsn = max(result.marker_lsn, record_lsn)
            elif current is not None:
                current.rows.extend(self._row_images(record_lsn, message, current))
        return result

    def _row_images(
        self,
        record_lsn: int,
        message: pgoutput.PgOutputMessage,
        transaction: CommittedTransaction,
    ) -> list[RowImage]:
        """The CD rows of one change; rows of one WAL record (a COPY's multi-insert) get
        successive change LSNs."""
        base = record_lsn * 4
        if transaction.rows:
            base = max(base, transaction.rows[-1].intent + 1)
        if isinstance(message, pgoutput.Insert):
            return [self._image("I", base, message.relid, message.new, None)]
        if isinstance(message, pgoutput.Delete):
            return [self._image("D", base, message.relid, message.old, None)]
        if isinstance(message, pgoutput.Update):
            old = message.old if message.old is not None else message.new
            before = self._image("D", base, message.relid, old, None)
            after = self._image("I", base + 1, message.relid, message.new, old)
            return [
                dataclasses.replace(before, update_before=True),
                dataclasses.replace(after, update_after=True),
            ]
        return []  # truncates are not captured by ASN either

    def _image(
        self,
        operation: str,
        intent: int,
        relid: int,
        values: Sequence[pgoutput.TupleValue],
        fallback: Sequence[pgoutput.TupleValue] | None,
    ) -> RowImage:
        """A row image; an unchanged TOAST value takes the before image's value."""
        relation = self._relations[relid]
        row: dict[str, str | None] = {}
        for index, column in enumerate(relation.columns):
            value = values[index]
            if value is pgoutput.UNCHANGED_TOAST:
                value = fallback[index] if fallback is not None else None
            row[column.name] = value if isinstance(value, str) else None
        return RowImage(operation, intent, relation.namespace, relation.name, row)


class CaptureAgent:
    """The capture agent's thread (see the module docstring)."""

    def __init__(self, dsn: str, *, slot: str, publication: str, sleep_s: float) -> None:
        self._dsn = dsn
        self._slot = slot
        self._publication = publication
        self._sleep_s = sleep_s
        self._decoder = ChangeDecoder()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._progress = threading.Condition()
        self.covered_lsn = 0
        """Every transaction committed before this PostgreSQL LSN has been captured."""
        #: The registrations captured, by source table, as of the last start or reinit.
        self._captured: dict[tuple[str, str], Registration] = {}
        self._started = False
        self.follow_capture_parameters = False
        """Sleep ``IBMSNAP_CAPPARMS.SLEEP_INTERVAL`` seconds between cycles, as asncap (the
        default cycle is ``sleep_s``, far shorter, to keep the tests fast)."""
        self.split_rows: int | None = None
        """Write a transaction of more rows than this across two capture commits: the first
        rows in one cycle (no synchpoint moves), the rest with the synchpoints later."""
        self.release_partial = threading.Event()
        """Clear it to hold a split transaction's second part until it is set again."""
        self.release_partial.set()
        #: (commit LSN, rows written) of a transaction whose first part is in the CD tables.
        self._partial: tuple[int, int] | None = None
        self.cycles = 0
        self.last_error: BaseException | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """Run the agent's thread (idempotent)."""
        if self._thread is not None and self._thread.is_alive():
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="db2-emulation-asncap", daemon=True)
        self._thread.start()

    def close(self, timeout_s: float = 10.0) -> None:
        """Stop the thread and wait for it."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
            self._thread = None

    def wait_for(self, lsn: int, timeout_s: float) -> bool:
        """Whether the agent covered ``lsn`` within ``timeout_s``."""
        with self._progress:
            return self._progress.wait_for(lambda: self.covered_lsn >= lsn, timeout_s)

    def wait_cycles(self, count: int, timeout_s: float) -> bool:
        """Whether ``count`` more cycles completed within ``timeout_s``."""
        with self._progress:
            target = self.cycles + count
            return self._progress.wait_for(lambda: self.cycles >= target, timeout_s)

    def _run(self) -> None:
        conn: PgConnection | None = None
        while not self._stop.is_set():
            try:
                if conn is None or conn.closed:
                    conn = psycopg.connect(self._dsn, autocommit=True)
                self._cycle(conn)
                self.last_error = None
            except Exception as error:  # keep capturing: a later cycle may succeed
                if self.last_error is None or str(self.last_error) != str(error):
                    log.warning("db2 emulation: capture cycle failed: %s", error)
                self.last_error = error
                if conn is not None:
                    conn.close()
                conn = None
            self._stop.wait(self._cycle_pause(conn))
        if conn is not None:
            conn.close()

    # -- one cycle ---------------------------------------------------------------------------

    def _cycle_pause(self, conn: PgConnection | None) -> float:
        if not self.follow_capture_parameters or conn is None or conn.closed:
            return self._sleep_s
        try:
            row = conn.execute(
                'SELECT "SLEEP_INTERVAL" FROM "ASNCDC"."IBMSNAP_CAPPARMS"'
            ).fetchone()
        except psycopg.Error:  # the next cycle reconnects
            return self._sleep_s
        return float(row[0]) if row is not None else self._sleep_s

    def _cycle(self, conn: PgConnection) -> None:
        requested, reinits_pending = self._wishes(conn)
        if requested != "started":
            self._started = False
            conn.execute(
                """UPDATE "ASNCDC"."EMULATION_AGENT" SET "ACTUAL_STATE" = 'stopped'"""
                """ WHERE "ACTUAL_STATE" <> 'stopped'"""
            )
            return
        if not self._started and self._cold_start_requested(conn):
            self._cold_start(conn)
        conn.execute("SELECT pg_logical_emit_message(false, %s, 'cycle')", (MARKER_PREFIX,))
        peeked = self._peek(conn)
        if self._write_first_part(conn, peeked) or not self._may_finish_partial():
            return
        with conn.transaction():
            self._forget_dropped(conn)
            captured_to = self._capture(conn, peeked.transactions)
            if reinits_pending or not self._started:
                self._load_registrations(conn, captured_to)
            conn.execute(
                """UPDATE "ASNCDC"."EMULATION_AGENT" SET "ACTUAL_STATE" = 'started',"""
                """ "LAST_CYCLE" = now(), "REINITS_DONE" = "REINITS_DONE" + %s""",
                (reinits_pending,),
            )
        if self._partial is not None and self._partial[0] <= captured_to:
            self._partial = None  # its second part is committed
        self._started = True
        self._advance_slot(conn, peeked)
        with self._progress:
            self.covered_lsn = max(self.covered_lsn, peeked.marker_lsn)
            self.cycles += 1
            self._progress.notify_all()

    def _write_first_part(self, conn: PgConnection, peeked: PeekResult) -> bool:
        """With ``split_rows``: the first rows of the next large transaction, committed on
        their own (the synchpoints stay behind it). Whether it wrote them."""
        if self.split_rows is None or self._partial is not None:
            return False
        row = conn.execute(
            """SELECT "SYNCHPOINT" FROM "ASNCDC"."IBMSNAP_REGISTER" WHERE "GLOBAL_RECORD" = 'Y'"""
        ).fetchone()
        synchpoint = lsn_int(row[0]) if row is not None else 0
        for transaction in peeked.transactions:
            if transaction.commit_lsn > synchpoint and len(transaction.rows) > self.split_rows:
                first = dataclasses.replace(transaction, rows=transaction.rows[: self.split_rows])
                with conn.transaction():
                    self._write_transaction(conn, first)
                self._partial = (transaction.commit_lsn, self.split_rows)
                return True
        return False

    def _may_finish_partial(self) -> bool:
        return self._partial is None or self.release_partial.is_set()

    def _cold_start_requested(self, conn: PgConnection) -> bool:
        row = conn.execute('SELECT "STARTMODE" FROM "ASNCDC"."IBMSNAP_CAPPARMS"').fetchone()
        return row is not None and str(row[0]).strip().upper() == "COLD"

    def _cold_start(self, conn: PgConnection) -> None:
        """asncap's cold start: the CD tables are emptied, the log read so far is skipped
        (what was committed while the agent was down is never captured) and every
        registration starts capturing afresh at the next cycle (a new CD_OLD_SYNCHPOINT).
        STARTMODE goes back to WARMSI, so only this start is cold."""
        log.warning("db2 emulation: cold start")
        end = conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()
        assert end is not None
        conn.execute(
            "SELECT pg_replication_slot_advance(%s, %s::pg_lsn)", (self._slot, str(end[0]))
        )
        with conn.transaction():
            for cd_owner, cd_table in conn.execute(
                """SELECT "CD_OWNER", "CD_TABLE" FROM "ASNCDC"."IBMSNAP_REGISTER" """
                """WHERE "GLOBAL_RECORD" = 'N' """
                """AND to_regclass(format('%I.%I', "CD_OWNER", "CD_TABLE")) IS NOT NULL"""
            ).fetchall():
                conn.execute(sql.SQL("DELETE FROM {}").format(sql.Identifier(cd_owner, cd_table)))
            conn.execute(
                """UPDATE "ASNCDC"."IBMSNAP_REGISTER" SET "SYNCHPOINT" = %s"""
                """ WHERE "GLOBAL_RECORD" = 'Y'""",
                (lsn_bytes(pgoutput.parse_lsn(str(end[0]))),),
            )
            conn.execute(
                """UPDATE "ASNCDC"."IBMSNAP_REGISTER" SET "CD_OLD_SYNCHPOINT" = NULL,"""
                """ "CD_NEW_SYNCHPOINT" = NULL WHERE "GLOBAL_RECORD" = 'N'"""
            )
            conn.execute("""UPDATE "ASNCDC"."IBMSNAP_CAPPARMS" SET "STARTMODE" = 'WARMSI'""")
        self._captured = {}

    def _wishes(self, conn: PgConnection) -> tuple[str, int]:
        """What ASNCDCSERVICES asked: the state, and how many reinits are pending."""
        row = conn.execute(
            """SELECT "REQUESTED_STATE", "REINITS_REQUESTED" - "REINITS_DONE" """
            """FROM "ASNCDC"."EMULATION_AGENT" """
        ).fetchone()
        assert row is not None
        return str(row[0]), int(str(row[1]))

    def _peek(self, conn: PgConnection) -> PeekResult:
        rows = conn.execute(
            "SELECT lsn::text, data FROM pg_logical_slot_peek_binary_changes("
            "%s, NULL, NULL, 'proto_version', '1', 'publication_names', %s, 'messages', 'true')",
            (self._slot, self._publication),
        ).fetchall()
        messages = [(pgoutput.parse_lsn(str(lsn)), bytes(data)) for lsn, data in rows]
        return self._decoder.decode(messages)

    def _capture(
        self,
        conn: PgConnection,
        transactions: list[CommittedTransaction],
    ) -> int:
        """Write the new transactions' CD rows, each table's ``CD_NEW_SYNCHPOINT`` and the
        global row; the new SYNCHPOINT."""
        row = conn.execute(
            """SELECT "SYNCHPOINT" FROM "ASNCDC"."IBMSNAP_REGISTER" """
            """WHERE "GLOBAL_RECORD" = 'Y' FOR UPDATE"""
        ).fetchone()
        synchpoint = lsn_int(row[0]) if row is not None else 0
        newest: dict[tuple[str, str], int] = {}
        for transaction in transactions:
            if transaction.commit_lsn <= synchpoint or not transaction.rows:
                continue
            newest.update(self._write_transaction(conn, transaction))
            synchpoint = transaction.commit_lsn
        for (owner, table), commit in newest.items():
            conn.execute(
                """UPDATE "ASNCDC"."IBMSNAP_REGISTER" SET "CD_NEW_SYNCHPOINT" = %s"""
                """ WHERE "SOURCE_OWNER" = %s AND "SOURCE_TABLE" = %s""",
                (lsn_bytes(commit), owner, table),
            )
        conn.execute(
            """UPDATE "ASNCDC"."IBMSNAP_REGISTER" SET "SYNCHPOINT" = %s,"""
            """ "SYNCHTIME" = localtimestamp WHERE "GLOBAL_RECORD" = 'Y'""",
            (lsn_bytes(synchpoint),),
        )
        return synchpoint

    def _load_registrations(self, conn: PgConnection, synchpoint: int) -> None:
        """Start or reinit: read the active registrations and their CD tables' columns; one
        not captured before starts capturing after ``synchpoint`` (its CD_OLD_SYNCHPOINT)."""
        rows = conn.execute(
            """SELECT r."SOURCE_OWNER", r."SOURCE_TABLE", r."CD_OWNER", r."CD_TABLE","""
            """ r."CD_OLD_SYNCHPOINT", r."CHG_UPD_TO_DEL_INS","""
            """ ARRAY(SELECT a.attname::text FROM pg_attribute a"""
            """  WHERE a.attrelid = to_regclass(format('%I.%I', r."CD_OWNER", r."CD_TABLE"))"""
            """  AND a.attnum > 0 AND NOT a.attisdropped),"""
            """ ARRAY(SELECT c."COLNAME"::text FROM "SYSCAT"."COLUMNS" c"""
            """  WHERE c."TABSCHEMA" = r."SOURCE_OWNER" AND c."TABNAME" = r."SOURCE_TABLE" """
            """  AND c."TYPENAME" IN ('CLOB', 'DBCLOB', 'BLOB', 'XML'))"""
            """ FROM "ASNCDC"."IBMSNAP_REGISTER" r"""
            """ WHERE r."GLOBAL_RECORD" = 'N' AND r."STATE" = 'A'"""
        ).fetchall()
        loaded: dict[tuple[str, str], Registration] = {}
        for owner, table, cd_owner, cd_table, start, split, columns, not_copied in rows:
            if not columns:
                continue  # no CD table: nothing to capture into
            key = (str(owner), str(table))
            begins = lsn_int(start) if start is not None else None
            if key not in self._captured or begins is None:
                begins = synchpoint
                conn.execute(
                    """UPDATE "ASNCDC"."IBMSNAP_REGISTER" SET "CD_OLD_SYNCHPOINT" = %s,"""
                    """ "CD_NEW_SYNCHPOINT" = %s, "STATE_TIME" = now()"""
                    """ WHERE "SOURCE_OWNER" = %s AND "SOURCE_TABLE" = %s""",
                    (lsn_bytes(synchpoint), lsn_bytes(synchpoint), *key),
                )
            loaded[key] = Registration(
                str(cd_owner),
                str(cd_table),
                begins,
                frozenset(columns),
                updates_split=str(split).strip().upper() != "N",
                not_copied=frozenset(not_copied),
            )
        self._captured = loaded

    def _forget_dropped(self, conn: PgConnection) -> None:
        """Stop writing CD tables that no longer exist (REMOVETABLE without a reinit)."""
        if not self._captured:
            return
        keys = list(self._captured)
        names = [f'"{r.cd_owner}"."{r.cd_table}"' for r in self._captured.values()]
        rows = conn.execute(
            "SELECT name FROM unnest(%s::text[]) AS name WHERE to_regclass(name) IS NULL",
            (names,),
        ).fetchall()
        gone = {str(row[0]) for row in rows}
        for key, name in zip(keys, names, strict=True):
            if name in gone:
                del self._captured[key]

    def _write_transaction(
        self, conn: PgConnection, transaction: CommittedTransaction
    ) -> dict[tuple[str, str], int]:
        """Write one transaction's CD rows; the tables written, with the commit LSN."""
        commit = lsn_bytes(transaction.commit_lsn)
        logmarker = datetime.fromtimestamp(
            pgoutput.to_unix_us(transaction.commit_time_us) / 1_000_000, UTC
        ).replace(tzinfo=None)
        written: dict[tuple[str, str], int] = {}
        rows = transaction.rows
        if self._partial is not None and self._partial[0] == transaction.commit_lsn:
            rows = rows[self._partial[1] :]  # the first part was written in an earlier cycle
        for image in rows:
            key = (image.schema, image.table)
            registration = self._captured.get(key)
            if registration is None or transaction.commit_lsn <= (registration.start or 0):
                continue
            operation = image.operation
            if image.update_before and not registration.updates_split:
                continue  # stored as one U row: the after image alone
            if image.update_after and not registration.updates_split:
                operation = "U"
            columns = [name for name in image.values if name in registration.columns]
            statement = sql.SQL(
                'INSERT INTO {} ("IBMSNAP_COMMITSEQ", "IBMSNAP_INTENTSEQ", "IBMSNAP_OPERATION",'
                ' "IBMSNAP_LOGMARKER"{}) VALUES (%s, %s, %s, %s{})'
            ).format(
                sql.Identifier(registration.cd_owner, registration.cd_table),
                sql.SQL("").join(sql.SQL(", ") + sql.Identifier(name) for name in columns),
                sql.SQL("").join(sql.SQL(", %s") for _ in columns),
            )
            values = [
                None if name in registration.not_copied else image.values[name] for name in columns
            ]
            conn.execute(
                statement, [commit, lsn_bytes(image.intent), operation, logmarker, *values]
            )
            written[key] = transaction.commit_lsn
        return written

    def _advance_slot(self, conn: PgConnection, peeked: PeekResult) -> None:
        """Confirm to the slot everything this cycle read completely (after the commit)."""
        ends = [t.end_lsn for t in peeked.transactions]
        target = max([peeked.marker_lsn, *ends])
        row = conn.execute(
            "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = %s",
            (self._slot,),
        ).fetchone()
        confirmed = pgoutput.parse_lsn(str(row[0])) if row is not None and row[0] else 0
        if target > confirmed:
            conn.execute(
                "SELECT pg_replication_slot_advance(%s, %s::pg_lsn)",
                (self._slot, pgoutput.format_lsn(target)),
            )
