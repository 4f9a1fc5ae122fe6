"""MySQL/MariaDB column types, defaults and catalog structures follow Debezium's DDL parser.

The catalog rows and ``SHOW CREATE TABLE`` texts below are what MariaDB 10.11 returned for the
same tables (tests/integration/test_mysql_structure_catalog.py checks them against a live
server); Debezium builds its structures from that text, so the catalog path must give equal ones.
"""

from __future__ import annotations

from typing import Any

import pytest

from cdcflow.capture.connectors.mysql import structure
from cdcflow.capture.connectors.mysql.ddl import apply_ddl
from cdcflow.capture.connectors.mysql.structure import (
    CatalogColumn,
    DefaultValue,
    UnknownTypeError,
    default_of_expression,
    enum_options,
    parse_column_type,
    table_from_catalog,
)
from cdcflow.capture.spi import TableId, TableStructure

# --------------------------------------------------------------------------------------------
# What MariaDB 10.11 printed for four tables: SHOW CREATE TABLE, the COLUMNS rows of
# CATALOG_COLUMNS_SQL, the primary key (PRIMARY_KEY_SQL), the charset and the comment.

EVERY_TYPE_DDL = (
    "CREATE TABLE `every_type` (\n"
    "  `id` int(11) NOT NULL AUTO_INCREMENT,\n"
    "  `ti` tinyint(4) DEFAULT NULL,\n"
    "  `tiu` tinyint(3) unsigned zerofill DEFAULT NULL,\n"
    "  `si` smallint(6) DEFAULT -5,\n"
    "  `mi` mediumint(8) unsigned DEFAULT NULL,\n"
    "  `bi` bigint(20) unsigned NOT NULL DEFAULT 0,\n"
    "  `bo` tinyint(1) DEFAULT 1,\n"
    "  `de` decimal(10,2) DEFAULT 1.50,\n"
    "  `de2` decimal(10,0) DEFAULT NULL,\n"
    "  `nu` decimal(5,0) DEFAULT NULL,\n"
    "  `fl` float DEFAULT NULL,\n"
    "  `fl2` float(7,3) DEFAULT NULL,\n"
    "  `db` double DEFAULT NULL,\n"
    "  `db2` double(10,2) DEFAULT NULL,\n"
    "  `re` double DEFAULT 2500,\n"
    "  `bt` bit(1) DEFAULT NULL,\n"
    "  `bt8` bit(8) DEFAULT b'101',\n"
    "  `dt` date DEFAULT '2020-01-02',\n"
    "  `tm` time(3) DEFAULT NULL,\n"
    "  `dtm` datetime(6) DEFAULT current_timestamp(6),\n"
    "  `ts` timestamp NOT NULL DEFAULT current_timestamp() ON UPDATE current_timestamp(),\n"
    "  `ts2` timestamp NULL DEFAULT NULL ON UPDATE current_timestamp(),\n"
    "  `ts3` datetime NOT NULL DEFAULT '0000-00-00 00:00:00' ON UPDATE current_timestamp(),\n"
    "  `yr` year(4) DEFAULT NULL,\n"
    "  `ch` char(5) DEFAULT 'it''s',\n"
    "  `vc` varchar(255) CHARACTER SET latin1 COLLATE latin1_bin DEFAULT NULL"
    " COMMENT 'a ''quoted'' \\\\ comment\\nsecond line',\n"
    "  `vcb` varchar(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL DEFAULT '',\n"
    "  `nc` char(3) CHARACTER SET utf8mb3 COLLATE utf8mb3_general_ci DEFAULT NULL,\n"
    "  `nvc` varchar(4) CHARACTER SET utf8mb3 COLLATE utf8mb3_general_ci DEFAULT NULL,\n"
    "  `tt` tinytext DEFAULT NULL,\n"
    "  `tx` text DEFAULT NULL,\n"
    "  `mt` mediumtext DEFAULT NULL,\n"
    "  `lt` longtext DEFAULT NULL,\n"
    "  `bn` binary(4) DEFAULT NULL,\n"
    "  `vb` varbinary(10) DEFAULT NULL,\n"
    "  `tb` tinyblob DEFAULT NULL,\n"
    "  `bl` blob DEFAULT NULL,\n"
    "  `mb` mediumblob DEFAULT NULL,\n"
    "  `lb` longblob DEFAULT NULL,\n"
    "  `en` enum('a','b''c','d\\\\e','x,y') DEFAULT 'a',\n"
    "  `st` set('x','y') NOT NULL DEFAULT 'x,y',\n"
    "  `js` longtext CHARACTER SET utf8mb4 COLLATE utf8mb4_bin DEFAULT NULL"
    " CHECK (json_valid(`js`)),\n"
    "  `pt` point DEFAULT NULL,\n"
    "  `g` geometry NOT NULL,\n"
    "  `ls` linestring DEFAULT NULL,\n"
    "  `pg` polygon DEFAULT NULL,\n"
    "  `mpt` multipoint DEFAULT NULL,\n"
    "  `mls` multilinestring DEFAULT NULL,\n"
    "  `mpg` multipolygon DEFAULT NULL,\n"
    "  `gc` geometrycollection DEFAULT NULL,\n"
    "  `uu` uuid DEFAULT NULL,\n"
    "  `gen` int(11) GENERATED ALWAYS AS (`ti` + 1) VIRTUAL,\n"
    "  `gens` int(11) GENERATED ALWAYS AS (`si` * 2) STORED,\n"
    "  `ex` int(11) DEFAULT (1 + 1),\n"
    "  `fn` varchar(36) DEFAULT uuid(),\n"
    "  `cd` date DEFAULT curdate(),\n"
    "  `bx` binary(2) DEFAULT '\\n\x0b',\n"
    "  `bk` varchar(10) DEFAULT 'a\\\\b',\n"
    "  PRIMARY KEY (`id`),\n"
    "  UNIQUE KEY `u` (`vc`),\n"
    "  KEY `k` (`ti`),\n"
    "  SPATIAL KEY `sp` (`g`)\n"
    ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci"
    " COMMENT='every ''type'''"
)

