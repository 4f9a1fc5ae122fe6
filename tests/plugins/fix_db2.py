"""Fixture plugin: the emulation of Db2's ASN capture inside the session's PostgreSQL.

No Db2 server can run here, so Db2 connector tests run against
:mod:`tests.services.db2_emulation` (see its docstring for what it can and cannot show).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cdcflow.operator.devservices.postgres import PostgresServer
from tests.services.db2_emulation import Db2Emulation, install


@pytest.fixture(scope="session")
def db2_emulation(postgres_server: PostgresServer) -> Iterator[Db2Emulation]:
    """The Db2 emulation in database ``db2emu``, its capture agent running."""
    emulation = install(postgres_server)
    try:
        yield emulation
    finally:
        emulation.close()
