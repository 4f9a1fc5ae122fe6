"""What one micro-batch holds, per topic, and the plan to apply each table.

:func:`survey` is the batch's first action: one aggregation over the decoded records that
returns, per topic and schema version, the Connect schema text, a sample key and the counts.
:func:`reconcile` (pure) then decides, per table, which schema versions can be applied to the
target as it is (and which columns to add) and which are a schema mismatch. :func:`prepare`
decodes the accepted records into change rows, each record with the plan of the schema version
it was written with, in the target's column types, and collects the :class:`Facts` the appliers
branch on (truncates, deletes, placeholders), so no applier needs another action to know them.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as sf
from pyspark.sql import types as st

from cdcflow.sparkapps import decoding, evolution, positions, schemas, transforms
from cdcflow.sparkapps.decoding import (
    KEY,
    KEY_MOVED,
    OFFSET,
    OLD_KEY,
    OP,
    PARTITION,
    PAYLOAD,
    POSITION,
    PROBLEM,
    SCHEMA,
    SCHEMA_ID,
    SOURCE_TS,
    TOPIC,
)
from cdcflow.sparkapps.schemas import (
    EnvelopePlan,
    SchemaError,
    merge_envelopes,
    plain,
    plan_from_text,
)

SCHEMALESS = None
"""The schema id of records without a Connect schema, in :class:`SchemaVersion`."""


@dataclass(frozen=True)
class SchemaVersion:
    """The records of one topic that carry one Connect schema (or none) in this batch."""

    topic: str
    schema_id: int | None
    schema_text: str | None
    records: int
    problems: int
    first_offset: tuple[int, int]
    key: str | None


@dataclass(frozen=True)
class Reconciled:
    """The outcome of :func:`reconcile` for one table.

    ``plan`` is the union of the accepted versions: it names the table's columns and reads
    the positions. It never decodes a record: each record is decoded with the plan of its
    own version in ``versions`` (its own decimal scales, time units and wire types), then
    cast to its column in ``columns``.
    """

    plan: EnvelopePlan | None
    versions: tuple[tuple[int | None, EnvelopePlan], ...] = ()
    """Each accepted schema version's own plan, oldest first."""
    rejected: Mapping[int | None, str] = field(default_factory=dict)
    fit: evolution.Fit = field(default_factory=evolution.Fit)
    columns: st.StructType = field(default_factory=st.StructType)
    """The columns the change rows hold: the target's type where the target has the column,
    else the type of the first accepted version that has it. Every accepted version's values
    fit them exactly."""

    @property
    def accepted(self) -> tuple[int | None, ...]:
        """The schema ids of the accepted versions, oldest first."""
        return tuple(schema_id for schema_id, _ in self.versions)


@dataclass(frozen=True)
class Facts:
    """Counts and positions of one table's change rows in this batch."""

    row_changes: int = 0
    deletes: int = 0
    placeholders: int = 0
    key_moves: int = 0
    """Deletes of a primary-key change (the row lives on under its new key)."""
    key_arrivals: int = 0
    """Creates of a primary-key change (the row's new key)."""
    moved_placeholders: int = 0
    """Creates of a primary-key change that hold the placeholder (filled from the old key)."""
    problems: int = 0
    truncates: tuple[tuple[str, int | None], ...] = ()
    """Position and source time (epoch ms) of every truncate, in source order."""

    @property
    def truncated_at(self) -> str | None:
        """The position of the batch's last truncate, or None."""
        return self.truncates[-1][0] if self.truncates else None


@dataclass(frozen=True)
class TableWork:
    """Everything an applier needs for one table in one batch."""

    topic: str
    name: str
    keys: tuple[str, ...]
    columns: tuple[st.StructField, ...]
    """The table's columns, in the types ``changes`` holds them (the target's types)."""
    unavailable: tuple[tuple[str, Column], ...]
    changes: DataFrame
    facts: Facts


