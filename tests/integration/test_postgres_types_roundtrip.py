"""The converters parse what a real PostgreSQL prints.

One table holds a column of every mapped type. A row of representative values and a row of
NULLs are read back as text on a connection carrying ``SESSION_SETTINGS`` (passed as ``-c``
options, as the connector does), the registry is built with ``CATALOG_QUERY``, and
``column_for`` must turn each text into Debezium's value.

The text is read the way pgoutput sends it: the type's output function, here as psycopg's
text-format result with every column loaded as ``str``. ``SELECT col::text`` is *not* the same
for three types (bool prints ``true``, ``char(n)`` loses its padding, a host ``inet`` gains
``/32``); a test below pins exactly that difference.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import psycopg
import pytest
from psycopg.types.string import TextLoader

from cdcflow.capture.connectors.postgres import types
from cdcflow.capture.connectors.postgres.types import TypeOptions, TypeRegistry
from cdcflow.capture.spi import Column
from cdcflow.operator.devservices.postgres import PostgresServer
from tests.integration.pg_type_catalog import (
    COLUMNS,
    MODES,
    MOOD,
    SUFFIX,
    column_definitions,
    create_type_objects,
    drop_type_objects,
    insert_values_sql,
)

TABLE = f"types_roundtrip_{SUFFIX}"


@dataclass(frozen=True)
class Captured:
    """What the server printed and told us about each column."""

    registry: TypeRegistry
    attributes: dict[str, tuple[int, int]]
    values: dict[str, str | None]
    nulls: dict[str, str | None]
    casts: dict[str, str | None]

    def column(self, name: str, options: TypeOptions | None = None) -> Column | None:
        type_oid, typmod = self.attributes[name]
        return types.column_for(
            name=name,
            type_oid=type_oid,
            typmod=typmod,
            optional=True,
            registry=self.registry,
            options=options or TypeOptions(),
        )


def _session_options() -> str:
    return " ".join(f"-c {name}={value}" for name, value in types.SESSION_SETTINGS.items())


@pytest.fixture(scope="module")
def captured(postgres_server: PostgresServer) -> Iterator[Captured]:
    with psycopg.connect(
        postgres_server.dsn(), autocommit=True, options=_session_options()
    ) as conn:
        create_type_objects(conn)
        conn.execute(f"CREATE TABLE {TABLE} (id int PRIMARY KEY, {column_definitions()})")
        try:
            yield _capture(conn)
        finally:
            conn.execute(f"DROP TABLE {TABLE}")
            drop_type_objects(conn)


def _capture(conn: psycopg.Connection[Any]) -> Captured:
    names = [name for name, _, _, _ in COLUMNS]
    conn.execute(insert_values_sql(TABLE, 1))
    conn.execute(f"INSERT INTO {TABLE} (id) VALUES (2)")
    attributes = {
        str(name): (int(oid), int(mod))
        for name, oid, mod in conn.execute(
            "SELECT attname, atttypid::int8, atttypmod FROM pg_attribute "
            "WHERE attrelid = %s::regclass AND attnum > 0 AND NOT attisdropped",
            (TABLE,),
        ).fetchall()
    }
    rows = _output_function_texts(conn, names, {oid for oid, _ in attributes.values()})
    casts = ", ".join(f"{name}::text" for name in names)
    cast_row = conn.execute(f"SELECT {casts} FROM {TABLE} WHERE id = 1").fetchone()
    assert cast_row is not None
    registry = TypeRegistry.from_rows(conn.execute(types.CATALOG_QUERY).fetchall())
    return Captured(
        registry=registry,
        attributes=attributes,
        values=dict(zip(names, rows[0], strict=True)),
        nulls=dict(zip(names, rows[1], strict=True)),
        casts=dict(zip(names, cast_row, strict=True)),
    )


def _output_function_texts(
    conn: psycopg.Connection[Any], names: list[str], oids: set[int]
) -> list[tuple[Any, ...]]:
    """The rows as the server's text-format result: each type's output function, unparsed."""
    with conn.cursor() as cursor:
        for oid in oids:
            cursor.adapters.register_loader(oid, TextLoader)
        cursor.execute(f"SELECT {', '.join(names)} FROM {TABLE} ORDER BY id")
        return cursor.fetchall()


@pytest.mark.parametrize(
    ("name", "expected"),
    [(name, expected) for name, _, _, expected in COLUMNS if expected is not None],
)
def test_each_type_converts_what_the_server_prints_to_debeziums_value(
    captured: Captured, name: str, expected: Any
) -> None:
    column = captured.column(name)
    assert column is not None, f"{name} is not mapped"
    assert column.convert(captured.values[name]) == expected, captured.values[name]


@pytest.mark.parametrize(("name", "options", "expected"), MODES)
def test_each_mode_converts_what_the_server_prints(
    captured: Captured, name: str, options: dict[str, Any], expected: Any
) -> None:
    column = captured.column(name, TypeOptions(**options))
    assert column is not None
    assert column.convert(captured.values[name]) == expected, captured.values[name]


def test_sql_nulls_convert_to_none(captured: Captured) -> None:
    for name, sql_type, _, expected in COLUMNS:
        assert captured.nulls[name] == ("1" if sql_type.endswith("serial") else None)
        column = captured.column(name)
        assert (column is None) == (expected is None), name
        if column is not None:
            assert column.convert(None) is None


def test_a_text_cast_differs_from_the_output_function_only_for_bool_char_and_host_inet(
    captured: Captured,
) -> None:
    differing = {
        name: (captured.values[name], captured.casts[name])
        for name, _, _, _ in COLUMNS
        if captured.values[name] != captured.casts[name]
    }
    assert differing == {
        "c_bool": ("t", "true"),
        "c_char": ("ab   ", "ab"),
        "c_inet": ("10.1.2.3", "10.1.2.3/32"),
    }


def test_unknown_types_are_left_out_unless_asked_for(captured: Captured) -> None:
    assert captured.column("c_tsquery") is None
    opaque = captured.column("c_tsquery", TypeOptions(include_unknown_datatypes=True))
    assert opaque is not None and opaque.schema["type"] == "bytes"


def test_enum_allowed_values_follow_the_enum_sort_order(captured: Captured) -> None:
    column = captured.column("c_enum")
    assert column is not None
    assert column.schema["parameters"] == {"allowed": "sad,ok,happy"}
    assert column.type_name == MOOD


def test_domains_over_numeric_inherit_its_precision_and_scale(captured: Captured) -> None:
    direct = captured.column("c_domain")
    nested = captured.column("c_domain_over_domain")
    assert direct is not None and nested is not None
    assert direct.schema["parameters"] == {"scale": "3", "connect.decimal.precision": "8"}
    assert nested.schema["parameters"] == direct.schema["parameters"]


def test_registry_reads_the_real_catalog(captured: Captured) -> None:
    registry = captured.registry
    assert len(registry) > 400
    int2vector = registry.get(22)
    assert int2vector is not None and int2vector.name == "int2vector"
    assert not int2vector.is_array
    int_array = registry.get(1007)
    assert int_array is not None and int_array.is_array
    hstore_type, _ = captured.attributes["c_hstore"]
    hstore = registry.get(hstore_type)
    assert hstore is not None and hstore.namespace == "public"


def test_schemas_from_the_real_catalog_carry_debeziums_names(captured: Captured) -> None:
    expected = {
        "c_timestamptz": "io.debezium.time.ZonedTimestamp",
        "c_timetz": "io.debezium.time.ZonedTime",
        "c_interval": "io.debezium.time.MicroDuration",
        "c_json": "io.debezium.data.Json",
        "c_xml": "io.debezium.data.Xml",
        "c_uuid": "io.debezium.data.Uuid",
        "c_ltree": "io.debezium.data.Ltree",
        "c_point": "io.debezium.data.geometry.Point",
        "c_bit10": "io.debezium.data.Bits",
        "c_date": "io.debezium.time.Date",
        "c_time_3": "io.debezium.time.Time",
        "c_time": "io.debezium.time.MicroTime",
        "c_timestamp_3": "io.debezium.time.Timestamp",
        "c_timestamp": "io.debezium.time.MicroTimestamp",
        "c_numeric_10_2": "org.apache.kafka.connect.data.Decimal",
    }
    for name, semantic in expected.items():
        column = captured.column(name)
        assert column is not None and column.schema["name"] == semantic, name
