"""The MariaDB fixture is a real server whose binlog a CDC user can read but not write to."""

from __future__ import annotations

import re
from typing import Any

import pymysql
import pytest
from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.row_event import WriteRowsEvent

from tests.services.mariadb import MariaDbServer

BINLOG_READER_SERVER_ID = 4701  # outside the connector's default range (5400-6400)
INSERT_DENIED = 1142


def _connect(server: MariaDbServer, *, cdc: bool = False) -> pymysql.Connection[Any]:
    settings = server.connection_settings(cdc=cdc)
    return pymysql.connect(
        host=str(settings["host"]),
        port=int(settings["port"]),
        user=str(settings["user"]),
        password=str(settings["password"]),
        database=server.database,
        autocommit=True,
    )


def _gtid_position(server: MariaDbServer) -> str:
    with _connect(server, cdc=True) as conn, conn.cursor() as cur:
        cur.execute("SELECT @@GLOBAL.gtid_binlog_pos")
        row = cur.fetchone()
    assert row is not None, "the binlog is not enabled"
    return str(row[0])


def test_an_insert_reaches_the_binlog_as_a_row_event_with_column_names(
    mariadb_server: MariaDbServer,
) -> None:
    with _connect(mariadb_server) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE smoke_binlog (id INT PRIMARY KEY, name VARCHAR(20))")
        before = _gtid_position(mariadb_server)
        cur.execute("INSERT INTO smoke_binlog VALUES (1, 'hello')")
    stream = BinLogStreamReader(
        connection_settings=mariadb_server.connection_settings(cdc=True),
        server_id=BINLOG_READER_SERVER_ID,
        # From a GTID: for MariaDB the library ignores log_file/log_pos and would dump from
        # the oldest binlog (which the server resets part way once it is large).
        auto_position=before,
        blocking=False,
        is_mariadb=True,
        only_events=[WriteRowsEvent],
        only_schemas=[mariadb_server.database],
        only_tables=["smoke_binlog"],
    )
    try:
        rows = [
            (event.table, row["values"])
            for event in stream
            if isinstance(event, WriteRowsEvent)
            for row in event.rows
        ]
    finally:
        stream.close()
    assert rows == [("smoke_binlog", {"id": 1, "name": "hello"})]


def test_the_binlog_logs_full_row_images_with_metadata_and_gtids(
    mariadb_server: MariaDbServer,
) -> None:
    with _connect(mariadb_server) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE smoke_gtid (id INT PRIMARY KEY)")
        cur.execute("INSERT INTO smoke_gtid VALUES (1)")
        cur.execute(
            "SHOW GLOBAL VARIABLES WHERE Variable_name IN ('log_bin', 'binlog_format', "
            "'binlog_row_image', 'binlog_row_metadata', 'gtid_strict_mode', "
            "'log_slave_updates', 'server_id', 'gtid_binlog_pos')"
        )
        variables = dict(cur.fetchall())
    gtid_binlog_pos = variables.pop("gtid_binlog_pos")
    assert variables == {
        "log_bin": "ON",
        "binlog_format": "ROW",
        "binlog_row_image": "FULL",
        "binlog_row_metadata": "FULL",
        "gtid_strict_mode": "ON",
        "log_slave_updates": "ON",
        "server_id": str(mariadb_server.server_id),
    }
    assert re.fullmatch(rf"0-{mariadb_server.server_id}-\d+", gtid_binlog_pos), gtid_binlog_pos


def test_the_cdc_user_holds_replication_grants_but_cannot_write(
    mariadb_server: MariaDbServer,
) -> None:
    with _connect(mariadb_server) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE smoke_grants (id INT PRIMARY KEY)")
    with _connect(mariadb_server, cdc=True) as conn, conn.cursor() as cur:
        cur.execute("SHOW GRANTS")
        # The global grant only: tests that ran before may have let the user write signal tables.
        grants = next(str(row[0]) for row in cur.fetchall() if " ON *.* " in str(row[0]))
        cur.execute("SELECT COUNT(*) FROM smoke_grants")
        assert cur.fetchone() == (0,)
        with pytest.raises(pymysql.err.OperationalError) as denied:
            cur.execute("INSERT INTO smoke_grants VALUES (1)")
    for privilege in (
        "SELECT",
        "RELOAD",
        "SHOW DATABASES",
        "LOCK TABLES",
        "REPLICATION SLAVE",
        "BINLOG MONITOR",
    ):
        assert privilege in grants, grants
    assert "ALL PRIVILEGES" not in grants and "INSERT" not in grants, grants
    assert denied.value.args[0] == INSERT_DENIED
