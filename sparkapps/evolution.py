"""Schema evolution: how the columns of incoming change events fit an existing target table.

A column the events have and the table lacks is added (the source added a column). A column
the table has and the events lack stays and is left null by new rows (the source dropped it, or
the events were written before it existed). A column whose type changed is accepted when every
value of the new type fits the table's type (an ``int`` into a ``bigint``, a ``decimal(10,2)``
into a ``decimal(12,2)``); any other change is a *schema mismatch* and the events carrying it go
to the dead-letter table rather than corrupting the target.

Pure functions over ``pyspark.sql.types``; no Spark session needed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from pyspark.sql import types as st

_INTEGRAL_RANK: Mapping[type[st.DataType], int] = {
    st.ByteType: 1,
    st.ShortType: 2,
    st.IntegerType: 3,
    st.LongType: 4,
}
_INTEGRAL_DIGITS: Mapping[type[st.DataType], int] = {
    st.ByteType: 3,
    st.ShortType: 5,
    st.IntegerType: 10,
    st.LongType: 19,
}


@dataclass(frozen=True)
class Fit:
    """How a batch's columns fit the target: columns to add, columns to cast, conflicts."""

    added: tuple[st.StructField, ...] = ()
    casts: Mapping[str, st.DataType] = field(default_factory=dict)
    conflicts: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """Whether the batch can be applied (after adding ``added``)."""
        return not self.conflicts


def fit(incoming: st.StructType, target: st.StructType | None) -> Fit:
    """Compare the events' columns with the target table's (``None``: no table yet)."""
    if target is None:
        return Fit(added=tuple(nullable(f) for f in incoming.fields))
    existing = {f.name: f.dataType for f in target.fields}
    added: list[st.StructField] = []
    casts: dict[str, st.DataType] = {}
    conflicts: list[str] = []
    for column in incoming.fields:
        stored = existing.get(column.name)
        if stored is None:
            added.append(nullable(column))
        elif same_type(column.dataType, stored):
            continue
        elif widens(column.dataType, stored):
            casts[column.name] = stored
        else:
            conflicts.append(
                f"column {column.name} is {column.dataType.simpleString()} in the change "
                f"events but {stored.simpleString()} in the target table"
            )
    return Fit(tuple(added), casts, tuple(conflicts))


def nullable(column: st.StructField) -> st.StructField:
    """``column`` as a nullable target column (target columns are always nullable)."""
    return st.StructField(column.name, relaxed(column.dataType), True)


def relaxed(data_type: st.DataType) -> st.DataType:
    """``data_type`` with every nested field, element and value nullable."""
    if isinstance(data_type, st.StructType):
        return st.StructType([nullable(f) for f in data_type.fields])
    if isinstance(data_type, st.ArrayType):
        return st.ArrayType(relaxed(data_type.elementType), True)
    if isinstance(data_type, st.MapType):
        return st.MapType(relaxed(data_type.keyType), relaxed(data_type.valueType), True)
    return data_type


def same_type(a: st.DataType, b: st.DataType) -> bool:
    """Equal types, ignoring nullability."""
    return relaxed(a) == relaxed(b)


def widens(source: st.DataType, target: st.DataType) -> bool:
    """Whether every value of ``source`` is exactly representable in ``target``."""
    source_rank = _INTEGRAL_RANK.get(type(source))
    if source_rank is not None:
        target_rank = _INTEGRAL_RANK.get(type(target))
        if target_rank is not None:
            return source_rank <= target_rank
        if isinstance(target, st.DecimalType):
            return target.precision - target.scale >= _INTEGRAL_DIGITS[type(source)]
        return False
    if isinstance(source, st.FloatType):
        return isinstance(target, st.DoubleType)
    if isinstance(source, st.DecimalType) and isinstance(target, st.DecimalType):
        return (
            target.scale >= source.scale
            and target.precision - target.scale >= source.precision - source.scale
        )
    return False
