"""The Db2 connector's own behaviours, on the emulation of Db2's ASN capture
(tests/services/db2_emulation: no Db2 server can run here; a real Db2 for the portable tests
when ``CDCFLOW_DB2_DSN`` names one) and a real Kafka: snapshot and
isolation modes, update pairing, cross-table commit order, restarts mid-stream, schema changes
by re-registration, the agent's heartbeat, missing privileges, every type of the seed, and
incremental snapshots under concurrent writes."""

from __future__ import annotations

import base64
import random
import threading
import time
from typing import Any

import orjson
import psycopg
import pytest

from cdcflow.capture.credentials import Login
from cdcflow.capture.errors import FatalError
from tests.integration.test_incremental_snapshots import _replay, _wait_for_status
from tests.plugins.fix_capture import Event, RunningEngine
from tests.plugins.fix_conformance import Db2Driver
from tests.plugins.fix_kafka import read_topic_to_end

PLAIN = {"key.converter.schemas.enable": False, "value.converter.schemas.enable": False}


def _after(events: list[Event]) -> list[Any]:
    return [e.payload["after"] for e in events if e.value is not None]


def _ops(events: list[Event]) -> list[tuple[str | None, Any]]:
    return [(e.op, e.key) for e in events]


def _run_to_end(db2: Db2Driver, tables: list[str], **config: Any) -> RunningEngine:
    running = db2.capture.start(db2.resource(tables, **config), login=db2.db2.login, wait_for=None)
    running.thread.join(60)
    assert not running.thread.is_alive(), "the engine kept running"
    return running


@pytest.mark.parametrize(
    "isolation", ["read_uncommitted", "read_committed", "repeatable_read", "exclusive"]
)
def test_each_isolation_mode_snapshots_every_row_and_streams_from_where_it_read(
    db2: Db2Driver, isolation: str
) -> None:
    table = db2.table("iso")
    db2.create_table(table, ((1, "a"), (2, "b")))
    db2.run(db2.update(table, 2, "b2"))  # captured before the snapshot: not streamed again
    db2.db2.wait_captured()
    running = db2.start([table], **{"snapshot.isolation.mode": isolation}, **PLAIN)
    db2.run(db2.insert(table, (3, "c")))
    events = db2.wait_for_events(table, lambda ev: len(ev) >= 3)
    running.stop()

    assert [(e.op, e.payload["after"]) for e in events] == [
        ("r", {"id": 1, "v": "a"}),
        ("r", {"id": 2, "v": "b2"}),
        ("c", {"id": 3, "v": "c"}),
    ]


def test_initial_only_snapshots_then_ends_and_no_data_records_only_the_structure(
    db2: Db2Driver,
) -> None:
    table = db2.table("only")
    db2.create_table(table, ((1, "a"), (2, "b")))
    running = _run_to_end(db2, [table], **{"snapshot.mode": "initial_only"}, **PLAIN)
    db2.run(db2.insert(table, (3, "c")))

    assert not running.errors and running.engine.stats.phase == "stopped"
    assert _ops(db2.capture.events(db2.topic(table))) == [("r", {"id": 1}), ("r", {"id": 2})]
    history = (db2.capture.workdir / "history.jsonl").read_text()
    assert f'\\"{table}\\"' in history or table in history


def test_an_update_is_one_event_with_the_whole_row_before_and_after(db2: Db2Driver) -> None:
    table = db2.table("upd")
    db2.create_table(table, ((1, "old"),))
    running = db2.start([table], **{"snapshot.mode": "no_data"}, **PLAIN)
    db2.run(db2.update(table, 1, "new"))
    (update,) = db2.wait_for_events(table, lambda ev: len(ev) >= 1)
    running.stop()

    assert update.payload["op"] == "u"
    assert update.payload["before"] == {"id": 1, "v": "old"}
    assert update.payload["after"] == {"id": 1, "v": "new"}
    source = update.payload["source"]
    assert source["commit_lsn"] and source["change_lsn"] and source["snapshot"] == "false"


