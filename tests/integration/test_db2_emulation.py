"""The Db2 emulation behaves like ASN capture: what the Db2 connector's tests rely on.

No Db2 server can run here (see ``tests/services/db2_emulation``); these tests pin down the
stand-in: CD rows, their operations and LSN order, the agent's heartbeat, registrations,
the catalog views and errors worded like ibm_db's. Each test uses schemas of its own: the
emulation is shared by the whole session.
"""

from __future__ import annotations

import socket
import time
from typing import Any

import psycopg
import pytest

from cdcflow.capture.connectors.db2 import sql
from cdcflow.capture.connectors.db2.connection import (
    Endpoint,
    Isolation,
    StatementError,
    connect,
    load_driver,
    sqlcode,
)
from cdcflow.capture.connectors.db2.lsn import Lsn
from cdcflow.capture.errors import FatalError, RetriableError
from tests.services.db2_emulation import DRIVER_NAME, Db2Emulation
from tests.services.db2_emulation.driver import DRIVER

COMMITSEQ, INTENTSEQ, OPERATION, LOGMARKER = range(4)


def make_table(emulation: Db2Emulation, schema: str, table: str, columns: str) -> None:
    emulation.execute(
        f'CREATE SCHEMA IF NOT EXISTS "{schema}"', f'CREATE TABLE "{schema}"."{table}" ({columns})'
    )


def captured_table(emulation: Db2Emulation, schema: str, table: str = "T") -> None:
    """A table (ID primary key, NAME) in capture mode."""
    make_table(emulation, schema, table, '"ID" integer PRIMARY KEY, "NAME" varchar(40)')
    emulation.add_table(schema, table)


def endpoint(emulation: Db2Emulation, **changes: Any) -> Endpoint:
    props = emulation.properties()
    values: dict[str, Any] = {
        "host": props["database.hostname"],
        "port": int(props["database.port"]),
        "database": props["database.dbname"],
        "user": props["database.user"],
        "password": props["database.password"],
        "driver": props["db2.driver"],
        "connect_timeout_s": 5.0,
    }
    values.update(changes)
    return Endpoint(**values)


def global_row(emulation: Db2Emulation) -> tuple[Any, ...]:
    return emulation.query(
        'SELECT "SYNCHPOINT", "SYNCHTIME" FROM "ASNCDC"."IBMSNAP_REGISTER" '
        "WHERE \"GLOBAL_RECORD\" = 'Y'"
    )[0]


# -- the capture agent ----------------------------------------------------------------------


def test_insert_update_delete_reach_the_cd_table_in_order(db2_emulation: Db2Emulation) -> None:
    captured_table(db2_emulation, "EMU_IUD")
    db2_emulation.execute(
        """INSERT INTO "EMU_IUD"."T" VALUES (1, 'first')""",
        """UPDATE "EMU_IUD"."T" SET "NAME" = 'second' WHERE "ID" = 1""",
        """DELETE FROM "EMU_IUD"."T" WHERE "ID" = 1""",
    )
    db2_emulation.wait_captured()

    rows = db2_emulation.cd_rows("EMU_IUD", "T")
    assert [(r[OPERATION], r[4], r[5]) for r in rows] == [
        ("I", 1, "first"),
        ("D", 1, "first"),
        ("I", 1, "second"),
        ("D", 1, "second"),
    ]
    insert, before, after, delete = rows
    assert before[COMMITSEQ] == after[COMMITSEQ], "an update is a D and an I of one commit"
    assert before[INTENTSEQ] < after[INTENTSEQ], "the D comes before the I"
    assert insert[COMMITSEQ] < before[COMMITSEQ] < delete[COMMITSEQ]
    assert all(len(r[COMMITSEQ]) == 16 and len(r[INTENTSEQ]) == 16 for r in rows)


