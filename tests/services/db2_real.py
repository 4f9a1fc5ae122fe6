"""A real Db2 for the Db2 tests, when ``CDCFLOW_DB2_DSN`` names one.

No Db2 server can run on the project's machines, so the suite runs against the emulation
(:mod:`tests.services.db2_emulation`) by default. A user with Db2 11.5 LUW set up as
docs/db2.md describes (the ASN control tables, Debezium's ``ASNCDC`` routines, ``asncap``
started) sets ``CDCFLOW_DB2_DSN=db2://user:password@host:50000/TESTDB`` and the conformance
suite and the portable Db2 tests run against that server through IBM's ``ibm_db`` — the same
calls the emulation answers, issued as Db2 SQL. This path cannot be exercised here.
"""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import unquote, urlsplit

from cdcflow.capture.connectors.db2.connection import Connection, Endpoint, connect
from cdcflow.capture.credentials import Login

#: What a wait for the agent allows beyond two of its capture cycles.
CAPTURE_GRACE_S = 2.0


class RealDb2:
    """The Db2 named by a ``db2://user:password@host:port/database`` URL."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        if parts.scheme != "db2" or not parts.hostname or not parts.path.strip("/"):
            raise ValueError("CDCFLOW_DB2_DSN must look like db2://user:password@host:50000/TESTDB")
        self.host = parts.hostname
        self.port = parts.port or 50000
        self.database = parts.path.strip("/")
        self.login = Login(unquote(parts.username or ""), unquote(parts.password or ""))
        self.driver_properties: dict[str, str] = {}

    @property
    def source(self) -> dict[str, Any]:
        return {"db2": {"host": self.host, "port": self.port, "database": self.database}}

    def _connect(self) -> Connection:
        endpoint = Endpoint(
            host=self.host,
            port=self.port,
            database=self.database,
            user=self.login.user,
            password=self.login.password,
        )
        return connect(endpoint)

    def execute(self, *statements: str) -> None:
        """Each statement committed on its own."""
        with self._connect() as conn:
            for statement in statements:
                conn.execute(statement)
                conn.commit()

    def execute_atomically(self, *statements: str) -> None:
        with self._connect() as conn:
            for statement in statements:
                conn.execute(statement)
            conn.commit()

    def query(self, statement: str, params: tuple[Any, ...] | None = None) -> list[tuple[Any, ...]]:
        with self._connect() as conn:
            return conn.query(statement, params or ())

    def ensure_schema(self, schema: str) -> None:
        if not self.query("SELECT 1 FROM SYSCAT.SCHEMATA WHERE SCHEMANAME = ?", (schema,)):
            self.execute(f'CREATE SCHEMA "{schema}"')

    def add_table(self, schema: str, table: str, *, timeout_s: float = 60.0) -> None:
        """Debezium's ``ASNCDC.ADDTABLE`` and a reinit; returns once the registration is
        active."""
        self.execute(
            f"CALL ASNCDC.ADDTABLE('{schema}', '{table}')",
            "VALUES ASNCDC.ASNCDCSERVICES('reinit','asncdc')",
        )
        deadline = time.monotonic() + timeout_s
        while self._state(schema, table) != "A":
            if time.monotonic() > deadline:
                raise TimeoutError(f"{schema}.{table} did not enter capture mode")
            time.sleep(0.5)

    def remove_table(self, schema: str, table: str) -> None:
        self.execute(
            f"CALL ASNCDC.REMOVETABLE('{schema}', '{table}')",
            "VALUES ASNCDC.ASNCDCSERVICES('reinit','asncdc')",
        )

    def mark(self, schema: str, table: str, state: str) -> None:
        """Mark a registration ACTIVE (``'A'``) or INACTIVE (``'I'``) in the register."""
        self.execute(
            f"UPDATE ASNCDC.IBMSNAP_REGISTER SET STATE = '{state}' "
            f"WHERE SOURCE_OWNER = '{schema}' AND SOURCE_TABLE = '{table}'"
        )

    def reinit_and_wait(self, *, timeout_s: float = 60.0) -> None:
        """Reinitialise the agent and wait two of its capture cycles."""
        self.execute("VALUES ASNCDC.ASNCDCSERVICES('reinit','asncdc')")
        self.wait_captured(timeout_s)

    def wait_captured(self, timeout_s: float = 60.0) -> None:
        """Wait two of the agent's capture cycles: what was committed is then captured."""
        commit_s, sleep_s = self.query(
            "SELECT COMMIT_INTERVAL, SLEEP_INTERVAL FROM ASNCDC.IBMSNAP_CAPPARMS"
        )[0]
        time.sleep(min(timeout_s, 2 * (int(commit_s) + int(sleep_s)) + CAPTURE_GRACE_S))

    def _state(self, schema: str, table: str) -> str | None:
        rows = self.query(
            "SELECT STATE FROM ASNCDC.IBMSNAP_REGISTER WHERE SOURCE_OWNER = ? "
            "AND SOURCE_TABLE = ? AND GLOBAL_RECORD = 'N'",
            (schema, table),
        )
        return str(rows[0][0]).strip() if rows else None
