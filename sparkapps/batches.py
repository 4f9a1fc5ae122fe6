"""The ``foreachBatch`` function: one micro-batch of Kafka records applied to every table.

Order of work, so that a batch either applies or fails as a whole with respect to bad input:

1. decode the records once and keep them (persisted) for the batch;
2. survey them (one action): topics, schema versions, sample keys, problem counts;
3. per topic, reconcile the schema versions with the target table and decode the accepted
   records into change rows (one action each, for the :class:`~planning.Facts`);
4. if any record is bad and the sink fails on bad records, raise now: nothing was written;
5. apply each table (SCD1/SCD2 MERGE or changelog append), then write the dead letters.

Every write is idempotent (position guard, partition overwrite, Delta transaction ids), so
when Spark runs a batch again after a crash, the result is as if it had run once.
"""

from __future__ import annotations

import itertools
import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as sf
from pyspark.sql import types as st

from cdcflow.sparkapps import changelog, deadletters, decoding, faults, planning, scd1, scd2
from cdcflow.sparkapps.config import CdcSink
from cdcflow.sparkapps.decoding import PROBLEM, SCHEMA, SCHEMA_ID, TOPIC
from cdcflow.sparkapps.planning import SCHEMALESS, SchemaVersion, TableWork
from cdcflow.sparkapps.schemas import EnvelopePlan
from cdcflow.sparkapps.tables import DeltaTarget, Tombstones

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BatchReport:
    """What one micro-batch did, for logs, tests and the benchmark."""

    batch_id: int
    records: int
    changes: int
    dead_letters: int
    tables: tuple[str, ...]
    seconds: float


@dataclass
class _Letters:
    """The dead letters of a batch so far: frames and how many records they hold."""

    frames: list[DataFrame] = field(default_factory=list)
    count: int = 0

    def add(self, frame: DataFrame, count: int) -> None:
        if count:
            self.frames.append(frame)
            self.count += count