def test_a_transaction_of_several_changes_shares_one_commitseq(
    db2_emulation: Db2Emulation,
) -> None:
    captured_table(db2_emulation, "EMU_TX")
    with psycopg.connect(db2_emulation.dsn()) as conn:
        conn.execute("""INSERT INTO "EMU_TX"."T" VALUES (1, 'a'), (2, 'b')""")
        with conn.cursor().copy('COPY "EMU_TX"."T" FROM STDIN') as copy:
            for key in range(3, 8):
                copy.write_row((key, f"copied {key}"))
    db2_emulation.wait_captured()

    rows = db2_emulation.cd_rows("EMU_TX", "T")
    assert [r[4] for r in rows] == list(range(1, 8))
    assert len({r[COMMITSEQ] for r in rows}) == 1
    intents = [r[INTENTSEQ] for r in rows]
    assert intents == sorted(set(intents)), "every row has its own change LSN"


def test_rolled_back_transactions_never_appear(db2_emulation: Db2Emulation) -> None:
    captured_table(db2_emulation, "EMU_RB")
    with psycopg.connect(db2_emulation.dsn()) as conn:
        conn.execute("""INSERT INTO "EMU_RB"."T" VALUES (1, 'rolled back')""")
        conn.rollback()
        with conn.transaction():
            conn.execute("""INSERT INTO "EMU_RB"."T" VALUES (2, 'kept')""")
            with pytest.raises(psycopg.errors.DivisionByZero), conn.transaction():
                conn.execute("""INSERT INTO "EMU_RB"."T" VALUES (3, 'savepoint')""")
                conn.execute("SELECT 1 / 0")
    db2_emulation.wait_captured()

    assert [(r[OPERATION], r[4]) for r in db2_emulation.cd_rows("EMU_RB", "T")] == [("I", 2)]


def test_commit_order_across_tables_follows_commitseq(db2_emulation: Db2Emulation) -> None:
    captured_table(db2_emulation, "EMU_ORDER", "A")
    captured_table(db2_emulation, "EMU_ORDER", "B")
    with (
        psycopg.connect(db2_emulation.dsn()) as first,
        psycopg.connect(db2_emulation.dsn()) as second,
    ):
        first.execute("""INSERT INTO "EMU_ORDER"."A" VALUES (1, 'changed first, committed last')""")
        second.execute(
            """INSERT INTO "EMU_ORDER"."B" VALUES (1, 'changed last, committed first')"""
        )
        second.commit()
        first.commit()
    db2_emulation.wait_captured()

    (a,) = db2_emulation.cd_rows("EMU_ORDER", "A")
    (b,) = db2_emulation.cd_rows("EMU_ORDER", "B")
    assert b[COMMITSEQ] < a[COMMITSEQ]
    assert a[INTENTSEQ] < b[INTENTSEQ]


def test_an_unchanged_toasted_value_keeps_its_value_in_the_after_image(
    db2_emulation: Db2Emulation,
) -> None:
    make_table(
        db2_emulation, "EMU_TOAST", "T", '"ID" integer PRIMARY KEY, "N" integer, "BIG" varchar'
    )
    db2_emulation.add_table("EMU_TOAST", "T")
    big = "".join(f"{i:08x}{(i * 2654435761) % 2**32:08x}" for i in range(20_000))
    with psycopg.connect(db2_emulation.dsn(), autocommit=True) as conn:
        conn.execute('INSERT INTO "EMU_TOAST"."T" VALUES (1, 1, %s)', (big,))
        conn.execute('UPDATE "EMU_TOAST"."T" SET "N" = 2')
    db2_emulation.wait_captured()

    rows = db2_emulation.cd_rows("EMU_TOAST", "T")
    assert [(r[OPERATION], r[5], r[6] == big) for r in rows] == [
        ("I", 1, True),
        ("D", 1, True),
        ("I", 2, True),
    ]


