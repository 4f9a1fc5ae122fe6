"""The emulation's DB-API driver: psycopg 3 dressed as IBM's ``ibm_db_dbi``.

The Db2 connector loads it through ``db2.driver=tests.services.db2_emulation.driver:DRIVER``.
It keeps to what :class:`cdcflow.capture.connectors.db2.connection.Driver` promises:

* connections with autocommit off, isolation set per connection;
* queries (``SELECT``/``WITH``/``VALUES``) run on server-side cursors, so ``fetchmany`` streams
  a large window instead of loading it, and several may be open on one connection at once;
* errors read like ibm_db_dbi's: ``ibm_db_dbi::ProgrammingError: Statement Execute Failed:
  [IBM][CLI Driver][DB2/LINUXX8664] SQL0204N  … SQLSTATE=42704 SQLCODE=-204``, of the class
  ibm_db_dbi picks by SQLSTATE, with PostgreSQL's SQLSTATE mapped to the Db2 SQLSTATE and
  SQLCODE that Db2 would give, and never the password;
* a BOOLEAN comes back as the integer 0 or 1, as ibm_db returns it;
* the connector's Db2 dialect runs: ``SELECT … WITH CS``/``UR``/``RS``/``RR``, ``SET CURRENT
  LOCK TIMEOUT``, ``SAVEPOINT … ON ROLLBACK RETAIN CURSORS`` and ``LOCK TABLE … IN
  SHARE|EXCLUSIVE MODE`` are translated for PostgreSQL (EXCLUSIVE blocks readers, as Db2's
  does for all but UR), while their PostgreSQL spellings are refused (SQL0104N), and a
  ``ROLLBACK TO SAVEPOINT`` keeps the table locks taken since, as Db2 does.

What it does not reproduce: DECFLOAT as text and BLOB as ``memoryview`` (PostgreSQL reports a
domain's base type, so the driver cannot tell DECFLOAT from DECIMAL nor BLOB from VARBINARY).
"""

from __future__ import annotations

import contextlib
import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import psycopg
from psycopg import pq

from cdcflow.capture.connectors.db2.connection import (
    DbApiConnection,
    Endpoint,
    Isolation,
)

PREFIX = "[IBM][CLI Driver][DB2/LINUXX8664]"


class Error(Exception):
    """PEP 249's ``Error``, printed as ``ibm_db_dbi`` prints it: ``ibm_db_dbi::<Class>: …``."""

    def __str__(self) -> str:
        return f"ibm_db_dbi::{type(self).__name__}: {self.args[0] if self.args else ''}"


class DatabaseError(Error):
    """A statement or the server failed."""


class OperationalError(DatabaseError):
    """The connection failed (login, network, missing database), SQLSTATE class 08."""


class ProgrammingError(DatabaseError):
    """A wrong statement or object (SQLSTATE classes 42, 40, 55, 58, …)."""


class IntegrityError(DatabaseError):
    """A constraint refused the change (SQLSTATE class 23)."""


class DataError(DatabaseError):
    """A value out of range or of the wrong form (SQLSTATE classes 22, 54)."""


class InternalError(DatabaseError):
    """A cursor or transaction state error (SQLSTATE classes 24, 25, 51, 57)."""


#: SQLSTATE class → the class ibm_db_dbi raises (its ``_get_exception``), checked in order.
_CLASSES: tuple[tuple[tuple[str, ...], type[DatabaseError]], ...] = (
    (("02", "22", "54"), DataError),
    (("08", "09"), OperationalError),
    (("23",), IntegrityError),
    (("24", "25", "26", "2D", "51", "57"), InternalError),
    (
        ("07", "10", "21", "27", "28", "34", "38", "39", "40", "42", "44", "53", "55", "56", "58"),
        ProgrammingError,
    ),
)


def error_class(sqlstate: str) -> type[DatabaseError]:
    """The exception class ibm_db_dbi raises for ``sqlstate``."""
    for prefixes, kind in _CLASSES:
        if sqlstate[:2] in prefixes:
            return kind
    return DatabaseError


@dataclass(frozen=True)
class Db2Code:
    """What Db2 says for a failure: its SQLSTATE, SQLCODE and message number."""

    sqlstate: str
    sqlcode: int

    def message(self, text: str) -> str:
        """ibm_db's wording: prefix, ``SQLnnnnN``, text, SQLSTATE and SQLCODE."""
        number = f"SQL{abs(self.sqlcode):04d}N"
        return f"{PREFIX} {number}  {text}  SQLSTATE={self.sqlstate} SQLCODE={self.sqlcode}"

    def statement_error(self, text: str) -> DatabaseError:
        """A failed statement as ibm_db_dbi raises it: ``ibm_db_dbi::ProgrammingError:
        Statement Execute Failed: [IBM][CLI Driver]… SQLSTATE=… SQLCODE=…``."""
        return error_class(self.sqlstate)(f"Statement Execute Failed: {self.message(text)}")


