"""A real MariaDB's catalog and its SHOW CREATE TABLE text give the same table structures.

Debezium builds MySQL/MariaDB tables by parsing ``SHOW CREATE TABLE``; the connector may build
them from ``information_schema`` instead. Both must agree, column for column, for every type,
default, key and comment this server prints.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pymysql
import pytest

from cdcflow.capture.connectors.mysql.ddl import apply_ddl
from cdcflow.capture.connectors.mysql.structure import (
    CATALOG_COLUMNS_SQL,
    PRIMARY_KEY_SQL,
    TABLE_CHARSET_SQL,
    TABLE_COMMENT_SQL,
    CatalogColumn,
    table_from_catalog,
)
from cdcflow.capture.spi import TableId, TableStructure
from tests.services.mariadb import MariaDbServer

DATABASE = "structure_catalog"

TABLES = {
    "every_type": """
        CREATE TABLE every_type (
          id int NOT NULL AUTO_INCREMENT,
          ti tinyint, tiu tinyint(3) unsigned zerofill, si smallint DEFAULT -5,
          mi mediumint unsigned, bi bigint(20) unsigned NOT NULL DEFAULT 0,
          bo boolean DEFAULT true, de decimal(10,2) DEFAULT 1.50, de2 decimal, nu numeric(5),
          fl float, fl2 float(7,3), db double, db2 double precision(10,2), re real DEFAULT 2.5e3,
          bt bit, bt8 bit(8) DEFAULT b'101',
          dt date DEFAULT '2020-01-02', tm time(3), dtm datetime(6) DEFAULT current_timestamp(6),
          ts timestamp NOT NULL DEFAULT current_timestamp() ON UPDATE current_timestamp(),
          ts2 timestamp NULL DEFAULT NULL ON UPDATE current_timestamp(),
          ts3 datetime NOT NULL ON UPDATE now(),
          yr year,
          ch char(5) DEFAULT 'it''s',
          vc varchar(255) CHARACTER SET latin1 COLLATE latin1_bin
             COMMENT 'a ''quoted'' \\\\ comment\nsecond line',
          vcb varchar(10) COLLATE utf8mb4_bin NOT NULL DEFAULT '',
          nc nchar(3), nvc nvarchar(4),
          tt tinytext, tx text, mt mediumtext, lt longtext,
          bn binary(4), vb varbinary(10), tb tinyblob, bl blob, mb mediumblob, lb longblob,
          en enum('a','b''c','d\\\\e', 'x,y') DEFAULT 'a',
          st set('x','y') NOT NULL DEFAULT 'x,y',
          js json,
          pt point, g geometry NOT NULL, ls linestring, pg polygon, mpt multipoint,
          mls multilinestring, mpg multipolygon, gc geometrycollection,
          uu uuid,
          gen int AS (ti + 1) VIRTUAL, gens int GENERATED ALWAYS AS (si * 2) STORED,
          ex int DEFAULT (1 + 1), fn varchar(36) DEFAULT uuid(), cd date DEFAULT curdate(),
          bx binary(2) DEFAULT x'0A0B', bk varchar(10) DEFAULT 'a\\\\b',
          PRIMARY KEY (id), UNIQUE KEY u (vc), KEY k (ti), SPATIAL KEY sp (g)
        ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='every ''type'''
    """,
    "unique_not_null": """
        CREATE TABLE unique_not_null (
          a int NOT NULL, b varchar(3) NOT NULL, c int,
          UNIQUE KEY uc (c), UNIQUE KEY ub (b, a)
        ) DEFAULT CHARSET=latin1
    """,
    "composite_key": """
        CREATE TABLE composite_key (
          tenant varchar(20) NOT NULL, id bigint NOT NULL, note text,
          PRIMARY KEY (id, tenant)
        ) DEFAULT CHARSET=utf8mb3
    """,
    "serial_key": "CREATE TABLE serial_key (s serial, x int)",
    "no_key": "CREATE TABLE no_key (a int, b varchar(3) CHARACTER SET utf8mb4)",
    "Mixed Case": "CREATE TABLE `Mixed Case` (`Col One` int NOT NULL, PRIMARY KEY (`Col One`))",
}


def _connect(server: MariaDbServer, database: str | None = None) -> pymysql.Connection[Any]:
    settings = server.connection_settings()
    return pymysql.connect(
        host=str(settings["host"]),
        port=int(settings["port"]),
        user=str(settings["user"]),
        password=str(settings["password"]),
        database=database,
        autocommit=True,
    )


@pytest.fixture(scope="module")
def catalog(mariadb_server: MariaDbServer) -> Iterator[pymysql.Connection[Any]]:
    with _connect(mariadb_server) as conn:
        with conn.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS {DATABASE}")
            cur.execute(f"CREATE DATABASE {DATABASE} CHARACTER SET latin1")
            cur.execute(f"USE {DATABASE}")
            for ddl in TABLES.values():
                cur.execute(ddl)
        yield conn
        with conn.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS {DATABASE}")


def _from_show_create(conn: pymysql.Connection[Any], table: str) -> TableStructure:
    with conn.cursor() as cur:
        cur.execute(f"SHOW CREATE TABLE `{DATABASE}`.`{table}`")
        row = cur.fetchone()
    assert row is not None
    outcome = apply_ddl(str(row[1]), database=DATABASE, tables={})
    return outcome.changes[0].table


def _from_catalog(conn: pymysql.Connection[Any], table: str) -> TableStructure:
    with conn.cursor() as cur:
        cur.execute(CATALOG_COLUMNS_SQL, (DATABASE, table))
        columns = [CatalogColumn.from_row(row) for row in cur.fetchall()]
        cur.execute(PRIMARY_KEY_SQL, (DATABASE, table))
        primary_key = [str(row[0]) for row in cur.fetchall()]
        cur.execute(TABLE_CHARSET_SQL, (DATABASE, table))
        charset_row = cur.fetchone()
        cur.execute(TABLE_COMMENT_SQL, (DATABASE, table))
        comment_row = cur.fetchone()
    assert charset_row is not None and comment_row is not None
    return table_from_catalog(
        TableId(DATABASE, table),
        columns,
        primary_key=primary_key,
        default_charset=str(charset_row[0]),
        comment=str(comment_row[0]),
    )


@pytest.mark.parametrize("table", sorted(TABLES))
def test_the_catalog_and_show_create_table_give_the_same_structure(
    catalog: pymysql.Connection[Any], table: str
) -> None:
    from_ddl = _from_show_create(catalog, table)
    from_catalog = _from_catalog(catalog, table)
    for parsed, read in zip(from_ddl.columns, from_catalog.columns, strict=True):
        assert read == parsed
    assert from_catalog == from_ddl


def test_catalog_rows_build_columns_positionally_as_well(
    catalog: pymysql.Connection[Any],
) -> None:
    with catalog.cursor() as cur:
        cur.execute(CATALOG_COLUMNS_SQL, (DATABASE, "every_type"))
        rows = cur.fetchall()
    table = TableId(DATABASE, "every_type")
    positional = [CatalogColumn(*row) for row in rows]
    read = [CatalogColumn.from_row(row) for row in rows]
    assert table_from_catalog(
        table, positional, primary_key=["id"], default_charset="utf8mb4"
    ) == table_from_catalog(table, read, primary_key=["id"], default_charset="utf8mb4")
    assert not positional[0].nullable


def test_a_unique_key_without_nullable_columns_stands_for_the_missing_primary_key(
    catalog: pymysql.Connection[Any],
) -> None:
    assert _from_catalog(catalog, "unique_not_null").primary_key == ("b", "a")
    assert _from_catalog(catalog, "serial_key").primary_key == ("s",)
    assert _from_catalog(catalog, "no_key").primary_key == ()
    assert _from_catalog(catalog, "composite_key").primary_key == ("id", "tenant")