def test_a_column_added_to_the_cd_table_is_written_only_after_a_reinit(
    db2_emulation: Db2Emulation,
) -> None:
    captured_table(db2_emulation, "EMU_DDL")
    db2_emulation.execute(
        'ALTER TABLE "EMU_DDL"."T" ADD COLUMN "EXTRA" varchar(10)',
        'ALTER TABLE "ASNCDC"."CDC_EMU_DDL_T" ADD COLUMN "EXTRA" varchar(10)',
        """INSERT INTO "EMU_DDL"."T" VALUES (1, 'no reinit', 'lost')""",
    )
    db2_emulation.wait_captured()
    db2_emulation.reinit_and_wait()  # asncap reads the CD tables' columns at reinit only
    db2_emulation.execute("""INSERT INTO "EMU_DDL"."T" VALUES (2, 'reinit', 'kept')""")
    db2_emulation.wait_captured()

    rows = db2_emulation.cd_rows("EMU_DDL", "T")
    assert [(r[4], r[5], r[6]) for r in rows] == [(1, "no reinit", None), (2, "reinit", "kept")]


def test_an_update_of_a_registration_without_update_splitting_is_one_u_row(
    db2_emulation: Db2Emulation,
) -> None:
    captured_table(db2_emulation, "EMU_U")
    db2_emulation.execute(
        """UPDATE "ASNCDC"."IBMSNAP_REGISTER" SET "CHG_UPD_TO_DEL_INS" = 'N' """
        """WHERE "SOURCE_OWNER" = 'EMU_U'"""
    )
    db2_emulation.reinit_and_wait()
    db2_emulation.execute(
        """INSERT INTO "EMU_U"."T" VALUES (1, 'first')""",
        """UPDATE "EMU_U"."T" SET "NAME" = 'second' WHERE "ID" = 1""",
    )
    db2_emulation.wait_captured()

    rows = db2_emulation.cd_rows("EMU_U", "T")
    assert [(r[OPERATION], r[4], r[5]) for r in rows] == [("I", 1, "first"), ("U", 1, "second")]


def test_lob_and_xml_values_are_not_copied_into_the_cd_table(db2_emulation: Db2Emulation) -> None:
    make_table(
        db2_emulation,
        "EMU_LOB",
        "T",
        '"ID" integer PRIMARY KEY, "C" "DB2TYPES"."CLOB", "B" "DB2TYPES"."BLOB", '
        '"X" "DB2TYPES"."XML", "V" varchar(10)',
    )
    db2_emulation.add_table("EMU_LOB", "T")
    db2_emulation.execute(
        """INSERT INTO "EMU_LOB"."T" VALUES (1, 'text', '\\x00ff', '<a/>', 'v')"""
    )
    db2_emulation.wait_captured()

    (row,) = db2_emulation.cd_rows("EMU_LOB", "T")
    assert row[4:] == (1, None, None, None, "v"), "ASN logs only that a LOB changed"


def test_addtable_folds_names_to_upper_case_as_db2_does_with_the_scripts_unquoted_names(
    db2_emulation: Db2Emulation,
) -> None:
    make_table(db2_emulation, "EMU_CASE", "lower", '"ID" integer PRIMARY KEY')
    with pytest.raises(psycopg.Error, match=r'"EMU_CASE\.LOWER" does not exist'):
        db2_emulation.execute("CALL ASNCDC.ADDTABLE('EMU_CASE', 'lower')")
    make_table(db2_emulation, "EMU_CASE", "UPPER", '"ID" integer PRIMARY KEY')
    db2_emulation.execute("CALL ASNCDC.ADDTABLE('emu_case', 'upper')")  # folded, found


def test_a_table_with_a_boolean_column_cannot_enter_capture_mode(
    db2_emulation: Db2Emulation,
) -> None:
    make_table(db2_emulation, "EMU_BOOL", "T", '"ID" integer PRIMARY KEY, "B" boolean')
    with pytest.raises(psycopg.Error, match="does not support the BOOLEAN column"):
        db2_emulation.execute("CALL \"ASNCDC\".\"ADDTABLE\"('EMU_BOOL', 'T')")
    assert not db2_emulation.query(
        """SELECT 1 FROM "ASNCDC"."IBMSNAP_REGISTER" WHERE "SOURCE_OWNER" = 'EMU_BOOL'"""
    )


