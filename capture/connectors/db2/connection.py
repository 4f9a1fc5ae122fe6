"""Connections to Db2 through a DB-API driver, with errors that say what to fix.

The connector speaks to Db2 only through :class:`Connection`, over a PEP 249 driver chosen by
``db2.driver``: ``ibm_db`` (IBM's ``ibm_db_dbi``, the default and the only module here that
imports it) or ``module:attribute`` naming another :class:`Driver`. The test suite's
emulation of Db2 inside PostgreSQL is such a driver; it is never used unless named.

Statements (all in :mod:`.sql`) mark parameters with ``?``, as Db2 does; a driver whose
``paramstyle`` is ``format`` gets them as ``%s`` — the one textual change ever made to a
statement, and statements never contain a literal ``?`` or ``%``.
"""

from __future__ import annotations

import enum
import importlib
import logging
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Protocol, cast

from cdcflow.capture.errors import FatalError, RetriableError, sentence

log = logging.getLogger(__name__)

#: Db2 SQLCODEs of failures a retry can cure: communication errors, the database being
#: started or quiesced, a deadlock or lock timeout, a connection forced off.
RETRIABLE_SQLCODES = frozenset({-30081, -30080, -1224, -1776, -911, -913, -1032, -1035, -30108})
#: Db2 SQLCODEs of a login the server refused (user or password wrong, expired, revoked).
LOGIN_SQLCODES = frozenset({-30082, -1060})
_SQLCODE = re.compile(r"SQLCODE=(-?\d+)")
_SQLSTATE = re.compile(r"SQLSTATE=(\w{5})")


class Isolation(enum.StrEnum):
    """Transaction isolation as JDBC names it; on Db2 these are UR, CS, RS and RR."""

    READ_UNCOMMITTED = "read_uncommitted"
    READ_COMMITTED = "read_committed"
    REPEATABLE_READ = "repeatable_read"
    SERIALIZABLE = "serializable"


@dataclass(frozen=True)
class Endpoint:
    """Where the database listens and how to log in (``database.*`` properties)."""

    host: str
    port: int
    database: str
    user: str
    password: str = ""
    ssl: bool = False
    ssl_ca: str = ""
    connect_timeout_s: float = 30.0
    driver: str = "ibm_db"

    def describe(self) -> str:
        """The endpoint for messages (never the password)."""
        return f"Db2 database {self.database} at {self.host}:{self.port} as {self.user}"


class DbApiCursor(Protocol):
    """The PEP 249 cursor methods used here."""

    description: Sequence[Sequence[Any]] | None

    def execute(self, operation: str, parameters: Sequence[Any] = ...) -> Any: ...

    def fetchmany(self, size: int = ...) -> Sequence[Sequence[Any]]: ...

    def fetchall(self) -> Sequence[Sequence[Any]]: ...

    def close(self) -> None: ...

    @property
    def rowcount(self) -> int: ...


class DbApiConnection(Protocol):
    """The PEP 249 connection methods used here."""

    def cursor(self) -> Any: ...

    def commit(self) -> None: ...

    def rollback(self) -> None: ...

    def close(self) -> None: ...


class Driver(Protocol):
    """A PEP 249 driver for Db2's SQL and what the connector needs beyond PEP 249."""

    paramstyle: str
    """``qmark`` (``?``, ibm_db) or ``format`` (``%s``)."""
    errors: tuple[type[Exception], ...]
    """The driver's exception classes (PEP 249 ``Error`` and what it raises on connect)."""

    def connect(self, endpoint: Endpoint) -> DbApiConnection:
        """A connection with autocommit off."""
        ...

    def set_isolation(self, conn: DbApiConnection, isolation: Isolation) -> None:
        """The isolation of the connection's next transaction."""
        ...


class IbmDbDriver:
    """IBM's ``ibm_db_dbi`` (the CLI driver inside the ``ibm_db`` wheel)."""

    paramstyle = "qmark"

    def __init__(self) -> None:
        import ibm_db
        import ibm_db_dbi

        self._ibm_db = ibm_db
        self._dbi = ibm_db_dbi
        self.errors: tuple[type[Exception], ...] = (ibm_db_dbi.Error, Exception)
        self._levels = {
            Isolation.READ_UNCOMMITTED: ibm_db.SQL_TXN_READ_UNCOMMITTED,
            Isolation.READ_COMMITTED: ibm_db.SQL_TXN_READ_COMMITTED,
            Isolation.REPEATABLE_READ: ibm_db.SQL_TXN_REPEATABLE_READ,
            Isolation.SERIALIZABLE: ibm_db.SQL_TXN_SERIALIZABLE,
        }

    def connect(self, endpoint: Endpoint) -> DbApiConnection:
        settings = {
            "DATABASE": endpoint.database,
            "HOSTNAME": endpoint.host,
            "PORT": str(endpoint.port),
            "PROTOCOL": "TCPIP",
            "UID": endpoint.user,
            "PWD": endpoint.password,
            "CONNECTTIMEOUT": str(max(1, int(endpoint.connect_timeout_s))),
        }
        if endpoint.ssl:
            settings["SECURITY"] = "SSL"
            if endpoint.ssl_ca:
                settings["SSLServerCertificate"] = endpoint.ssl_ca
        dsn = "".join(f"{key}={_dsn_value(value)};" for key, value in settings.items())
        conn = self._dbi.connect(dsn, "", "")
        conn.set_autocommit(False)
        return cast(DbApiConnection, conn)

    def set_isolation(self, conn: DbApiConnection, isolation: Isolation) -> None:
        handle = cast(Any, conn).conn_handler
        self._ibm_db.set_option(
            handle, {self._ibm_db.SQL_ATTR_TXN_ISOLATION: self._levels[isolation]}, 1
        )