def test_changes_of_two_tables_come_out_in_commit_then_change_order(db2: Db2Driver) -> None:
    a, b = db2.table("xa"), db2.table("xb")
    db2.create_table(a)
    db2.create_table(b)
    running = db2.start(
        [a, b], **{"snapshot.mode": "no_data", "provide.transaction.metadata": True}, **PLAIN
    )
    db2.run_atomically(db2.insert(a, (1, None)), db2.insert(b, (1, None)), db2.insert(a, (2, None)))
    db2.run(db2.insert(b, (2, None)))
    db2.run(db2.insert(a, (3, None)))
    rows = db2.wait_for_events(a, lambda ev: len(ev) >= 3) + db2.wait_for_events(
        b, lambda ev: len(ev) >= 2
    )
    running.stop()

    def lsns(event: Event) -> tuple[str, str]:
        return event.payload["source"]["commit_lsn"], event.payload["source"]["change_lsn"]

    ordered = sorted(rows, key=lsns)
    assert [(e.payload["source"]["table"], e.key["id"]) for e in ordered] == [
        (a, 1), (b, 1), (a, 2), (b, 2), (a, 3),
    ]  # fmt: skip
    first = [e for e in rows if e.payload["transaction"]["id"] == lsns(ordered[0])[0]]
    assert sorted(e.payload["transaction"]["total_order"] for e in first) == [1, 2, 3]


def test_a_restart_in_the_middle_of_a_stream_loses_and_repeats_nothing(db2: Db2Driver) -> None:
    table = db2.table("mid")
    db2.create_table(table)
    running = db2.start([table], **{"snapshot.mode": "no_data", "poll.interval.ms": 50}, **PLAIN)
    stop = threading.Event()

    def write() -> None:
        for n in range(1, 1501):
            db2.run(db2.insert(table, (n, f"v{n}")))
            if stop.is_set():
                return

    writer = threading.Thread(target=write)
    writer.start()
    db2.wait_for_events(table, lambda ev: len(ev) >= 200)
    running.stop()
    running = db2.start([table], **{"snapshot.mode": "no_data", "poll.interval.ms": 50}, **PLAIN)
    writer.join(120)
    events = db2.wait_for_events(table, lambda ev: len(ev) >= 1500)
    running.stop()

    assert sorted(e.key["id"] for e in events) == list(range(1, 1501))


def test_a_restart_resumes_after_the_last_event_of_a_partly_delivered_transaction(
    db2: Db2Driver,
) -> None:
    table = db2.table("part")
    db2.create_table(table)
    first = db2.start([table], **{"snapshot.mode": "no_data"}, **PLAIN)
    db2.run_atomically(*(db2.insert(table, (n, None)) for n in range(1, 6)))
    db2.wait_for_events(table, lambda ev: len(ev) >= 5)
    first.stop()
    # The stored offset names the fifth change of the transaction; a restart must neither
    # repeat its changes nor skip the next transaction.
    db2.run(db2.insert(table, (6, None)))
    second = db2.start([table], **PLAIN)
    events = db2.wait_for_events(table, lambda ev: len(ev) >= 6)
    second.stop()

    assert [e.key["id"] for e in events] == [1, 2, 3, 4, 5, 6]


def _schema_changes(db2: Db2Driver) -> list[Event]:
    bootstrap = db2.capture.kafka.bootstrap_servers
    return [
        Event(key=orjson.loads(m.key()), value=orjson.loads(m.value()), headers={})
        for m in read_topic_to_end(bootstrap, db2.name)
    ]


def test_the_online_schema_procedure_brings_a_new_column_into_events_and_history(
    db2: Db2Driver,
) -> None:
    table = db2.table("online")
    db2.create_table(table, ((1, "a"),))
    running = db2.start([table], **PLAIN, **{"include.schema.changes": True})
    source = db2._qualified(table)
    db2.add_column(table, "qty")  # the online procedure: INACTIVE, reinit, ALTERs, ACTIVE, reinit
    db2.run(f"INSERT INTO {source} VALUES (2, 'b', 5)")
    events = db2.wait_for_events(table, lambda ev: len(ev) >= 2)
    running.stop()

    assert _after(events) == [{"id": 1, "v": "a"}, {"id": 2, "v": "b", "qty": 5}]
    alter = [e for e in _schema_changes(db2) if e.payload["tableChanges"][0]["type"] == "ALTER"]
    (change,) = alter[-1].payload["tableChanges"]
    assert [c["name"] for c in change["table"]["columns"]] == ["id", "v", "qty"]
    assert alter[-1].payload["source"]["connector"] == "db2"