def test_a_large_transaction_can_land_in_two_capture_commits(db2_emulation: Db2Emulation) -> None:
    captured_table(db2_emulation, "EMU_SPLIT")
    agent = db2_emulation.agent
    point = global_row(db2_emulation)[0]
    agent.split_rows, _ = 3, agent.release_partial.clear()
    try:
        db2_emulation.execute_atomically(
            *(f"""INSERT INTO "EMU_SPLIT"."T" VALUES ({n}, 'row')""" for n in range(1, 11))
        )
        deadline = time.monotonic() + 10
        while len(db2_emulation.cd_rows("EMU_SPLIT", "T")) < 3:
            assert time.monotonic() < deadline, "the first part never reached the CD table"
            time.sleep(0.05)
        time.sleep(db2_emulation.sleep_s * 3)
        assert len(db2_emulation.cd_rows("EMU_SPLIT", "T")) == 3
        assert global_row(db2_emulation)[0] == point, "no synchpoint covers a partial write"
    finally:
        agent.split_rows = None
        agent.release_partial.set()
    db2_emulation.wait_captured()
    rows = db2_emulation.cd_rows("EMU_SPLIT", "T")
    assert [r[4] for r in rows] == list(range(1, 11))
    assert len({bytes(r[COMMITSEQ]) for r in rows}) == 1
    assert Lsn.of(global_row(db2_emulation)[0]) >= Lsn.of(rows[0][COMMITSEQ])


def test_synchtime_advances_while_idle_and_stops_with_the_agent(
    db2_emulation: Db2Emulation,
) -> None:
    captured_table(db2_emulation, "EMU_HEART")
    _, first = global_row(db2_emulation)
    time.sleep(db2_emulation.sleep_s * 3)
    point, second = global_row(db2_emulation)
    assert second > first, "the heartbeat moves even when nothing changes"

    db2_emulation.stop_agent()
    try:
        assert "not running" in db2_emulation.services("status")
        stopped = global_row(db2_emulation)
        db2_emulation.execute("""INSERT INTO "EMU_HEART"."T" VALUES (1, 'while stopped')""")
        time.sleep(db2_emulation.sleep_s * 4)
        assert global_row(db2_emulation) == stopped
        assert db2_emulation.cd_rows("EMU_HEART", "T") == []
    finally:
        db2_emulation.start_agent()
    db2_emulation.wait_captured()
    assert [r[5] for r in db2_emulation.cd_rows("EMU_HEART", "T")] == ["while stopped"]
    assert global_row(db2_emulation)[0] > point
    assert "doing work" in db2_emulation.services("status")


def test_the_agent_sees_registrations_only_when_it_starts_or_reinitialises(
    db2_emulation: Db2Emulation,
) -> None:
    make_table(db2_emulation, "EMU_REG", "T", '"ID" integer PRIMARY KEY')
    db2_emulation.execute("CALL ASNCDC.ADDTABLE('EMU_REG', 'T')")  # as the documentation
    registration = """SELECT "STATE", "CD_OWNER", "CD_TABLE", "CD_OLD_SYNCHPOINT",
        "CHG_UPD_TO_DEL_INS" FROM "ASNCDC"."IBMSNAP_REGISTER" WHERE "SOURCE_OWNER" = 'EMU_REG'"""
    assert db2_emulation.query(registration) == [("A", "ASNCDC", "CDC_EMU_REG_T", None, "Y")]
    db2_emulation.execute('INSERT INTO "EMU_REG"."T" VALUES (1)')
    db2_emulation.wait_captured()
    assert db2_emulation.cd_rows("EMU_REG", "T") == [], "capture starts at the next reinit"

    # Db2 writes VALUES ASNCDC.ASNCDCSERVICES(…); PostgreSQL's VALUES needs the parentheses
    db2_emulation.query("VALUES (ASNCDC.ASNCDCSERVICES('reinit', 'asncdc'))")
    deadline = time.monotonic() + 10
    while db2_emulation.query(registration)[0][3] is None:
        assert time.monotonic() < deadline, "the agent never started capturing the table"
        time.sleep(0.05)
    start = bytes(db2_emulation.query(registration)[0][3])
    assert len(start) == 16
    assert Lsn.of(start) <= Lsn.of(global_row(db2_emulation)[0])

    db2_emulation.execute('INSERT INTO "EMU_REG"."T" VALUES (7)')
    db2_emulation.wait_captured()
    (row,) = db2_emulation.cd_rows("EMU_REG", "T")
    assert row[COMMITSEQ] > start
    new = db2_emulation.query(
        """SELECT "CD_NEW_SYNCHPOINT" FROM "ASNCDC"."IBMSNAP_REGISTER" """
        """WHERE "SOURCE_OWNER" = 'EMU_REG'"""
    )[0][0]
    assert bytes(new) == bytes(row[COMMITSEQ]), "CD_NEW_SYNCHPOINT follows the table's changes"

    db2_emulation.mark("EMU_REG", "T", "I")  # INACTIVE counts from the next reinit only
    db2_emulation.execute('INSERT INTO "EMU_REG"."T" VALUES (8)')
    db2_emulation.wait_captured()
    db2_emulation.reinit_and_wait()
    db2_emulation.execute('INSERT INTO "EMU_REG"."T" VALUES (9)')
    db2_emulation.wait_captured()
    assert [r[4] for r in db2_emulation.cd_rows("EMU_REG", "T")] == [7, 8]

    db2_emulation.mark("EMU_REG", "T", "A")
    db2_emulation.reinit_and_wait()
    assert bytes(db2_emulation.query(registration)[0][3]) > start, "capture starts again"

    db2_emulation.remove_table("EMU_REG", "T")
    assert db2_emulation.query(registration) == []
    assert db2_emulation.query('SELECT to_regclass(\'"ASNCDC"."CDC_EMU_REG_T"\')') == [(None,)]


