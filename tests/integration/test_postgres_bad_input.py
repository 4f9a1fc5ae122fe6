"""Bad input gets a clear error, a non-zero exit and never an echoed password."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psycopg
import yaml

from cdcflow.operator.devservices.postgres import PostgresServer
from cdcflow.operator.devservices.processes import free_port
from tests.plugins.fix_capture import assert_clean_failure

SECRET = "s3cret-Do-Not-Print"


def _connector_yaml(
    tmp_path: Path, *, host: str, port: int, database: str, config: dict[str, object]
) -> Path:
    document = {
        "apiVersion": "cdcflow.io/v1alpha1",
        "kind": "CdcConnector",
        "metadata": {"name": "bad-input"},
        "spec": {
            "source": {"postgresql": {"host": host, "port": port, "database": database}},
            "kafka": {"bootstrapServers": "127.0.0.1:1"},
            "config": {
                "slot.name": "bad_input",
                "publication.autocreate.mode": "disabled",
                **config,
            },
        },
    }
    path = tmp_path / "connector.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


def _server_yaml(tmp_path: Path, server: PostgresServer, config: dict[str, object]) -> Path:
    return _connector_yaml(
        tmp_path, host=server.host, port=server.port, database=server.database, config=config
    )


def _capture(
    path: Path, *, user: str, password: str, tmp_path: Path
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CDCFLOW_DATABASE_USER": user, "CDCFLOW_DATABASE_PASSWORD": password}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "cdcflow.operator.cli",
            "capture",
            "-f",
            str(path),
            "--offsets-file",
            str(tmp_path / "offsets.json"),
            "--status-port",
            "-1",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _assert_clean_failure(result: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert_clean_failure(result, *fragments, secret=SECRET)


def test_wrong_password_names_the_credentials_to_check(
    postgres_server: PostgresServer, tmp_path: Path
) -> None:
    path = _server_yaml(tmp_path, postgres_server, {})
    result = _capture(path, user="cdc", password=SECRET, tmp_path=tmp_path)
    _assert_clean_failure(result, "password authentication failed", "CDCFLOW_DATABASE_PASSWORD")


def test_missing_replication_privilege_names_the_alter_role_fix(
    postgres_server: PostgresServer, tmp_path: Path
) -> None:
    with psycopg.connect(postgres_server.dsn(), autocommit=True) as conn:
        conn.execute("DROP ROLE IF EXISTS reader")
        conn.execute(f"CREATE ROLE reader LOGIN PASSWORD '{SECRET}'")
    path = _server_yaml(tmp_path, postgres_server, {})
    result = _capture(path, user="reader", password=SECRET, tmp_path=tmp_path)
    _assert_clean_failure(result, "REPLICATION", "ALTER ROLE reader REPLICATION")


def test_wal_level_replica_says_how_to_enable_logical_decoding(
    postgres_without_logical_decoding: PostgresServer, tmp_path: Path
) -> None:
    server = postgres_without_logical_decoding
    path = _server_yaml(tmp_path, server, {})
    result = _capture(
        path, user=server.superuser, password=server.superuser_password, tmp_path=tmp_path
    )
    _assert_clean_failure(result, "wal_level=replica", "wal_level = logical")


def test_unknown_property_is_rejected_with_a_suggestion(
    postgres_server: PostgresServer, tmp_path: Path
) -> None:
    path = _server_yaml(tmp_path, postgres_server, {"snapshot.mod": "initial"})
    result = _capture(path, user="cdc", password=SECRET, tmp_path=tmp_path)
    _assert_clean_failure(result, "unknown connector property", "did you mean `snapshot.mode`?")


def test_inline_password_in_config_is_refused(
    postgres_server: PostgresServer, tmp_path: Path
) -> None:
    path = _server_yaml(tmp_path, postgres_server, {"database.password": SECRET})
    result = _capture(path, user="cdc", password="x", tmp_path=tmp_path)
    _assert_clean_failure(result, "must not appear in the configuration", "Secret")


def test_unreachable_host_fails_fast_with_where_it_tried(tmp_path: Path) -> None:
    port = free_port()
    path = _connector_yaml(tmp_path, host="127.0.0.1", port=port, database="inventory", config={})
    result = _capture(path, user="cdc", password=SECRET, tmp_path=tmp_path)
    _assert_clean_failure(result, f"127.0.0.1:{port}", "cannot connect to PostgreSQL")


def test_all_tables_publication_that_would_break_writes_is_refused(
    postgres_server: PostgresServer, tmp_path: Path
) -> None:
    schema = f"a_keyless_{os.getpid()}"  # sorts first among the tables listed
    with psycopg.connect(postgres_server.dsn(), autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
        conn.execute(f"CREATE TABLE {schema}.events (note text)")
        conn.execute(f"INSERT INTO {schema}.events VALUES ('x')")
    try:
        path = _server_yaml(
            tmp_path,
            postgres_server,
            {"publication.autocreate.mode": "all_tables", "publication.name": "breaks_writes"},
        )
        result = _capture(
            path,
            user=postgres_server.superuser,
            password=postgres_server.superuser_password,
            tmp_path=tmp_path,
        )
        _assert_clean_failure(
            result,
            f"{schema}.events",
            "refuse UPDATE and DELETE",
            "publication.autocreate.mode=filtered",
        )
        with psycopg.connect(postgres_server.dsn(), autocommit=True) as conn:
            published = conn.execute(
                "SELECT count(*) FROM pg_publication WHERE pubname = 'breaks_writes'"
            ).fetchone()
            conn.execute(f"UPDATE {schema}.events SET note = 'still writable'")
        assert published == (0,)
    finally:
        with psycopg.connect(postgres_server.dsn(), autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


def test_unknown_database_says_which_and_how_to_fix_it(
    postgres_server: PostgresServer, tmp_path: Path
) -> None:
    path = _connector_yaml(
        tmp_path,
        host=postgres_server.host,
        port=postgres_server.port,
        database="no_such_db",
        config={},
    )
    result = _capture(
        path,
        user=postgres_server.superuser,
        password=postgres_server.superuser_password,
        tmp_path=tmp_path,
    )
    _assert_clean_failure(
        result, "database no_such_db does not exist", "spec.source.postgresql.database"
    )