_ON_UPDATE = "on update current_timestamp()"
# (name, COLUMN_TYPE, IS_NULLABLE, COLUMN_DEFAULT, EXTRA, CHARACTER_SET_NAME, COLUMN_COMMENT)
EVERY_TYPE_ROWS: list[tuple[str, str, str, str | None, str, str | None, str]] = [
    ("id", "int(11)", "NO", None, "auto_increment", None, ""),
    ("ti", "tinyint(4)", "YES", "NULL", "", None, ""),
    ("tiu", "tinyint(3) unsigned zerofill", "YES", "NULL", "", None, ""),
    ("si", "smallint(6)", "YES", "-5", "", None, ""),
    ("mi", "mediumint(8) unsigned", "YES", "NULL", "", None, ""),
    ("bi", "bigint(20) unsigned", "NO", "0", "", None, ""),
    ("bo", "tinyint(1)", "YES", "1", "", None, ""),
    ("de", "decimal(10,2)", "YES", "1.50", "", None, ""),
    ("de2", "decimal(10,0)", "YES", "NULL", "", None, ""),
    ("nu", "decimal(5,0)", "YES", "NULL", "", None, ""),
    ("fl", "float", "YES", "NULL", "", None, ""),
    ("fl2", "float(7,3)", "YES", "NULL", "", None, ""),
    ("db", "double", "YES", "NULL", "", None, ""),
    ("db2", "double(10,2)", "YES", "NULL", "", None, ""),
    ("re", "double", "YES", "2500", "", None, ""),
    ("bt", "bit(1)", "YES", "NULL", "", None, ""),
    ("bt8", "bit(8)", "YES", "b'101'", "", None, ""),
    ("dt", "date", "YES", "'2020-01-02'", "", None, ""),
    ("tm", "time(3)", "YES", "NULL", "", None, ""),
    ("dtm", "datetime(6)", "YES", "current_timestamp(6)", "", None, ""),
    ("ts", "timestamp", "NO", "current_timestamp()", _ON_UPDATE, None, ""),
    ("ts2", "timestamp", "YES", "NULL", _ON_UPDATE, None, ""),
    ("ts3", "datetime", "NO", "'0000-00-00 00:00:00'", _ON_UPDATE, None, ""),
    ("yr", "year(4)", "YES", "NULL", "", None, ""),
    ("ch", "char(5)", "YES", "'it''s'", "", "utf8mb4", ""),
    ("vc", "varchar(255)", "YES", "NULL", "", "latin1", "a 'quoted' \\ comment\nsecond line"),
    ("vcb", "varchar(10)", "NO", "''", "", "utf8mb4", ""),
    ("nc", "char(3)", "YES", "NULL", "", "utf8mb3", ""),
    ("nvc", "varchar(4)", "YES", "NULL", "", "utf8mb3", ""),
    ("tt", "tinytext", "YES", "NULL", "", "utf8mb4", ""),
    ("tx", "text", "YES", "NULL", "", "utf8mb4", ""),
    ("mt", "mediumtext", "YES", "NULL", "", "utf8mb4", ""),
    ("lt", "longtext", "YES", "NULL", "", "utf8mb4", ""),
    ("bn", "binary(4)", "YES", "NULL", "", None, ""),
    ("vb", "varbinary(10)", "YES", "NULL", "", None, ""),
    ("tb", "tinyblob", "YES", "NULL", "", None, ""),
    ("bl", "blob", "YES", "NULL", "", None, ""),
    ("mb", "mediumblob", "YES", "NULL", "", None, ""),
    ("lb", "longblob", "YES", "NULL", "", None, ""),
    ("en", "enum('a','b''c','d\\\\e','x,y')", "YES", "'a'", "", "utf8mb4", ""),
    ("st", "set('x','y')", "NO", "'x,y'", "", "utf8mb4", ""),
    ("js", "longtext", "YES", "NULL", "", "utf8mb4", ""),
    ("pt", "point", "YES", "NULL", "", None, ""),
    ("g", "geometry", "NO", None, "", None, ""),
    ("ls", "linestring", "YES", "NULL", "", None, ""),
    ("pg", "polygon", "YES", "NULL", "", None, ""),
    ("mpt", "multipoint", "YES", "NULL", "", None, ""),
    ("mls", "multilinestring", "YES", "NULL", "", None, ""),
    ("mpg", "multipolygon", "YES", "NULL", "", None, ""),
    ("gc", "geometrycollection", "YES", "NULL", "", None, ""),
    ("uu", "uuid", "YES", "NULL", "", None, ""),
    ("gen", "int(11)", "YES", "NULL", "VIRTUAL GENERATED", None, ""),
    ("gens", "int(11)", "YES", "NULL", "STORED GENERATED", None, ""),
    ("ex", "int(11)", "YES", "(1 + 1)", "", None, ""),
    ("fn", "varchar(36)", "YES", "uuid()", "", "utf8mb4", ""),
    ("cd", "date", "YES", "curdate()", "", None, ""),
    ("bx", "binary(2)", "YES", "'\\n\x0b'", "", None, ""),
    ("bk", "varchar(10)", "YES", "'a\\\\b'", "", "utf8mb4", ""),
]