#: PostgreSQL SQLSTATE → what Db2 reports for the same failure.
STATEMENT_CODES: dict[str, Db2Code] = {
    "42P01": Db2Code("42704", -204),  # undefined table
    "42704": Db2Code("42704", -204),  # undefined object
    "3F000": Db2Code("42704", -204),  # undefined schema
    "42883": Db2Code("42884", -440),  # undefined function
    "42703": Db2Code("42703", -206),  # undefined column
    "42501": Db2Code("42501", -551),  # insufficient privilege
    "55P03": Db2Code("40001", -911),  # lock not available (lock timeout)
    "40P01": Db2Code("40001", -911),  # deadlock
    "40001": Db2Code("40001", -911),  # serialization failure
    "23505": Db2Code("23505", -803),  # unique violation
    "23502": Db2Code("23502", -407),  # not null violation
    "23503": Db2Code("23503", -530),  # foreign key violation
    "42601": Db2Code("42601", -104),  # syntax error
    "22P02": Db2Code("22018", -420),  # invalid text representation
    "22003": Db2Code("22003", -413),  # numeric value out of range
    "57014": Db2Code("57014", -952),  # query canceled
    "57P01": Db2Code("08001", -30081),  # admin shutdown
    "08006": Db2Code("08001", -30081),  # connection failure
    "08003": Db2Code("08003", -900),  # connection does not exist
}
LOGIN_REFUSED = Db2Code("08001", -30082)
UNREACHABLE = Db2Code("08001", -30081)
NO_DATABASE = Db2Code("08004", -1013)
GENERIC = Db2Code("58004", -1)

_LOGIN_FAILURE = re.compile(
    r"password authentication failed|role .* does not exist|no password supplied|"
    r"authentication failed",
    re.IGNORECASE,
)
_NO_DATABASE = re.compile(r'database ".*" does not exist', re.IGNORECASE)


def statement_code(sqlstate: str | None) -> Db2Code:
    """The Db2 code of a statement failure with PostgreSQL's ``sqlstate``."""
    if sqlstate is None:
        return UNREACHABLE
    return STATEMENT_CODES.get(sqlstate) or Db2Code(sqlstate, GENERIC.sqlcode)


def connect_code(error: psycopg.Error) -> Db2Code:
    """The Db2 code of a failed connection attempt."""
    text = str(error)
    if error.sqlstate in ("28P01", "28000") or _LOGIN_FAILURE.search(text):
        return LOGIN_REFUSED
    if error.sqlstate == "3D000" or _NO_DATABASE.search(text):
        return NO_DATABASE
    return UNREACHABLE


def _one_line(text: str, password: str) -> str:
    flat = " ".join(text.split())
    return flat.replace(password, "****") if password else flat


def translate(error: psycopg.Error, *, password: str = "") -> DatabaseError:
    """A psycopg failure of a statement as ibm_db would raise it."""
    return statement_code(error.sqlstate).statement_error(_one_line(str(error), password))


#: The Db2 statements the connector sends that PostgreSQL spells otherwise, each translated
#: for the emulation's PostgreSQL; a Db2-only form not listed here is refused as Db2 would
#: refuse PostgreSQL's spelling (SQL0104N), so a mistake in the Db2 dialect cannot pass.
_SCHEMA_LOCK = re.compile(r"^SELECT \* FROM (?P<table>\S+) WHERE 0=1 WITH CS$", re.IGNORECASE)
_ISOLATION_CLAUSE = re.compile(
    r"^(?P<query>SELECT\b.*?)\s+WITH (UR|CS|RS|RR)$", re.IGNORECASE | re.DOTALL
)
_LOCK_TIMEOUT = re.compile(
    r"^SET CURRENT LOCK TIMEOUT (?P<value>WAIT|NOT WAIT|NULL|\d+)$", re.IGNORECASE
)
_SAVEPOINT = re.compile(
    r"^SAVEPOINT (?P<name>\w+)(?P<retain> ON ROLLBACK RETAIN CURSORS)?$", re.IGNORECASE
)
_LOCK_TABLE = re.compile(r"^LOCK TABLE (?P<table>\S+) IN (?P<mode>[A-Z ]+) MODE$", re.IGNORECASE)
_ROLLBACK_TO = re.compile(r"^ROLLBACK TO SAVEPOINT (?P<name>\w+)$", re.IGNORECASE)
SYNTAX_ERROR = Db2Code("42601", -104)


