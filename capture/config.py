"""Connector properties: the Debezium options a CdcConnector carries in ``spec.config``.

:class:`EngineProperties` holds what every connector shares (topics, filters, snapshot
switches, heartbeats, signals, notifications, Kafka and retries); each connector's model
subclasses it with its own options (``cdcflow.capture.connectors.<kind>.properties``) and its
own refusals, so a property of another database is unknown. Options use Debezium's property
names so an existing Debezium configuration moves over unchanged; unknown names are rejected
with the valid ones listed, and 1.x names (``database.server.name``, …) are accepted as
deprecated aliases with a warning. Credentials never appear here: they come from a Secret (in
a pod, as environment variables) or, locally, from the environment or a file. The resource
around these properties is modelled in :mod:`cdcflow.capture.connector_resource`.
"""

from __future__ import annotations

import difflib
import importlib
import logging
import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, ClassVar, Literal, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from cdcflow.capture.kinds import KINDS
from cdcflow.capture.mapping import ColumnRule, parse_rule, propagation_rules
from cdcflow.capture.names import AdjustmentMode
from cdcflow.capture.notify_http import check_url
from cdcflow.capture.spi import TableId

log = logging.getLogger(__name__)

OVERRIDES_PREFIX = "snapshot.select.statement.overrides."
DEPRECATED_ALIASES: Mapping[str, str] = MappingProxyType(
    {
        "database.server.name": "topic.prefix",
        "toasted.value.placeholder": "unavailable.value.placeholder",
    }
)
SECRET_PROPERTIES = ("database.password", "database.user", "database.sslpassword")
JAVA_ONLY = "it names a Java class, and cdcflow runs no Java code"
#: Debezium's ``Configuration.PASSWORD_PATTERN``: keys whose values its logs mask by default.
PASSWORD_PATTERN = (
    r".*secret$|.*password$|.*sasl\.jaas\.config$|.*basic\.auth\.user\.info|"
    r".*registry\.auth\.client-secret|.*credentials\.json$|.*connectionstring$|"
    r".*connection\.string$"
)
#: ``topic.naming.strategy`` values cdcflow accepts: Debezium's two default strategies name a
#: PostgreSQL table's topic alike (its table ids carry no database), as cdcflow does.
TOPIC_NAMING_STRATEGIES = (
    "io.debezium.schema.SchemaTopicNamingStrategy",
    "io.debezium.schema.DefaultTopicNamingStrategy",
)
_INTERNAL = "it tunes an internal mechanism of Debezium's Java runtime that cdcflow does not have"
#: Debezium properties cdcflow recognises and deliberately refuses for every connector, with the
#: reason (an entry ending in ``.`` covers every property under that prefix).
UNSUPPORTED_PROPERTIES: Mapping[str, str] = MappingProxyType(
    {
        "snapshot.custom.class": (
            f"{JAVA_ONLY} (a Snapshotter). Use snapshot.mode (initial, always, no_data, "
            "initial_only, when_needed), snapshot.include.collection.list, "
            "snapshot.select.statement.overrides.<schema>.<table> and snapshot.locking.mode"
        ),
        "snapshot.mode.custom.name": (
            f"{JAVA_ONLY} (a Snapshotter). Use snapshot.mode (initial, always, no_data, "
            "initial_only, when_needed) and snapshot.include.collection.list"
        ),
        "snapshot.locking.mode.custom.name": (
            f"{JAVA_ONLY} (a SnapshotLock). Use snapshot.locking.mode=shared or none"
        ),
        "snapshot.query.mode.custom.name": (
            f"{JAVA_ONLY} (a SnapshotQuery). Use snapshot.query.mode=select_all with "
            "snapshot.select.statement.overrides.<schema>.<table>"
        ),
        "openlineage.integration.": (
            "OpenLineage events come from Debezium's Java OpenLineage client, which cdcflow "
            "does not have. Lineage follows from the topic names (<topic.prefix>.<schema>."
            "<table>) and the source block of every event"
        ),
        "statistics.metrics.enabled": (
            "it switches the latency quantiles (P50/P95/P99 DDSketch statistics) of Debezium's "
            "JMX streaming metrics, which cdcflow does not compute: /metrics exports "
            "cdcflow_milliseconds_behind_source, of which Prometheus derives quantiles "
            "(quantile_over_time)"
        ),
        "internal.snapshot.scan.all.columns.force": (
            f"{_INTERNAL}: cdcflow reads the columns of the captured tables only"
        ),
        "internal.log.position.check.enable": (
            f"{_INTERNAL}: cdcflow always checks at start that the slot still holds the "
            "stored position (snapshot.mode=when_needed re-snapshots when it does not)"
        ),
        "internal.advanced.metrics.enable": (
            f"{_INTERNAL}: cdcflow's metrics are always on, at /metrics and /status"
        ),
        "internal.offset.activity.monitor.interval.ms": (
            f"{_INTERNAL}: cdcflow commits offsets every offset.flush.interval.ms and confirms "
            "idle positions from keepalives, so offsets never go stale"
        ),
        "internal.signal.synchronous.batch.size": (
            f"{_INTERNAL}: cdcflow acts on signals on its streaming thread as they arrive"
        ),
        "internal.signal.processor.semaphore.wait.ms": (
            f"{_INTERNAL}: cdcflow acts on signals on its streaming thread as they arrive"
        ),
    }
)


