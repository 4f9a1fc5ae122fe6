"""Binlog DDL statements change table structures exactly as Debezium's MySQL parser does."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from cdcflow.capture.connectors.mysql import structure
from cdcflow.capture.connectors.mysql.ddl import (
    Charsets,
    DdlOutcome,
    UnparseableDdl,
    apply_ddl,
)
from cdcflow.capture.spi import ColumnStructure, TableChangeType, TableId, TableStructure
from tests.unit.test_mysql_structure import EVERY_TYPE_DDL

DB = "inventory"
T = TableId(DB, "t")


def ddl(
    statement: str,
    tables: Mapping[TableId, TableStructure] | None = None,
    *,
    database: str | None = DB,
    charsets: Charsets | None = None,
) -> DdlOutcome:
    return apply_ddl(statement, database=database, tables=tables or {}, charsets=charsets)


def created(statement: str, **kwargs: object) -> TableStructure:
    outcome = ddl(statement, **kwargs)  # type: ignore[arg-type]
    assert [change.type for change in outcome.changes] == [TableChangeType.CREATE]
    return outcome.changes[0].table


def table(statement: str) -> dict[TableId, TableStructure]:
    structure_ = created(statement)
    return {structure_.id: structure_}


def altered(statement: str, tables: Mapping[TableId, TableStructure]) -> TableStructure:
    outcome = ddl(statement, tables)
    assert [change.type for change in outcome.changes] == [TableChangeType.ALTER]
    return outcome.changes[0].table


def column(structure_: TableStructure, name: str) -> ColumnStructure:
    return next(column for column in structure_.columns if column.name == name)


def names(structure_: TableStructure) -> list[str]:
    return [column.name for column in structure_.columns]


BASE = "CREATE TABLE t (id INT NOT NULL, a VARCHAR(10) COMMENT 'note', b INT DEFAULT 7, PRIMARY KEY (id)) CHARSET=latin1"  # noqa: E501

# --------------------------------------------------------------------------------------------
# CREATE TABLE: MariaDB's SHOW CREATE TABLE output, every type.

# (name, typeName, jdbcType, length, scale, optional, hasDefault, defaultValueExpression,
#  charsetName, autoIncremented) as Debezium's MariaDB parser records them.
EVERY_TYPE_COLUMNS = [
    ("id", "INT", 4, 11, None, False, False, None, None, True),
    ("ti", "TINYINT", -6, 4, None, True, True, None, None, False),
    ("tiu", "TINYINT UNSIGNED ZEROFILL", -6, 3, None, True, True, None, None, False),
    ("si", "SMALLINT", 5, 6, None, True, True, "-5", None, False),
    ("mi", "MEDIUMINT UNSIGNED", 4, 8, None, True, True, None, None, False),
    ("bi", "BIGINT UNSIGNED", -5, 20, None, False, True, "0", None, False),
    ("bo", "TINYINT", -6, 1, None, True, True, "1", None, False),
    ("de", "DECIMAL", 3, 10, 2, True, True, "1.50", None, False),
    ("de2", "DECIMAL", 3, 10, 0, True, True, None, None, False),
    ("nu", "DECIMAL", 3, 5, 0, True, True, None, None, False),
    ("fl", "FLOAT", 6, None, None, True, True, None, None, False),
    ("fl2", "FLOAT", 6, 7, 3, True, True, None, None, False),
    ("db", "DOUBLE", 8, None, None, True, True, None, None, False),
    ("db2", "DOUBLE", 8, 10, 2, True, True, None, None, False),
    ("re", "DOUBLE", 8, None, None, True, True, "2500", None, False),
    ("bt", "BIT", -7, 1, None, True, True, None, None, False),
    ("bt8", "BIT", -7, 8, None, True, True, "101", None, False),
    ("dt", "DATE", 91, None, None, True, True, "2020-01-02", None, False),
    ("tm", "TIME", 92, 3, None, True, True, None, None, False),
    ("dtm", "DATETIME", 93, 6, None, True, True, "1970-01-01 00:00:00", None, False),
    ("ts", "TIMESTAMP", 2014, None, None, False, True, "1970-01-01 00:00:00", None, False),
    ("ts2", "TIMESTAMP", 2014, None, None, True, True, None, None, True),
    ("ts3", "DATETIME", 93, None, None, False, True, "0000-00-00 00:00:00", None, True),
    ("yr", "YEAR", 4, 4, None, True, True, None, None, False),
    ("ch", "CHAR", 1, 5, None, True, True, "it''s", "utf8mb4", False),
    ("vc", "VARCHAR", 12, 255, None, True, True, None, "latin1", False),
    ("vcb", "VARCHAR", 12, 10, None, False, True, "", "utf8mb4", False),
    ("nc", "CHAR", 1, 3, None, True, True, None, "utf8mb3", False),
    ("nvc", "VARCHAR", 12, 4, None, True, True, None, "utf8mb3", False),
    ("tt", "TINYTEXT", 12, None, None, True, True, None, "utf8mb4", False),
    ("tx", "TEXT", 12, None, None, True, True, None, "utf8mb4", False),
    ("mt", "MEDIUMTEXT", 12, None, None, True, True, None, "utf8mb4", False),
    ("lt", "LONGTEXT", 12, None, None, True, True, None, "utf8mb4", False),
    ("bn", "BINARY", -2, 4, None, True, True, None, None, False),
    ("vb", "VARBINARY", -3, 10, None, True, True, None, None, False),
    ("tb", "TINYBLOB", 2004, None, None, True, True, None, None, False),
    ("bl", "BLOB", 2004, None, None, True, True, None, None, False),
    ("mb", "MEDIUMBLOB", 2004, None, None, True, True, None, None, False),
    ("lb", "LONGBLOB", 2004, None, None, True, True, None, None, False),
    ("en", "ENUM", 1, 1, None, True, True, "a", "utf8mb4", False),
    ("st", "SET", 1, 3, None, False, True, "x,y", "utf8mb4", False),
    ("js", "LONGTEXT", 12, None, None, True, True, None, "utf8mb4", False),
    ("pt", "POINT", 1111, None, None, True, True, None, None, False),
    ("g", "GEOMETRY", 1111, None, None, False, False, None, None, False),
    ("ls", "LINESTRING", 1111, None, None, True, True, None, None, False),
    ("pg", "POLYGON", 1111, None, None, True, True, None, None, False),
    ("mpt", "MULTIPOINT", 1111, None, None, True, True, None, None, False),
    ("mls", "MULTILINESTRING", 1111, None, None, True, True, None, None, False),
    ("mpg", "MULTIPOLYGON", 1111, None, None, True, True, None, None, False),
    ("gc", "GEOMETRYCOLLECTION", 1111, None, None, True, True, None, None, False),
    ("uu", "UUID", 1111, None, None, True, True, None, None, False),
    ("gen", "INT", 4, 11, None, True, True, None, None, False),
    ("gens", "INT", 4, 11, None, True, True, None, None, False),
    ("ex", "INT", 4, 11, None, True, True, None, None, False),
    ("fn", "VARCHAR", 12, 36, None, True, True, None, "utf8mb4", False),
    ("cd", "DATE", 91, None, None, True, True, "curdate()", None, False),
    ("bx", "BINARY", -2, 2, None, True, True, "\\n\x0b", None, False),
    ("bk", "VARCHAR", 12, 10, None, True, True, "a\\\\b", "utf8mb4", False),
]


def test_mariadbs_show_create_table_of_every_type_gives_debeziums_columns() -> None:
    structure_ = created(EVERY_TYPE_DDL)
    assert structure_.id == TableId(DB, "every_type")
    assert structure_.primary_key == ("id",)
    assert structure_.default_charset_name == "utf8mb4"
    assert structure_.comment == "every ''type''"
    got = [
        (
            c.name,
            c.type_name,
            c.jdbc_type,
            c.length,
            c.scale,
            c.optional,
            c.has_default_value,
            c.default_value_expression,
            c.charset_name,
            c.auto_incremented,
        )
        for c in structure_.columns
    ]
    assert got == EVERY_TYPE_COLUMNS
    assert [c.position for c in structure_.columns] == list(range(1, len(got) + 1))
    assert all(c.type_expression == c.type_name for c in structure_.columns)
    assert all(c.auto_incremented == c.generated for c in structure_.columns)


def test_enum_and_set_values_and_comments_keep_their_sql_quoting() -> None:
    structure_ = created(EVERY_TYPE_DDL)
    assert column(structure_, "en").enum_values == ("'a'", "'b''c'", "'d\\\\e'", "'x,y'")
    assert column(structure_, "st").enum_values == ("'x'", "'y'")
    assert column(structure_, "vc").comment == "a ''quoted'' \\\\ comment\\nsecond line"
    assert column(structure_, "id").enum_values is None


# --------------------------------------------------------------------------------------------
# CREATE TABLE: keys, nullability, defaults, charsets.


def test_an_inline_primary_key_makes_the_key_and_a_required_column() -> None:
    structure_ = created("CREATE TABLE t (id INT PRIMARY KEY, v TEXT)")
    assert structure_.primary_key == ("id",)
    assert column(structure_, "id").optional is False
    assert column(structure_, "id").has_default_value is False


def test_a_primary_key_constraint_makes_its_columns_required_without_implicit_default() -> None:
    structure_ = created(
        "CREATE TABLE t (a INT, b INT DEFAULT 0, c INT, CONSTRAINT pk PRIMARY KEY (b, a))"
    )
    assert structure_.primary_key == ("b", "a")
    assert (column(structure_, "a").optional, column(structure_, "a").has_default_value) == (
        False,
        False,
    )
    assert column(structure_, "b").default_value_expression == "0"
    assert column(structure_, "c").optional is True


def test_a_unique_key_of_required_columns_stands_for_a_missing_primary_key() -> None:
    assert created("CREATE TABLE t (a INT NOT NULL, UNIQUE KEY u (a))").primary_key == ("a",)
    assert created("CREATE TABLE t (a INT, UNIQUE KEY u (a))").primary_key == ()
    assert created("CREATE TABLE t (a INT UNIQUE)").primary_key == ("a",)
    with_pk = "CREATE TABLE t (a INT NOT NULL, b INT NOT NULL, UNIQUE (b), PRIMARY KEY (a))"
    assert created(with_pk).primary_key == ("a",)


def test_nullability_and_defaults_follow_debeziums_column_editor() -> None:
    structure_ = created(
        "CREATE TABLE t (a INT, b INT DEFAULT NULL, c INT NOT NULL, d INT NOT NULL DEFAULT 3,"
        " e INT DEFAULT 4 NOT NULL, f INT NULL)"
    )
    states = [
        (c.optional, c.has_default_value, c.default_value_expression) for c in structure_.columns
    ]
    assert states == [
        (True, True, None),
        (True, True, None),
        (False, False, None),
        (False, True, "3"),
        (False, True, "4"),
        (True, True, None),
    ]


@pytest.mark.parametrize(
    ("default", "recorded"),
    [
        ("'it''s'", "it''s"),
        ('"dq"', "dq"),
        ("'a\\'b'", "a\\'b"),
        ("-5", "-5"),
        ("+5", "+5"),
        ("- 2.5", "-2.5"),
        ("1e3", "1e3"),
        ("b'101'", "101"),
        ("TRUE", "TRUE"),
        ("false", "false"),
        ("CURRENT_TIMESTAMP", "1970-01-01 00:00:00"),
        ("now(3)", "1970-01-01 00:00:00"),
        ("LOCALTIMESTAMP( 3 )", "LOCALTIMESTAMP(3)"),
        ("CURDATE()", "CURDATE()"),
        ("_utf8mb4'x'", "_utf8mb4'x'"),
        ("'x' COLLATE utf8mb4_bin", "x"),
        ("(1 + 1)", None),
        ("uuid()", None),
    ],
)
def test_a_default_clause_records_what_debeziums_default_listener_records(
    default: str, recorded: str | None
) -> None:
    c = created(f"CREATE TABLE t (c VARCHAR(20) NOT NULL DEFAULT {default})").columns[0]
    assert (c.has_default_value, c.default_value_expression) == (True, recorded)


def test_a_hex_default_records_nothing_as_in_debezium() -> None:
    c = created("CREATE TABLE t (c BINARY(1) NOT NULL DEFAULT x'0A')").columns[0]
    assert (c.has_default_value, c.default_value_expression) == (False, None)


def test_on_update_flags_the_column_unless_it_follows_a_current_timestamp_default() -> None:
    structure_ = created(
        "CREATE TABLE t (a TIMESTAMP DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,"
        " b TIMESTAMP NULL DEFAULT NULL ON UPDATE CURRENT_TIMESTAMP,"
        " c DATETIME ON UPDATE NOW() DEFAULT NOW(), d INT AUTO_INCREMENT UNIQUE)"
    )
    flags = [(c.auto_incremented, c.generated) for c in structure_.columns]
    assert flags == [(False, False), (True, True), (True, True), (True, True)]


def test_serial_is_a_required_auto_increment_column_that_becomes_the_key() -> None:
    structure_ = created("CREATE TABLE t (s SERIAL, x INT SERIAL DEFAULT VALUE)")
    s, x = structure_.columns
    assert (s.type_name, s.jdbc_type, s.optional, s.auto_incremented) == (
        "BIGINT UNSIGNED",
        structure.BIGINT,
        False,
        True,
    )
    assert (x.optional, x.auto_incremented) == (False, True)
    assert structure_.primary_key == ("s",)


def test_charsets_come_from_the_column_else_the_table_else_the_database_else_the_server() -> None:
    charsets = Charsets(server="latin1", databases={"other": "koi8r"})
    statement = "CREATE TABLE {} (a VARCHAR(3) CHARACTER SET ascii, b TEXT, c INT) {}"
    own = created(statement.format("t", "DEFAULT CHARSET=utf8mb4"), charsets=charsets)
    assert [c.charset_name for c in own.columns] == ["ascii", "utf8mb4", None]
    assert own.default_charset_name == "utf8mb4"
    from_database = created(statement.format("other.t", ""), charsets=charsets)
    assert from_database.default_charset_name == "koi8r"
    assert column(from_database, "b").charset_name == "koi8r"
    assert created(statement.format("t", ""), charsets=charsets).default_charset_name == "latin1"
    assert created(statement.format("t", "")).default_charset_name is None


def test_a_collation_gives_its_charset_and_national_types_use_utf8() -> None:
    structure_ = created(
        "CREATE TABLE t (a VARCHAR(3) COLLATE utf8mb4_bin, b NCHAR(2), c NATIONAL VARCHAR(4))"
        " CHARACTER SET = latin1 COLLATE latin1_bin"
    )
    assert [c.charset_name for c in structure_.columns] == ["utf8mb4", "utf8", "utf8"]
    assert [c.jdbc_type for c in structure_.columns] == [
        structure.VARCHAR,
        structure.NCHAR,
        structure.NVARCHAR,
    ]


def test_type_names_are_kept_as_written_not_as_sqlglot_normalises_them() -> None:
    structure_ = created(
        "CREATE TABLE t (a INTEGER, b int8, c DEC(5,1), d DOUBLE PRECISION, e BOOL,"
        " f CHARACTER VARYING(5), g LONG VARCHAR, h MIDDLEINT, i INT3, j REAL)"
    )
    assert [(c.type_name, c.jdbc_type) for c in structure_.columns] == [
        ("INTEGER", structure.INTEGER),
        ("INT8", structure.BIGINT),
        ("DEC", structure.DECIMAL),
        ("DOUBLE PRECISION", structure.DOUBLE),
        ("BOOL", structure.BOOLEAN),
        ("CHARACTER VARYING", structure.VARCHAR),
        ("LONG VARCHAR", structure.VARCHAR),
        ("MIDDLEINT", structure.INTEGER),
        ("INT3", structure.INTEGER),
        ("REAL", structure.REAL),
    ]


def test_table_and_column_comments_are_recorded_without_their_quotes() -> None:
    structure_ = created("CREATE TABLE t (a INT COMMENT 'it''s') COMMENT = 'the \\'table\\''")
    assert structure_.columns[0].comment == "it''s"
    assert structure_.comment == "the \\'table\\'"


def test_generated_columns_are_plain_columns_for_debezium() -> None:
    structure_ = created(
        "CREATE TABLE t (a INT, b INT AS (a + 1) VIRTUAL, c INT GENERATED ALWAYS AS (a * 2)"
        " STORED, d INT AS (a) PERSISTENT INVISIBLE)"
    )
    assert [(c.generated, c.optional, c.has_default_value) for c in structure_.columns[1:]] == [
        (False, True, True)
    ] * 3


def test_indexes_checks_foreign_keys_periods_and_partitions_change_no_column() -> None:
    structure_ = created(
        "CREATE TABLE t (id INT NOT NULL, g GEOMETRY NOT NULL, s DATETIME(6), e DATETIME(6),"
        " KEY k (id), INDEX (id) USING BTREE, SPATIAL KEY sp (g), FULLTEXT KEY f (s),"
        " CONSTRAINT fk FOREIGN KEY (id) REFERENCES o (id) ON DELETE CASCADE,"
        " CONSTRAINT c CHECK (id > 0), CHECK (id < 9), PERIOD FOR p (s, e))"
        " ENGINE=InnoDB ROW_FORMAT=DYNAMIC KEY_BLOCK_SIZE=8 PARTITION BY HASH (id) PARTITIONS 4"
    )
    assert names(structure_) == ["id", "g", "s", "e"]
    assert structure_.primary_key == ()


def test_create_table_records_the_whole_statement_in_its_database() -> None:
    outcome = ddl("/* made by hand */ CREATE TABLE other.t (a INT) ;", database=None)
    assert outcome.database == "other"
    assert outcome.statements == ("CREATE TABLE other.t (a INT)",)
    assert outcome.changes[0].table.id == TableId("other", "t")


def test_create_table_of_a_known_table_changes_nothing_but_create_or_replace_does() -> None:
    tables = table(BASE)
    assert ddl("CREATE TABLE IF NOT EXISTS t (x INT)", tables).changes == ()
    assert ddl("CREATE TABLE t (x INT)", tables).changes == ()
    assert names(created("CREATE OR REPLACE TABLE t (x INT)", tables=tables)) == ["x"]


def test_create_table_like_copies_columns_key_and_charset_but_not_the_comment() -> None:
    tables = table(BASE + " COMMENT 'c'")
    for statement in ("CREATE TABLE copy LIKE t", "CREATE TABLE IF NOT EXISTS copy (LIKE t)"):
        copy = created(statement, tables=tables)
        original = tables[T]
        assert copy.id == TableId(DB, "copy")
        assert (copy.columns, copy.primary_key) == (original.columns, original.primary_key)
        assert (copy.default_charset_name, copy.comment) == ("latin1", None)
    assert ddl("CREATE TABLE copy LIKE missing", tables).changes == ()


def test_create_table_as_select_and_temporary_tables_follow_debezium() -> None:
    assert ddl("CREATE TABLE t2 (a INT) SELECT 1 AS a").changes == ()
    assert ddl("CREATE TABLE t2 AS SELECT 1 AS a").changes == ()
    assert names(created("CREATE TEMPORARY TABLE tmp (a INT)")) == ["a"]


# --------------------------------------------------------------------------------------------
# ALTER TABLE.


def test_add_column_goes_last_first_or_after_a_column_and_takes_the_table_charset() -> None:
    tables = table(BASE)
    assert names(altered("ALTER TABLE t ADD COLUMN c TEXT", tables)) == ["id", "a", "b", "c"]
    assert names(altered("ALTER TABLE t ADD c INT FIRST", tables)) == ["c", "id", "a", "b"]
    after = altered("ALTER TABLE t ADD COLUMN c CHAR(2) NOT NULL AFTER id", tables)
    assert names(after) == ["id", "c", "a", "b"]
    assert [c.position for c in after.columns] == [1, 2, 3, 4]
    assert column(after, "c").charset_name == "latin1"


def test_add_several_columns_in_parentheses_with_a_key() -> None:
    structure_ = altered(
        "ALTER TABLE t ADD (c INT NOT NULL, d POINT, UNIQUE KEY (c))",
        table("CREATE TABLE t (a INT)"),
    )
    assert names(structure_) == ["a", "c", "d"]
    assert structure_.primary_key == ("c",)
    assert column(structure_, "d").type_name == "POINT"


def test_drop_column_removes_it_from_the_key_and_renumbers() -> None:
    structure_ = altered("ALTER TABLE t DROP COLUMN id, DROP IF EXISTS nope", table(BASE))
    assert names(structure_) == ["a", "b"]
    assert structure_.primary_key == ()
    assert [c.position for c in structure_.columns] == [1, 2]


def test_modify_redefines_a_column_in_place_dropping_attributes_it_does_not_repeat() -> None:
    tables = table(BASE)
    structure_ = altered("ALTER TABLE t MODIFY COLUMN A BIGINT UNSIGNED NOT NULL", tables)
    modified = structure_.columns[1]
    assert (modified.name, modified.type_name, modified.optional, modified.comment) == (
        "A",
        "BIGINT UNSIGNED",
        False,
        None,
    )
    assert names(altered("ALTER TABLE t MODIFY b INT FIRST", tables)) == ["b", "id", "a"]


def test_change_renames_in_place_keeping_other_attributes_but_not_the_default() -> None:
    tables = table(BASE)
    structure_ = altered("ALTER TABLE t CHANGE a label VARCHAR(30) NOT NULL", tables)
    changed = column(structure_, "label")
    assert names(structure_) == ["id", "label", "b"]
    assert (changed.length, changed.optional, changed.comment) == (30, False, "note")
    assert changed.has_default_value is False
    renamed_key = altered("ALTER TABLE t CHANGE COLUMN id ident BIGINT NOT NULL AFTER b", tables)
    assert names(renamed_key) == ["a", "b", "ident"]
    assert renamed_key.primary_key == ("ident",)
    b_default = altered("ALTER TABLE t CHANGE b b BIGINT", tables)
    assert column(b_default, "b").default_value_expression is None


def test_rename_column_keeps_the_definition_and_updates_the_key() -> None:
    structure_ = altered("ALTER TABLE t RENAME COLUMN id TO ident", table(BASE))
    assert names(structure_) == ["ident", "a", "b"]
    assert structure_.primary_key == ("ident",)
    assert column(structure_, "ident").length is None


def test_alter_column_sets_or_drops_a_default() -> None:
    tables = table(BASE)
    set_default = altered("ALTER TABLE t ALTER COLUMN a SET DEFAULT 'x'", tables)
    assert column(set_default, "a").default_value_expression == "x"
    dropped = altered("ALTER TABLE t ALTER b DROP DEFAULT", tables)
    assert (column(dropped, "b").has_default_value, column(dropped, "b").optional) == (False, True)
    # Debezium leaves the previous default in place for SET DEFAULT NULL.
    kept = altered("ALTER TABLE t ALTER COLUMN b SET DEFAULT NULL", tables)
    assert column(kept, "b").default_value_expression == "7"


def test_primary_keys_can_be_dropped_and_added() -> None:
    structure_ = altered("ALTER TABLE t DROP PRIMARY KEY, ADD PRIMARY KEY (a, id)", table(BASE))
    assert structure_.primary_key == ("a", "id")
    assert column(structure_, "a").optional is False
    assert altered("ALTER TABLE t DROP PRIMARY KEY", table(BASE)).primary_key == ()


def test_rename_to_moves_the_table_and_names_the_old_id() -> None:
    tables = table(BASE)
    outcome = ddl("ALTER TABLE t RENAME TO t2", tables)
    change = outcome.changes[0]
    assert (change.type, change.table.id, change.previous_id) == (
        TableChangeType.ALTER,
        TableId(DB, "t2"),
        T,
    )
    moved = ddl("ALTER TABLE inventory.t RENAME AS archive.t", tables).changes[0]
    assert moved.table.id == TableId("archive", "t")
    assert ddl("ALTER TABLE t ADD c INT", tables).changes[0].previous_id is None


def test_several_clauses_apply_in_order_in_one_alter_change() -> None:
    outcome = ddl(
        "ALTER TABLE t ADD COLUMN c INT FIRST, ADD d TEXT AFTER id, DROP COLUMN b,"
        " MODIFY a VARCHAR(20) DEFAULT 'x', CHANGE id ident BIGINT NOT NULL,"
        " RENAME COLUMN c TO cc, ALTER COLUMN a SET DEFAULT 'y', ENGINE=InnoDB, RENAME TO u",
        table(BASE),
    )
    (change,) = outcome.changes
    assert change.table.id == TableId(DB, "u")
    assert names(change.table) == ["cc", "ident", "d", "a"]
    assert change.table.primary_key == ("ident",)
    assert column(change.table, "a").default_value_expression == "y"
    assert outcome.statements == (outcome.statements[0],)
    assert outcome.statements[0].startswith("ALTER TABLE t ADD COLUMN c INT FIRST")


@pytest.mark.parametrize(
    "clause",
    [
        "ENGINE=InnoDB",
        "DEFAULT CHARSET=utf8mb4",
        "AUTO_INCREMENT = 100, ROW_FORMAT=COMPRESSED",
        "ADD INDEX i (a), ADD FULLTEXT KEY f (a), DROP INDEX i",
        "ADD CONSTRAINT fk FOREIGN KEY (b) REFERENCES o (id), DROP FOREIGN KEY fk",
        "ADD CONSTRAINT c CHECK (b > 0), DROP CONSTRAINT c",
        "ALGORITHM=INPLACE, LOCK=NONE",
        "FORCE",
        "ORDER BY a",
        "RENAME INDEX i TO j",
        "DISABLE KEYS",
        "ADD PARTITION (PARTITION p3 VALUES LESS THAN (2000))",
        "ALTER INDEX i IGNORED",
    ],
)
def test_table_options_and_index_clauses_give_an_alter_change_without_structural_change(
    clause: str,
) -> None:
    tables = table(BASE)
    assert altered(f"ALTER TABLE t {clause}", tables) == tables[T]


def test_alter_table_comment_replaces_the_comment() -> None:
    assert altered("ALTER TABLE t COMMENT = 'new'", table(BASE)).comment == "new"


def test_convert_to_charset_changes_the_table_and_its_text_columns() -> None:
    structure_ = altered("ALTER TABLE t CONVERT TO CHARACTER SET utf8mb4", table(BASE))
    assert structure_.default_charset_name == "utf8mb4"
    assert [c.charset_name for c in structure_.columns] == [None, "utf8mb4", None]


def test_alter_ignore_and_online_and_spatial_columns_are_understood() -> None:
    tables = table(BASE)
    assert names(altered("ALTER IGNORE TABLE t ADD p POINT", tables))[-1] == "p"
    online = altered("ALTER ONLINE TABLE t ADD COLUMN g GEOMETRYCOLLECTION NOT NULL", tables)
    assert column(online, "g").jdbc_type == structure.OTHER


def test_alter_table_of_an_unknown_table_changes_nothing() -> None:
    outcome = ddl("ALTER TABLE other.missing ADD c INT", table(BASE))
    assert (outcome.changes, outcome.database) == ((), "other")


# --------------------------------------------------------------------------------------------
# DROP TABLE, RENAME TABLE, TRUNCATE, indexes.


def test_drop_table_drops_each_table_with_its_own_statement() -> None:
    tables = table(BASE)
    outcome = ddl("DROP TABLE IF EXISTS t, `other`.`x y` CASCADE", tables)
    assert [(c.type, c.table.id) for c in outcome.changes] == [
        (TableChangeType.DROP, T),
        (TableChangeType.DROP, TableId("other", "x y")),
    ]
    assert outcome.changes[0].table == tables[T]
    assert outcome.changes[1].table == TableStructure(TableId("other", "x y"), ())
    assert outcome.statements == (
        "DROP TABLE IF EXISTS `inventory`.`t` CASCADE",
        "DROP TABLE IF EXISTS `other`.`x y` CASCADE",
    )
    assert outcome.database == DB


def test_drop_temporary_table_written_by_the_server_is_a_drop() -> None:
    outcome = ddl("DROP TEMPORARY TABLE IF EXISTS `t` /* generated by server */", table(BASE))
    assert [c.type for c in outcome.changes] == [TableChangeType.DROP]
    assert outcome.statements == ("DROP TEMPORARY TABLE IF EXISTS `inventory`.`t`",)


def test_rename_table_renames_each_known_table_in_order() -> None:
    tables = {**table(BASE), **table("CREATE TABLE u (z INT)")}
    outcome = ddl("RENAME TABLE t TO tmp, u TO t, tmp TO u, missing TO gone", tables)
    assert [(c.type, c.previous_id, c.table.id) for c in outcome.changes] == [
        (TableChangeType.ALTER, T, TableId(DB, "tmp")),
        (TableChangeType.ALTER, TableId(DB, "u"), T),
        (TableChangeType.ALTER, TableId(DB, "tmp"), TableId(DB, "u")),
    ]
    assert names(outcome.changes[1].table) == ["z"]
    assert names(outcome.changes[2].table) == ["id", "a", "b"]
    assert outcome.statements == (
        "RENAME TABLE t TO tmp",
        "RENAME TABLE u TO t",
        "RENAME TABLE tmp TO u",
    )


def test_rename_table_across_databases() -> None:
    change = ddl("RENAME TABLE inventory.t TO `archive`.`t_old`", table(BASE)).changes[0]
    assert (change.previous_id, change.table.id) == (T, TableId("archive", "t_old"))


def test_truncate_changes_no_structure() -> None:
    outcome = ddl("TRUNCATE TABLE other.t", table(BASE))
    assert (outcome.changes, outcome.database) == ((), "other")
    assert ddl("TRUNCATE t", table(BASE)).changes == ()


def test_only_a_unique_index_on_a_table_without_key_changes_it() -> None:
    no_key = table("CREATE TABLE t (a INT NOT NULL, b INT)")
    created_index = ddl("CREATE UNIQUE INDEX ua ON t (a)", no_key)
    assert [c.type for c in created_index.changes] == [TableChangeType.ALTER]
    assert created_index.changes[0].table.primary_key == ("a",)
    nullable = ddl("CREATE UNIQUE INDEX ub ON t (b)", no_key).changes[0].table
    assert nullable.primary_key == ()
    assert ddl("CREATE INDEX i ON t (a)", no_key).changes == ()
    assert ddl("CREATE UNIQUE INDEX u ON t (id)", table(BASE)).changes == ()
    assert ddl("DROP INDEX i ON t", no_key).changes == ()


# --------------------------------------------------------------------------------------------
# Databases, SET and statements that touch no table.


def test_create_alter_and_drop_database_track_database_charsets() -> None:
    created_db = ddl("CREATE DATABASE IF NOT EXISTS `shop` DEFAULT CHARACTER SET = latin1")
    assert created_db.database == "shop"
    assert created_db.charsets == Charsets(None, {"shop": "latin1"})
    altered_db = ddl("ALTER DATABASE shop CHARSET utf8mb4", charsets=created_db.charsets)
    assert altered_db.charsets == Charsets(None, {"shop": "utf8mb4"})
    current = ddl("ALTER SCHEMA CHARACTER SET ascii")
    assert current.charsets == Charsets(None, {DB: "ascii"})
    server_default = ddl("CREATE SCHEMA s CHARACTER SET DEFAULT", charsets=Charsets("latin2"))
    assert server_default.charsets == Charsets("latin2", {"s": "latin2"})
    dropped = ddl("DROP DATABASE IF EXISTS shop", charsets=altered_db.charsets)
    assert (dropped.dropped_database, dropped.charsets, dropped.changes) == (
        "shop",
        Charsets(None, {}),
        (),
    )
    assert ddl("CREATE DATABASE plain").charsets is None


def test_set_tracks_the_server_and_database_charsets_as_debeziums_snapshot_records_them() -> None:
    outcome = ddl("SET character_set_server=utf8mb4, collation_server=utf8mb4_general_ci")
    assert outcome.charsets == Charsets("utf8mb4", {})
    session = ddl("SET @@session.character_set_database = 'latin1'")
    assert session.charsets == Charsets(None, {DB: "latin1"})
    assert ddl("SET NAMES utf8mb4").charsets is None
    assert ddl("SET @x = 1").charsets is None


@pytest.mark.parametrize(
    "statement",
    [
        "GRANT SELECT ON *.* TO 'cdc'@'%'",
        "CREATE USER 'u'@'%' IDENTIFIED BY 'p'",
        "RENAME USER 'a'@'%' TO 'b'@'%'",
        "FLUSH PRIVILEGES",
        "FLUSH TABLES WITH READ LOCK",
        "BEGIN",
        "COMMIT",
        "XA START 'x'",
        "SAVEPOINT s1",
        "CREATE VIEW v AS SELECT 1",
        "CREATE OR REPLACE ALGORITHM=MERGE DEFINER=`root`@`%` VIEW v AS SELECT 1",
        "DROP VIEW IF EXISTS v",
        "CREATE PROCEDURE p() BEGIN SELECT 1; END",
        "CREATE DEFINER=`root`@`%` TRIGGER tr BEFORE INSERT ON t FOR EACH ROW SET NEW.a = 1",
        "CREATE EVENT e ON SCHEDULE EVERY 1 HOUR DO DELETE FROM t",
        "CREATE SEQUENCE s START WITH 1",
        "ANALYZE TABLE t",
        "OPTIMIZE TABLE t",
        "INSERT INTO t VALUES (1)",
        "/*!40101 SET character_set_client = utf8 */",
        "-- only a comment",
        "",
    ],
)
def test_statements_that_touch_no_table_change_nothing(statement: str) -> None:
    tables = table(BASE)
    assert ddl(statement, tables) == DdlOutcome((), DB)


# --------------------------------------------------------------------------------------------
# Names, quoting and comments.


def test_qualified_names_override_the_event_database_and_backquotes_escape() -> None:
    outcome = ddl("CREATE TABLE `my db`.`a``b` (`c``d` INT, `e f` INT)", database=None)
    structure_ = outcome.changes[0].table
    assert structure_.id == TableId("my db", "a`b")
    assert names(structure_) == ["c`d", "e f"]
    assert outcome.database == "my db"


def test_an_unqualified_name_without_database_has_an_empty_database() -> None:
    outcome = ddl("CREATE TABLE t (a INT)", database="")
    assert outcome.changes[0].table.id == TableId("", "t")
    assert outcome.database is None


def test_column_names_match_case_insensitively() -> None:
    structure_ = altered("ALTER TABLE t DROP COLUMN ID, MODIFY B TEXT", table(BASE))
    assert names(structure_) == ["a", "B"]


def test_comments_are_ignored_and_executable_comments_are_run() -> None:
    structure_ = created(
        "CREATE TABLE t ( -- the key\n id INT /* inline */ NOT NULL, # hash\n"
        " v VARCHAR(3) /*!40101 CHARACTER SET latin1 */ /*M!100100 COMMENT 'maria' */)"
        " /*!40101 DEFAULT CHARSET=utf8mb4 */"
    )
    assert names(structure_) == ["id", "v"]
    assert structure_.columns[0].optional is False
    assert (structure_.columns[1].charset_name, structure_.columns[1].comment) == (
        "latin1",
        "maria",
    )
    assert structure_.default_charset_name == "utf8mb4"


def test_a_statement_inside_an_executable_comment_is_recorded_with_it() -> None:
    outcome = ddl("/*!40000 ALTER TABLE `t` DISABLE KEYS */;", table(BASE))
    assert outcome.statements == ("/*!40000 ALTER TABLE `t` DISABLE KEYS */",)


def test_the_given_structures_are_not_mutated() -> None:
    tables = table(BASE)
    before = dict(tables)
    ddl("ALTER TABLE t DROP COLUMN a, RENAME TO u", tables)
    ddl("RENAME TABLE t TO v", tables)
    ddl("DROP TABLE t", tables)
    assert tables == before


# --------------------------------------------------------------------------------------------
# Unparseable statements.


@pytest.mark.parametrize(
    ("statement", "reason"),
    [
        ("CREATE TABLE q (a INET6)", "unknown column type 'INET6'"),
        ("CREATE TABLE q (a INT, b)", "column 'b'"),
        ("CREATE TABLE q (", "unbalanced parentheses"),
        ("CREATE TABLE q (a INT, PRIMARY KEY (zz))", "primary key column 'zz'"),
        ("CREATE TABLE q (a INT DEFAULT)", "sqlglot"),
        ("CREATE TABLE q (a VARCHAR(3) NOT NULL GARBAGE HERE)", "sqlglot"),
        ("CREATE TABLE q (a INT) COMMENT 'unterminated", "tokenize"),
        ("ALTER TABLE t FROBNICATE", "unknown ALTER TABLE clause 'FROBNICATE'"),
        ("ALTER TABLE t MODIFY nope INT", "MODIFY of unknown column 'nope'"),
        ("ALTER TABLE t CHANGE nope x INT", "CHANGE of unknown column 'nope'"),
        ("ALTER TABLE t RENAME COLUMN nope TO x", "unknown column 'nope'"),
        ("ALTER TABLE t ADD COLUMN c", "expected a type"),
        ("DROP TABLE", "the statement ends too early"),
        ("RENAME TABLE t", "expected TO"),
    ],
)
def test_an_unparseable_structural_statement_names_itself_and_the_reason(
    statement: str, reason: str
) -> None:
    with pytest.raises(UnparseableDdl) as raised:
        ddl(statement, table(BASE))
    message = str(raised.value)
    assert reason in message
    assert statement.split()[0] in message
    assert raised.value.statement == statement


def test_a_long_unparseable_statement_is_shortened_in_the_message() -> None:
    statement = "CREATE TABLE t (a INET6, " + ", ".join(f"c{i} INT" for i in range(100)) + ")"
    with pytest.raises(UnparseableDdl) as raised:
        ddl(statement)
    assert "..." in str(raised.value)
    assert len(str(raised.value)) < 250


def test_debeziums_snapshot_statements_carry_the_database_charset_to_its_tables() -> None:
    charsets = Charsets()
    for statement in (
        "SET character_set_server=latin1, collation_server=latin1_swedish_ci",
        "DROP DATABASE IF EXISTS `shop`",
        "CREATE DATABASE `shop` CHARSET utf8mb4 COLLATE utf8mb4_general_ci",
        "USE `shop`",
    ):
        outcome = ddl(statement, database="shop", charsets=charsets)
        charsets = outcome.charsets or charsets
    assert charsets == Charsets("latin1", {"shop": "utf8mb4"})
    structure_ = created("CREATE TABLE t (a VARCHAR(3))", database="shop", charsets=charsets)
    assert (structure_.default_charset_name, structure_.columns[0].charset_name) == (
        "utf8mb4",
        "utf8mb4",
    )
    assert ddl("USE `shop`").database == "shop"


def test_mariadb_wait_and_if_exists_options_are_understood() -> None:
    tables = table(BASE)
    assert names(altered("ALTER TABLE t WAIT 5 ADD COLUMN IF NOT EXISTS x INT", tables))[-1] == "x"
    modified = altered("ALTER TABLE IF EXISTS t NOWAIT MODIFY COLUMN IF EXISTS b BIGINT", tables)
    assert column(modified, "b").type_name == "BIGINT"
    changed = altered("ALTER TABLE t CHANGE COLUMN IF EXISTS b bb INT AFTER id", tables)
    assert names(changed) == ["id", "bb", "a"]
    assert [c.type for c in ddl("DROP TABLE t WAIT 3", tables).changes] == [TableChangeType.DROP]
    renamed = ddl("RENAME TABLE t NOWAIT TO u", tables).changes[0]
    assert (renamed.previous_id, renamed.table.id) == (T, TableId(DB, "u"))


def test_mariadbs_set_statement_for_prefix_applies_the_statement_it_wraps() -> None:
    outcome = ddl(
        "SET STATEMENT max_statement_time=60, lock_wait_timeout=5 FOR ALTER TABLE t ADD c INT",
        table(BASE),
    )
    assert names(outcome.changes[0].table) == ["id", "a", "b", "c"]
    assert outcome.statements == ("ALTER TABLE t ADD c INT",)
