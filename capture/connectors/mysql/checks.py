"""Startup checks of a MySQL/MariaDB server for binlog capture; each failure names its fix."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass

from cdcflow.capture.connectors.mysql.connection import (
    Connection,
    ServerError,
    query,
    query_named,
)
from cdcflow.capture.errors import FatalError

log = logging.getLogger(__name__)

#: What the connector needs, and the privileges that grant it (MariaDB renamed REPLICATION
#: CLIENT to BINLOG MONITOR in 10.5).
NEEDED_PRIVILEGES = {
    "REPLICATION SLAVE": ("REPLICATION SLAVE", "REPLICATION REPLICA"),
    "REPLICATION CLIENT": ("REPLICATION CLIENT", "BINLOG MONITOR"),
    "SELECT": ("SELECT",),
}


@dataclass(frozen=True)
class ServerInfo:
    """What the connector learns about the server at startup."""

    version: str
    mariadb: bool
    server_id: int
    gtid_mode: bool
    row_metadata_full: bool


def server_info(conn: Connection) -> ServerInfo:
    """Check the binlog settings capture depends on and describe the server."""
    variables = _variables(conn)
    version = variables.get("version", "")
    mariadb = "mariadb" in version.lower()
    if variables.get("log_bin", "OFF").upper() not in ("ON", "1"):
        raise FatalError(
            "the server's binary log is off, so there is nothing to capture: start it with "
            "log_bin (e.g. --log-bin=mysql-bin) and restart the server"
        )
    if variables.get("binlog_format", "").upper() != "ROW":
        raise FatalError(
            f"binlog_format is {variables.get('binlog_format')}, but row changes need ROW: "
            "SET GLOBAL binlog_format = 'ROW' (and in the server's configuration)"
        )
    if variables.get("binlog_row_image", "FULL").upper() != "FULL":
        raise FatalError(
            f"binlog_row_image is {variables.get('binlog_row_image')}, so updates and deletes "
            "lack the full before image: SET GLOBAL binlog_row_image = 'FULL'"
        )
    metadata = variables.get("binlog_row_metadata", "").upper()
    if metadata != "FULL":
        log.warning(
            "binlog_row_metadata is %s: ENUM/SET values and column charsets are decoded from "
            "the schema history alone; FULL makes them travel with each row event",
            metadata or "not supported",
        )
    return ServerInfo(
        version=version,
        mariadb=mariadb,
        server_id=int(variables.get("server_id", "0")),
        gtid_mode=mariadb or variables.get("gtid_mode", "OFF").upper() == "ON",
        row_metadata_full=metadata == "FULL",
    )


def check_server_id(info: ServerInfo, ours: int) -> None:
    """Our replica server id must differ from the server's own."""
    if info.server_id == ours:
        raise FatalError(
            f"database.server.id={ours} is the server's own server_id: choose another "
            "(unique among all the server's replicas)"
        )


#: MySQL 8.0.22 renamed SHOW SLAVE HOSTS to SHOW REPLICAS (and its columns).
SHOW_REPLICAS_SINCE = (8, 0, 22)


def replica_listing(info: ServerInfo) -> str:
    """The statement that lists the server's registered replicas."""
    if not info.mariadb and _version(info.version) >= SHOW_REPLICAS_SINCE:
        return "SHOW REPLICAS"
    return "SHOW SLAVE HOSTS"


def check_replicas(conn: Connection, info: ServerInfo, ours: int) -> None:
    """No replica registered with the server may use our server id: the server would drop
    one of the two binlog connections whenever the other connects (as Debezium, fail at
    start instead). Only replicas that set ``report_host`` are listed, so a clash can still
    surface later, as the server's error on the binlog connection (see
    :func:`cdcflow.capture.connectors.mysql.binlog.server_id_clash`). A user not allowed to
    list replicas skips this check."""
    statement = replica_listing(info)
    try:
        replicas = query_named(conn, statement)
    except ServerError as error:
        log.info("cannot list the server's replicas (%s): %s", statement, error)
        return
    for replica in replicas:
        server_id = replica.get("server_id")
        if server_id is None or int(server_id) != ours:
            continue
        host, port = replica.get("host") or "?", replica.get("port") or "?"
        uuid = replica.get("replica_uuid") or replica.get("slave_uuid")
        who = f"{host}:{port}" + (f" (uuid {uuid})" if uuid else "")
        raise FatalError(
            f"database.server.id={ours} is already used by the replica at {who} ({statement}): "
            "two replicas with one server id make the server drop one of their binlog "
            "connections whenever the other connects. Choose a database.server.id unique "
            "among all of the server's replicas (and other connectors)"
        )


def _version(text: str) -> tuple[int, ...]:
    """``8.0.36-log`` → (8, 0, 36)."""
    found = re.match(r"(\d+)\.(\d+)\.(\d+)", text)
    return tuple(int(part) for part in found.groups()) if found else ()


def check_privileges(conn: Connection, user: str) -> None:
    """The grants binlog capture needs: REPLICATION SLAVE, REPLICATION CLIENT, SELECT."""
    grants = " ".join(str(row[0]).upper() for row in query(conn, "SHOW GRANTS"))
    held = set(_granted(grants))
    if "ALL PRIVILEGES" in held:
        return
    missing = [
        need
        for need, granted_by in NEEDED_PRIVILEGES.items()
        if not any(privilege in held for privilege in granted_by)
    ]
    if missing:
        raise FatalError(
            f"user {user!r} lacks {', '.join(missing)}: GRANT SELECT, RELOAD, SHOW DATABASES, "
            f"LOCK TABLES, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO '{user}'"
        )


def _granted(grants: str) -> Iterable[str]:
    for found in re.finditer(r"GRANT (.+?) ON ", grants):
        yield from (p.strip() for p in found[1].split(","))


def _variables(conn: Connection) -> dict[str, str]:
    names = (
        "version",
        "log_bin",
        "binlog_format",
        "binlog_row_image",
        "binlog_row_metadata",
        "server_id",
        "gtid_mode",
    )
    placeholders = ", ".join(["%s"] * len(names))
    rows = query(conn, f"SHOW GLOBAL VARIABLES WHERE Variable_name IN ({placeholders})", names)
    return {str(name).lower(): str(value) for name, value in rows}
