"""The CdcSink resource: which change topics to read and how to apply them to lakehouse tables.

One pydantic model serves three readers: the Spark job (``python -m cdcflow.sparkapps.sink``),
``cdcflow sink -f`` (which runs that job in Spark local mode) and the operator, which generates
the CRD from this model (field descriptions become ``kubectl explain`` text) and renders the
``SparkApplication`` from ``spec.spark``. The job never imports the operator or the capture
engine, so the connector is referenced by name and topic prefix only.

Validation errors name the field and the fix; :func:`load_sink` adds the file name.
"""

from __future__ import annotations

import re
import string
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

API_VERSION = "cdcflow.io/v1alpha1"
KIND = "CdcSink"
DEFAULT_PLACEHOLDER = "__debezium_unavailable_value"
TEMPLATE_FIELDS = ("prefix", "schema", "table", "topic")
#: Spark Kafka source options the sink sets itself from dedicated fields.
RESERVED_KAFKA_OPTIONS = {
    "kafka.bootstrap.servers": "spec.kafka.bootstrapServers",
    "subscribe": "spec.topics",
    "subscribepattern": "spec.topicPattern",
    "assign": "spec.topics",
    "startingoffsets": "spec.startingOffsets",
    "maxoffsetspertrigger": "spec.kafka.maxOffsetsPerTrigger",
}
_DURATION = r"^\d+\s*(ms|millisecond|milliseconds|s|second|seconds|min|minute|minutes)$"
_MEMORY = r"^\d+[kmgtKMGT]?$"


class SinkConfigError(ValueError):
    """The CdcSink is invalid; the message names the field and how to fix it."""


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)


class ConnectorRef(_Spec):
    """The CdcConnector whose change topics the sink consumes."""

    name: str = Field(
        description="Name of the CdcConnector (same namespace). Its data topics, "
        "<topicPrefix>.<schema>.<table>, are consumed unless spec.topics or spec.topicPattern "
        "narrows them."
    )
    topic_prefix: str | None = Field(
        None,
        alias="topicPrefix",
        pattern=r"^[A-Za-z0-9._-]+$",
        description="The connector's topic.prefix, when it is not the connector's name.",
    )

    @property
    def prefix(self) -> str:
        """The topic prefix: ``topicPrefix`` or else the connector's name."""
        return self.topic_prefix or self.name


class KafkaSource(_Spec):
    """The Kafka cluster holding the change topics, read with Spark's Kafka source."""

    bootstrap_servers: str | None = Field(
        None,
        alias="bootstrapServers",
        description="host:port[,host:port]. May be left out when connectorRef is set: the "
        "operator then uses the connector's spec.kafka.bootstrapServers.",
    )
    max_offsets_per_trigger: int = Field(
        100_000,
        alias="maxOffsetsPerTrigger",
        gt=0,
        description="Most Kafka records one micro-batch reads (all topics together). Bounds "
        "the batch's memory and latency; larger batches apply a backlog faster.",
    )
    options: dict[str, str] = Field(
        default_factory=dict,
        description="Options of Spark's Kafka source passed through as is: consumer settings "
        "prefixed with `kafka.` (security.protocol, sasl.*) and source options such as "
        "failOnDataLoss or minPartitions.",
    )

    @field_validator("options")
    @classmethod
    def _no_reserved_options(cls, options: dict[str, str]) -> dict[str, str]:
        for name in options:
            field = RESERVED_KAFKA_OPTIONS.get(name.lower())
            if field is not None:
                raise ValueError(f"option {name!r} is set by the sink; use {field} instead")
        return options


