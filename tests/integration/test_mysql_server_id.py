"""Two binlog readers with one ``database.server.id`` on a real MariaDB: the server drops the
first when the second connects, and that reader fails with a fatal error naming the property
instead of reconnecting (and dropping the other) forever."""

from __future__ import annotations

import time

from cdcflow.capture.connectors.mysql import binlog
from cdcflow.capture.errors import FatalError
from tests.services import mariadb
from tests.services.mariadb import MariaDbServer

SERVER_ID = 4711


def _reader(server: MariaDbServer) -> binlog.BinlogReader:
    # from the server's current position (an empty GTID state would ask for the whole binlog
    # history, which other tests purge)
    (position,) = mariadb.query(server, "SELECT @@GLOBAL.gtid_binlog_pos")[0]
    return binlog.BinlogReader(
        server.connection_settings(cdc=True),
        server_id=SERVER_ID,
        start=binlog.StartAt(gtids=str(position or "")),
        mariadb=True,
        queue_size=64,
    )


def _drain_until_failure(reader: binlog.BinlogReader, deadline: float) -> BaseException | None:
    while time.monotonic() < deadline:
        try:
            reader.next(0.2)
        except Exception as error:
            return error
    return None


def test_a_second_reader_with_the_same_server_id_makes_the_first_fail_naming_the_property(
    mariadb_server: MariaDbServer,
) -> None:
    first = _reader(mariadb_server)
    second = None
    try:
        assert _drain_until_failure(first, time.monotonic() + 2.0) is None  # streaming alone
        second = _reader(mariadb_server)
        error = _drain_until_failure(first, time.monotonic() + 10.0)

        assert isinstance(error, FatalError), error
        assert f"database.server.id={SERVER_ID}" in str(error)
        assert "unique" in str(error)
        assert _drain_until_failure(second, time.monotonic() + 2.0) is None
    finally:
        first.close()
        if second is not None:
            second.close()