def test_an_alter_without_the_schema_procedure_is_not_captured_and_the_connector_says_so(
    db2: Db2Driver, caplog: pytest.LogCaptureFixture
) -> None:
    table = db2.table("noproc")
    db2.create_table(table, ((1, "a"),))
    running = db2.start([table], **PLAIN)
    source = db2._qualified(table)
    db2.run(f'ALTER TABLE {source} ADD COLUMN "qty" INTEGER')  # no procedure, no CD column
    deadline = time.monotonic() + 60
    row = 2
    while "lacks, so their values are not captured" not in caplog.text:
        assert time.monotonic() < deadline, "the connector never said the column is missed"
        db2.run(f"INSERT INTO {source} VALUES ({row}, 'b', 5)")
        row += 1
        time.sleep(1)
    events = db2.wait_for_events(table, lambda ev: len(ev) >= row - 1)
    running.stop()

    assert all("qty" not in after for after in _after(events))
    assert '"qty"' not in caplog.text and "column(s) qty" in caplog.text


def test_the_offline_procedure_re_registers_the_table_with_its_new_structure(
    db2: Db2Driver,
) -> None:
    table = db2.table("offline")
    db2.create_table(table, ((1, "a"),))
    running = db2.start([table], **PLAIN)
    db2.wait_for_events(table, lambda ev: len(ev) >= 1)
    source = db2._qualified(table)
    # The offline procedure: out of capture mode, change the table, back in capture mode.
    db2.db2.remove_table(db2.schema, table)
    db2.run(f'ALTER TABLE {source} ADD COLUMN "note" VARCHAR(20)')
    db2.db2.add_table(db2.schema, table)
    db2.run(f"INSERT INTO {source} VALUES (2, 'b', 'hi')")
    events = db2.wait_for_events(table, lambda ev: len(ev) >= 2)
    running.stop()

    assert _after(events)[1] == {"id": 2, "v": "b", "note": "hi"}


def test_a_stopped_capture_agent_is_reported_and_streaming_resumes_when_it_runs_again(
    emulated_db2: Db2Driver,
) -> None:
    db2 = emulated_db2
    table = db2.table("agent")
    db2.create_table(table)
    emulation = db2.db2
    emulation.set_capture_parameters(commit_interval_s=0, sleep_interval_s=0)
    running = db2.start([table], **{"snapshot.mode": "no_data"}, **PLAIN)
    emulation.stop_agent()
    try:
        db2.run(db2.insert(table, (1, None)))
        deadline = time.monotonic() + 40
        while "ASN capture agent is not running" not in running.engine.stats.last_error:
            assert time.monotonic() < deadline, running.engine.stats.last_error
            time.sleep(0.2)
    finally:
        emulation.start_agent()
        emulation.set_capture_parameters(commit_interval_s=1, sleep_interval_s=1)
    events = db2.capture.wait_for_events(db2.topic(table), lambda ev: len(ev) >= 1, timeout=60)
    running.stop()

    assert _ops(events) == [("c", {"id": 1})]


def test_a_cold_started_agent_stops_the_connector_unless_it_may_snapshot_again(
    emulated_db2: Db2Driver,
) -> None:
    db2 = emulated_db2
    table = db2.table("cold")
    db2.create_table(table, ((1, "a"),))
    running = db2.start([table], **PLAIN)
    db2.run(db2.insert(table, (2, "b")))
    db2.wait_for_events(table, lambda ev: len(ev) >= 2)
    running.stop()
    emulation = db2.db2
    emulation.stop_agent()
    db2.run(db2.insert(table, (3, "lost by the cold start")))
    emulation.cold_start()  # the CD tables emptied, the log since the last capture skipped
    db2.run(db2.insert(table, (4, "d")))
    emulation.wait_captured()

    refused = db2.capture.start(db2.resource([table], **PLAIN), login=db2.login, wait_for=None)
    refused.thread.join(60)
    assert refused.errors and isinstance(refused.errors[0], FatalError)
    message = str(refused.errors[0])
    assert "older than where ASN's change tables begin" in message
    assert "snapshot.mode=when_needed" in message and "cdcflow offsets set" in message

    again = db2.start([table], **PLAIN, **{"snapshot.mode": "when_needed"})
    events = db2.wait_for_events(table, lambda ev: len(ev) >= 6)
    again.stop()
    assert [(e.op, e.key["id"]) for e in events[2:]] == [("r", 1), ("r", 2), ("r", 3), ("r", 4)]