# -- the catalog --------------------------------------------------------------------------


def test_syscat_columns_describe_columns_as_db2(db2_emulation: Db2Emulation) -> None:
    sized = {
        name: db2_emulation.query('SELECT "DB2TYPES"."SIZED"(%s, %s)', (name, size))[0][0]
        for name, size in [
            ("GRAPHIC", 4),
            ("VARGRAPHIC", 20),
            ("BINARY", 16),
            ("CHARACTER FOR BIT DATA", 8),
        ]
    }
    make_table(
        db2_emulation,
        "EMU_CAT",
        "TYPES",
        f"""
        "ID" integer PRIMARY KEY,
        "SI" smallint,
        "BI" bigint NOT NULL DEFAULT 42,
        "DEC" decimal(10, 2) DEFAULT -1.5,
        "DF" "DB2TYPES"."DECFLOAT",
        "DF16" "DB2TYPES"."DECFLOAT(16)",
        "R" real,
        "D" double precision,
        "C" char(5) DEFAULT 'abc',
        "VC" varchar(30),
        "CL" "DB2TYPES"."CLOB",
        "G" {sized["GRAPHIC"]},
        "VG" {sized["VARGRAPHIC"]},
        "BIN" {sized["BINARY"]},
        "CBD" {sized["CHARACTER FOR BIT DATA"]},
        "VB" bytea,
        "BL" "DB2TYPES"."BLOB",
        "DT" date,
        "TM" time,
        "TS" timestamp DEFAULT CURRENT_TIMESTAMP,
        "TS3" timestamp(3),
        "B" boolean,
        "X" "DB2TYPES"."XML",
        "IDN" integer GENERATED ALWAYS AS IDENTITY
        """,
    )
    db2_emulation.execute("""COMMENT ON COLUMN "EMU_CAT"."TYPES"."VC" IS 'a comment'""")
    rows = db2_emulation.query(
        'SELECT "COLNAME", "COLNO", "TYPENAME", "LENGTH", "SCALE", "NULLS", "KEYSEQ", '
        '"DEFAULT", "IDENTITY", "GENERATED", "CODEPAGE", "REMARKS" FROM "SYSCAT"."COLUMNS" '
        'WHERE "TABSCHEMA" = \'EMU_CAT\' AND "TABNAME" = \'TYPES\' ORDER BY "COLNO"'
    )
    assert rows == [
        ("ID", 0, "INTEGER", 4, 0, "N", 1, None, "N", " ", 0, None),
        ("SI", 1, "SMALLINT", 2, 0, "Y", None, None, "N", " ", 0, None),
        ("BI", 2, "BIGINT", 8, 0, "N", None, "42", "N", " ", 0, None),
        ("DEC", 3, "DECIMAL", 10, 2, "Y", None, "-1.5", "N", " ", 0, None),
        ("DF", 4, "DECFLOAT", 16, 0, "Y", None, None, "N", " ", 0, None),
        ("DF16", 5, "DECFLOAT", 8, 0, "Y", None, None, "N", " ", 0, None),
        ("R", 6, "REAL", 4, 0, "Y", None, None, "N", " ", 0, None),
        ("D", 7, "DOUBLE", 8, 0, "Y", None, None, "N", " ", 0, None),
        ("C", 8, "CHARACTER", 5, 0, "Y", None, "'abc'", "N", " ", 1208, None),
        ("VC", 9, "VARCHAR", 30, 0, "Y", None, None, "N", " ", 1208, "a comment"),
        ("CL", 10, "CLOB", 1048576, 0, "Y", None, None, "N", " ", 1208, None),
        ("G", 11, "GRAPHIC", 4, 0, "Y", None, None, "N", " ", 1200, None),
        ("VG", 12, "VARGRAPHIC", 20, 0, "Y", None, None, "N", " ", 1200, None),
        ("BIN", 13, "BINARY", 16, 0, "Y", None, None, "N", " ", 0, None),
        ("CBD", 14, "CHARACTER", 8, 0, "Y", None, None, "N", " ", 0, None),
        ("VB", 15, "VARBINARY", 32672, 0, "Y", None, None, "N", " ", 0, None),
        ("BL", 16, "BLOB", 1048576, 0, "Y", None, None, "N", " ", 0, None),
        ("DT", 17, "DATE", 4, 0, "Y", None, None, "N", " ", 0, None),
        ("TM", 18, "TIME", 3, 0, "Y", None, None, "N", " ", 0, None),
        ("TS", 19, "TIMESTAMP", 10, 6, "Y", None, "CURRENT TIMESTAMP", "N", " ", 0, None),
        ("TS3", 20, "TIMESTAMP", 9, 3, "Y", None, None, "N", " ", 0, None),
        ("B", 21, "BOOLEAN", 1, 0, "Y", None, None, "N", " ", 0, None),
        ("X", 22, "XML", 0, 0, "Y", None, None, "N", " ", 0, None),
        ("IDN", 23, "INTEGER", 4, 0, "N", None, None, "Y", "A", 0, None),
    ]


