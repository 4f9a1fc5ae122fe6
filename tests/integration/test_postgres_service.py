"""The PostgreSQL fixture is a real server that decodes logical replication changes."""

from __future__ import annotations

import psycopg

from cdcflow.operator.devservices.postgres import PostgresServer


def test_a_logical_slot_streams_a_committed_insert(postgres_server: PostgresServer) -> None:
    with psycopg.connect(postgres_server.dsn(), autocommit=True) as conn:
        conn.execute("CREATE TABLE smoke_slot (id int PRIMARY KEY, name text)")
        conn.execute("SELECT pg_create_logical_replication_slot('smoke', 'test_decoding')")
        try:
            conn.execute("INSERT INTO smoke_slot VALUES (1, 'hello')")
            rows = conn.execute(
                "SELECT data FROM pg_logical_slot_get_changes('smoke', NULL, NULL)"
            ).fetchall()
        finally:
            conn.execute("SELECT pg_drop_replication_slot('smoke')")
    changes = [row[0] for row in rows]
    assert any("INSERT" in change and "'hello'" in change for change in changes), changes


def test_the_cdc_role_may_replicate_but_is_not_superuser(postgres_server: PostgresServer) -> None:
    dsn = postgres_server.dsn(user=postgres_server.cdc_user, password=postgres_server.cdc_password)
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "SELECT rolreplication, rolsuper FROM pg_roles WHERE rolname = current_user"
        ).fetchone()
        wal_level = conn.execute("SHOW wal_level").fetchone()
    assert row == (True, False)
    assert wal_level == ("logical",)