def test_a_transaction_the_agent_writes_in_two_capture_commits_is_emitted_whole(
    emulated_db2: Db2Driver,
) -> None:
    db2 = emulated_db2
    table = db2.table("split")
    db2.create_table(table, ((1, "a"),))
    agent = db2.db2.agent
    running = db2.start([table], **PLAIN)
    db2.wait_for_events(table, lambda ev: len(ev) >= 1)
    agent.split_rows, _ = 4, agent.release_partial.clear()
    try:
        db2.run_atomically(*(db2.insert(table, (n, "tx")) for n in range(2, 12)))
        deadline = time.monotonic() + 15
        while len(db2.db2.cd_rows(db2.schema, table)) < 4:
            assert time.monotonic() < deadline, "the agent never wrote the first part"
            time.sleep(0.05)
        time.sleep(2)  # several polls while the CD table holds part of the transaction
        assert len(db2.capture.events(db2.topic(table))) == 1, "a partial transaction leaked"
    finally:
        agent.split_rows = None
        agent.release_partial.set()
    events = db2.wait_for_events(table, lambda ev: len(ev) >= 11)
    running.stop()

    streamed = events[1:]
    assert [e.key["id"] for e in streamed] == list(range(2, 12))
    assert len({e.payload["source"]["commit_lsn"] for e in streamed}) == 1


def test_the_connector_keeps_pace_with_an_agent_on_its_configured_intervals(
    emulated_db2: Db2Driver,
) -> None:
    db2 = emulated_db2
    table = db2.table("paced")
    db2.create_table(table)
    emulation = db2.db2
    emulation.set_capture_parameters(commit_interval_s=1, sleep_interval_s=2)
    emulation.agent.follow_capture_parameters = True
    try:
        running = db2.start([table], **{"snapshot.mode": "no_data"}, **PLAIN)
        time.sleep(13)  # longer than the agent timeout (11 s) while idle: no false alarm
        assert "not running" not in running.engine.stats.last_error
        db2.run(db2.insert(table, (1, None)))
        events = db2.wait_for_events(table, lambda ev: len(ev) >= 1)
        running.stop()
    finally:
        emulation.agent.follow_capture_parameters = False
        emulation.set_capture_parameters(commit_interval_s=1, sleep_interval_s=1)
    assert _ops(events) == [("c", {"id": 1})]


def test_a_user_without_select_on_the_asn_tables_is_told_what_to_grant(
    emulated_db2: Db2Driver,
) -> None:
    db2 = emulated_db2
    table = db2.table("grant")
    db2.create_table(table)
    db2.run(
        "DO $$ BEGIN CREATE ROLE db2weak LOGIN PASSWORD 'weak-pw-1'; "
        "EXCEPTION WHEN duplicate_object THEN NULL; END $$",
        f"GRANT CONNECT ON DATABASE {db2.db2.database} TO db2weak",
        'GRANT USAGE ON SCHEMA "ASNCDC" TO db2weak',
    )
    resource = db2.resource([table])
    running = db2.capture.start(resource, login=Login("db2weak", "weak-pw-1"), wait_for=None)
    running.thread.join(60)

    assert running.errors and isinstance(running.errors[0], FatalError)
    message = str(running.errors[0])
    assert "SQLCODE=-551" in message and "GRANT SELECT ON ASNCDC.IBMSNAP_REGISTER" in message
    assert "weak-pw-1" not in message


# -- types ------------------------------------------------------------------------------------