UNIQUE_NOT_NULL_DDL = (
    "CREATE TABLE `unique_not_null` (\n"
    "  `a` int(11) NOT NULL,\n"
    "  `b` varchar(3) NOT NULL,\n"
    "  `c` int(11) DEFAULT NULL,\n"
    "  UNIQUE KEY `ub` (`b`,`a`),\n"
    "  UNIQUE KEY `uc` (`c`)\n"
    ") ENGINE=InnoDB DEFAULT CHARSET=latin1 COLLATE=latin1_swedish_ci"
)
UNIQUE_NOT_NULL_ROWS: list[tuple[str, str, str, str | None, str, str | None, str]] = [
    ("a", "int(11)", "NO", None, "", None, ""),
    ("b", "varchar(3)", "NO", None, "", "latin1", ""),
    ("c", "int(11)", "YES", "NULL", "", None, ""),
]

SERIAL_KEY_DDL = (
    "CREATE TABLE `serial_key` (\n"
    "  `s` bigint(20) unsigned NOT NULL AUTO_INCREMENT,\n"
    "  `x` int(11) DEFAULT NULL,\n"
    "  UNIQUE KEY `s` (`s`)\n"
    ") ENGINE=InnoDB DEFAULT CHARSET=latin1 COLLATE=latin1_swedish_ci"
)
SERIAL_KEY_ROWS: list[tuple[str, str, str, str | None, str, str | None, str]] = [
    ("s", "bigint(20) unsigned", "NO", None, "auto_increment", None, ""),
    ("x", "int(11)", "YES", "NULL", "", None, ""),
]

