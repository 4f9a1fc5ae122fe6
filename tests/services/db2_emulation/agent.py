"""The emulation's capture agent: ASN's ``asncap``, played by PostgreSQL logical decoding.

A daemon thread wakes every ``sleep_s`` and, while ``ASNCDCSERVICES('start')`` is in force:

1. writes a non-transactional logical message (the cycle's *marker*);
2. peeks at the slot's pgoutput changes (``pg_logical_slot_peek_binary_changes``) on the
   publication of the registered source tables, decoded with cdcflow's own pgoutput decoder;
3. in ONE transaction: copies every committed transaction whose commit LSN is past the global
   ``SYNCHPOINT`` into the CD tables of the active registrations (insert → ``I``, delete →
   ``D``, update → ``D`` then ``I``), moves ``SYNCHPOINT`` to the last captured commit and
   ``SYNCHTIME`` to now (every cycle, even idle: asncap's heartbeat) and, on a pending
   ``reinit``, activates the ``STATE='I'`` registrations at the new ``SYNCHPOINT``;
4. after the commit, advances the slot past what it captured (a crash in between re-reads
   those transactions and the ``SYNCHPOINT`` comparison drops them).

LSNs are 16 bytes as Db2 writes them: ``IBMSNAP_COMMITSEQ`` is the commit record's LSN,
``IBMSNAP_INTENTSEQ`` the change record's LSN * 4 + k (k orders an update's ``D`` before its
``I``). Only columns the CD table has are written, as the real agent does after an online
schema change until the CD table gets the new column.
"""

from __future__ import annotations

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


@dataclass(slots=True)
class CommittedTransaction:
    """A transaction decoded from the slot: its commit LSN, commit end and row images."""

    commit_lsn: int = 0
    end_lsn: int = 0
    commit_time_us: int = 0
    rows: list[RowImage] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Registration:
    """An active registration as the agent writes it: its CD table's columns and start."""

    cd_owner: str
    cd_table: str
    start: int
    columns: frozenset[str]


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
            return [
                self._image("D", base, message.relid, old, None),
                self._image("I", base + 1, message.relid, message.new, old),
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
            self._stop.wait(self._sleep_s)
        if conn is not None:
            conn.close()

    # -- one cycle ---------------------------------------------------------------------------

    def _cycle(self, conn: PgConnection) -> None:
        requested, reinits_pending = self._wishes(conn)
        if requested != "started":
            conn.execute(
                """UPDATE "ASNCDC"."EMULATION_AGENT" SET "ACTUAL_STATE" = 'stopped'"""
                """ WHERE "ACTUAL_STATE" <> 'stopped'"""
            )
            return
        conn.execute("SELECT pg_logical_emit_message(false, %s, 'cycle')", (MARKER_PREFIX,))
        peeked = self._peek(conn)
        with conn.transaction():
            captured_to = self._capture(conn, peeked.transactions)
            if reinits_pending:
                self._activate_registrations(conn, captured_to)
            conn.execute(
                """UPDATE "ASNCDC"."EMULATION_AGENT" SET "ACTUAL_STATE" = 'started',"""
                """ "LAST_CYCLE" = now(), "REINITS_DONE" = "REINITS_DONE" + %s""",
                (reinits_pending,),
            )
        self._advance_slot(conn, peeked)
        with self._progress:
            self.covered_lsn = max(self.covered_lsn, peeked.marker_lsn)
            self.cycles += 1
            self._progress.notify_all()

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
        """Write the new transactions' CD rows and the global row; the new SYNCHPOINT."""
        row = conn.execute(
            """SELECT "SYNCHPOINT" FROM "ASNCDC"."IBMSNAP_REGISTER" """
            """WHERE "GLOBAL_RECORD" = 'Y' FOR UPDATE"""
        ).fetchone()
        synchpoint = lsn_int(row[0]) if row is not None else 0
        registrations = self._registrations(conn)
        for transaction in transactions:
            if transaction.commit_lsn <= synchpoint or not transaction.rows:
                continue
            self._write_transaction(conn, transaction, registrations)
            synchpoint = transaction.commit_lsn
        conn.execute(
            """UPDATE "ASNCDC"."IBMSNAP_REGISTER" SET "SYNCHPOINT" = %s,"""
            """ "SYNCHTIME" = localtimestamp WHERE "GLOBAL_RECORD" = 'Y'""",
            (lsn_bytes(synchpoint),),
        )
        return synchpoint

    def _registrations(self, conn: PgConnection) -> dict[tuple[str, str], Registration]:
        """The active registrations whose CD table exists, by source table."""
        rows = conn.execute(
            """SELECT r."SOURCE_OWNER", r."SOURCE_TABLE", r."CD_OWNER", r."CD_TABLE","""
            """ r."CD_NEW_SYNCHPOINT","""
            """ ARRAY(SELECT a.attname::text FROM pg_attribute a"""
            """  WHERE a.attrelid = to_regclass(format('%I.%I', r."CD_OWNER", r."CD_TABLE"))"""
            """  AND a.attnum > 0 AND NOT a.attisdropped)"""
            """ FROM "ASNCDC"."IBMSNAP_REGISTER" r"""
            """ WHERE r."GLOBAL_RECORD" = 'N' AND r."STATE" = 'A'"""
        ).fetchall()
        found: dict[tuple[str, str], Registration] = {}
        for owner, table, cd_owner, cd_table, start, columns in rows:
            if columns:
                found[(str(owner), str(table))] = Registration(
                    str(cd_owner),
                    str(cd_table),
                    lsn_int(start),
                    frozenset(columns),
                )
        return found

    def _write_transaction(
        self,
        conn: PgConnection,
        transaction: CommittedTransaction,
        registrations: dict[tuple[str, str], Registration],
    ) -> None:
        commit = lsn_bytes(transaction.commit_lsn)
        logmarker = datetime.fromtimestamp(
            pgoutput.to_unix_us(transaction.commit_time_us) / 1_000_000, UTC
        ).replace(tzinfo=None)
        for image in transaction.rows:
            registration = registrations.get((image.schema, image.table))
            if registration is None or transaction.commit_lsn <= registration.start:
                continue
            columns = [name for name in image.values if name in registration.columns]
            statement = sql.SQL(
                'INSERT INTO {} ("IBMSNAP_COMMITSEQ", "IBMSNAP_INTENTSEQ", "IBMSNAP_OPERATION",'
                ' "IBMSNAP_LOGMARKER"{}) VALUES (%s, %s, %s, %s{})'
            ).format(
                sql.Identifier(registration.cd_owner, registration.cd_table),
                sql.SQL("").join(sql.SQL(", ") + sql.Identifier(name) for name in columns),
                sql.SQL("").join(sql.SQL(", %s") for _ in columns),
            )
            conn.execute(
                statement,
                [
                    commit,
                    lsn_bytes(image.intent),
                    image.operation,
                    logmarker,
                    *(image.values[name] for name in columns),
                ],
            )

    def _activate_registrations(self, conn: PgConnection, synchpoint: int) -> None:
        """reinit: inactive registrations start capturing after the current SYNCHPOINT."""
        conn.execute(
            """UPDATE "ASNCDC"."IBMSNAP_REGISTER" SET "STATE" = 'A', "STATE_TIME" = now(),"""
            """ "CD_NEW_SYNCHPOINT" = %s WHERE "GLOBAL_RECORD" = 'N' AND "STATE" = 'I'""",
            (lsn_bytes(synchpoint),),
        )

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