#: Db2 SQL: the emulation runs it through its dialect translation (tests/services/db2_emulation).
TYPED_COLUMNS = """
    "id" INTEGER NOT NULL PRIMARY KEY,
    "si" SMALLINT, "bi" BIGINT, "dec" DECIMAL(9, 2), "df" DECFLOAT,
    "r" REAL, "d" DOUBLE, "c" CHAR(4), "vc" VARCHAR(20), "cl" CLOB(1M),
    "vb" VARBINARY(20), "bl" BLOB(1M), "dt" DATE, "tm" TIME, "ts" TIMESTAMP(6),
    "ts3" TIMESTAMP(3), "x" XML
"""
TYPED_VALUES = (
    "{id}, -7, 9007199254740993, 1234.5, 12.3400, 1.5, 2.25, 'ab', 'text', 'long text', "
    "BX'00FF', BX'0102', '2026-11-23', '10:15:30', "
    "'2026-11-23 10:15:30.123456', '2026-11-23 10:15:30.123', '<a>1</a>'"
)


#: What ASN's change tables hold for LOB and XML columns: nothing (it logs only that a LOB
#: changed), so streamed events carry Debezium's unavailable-value placeholder.
NOT_IN_CHANGE_TABLES = {"cl", "bl", "x"}
PLACEHOLDER = "__debezium_unavailable_value"


def test_every_type_has_debeziums_value_in_snapshot_and_stream_alike(db2: Db2Driver) -> None:
    table = db2.table("types")
    source = db2._qualified(table)
    db2.db2.ensure_schema(db2.schema)
    db2.run(
        f"CREATE TABLE {source} ({TYPED_COLUMNS})",
        f"INSERT INTO {source} VALUES ({TYPED_VALUES.format(id=1)})",
    )
    db2.db2.add_table(db2.schema, table)
    running = db2.start([table], **{"value.converter.schemas.enable": True})
    db2.run(f"INSERT INTO {source} VALUES ({TYPED_VALUES.format(id=2)})")
    events = db2.wait_for_events(table, lambda ev: len(ev) >= 2)
    running.stop()

    snapshot, streamed = (e.payload["after"] for e in events)
    assert {k: v for k, v in streamed.items() if k not in NOT_IN_CHANGE_TABLES} == {
        k: v for k, v in snapshot.items() if k not in NOT_IN_CHANGE_TABLES
    } | {"id": 2}
    assert {k: streamed[k] for k in NOT_IN_CHANGE_TABLES} == {
        "cl": PLACEHOLDER,
        "bl": base64.b64encode(PLACEHOLDER.encode()).decode(),
        "x": PLACEHOLDER,
    }
    assert snapshot == {
        "id": 1,
        "si": -7,
        "bi": 9007199254740993,
        "dec": "AeI6",  # 1234.50 as Connect Decimal bytes (unscaled 123450)
        "df": {"scale": 2, "value": "BNI="},  # 12.34, trailing zeros stripped
        "r": 1.5,
        "d": 2.25,
        "c": "ab  ",
        "vc": "text",
        "cl": "long text",
        "vb": "AP8=",
        "bl": "AQI=",
        "dt": 20780,
        "tm": 36930000,
        "ts": 1795428930123456,
        "ts3": 1795428930123,
        "x": "<a>1</a>",
    }
    fields = {f["field"]: f for f in events[0].value["schema"]["fields"][1]["fields"]}
    assert fields["dec"]["name"] == "org.apache.kafka.connect.data.Decimal"
    assert fields["df"]["name"] == "io.debezium.data.VariableScaleDecimal"
    assert fields["ts"]["name"] == "io.debezium.time.MicroTimestamp"
    assert fields["ts3"]["name"] == "io.debezium.time.Timestamp"
    assert fields["tm"]["name"] == "io.debezium.time.Time"
    assert fields["x"]["name"] == "io.debezium.data.Xml"