class Target(_Spec):
    """Where the tables go: one table per source table, under one base path."""

    format: Literal["delta", "parquet"] = Field(
        "delta",
        description="delta: tables kept equal to the source tables with MERGE (SCD1 or SCD2). "
        "parquet: an append-only changelog of every change, partitioned by micro-batch.",
    )
    path: str = Field(
        min_length=1,
        description="Base directory (any Hadoop path: a local folder, file:, s3a:, abfss:, "
        "gs:). Each source table is written to <path>/<table name>.",
    )
    table_name_template: str = Field(
        "{schema}_{table}",
        alias="tableNameTemplate",
        description="Target table name per topic. Placeholders: {prefix}, {schema}, {table} "
        "(the parts of <prefix>.<schema>.<table>; for MySQL {schema} is the database) and "
        "{topic}.",
    )

    @field_validator("table_name_template")
    @classmethod
    def _known_placeholders(cls, template: str) -> str:
        try:
            names = {name for _, name, _, _ in string.Formatter().parse(template) if name}
        except ValueError as error:
            raise ValueError(f"malformed template {template!r}: {error}") from None
        unknown = sorted(names - set(TEMPLATE_FIELDS))
        if unknown:
            raise ValueError(
                f"unknown placeholder(s) {unknown} in {template!r}; "
                f"use {', '.join('{' + name + '}' for name in TEMPLATE_FIELDS)}"
            )
        if not names & {"table", "topic"}:
            raise ValueError(
                f"{template!r} names every table the same; include {{table}} or {{topic}}"
            )
        return template

    def table_name(self, topic: str) -> str:
        """The target table name for ``topic`` (``<prefix>.<schema>.<table>``)."""
        prefix, schema, table = split_topic(topic)
        return self.table_name_template.format(
            prefix=prefix, schema=schema, table=table, topic=topic
        )

    def table_path(self, topic: str) -> str:
        """The location of the target table for ``topic``."""
        return f"{self.path.rstrip('/')}/{self.table_name(topic)}"


class DeadLetter(_Spec):
    """What happens to records that cannot be applied (malformed, unknown op, wrong schema)."""

    path: str | None = Field(
        None,
        description="Delta table receiving the bad records with the reason, the topic, "
        "partition and offset, and the raw key and value.",
    )
    on_error: Literal["deadletter", "fail"] = Field(
        "deadletter",
        alias="onError",
        description="deadletter: write bad records to path and keep going. fail: stop the job "
        "with a message naming the first bad record; nothing of that micro-batch is applied.",
    )

    @model_validator(mode="after")
    def _path_for_dead_letters(self) -> DeadLetter:
        if self.on_error == "deadletter" and not self.path:
            raise ValueError("onError: deadletter needs a path; set path or use onError: fail")
        return self


class Trigger(_Spec):
    """When micro-batches run: exactly one of processingTime and availableNow."""

    processing_time: str | None = Field(
        None,
        alias="processingTime",
        pattern=_DURATION,
        description="Start a micro-batch at this interval, e.g. '10 seconds' (the default).",
    )
    available_now: bool = Field(
        False,
        alias="availableNow",
        description="Apply everything in the topics at start, in as many micro-batches as "
        "maxOffsetsPerTrigger needs, then stop.",
    )

    @model_validator(mode="after")
    def _exactly_one(self) -> Trigger:
        if self.available_now and self.processing_time:
            raise ValueError("set either processingTime or availableNow, not both")
        return self

    @property
    def interval(self) -> str:
        """The processing-time interval (default ``10 seconds``)."""
        return self.processing_time or "10 seconds"


class Resources(_Spec):
    """CPU and memory of one Spark process."""

    cores: int = Field(1, gt=0, description="CPU cores.")
    memory: str = Field("1g", pattern=_MEMORY, description="JVM heap, e.g. 1g or 512m.")


class ExecutorResources(Resources):
    """The executors: how many, and the resources of each."""

    instances: int = Field(1, gt=0, description="Number of executors.")