def test_syscat_keyseq_follows_the_primary_key_order(db2_emulation: Db2Emulation) -> None:
    make_table(
        db2_emulation,
        "EMU_KEY",
        "T",
        '"A" integer, "B" integer, "C" integer, PRIMARY KEY ("B", "A")',
    )
    db2_emulation.execute('ALTER TABLE "EMU_KEY"."T" DROP COLUMN "C"')
    db2_emulation.execute('ALTER TABLE "EMU_KEY"."T" ADD COLUMN "D" integer')
    rows = db2_emulation.query(
        'SELECT "COLNAME", "COLNO", "KEYSEQ" FROM "SYSCAT"."COLUMNS" '
        'WHERE "TABSCHEMA" = \'EMU_KEY\' ORDER BY "COLNO"'
    )
    assert rows == [("A", 0, 2), ("B", 1, 1), ("D", 2, None)]


def test_syscat_tables_lists_user_tables_only(db2_emulation: Db2Emulation) -> None:
    captured_table(db2_emulation, "EMU_TABLES")
    db2_emulation.execute('ANALYZE "EMU_TABLES"."T"')
    with connect(endpoint(db2_emulation)) as conn:
        rows = conn.query(sql.TABLES)
        dummy = conn.query('SELECT "IBMREQD" FROM "SYSIBM"."SYSDUMMY1"')
    schemas = {schema for schema, _, _ in rows}
    assert ("EMU_TABLES", "T", 0) in rows
    assert not schemas & {"ASNCDC", "asncdc", "DB2TYPES", "SYSCAT", "SYSIBM", "pg_catalog"}
    assert dummy == [("Y",)]