class ConfigError(ValueError):
    """The configuration is wrong; the message says what and how to fix it."""


#: Prometheus label names the exporter uses itself, so custom.metric.tags may not.
RESERVED_METRIC_LABELS = frozenset({"server", "table"})
METRIC_LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")


def _csv(value: object) -> tuple[str, ...]:
    """Debezium lists are comma-separated strings; YAML users may also write real lists."""
    if value is None or value == "":
        return ()
    items = value if isinstance(value, list | tuple) else str(value).split(",")
    return tuple(str(item).strip() for item in items if str(item).strip())


# The comma-separated lists of regular expressions, each checked to compile at load time.
_PATTERN_LISTS = (
    "schema_include_list",
    "schema_exclude_list",
    "table_include_list",
    "table_exclude_list",
    "column_include_list",
    "column_exclude_list",
    "message_prefix_include_list",
    "message_prefix_exclude_list",
    "snapshot_include_collection_list",
)


class EngineProperties(BaseModel):
    """The Debezium properties every connector shares, under their Debezium names.

    Subclasses add a connector's own options and set the class-level tables below.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=False)

    source_kind: ClassVar[str] = ""
    """``spec.source.<kind>`` of the connector the model belongs to."""
    unsupported: ClassVar[Mapping[str, str]] = UNSUPPORTED_PROPERTIES
    """Recognised properties refused with a reason (entries ending in ``.`` are prefixes)."""
    aliases: ClassVar[Mapping[str, str]] = DEPRECATED_ALIASES
    """Deprecated names and the properties they stand for."""
    docs_page: ClassVar[str] = "docs/postgresql.md"
    """Where the connector's properties are documented."""

    topic_prefix: str = Field(
        alias="topic.prefix",
        pattern=r"^[A-Za-z0-9._-]+$",
        description="Logical server name: prefix of every topic and the offsets' partition key.",
    )
    topic_delimiter: str = Field(
        ".", alias="topic.delimiter", description="Separator in topic names."
    )
    snapshot_include_collection_list: tuple[str, ...] = Field(
        (), alias="snapshot.include.collection.list"
    )
    snapshot_select_statement_overrides: tuple[str, ...] = Field(
        (), alias="snapshot.select.statement.overrides"
    )
    snapshot_fetch_size: int = Field(10240, alias="snapshot.fetch.size", gt=0)
    snapshot_delay_ms: int = Field(0, alias="snapshot.delay.ms", ge=0)
    schema_include_list: tuple[str, ...] = Field((), alias="schema.include.list")
    schema_exclude_list: tuple[str, ...] = Field((), alias="schema.exclude.list")
    table_include_list: tuple[str, ...] = Field((), alias="table.include.list")
    table_exclude_list: tuple[str, ...] = Field((), alias="table.exclude.list")
    column_include_list: tuple[str, ...] = Field((), alias="column.include.list")
    column_exclude_list: tuple[str, ...] = Field((), alias="column.exclude.list")
    message_key_columns: str = Field("", alias="message.key.columns")
    message_prefix_include_list: tuple[str, ...] = Field((), alias="message.prefix.include.list")
    message_prefix_exclude_list: tuple[str, ...] = Field((), alias="message.prefix.exclude.list")
    skipped_operations: tuple[Literal["c", "u", "d", "t", "none"], ...] = Field(
        ("t",), alias="skipped.operations"
    )
    tombstones_on_delete: bool = Field(True, alias="tombstones.on.delete")
    decimal_handling_mode: Literal["precise", "double", "string"] = Field(
        "precise", alias="decimal.handling.mode"
    )
    time_precision_mode: Literal["adaptive", "adaptive_time_microseconds", "connect"] = Field(
        "adaptive", alias="time.precision.mode"
    )
    binary_handling_mode: Literal["bytes", "base64", "hex"] = Field(
        "bytes", alias="binary.handling.mode"
    )
    unavailable_value_placeholder: str = Field(
        "__debezium_unavailable_value", alias="unavailable.value.placeholder"
    )
    truncate_handling_mode: Literal["skip", "include"] | None = Field(
        None, alias="truncate.handling.mode", description="Deprecated: use skipped.operations."
    )
    provide_transaction_metadata: bool = Field(False, alias="provide.transaction.metadata")
    topic_transaction: str = Field("transaction", alias="topic.transaction")
    heartbeat_interval_ms: int = Field(0, alias="heartbeat.interval.ms", ge=0)
    heartbeat_topics_prefix: str = Field("__debezium-heartbeat", alias="heartbeat.topics.prefix")
    topic_heartbeat_prefix: str | None = Field(
        None,
        alias="topic.heartbeat.prefix",
        description="The topic naming strategy's heartbeat prefix; wins over "
        "heartbeat.topics.prefix when set, as in Debezium 2.x and later.",
    )
    heartbeat_action_query: str = Field("", alias="heartbeat.action.query")
    max_queue_size: int = Field(8192, alias="max.queue.size", gt=0)
    max_batch_size: int = Field(2048, alias="max.batch.size", gt=0)
    max_queue_size_in_bytes: int = Field(0, alias="max.queue.size.in.bytes", ge=0)
    poll_interval_ms: int = Field(500, alias="poll.interval.ms", gt=0)
    offset_flush_interval_ms: int = Field(1000, alias="offset.flush.interval.ms", gt=0)
    exactly_once_support: Literal["requested", "required"] = Field(
        "requested",
        alias="exactly.once.support",
        description="required: every record and the offsets that cover them commit in one "
        "Kafka transaction (KIP-618's name; needs offsets in Kafka). requested, Kafka "
        "Connect's default, leaves it to a worker setting cdcflow does not have: "
        "at-least-once.",
    )
    extended_headers_enabled: bool = Field(
        True,
        alias="extended.headers.enabled",
        description="Put Debezium's __debezium.context.* headers on every change record.",
    )
    key_converter_schemas_enable: bool = Field(True, alias="key.converter.schemas.enable")
    value_converter_replace_null_with_default: bool = Field(
        True,
        alias="value.converter.replace.null.with.default",
        description="As Kafka Connect's JsonConverter: write a null in a column with a DEFAULT "
        "as the default (true), or keep it null (false).",
    )
    value_converter_schemas_enable: bool = Field(True, alias="value.converter.schemas.enable")
    signal_data_collection: str = Field("", alias="signal.data.collection")
    signal_enabled_channels: tuple[str, ...] = Field(("source",), alias="signal.enabled.channels")
    signal_kafka_topic: str = Field("", alias="signal.kafka.topic")
    incremental_snapshot_chunk_size: int = Field(
        1024, alias="incremental.snapshot.chunk.size", gt=0
    )
    incremental_snapshot_watermarking_strategy: Literal["insert_insert", "insert_delete"] = Field(
        "insert_insert", alias="incremental.snapshot.watermarking.strategy"
    )
    signal_kafka_group_id: str = Field("kafka-signal", alias="signal.kafka.groupId")
    signal_kafka_bootstrap_servers: str = Field("", alias="signal.kafka.bootstrap.servers")
    signal_kafka_poll_timeout_ms: int = Field(100, alias="signal.kafka.poll.timeout.ms", ge=0)
    notification_enabled_channels: tuple[str, ...] = Field(
        ("log",), alias="notification.enabled.channels"
    )
    notification_sink_topic_name: str = Field("", alias="notification.sink.topic.name")
    event_processing_failure_handling_mode: Literal["fail", "warn", "skip"] = Field(
        "fail", alias="event.processing.failure.handling.mode"
    )
    retriable_restart_connector_wait_ms: int = Field(
        10000, alias="retriable.restart.connector.wait.ms", ge=0
    )
    errors_max_retries: int = Field(-1, alias="errors.max.retries", ge=-1)
    topic_creation_default_partitions: int = Field(
        1, alias="topic.creation.default.partitions", gt=0
    )
    topic_creation_default_replication_factor: int = Field(
        1, alias="topic.creation.default.replication.factor", gt=0
    )
    database_initial_statements: str = Field("", alias="database.initial.statements")
    column_propagate_source_type: tuple[str, ...] = Field((), alias="column.propagate.source.type")
    datatype_propagate_source_type: tuple[str, ...] = Field(
        (), alias="datatype.propagate.source.type"
    )
    field_name_adjustment_mode: AdjustmentMode = Field("none", alias="field.name.adjustment.mode")
    schema_name_adjustment_mode: AdjustmentMode = Field("none", alias="schema.name.adjustment.mode")
    snapshot_max_threads: int = Field(1, alias="snapshot.max.threads", gt=0)
    snapshot_strategy: Literal["exported", "chunked"] = Field(
        "exported",
        alias="snapshot.strategy",
        description="exported (Debezium's): one transaction reads every table at one "
        "consistent point; a stop starts it again from zero. chunked: primary-key chunks "
        "between watermarks in the log (DBLog), while streaming runs; no long transaction "
        "or lock, resumes from the last finished chunk, snapshot.max.threads tables at "
        "once. Needs signal.data.collection.",
    )
    read_only: bool = Field(
        False,
        alias="read.only",
        description="Incremental snapshots without writes: chunk windows are bracketed by "
        "log positions instead of watermark rows (replicas, standbys, locked-down databases); "
        "signals come through Kafka or POST /signals (CdcSnapshotSignal).",
    )
    log_budget_check_interval_ms: int = Field(
        30_000,
        alias="log.budget.check.interval.ms",
        ge=0,
        description="How often the connector measures the log it holds back (slot WAL, "
        "binlog, unread change rows) for /status, /metrics and the LogSafe condition; 0 never.",
    )
    skip_messages_without_change: bool = Field(False, alias="skip.messages.without.change")
    query_fetch_size: int = Field(0, alias="query.fetch.size", ge=0)
    incremental_snapshot_allow_schema_changes: bool = Field(
        False, alias="incremental.snapshot.allow.schema.changes"
    )
    custom_metric_tags: dict[str, str] = Field(default_factory=dict, alias="custom.metric.tags")
    notification_http_url: str = Field("", alias="notification.http.url")
    notification_http_timeout_ms: int = Field(5000, alias="notification.http.timeout.ms", gt=0)
    notification_http_retries: int = Field(2, alias="notification.http.retries", ge=0)
    notification_http_allow_private_networks: bool = Field(
        False, alias="notification.http.allow.private.networks"
    )
    database_query_timeout_ms: int = Field(
        600000,
        alias="database.query.timeout.ms",
        ge=0,
        description="Statement timeout of SQL connections, in whole seconds (0: none).",
    )
    topic_naming_strategy: str = Field(TOPIC_NAMING_STRATEGIES[0], alias="topic.naming.strategy")
    event_converting_failure_handling_mode: Literal["fail", "warn", "skip"] = Field(
        "fail",
        alias="event.converting.failure.handling.mode",
        description="Debezium's default is warn (the value becomes null); cdcflow never "
        "drops a value unless asked to.",
    )
    include_schema_comments: bool = Field(False, alias="include.schema.comments")
    snapshot_mode_configuration_based_snapshot_data: bool = Field(
        False, alias="snapshot.mode.configuration.based.snapshot.data"
    )
    snapshot_mode_configuration_based_snapshot_schema: bool = Field(
        False, alias="snapshot.mode.configuration.based.snapshot.schema"
    )
    snapshot_mode_configuration_based_start_stream: bool = Field(
        False, alias="snapshot.mode.configuration.based.start.stream"
    )
    snapshot_mode_configuration_based_snapshot_on_schema_error: bool = Field(
        False, alias="snapshot.mode.configuration.based.snapshot.on.schema.error"
    )
    snapshot_mode_configuration_based_snapshot_on_data_error: bool = Field(
        False, alias="snapshot.mode.configuration.based.snapshot.on.data.error"
    )
    legacy_snapshot_max_threads: bool = Field(False, alias="legacy.snapshot.max.threads")
    streaming_delay_ms: int = Field(0, alias="streaming.delay.ms", ge=0)
    snapshot_tables_order_by_row_count: Literal["ascending", "descending", "disabled"] = Field(
        "disabled", alias="snapshot.tables.order.by.row.count"
    )
    connection_validation_timeout_ms: int = Field(
        60000, alias="connection.validation.timeout.ms", gt=0
    )
    executor_shutdown_timeout_ms: int = Field(4000, alias="executor.shutdown.timeout.ms", gt=0)
    guardrail_collections_max: int = Field(0, alias="guardrail.collections.max", ge=0)
    guardrail_collections_limit_action: Literal["warn", "fail"] = Field(
        "warn", alias="guardrail.collections.limit.action"
    )
    custom_sanitize_pattern: str = Field(PASSWORD_PATTERN, alias="custom.sanitize.pattern")
    signal_emit_failure_max_retries: int = Field(0, alias="signal.emit.failure.max.retries", ge=-1)
    signal_emit_failure_backoff_ms: int = Field(10000, alias="signal.emit.failure.backoff.ms", gt=0)
    signal_poll_interval_ms: int = Field(5000, alias="signal.poll.interval.ms", gt=0)
    table_ignore_builtin: bool = Field(True, alias="table.ignore.builtin")
    snapshot_mode: str = Field("initial", alias="snapshot.mode")
    statement_overrides: dict[str, str] = Field(default_factory=dict, exclude=True)
    column_rules: tuple[ColumnRule, ...] = Field((), exclude=True)

    _split_lists = field_validator(
        *_PATTERN_LISTS,
        "snapshot_select_statement_overrides",
        "skipped_operations",
        "signal_enabled_channels",
        "notification_enabled_channels",
        "column_propagate_source_type",
        "datatype_propagate_source_type",
        mode="before",
    )(_csv)

    @field_validator(*_PATTERN_LISTS)
    @classmethod
    def _patterns_compile(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for pattern in value:
            try:
                re.compile(pattern)
            except re.error as error:
                raise ValueError(
                    f"{pattern!r} is not a regular expression ({error}); the list holds "
                    "comma-separated regular expressions matched against whole names, e.g. "
                    "inventory\\.orders (schema.table; database.table on MySQL and MariaDB)"
                ) from None
        return value

    @field_validator("custom_metric_tags", mode="before")
    @classmethod
    def _metric_tags(cls, value: object) -> object:
        return parse_metric_tags(value) if isinstance(value, str) else value

    @field_validator("custom_metric_tags")
    @classmethod
    def _metric_tag_names(cls, value: dict[str, str]) -> dict[str, str]:
        for key in value:
            if not METRIC_LABEL.fullmatch(key) or key in RESERVED_METRIC_LABELS:
                raise ValueError(
                    f"custom metric tag {key!r} is not a usable Prometheus label name "
                    f"([a-zA-Z_][a-zA-Z0-9_]*, not {', '.join(sorted(RESERVED_METRIC_LABELS))})"
                )
        return value

    @field_validator("topic_naming_strategy")
    @classmethod
    def _default_topic_naming(cls, value: str) -> str:
        if value.strip() not in TOPIC_NAMING_STRATEGIES:
            raise ValueError(
                f"{value} is a Java TopicNamingStrategy, and cdcflow runs no Java code. cdcflow "
                "names topics as Debezium's default strategies do (<topic.prefix>.<schema>."
                "<table>, shaped by topic.delimiter, topic.transaction and "
                f"heartbeat.topics.prefix): leave it unset or use {TOPIC_NAMING_STRATEGIES[0]}"
            )
        return value.strip()

    @field_validator("signal_data_collection")
    @classmethod
    def _signal_table_name(cls, value: str) -> str:
        if value:
            TableId.parse(value)
        return value

    @field_validator("custom_sanitize_pattern")
    @classmethod
    def _sanitize_pattern_compiles(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as error:
            raise ValueError(f"{value!r} is not a regular expression: {error}") from None
        return value

    @model_validator(mode="after")
    def _http_channel_has_a_url(self) -> EngineProperties:
        if "http" in self.notification_enabled_channels:
            if not self.notification_http_url.strip():
                raise ValueError(
                    "HTTP notification URL must be provided when the 'http' notification "
                    "channel is enabled (notification.http.url)"
                )
            check_url(self.notification_http_url)
        return self

    @model_validator(mode="after")
    def _chunked_snapshot_can_run(self) -> EngineProperties:
        if self.snapshot_strategy != "chunked":
            return self
        if not self.signal_data_collection and not self.read_only:
            raise ValueError(
                "snapshot.strategy=chunked writes its chunks' watermarks into the signal "
                "table: set signal.data.collection (see docs/signals.md for its DDL), or "
                "read.only=true to bracket the chunks with log positions instead"
            )
        if self.snapshot_mode == "initial_only":
            raise ValueError(
                "snapshot.strategy=chunked reads its chunks between watermarks in the streamed "
                "log, and snapshot.mode=initial_only does not stream: use "
                "snapshot.strategy=exported, or snapshot.mode=initial"
            )
        if self.snapshot_select_statement_overrides:
            raise ValueError(
                "snapshot.select.statement.overrides replaces a whole-table query, which "
                "snapshot.strategy=chunked does not run: use snapshot.strategy=exported, or "
                "narrow the rows with snapshot.include.collection.list"
            )
        return self

    @model_validator(mode="after")
    def _valid_propagation_regexes(self) -> EngineProperties:
        propagation_rules(self.column_propagate_source_type, self.datatype_propagate_source_type)
        return self

    @model_validator(mode="after")
    def _exclusive_lists(self) -> EngineProperties:
        for kind in ("schema", "table", "column", "message_prefix"):
            if getattr(self, f"{kind}_include_list") and getattr(self, f"{kind}_exclude_list"):
                name = kind.replace("_", ".")
                raise ValueError(
                    f"{name}.include.list and {name}.exclude.list are mutually exclusive; "
                    "keep one of them"
                )
        return self

    @property
    def exactly_once(self) -> bool:
        """``exactly.once.support=required``: records and offsets in Kafka transactions."""
        return self.exactly_once_support == "required"

    @property
    def streams(self) -> bool:
        """Whether the connector streams (after its snapshot): not under ``initial_only``, nor
        under ``configuration_based`` without ``….start.stream``."""
        if self.snapshot_mode == "configuration_based":
            return self.snapshot_mode_configuration_based_start_stream
        return self.snapshot_mode != "initial_only"

    @property
    def effective_heartbeat_interval_ms(self) -> int:
        """``heartbeat.interval.ms``, or what a connector raises it to for its own needs."""
        return self.heartbeat_interval_ms

    def table_filters(self) -> dict[str, tuple[str, ...]]:
        """The include/exclude lists that choose the captured tables, by property name."""
        return {
            "schema.include.list": self.schema_include_list,
            "schema.exclude.list": self.schema_exclude_list,
            "table.include.list": self.table_include_list,
            "table.exclude.list": self.table_exclude_list,
        }

    def server_objects(self) -> tuple[str, ...]:
        """What the connector leaves on the database server for cleanup to drop, by name."""
        return ()

    def warn_deprecated(self) -> None:
        """Log the deprecations only the parsed values reveal (none here)."""

    @property
    def skipped(self) -> frozenset[str]:
        """Operations not to emit; ``truncate.handling.mode=include`` un-skips ``t``."""
        skipped = set(self.skipped_operations) - {"none"}
        if self.truncate_handling_mode == "include":
            skipped.discard("t")
        return frozenset(skipped)


HISTORY_STORES = {
    "io.debezium.storage.kafka.history.KafkaSchemaHistory": "kafka",
    "io.debezium.storage.file.history.FileSchemaHistory": "file",
    "io.debezium.relational.history.MemorySchemaHistory": "memory",
}
"""``schema.history.internal`` classes cdcflow provides, and the store each one means."""
_HISTORY_SUFFIXES = (
    "",
    ".kafka.topic",
    ".kafka.bootstrap.servers",
    ".kafka.recovery.poll.interval.ms",
    ".kafka.recovery.attempts",
    ".file.filename",
    ".skip.unparseable.ddl",
    ".store.only.captured.tables.ddl",
)
HISTORY_ALIASES: Mapping[str, str] = MappingProxyType(
    {
        **DEPRECATED_ALIASES,
        **{f"database.history{end}": f"schema.history.internal{end}" for end in _HISTORY_SUFFIXES},
        "database.history.store.only.monitored.tables.ddl": (
            "schema.history.internal.store.only.captured.tables.ddl"
        ),
    }
)
"""Debezium 1.x's ``database.history.*`` names of the schema history properties."""


class HistorizedProperties(EngineProperties):
    """The properties of connectors that keep schema history (MySQL, Db2): where the history
    is stored and whether schema changes go to the schema-change topic."""

    aliases: ClassVar[Mapping[str, str]] = HISTORY_ALIASES

    schema_history_internal: str = Field(
        "io.debezium.storage.kafka.history.KafkaSchemaHistory",
        alias="schema.history.internal",
        description="The store: Kafka (default), a file or memory (tests), by Debezium's class.",
    )
    schema_history_internal_kafka_topic: str = Field(
        "", alias="schema.history.internal.kafka.topic"
    )
    schema_history_internal_kafka_bootstrap_servers: str = Field(
        "",
        alias="schema.history.internal.kafka.bootstrap.servers",
        description="Default: spec.kafka.bootstrapServers.",
    )
    schema_history_internal_kafka_recovery_poll_interval_ms: int = Field(
        100, alias="schema.history.internal.kafka.recovery.poll.interval.ms", gt=0
    )
    schema_history_internal_kafka_recovery_attempts: int = Field(
        100, alias="schema.history.internal.kafka.recovery.attempts", gt=0
    )
    schema_history_internal_file_filename: str = Field(
        "", alias="schema.history.internal.file.filename"
    )
    schema_history_internal_skip_unparseable_ddl: bool = Field(
        False, alias="schema.history.internal.skip.unparseable.ddl"
    )
    schema_history_internal_store_only_captured_tables_ddl: bool = Field(
        False, alias="schema.history.internal.store.only.captured.tables.ddl"
    )
    schema_history_internal_store_only_captured_databases_ddl: bool = Field(
        False, alias="schema.history.internal.store.only.captured.databases.ddl"
    )
    include_schema_changes: bool = Field(True, alias="include.schema.changes")

    @field_validator("schema_history_internal")
    @classmethod
    def _known_store(cls, value: str) -> str:
        if value.strip() not in HISTORY_STORES:
            raise ValueError(
                f"{value} is a Java SchemaHistory, and cdcflow runs no Java code; use one of "
                f"{', '.join(HISTORY_STORES)}"
            )
        return value.strip()

    @property
    def history_store(self) -> str:
        """``kafka``, ``file`` or ``memory``."""
        return HISTORY_STORES[self.schema_history_internal]


def known_properties(model: type[EngineProperties]) -> list[str]:
    """Every property name ``model`` accepts, sorted, for error messages and docs."""
    names = [field.alias for field in model.model_fields.values() if field.alias]
    return sorted([*names, *model.aliases, "sanitize.field.names"])


Properties = TypeVar("Properties", bound=EngineProperties)


def model_for(kind: str) -> type[EngineProperties]:
    """The properties model of the connector for ``spec.source.<kind>``."""
    # loaded by name: models import this module, and a base install needs no connector to
    # parse its configuration
    module = importlib.import_module(KINDS[kind].properties_module)
    model: type[EngineProperties] = module.MODEL
    return model


def parse_properties(raw: Mapping[str, Any], model: type[Properties]) -> Properties:
    """Validate Debezium properties, translating deprecated names and explaining mistakes."""
    values: dict[str, Any] = {}
    overrides: dict[str, str] = {}
    rules: list[ColumnRule] = []
    for name, value in raw.items():
        _refuse_secret_or_unsupported(name, model)
        if name.startswith(OVERRIDES_PREFIX):
            overrides[name.removeprefix(OVERRIDES_PREFIX)] = str(value)
            continue
        rule = _column_rule(name, value)
        if rule is not None:
            rules.append(rule)
            continue
        if name in model.aliases:
            log.warning("property %s is deprecated; use %s", name, model.aliases[name])
            name = model.aliases[name]
        values[name] = value
    _sanitize_field_names(values)
    # every mistake at once: an unknown name and a bad value are both reported
    known = set(known_properties(model))
    problems = [_unknown(values, known, model.docs_page)]
    try:
        properties = model.model_validate(
            {**{k: v for k, v in values.items() if k in known}, "statement_overrides": {}}
        )
    except ValidationError as error:
        problems.append(explain(error))
    if any(problems):
        raise ConfigError("; ".join(problem for problem in problems if problem))
    properties.warn_deprecated()
    return properties.model_copy(
        update={"statement_overrides": _listed(properties, overrides), "column_rules": tuple(rules)}
    )


def _refuse_secret_or_unsupported(name: str, model: type[EngineProperties]) -> None:
    """Credentials never come from the configuration; unsupported properties say why."""
    if name == "database.sslpassword":
        raise ConfigError(
            "`database.sslpassword` must not appear in the configuration: it is a secret. Put it "
            "in the credentials Secret (spec.source.postgresql.credentials.sslPasswordKey) or, "
            "locally, in CDCFLOW_DATABASE_SSLPASSWORD or the --credentials-file `sslpassword:`."
        )
    if name in SECRET_PROPERTIES:
        raise ConfigError(
            f"`{name}` must not appear in the configuration: credentials come from a Secret "
            "(spec.source.*.credentials) or, locally, CDCFLOW_DATABASE_USER/"
            "CDCFLOW_DATABASE_PASSWORD or --credentials-file."
        )
    reason = unsupported_reason(name, model)
    if reason is not None:
        raise ConfigError(f"`{name}` is not supported by cdcflow: {reason}")


def unsupported_reason(name: str, model: type[EngineProperties]) -> str | None:
    """Why cdcflow refuses ``name``, when it is a recognised but unsupported property."""
    for entry, reason in model.unsupported.items():
        if name == entry or (entry.endswith(".") and name.startswith(entry)):
            return reason
    return None


def _column_rule(name: str, value: Any) -> ColumnRule | None:
    try:
        return parse_rule(name, value)
    except ValueError as error:
        raise ConfigError(f"invalid configuration: {name}: {error}") from None


def _sanitize_field_names(values: dict[str, Any]) -> None:
    """Debezium 1.x's ``sanitize.field.names=true`` is ``field.name.adjustment.mode=avro``."""
    if "sanitize.field.names" not in values:
        return
    sanitize = str(values.pop("sanitize.field.names")).strip().lower()
    if sanitize not in ("true", "false"):
        raise ConfigError("invalid configuration: sanitize.field.names must be true or false")
    if "field.name.adjustment.mode" in values:
        log.warning(
            "sanitize.field.names is deprecated and ignored: field.name.adjustment.mode is set"
        )
        return
    mode = "avro" if sanitize == "true" else "none"
    log.warning(
        "property sanitize.field.names is deprecated; use field.name.adjustment.mode=%s", mode
    )
    values["field.name.adjustment.mode"] = mode


def parse_metric_tags(text: str) -> dict[str, str]:
    """``custom.metric.tags``: ``k1=v1,k2=v2``; entries without exactly one ``=`` are errors."""
    tags: dict[str, str] = {}
    for entry in filter(None, (part.strip() for part in text.split(","))):
        key, equals, value = (part.strip() for part in entry.partition("="))
        if not equals or not key or "=" in value:
            raise ValueError(f"custom.metric.tags entry {entry!r} is not key=value")
        tags[key] = value
    return tags


def _listed(properties: EngineProperties, overrides: Mapping[str, str]) -> dict[str, str]:
    """The override statements of the tables ``snapshot.select.statement.overrides`` lists.

    Debezium reads a companion property only for a listed table, so an unlisted one is
    ignored (with a warning here, as it is most likely a mistake).
    """
    listed = set(properties.snapshot_select_statement_overrides)
    for table in sorted(set(overrides) - listed):
        log.warning(
            "%s%s is ignored: add %s to snapshot.select.statement.overrides to use it",
            OVERRIDES_PREFIX,
            table,
            table,
        )
    for table in sorted(listed - set(overrides)):
        log.warning(
            "snapshot.select.statement.overrides lists %s but %s%s is not set; its snapshot "
            "reads the whole table",
            table,
            OVERRIDES_PREFIX,
            table,
        )
    return {table: statement for table, statement in overrides.items() if table in listed}


def _unknown(values: Mapping[str, Any], known: set[str], docs_page: str) -> str:
    """What is wrong with the names no property has ("" when every name is known)."""
    unknown = [name for name in values if name not in known]
    if not unknown:
        return ""
    hints = []
    for name in unknown:
        close = difflib.get_close_matches(name, known, n=1)
        hints.append(f"`{name}`" + (f" (did you mean `{close[0]}`?)" if close else ""))
    return (
        f"unknown connector propert{'y' if len(unknown) == 1 else 'ies'}: {', '.join(hints)}. "
        f"Every property is listed in {docs_page} (Properties)."
    )


def explain(error: ValidationError) -> str:
    """Every mistake pydantic found, each with where it is, in the user's words (without
    pydantic's ``Value error,`` prefix on the messages our validators raise)."""
    lines = []
    for problem in error.errors():
        where = ".".join(str(part) for part in problem["loc"]) or "config"
        message = str(problem["msg"]).removeprefix("Value error, ")
        lines.append(f"{where}: {message}")
    return "invalid configuration: " + "; ".join(lines)
