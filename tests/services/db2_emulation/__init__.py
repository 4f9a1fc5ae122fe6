"""An emulation of Db2's ASN SQL-replication capture, played inside PostgreSQL.

**This is a stand-in, not Db2.** No Db2 server can run on the project's machines (IBM ships
it only as a container image and an installer, and the ``ibm_db`` driver speaks only DRDA), so
the Db2 connector is tested against this emulation in the test suite's real PostgreSQL:

* ``install.sql`` creates, in a dedicated database, the objects the connector reads under
  their Db2 names — ``"ASNCDC"."IBMSNAP_REGISTER"``/``"IBMSNAP_CAPPARMS"``, the CD tables,
  ``"SYSCAT"."TABLES"``/``"COLUMNS"``, ``"SYSIBM"."SYSDUMMY1"`` — and Debezium's management
  routines ``ASNCDC.ADDTABLE``/``REMOVETABLE``/``ASNCDCSERVICES``;
* :mod:`.agent` plays ``asncap``: it reads PostgreSQL's log through logical decoding and
  writes committed changes into the CD tables in commit order, asynchronously;
* :mod:`.driver` is the DB-API driver the connector names with ``db2.driver``, raising errors
  worded like ``ibm_db``'s (``… SQLSTATE=42704 SQLCODE=-204``) and running the connector's
  Db2-only statements;
* :mod:`.dialect` runs the tests' Db2 SQL (types, binary constants) on PostgreSQL, so the same
  statements reach a real Db2.

It gives nothing real ASN would not (docs/db2.md lists each behaviour): registrations and CD
columns are read at start and reinit only, ``CHG_UPD_TO_DEL_INS='N'`` gives ``U`` rows, LOB
and XML values are not copied, BOOLEAN tables are refused, a cold start empties the CD
tables. What it cannot show: Db2's isolation (UR dirty reads, RS blocking), pruning, and
whether real asncap splits a transaction across capture commits (a mode shows the connector
copes if it does).

Typical use (see ``tests/plugins/fix_db2.py`` for the session fixture)::

    emulation = install(postgres_server)
    emulation.execute('CREATE SCHEMA "DB2INST1"',
                      'CREATE TABLE "DB2INST1"."CUSTOMERS" ("ID" integer PRIMARY KEY)')
    emulation.add_table("DB2INST1", "CUSTOMERS")   # ADDTABLE + reinit, waits for the agent
    emulation.execute('INSERT INTO "DB2INST1"."CUSTOMERS" VALUES (1)')
    emulation.wait_captured()                      # the insert is in ASNCDC.CDC_DB2INST1_CUSTOMERS
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any, cast

import psycopg
from psycopg import sql

from cdcflow.capture.connectors.postgres import pgoutput
from cdcflow.capture.credentials import Login
from cdcflow.operator.devservices.postgres import PostgresServer
from tests.services.db2_emulation.agent import CaptureAgent, lsn_bytes
from tests.services.db2_emulation.dialect import to_postgres

__all__ = ["DRIVER_NAME", "Db2Emulation", "install"]

INSTALL_SQL = Path(__file__).with_name("install.sql")
DRIVER_NAME = "tests.services.db2_emulation.driver:DRIVER"


class Db2Emulation:
    """An installed emulation: its database, its capture agent and how to reach it."""

    def __init__(self, server: PostgresServer, *, database: str, sleep_s: float) -> None:
        self.server = server
        self.database = database
        self.sleep_s = sleep_s
        self.slot = f"db2emu_{database}"
        self.publication = f"db2emu_{database}"
        self.agent = CaptureAgent(
            self.dsn(), slot=self.slot, publication=self.publication, sleep_s=sleep_s
        )

    # -- reaching it ----------------------------------------------------------------------

    def dsn(self) -> str:
        """A libpq connection string for the superuser in the emulation's database."""
        return self.server.dsn(dbname=self.database)

    def properties(self, **extra: str) -> dict[str, str]:
        """Debezium Db2 connector properties that reach the emulation (``extra`` on top)."""
        return {
            "database.hostname": self.server.host,
            "database.port": str(self.server.port),
            "database.user": self.server.superuser,
            "database.password": self.server.superuser_password,
            "database.dbname": self.database,
            "db2.driver": DRIVER_NAME,
            **extra,
        }

    def execute(self, *statements: str) -> None:
        """Run statements (Db2 SQL, :mod:`.dialect`) as the superuser, each committed on its
        own."""
        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            for statement in statements:
                conn.execute(cast(Any, to_postgres(statement)))

    def execute_atomically(self, *statements: str) -> None:
        """Run statements (Db2 SQL) as the superuser in one transaction."""
        with psycopg.connect(self.dsn()) as conn, conn.transaction():
            for statement in statements:
                conn.execute(cast(Any, to_postgres(statement)))

    @property
    def login(self) -> Login:
        """The user the connector logs in as."""
        return Login(self.server.superuser, self.server.superuser_password)

    @property
    def source(self) -> dict[str, Any]:
        """``spec.source`` of a CdcConnector on the emulation."""
        return {
            "db2": {"host": self.server.host, "port": self.server.port, "database": self.database}
        }

    @property
    def driver_properties(self) -> dict[str, str]:
        """The connector properties that name the emulation's driver."""
        return {"db2.driver": DRIVER_NAME}

    def ensure_schema(self, schema: str) -> None:
        self.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')

    def query(self, statement: str, params: tuple[Any, ...] | None = None) -> list[tuple[Any, ...]]:
        """The rows of a query run as the superuser."""
        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            return conn.execute(cast(Any, statement), params).fetchall()

    # -- ASN management, as Debezium's UDFs -----------------------------------------------

    def add_table(self, schema: str, table: str, *, timeout_s: float = 30.0) -> None:
        """``CALL ASNCDC.ADDTABLE`` and ``ASNCDCSERVICES('reinit')``; returns once the agent
        captures the table (``CD_OLD_SYNCHPOINT`` set)."""
        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            conn.execute('CALL "ASNCDC"."ADDTABLE"(%s, %s)', (schema, table))
        self.reinit_and_wait(timeout_s=timeout_s)

    def mark(self, schema: str, table: str, state: str) -> None:
        """Mark a registration ``'A'`` (ACTIVE) or ``'I'`` (INACTIVE) in the register, as the
        schema procedures do; the agent sees it at its next reinit."""
        self.execute_parameters(
            'UPDATE "ASNCDC"."IBMSNAP_REGISTER" SET "STATE" = %s '
            'WHERE "SOURCE_OWNER" = %s AND "SOURCE_TABLE" = %s',
            (state, schema, table),
        )

    def reinit_and_wait(self, *, timeout_s: float = 30.0) -> None:
        """``ASNCDCSERVICES('reinit')``; returns once the agent has done it."""
        target = int(self.query('SELECT "REINITS_REQUESTED" FROM "ASNCDC"."EMULATION_AGENT"')[0][0])
        self.reinit()
        self._wait(
            lambda: (
                int(self.query('SELECT "REINITS_DONE" FROM "ASNCDC"."EMULATION_AGENT"')[0][0])
                > target
            ),
            timeout_s,
            "the agent to reinitialise",
        )

    def execute_parameters(self, statement: str, params: tuple[Any, ...]) -> None:
        """Run one statement with parameters as the superuser."""
        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            conn.execute(cast(Any, statement), params)

    def remove_table(self, schema: str, table: str) -> None:
        """``CALL ASNCDC.REMOVETABLE``: the registration and its CD table go."""
        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            conn.execute('CALL "ASNCDC"."REMOVETABLE"(%s, %s)', (schema, table))

    def services(self, action: str) -> str:
        """``VALUES ASNCDC.ASNCDCSERVICES(action, 'asncdc')``: its answer."""
        rows = self.query('VALUES ("ASNCDC"."ASNCDCSERVICES"(%s, \'asncdc\'))', (action,))
        return str(rows[0][0])

    def reinit(self) -> None:
        """``ASNCDCSERVICES('reinit')``: the agent re-reads registrations next cycle."""
        self.services("reinit")

    def stop_agent(self, *, timeout_s: float = 10.0) -> None:
        """``ASNCDCSERVICES('stop')``; returns once the agent stopped (SYNCHTIME frozen)."""
        self.services("stop")
        self._wait(lambda: self._agent_state() == "stopped", timeout_s, "the agent to stop")

    def start_agent(self, *, timeout_s: float = 10.0) -> None:
        """``ASNCDCSERVICES('start')``; returns once the agent completed a cycle."""
        self.services("start")
        self._wait(lambda: self._agent_state() == "started", timeout_s, "the agent to start")

    def cold_start(self, *, timeout_s: float = 10.0) -> None:
        """Stop the agent and start it cold (``STARTMODE='COLD'``): the CD tables are emptied
        and what was committed while it was stopped is never captured."""
        self.stop_agent(timeout_s=timeout_s)
        self.execute("""UPDATE "ASNCDC"."IBMSNAP_CAPPARMS" SET "STARTMODE" = 'COLD'""")
        self.services("start")
        self._wait(
            lambda: (
                self._agent_state() == "started"
                and self.query('SELECT "STARTMODE" FROM "ASNCDC"."IBMSNAP_CAPPARMS"')[0][0]
                == "WARMSI"
            ),
            timeout_s,
            "the agent to start cold",
        )

    def set_capture_parameters(self, *, commit_interval_s: int, sleep_interval_s: int) -> None:
        """What ``IBMSNAP_CAPPARMS`` reports (the connector derives its agent timeout)."""
        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            conn.execute(
                'UPDATE "ASNCDC"."IBMSNAP_CAPPARMS" SET "COMMIT_INTERVAL" = %s, '
                '"SLEEP_INTERVAL" = %s',
                (commit_interval_s, sleep_interval_s),
            )

    def wait_captured(self, timeout_s: float = 30.0) -> None:
        """Return once the agent has captured every transaction committed so far."""
        target = pgoutput.parse_lsn(str(self.query("SELECT pg_current_wal_insert_lsn()")[0][0]))
        if not self.agent.wait_for(target, timeout_s):
            raise TimeoutError(
                f"the Db2 emulation's capture agent did not reach {pgoutput.format_lsn(target)} "
                f"in {timeout_s}s (state {self._agent_state()}, last error "
                f"{self.agent.last_error})"
            )

    def cd_rows(self, schema: str, table: str) -> list[tuple[Any, ...]]:
        """The CD table's rows of a source table in (COMMITSEQ, INTENTSEQ) order."""
        statement = sql.SQL(
            'SELECT * FROM {} ORDER BY "IBMSNAP_COMMITSEQ", "IBMSNAP_INTENTSEQ"'
        ).format(sql.Identifier("ASNCDC", f"CDC_{schema}_{table}"))
        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            return conn.execute(statement).fetchall()

    def close(self) -> None:
        """Stop the agent and drop its slot (the database stays for post-mortems)."""
        self.agent.close()
        with psycopg.connect(self.server.dsn(), autocommit=True) as conn:
            _drop_slots(conn, self.database)

    # -- helpers --------------------------------------------------------------------------

    def _agent_state(self) -> str:
        return str(self.query('SELECT "ACTUAL_STATE" FROM "ASNCDC"."EMULATION_AGENT"')[0][0])

    def _wait(self, done: Any, timeout_s: float, what: str) -> None:
        deadline = time.monotonic() + timeout_s
        while not done():
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"timed out after {timeout_s}s waiting for {what} "
                    f"(agent error: {self.agent.last_error})"
                )
            time.sleep(min(0.05, self.sleep_s))