# -- the driver -----------------------------------------------------------------------------


def test_the_connector_reaches_the_emulation_through_its_driver(
    db2_emulation: Db2Emulation,
) -> None:
    assert load_driver(DRIVER_NAME) is DRIVER
    captured_table(db2_emulation, "EMU_SMOKE")
    db2_emulation.execute(
        """INSERT INTO "EMU_SMOKE"."T" VALUES (1, 'a')""",
        """UPDATE "EMU_SMOKE"."T" SET "NAME" = 'b'""",
    )
    db2_emulation.wait_captured()

    statements = sql.AsnStatements()
    with connect(endpoint(db2_emulation)) as conn:
        ((max_lsn,),) = conn.query(statements.max_lsn)
        assert isinstance(max_lsn, bytes) and len(max_lsn) == 16
        names, rows = conn.open(
            sql.changes("ASNCDC", "CDC_EMU_SMOKE_T"),
            (bytes(16), max_lsn),
            fetch_size=1,
        )
        changes = [(row[names.index("OPCODE")], row[names.index("NAME")]) for row in rows]
        parameters = conn.query(statements.capture_parameters)
        registered = {row[1] for row in conn.query(statements.registrations)}
        conn.rollback()
    assert changes == [(sql.INSERT, "a"), (sql.UPDATE_BEFORE, "a"), (sql.UPDATE_AFTER, "b")]
    assert parameters == [(1, 1)]
    assert "T" in registered


def test_several_server_side_cursors_stream_at_once(db2_emulation: Db2Emulation) -> None:
    make_table(db2_emulation, "EMU_CURSORS", "T", '"ID" integer PRIMARY KEY')
    db2_emulation.execute('INSERT INTO "EMU_CURSORS"."T" SELECT generate_series(1, 500)')
    with connect(endpoint(db2_emulation)) as conn:
        statement = 'SELECT "ID" FROM "EMU_CURSORS"."T" WHERE "ID" > ? ORDER BY "ID"'
        _, low = conn.open(statement, (0,), fetch_size=7)
        _, high = conn.open(statement, (250,), fetch_size=11)
        pairs = list(zip(low, high, strict=False))
        conn.rollback()
        conn.set_isolation(Isolation.REPEATABLE_READ)
        assert conn.query("SHOW transaction_isolation") == [("repeatable read",)]
        assert conn.execute('LOCK TABLE "EMU_CURSORS"."T" IN SHARE MODE') == -1
        conn.rollback()
    assert pairs[0] == ((1,), (251,))
    assert len(pairs) == 250


def test_the_db2_dialect_runs_and_postgresqls_spelling_is_refused(
    db2_emulation: Db2Emulation,
) -> None:
    make_table(db2_emulation, "EMU_DIALECT", "T", '"ID" integer PRIMARY KEY')
    table = '"EMU_DIALECT"."T"'
    with connect(endpoint(db2_emulation)) as conn:
        for refused in (
            "SAVEPOINT s",  # Db2 requires ON ROLLBACK RETAIN CURSORS
            f"LOCK TABLE {table} IN ACCESS SHARE MODE",
            "SET LOCAL lock_timeout = 100",
        ):
            with pytest.raises(StatementError) as raised:
                conn.execute(refused)
            assert raised.value.sqlcode == -104, refused
            conn.rollback()

        conn.set_isolation(Isolation.REPEATABLE_READ)
        conn.execute(sql.lock_timeout(-1))
        conn.execute(sql.SAVEPOINT.format(name="s"))
        conn.execute(sql.SCHEMA_LOCK.format(table=table))
        conn.execute(sql.ROLLBACK_TO_SAVEPOINT.format(name="s"))
        # Db2 keeps the lock a rollback to the savepoint would release in PostgreSQL
        with psycopg.connect(db2_emulation.dsn(), autocommit=True) as other:
            other.execute("SET lock_timeout = 300")
            with pytest.raises(psycopg.errors.LockNotAvailable):
                other.execute(f'ALTER TABLE {table} ADD COLUMN "X" integer')
        assert conn.query(f"SELECT COUNT(*) FROM {table} WITH UR") == [(0,)]
        conn.rollback()


