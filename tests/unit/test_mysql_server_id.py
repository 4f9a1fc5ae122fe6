"""Another replica with our ``database.server.id``: refused at start, fatal when the server
drops our binlog connection for it (instead of reconnecting and disconnecting each other
forever)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pymysql
import pytest

from cdcflow.capture.connectors.mysql import binlog, checks, connector
from cdcflow.capture.connectors.mysql.connection import Endpoint
from cdcflow.capture.connectors.mysql.properties import parse_properties
from cdcflow.capture.errors import FatalError, RetriableError
from cdcflow.capture.filters import Filters

MARIADB = checks.ServerInfo(
    version="10.11.6-MariaDB-log",
    mariadb=True,
    server_id=1,
    gtid_mode=True,
    row_metadata_full=True,
)
MYSQL_8_0_36 = checks.ServerInfo(
    version="8.0.36", mariadb=False, server_id=1, gtid_mode=True, row_metadata_full=True
)
MYSQL_8_0_21 = checks.ServerInfo(
    version="8.0.21-log", mariadb=False, server_id=1, gtid_mode=True, row_metadata_full=True
)

#: Column names as each statement returns them.
SLAVE_HOSTS = ("Server_id", "Host", "Port", "Master_id")  # MariaDB, MySQL before 8.0.22
REPLICAS = ("Server_Id", "Host", "Port", "Source_Id", "Replica_UUID")  # MySQL 8.0.22+


class ScriptedConnection:
    """Answers statements by their start; an exception as the answer is raised."""

    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers = answers
        self.executed: list[str] = []

    def cursor(self) -> ScriptedCursor:
        return ScriptedCursor(self)

    def close(self) -> None:
        pass


class ScriptedCursor:
    def __init__(self, conn: ScriptedConnection) -> None:
        self.conn = conn
        self.description: tuple[tuple[str, ...], ...] | None = None
        self.rows: list[tuple[Any, ...]] = []

    def __enter__(self) -> ScriptedCursor:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def execute(self, statement: str, args: Any = None) -> int:
        self.conn.executed.append(statement)
        answer = next(a for start, a in self.conn.answers.items() if statement.startswith(start))
        if isinstance(answer, BaseException):
            raise answer
        columns, self.rows = answer
        self.description = tuple((name,) for name in columns)
        return len(self.rows)

    def fetchall(self) -> list[tuple[Any, ...]]:
        return self.rows


# -- at start: the registered replicas -------------------------------------------------------


def test_a_registered_replica_with_our_server_id_stops_the_start_naming_host_and_fix() -> None:
    conn = ScriptedConnection(
        {"SHOW SLAVE HOSTS": (SLAVE_HOSTS, [(7, "replica-a", 3306, 1), (5501, "etl-1", 3307, 1)])}
    )

    with pytest.raises(FatalError) as raised:
        checks.check_replicas(conn, MARIADB, 5501)  # type: ignore[arg-type]

    message = str(raised.value)
    assert "database.server.id=5501" in message
    assert "etl-1:3307" in message
    assert "unique" in message
    assert conn.executed == ["SHOW SLAVE HOSTS"]


def test_mysql_8_0_22_and_later_are_asked_with_show_replicas_and_name_the_replica_uuid() -> None:
    uuid = "8a94f357-aab4-11df-86ab-c80aa9429562"
    conn = ScriptedConnection({"SHOW REPLICAS": (REPLICAS, [(5501, "etl-1", 3306, 1, uuid)])})

    with pytest.raises(
        FatalError, match=rf"database\.server\.id=5501 .*etl-1:3306 \(uuid {uuid}\)"
    ):
        checks.check_replicas(conn, MYSQL_8_0_36, 5501)  # type: ignore[arg-type]
    assert conn.executed == ["SHOW REPLICAS"]


def test_mysql_before_8_0_22_is_asked_with_show_slave_hosts() -> None:
    assert checks.replica_listing(MYSQL_8_0_21) == "SHOW SLAVE HOSTS"
    assert checks.replica_listing(MYSQL_8_0_36) == "SHOW REPLICAS"
    assert checks.replica_listing(MARIADB) == "SHOW SLAVE HOSTS"


def test_replicas_with_other_server_ids_pass() -> None:
    conn = ScriptedConnection({"SHOW SLAVE HOSTS": (SLAVE_HOSTS, [(7, "replica-a", 3306, 1)])})

    checks.check_replicas(conn, MARIADB, 5501)  # type: ignore[arg-type]


def test_a_user_not_allowed_to_list_replicas_skips_the_check() -> None:
    """MariaDB 10.5+ wants REPLICATION MASTER ADMIN for SHOW SLAVE HOSTS, which a capture
    user need not hold: the runtime check still catches a clash."""
    denied = pymysql.err.OperationalError(
        1227,
        "Access denied; you need (at least one of) the REPLICATION MASTER ADMIN privilege(s) "
        "for this operation",
    )
    conn = ScriptedConnection({"SHOW SLAVE HOSTS": denied})

    checks.check_replicas(conn, MARIADB, 5501)  # type: ignore[arg-type]


def test_the_connector_runs_the_replica_check_at_start(monkeypatch: pytest.MonkeyPatch) -> None:
    variables = {
        "version": "8.0.36",
        "log_bin": "ON",
        "binlog_format": "ROW",
        "binlog_row_image": "FULL",
        "binlog_row_metadata": "FULL",
        "server_id": "1",
        "gtid_mode": "ON",
    }
    conn = ScriptedConnection(
        {
            "SHOW GLOBAL VARIABLES": (("Variable_name", "Value"), list(variables.items())),
            "SHOW REPLICAS": (REPLICAS, [(5501, "etl-1", 3306, 1, "")]),
        }
    )
    monkeypatch.setattr(connector, "connect", lambda endpoint: conn)
    properties = parse_properties({"topic.prefix": "shop", "database.server.id": "5501"})
    mysql = connector.MySqlConnector(
        endpoint=Endpoint(host="db", port=3306, user="cdc"),
        properties=properties,
        filters=Filters.from_properties(properties),
        version="0.1.0",
        flavor="mysql",
    )

    with pytest.raises(FatalError, match=r"database\.server\.id=5501 is already used .*etl-1"):
        mysql.prepare()


# -- while streaming: the server drops us for the other replica ------------------------------

MYSQL_57_CLASH = (
    "A slave with the same server_uuid/server_id as this slave has connected to the master; "
    "the first event 'binlog.000001' at 4, the last event read from './binlog.000003' at 1042, "
    "the last byte read from './binlog.000003' at 1042."
)
MYSQL_8_CLASH = (
    "A replica with the same server_uuid/server_id as this replica has connected to the "
    "source; the first event 'binlog.000001' at 4, the last event read from "
    "'./binlog.000003' at 1042, the last byte read from './binlog.000003' at 1042."
)
MARIADB_CLASH = (  # what MariaDB 10.11 sent in this project's test run
    "A slave with the same server_uuid/server_id is already connected; the first event '.' "
    "at 4, the last event read from 'mariadb-bin.000001' at 285, the last byte read from "
    "'mariadb-bin.000001' at 330."
)


@pytest.mark.parametrize(
    ("code", "message"),
    [(1236, MYSQL_57_CLASH), (1236, MYSQL_8_CLASH), (4052, MARIADB_CLASH)],
    ids=["mysql-5.7", "mysql-8", "mariadb"],
)
def test_a_binlog_connection_dropped_for_a_replica_with_our_server_id_is_fatal(
    code: int, message: str
) -> None:
    error = binlog._translated(pymysql.err.OperationalError(code, message), 5501)

    assert isinstance(error, FatalError)
    assert "database.server.id=5501" in str(error)
    assert "same server id" in str(error) and "unique" in str(error)
    assert "purged" not in str(error)


def test_mariadbs_same_id_error_is_fatal_whatever_its_wording() -> None:
    error = binlog._translated(pymysql.err.InternalError(4052, "duplicate replica"), 9)

    assert isinstance(error, FatalError) and "database.server.id=9" in str(error)


def test_other_1236_errors_still_mean_a_purged_position() -> None:
    purged = "Could not find first log file name in binary log index file"
    error = binlog._translated(pymysql.err.OperationalError(1236, purged), 5501)

    assert isinstance(error, FatalError) and "purged" in str(error)
    assert "server.id" not in str(error)


def test_a_lost_connection_stays_retriable() -> None:
    error = binlog._translated(pymysql.err.OperationalError(2013, "Lost connection"), 5501)

    assert isinstance(error, RetriableError)


class _ClashingStreamReader:
    """The library's stream reader, as the server drops it for a same-id replica."""

    def __init__(self, **settings: Any) -> None:
        self.server_id = settings["server_id"]
        self.log_file = "binlog.000003"

    def __iter__(self) -> Iterator[Any]:
        raise pymysql.err.OperationalError(1236, MYSQL_8_CLASH)

    def close(self) -> None:
        pass


def test_the_reader_hands_the_clash_to_the_pipeline_as_a_fatal_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(binlog, "BinLogStreamReader", _ClashingStreamReader)
    reader = binlog.BinlogReader(
        {}, server_id=5501, start=binlog.StartAt(gtids=""), mariadb=False, queue_size=16
    )
    try:
        with pytest.raises(FatalError, match=r"database\.server\.id=5501"):
            reader.next(5.0)
    finally:
        reader.close()