class BatchApplier:
    """Applies micro-batches for one CdcSink; Spark calls it as ``foreachBatch``."""

    def __init__(
        self,
        spark: SparkSession,
        sink: CdcSink,
        *,
        on_batch: Callable[[BatchReport], None] | None = None,
    ) -> None:
        self.spark = spark
        self.sink = sink
        self.on_batch = on_batch
        self.failure: BaseException | None = None
        self._targets: dict[str, DeltaTarget] = {}
        self._tombstones: dict[str, Tombstones] = {}
        self._query_id: str | None = None

    def __call__(self, kafka_batch: DataFrame, batch_id: int) -> None:
        """Apply one micro-batch; remember the exception that fails it for the runner."""
        try:
            self.apply(kafka_batch, batch_id)
        except BaseException as error:
            self.failure = error
            raise

    def apply(self, kafka_batch: DataFrame, batch_id: int) -> BatchReport:
        """Apply one micro-batch of Kafka source rows (see the module docstring)."""
        started = time.monotonic()
        records = decoding.records(kafka_batch).persist(StorageLevel.MEMORY_AND_DISK)
        works: list[TableWork] = []
        try:
            versions = planning.survey(records)
            letters = _Letters()
            letters.add(deadletters.from_records(records), sum(v.problems for v in versions))
            for topic, group in itertools.groupby(versions, key=lambda v: v.topic):
                work = self._plan(topic, list(group), records, letters)
                if work is not None:
                    works.append(work)
            self._check(letters, batch_id)
            for work in works:
                self._apply_table(work, batch_id)
            self._write_letters(letters, batch_id)
            report = BatchReport(
                batch_id=batch_id,
                records=sum(v.records for v in versions),
                changes=sum(w.facts.row_changes for w in works),
                dead_letters=letters.count,
                tables=tuple(w.name for w in works),
                seconds=time.monotonic() - started,
            )
        finally:
            for work in works:
                work.changes.unpersist()
            records.unpersist()
        log.info(
            "batch %d: %d record(s), %d dead letter(s), tables %s, %.1f s",
            batch_id,
            report.records,
            report.dead_letters,
            ", ".join(report.tables) or "-",
            report.seconds,
        )
        if self.on_batch is not None:
            self.on_batch(report)
        return report

    def _plan(
        self,
        topic: str,
        versions: Sequence[SchemaVersion],
        records: DataFrame,
        letters: _Letters,
    ) -> TableWork | None:
        """Reconcile one topic's schema versions and decode its accepted records."""
        of_topic = records.where(sf.col(TOPIC) == topic)
        good = [v for v in versions if v.records > v.problems]
        if not good:
            return None
        try:
            name = self.sink.spec.target.table_name(topic)
        except ValueError as error:
            letters.add(deadletters.rejected(of_topic, str(error)), _count(good))
            return None
        target = self._target(topic)
        schema = target.schema() if target is not None else None
        plans = [(v.schema_id, self._read_plan(v, of_topic, schema)) for v in good]
        reconciled = planning.reconcile(plans, schema)
        for schema_id, reason in reconciled.rejected.items():
            rejected = [v for v in good if v.schema_id == schema_id]
            frame = deadletters.rejected(_version(of_topic, schema_id), reason)
            letters.add(frame, _count(rejected))
        if reconciled.plan is None:
            return None
        keyed = self.sink.spec.target.format == "delta"
        keys = planning.key_columns(good)
        missing = [k for k in keys if k not in reconciled.plan.row.names]
        if missing:
            reason = f"key column(s) {', '.join(missing)} are not columns of the table"
            letters.add(deadletters.rejected(of_topic, reason), _count(good))
            return None
        work = planning.prepare(
            topic=topic,
            name=name,
            records=of_topic,
            reconciled=reconciled,
            keys=keys,
            keyed=keyed,
            placeholder=self.sink.spec.unavailable_value_placeholder,
        )
        letters.add(deadletters.from_changes(work.changes), work.facts.problems)
        return work

    def _read_plan(
        self, version: SchemaVersion, of_topic: DataFrame, schema: st.StructType | None
    ) -> EnvelopePlan | str:
        if version.schema_id is not SCHEMALESS:
            return planning.read_plan(version)
        payloads = _version(of_topic, SCHEMALESS).where(sf.col(PROBLEM).isNull())
        return planning.inferred_plan(self.spark, payloads, schema)

    def _check(self, letters: _Letters, batch_id: int) -> None:
        """Step 4: fail before writing anything when bad records must stop the job."""
        if letters.count and self.sink.fails_on_bad_records:
            combined = deadletters.union(letters.frames)
            assert combined is not None
            raise deadletters.fail(combined, count=letters.count, batch_id=batch_id)

    def _apply_table(self, work: TableWork, batch_id: int) -> None:
        spec = self.sink.spec
        path = spec.target.table_path(work.topic)
        if spec.target.format == "parquet":
            changelog.append(work, path=path, batch_id=batch_id)
        elif spec.mode == "scd2":
            scd2.apply(work, self._delta(work.topic))
        else:
            moved = self._beside(work, "_cdc_moved")
            scd1.apply(work, self._delta(work.topic), self._tombstones_of(work), moved)
        faults.crash_point("after-table")

    def _write_letters(self, letters: _Letters, batch_id: int) -> None:
        combined = deadletters.union(letters.frames)
        dead_letter = self.sink.spec.dead_letter
        if combined is None or dead_letter is None or dead_letter.path is None:
            return
        app_id = f"cdcflow-sink:{self._checkpoint_id()}:dead-letters"
        deadletters.write(combined, path=dead_letter.path, batch_id=batch_id, app_id=app_id)

    def _target(self, topic: str) -> DeltaTarget | None:
        if self.sink.spec.target.format != "delta":
            return None
        return self._delta(topic)

    def _delta(self, topic: str) -> DeltaTarget:
        path = self.sink.spec.target.table_path(topic)
        if path not in self._targets:
            self._targets[path] = DeltaTarget(self.spark, path)
        return self._targets[path]

    def _beside(self, work: TableWork, folder: str) -> DeltaTarget:
        """A Delta table of the job's own beside the targets: ``<target.path>/<folder>/<table>``."""
        target = self.sink.spec.target
        path = f"{target.path.rstrip('/')}/{folder}/{work.name}"
        if path not in self._targets:
            self._targets[path] = DeltaTarget(self.spark, path)
        return self._targets[path]

    def _tombstones_of(self, work: TableWork) -> Tombstones:
        target = self.sink.spec.target
        path = f"{target.path.rstrip('/')}/_cdc_tombstones/{work.name}"
        if path not in self._tombstones:
            self._tombstones[path] = Tombstones(self.spark, path, work.keys)
        return self._tombstones[path]

    def _checkpoint_id(self) -> str:
        """The streaming query's id from the checkpoint: new when the checkpoint is reset."""
        if self._query_id is None:
            text = self.spark.read.text(f"{self.sink.checkpoint_location}/metadata").first()
            self._query_id = str(json.loads(text[0])["id"]) if text is not None else "unknown"
        return self._query_id


def _version(of_topic: DataFrame, schema_id: int | None) -> DataFrame:
    if schema_id is SCHEMALESS:
        return of_topic.where(sf.col(SCHEMA).isNull())
    return of_topic.where(sf.col(SCHEMA_ID) == schema_id)


def _count(versions: Sequence[SchemaVersion]) -> int:
    return sum(v.records - v.problems for v in versions)
