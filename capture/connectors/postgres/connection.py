"""Connections to PostgreSQL: login, session settings, and errors mapped to actionable messages.

Every connection, replication or not, gets the same session settings (``types.SESSION_SETTINGS``)
so values render identically in the snapshot and in the stream. psycopg errors are translated
here into :class:`FatalError` / :class:`RetriableError` whose messages name the fix and never
contain the password.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import psycopg
from psycopg import conninfo, pq

from cdcflow.capture.connectors.postgres import types
from cdcflow.capture.errors import FatalError, RetriableError, sentence

CONNECT_TIMEOUT_S = 10


@dataclass(frozen=True)
class Endpoint:
    """Where the database is and how to log in; the password never shows in repr."""

    host: str
    port: int
    database: str
    user: str
    password: str = field(repr=False)
    sslmode: str = "prefer"
    sslrootcert: str = ""
    initial_statements: tuple[str, ...] = ()
    sslcert: str = ""
    sslkey: str = ""
    sslpassword: str = field(default="", repr=False)
    keepalives: bool = True
    #: ``database.query.timeout.ms``: each statement's limit on SQL connections (0: none).
    query_timeout_ms: int = 0

    def where(self) -> str:
        return f"{self.user}@{self.host}:{self.port}/{self.database}"

    def conninfo(self, *, replication: bool = False, connect_timeout_s: int | None = None) -> str:
        """libpq parameters; SQL (not replication) connections get the statement timeout.

        ``connect_timeout_s`` overrides the default connection timeout (e.g. for the
        validating first connection, ``connection.validation.timeout.ms``).
        """
        settings = dict(types.SESSION_SETTINGS)
        if not replication:
            settings["statement_timeout"] = str(self.query_timeout_ms)
        options = " ".join(f"-c {name}={value}" for name, value in settings.items())
        params: dict[str, str | int] = {
            "host": self.host,
            "port": self.port,
            "dbname": self.database,
            "user": self.user,
            "password": self.password,
            "sslmode": self.sslmode,
            "connect_timeout": connect_timeout_s or CONNECT_TIMEOUT_S,
            "application_name": "cdcflow",
            "options": options,
        }
        if self.sslrootcert:
            params["sslrootcert"] = self.sslrootcert
        for name in ("sslcert", "sslkey", "sslpassword"):
            if getattr(self, name):
                params[name] = getattr(self, name)
        params["keepalives"] = int(self.keepalives)
        if replication:
            params["replication"] = "database"
        return conninfo.make_conninfo("", **params)


def translate(error: Exception, endpoint: Endpoint) -> FatalError | RetriableError:
    """Turn a connection failure into an error that says what to do, without the password."""
    text = str(error)
    for secret in (endpoint.password, endpoint.sslpassword):
        text = text.replace(secret, "***") if secret else text
    lowered = text.lower()
    if "password authentication failed" in lowered or "no password supplied" in lowered:
        return FatalError(
            f"PostgreSQL rejected the login for {endpoint.where()}: password authentication "
            "failed. Check the credentials Secret (or CDCFLOW_DATABASE_USER / "
            "CDCFLOW_DATABASE_PASSWORD when running locally)."
        )
    if "no pg_hba.conf entry" in lowered:
        return FatalError(
            f"PostgreSQL refused {endpoint.where()} by pg_hba.conf: add a `host` entry for this "
            f"user (and a `host replication` entry for streaming). Server said: {text.strip()}"
        )
    if (
        "must be superuser or replication role" in lowered
        or "permission denied to start" in lowered
    ):
        return FatalError(
            f"user {endpoint.user} may not use replication: run "
            f"`ALTER ROLE {endpoint.user} REPLICATION;` as a superuser."
        )
    if 'database "' in lowered and "does not exist" in lowered:
        return FatalError(
            f"database {endpoint.database} does not exist on {endpoint.host}:{endpoint.port}: "
            "check spec.source.postgresql.database (`psql -l` lists the databases), or create it"
        )
    return RetriableError(
        f"cannot connect to PostgreSQL at {endpoint.host}:{endpoint.port} as {endpoint.user}: "
        f"{sentence(text)} Check that the server is running and reachable from here."
    )


def query_timeout_ms(configured_ms: int) -> int:
    """``database.query.timeout.ms`` as Debezium applies it: pgjdbc's ``setQueryTimeout``
    takes whole seconds, so the value is cut to seconds (below 1000: no limit)."""
    return configured_ms // 1000 * 1000


def validation_timeout_s(configured_ms: int) -> int:
    """``connection.validation.timeout.ms`` as a libpq ``connect_timeout``: whole seconds,
    rounded up (libpq treats anything below 2 as 2)."""
    return max(2, -(-configured_ms // 1000))


def connect(
    endpoint: Endpoint, *, autocommit: bool = True, connect_timeout_s: int | None = None
) -> psycopg.Connection[tuple[object, ...]]:
    """A regular SQL connection with the session settings and initial statements applied."""
    try:
        conn = psycopg.connect(
            endpoint.conninfo(connect_timeout_s=connect_timeout_s), autocommit=autocommit
        )
    except psycopg.OperationalError as error:
        raise translate(error, endpoint) from None
    for statement in endpoint.initial_statements:
        conn.execute(statement)
    if not autocommit:
        conn.commit()
    return conn


def split_statements(text: str) -> tuple[str, ...]:
    """``database.initial.statements``: ``;``-separated, ``;;`` for a literal semicolon."""
    parts = text.replace(";;", "\x00").split(";")
    return tuple(part.replace("\x00", ";").strip() for part in parts if part.strip())


def connect_replication(endpoint: Endpoint) -> pq.abc.PGconn:
    """A low-level replication connection (``replication=database``) for COPY BOTH streaming."""
    pgconn = pq.PGconn.connect(endpoint.conninfo(replication=True).encode())
    if pgconn.status != pq.ConnStatus.OK:
        message = pgconn.get_error_message()
        pgconn.finish()
        raise translate(RuntimeError(message), endpoint)
    return pgconn
