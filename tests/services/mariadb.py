"""The test suite's MariaDB: the shipped launcher (:mod:`cdcflow.operator.devservices.mariadb`,
which ``cdcflow demo --source mariadb`` uses too) and SQL helpers for tests."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from cdcflow.operator.devservices.mariadb import (
    CDC_PRIVILEGES,
    DATABASE,
    MariaDbServer,
    ensure_installed,
    running_mariadb,
)

__all__ = [
    "CDC_PRIVILEGES",
    "DATABASE",
    "MariaDbServer",
    "ensure_installed",
    "query",
    "run_sql",
    "running_mariadb",
]


def run_sql(server: MariaDbServer, *statements: str) -> None:
    """Run ``statements`` in order on one root connection to the test database (autocommit,
    so ``START TRANSACTION`` … ``COMMIT`` groups what is between)."""
    with _root_cursor(server) as cursor:
        for statement in statements:
            cursor.execute(statement)


def query(server: MariaDbServer, statement: str) -> list[tuple[object, ...]]:
    """The rows of ``statement``, run as root in the test database."""
    with _root_cursor(server) as cursor:
        cursor.execute(statement)
        return list(cursor.fetchall())


@contextlib.contextmanager
def _root_cursor(server: MariaDbServer) -> Iterator[Any]:
    import pymysql  # the mysql extra; the server launcher itself needs no driver

    settings = server.connection_settings()
    with (
        pymysql.connect(
            host=str(settings["host"]),
            port=int(settings["port"]),
            user=str(settings["user"]),
            password=str(settings["password"]),
            database=server.database,
            autocommit=True,
        ) as conn,
        conn.cursor() as cursor,
    ):
        yield cursor