def translate_db2(statement: str) -> list[str]:
    """The PostgreSQL statements that do what the Db2 ``statement`` does."""
    text = statement.strip()
    if found := _SCHEMA_LOCK.match(text):  # reads nothing; the table's intent lock stays
        return [f"LOCK TABLE {found['table']} IN ACCESS SHARE MODE"]
    if found := _ISOLATION_CLAUSE.match(text):
        return [found["query"]]
    if found := _LOCK_TIMEOUT.match(text):  # a session register, in seconds
        value = found["value"].upper()
        named = {"WAIT": "0", "NULL": "0", "NOT WAIT": "1"}
        ms = named[value] if value in named else str(int(value) * 1000)
        return [f"SET lock_timeout = {ms}"]
    if found := _SAVEPOINT.match(text):
        if not found["retain"]:
            raise SYNTAX_ERROR.statement_error(
                f'An unexpected token "END-OF-STATEMENT" was found following "SAVEPOINT '
                f'{found["name"]}". Expected tokens may include: "ON ROLLBACK RETAIN CURSORS".'
            )
        return [f"SAVEPOINT {found['name']}"]
    if found := _LOCK_TABLE.match(text):
        mode = found["mode"].upper()
        if mode not in ("SHARE", "EXCLUSIVE"):
            raise SYNTAX_ERROR.statement_error(
                f'An unexpected token "{found["mode"]}" was found following "IN". Expected '
                'tokens may include: "SHARE EXCLUSIVE".'
            )
        pg_mode = "SHARE" if mode == "SHARE" else "ACCESS EXCLUSIVE"
        return [f"LOCK TABLE {found['table']} IN {pg_mode} MODE"]
    if re.match(r"^SET\s+(LOCAL\s+)?lock_timeout\b", text, re.IGNORECASE):
        raise SYNTAX_ERROR.statement_error('An unexpected token "lock_timeout" was found.')
    return [statement]


_QUERY = re.compile(r"^\s*(\(\s*)*(SELECT|WITH|VALUES)\b", re.IGNORECASE)
_LOCKING = re.compile(r"\bFOR\s+(UPDATE|SHARE|NO\s+KEY\s+UPDATE|KEY\s+SHARE)\b", re.IGNORECASE)
_names = itertools.count(1)


def streams_rows(statement: str) -> bool:
    """Whether ``statement`` is a read whose rows a server-side cursor can stream."""
    return bool(_QUERY.match(statement)) and not _LOCKING.search(statement)


class Cursor:
    """A PEP 249 cursor: queries on a server-side cursor, anything else on a client one."""

    def __init__(self, conn: psycopg.Connection[Any], password: str, locks: HeldLocks) -> None:
        self._conn = conn
        self._password = password
        self._locks = locks
        self._cursor: psycopg.Cursor[Any] | psycopg.ServerCursor[Any] | None = None
        self.arraysize = 1

    @property
    def description(self) -> Sequence[Sequence[Any]] | None:
        return self._cursor.description if self._cursor is not None else None

    @property
    def rowcount(self) -> int:
        return self._cursor.rowcount if self._cursor is not None else -1

    def execute(self, operation: str, parameters: Sequence[Any] = ()) -> Cursor:
        self._release()
        statements = translate_db2(operation)
        try:
            for statement in statements:
                self._run(statement, parameters)
        except psycopg.Error as error:
            raise translate(error, password=self._password) from None
        self._locks.track(operation, statements, self._conn)
        return self

    def _run(self, statement: str, parameters: Sequence[Any]) -> None:
        if streams_rows(statement):
            self._cursor = self._conn.cursor(name=f"db2emu_{next(_names)}")
        else:
            self._cursor = self._conn.cursor()
        self._cursor.execute(cast(Any, statement), tuple(parameters) or None)

    def fetchone(self) -> tuple[Any, ...] | None:
        return cast("tuple[Any, ...] | None", self._call(lambda c: c.fetchone()))

    def fetchmany(self, size: int = 0) -> list[tuple[Any, ...]]:
        count = size or self.arraysize
        return cast("list[tuple[Any, ...]]", self._call(lambda c: c.fetchmany(count)))

    def fetchall(self) -> list[tuple[Any, ...]]:
        return cast("list[tuple[Any, ...]]", self._call(lambda c: c.fetchall()))

    def close(self) -> None:
        self._release()

    def _call(self, fetch: Any) -> Any:
        if self._cursor is None:
            raise Error("no statement was executed on this cursor")
        try:
            return fetch(self._cursor)
        except psycopg.Error as error:
            raise translate(error, password=self._password) from None

    def _release(self) -> None:
        """Close the previous statement's cursor (a server cursor in an aborted or finished
        transaction is already gone)."""
        cursor, self._cursor = self._cursor, None
        if cursor is None:
            return
        with contextlib.suppress(psycopg.Error):
            cursor.close()