def test_a_table_asn_cannot_capture_is_snapshotted_and_said_to_be_snapshot_only(
    emulated_db2: Db2Driver, caplog: pytest.LogCaptureFixture
) -> None:
    db2 = emulated_db2
    table = db2.table("flags")
    source = db2._qualified(table)
    db2.run(
        f'CREATE SCHEMA IF NOT EXISTS "{db2.schema}"',
        f'CREATE TABLE {source} ("id" INTEGER NOT NULL PRIMARY KEY, "b" BOOLEAN)',
        f"INSERT INTO {source} VALUES (1, true), (2, false)",
    )
    with pytest.raises(Exception, match="does not support the BOOLEAN column"):
        db2.db2.add_table(db2.schema, table)  # SQL Replication has no BOOLEAN
    running = db2.start([table], **PLAIN)
    events = db2.wait_for_events(table, lambda ev: len(ev) >= 2)
    running.stop()

    assert [(e.op, e.payload["after"]) for e in events] == [
        ("r", {"id": 1, "b": True}),
        ("r", {"id": 2, "b": False}),
    ]
    assert "not in capture mode" in caplog.text


# -- incremental snapshots ----------------------------------------------------------------------

ROWS = 5_000


def _writer(db2: Db2Driver, table: str, stop: threading.Event) -> None:
    rng = random.Random(7)
    next_id = ROWS + 1
    source = db2._qualified(table)
    with psycopg.connect(db2.db2.dsn()) as conn:
        while not stop.is_set():
            for _ in range(20):
                choice, key = rng.random(), rng.randint(1, next_id - 1)
                if choice < 0.3:
                    conn.execute(f"INSERT INTO {source} VALUES (%s, %s)", (next_id, next_id))
                    next_id += 1
                elif choice < 0.8:
                    conn.execute(f'UPDATE {source} SET "val" = "val" + 1000000 WHERE "id" = %s',
                                 (key,))  # fmt: skip
                else:
                    conn.execute(f'DELETE FROM {source} WHERE "id" = %s', (key,))
            conn.commit()
            time.sleep(0.01)


def test_incremental_snapshot_under_concurrent_writes_reproduces_the_table(
    emulated_db2: Db2Driver,
) -> None:
    db2 = emulated_db2
    table, signal = db2.table("big"), db2.table("signal")
    source, signals = db2._qualified(table), db2._qualified(signal)
    db2.run(
        f'CREATE SCHEMA IF NOT EXISTS "{db2.schema}"',
        f'CREATE TABLE {source} ("id" INTEGER NOT NULL PRIMARY KEY, "val" INTEGER NOT NULL)',
        *(
            f"INSERT INTO {source} VALUES " + ", ".join(f"({n}, {n})" for n in range(k, k + 500))
            for k in range(1, ROWS + 1, 500)
        ),
        f'CREATE TABLE {signals} ("id" VARCHAR(42) NOT NULL PRIMARY KEY, '
        '"type" VARCHAR(32) NOT NULL, "data" VARCHAR(2048))',
    )
    db2.db2.add_table(db2.schema, table)
    db2.db2.add_table(db2.schema, signal)
    config = {
        "signal.data.collection": f"{db2.db2.database}.{db2.schema}.{signal}",
        "snapshot.mode": "no_data",
        "incremental.snapshot.chunk.size": 500,
        **PLAIN,
    }
    running = db2.start([table], **config)
    stop = threading.Event()
    writer = threading.Thread(target=_writer, args=(db2, table, stop))
    writer.start()
    data = orjson.dumps({"data-collections": [f"{db2.schema}.{table}"]}).decode()
    db2.run(f"INSERT INTO {signals} VALUES ('snap-1', 'execute-snapshot', '{data}')")
    try:
        _wait_for_status(running, "snap-1", "COMPLETED")
    finally:
        stop.set()
        writer.join(60)
    db2.db2.wait_captured()
    expected = dict(db2.db2.query(f'SELECT "id", "val" FROM {source}'))
    deadline = time.monotonic() + 120
    while (events := db2.capture.events(db2.topic(table), timeout=60)) and _replay(
        events
    ) != expected:
        assert time.monotonic() < deadline, "the topic never matched the table"
        time.sleep(0.5)
    running.stop()

    reads = [e for e in events if e.value is not None and e.payload["op"] == "r"]
    assert {e.payload["source"]["snapshot"] for e in reads} == {"incremental"}
    assert 0 < len(reads) <= ROWS + 5_000