class SparkSpec(_Spec):
    """How the operator runs the job as a SparkApplication (local runs use conf only)."""

    image: str | None = Field(
        None,
        description="Container image with Spark 4.0, Python 3.11+, cdcflow[spark] and the "
        "Kafka and Delta jars (see docs/spark-sink.md). Default: the operator's sink image.",
    )
    driver: Resources = Field(default_factory=Resources, description="The driver.")
    service_account: str = Field(
        "spark-operator-spark",
        alias="serviceAccount",
        pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$",
        description="The driver's ServiceAccount, allowed to manage executor pods, services "
        "and configmaps in the namespace: the one the Kubeflow Spark operator's chart makes in "
        "each job namespace by default.",
    )
    executor: ExecutorResources = Field(
        default_factory=ExecutorResources, description="The executors."
    )
    conf: dict[str, str] = Field(
        default_factory=dict, description="Extra Spark settings (spark.* keys) for the job."
    )


class Metadata(_Spec):
    """The resource's name (also the job's name) and namespace."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, frozen=True)
    name: str = Field(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
    namespace: str = "default"


class SinkSpec(_Spec):
    """Which change topics to apply, to which tables, and how."""

    connector_ref: ConnectorRef | None = Field(
        None,
        alias="connectorRef",
        description="The CdcConnector whose topics to consume (all its data topics unless "
        "topics or topicPattern is given).",
    )
    topics: list[str] | None = Field(
        None, min_length=1, description="Explicit change topics, <prefix>.<schema>.<table>."
    )
    topic_pattern: str | None = Field(
        None,
        alias="topicPattern",
        description="Java regular expression matching the change topics to consume.",
    )
    kafka: KafkaSource | None = Field(None, description="The Kafka cluster to read.")
    target: Target = Field(description="Where and in which format the tables are written.")
    mode: Literal["scd1", "scd2"] = Field(
        "scd1",
        description="scd1: each target row is the source row's latest state (deletes delete, "
        "truncates empty the table). scd2: every version is kept as a history row with "
        "_cdc_valid_from/_cdc_valid_to positions and an _cdc_is_current flag.",
    )
    checkpoint_location: str | None = Field(
        None,
        alias="checkpointLocation",
        description="Spark checkpoint directory: which Kafka offsets are applied. Default "
        "<target.path>/_cdc_checkpoint. Keep it for the lifetime of the target tables.",
    )
    dead_letter: DeadLetter | None = Field(
        None,
        alias="deadLetter",
        description="Where records go that cannot be applied. Without it the job fails on them.",
    )
    trigger: Trigger = Field(default_factory=Trigger, description="When micro-batches run.")
    starting_offsets: str = Field(
        "earliest",
        alias="startingOffsets",
        description="Where a new checkpoint starts: earliest (the default: the whole topic, "
        "snapshot included), latest, or Spark's JSON per-partition offsets. Ignored once the "
        "checkpoint exists.",
    )
    unavailable_value_placeholder: str = Field(
        DEFAULT_PLACEHOLDER,
        alias="unavailableValuePlaceholder",
        description="The connector's unavailable.value.placeholder: a column holding it keeps "
        "the target's previous value (unchanged TOASTed values in PostgreSQL).",
    )
    spark: SparkSpec = Field(
        default_factory=SparkSpec, description="Spark image, resources and settings."
    )
    state: Literal["running", "suspended"] = Field(
        "running", description="suspended stops the job; the checkpoint is kept for resuming."
    )

    @field_validator("topic_pattern")
    @classmethod
    def _compiles(cls, pattern: str | None) -> str | None:
        if pattern is not None:
            try:
                re.compile(pattern)
            except re.error as error:
                raise ValueError(f"not a valid regular expression: {error}") from None
        return pattern

    @field_validator("topics")
    @classmethod
    def _three_part_names(cls, topics: list[str] | None) -> list[str] | None:
        for topic in topics or []:
            split_topic(topic)
        return topics

    @field_validator("starting_offsets")
    @classmethod
    def _offsets(cls, value: str) -> str:
        if value not in ("earliest", "latest") and not value.lstrip().startswith("{"):
            raise ValueError("use earliest, latest or a JSON object of per-partition offsets")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> SinkSpec:
        if self.topics and self.topic_pattern:
            raise ValueError("set either topics or topicPattern, not both")
        if not (self.topics or self.topic_pattern or self.connector_ref):
            raise ValueError("name the topics: set connectorRef, topics or topicPattern")
        if self.connector_ref is None and not (self.kafka and self.kafka.bootstrap_servers):
            raise ValueError("kafka.bootstrapServers is required unless connectorRef is set")
        if self.mode == "scd2" and self.target.format != "delta":
            raise ValueError("mode scd2 needs target.format delta (parquet is a changelog)")
        return self


class CdcSink(_Spec):
    """The CdcSink custom resource (cdcflow.io/v1alpha1)."""

    api_version: Literal["cdcflow.io/v1alpha1"] = Field("cdcflow.io/v1alpha1", alias="apiVersion")
    kind: Literal["CdcSink"] = "CdcSink"
    metadata: Metadata
    spec: SinkSpec

    def subscription(self) -> tuple[str, str]:
        """The Kafka source option naming the topics: ``subscribe`` or ``subscribePattern``."""
        spec = self.spec
        if spec.topics:
            return "subscribe", ",".join(spec.topics)
        if spec.topic_pattern:
            return "subscribePattern", spec.topic_pattern
        assert spec.connector_ref is not None
        return "subscribePattern", re.escape(spec.connector_ref.prefix) + r"\.[^.]+\.[^.]+"

    def bootstrap_servers(self) -> str:
        """The Kafka bootstrap servers; raises when only the operator could have filled them."""
        kafka = self.spec.kafka
        if kafka is None or not kafka.bootstrap_servers:
            raise SinkConfigError(
                "spec.kafka.bootstrapServers is required to run the job (the operator fills it "
                "in from the CdcConnector; a local run must set it)"
            )
        return kafka.bootstrap_servers

    @property
    def checkpoint_location(self) -> str:
        """``spec.checkpointLocation`` or ``<target.path>/_cdc_checkpoint``."""
        explicit = self.spec.checkpoint_location
        return explicit or f"{self.spec.target.path.rstrip('/')}/_cdc_checkpoint"

    @property
    def fails_on_bad_records(self) -> bool:
        """Whether a bad record stops the job instead of going to the dead-letter table."""
        letter = self.spec.dead_letter
        return letter is None or letter.on_error == "fail"


def split_topic(topic: str) -> tuple[str, str, str]:
    """``(prefix, schema, table)`` of ``<prefix>.<schema>.<table>``; the prefix may hold dots."""
    prefix, _, rest = topic.rpartition(".")
    prefix, _, schema = prefix.rpartition(".")
    if not (prefix and schema and rest):
        raise ValueError(f"topic {topic!r} is not <prefix>.<schema>.<table>")
    return prefix, schema, rest


def parse_sink(document: object, *, origin: str = "config") -> CdcSink:
    """Validate a CdcSink document, raising :class:`SinkConfigError` with readable messages."""
    if not isinstance(document, dict) or document.get("kind") != KIND:
        raise SinkConfigError(f"{origin} is not a CdcSink resource (kind: CdcSink expected)")
    try:
        return CdcSink.model_validate(document)
    except ValidationError as error:
        raise SinkConfigError(f"{origin}: {explain(error)}") from None


def load_sink(path: Path) -> CdcSink:
    """Read a CdcSink YAML file, with errors that name the file and the field."""
    try:
        document = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as error:
        raise SinkConfigError(f"cannot read {path}: {error}") from None
    return parse_sink(document, origin=str(path))


def explain(error: ValidationError) -> str:
    """One line per problem, located by the YAML field path (``spec.target.path: …``)."""
    lines = []
    for problem in error.errors():
        where = ".".join(str(part) for part in problem["loc"]) or "document"
        message = str(problem["msg"]).removeprefix("Value error, ")
        lines.append(f"{where}: {message}")
    return "invalid CdcSink: " + "; ".join(lines)
