"""Fixture plugin: one real PostgreSQL server per test session, ready for logical replication."""

from __future__ import annotations

from collections.abc import Iterator

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
