"""Fixture plugin: one real PostgreSQL server per test session, ready for logical replication."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from cdcflow.operator.devservices import postgres


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[postgres.PostgresServer]:
    """A running PostgreSQL 15+ with wal_level=logical, a superuser and the ``cdc`` role."""
    with postgres.running_postgres() as server:
        yield server


@pytest.fixture(scope="session")
def postgres_without_logical_decoding() -> Iterator[postgres.PostgresServer]:
    """A second server left at ``wal_level=replica``, as many servers are out of the box."""
    with postgres.running_postgres({"wal_level": "replica"}) as server:
        yield server


def run_sql(server: postgres.PostgresServer, *statements: str) -> None:
    """Run statements as the superuser, each committed on its own."""
    with psycopg.connect(server.dsn(), autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement)  # type: ignore[call-overload]


def query_rows(server: postgres.PostgresServer, statement: str) -> list[tuple[Any, ...]]:
    """The rows a query returns, run as the superuser."""
    with psycopg.connect(server.dsn(), autocommit=True) as conn:
        return conn.execute(statement).fetchall()  # type: ignore[call-overload]
