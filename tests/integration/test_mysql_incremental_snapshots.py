"""Signal-driven snapshots on a real MariaDB, correct under concurrent writes.

The property the PostgreSQL suite proves, for the binlog connector: an incremental snapshot
taken while a writer inserts, updates and deletes random rows leaves a topic whose replay
equals the table, also when the connector restarts in the middle; signals arrive through the
signal table and through Kafka; a blocking snapshot reads the table while streaming waits.
"""

from __future__ import annotations

import random
import threading
import time
from typing import Any

import orjson
import pymysql
from confluent_kafka import Producer

from tests.integration.test_incremental_snapshots import _replay, _status_of, _wait_for_status
from tests.plugins.fix_conformance import MariaDbDriver
from tests.services import mariadb

ROWS = 20_000


def _setup(maria: MariaDbDriver, rows: int) -> tuple[str, str]:
    table, signal = maria.table("big"), maria.table("signal")
    maria.run(
        f"CREATE TABLE {table} (id int PRIMARY KEY, val int NOT NULL, color varchar(8) NOT NULL)",
        f"INSERT INTO {table} SELECT seq, seq, IF(seq % 3 = 0, 'blue', 'red') FROM seq_1_to_{rows}",
        f"CREATE TABLE {signal} (id varchar(64) PRIMARY KEY, type varchar(32) NOT NULL, "
        "data varchar(2048))",
        # What docs/mysql.md asks for: watermarks are rows the connector writes.
        f"GRANT INSERT, DELETE ON {signal} TO '{maria.server.cdc_user}'@'%'",
    )
    return table, signal


def _config(maria: MariaDbDriver, signal: str, **extra: Any) -> dict[str, Any]:
    return {
        "signal.data.collection": f"{maria.server.database}.{signal}",
        "snapshot.mode": "no_data",
        "key.converter.schemas.enable": False,
        "value.converter.schemas.enable": False,
        "notification.enabled.channels": "log",
        **extra,
    }


def _signal(maria: MariaDbDriver, signal: str, signal_id: str, tables: list[str]) -> None:
    data = orjson.dumps({"data-collections": [f"{maria.server.database}.{t}" for t in tables]})
    text = data.decode().replace("'", "''")
    maria.run(f"INSERT INTO {signal} VALUES ('{signal_id}', 'execute-snapshot', '{text}')")


def _connect(server: mariadb.MariaDbServer) -> pymysql.Connection[Any]:
    settings = server.connection_settings()
    return pymysql.connect(
        host=str(settings["host"]),
        port=int(settings["port"]),
        user=str(settings["user"]),
        password=str(settings["password"]),
        database=server.database,
        autocommit=False,
    )


def _writer(server: mariadb.MariaDbServer, table: str, stop: threading.Event, rows: int) -> None:
    rng = random.Random(11)
    next_id = rows + 1
    with _connect(server) as conn, conn.cursor() as cursor:
        while not stop.is_set():
            for _ in range(20):
                choice, key = rng.random(), rng.randint(1, next_id - 1)
                if choice < 0.3:
                    cursor.execute(
                        f"INSERT INTO {table} VALUES (%s, %s, 'new')", (next_id, next_id)
                    )
                    next_id += 1
                elif choice < 0.8:
                    cursor.execute(f"UPDATE {table} SET val = val + 1000000 WHERE id = %s", (key,))
                else:
                    cursor.execute(f"DELETE FROM {table} WHERE id = %s", (key,))
            conn.commit()
            time.sleep(0.005)


def _table_now(maria: MariaDbDriver, table: str) -> dict[int, int]:
    with _connect(maria.server) as conn, conn.cursor() as cursor:
        cursor.execute(f"SELECT id, val FROM {table}")
        return {int(k): int(v) for k, v in cursor.fetchall()}


def _caught_up(maria: MariaDbDriver, running: Any) -> None:
    with _connect(maria.server) as conn, conn.cursor() as cursor:
        cursor.execute("SELECT @@GLOBAL.gtid_binlog_pos")
        (target,) = cursor.fetchone() or ("",)
    deadline = time.monotonic() + 120
    while running.engine.stats.offset.get("gtids") != target:
        assert time.monotonic() < deadline, f"connector did not catch up with {target}"
        time.sleep(0.1)


