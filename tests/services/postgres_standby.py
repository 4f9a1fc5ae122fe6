"""A physical standby of a test PostgreSQL (16 or newer), made as an operator makes one.

The Maven-served servers ship without ``pg_basebackup`` (and the system's 15 refuses newer
servers), so the standby is copied with PostgreSQL's low-level backup API, as backup tools do:
a physical slot on the primary reserves the WAL, ``pg_backup_start`` … copy the data folder …
``pg_backup_stop`` gives the ``backup_label``, and the copy starts in standby mode
(``standby.signal``) streaming from that slot. Settings are the caller's: a failover test gives
``sync_replication_slots = on`` and ``hot_standby_feedback = on``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import psycopg

from cdcflow.operator.devservices import postgres, processes
from cdcflow.operator.devservices.postgres import PostgresServer

#: What the copy must not take from the primary's data folder (as pg_basebackup leaves out).
SKIPPED = ("postmaster.pid", "postmaster.opts", "pg_wal", "pg_replslot", "standby.signal")


@contextlib.contextmanager
def running_standby(
    primary: PostgresServer, *, slot: str, settings: Mapping[str, str] | None = None
) -> Iterator[PostgresServer]:
    """A streaming standby of ``primary`` through the physical slot ``slot``; stopped and
    removed at the end. The returned server is the standby (its own port and data folder)."""
    workdir = primary.data_dir.parent
    bindir = _bindir(workdir)
    data_dir, log = workdir / f"standby-{slot}", workdir / f"standby-{slot}.log"
    with psycopg.connect(primary.dsn(dbname="postgres"), autocommit=True) as conn:
        conn.execute("SELECT pg_create_physical_replication_slot(%s, true)", (slot,))
        _base_backup(conn, primary.data_dir, data_dir)
    _configure(primary, data_dir=data_dir, slot=slot, settings=settings or {})
    user = postgres.os_user()
    if user is not None:
        _chown_tree(data_dir, user)
    port, host = processes.free_port(), processes.service_host()
    process = processes.start_process(
        postgres.server_command(bindir, data_dir=data_dir, port=port, host=host, sockets=workdir),
        log=log,
        user=user,
    )
    standby = replace(primary, port=port, data_dir=data_dir, log=log)
    try:
        processes.wait_until(
            lambda: _answers(standby),
            service="PostgreSQL standby",
            what=f"port {port}",
            log=log,
            timeout=60,
            process=process,
        )
        yield standby
    finally:
        processes.stop_process(process)
        shutil.rmtree(data_dir, ignore_errors=True)


def crash(server: PostgresServer) -> None:
    """SIGKILL the server's postmaster, as a failed node would go."""
    pid = int((server.data_dir / "postmaster.pid").read_text().split()[0])
    os.kill(pid, signal.SIGKILL)


def _bindir(workdir: Path) -> Path:
    unpacked = workdir / "server" / "bin"  # a Maven-served release, unpacked beside its data
    return unpacked if (unpacked / "postgres").exists() else postgres.find_bindir()


def _base_backup(conn: psycopg.Connection[tuple[Any, ...]], source: Path, target: Path) -> None:
    conn.execute("SELECT pg_backup_start('standby', true)")
    try:
        shutil.copytree(
            source, target, ignore=lambda _dir, names: [n for n in names if n in SKIPPED]
        )
    finally:
        row = conn.execute("SELECT labelfile, spcmapfile FROM pg_backup_stop(true)").fetchone()
    assert row is not None
    (target / "backup_label").write_text(row[0])
    if row[1]:
        (target / "tablespace_map").write_text(row[1])
    for folder in ("pg_wal", "pg_wal/archive_status", "pg_replslot"):
        (target / folder).mkdir(exist_ok=True)


def _configure(
    primary: PostgresServer, *, data_dir: Path, slot: str, settings: Mapping[str, str]
) -> None:
    conninfo = primary.dsn(dbname=primary.database).replace("'", "\\'")
    lines = {
        "primary_conninfo": conninfo,  # with dbname: what slot synchronisation needs
        "primary_slot_name": slot,
        **settings,
    }
    with (data_dir / "postgresql.auto.conf").open("a") as conf:
        conf.writelines(f"{name} = '{value}'\n" for name, value in lines.items())
    (data_dir / "standby.signal").touch()


def _chown_tree(root: Path, user: str) -> None:
    shutil.chown(root, user=user)
    root.chmod(0o700)
    for folder, dirs, files in os.walk(root):
        for name in (*dirs, *files):
            shutil.chown(Path(folder) / name, user=user)


def _answers(server: PostgresServer) -> bool:
    with (
        contextlib.suppress(psycopg.Error),
        psycopg.connect(server.dsn(), connect_timeout=2) as conn,
    ):
        row = conn.execute("SELECT pg_is_in_recovery()").fetchone()
        return bool(row and row[0])
    return False
