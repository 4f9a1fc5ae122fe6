"""The MariaDB connector's own behaviours on a real MariaDB 10.11 and Kafka: schema changes
while streaming, restarts with schema history, startup checks, locking (a purged binlog: the
conformance suite)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from cdcflow.capture.errors import FatalError
from cdcflow.operator.devservices.processes import free_port
from tests.plugins.fix_capture import Event
from tests.plugins.fix_conformance import MariaDbDriver
from tests.plugins.fix_kafka import read_topic_to_end
from tests.services import mariadb


def _after(events: list[Any]) -> list[Any]:
    return [e.payload["after"] for e in events if e.value is not None]


def test_a_column_added_while_streaming_reaches_events_and_the_schema_change_topic(
    maria: MariaDbDriver,
) -> None:
    table = maria.table("ddl")
    maria.create_table(table, ((1, "before"),))
    running = maria.start([table])
    maria.run(f"ALTER TABLE {table} ADD COLUMN qty INT NOT NULL DEFAULT 7")
    maria.run(f"INSERT INTO {table} VALUES (2, 'after', 3)")
    events = maria.wait_for_events(table, lambda ev: len(ev) >= 2)
    running.stop()
    changes = _schema_changes(maria)

    assert _after(events) == [{"id": 1, "v": "before"}, {"id": 2, "v": "after", "qty": 3}]
    alter = next(e for e in changes if "ALTER TABLE" in e.payload["ddl"])
    assert alter.key["payload"] == {"databaseName": "inventory"}
    assert alter.payload["databaseName"] == "inventory"
    (change,) = alter.payload["tableChanges"]
    assert change["type"] == "ALTER" and change["id"] == f'"inventory"."{table}"'
    columns = [(c["name"], c["typeName"], c["optional"]) for c in change["table"]["columns"]]
    assert columns == [("id", "INT", False), ("v", "TEXT", True), ("qty", "INT", False)]
    assert alter.payload["source"]["connector"] == "mariadb"


def test_a_restart_resumes_after_the_last_commit_with_the_structure_of_the_history(
    maria: MariaDbDriver,
) -> None:
    table = maria.table("restart")
    maria.create_table(table, ((1, "a"),))
    running = maria.start([table])
    maria.run(maria.insert(table, (2, "b")))
    maria.wait_for_events(table, lambda ev: len(ev) >= 2)
    running.stop()
    # While stopped: a column appears and rows use it; the restart must decode them with it.
    maria.run(
        f"ALTER TABLE {table} ADD COLUMN n INT",
        f"INSERT INTO {table} VALUES (3, 'c', 30)",
    )
    running = maria.start([table])
    maria.run(f"INSERT INTO {table} VALUES (4, 'd', 40)")
    events = maria.wait_for_events(table, lambda ev: len(ev) >= 4)
    running.stop()

    assert [e.payload["op"] for e in events] == ["r", "c", "c", "c"]
    assert _after(events)[2:] == [{"id": 3, "v": "c", "n": 30}, {"id": 4, "v": "d", "n": 40}]


def test_a_wrong_password_is_a_fatal_error_naming_the_secret(maria: MariaDbDriver) -> None:
    table = maria.table("pw")
    maria.create_table(table)
    server = maria.server
    maria.server = mariadb.MariaDbServer(**{**server.__dict__, "cdc_password": "wrong-4711"})
    try:
        with pytest.raises(FatalError, match="credentials Secret") as raised:
            maria.start([table])
    finally:
        maria.server = server
    assert "wrong-4711" not in str(raised.value)
    assert "MariaDB at" in str(raised.value) and "CDCFLOW_DATABASE_PASSWORD" in str(raised.value)


def test_a_closed_port_names_mariadb_and_what_to_check(maria: MariaDbDriver) -> None:
    table = maria.table("port")
    maria.create_table(table)
    server = maria.server
    maria.server = mariadb.MariaDbServer(**{**server.__dict__, "port": free_port()})
    try:
        with pytest.raises(FatalError, match="cannot connect to MariaDB") as raised:
            maria.start([table])
    finally:
        maria.server = server
    assert "server is running and reachable" in str(raised.value)


@pytest.mark.parametrize(
    "config",
    [{"database.include.list": "no_such_database"}, {"table.include.list": "inventory\\.nothing"}],
    ids=["unknown-database", "no-matching-table"],
)
def test_filters_that_match_no_table_are_refused_naming_the_databases(
    maria: MariaDbDriver, config: dict[str, str]
) -> None:
    table = maria.table("nothing")
    maria.create_table(table)
    with pytest.raises(FatalError, match="no table matches the filters") as raised:
        maria.start([table], **config)
    assert next(iter(config.values())) in str(raised.value)
    assert maria.server.database in str(raised.value)  # the databases the server does have


def test_a_user_without_replication_grants_is_told_what_to_grant(maria: MariaDbDriver) -> None:
    table = maria.table("grants")
    maria.create_table(table)
    mariadb.run_sql(
        maria.server,
        "CREATE USER IF NOT EXISTS 'weak'@'%' IDENTIFIED BY 'weak-pw'",
        "GRANT SELECT ON *.* TO 'weak'@'%'",
    )
    server = maria.server
    maria.server = mariadb.MariaDbServer(
        **{**server.__dict__, "cdc_user": "weak", "cdc_password": "weak-pw"}
    )
    try:
        with pytest.raises(FatalError, match=r"REPLICATION SLAVE.*GRANT"):
            maria.start([table])
    finally:
        maria.server = server


def _schema_changes(maria: MariaDbDriver) -> list[Event]:
    """The records of the schema-change topic, named by the topic prefix alone."""
    bootstrap = maria.capture.kafka.bootstrap_servers
    return [
        Event(key=orjson.loads(m.key()), value=orjson.loads(m.value()), headers={})
        for m in read_topic_to_end(bootstrap, maria.name)
    ]


def test_excluded_columns_and_message_key_columns_apply_to_snapshot_and_stream(
    maria: MariaDbDriver,
) -> None:
    table = maria.table("cols")
    maria.run(
        f"CREATE TABLE {table} (id int PRIMARY KEY, code varchar(8) NOT NULL, secret text)",
        f"INSERT INTO {table} VALUES (1, 'a', 'hidden')",
    )
    database = maria.server.database
    running = maria.start(
        [table],
        **{
            "column.exclude.list": rf"{database}\.{table}\.secret",
            "message.key.columns": f"{database}.{table}:code",
        },
    )
    maria.run(f"INSERT INTO {table} VALUES (2, 'b', 'hidden too')")
    events = maria.wait_for_events(table, lambda ev: len(ev) >= 2)
    running.stop()

    assert [e.key["payload"] for e in events] == [{"code": "a"}, {"code": "b"}]
    assert _after(events) == [{"id": 1, "code": "a"}, {"id": 2, "code": "b"}]


def _snapshot_statements(maria: MariaDbDriver, table: str, mode: str) -> list[str]:
    """The snapshot's statements, in the order the server ran them (its general log)."""
    mariadb.run_sql(maria.server, "SET GLOBAL log_output = 'TABLE'", "TRUNCATE mysql.general_log")
    mariadb.run_sql(maria.server, "SET GLOBAL general_log = 1")
    try:
        running = maria.start([table], **{"snapshot.locking.mode": mode})
        running.stop()
    finally:
        mariadb.run_sql(maria.server, "SET GLOBAL general_log = 0")
    rows = mariadb.query(
        maria.server,
        "SELECT argument FROM mysql.general_log WHERE command_type = 'Query' "
        f"AND user_host LIKE '{maria.server.cdc_user}%' ORDER BY event_time",
    )
    wanted = ("FLUSH TABLES", "START TRANSACTION", "SHOW MASTER STATUS", "UNLOCK", "SELECT `id`")
    return [
        next(w for w in wanted if str(a).startswith(w))
        for (a,) in rows
        if any(str(a).startswith(w) for w in wanted)
        and (not str(a).startswith("SELECT") or table in str(a))
    ]


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        # Debezium's minimal locking: the lock only while position and structure are read.
        ("minimal", ["FLUSH TABLES", "START TRANSACTION", "SHOW MASTER STATUS", "UNLOCK",
                     "SELECT `id`"]),
        # extended: writers wait until every row is read.
        ("extended", ["FLUSH TABLES", "START TRANSACTION", "SHOW MASTER STATUS", "SELECT `id`",
                      "UNLOCK"]),
        ("none", ["START TRANSACTION", "SHOW MASTER STATUS", "SELECT `id`"]),
    ],
)  # fmt: skip
def test_snapshot_locking_modes_run_debeziums_steps_in_order(
    maria: MariaDbDriver, mode: str, expected: list[str]
) -> None:
    table = maria.table(f"lock_{mode}")
    maria.create_table(table, ((1, "a"),))

    assert _snapshot_statements(maria, table, mode) == expected