COMPOSITE_KEY_DDL = (
    "CREATE TABLE `composite_key` (\n"
    "  `tenant` varchar(20) NOT NULL,\n"
    "  `id` bigint(20) NOT NULL,\n"
    "  `note` text DEFAULT NULL,\n"
    "  PRIMARY KEY (`id`,`tenant`)\n"
    ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb3 COLLATE=utf8mb3_general_ci"
)
COMPOSITE_KEY_ROWS: list[tuple[str, str, str, str | None, str, str | None, str]] = [
    ("tenant", "varchar(20)", "NO", None, "", "utf8mb3", ""),
    ("id", "bigint(20)", "NO", None, "", None, ""),
    ("note", "text", "YES", "NULL", "", "utf8mb3", ""),
]

# name: (SHOW CREATE TABLE, rows, primary key, charset, TABLE_COMMENT)
MARIADB_TABLES: dict[str, tuple[str, list[Any], tuple[str, ...], str, str]] = {
    "every_type": (EVERY_TYPE_DDL, EVERY_TYPE_ROWS, ("id",), "utf8mb4", "every 'type'"),
    "unique_not_null": (UNIQUE_NOT_NULL_DDL, UNIQUE_NOT_NULL_ROWS, ("b", "a"), "latin1", ""),
    "serial_key": (SERIAL_KEY_DDL, SERIAL_KEY_ROWS, ("s",), "latin1", ""),
    "composite_key": (COMPOSITE_KEY_DDL, COMPOSITE_KEY_ROWS, ("id", "tenant"), "utf8mb3", ""),
}


def _catalog_columns(rows: list[Any]) -> list[CatalogColumn]:
    """COLUMNS rows in CATALOG_COLUMNS_SQL's column order."""
    columns = []
    for ordinal, (name, column_type, nullable, default, extra, charset, comment) in enumerate(
        rows, start=1
    ):
        data_type = column_type.split("(")[0].split()[0]
        row = (name, ordinal, column_type, data_type, nullable, default, extra, charset, comment)
        columns.append(CatalogColumn.from_row((*row, None)))
    return columns


def _from_catalog(name: str) -> TableStructure:
    _, rows, primary_key, charset, comment = MARIADB_TABLES[name]
    return table_from_catalog(
        TableId("inventory", name),
        _catalog_columns(rows),
        primary_key=primary_key,
        default_charset=charset,
        comment=comment,
    )


def _from_show_create(name: str) -> TableStructure:
    ddl = MARIADB_TABLES[name][0]
    return apply_ddl(ddl, database="inventory", tables={}).changes[0].table


# --------------------------------------------------------------------------------------------
# The catalog and SHOW CREATE TABLE agree.


@pytest.mark.parametrize("name", sorted(MARIADB_TABLES))
def test_the_catalog_gives_the_structure_debezium_parses_from_show_create_table(
    name: str,
) -> None:
    from_catalog, from_ddl = _from_catalog(name), _from_show_create(name)
    for read, parsed in zip(from_catalog.columns, from_ddl.columns, strict=True):
        assert read == parsed
    assert from_catalog == from_ddl


def test_catalog_columns_are_placed_by_ordinal_whatever_the_row_order() -> None:
    columns = _catalog_columns(COMPOSITE_KEY_ROWS)
    shuffled = table_from_catalog(
        TableId("inventory", "composite_key"),
        list(reversed(columns)),
        primary_key=("id", "tenant"),
        default_charset="utf8mb3",
    )
    assert [column.name for column in shuffled.columns] == ["tenant", "id", "note"]
    assert [column.position for column in shuffled.columns] == [1, 2, 3]


def test_catalog_comments_are_kept_escaped_as_show_create_table_prints_them() -> None:
    table = _from_catalog("every_type")
    assert table.comment == "every ''type''"
    assert table.columns[25].comment == "a ''quoted'' \\\\ comment\\nsecond line"
    assert _from_catalog("serial_key").comment is None


def test_catalog_key_columns_are_required_and_lose_the_implicit_null_default() -> None:
    column = CatalogColumn("id", 1, "int(11)", "int", True, "NULL", "", None, None, None)
    table = table_from_catalog(
        TableId("d", "t"), [column], primary_key=["id"], default_charset="latin1"
    )
    assert table.columns[0].optional is False
    assert table.columns[0].has_default_value is False
    assert table.primary_key == ("id",)