def _dsn_value(value: str) -> str:
    """A connection-string value; braces keep ``;`` and ``=`` inside one value."""
    return f"{{{value}}}" if any(c in value for c in ";={}") else value


def load_driver(name: str) -> Driver:
    """The driver ``db2.driver`` names."""
    if name == "ibm_db":
        try:
            return IbmDbDriver()
        except ModuleNotFoundError:
            raise FatalError(
                "the Db2 connector needs IBM's ibm_db driver, which is not installed: "
                "pip install 'cdcflow[db2]' (wheels exist for x86_64 Linux, macOS and Windows)"
            ) from None
    module_name, _, attribute = name.partition(":")
    try:
        driver = getattr(importlib.import_module(module_name), attribute or "DRIVER")
    except (ImportError, AttributeError) as error:
        raise FatalError(
            f"db2.driver={name!r} names no driver ({error}); use ibm_db or module:attribute"
        ) from None
    return cast(Driver, driver)


def sqlcode(error: BaseException) -> int | None:
    """The SQLCODE in a Db2 driver's message (``… SQLSTATE=08001 SQLCODE=-30081``)."""
    found = _SQLCODE.search(str(error))
    return int(found.group(1)) if found else None


#: What ibm_db_dbi puts before Db2's message: ``ibm_db_dbi::ProgrammingError: Statement Execute
#: Failed: [IBM][CLI Driver][DB2/LINUXX8664] ``.
_DRIVER_PREFIX = re.compile(
    r"^(\w+::\w+:\s*)?"
    r"((Statement Execute|Statement prepare|Describe Param|Sending data) Failed:\s*"
    r"|(Fetch Failure|Column binding cannot be done):\s*)?"
    r"(\[[^\]]*\])+\s*",
    re.IGNORECASE,
)


def describe_error(error: BaseException, *, password: str = "") -> str:
    """The driver's message as one sentence, without ibm_db_dbi's class and operation and the
    ``[IBM][CLI Driver]`` prefix, and never with the password in it."""
    text = _DRIVER_PREFIX.sub("", str(error).strip())
    if password:
        text = text.replace(password, "****")
    return sentence(text)