def install(
    server: PostgresServer, *, database: str = "db2emu", sleep_s: float = 0.2
) -> Db2Emulation:
    """Create ``database`` afresh, install the Db2 objects in it and start the agent."""
    with psycopg.connect(server.dsn(), autocommit=True) as conn:
        _drop_slots(conn, database)
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(database))
        )
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))
    emulation = Db2Emulation(server, database=database, sleep_s=sleep_s)
    interval = max(1, math.ceil(sleep_s))
    with psycopg.connect(emulation.dsn(), autocommit=True) as conn:
        conn.execute(cast(Any, INSTALL_SQL.read_text()))
        conn.execute(sql.SQL("CREATE PUBLICATION {}").format(sql.Identifier(emulation.publication)))
        row = conn.execute(
            "SELECT lsn::text FROM pg_create_logical_replication_slot(%s, 'pgoutput')",
            (emulation.slot,),
        ).fetchone()
        assert row is not None
        start = pgoutput.parse_lsn(str(row[0]))
        conn.execute(
            'UPDATE "ASNCDC"."EMULATION_AGENT" SET "PUBLICATION" = %s, "SLOT" = %s',
            (emulation.publication, emulation.slot),
        )
        conn.execute(
            'UPDATE "ASNCDC"."IBMSNAP_REGISTER" SET "SYNCHPOINT" = %s, '
            '"SYNCHTIME" = localtimestamp WHERE "GLOBAL_RECORD" = \'Y\'',
            (lsn_bytes(start),),
        )
        conn.execute(
            'UPDATE "ASNCDC"."IBMSNAP_CAPPARMS" SET "COMMIT_INTERVAL" = %s, "SLEEP_INTERVAL" = %s',
            (interval, interval),
        )
    emulation.agent.start()
    emulation.start_agent()
    return emulation


def _drop_slots(conn: psycopg.Connection[Any], database: str) -> None:
    """Drop the replication slots of ``database`` (a database with slots cannot be dropped)."""
    conn.execute(
        "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
        "WHERE database = %s AND NOT active",
        (database,),
    )
