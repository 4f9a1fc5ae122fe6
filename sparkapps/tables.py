"""Target Delta tables: creation, added columns, the truncate floor and the tombstones.

:class:`DeltaTarget` is the job's handle on one target table. It caches what it learns about
the table (its schema, its truncate floor) for the life of the job: the job is the table's
only writer, and a restarted job reads them again.

Two pieces of state make the position guard complete (see :mod:`cdcflow.sparkapps.positions`):

* the **truncate floor**, a table property (``cdcflow.truncatedBefore``): the position of the
  last applied truncate. Events before it are never applied again.
* the **tombstones**, a small Delta table beside the targets
  (``<target.path>/_cdc_tombstones/<table>``): the key and position of every delete, so a
  replayed insert older than the delete cannot bring a deleted row back. (Stale tombstones are
  harmless: a newer change of the key passes the guard and removes nothing.)
"""

from __future__ import annotations

from collections.abc import Sequence

from delta.tables import DeltaTable
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as sf
from pyspark.sql import types as st

from cdcflow.sparkapps.decoding import OP, POSITION

FLOOR_PROPERTY = "cdcflow.truncatedBefore"


class DeltaTarget:
    """One Delta table the job writes, by path."""

    def __init__(self, spark: SparkSession, path: str) -> None:
        self.spark = spark
        self.path = path
        self._schema: st.StructType | None = None
        self._known = False
        self._floor: str | None = None
        self._floor_read = False

    def schema(self) -> st.StructType | None:
        """The table's schema, or None while it does not exist."""
        if not self._known:
            if DeltaTable.isDeltaTable(self.spark, self.path):
                self._schema = self.table().toDF().schema
            self._known = True
        return self._schema

    def table(self) -> DeltaTable:
        """The Delta table (it must exist)."""
        return DeltaTable.forPath(self.spark, self.path)

    def ensure_columns(self, columns: Sequence[st.StructField]) -> None:
        """Create the table with ``columns``, or add those it lacks (schema evolution)."""
        schema = self.schema()
        if schema is None:
            builder = DeltaTable.createIfNotExists(self.spark).location(self.path)
            builder.addColumns(st.StructType(list(columns))).execute()
            self._floor, self._floor_read = None, True  # a new table was never truncated
        else:
            missing = [c for c in columns if c.name not in schema.fieldNames()]
            if not missing:
                return
            empty = self.spark.createDataFrame([], st.StructType([*schema.fields, *missing]))
            empty.write.format("delta").mode("append").option("mergeSchema", "true").save(self.path)
        self._known = False
        self._schema = None

    def floor(self) -> str | None:
        """The position of the last applied truncate, or None."""
        if not self._floor_read and self.schema() is not None:
            properties = self.table().detail().select("properties").first()
            values = properties[0] if properties is not None else None
            self._floor = (values or {}).get(FLOOR_PROPERTY)
            self._floor_read = True
        return self._floor

    def truncate_before(self, position: str) -> None:
        """Delete every row written before ``position``, then record it as the floor."""
        self.table().delete(sf.col(POSITION) < sf.lit(position))
        self.record_floor(position)

    def record_floor(self, position: str) -> None:
        """Remember ``position`` as the last applied truncate.

        Callers record the floor after the truncate's effect is committed: after a crash in
        between, the replayed batch finds the old floor and applies the truncate again.
        """
        self.spark.sql(
            f"ALTER TABLE delta.`{quoted(self.path)}` SET TBLPROPERTIES "
            f"('{FLOOR_PROPERTY}' = '{position}')"
        )
        self._floor, self._floor_read = position, True


def quoted(identifier: str) -> str:
    """``identifier`` escaped for use between backticks in Spark SQL."""
    return identifier.replace("`", "``")


def ref(alias: str, name: str) -> Column:
    """Column ``name`` of the MERGE side ``alias`` (``t`` target, ``s`` source)."""
    return sf.col(f"{alias}.`{quoted(name)}`")


def assigned(name: str) -> str:
    """A target column as a key of a MERGE ``set``/``values`` map."""
    return f"`{quoted(name)}`"


def key_condition(keys: Sequence[str]) -> Column:
    """The MERGE condition matching target and source rows on the primary key."""
    condition = sf.lit(True)
    for key in keys:
        condition = condition & (ref("t", key) == ref("s", key))
    return condition


class Tombstones:
    """The positions of deleted keys of one target table."""

    def __init__(self, spark: SparkSession, path: str, keys: Sequence[str]) -> None:
        self.spark = spark
        self.path = path
        self.keys = tuple(keys)
        self._exists: bool | None = None

    def exist(self) -> bool:
        """Whether any delete has been recorded."""
        if self._exists is None:
            self._exists = DeltaTable.isDeltaTable(self.spark, self.path)
        return self._exists

    def newer(self, changes: DataFrame) -> DataFrame:
        """``changes`` without those at or before their key's recorded delete."""
        if not self.exist():
            return changes
        deleted = DeltaTable.forPath(self.spark, self.path).toDF()
        deleted = deleted.withColumnRenamed(POSITION, "_cdc_deleted_at")
        joined = changes.join(deleted, list(self.keys), "left")
        passes = sf.col("_cdc_deleted_at").isNull() | (sf.col(POSITION) > sf.col("_cdc_deleted_at"))
        return joined.where(passes).drop("_cdc_deleted_at")

    def record(self, changes: DataFrame, key_types: Sequence[st.StructField]) -> None:
        """Remember the position of every delete among ``changes`` (latest per key)."""
        deletes = changes.where(sf.col(OP) == "d").select(*self.keys, POSITION)
        if not self.exist():
            (
                DeltaTable.createIfNotExists(self.spark)
                .location(self.path)
                .addColumns(st.StructType([*key_types, st.StructField(POSITION, st.StringType())]))
                .execute()
            )
            self._exists = True
        (
            DeltaTable.forPath(self.spark, self.path)
            .alias("t")
            .merge(deletes.alias("s"), key_condition(self.keys))
            .whenMatchedUpdate(
                condition=ref("s", POSITION) > ref("t", POSITION),
                set={POSITION: ref("s", POSITION)},
            )
            .whenNotMatchedInsertAll()
            .execute()
        )