class Connection:
    """One connection: statements with ``?`` parameters, results as tuples of Python values."""

    def __init__(self, driver: Driver, conn: DbApiConnection, endpoint: Endpoint) -> None:
        self.driver = driver
        self._conn = conn
        self._endpoint = endpoint
        self._format = driver.paramstyle == "format"

    def __enter__(self) -> Connection:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _statement(self, sql: str) -> str:
        return sql.replace("?", "%s") if self._format else sql

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Every row of ``sql``."""
        return [tuple(row) for row in self._run(sql, params, lambda c: c.fetchall())]

    def query_named(
        self, sql: str, params: Sequence[Any] = ()
    ) -> tuple[list[str], list[tuple[Any, ...]]]:
        """The column names (as stored: Db2 keeps the case of delimited names) and every
        row of ``sql``."""
        names: list[str] = []

        def fetch(cursor: DbApiCursor) -> list[tuple[Any, ...]]:
            names.extend(str(d[0]) for d in cursor.description or ())
            return [tuple(row) for row in cursor.fetchall()]

        return names, self._run(sql, params, fetch)

    def stream(
        self, sql: str, params: Sequence[Any] = (), *, fetch_size: int = 2000
    ) -> Iterator[tuple[Any, ...]]:
        """The rows of ``sql``, fetched ``fetch_size`` at a time (snapshot scans)."""
        _, rows = self.open(sql, params, fetch_size=fetch_size)
        yield from rows

    def open(
        self, sql: str, params: Sequence[Any] = (), *, fetch_size: int = 2000
    ) -> tuple[list[str], Iterator[tuple[Any, ...]]]:
        """Run ``sql`` now; its column names (upper case) and its rows, fetched
        ``fetch_size`` at a time as they are iterated (several may be open at once)."""
        cursor = self._cursor()
        try:
            self._execute(cursor, sql, params)
        except self.driver.errors as error:
            cursor.close()
            raise self._translate(error, sql) from None
        names = [str(d[0]) for d in cursor.description or ()]
        return names, self._fetch(cursor, sql, fetch_size)

    def _fetch(self, cursor: DbApiCursor, sql: str, fetch_size: int) -> Iterator[tuple[Any, ...]]:
        try:
            while batch := cursor.fetchmany(fetch_size):
                for row in batch:
                    yield tuple(row)
        except self.driver.errors as error:
            raise self._translate(error, sql) from None
        finally:
            cursor.close()

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run a statement; the rows it changed."""
        return int(self._run(sql, params, lambda c: c.rowcount))

    def set_isolation(self, isolation: Isolation) -> None:
        try:
            self.driver.set_isolation(self._conn, isolation)
        except self.driver.errors as error:
            raise self._translate(error, f"set isolation {isolation}") from None

    def commit(self) -> None:
        try:
            self._conn.commit()
        except self.driver.errors as error:
            raise self._translate(error, "COMMIT") from None

    def rollback(self) -> None:
        try:
            self._conn.rollback()
        except self.driver.errors as error:
            raise self._translate(error, "ROLLBACK") from None

    def close(self) -> None:
        try:
            self._conn.close()
        except self.driver.errors as error:  # already gone: nothing left to release
            log.debug("closing the Db2 connection: %s", describe_error(error))

    def _cursor(self) -> DbApiCursor:
        try:
            return cast(DbApiCursor, self._conn.cursor())
        except self.driver.errors as error:
            raise self._translate(error, "cursor") from None

    def _execute(self, cursor: DbApiCursor, sql: str, params: Sequence[Any]) -> None:
        if params:
            cursor.execute(self._statement(sql), tuple(params))
        else:
            cursor.execute(self._statement(sql))

    def _run(self, sql: str, params: Sequence[Any], fetch: Any) -> Any:
        cursor = self._cursor()
        try:
            self._execute(cursor, sql, params)
            return fetch(cursor)
        except self.driver.errors as error:
            raise self._translate(error, sql) from None
        finally:
            cursor.close()

    def _translate(self, error: BaseException, what: str) -> Exception:
        code = sqlcode(error)
        text = describe_error(error, password=self._endpoint.password)
        statement = " ".join(what.split())[:200]
        message = f"{self._endpoint.describe()}: {text} (statement: {statement})"
        if code in RETRIABLE_SQLCODES:
            return RetriableError(message)
        return StatementError(message, sqlcode=code)


class StatementError(FatalError):
    """A statement Db2 refused; ``sqlcode`` tells why (e.g. -204 undefined name, -551 no
    privilege)."""

    def __init__(self, message: str, *, sqlcode: int | None) -> None:
        super().__init__(message)
        self.sqlcode = sqlcode


def connect(endpoint: Endpoint, driver: Driver | None = None) -> Connection:
    """A connection (autocommit off), or an error naming what to fix."""
    driver = driver or load_driver(endpoint.driver)
    if endpoint.ssl_ca and not os.access(endpoint.ssl_ca, os.R_OK):
        raise FatalError(
            f"{endpoint.describe()}: the CA certificate database.ssl.ca={endpoint.ssl_ca} cannot "
            "be read; mount it (spec.source.db2.caSecretName) or fix the path"
        )
    try:
        conn = driver.connect(endpoint)
    except driver.errors as error:
        raise _connect_error(error, endpoint) from None
    return Connection(driver, conn, endpoint)


def _connect_error(error: BaseException, endpoint: Endpoint) -> Exception:
    code = sqlcode(error)
    text = describe_error(error, password=endpoint.password)
    where = endpoint.describe()
    if code in LOGIN_SQLCODES:
        return FatalError(
            f"{where}: the server refused the login: {text} Check the user and password in the "
            "connector's credentials Secret (or CDCFLOW_DATABASE_USER / "
            "CDCFLOW_DATABASE_PASSWORD when running locally)."
        )
    if code == -1013 or code == -30061:
        return FatalError(f"{where}: no such database: {text} Check spec.source.db2.database.")
    if code == -1336:
        return RetriableError(
            f"{where}: the host name does not resolve: {text} Check spec.source.db2.host."
        )
    if code in RETRIABLE_SQLCODES:
        return RetriableError(
            f"cannot reach {where}: {text} Check that Db2 is running and reachable from here, "
            "and that the host and port are right (Db2's default port is 50000)."
        )
    return FatalError(f"cannot connect to {where}: {text}")