def test_incremental_snapshot_under_concurrent_writes_reproduces_the_table(
    maria: MariaDbDriver,
) -> None:
    table, signal = _setup(maria, ROWS)
    running = maria.start([table, signal], **_config(maria, signal))
    stop = threading.Event()
    writer = threading.Thread(target=_writer, args=(maria.server, table, stop, ROWS))
    writer.start()
    _signal(maria, signal, "snap-1", [table])
    try:
        _wait_for_status(running, "snap-1", "COMPLETED")
    finally:
        stop.set()
        writer.join(60)
    _caught_up(maria, running)
    running.stop()

    events = maria.capture.events(maria.topic(table), timeout=120)
    assert _replay(events) == _table_now(maria, table)
    reads = [e for e in events if e.value is not None and e.payload["op"] == "r"]
    assert {e.payload["source"]["snapshot"] for e in reads} == {"incremental"}
    assert 0 < len(reads) <= ROWS + 10_000


def test_incremental_snapshot_resumes_after_a_restart_where_it_stopped(
    maria: MariaDbDriver,
) -> None:
    table, signal = _setup(maria, ROWS)
    config = _config(maria, signal, **{"incremental.snapshot.chunk.size": 500})
    first = maria.start([table, signal], **config)
    _signal(maria, signal, "snap-r", [table])
    maria.wait_for_events(table, lambda ev: len(ev) >= 3000)
    first.stop()
    maria.run(f"UPDATE {table} SET val = -7 WHERE id = {ROWS}")
    second = maria.start([table, signal], **config)
    _wait_for_status(second, "snap-r", "COMPLETED")
    _caught_up(maria, second)
    second.stop()

    events = maria.capture.events(maria.topic(table), timeout=120)
    assert _replay(events) == _table_now(maria, table)
    assert _replay(events)[ROWS] == -7


def test_a_signal_sent_through_kafka_starts_an_incremental_snapshot(
    maria: MariaDbDriver,
) -> None:
    table, signal = _setup(maria, 50)
    topic = f"{maria.name}-signal"
    extra = {"signal.enabled.channels": "source,kafka", "signal.kafka.topic": topic}
    running = maria.start([table, signal], **_config(maria, signal, **extra))
    producer = Producer({"bootstrap.servers": maria.capture.kafka.bootstrap_servers})
    data = {"type": "incremental", "data-collections": [f"{maria.server.database}.{table}"]}
    value = orjson.dumps({"id": "via-kafka", "type": "execute-snapshot", "data": data})
    producer.produce(topic, key=maria.name, value=value)
    producer.flush(30)
    # The channel subscribed before the producer created the topic: it sees the topic at
    # its next metadata refresh, so this waits longer than for a table topic.
    _wait_for_status(running, "via-kafka", "COMPLETED", timeout=120)
    events = maria.wait_for_events(table, lambda ev: len(ev) >= 50)
    running.stop()

    assert sorted(e.key["id"] for e in events) == list(range(1, 51))
    assert {e.payload["source"]["snapshot"] for e in events} == {"incremental"}


def test_blocking_snapshot_reads_the_table_and_streaming_goes_on_after_it(
    maria: MariaDbDriver,
) -> None:
    table, signal = _setup(maria, 300)
    running = maria.start([table, signal], **_config(maria, signal))
    signal_id = "block-1"
    data = {"type": "blocking", "data-collections": [f"{maria.server.database}.{table}"]}
    text = orjson.dumps(data).decode()
    maria.run(f"INSERT INTO {signal} VALUES ('{signal_id}', 'execute-snapshot', '{text}')")
    maria.run(f"UPDATE {table} SET val = -1 WHERE id = 1")
    events = maria.wait_for_events(table, lambda ev: len(ev) >= 301)
    status = _status_of(running, signal_id)
    running.stop()

    reads = [e for e in events if e.payload["op"] == "r"]
    assert len(reads) == 300 and status is not None
    update = next(e for e in events if e.payload["op"] == "u")
    assert update.payload["after"]["val"] == -1