def test_include_query_puts_the_statement_that_wrote_the_row_into_the_source(
    maria: MariaDbDriver,
) -> None:
    table = maria.table("query")
    maria.create_table(table)
    running = maria.start([table], **{"include.query": "true"})
    statement = f"INSERT INTO {table} VALUES (1, 'q')"
    maria.run(statement)
    (event,) = maria.wait_for_events(table, lambda ev: len(ev) >= 1)
    running.stop()

    assert event.payload["source"]["query"] == statement


@pytest.mark.parametrize("mode", ["warn", "skip"])
def test_a_value_that_cannot_be_converted_becomes_null_under_warn_and_skip(
    maria: MariaDbDriver, mode: str
) -> None:
    table = maria.table(f"conv_{mode}")
    maria.run(
        f"CREATE TABLE {table} (id INT PRIMARY KEY, t TIME)",
        f"INSERT INTO {table} VALUES (1, '838:59:59'), (2, '12:00:00')",
    )
    config = {"time.precision.mode": "connect", "event.converting.failure.handling.mode": mode}
    running = maria.start([table], **config)
    maria.run(f"INSERT INTO {table} VALUES (3, '-00:00:01')")
    events = maria.wait_for_events(table, lambda ev: len(ev) >= 3)
    running.stop()

    # connect mode carries 00:00 to 24:00 only: Debezium leaves the others null
    assert _after(events) == [
        {"id": 1, "t": None},
        {"id": 2, "t": 43_200_000},
        {"id": 3, "t": None},
    ]


def test_a_value_that_cannot_be_converted_stops_the_connector_by_default(
    maria: MariaDbDriver,
) -> None:
    table = maria.table("conv_fail")
    maria.run(
        f"CREATE TABLE {table} (id INT PRIMARY KEY, t TIME)",
        f"INSERT INTO {table} VALUES (1, '838:59:59')",
    )
    with pytest.raises(FatalError, match=r"event\.converting\.failure\.handling\.mode=warn"):
        maria.start([table], **{"time.precision.mode": "connect"})
