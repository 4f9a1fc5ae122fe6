"""Column metadata as Debezium's PostgreSQL connector sees it: type name, length and scale.

Debezium takes them from the PostgreSQL JDBC driver, so this module reproduces pgjdbc's
``TypeInfoCache`` (``getPrecision``, ``getScale``, ``getDisplaySize``, with ``unknownLength``
at its default, ``Integer.MAX_VALUE``). Column mappers use the result: truncation and hash
masking compare against the length, ``column.propagate.source.type`` publishes all three.

Debezium reads a table's columns two ways and they do not always agree, so neither do we:

* for the snapshot (and incremental snapshots) from ``DatabaseMetaData.getColumns``: the
  length is the precision, or the display size when that is 0 (except for ``numeric``); the
  scale is absent for ``numeric`` without a declared precision;
* while streaming from pgoutput's Relation message: the length is the precision under the
  column's typmod, or without one the type's default (precision, else display size); the scale
  is always there.

They differ only for ``numeric`` without precision (length 0 and no scale in the snapshot,
131089 and 0 in the stream). Domains take the length and scale of their declared base type in
both. The type name is the driver's: ``pg_type.typname``, with ``serial``, ``bigserial`` and
``smallserial`` for integer columns whose default calls ``nextval(``.
"""

from __future__ import annotations

from typing import Any, Final, Literal

import psycopg

from cdcflow.capture.connectors.postgres.types import PgType, TypeRegistry
from cdcflow.capture.mapping import SourceColumn
from cdcflow.capture.spi import TableId

Origin = Literal["snapshot", "stream"]

UNKNOWN_LENGTH: Final = 2_147_483_647
#: Display size of an unconstrained numeric: ``SELECT LENGTH(pow(10::numeric,131071))``.
_NUMERIC_DISPLAY: Final = 131_089
_SERIALS: Final = {"int4": "serial", "int8": "bigserial", "int2": "smallserial"}
#: Built-in types the driver reports as JDBC CHAR or VARCHAR: text, varchar, name, bpchar, char.
_CHARACTER_OIDS: Final = frozenset({25, 1043, 19, 1042, 18})


class _Oid:
    INT2 = 21
    INT4 = 23
    OID = 26
    INT8 = 20
    FLOAT4 = 700
    FLOAT8 = 701
    NUMERIC = 1700
    CHAR = 18
    BOOL = 16
    BPCHAR = 1042
    VARCHAR = 1043
    DATE = 1082
    TIME = 1083
    TIMETZ = 1266
    TIMESTAMP = 1114
    TIMESTAMPTZ = 1184
    INTERVAL = 1186
    BIT = 1560
    VARBIT = 1562


_FIXED_PRECISION: Final = {
    _Oid.INT2: 5,
    _Oid.OID: 10,
    _Oid.INT4: 10,
    _Oid.INT8: 19,
    _Oid.FLOAT4: 8,
    _Oid.FLOAT8: 17,
    _Oid.CHAR: 1,
    _Oid.BOOL: 1,
}
_FIXED_DISPLAY: Final = {
    _Oid.INT2: 6,
    _Oid.INT4: 11,
    _Oid.OID: 10,
    _Oid.INT8: 20,
    _Oid.FLOAT4: 15,
    _Oid.FLOAT8: 25,
    _Oid.CHAR: 1,
    _Oid.BOOL: 1,
    _Oid.DATE: 13,
    _Oid.INTERVAL: 49,
}
_CLOCKS: Final = frozenset({_Oid.TIME, _Oid.TIMETZ, _Oid.TIMESTAMP, _Oid.TIMESTAMPTZ})


COMMENTS_SQL = """
SELECT a.attname, d.description
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
JOIN pg_description d ON d.objoid = c.oid AND d.classoid = 'pg_class'::regclass
                     AND d.objsubid = a.attnum
WHERE n.nspname = %s AND c.relname = %s
"""


def column_comments(conn: psycopg.Connection[tuple[Any, ...]], table: TableId) -> dict[str, str]:
    """``COMMENT ON COLUMN`` texts of ``table`` by column name (``include.schema.comments``)."""
    rows = conn.execute(COMMENTS_SQL, (table.schema, table.table)).fetchall()
    return {str(name): str(text) for name, text in rows}


def precision(oid: int, typmod: int) -> int:
    """pgjdbc ``TypeInfoCache.getPrecision`` (for a base type oid; arrays resolved first)."""
    if oid in _FIXED_PRECISION:
        return _FIXED_PRECISION[oid]
    if oid == _Oid.NUMERIC:
        return 0 if typmod == -1 else ((typmod - 4) >> 16) & 0xFFFF
    if oid in (_Oid.BPCHAR, _Oid.VARCHAR):
        return UNKNOWN_LENGTH if typmod == -1 else typmod - 4
    if oid in _CLOCKS or oid in (_Oid.DATE, _Oid.INTERVAL):
        return display_size(oid, typmod)
    if oid == _Oid.BIT:
        return typmod
    if oid == _Oid.VARBIT:
        return UNKNOWN_LENGTH if typmod == -1 else typmod
    return UNKNOWN_LENGTH