def test_catalog_text_columns_without_a_charset_take_the_table_charset() -> None:
    columns = [
        CatalogColumn("v", 1, "varchar(3)", "varchar", True, "NULL", "", None, None, None),
        CatalogColumn("b", 2, "blob", "blob", True, "NULL", "", "binary", None, None),
    ]
    table = table_from_catalog(TableId("d", "t"), columns, primary_key=(), default_charset="koi8r")
    assert [column.charset_name for column in table.columns] == ["koi8r", None]


def test_a_catalog_row_reads_nullability_empty_comments_and_generation() -> None:
    row = ("g", 3, "int(11)", "int", "YES", "NULL", "VIRTUAL GENERATED", None, "", "`a` + 1")
    column = CatalogColumn.from_row(row)
    assert column.nullable is True
    assert column.comment is None
    assert column.generation_expression == "`a` + 1"
    required = CatalogColumn.from_row(("a", 1, "int", "int", 0, None, None, None, None, None))
    assert (required.nullable, required.extra) == (False, "")
    worded = CatalogColumn.from_row(("a", 1, "int", "int", "NO", None, "", None, "", None))
    assert worded.nullable is False


def test_an_unknown_catalog_type_is_an_error_naming_it() -> None:
    column = CatalogColumn("ip", 1, "inet6", "inet6", True, "NULL", "", None, None, None)
    with pytest.raises(UnknownTypeError, match="INET6"):
        table_from_catalog(TableId("d", "t"), [column], primary_key=(), default_charset=None)


# --------------------------------------------------------------------------------------------
# Column types.


@pytest.mark.parametrize(
    ("column_type", "name", "jdbc", "length", "scale"),
    [
        ("int(11)", "INT", structure.INTEGER, 11, None),
        ("int", "INT", structure.INTEGER, None, None),
        ("INTEGER", "INTEGER", structure.INTEGER, None, None),
        ("int(10) unsigned zerofill", "INT UNSIGNED ZEROFILL", structure.INTEGER, 10, None),
        ("tinyint(3) zerofill unsigned", "TINYINT UNSIGNED ZEROFILL", structure.TINYINT, 3, None),
        ("int8", "INT8", structure.BIGINT, None, None),
        ("middleint", "MIDDLEINT", structure.INTEGER, None, None),
        ("bigint(20) signed", "BIGINT SIGNED", structure.BIGINT, 20, None),
        ("decimal(10,2)", "DECIMAL", structure.DECIMAL, 10, 2),
        ("decimal", "DECIMAL", structure.DECIMAL, 10, 0),
        ("dec(5)", "DEC", structure.DECIMAL, 5, 0),
        ("numeric(7,1)", "NUMERIC", structure.NUMERIC, 7, 1),
        ("float", "FLOAT", structure.FLOAT, None, None),
        ("float(7,3)", "FLOAT", structure.FLOAT, 7, 3),
        ("float8", "FLOAT8", structure.DOUBLE, None, None),
        ("double precision(10,2) unsigned", "DOUBLE PRECISION UNSIGNED", structure.DOUBLE, 10, 2),
        ("real", "REAL", structure.REAL, None, None),
        ("bit", "BIT", structure.BIT, 1, None),
        ("bit(8)", "BIT", structure.BIT, 8, None),
        ("bool", "BOOL", structure.BOOLEAN, None, None),
        ("boolean", "BOOLEAN", structure.BOOLEAN, None, None),
        ("serial", "BIGINT UNSIGNED", structure.BIGINT, None, None),
        ("date", "DATE", structure.DATE, None, None),
        ("time(3)", "TIME", structure.TIME, 3, None),
        ("datetime(6)", "DATETIME", structure.TIMESTAMP, 6, None),
        ("timestamp", "TIMESTAMP", structure.TIMESTAMP_WITH_TIMEZONE, None, None),
        ("year(4)", "YEAR", structure.INTEGER, 4, None),
        ("char", "CHAR", structure.CHAR, None, None),
        ("character varying(9)", "CHARACTER VARYING", structure.VARCHAR, 9, None),
        ("varchar(255)", "VARCHAR", structure.VARCHAR, 255, None),
        ("varchar(10) binary", "VARCHAR BINARY", structure.VARCHAR, 10, None),
        ("longtext", "LONGTEXT", structure.VARCHAR, None, None),
        ("long", "LONG", structure.VARCHAR, None, None),
        ("long varchar", "LONG VARCHAR", structure.VARCHAR, None, None),
        ("long varbinary", "LONG VARBINARY", structure.BLOB, None, None),
        ("nchar", "NCHAR", structure.NCHAR, 1, None),
        ("nvarchar(4)", "NVARCHAR", structure.NVARCHAR, 4, None),
        ("national char varying(3)", "NATIONAL CHAR VARYING", structure.NVARCHAR, 3, None),
        ("binary(4)", "BINARY", structure.BINARY, 4, None),
        ("varbinary(10)", "VARBINARY", structure.VARBINARY, 10, None),
        ("mediumblob", "MEDIUMBLOB", structure.BLOB, None, None),
        ("enum('a','b''c')", "ENUM", structure.CHAR, 1, None),
        ("set('x','y','z')", "SET", structure.CHAR, 5, None),
        ("point", "POINT", structure.OTHER, None, None),
        ("geometrycollection", "GEOMETRYCOLLECTION", structure.OTHER, None, None),
        ("json", "JSON", structure.OTHER, None, None),
        ("uuid", "UUID", structure.OTHER, None, None),
        ("vector(3)", "VECTOR", structure.OTHER, 3, None),
    ],
)
def test_a_column_type_gets_debeziums_name_jdbc_type_length_and_scale(
    column_type: str, name: str, jdbc: int, length: int | None, scale: int | None
) -> None:
    parsed = parse_column_type(column_type)
    assert (parsed.name, parsed.jdbc_type, parsed.length, parsed.scale) == (
        name,
        jdbc,
        length,
        scale,
    )