def survey(records: DataFrame) -> list[SchemaVersion]:
    """One pass over the batch: the schema versions per topic, oldest first."""
    good = sf.col(PROBLEM).isNull()
    rows = (
        records.groupBy(TOPIC, SCHEMA_ID)
        .agg(
            sf.first(SCHEMA, ignorenulls=True).alias("schema"),
            sf.count(sf.lit(1)).alias("records"),
            sf.count(PROBLEM).alias("problems"),
            sf.min(sf.struct(PARTITION, OFFSET)).alias("first"),
            sf.first(sf.when(good & sf.col(KEY).isNotNull(), sf.col(KEY)), ignorenulls=True).alias(
                "key"
            ),
        )
        .collect()
    )
    versions = [
        SchemaVersion(
            topic=row[TOPIC],
            schema_id=row[SCHEMA_ID] if row["schema"] is not None else SCHEMALESS,
            schema_text=row["schema"],
            records=row["records"],
            problems=row["problems"],
            first_offset=(row["first"][0], row["first"][1]),
            key=row["key"],
        )
        for row in rows
    ]
    return sorted(versions, key=lambda v: (v.topic, v.first_offset))


def read_plan(version: SchemaVersion) -> EnvelopePlan | str:
    """The plan of a version's Connect schema, or why it cannot be used."""
    if version.schema_text is None:
        raise ValueError("schemaless records have no schema to read")
    try:
        return plan_from_text(version.schema_text)
    except SchemaError as error:
        return f"unusable value schema: {error}"


def reconcile(
    plans: Sequence[tuple[int | None, EnvelopePlan | str]], target: st.StructType | None
) -> Reconciled:
    """Which schema versions fit the target table, merged into one plan, oldest first.

    Versions are checked in order against the target as the earlier accepted versions leave
    it, so the first type a column had wins. A version that cannot be read, or whose column
    types clash, is rejected with the reason; the rest are merged (new columns are added).
    The accepted versions keep their own plans: two versions of a column may store the same
    type yet differ on the wire (a ``Decimal``'s scale, ``Timestamp`` vs ``MicroTimestamp``).
    """
    accepted: list[tuple[int | None, EnvelopePlan]] = []
    rejected: dict[int | None, str] = {}
    current = target
    for schema_id, plan in plans:
        if isinstance(plan, str):
            rejected[schema_id] = plan
            continue
        fit = evolution.fit(_row_type(plan), current)
        if fit.ok:
            accepted.append((schema_id, plan))
            current = st.StructType([*(current.fields if current else []), *fit.added])
        else:
            rejected[schema_id] = "schema mismatch: " + "; ".join(fit.conflicts)
    if not accepted or current is None:
        return Reconciled(None, (), rejected)
    merged = merge_envelopes([plan for _, plan in accepted])
    if positions.ordering_for(merged.source.names) is None:
        reason = f"no source position in the source block ({positions.describe_orderings()})"
        return Reconciled(None, (), {**rejected, **{i: reason for i, _ in accepted}})
    fit = evolution.fit(_row_type(merged), target)
    columns = _stored_columns(merged.row.names, current)
    return Reconciled(merged, tuple(accepted), rejected, fit, columns)


def _stored_columns(names: Sequence[str], current: st.StructType) -> st.StructType:
    """The columns ``names`` with their types in ``current`` (the target as it will be)."""
    types = {f.name: f.dataType for f in current.fields}
    return st.StructType([evolution.nullable(st.StructField(n, types[n])) for n in names])


def inferred_plan(
    spark: SparkSession, payloads: DataFrame, target: st.StructType | None
) -> EnvelopePlan | str:
    """A plan for schemaless payloads: types inferred from the JSON, the target's where known."""
    inferred = infer_json_schema(spark, payloads.select(PAYLOAD))
    images = [f.dataType for f in inferred.fields if f.name in ("before", "after")]
    source = next((f.dataType for f in inferred.fields if f.name == "source"), None)
    rows = [image for image in images if isinstance(image, st.StructType)]
    if not rows or not isinstance(source, st.StructType):
        return "not a Debezium change event (no before/after or source)"
    known = {f.name: f.dataType for f in (target.fields if target else [])}
    columns: dict[str, st.DataType] = {}
    for image in rows:
        for column in image.fields:
            columns.setdefault(column.name, known.get(column.name, column.dataType))
    row = st.StructType([st.StructField(n, t, True) for n, t in columns.items()])
    return EnvelopePlan(row=plain(row), source=plain(source))


def infer_json_schema(spark: SparkSession, texts: DataFrame) -> st.StructType:
    """Spark's JSON schema inference over a one-column DataFrame of JSON texts.

    Runs ``DataFrameReader.json(Dataset[String])`` in the JVM: PySpark only offers it for
    files and RDDs, and an RDD would ship every text through a Python worker.
    """
    jvm = spark._jvm
    assert jvm is not None
    jvm_strings = getattr(texts._jdf, "as")(jvm.org.apache.spark.sql.Encoders.STRING())
    schema_json = spark._jsparkSession.read().json(jvm_strings).schema().json()
    return st.StructType.fromJson(json.loads(schema_json))