def scale(oid: int, typmod: int) -> int:
    """pgjdbc ``TypeInfoCache.getScale``."""
    if oid == _Oid.FLOAT4:
        return 8
    if oid == _Oid.FLOAT8:
        return 17
    if oid == _Oid.NUMERIC:
        return 0 if typmod == -1 else (typmod - 4) & 0xFFFF
    if oid in _CLOCKS:
        return 6 if typmod == -1 else typmod
    if oid == _Oid.INTERVAL:
        return 6 if typmod == -1 else typmod & 0xFFFF
    return 0


def display_size(oid: int, typmod: int) -> int:
    """pgjdbc ``TypeInfoCache.getDisplaySize``."""
    if oid in _FIXED_DISPLAY:
        return _FIXED_DISPLAY[oid]
    if oid in _CLOCKS:
        seconds = {-1: 7, 0: 0, 1: 3}.get(typmod, typmod + 1)
        width = {_Oid.TIME: 8, _Oid.TIMETZ: 14, _Oid.TIMESTAMP: 22, _Oid.TIMESTAMPTZ: 28}
        return width[oid] + seconds
    if oid in (_Oid.VARCHAR, _Oid.BPCHAR):
        return UNKNOWN_LENGTH if typmod == -1 else typmod - 4
    if oid == _Oid.NUMERIC:
        if typmod == -1:
            return _NUMERIC_DISPLAY
        digits, places = ((typmod - 4) >> 16) & 0xFFFF, (typmod - 4) & 0xFFFF
        return 1 + digits + (1 if places else 0)
    if oid == _Oid.BIT:
        return typmod
    if oid == _Oid.VARBIT:
        return UNKNOWN_LENGTH if typmod == -1 else typmod
    return UNKNOWN_LENGTH


def source_column(
    *,
    name: str,
    type_oid: int,
    typmod: int,
    serial: bool,
    registry: TypeRegistry,
    origin: Origin,
    comment: str | None = None,
) -> SourceColumn:
    """The :class:`SourceColumn` Debezium builds for a column, read the ``origin`` way."""
    declared = registry.get(type_oid)
    if declared is None:
        return SourceColumn(name, str(type_oid), UNKNOWN_LENGTH, 0, False, comment)
    type_name = _SERIALS.get(declared.name, declared.name) if serial else declared.name
    places: int | None
    if declared.is_domain:
        length, places = default_length(declared, registry), default_scale(declared, registry)
    elif origin == "stream":
        length, places = _stream_length(declared, typmod, registry)
    else:
        length, places = _snapshot_length(declared, typmod, registry)
    return SourceColumn(
        name, type_name, length, places, _character(declared, registry), comment=comment
    )


def _base_oid(pg_type: PgType, registry: TypeRegistry) -> int:
    """pgjdbc's ``convertArrayToBaseOid``: an array's element type, else the type itself."""
    element = registry.element(pg_type)
    return element.oid if element is not None else pg_type.oid


def _stream_length(declared: PgType, typmod: int, registry: TypeRegistry) -> tuple[int, int | None]:
    if typmod == -1:
        return default_length(declared, registry), default_scale(declared, registry)
    oid = _base_oid(declared, registry)
    return precision(oid, typmod), scale(oid, typmod)


def _snapshot_length(
    declared: PgType, typmod: int, registry: TypeRegistry
) -> tuple[int, int | None]:
    oid = _base_oid(declared, registry)
    length = precision(oid, typmod)
    numeric = declared.oid == _Oid.NUMERIC
    if length == 0 and not numeric:
        length = display_size(oid, typmod)
    return length, None if numeric and typmod == -1 else scale(oid, typmod)


def default_length(pg_type: PgType, registry: TypeRegistry) -> int:
    """Debezium's ``PostgresType.getDefaultLength``: through domains to the declared base."""
    parent = registry.get(pg_type.base_oid) if pg_type.is_domain else None
    if parent is not None:
        if pg_type.typmod == -1:
            return default_length(parent, registry)
        size = precision(parent.oid, pg_type.typmod) or display_size(parent.oid, pg_type.typmod)
        if size not in (0, UNKNOWN_LENGTH):
            return size
    oid = pg_type.oid if pg_type.is_domain else _base_oid(pg_type, registry)
    return precision(oid, pg_type.typmod) or display_size(oid, pg_type.typmod)


def default_scale(pg_type: PgType, registry: TypeRegistry) -> int:
    """Debezium's ``PostgresType.getDefaultScale``."""
    parent = registry.get(pg_type.base_oid) if pg_type.is_domain else None
    if parent is not None:
        if pg_type.typmod == -1:
            return default_scale(parent, registry)
        return scale(parent.oid, pg_type.typmod)
    oid = pg_type.oid if pg_type.is_domain else _base_oid(pg_type, registry)
    return scale(oid, pg_type.typmod)


def _character(declared: PgType, registry: TypeRegistry) -> bool:
    """JDBC CHAR/VARCHAR: the character types and enums, through domains to the root type."""
    root = registry.resolve(declared.oid)
    base = root[0] if root is not None else declared
    return base.oid in _CHARACTER_OIDS or base.is_enum