def test_enum_and_set_options_are_kept_as_written_with_their_quotes() -> None:
    parsed = parse_column_type("enum('a','b''c','d\\\\e','x,y')")
    assert parsed.enum_values == ("'a'", "'b''c'", "'d\\\\e'", "'x,y'")
    assert enum_options(parsed.enum_values) == ("a", "b'c", "d\\\\e", "x,y")


def test_national_types_always_use_utf8() -> None:
    assert parse_column_type("nchar(3)").charset == "utf8"
    assert parse_column_type("national varchar(3)").charset == "utf8"


def test_a_string_type_takes_its_charset_from_character_set_or_else_its_collation() -> None:
    assert parse_column_type("varchar(3) character set 'latin1'").charset == "latin1"
    assert parse_column_type("char(3) collate utf8mb4_bin").charset == "utf8mb4"
    assert parse_column_type("text charset ascii collate ascii_bin").charset == "ascii"


def test_serial_is_marked_so_its_column_is_required_and_auto_incremented() -> None:
    assert parse_column_type("serial").serial is True
    assert parse_column_type("bigint").serial is False


@pytest.mark.parametrize("column_type", ["inet6", "int(11) trailing", "enum(1, 2)", "int("])
def test_an_unknown_or_malformed_type_is_an_error(column_type: str) -> None:
    with pytest.raises(UnknownTypeError):
        parse_column_type(column_type)


# --------------------------------------------------------------------------------------------
# Defaults.


@pytest.mark.parametrize(
    ("expression", "recorded"),
    [
        (None, None),
        ("NULL", None),
        ("x'0A'", None),
        ("'abc'", DefaultValue("abc")),
        ("'it''s'", DefaultValue("it''s")),
        ("-5", DefaultValue("-5")),
        ("1.50", DefaultValue("1.50")),
        ("b'101'", DefaultValue("101")),
        ("TRUE", DefaultValue("TRUE")),
        ("current_timestamp()", DefaultValue("1970-01-01 00:00:00")),
        ("current_timestamp(6)", DefaultValue("1970-01-01 00:00:00")),
        ("now()", DefaultValue("1970-01-01 00:00:00")),
        ("curdate()", DefaultValue("curdate()")),
        ("(1 + 1)", DefaultValue(None)),
        ("uuid()", DefaultValue(None)),
    ],
)
def test_a_default_expression_records_what_debezium_records(
    expression: str | None, recorded: DefaultValue | None
) -> None:
    assert default_of_expression(expression) == recorded


def test_on_update_flags_a_column_unless_its_default_is_the_current_timestamp() -> None:
    table = _from_catalog("every_type")
    by_name = {column.name: column for column in table.columns}
    assert by_name["ts"].auto_incremented is False
    assert by_name["ts2"].auto_incremented is True
    assert by_name["ts3"].generated is True
    assert by_name["id"].auto_incremented is True
    assert by_name["gen"].generated is False  # Debezium does not mark generated columns
