"""Fixture plugin: the Db2 the Db2 tests run against.

No Db2 server can run here, so by default that is :mod:`tests.services.db2_emulation`, the
emulation of Db2's ASN capture inside the session's PostgreSQL (see its docstring for what it
can and cannot show). With ``CDCFLOW_DB2_DSN=db2://user:password@host:50000/TESTDB`` the
conformance suite and the portable Db2 tests run against that real Db2 instead
(:mod:`tests.services.db2_real`); tests that reach into the emulation itself then skip.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any, Protocol

import pytest

from cdcflow.capture.credentials import Login
from cdcflow.operator.devservices.postgres import PostgresServer
from tests.services.db2_emulation import Db2Emulation, install
from tests.services.db2_real import RealDb2

REAL_DB2_VARIABLE = "CDCFLOW_DB2_DSN"


class Db2Server(Protocol):
    """What the Db2 tests ask of a Db2, emulated or real."""

    database: str

    @property
    def login(self) -> Login: ...

    @property
    def source(self) -> dict[str, Any]:
        """``spec.source`` of a CdcConnector on it."""
        ...

    @property
    def driver_properties(self) -> dict[str, str]:
        """Connector properties that choose its driver (none for ibm_db)."""
        ...

    def execute(self, *statements: str) -> None: ...

    def execute_atomically(self, *statements: str) -> None: ...

    def query(
        self, statement: str, params: tuple[Any, ...] | None = None
    ) -> list[tuple[Any, ...]]: ...

    def ensure_schema(self, schema: str) -> None: ...

    def add_table(self, schema: str, table: str, *, timeout_s: float = ...) -> None: ...

    def remove_table(self, schema: str, table: str) -> None: ...

    def mark(self, schema: str, table: str, state: str) -> None:
        """Mark a registration ``'A'`` or ``'I'`` (the schema procedures' step)."""
        ...

    def reinit_and_wait(self, *, timeout_s: float = ...) -> None:
        """``ASNCDCSERVICES('reinit')``, returning once the agent has done it."""
        ...

    def wait_captured(self, timeout_s: float = ...) -> None: ...


@pytest.fixture(scope="session")
def db2_emulation(postgres_server: PostgresServer) -> Iterator[Db2Emulation]:
    """The Db2 emulation in database ``db2emu``, its capture agent running."""
    if os.environ.get(REAL_DB2_VARIABLE):
        pytest.skip(f"reaches into the emulation; {REAL_DB2_VARIABLE} names a real Db2")
    emulation = install(postgres_server)
    try:
        yield emulation
    finally:
        emulation.close()


@pytest.fixture(scope="session")
def db2_server(request: pytest.FixtureRequest) -> Db2Server:
    """The real Db2 ``CDCFLOW_DB2_DSN`` names, else the emulation."""
    url = os.environ.get(REAL_DB2_VARIABLE)
    if url:
        return RealDb2(url)
    emulation: Db2Emulation = request.getfixturevalue("db2_emulation")
    return emulation
