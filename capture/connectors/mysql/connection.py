"""Connections to MySQL/MariaDB through PyMySQL, with errors that say what to fix.

The one module that imports PyMySQL for SQL (the binlog reader opens its own through the
replication library with :meth:`Endpoint.settings`).
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pymysql
import pymysql.cursors

from cdcflow.capture.errors import FatalError, RetriableError

log = logging.getLogger(__name__)

Connection = pymysql.connections.Connection

#: Any error the server (or the connection to it) raises.
ServerError = pymysql.err.MySQLError

ACCESS_DENIED = 1045
UNKNOWN_DATABASE = 1049
CANNOT_CONNECT = (2002, 2003, 2006, 2013)


@dataclass(frozen=True)
class Endpoint:
    """Where the server listens and how to log in (``database.*`` properties)."""

    host: str
    port: int
    user: str
    password: str = ""
    ssl_mode: str = "preferred"
    ssl_ca: str = ""
    ssl_cert: str = ""
    ssl_key: str = ""
    connect_timeout_s: float = 30.0
    time_zone: str | None = None
    initial_statements: Sequence[str] = ()
    product: str = "MySQL"
    """The server's name in messages: ``MySQL`` or ``MariaDB`` (the source's kind)."""

    def settings(self) -> dict[str, Any]:
        """PyMySQL keyword arguments (also what the binlog reader connects with)."""
        settings: dict[str, Any] = {
            "host": self.host,
            "port": self.port,
            "user": self.user,
            "password": self.password,
            "connect_timeout": max(1, int(self.connect_timeout_s)),
            "charset": "utf8mb4",
        }
        context = self._ssl_context()
        if context is not None:
            settings["ssl"] = context
        return settings

    def _ssl_context(self) -> ssl.SSLContext | None:
        if self.ssl_mode == "disabled" or (self.ssl_mode == "preferred" and not self.ssl_ca):
            return None
        context = ssl.create_default_context(cafile=self.ssl_ca or None)
        context.check_hostname = self.ssl_mode == "verify_identity"
        if self.ssl_mode in ("preferred", "required"):
            context.verify_mode = ssl.CERT_NONE
        if self.ssl_cert:
            context.load_cert_chain(self.ssl_cert, self.ssl_key or None)
        return context


def connect(
    endpoint: Endpoint,
    *,
    autocommit: bool = True,
    conv: Mapping[int, Any] | None = None,
    streaming: bool = False,
) -> Connection:
    """A connection; ``streaming`` reads results row by row (unbuffered) for large scans."""
    options = endpoint.settings()
    if conv is not None:
        options["conv"] = dict(conv)
    if streaming:
        options["cursorclass"] = pymysql.cursors.SSCursor
    try:
        conn = pymysql.connect(**options, autocommit=autocommit)
    except pymysql.err.OperationalError as error:
        raise connection_error(error, endpoint) from None
    with conn.cursor() as cursor:
        if endpoint.time_zone:
            cursor.execute("SET time_zone = %s", (endpoint.time_zone,))
        for statement in endpoint.initial_statements:
            cursor.execute(statement)
    return conn


def connection_error(error: pymysql.err.MySQLError, endpoint: Endpoint) -> Exception:
    """The engine's error for a failed login or connection, never echoing the password."""
    code = error.args[0] if error.args else None
    message = str(error.args[1]) if len(error.args) > 1 else str(error)
    where = f"{endpoint.host}:{endpoint.port}"
    product = endpoint.product
    if code == ACCESS_DENIED:
        return FatalError(
            f"{product} at {where} refused the login of user {endpoint.user!r} ({code}: "
            f"{message}): check the user and password in the credentials Secret (or "
            "CDCFLOW_DATABASE_USER / CDCFLOW_DATABASE_PASSWORD when running locally)"
        )
    if code in CANNOT_CONNECT:
        return RetriableError(
            f"cannot connect to {product} at {where} as {endpoint.user!r} ({code}: {message}). "
            "Check that the server is running and reachable from here: the host name resolves, "
            "the port is the server's (`port` in its configuration), no firewall is in between"
        )
    return FatalError(f"{product} at {where} failed: {code}: {message}")


def query(conn: Connection, statement: str, args: Sequence[Any] | None = None) -> list[Any]:
    """All rows of ``statement``."""
    with conn.cursor() as cursor:
        cursor.execute(statement, args)
        return list(cursor.fetchall())


def query_named(conn: Connection, statement: str) -> list[dict[str, Any]]:
    """All rows of ``statement``, each keyed by its lowercased column names."""
    with conn.cursor() as cursor:
        cursor.execute(statement)
        names = [str(column[0]).lower() for column in cursor.description or ()]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def execute(conn: Connection, statement: str, args: Sequence[Any] | None = None) -> int:
    """Run ``statement``; the affected row count."""
    with conn.cursor() as cursor:
        return int(cursor.execute(statement, args))


def quote(name: str) -> str:
    """A MySQL identifier in backquotes."""
    return "`" + name.replace("`", "``") + "`"


def split_statements(text: str) -> tuple[str, ...]:
    """``database.initial.statements``: ``;``-separated, ``;;`` for a literal semicolon."""
    parts = text.replace(";;", "\0").split(";")
    return tuple(p.replace("\0", ";").strip() for p in parts if p.strip())