class HeldLocks:
    """The table locks of a connection's transaction. Db2 keeps the locks taken after a
    savepoint when the transaction rolls back to it (PostgreSQL releases them), so the
    emulation takes them again after a ``ROLLBACK TO SAVEPOINT``."""

    def __init__(self) -> None:
        self._locks: list[str] = []

    def track(self, operation: str, statements: list[str], conn: psycopg.Connection[Any]) -> None:
        if _ROLLBACK_TO.match(operation.strip()):
            for lock in self._locks:
                conn.execute(cast(Any, lock))
        self._locks.extend(s for s in statements if s.upper().startswith("LOCK TABLE"))

    def clear(self) -> None:
        self._locks.clear()


class Connection:
    """A PEP 249 connection over one psycopg connection (autocommit off)."""

    def __init__(self, conn: psycopg.Connection[Any], password: str) -> None:
        self.raw = conn
        self._password = password
        self._locks = HeldLocks()

    def cursor(self) -> Cursor:
        if self.raw.closed:
            raise UNREACHABLE.statement_error("the connection is closed")
        return Cursor(self.raw, self._password, self._locks)

    def commit(self) -> None:
        self._locks.clear()
        self._run(self.raw.commit)

    def rollback(self) -> None:
        self._locks.clear()
        self._run(self.raw.rollback)

    def close(self) -> None:
        self.raw.close()

    def _run(self, action: Any) -> None:
        try:
            action()
        except psycopg.Error as error:
            raise translate(error, password=self._password) from None


class BooleanAsInteger(psycopg.adapt.Loader):
    """ibm_db returns a BOOLEAN as the integer 0 or 1, not as a Python bool."""

    def load(self, data: Any) -> int:
        return 1 if bytes(data) in (b"t", b"\x01") else 0


_ISOLATION = {
    Isolation.READ_UNCOMMITTED: psycopg.IsolationLevel.READ_UNCOMMITTED,
    Isolation.READ_COMMITTED: psycopg.IsolationLevel.READ_COMMITTED,
    Isolation.REPEATABLE_READ: psycopg.IsolationLevel.REPEATABLE_READ,
    Isolation.SERIALIZABLE: psycopg.IsolationLevel.SERIALIZABLE,
}


class EmulationDriver:
    """The :class:`~cdcflow.capture.connectors.db2.connection.Driver` of the emulation."""

    paramstyle = "format"
    #: as the real driver's: a binding mistake surfaces as a statement error, not raw
    errors: tuple[type[Exception], ...] = (Error, Exception)

    def connect(self, endpoint: Endpoint) -> DbApiConnection:
        """A connection with autocommit off; failures carry Db2's SQLCODE."""
        try:
            conn = psycopg.connect(
                host=endpoint.host,
                port=endpoint.port,
                dbname=endpoint.database,
                user=endpoint.user,
                password=endpoint.password,
                connect_timeout=max(1, int(endpoint.connect_timeout_s)),
                sslmode="require" if endpoint.ssl else "prefer",
                autocommit=False,
            )
        except psycopg.Error as error:
            code = connect_code(error)
            text = _one_line(str(error), endpoint.password)
            raise OperationalError(code.message(text)) from None
        conn.adapters.register_loader("bool", BooleanAsInteger)
        return Connection(conn, endpoint.password)

    def set_isolation(self, conn: DbApiConnection, isolation: Isolation) -> None:
        """The isolation of the connection's next transactions (as ibm_db's set_option)."""
        raw = cast(Connection, conn).raw
        try:
            if raw.info.transaction_status == pq.TransactionStatus.IDLE:
                raw.isolation_level = _ISOLATION[isolation]
            else:
                level = _ISOLATION[isolation].name.replace("_", " ")
                raw.execute(cast(Any, f"SET TRANSACTION ISOLATION LEVEL {level}"))
        except psycopg.Error as error:
            raise translate(error) from None


DRIVER = EmulationDriver()
