"""Kill the MariaDB capture process anywhere: after restarts every committed change is in Kafka.

As for PostgreSQL (tests/integration/test_postgres_crash_safety.py): SIGKILL mid-snapshot and
mid-stream (most likely mid-transaction), and deaths at the two dangerous instants of an offset
commit; replaying the topic must reproduce the table, and every row ever inserted must have
been seen. Offsets and schema history live in files, as a capture pod keeps them.
"""

from __future__ import annotations

import random
import signal
import threading
from typing import Any

import pymysql

from tests.integration.test_postgres_crash_safety import _replay
from tests.plugins.fix_capture import CaptureProcess
from tests.plugins.fix_conformance import MariaDbDriver
from tests.services import mariadb

ROUNDS = 40  # each: 500 inserts, some updates and deletes in one transaction
PRELOAD = 20_000


def _connect(server: mariadb.MariaDbServer) -> pymysql.Connection[Any]:
    settings = server.connection_settings()
    return pymysql.connect(
        host=str(settings["host"]),
        port=int(settings["port"]),
        user=str(settings["user"]),
        password=str(settings["password"]),
        database=server.database,
    )


def _workload(server: mariadb.MariaDbServer, table: str, done: threading.Event) -> None:
    rng = random.Random(7)
    with _connect(server) as conn, conn.cursor() as cursor:
        for _ in range(ROUNDS):
            cursor.execute(f"SELECT coalesce(max(id), 0) FROM {table}")
            (top,) = cursor.fetchone() or (0,)
            # Explicit ids: InnoDB leaves auto-increment gaps after multi-row inserts.
            cursor.execute(f"INSERT INTO {table} SELECT {top} + seq, seq FROM seq_1_to_500")
            cursor.execute(
                f"UPDATE {table} SET val = val + 1 WHERE id %% 97 = %s AND id <= %s",
                (rng.randrange(97), top),
            )
            cursor.execute(
                f"DELETE FROM {table} WHERE id %% 211 = %s AND id <= %s", (rng.randrange(211), top)
            )
            conn.commit()
    done.set()


def test_no_committed_change_is_lost_across_kill_9_restarts(maria: MariaDbDriver) -> None:
    table = maria.table("orders")
    maria.run(
        f"CREATE TABLE {table} (id bigint PRIMARY KEY, val int NOT NULL)",
        f"INSERT INTO {table} SELECT seq, seq FROM seq_1_to_{PRELOAD}",
    )
    capture = maria.capture
    config = capture.write_yaml(
        maria.resource(
            [table],
            **{
                "key.converter.schemas.enable": False,
                "value.converter.schemas.enable": False,
                "offset.flush.interval.ms": 300,
                "snapshot.fetch.size": 500,
            },
        )
    )

    def process(crash_point: str = "") -> CaptureProcess:
        return CaptureProcess(capture, config, crash_point, login=maria.login)

    first = process()
    first.wait_for(lambda s: s["phase"] == "snapshot")
    first.kill()  # mid-snapshot: the next start must snapshot again

    second = process()
    second.wait_for(lambda s: s["phase"] == "streaming")
    done = threading.Event()
    writer = threading.Thread(target=_workload, args=(maria.server, table, done))
    writer.start()
    second.wait_for(
        lambda s: s["streaming"]["totalEventsSeen"] > 0 if s.get("streaming") else False
    )
    second.kill()  # mid-stream, most likely mid-transaction

    for point in ("after-flush:3", "after-offset-save:3"):
        crashing = process(point)
        assert crashing.exit_code() == 137

    final = process()
    writer.join(600)
    assert done.is_set()
    (target,) = mariadb.query(maria.server, "SELECT @@GLOBAL.gtid_binlog_pos")[0]
    final.wait_for(lambda s: s["offset"].get("gtids") == target, timeout=300)
    final.process.send_signal(signal.SIGTERM)
    assert final.exit_code(60) == 0

    events = capture.events(maria.topic(table), timeout=120)
    state, seen = _replay(events)
    source = {
        int(k): int(v) for k, v in mariadb.query(maria.server, f"SELECT id, val FROM {table}")
    }
    (max_id,) = mariadb.query(maria.server, f"SELECT max(id) FROM {table}")[0]
    assert len(source) > PRELOAD
    assert state == source
    assert seen >= set(source)
    assert set(range(1, int(str(max_id)) + 1)) - seen == set()