def test_a_missing_table_is_sqlcode_204(db2_emulation: Db2Emulation) -> None:
    with connect(endpoint(db2_emulation)) as conn:
        with pytest.raises(StatementError) as raised:
            conn.query('SELECT * FROM "NOWHERE"."MISSING"')
        conn.rollback()
    assert raised.value.sqlcode == -204
    assert "SQLSTATE=42704" in str(raised.value)

    raw = DRIVER.connect(endpoint(db2_emulation))
    try:
        with pytest.raises(DRIVER.errors) as error:
            raw.cursor().execute('SELECT * FROM "NOWHERE"."MISSING"')
        assert type(error.value).__name__ == "ProgrammingError"  # by SQLSTATE class, as ibm_db
        assert str(error.value).startswith(
            "ibm_db_dbi::ProgrammingError: Statement Execute Failed: [IBM][CLI Driver]"
        )
        assert str(error.value).endswith("SQLSTATE=42704 SQLCODE=-204")
    finally:
        raw.close()


@pytest.mark.parametrize(
    ("statement", "expected"),
    [
        ('SELECT FROM WHERE "X"', -104),
        (
            'CREATE TABLE "EMU_ERRORS"."DUP" ("ID" integer PRIMARY KEY); '
            'INSERT INTO "EMU_ERRORS"."DUP" VALUES (1), (1)',
            -803,
        ),
    ],
)
def test_statement_errors_carry_db2_sqlcodes(
    db2_emulation: Db2Emulation, statement: str, expected: int
) -> None:
    db2_emulation.execute('CREATE SCHEMA IF NOT EXISTS "EMU_ERRORS"')
    with connect(endpoint(db2_emulation)) as conn:
        with pytest.raises(StatementError) as raised:
            conn.execute(statement)
        conn.rollback()
    assert raised.value.sqlcode == expected


def test_a_lock_timeout_is_retriable(db2_emulation: Db2Emulation) -> None:
    make_table(db2_emulation, "EMU_LOCK", "T", '"ID" integer PRIMARY KEY')
    with psycopg.connect(db2_emulation.dsn()) as holder:
        holder.execute('LOCK TABLE "EMU_LOCK"."T" IN ACCESS EXCLUSIVE MODE')  # PostgreSQL's
        with connect(endpoint(db2_emulation)) as conn:
            conn.execute(sql.lock_timeout(200))  # Db2's: SET CURRENT LOCK TIMEOUT 1
            with pytest.raises(RetriableError, match="SQLCODE=-911"):
                conn.execute('LOCK TABLE "EMU_LOCK"."T" IN SHARE MODE')
            conn.rollback()
        holder.rollback()


def test_a_wrong_password_is_sqlcode_30082_without_the_password(
    db2_emulation: Db2Emulation,
) -> None:
    secret = "not-the-password-4711"
    with pytest.raises(DRIVER.errors) as raw:
        DRIVER.connect(endpoint(db2_emulation, password=secret))
    assert sqlcode(raw.value) == -30082
    assert secret not in str(raw.value)

    with pytest.raises(FatalError) as refused:
        connect(endpoint(db2_emulation, password=secret))
    assert "refused the login" in str(refused.value)
    assert secret not in str(refused.value)

    with pytest.raises(DRIVER.errors) as unknown:
        DRIVER.connect(endpoint(db2_emulation, user="nobody_here", password=secret))
    assert sqlcode(unknown.value) == -30082


def test_an_unreachable_server_is_sqlcode_30081(db2_emulation: Db2Emulation) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        free_port = probe.getsockname()[1]
    with pytest.raises(DRIVER.errors) as raw:
        DRIVER.connect(endpoint(db2_emulation, host="127.0.0.1", port=free_port))
    assert sqlcode(raw.value) == -30081
    with pytest.raises(RetriableError, match="cannot reach"):
        connect(endpoint(db2_emulation, host="127.0.0.1", port=free_port))
