"""Fixture plugin: one real MariaDB server per test session, ready for binlog CDC."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.services import mariadb


@pytest.fixture(scope="session")
def mariadb_server() -> Iterator[mariadb.MariaDbServer]:
    """A running MariaDB 10.11 with a ROW/FULL/FULL binlog, GTIDs, root and the ``cdc`` user."""
    with mariadb.running_mariadb() as server:
        yield server