def key_columns(versions: Sequence[SchemaVersion]) -> tuple[str, ...]:
    """The key columns named by the first sample key of a topic's versions."""
    return next((keys for v in versions if (keys := schemas.key_columns(v.key))), ())


def prepare(
    *,
    topic: str,
    name: str,
    records: DataFrame,
    reconciled: Reconciled,
    keys: tuple[str, ...],
    keyed: bool,
    placeholder: str,
) -> TableWork:
    """Decode the accepted records of one table and collect their :class:`Facts`."""
    changes = decode(records, reconciled, keyed=keyed).persist(StorageLevel.MEMORY_AND_DISK)
    columns = tuple(reconciled.columns.fields)
    # A key column never holds the placeholder: Debezium sends keys whole.
    valued = [c for c in columns if c.name not in keys]
    unavailable = tuple(transforms.unavailable_columns(valued, placeholder))
    return TableWork(
        topic=topic,
        name=name,
        keys=keys,
        columns=columns,
        unavailable=unavailable,
        changes=changes,
        facts=collect_facts(changes, unavailable),
    )


def decode(records: DataFrame, reconciled: Reconciled, *, keyed: bool) -> DataFrame:
    """The accepted records as change rows, each decoded with its own schema version's plan.

    One :func:`decoding.changes` per version, over that version's records only, all cast to
    ``reconciled.columns`` and united. Positions are read with the merged ``source`` block,
    so every version yields them the same way.
    """
    plan = reconciled.plan
    assert plan is not None
    ordering = positions.ordering_for(plan.source.names)
    assert ordering is not None
    frames = [
        decoding.changes(
            _accepted(records, [schema_id]),
            replace(version, source=plan.source),
            ordering,
            keyed=keyed,
            columns=reconciled.columns,
        )
        for schema_id, version in reconciled.versions
    ]
    return functools.reduce(DataFrame.unionByName, frames)


def collect_facts(changes: DataFrame, unavailable: Sequence[tuple[str, Column]]) -> Facts:
    """One aggregation over a table's change rows: what the appliers need to know."""
    good = sf.col(PROBLEM).isNull()
    op = sf.col(OP)
    truncate = good & (op == "t")
    placeholder = transforms.has_placeholder(unavailable)
    arrival = sf.col(OLD_KEY).isNotNull()
    row = changes.agg(
        sf.count(sf.when(good & op.isin(*decoding.ROW_OPS), 1)).alias("rows"),
        sf.count(sf.when(good & (op == "d"), 1)).alias("deletes"),
        sf.count(sf.when(good & placeholder, 1)).alias("placeholders"),
        sf.count(sf.when(good & sf.col(KEY_MOVED), 1)).alias("key_moves"),
        sf.count(sf.when(good & arrival, 1)).alias("arrivals"),
        sf.count(sf.when(good & arrival & placeholder, 1)).alias("moved"),
        sf.count(PROBLEM).alias("problems"),
        sf.sort_array(
            sf.collect_list(sf.when(truncate, sf.struct(POSITION, sf.unix_millis(SOURCE_TS))))
        ).alias("truncates"),
    ).first()
    if row is None:
        return Facts()
    return Facts(
        row_changes=row["rows"],
        deletes=row["deletes"],
        placeholders=row["placeholders"],
        key_moves=row["key_moves"],
        key_arrivals=row["arrivals"],
        moved_placeholders=row["moved"],
        problems=row["problems"],
        truncates=tuple((t[0], t[1]) for t in row["truncates"]),
    )


def _accepted(records: DataFrame, schema_ids: Sequence[int | None]) -> DataFrame:
    good = sf.col(PROBLEM).isNull()
    ids = [i for i in schema_ids if i is not SCHEMALESS]
    condition = sf.col(SCHEMA_ID).isin(ids) if ids else sf.lit(False)
    if SCHEMALESS in schema_ids:
        condition = condition | sf.col(SCHEMA).isNull()
    return records.where(good & condition)


def _row_type(plan: EnvelopePlan) -> st.StructType:
    typed = plan.row.typed
    assert isinstance(typed, st.StructType)
    return typed
