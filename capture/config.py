"""Connector properties: the Debezium options a CdcConnector carries in ``spec.config``.

Options use Debezium's property names so an existing Debezium configuration moves over
unchanged; unknown names are rejected with the valid ones listed, and 1.x names
(``database.server.name``, ``database.history.*``) are accepted as deprecated aliases with a
warning. Credentials never appear here: they come from a Secret (in a pod, as environment
variables) or, locally, from the environment or a file. The resource around these properties
is modelled in :mod:`cdcflow.capture.resource`.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

log = logging.getLogger(__name__)

OVERRIDES_PREFIX = "snapshot.select.statement.overrides."
DEPRECATED_ALIASES = {
    "database.server.name": "topic.prefix",
    "toasted.value.placeholder": "unavailable.value.placeholder",
    "database.history.kafka.topic": "schema.history.internal.kafka.topic",
    "database.history.kafka.bootstrap.servers": "schema.history.internal.kafka.bootstrap.servers",
}
SECRET_PROPERTIES = ("database.password", "database.user", "database.sslpassword")


class ConfigError(ValueError):
    """The configuration is wrong; the message says what and how to fix it."""


def _csv(value: object) -> tuple[str, ...]:
    """Debezium lists are comma-separated strings; YAML users may also write real lists."""
    if value is None or value == "":
        return ()
    items = value if isinstance(value, list | tuple) else str(value).split(",")
    return tuple(str(item).strip() for item in items if str(item).strip())


class ConnectorProperties(BaseModel):
    """Debezium connector properties understood by cdcflow, under their Debezium names."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=False)

    topic_prefix: str = Field(
        alias="topic.prefix",
        pattern=r"^[A-Za-z0-9._-]+$",
        description="Logical server name: prefix of every topic and the offsets' partition key.",
    )
    topic_delimiter: str = Field(
        ".", alias="topic.delimiter", description="Separator in topic names."
    )
    plugin_name: Literal["pgoutput"] = Field("pgoutput", alias="plugin.name")
    slot_name: str = Field(
        "debezium", alias="slot.name", pattern=r"^[a-z0-9_]+$", description="Replication slot."
    )
    slot_drop_on_stop: bool = Field(False, alias="slot.drop.on.stop")
    publication_name: str = Field("dbz_publication", alias="publication.name")
    publication_autocreate_mode: Literal["all_tables", "disabled", "filtered"] = Field(
        "all_tables", alias="publication.autocreate.mode"
    )
    snapshot_mode: Literal[
        "initial", "always", "never", "no_data", "initial_only", "when_needed", "exported"
    ] = Field("initial", alias="snapshot.mode")
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
    hstore_handling_mode: Literal["json", "map"] = Field("json", alias="hstore.handling.mode")
    interval_handling_mode: Literal["numeric", "string"] = Field(
        "numeric", alias="interval.handling.mode"
    )
    binary_handling_mode: Literal["bytes", "base64", "hex"] = Field(
        "bytes", alias="binary.handling.mode"
    )
    include_unknown_datatypes: bool = Field(False, alias="include.unknown.datatypes")
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
    heartbeat_action_query: str = Field("", alias="heartbeat.action.query")
    status_update_interval_ms: int = Field(10000, alias="status.update.interval.ms", gt=0)
    max_queue_size: int = Field(8192, alias="max.queue.size", gt=0)
    max_batch_size: int = Field(2048, alias="max.batch.size", gt=0)
    max_queue_size_in_bytes: int = Field(0, alias="max.queue.size.in.bytes", ge=0)
    poll_interval_ms: int = Field(500, alias="poll.interval.ms", gt=0)
    offset_flush_interval_ms: int = Field(1000, alias="offset.flush.interval.ms", gt=0)
    key_converter_schemas_enable: bool = Field(True, alias="key.converter.schemas.enable")
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
    database_sslmode: Literal[
        "disable", "allow", "prefer", "require", "verify-ca", "verify-full"
    ] = Field("prefer", alias="database.sslmode")
    database_sslrootcert: str = Field("", alias="database.sslrootcert")
    database_initial_statements: str = Field("", alias="database.initial.statements")
    statement_overrides: dict[str, str] = Field(default_factory=dict, exclude=True)

    _split_lists = field_validator(
        "snapshot_include_collection_list",
        "snapshot_select_statement_overrides",
        "schema_include_list",
        "schema_exclude_list",
        "table_include_list",
        "table_exclude_list",
        "column_include_list",
        "column_exclude_list",
        "message_prefix_include_list",
        "message_prefix_exclude_list",
        "skipped_operations",
        "signal_enabled_channels",
        "notification_enabled_channels",
        mode="before",
    )(_csv)

    @model_validator(mode="after")
    def _exclusive_lists(self) -> ConnectorProperties:
        for kind in ("schema", "table", "column", "message_prefix"):
            if getattr(self, f"{kind}_include_list") and getattr(self, f"{kind}_exclude_list"):
                name = kind.replace("_", ".")
                raise ValueError(
                    f"{name}.include.list and {name}.exclude.list are mutually exclusive; "
                    "keep one of them"
                )
        return self

    @property
    def skipped(self) -> frozenset[str]:
        """Operations not to emit; ``truncate.handling.mode=include`` un-skips ``t``."""
        skipped = set(self.skipped_operations) - {"none"}
        if self.truncate_handling_mode == "include":
            skipped.discard("t")
        return frozenset(skipped)


def known_properties() -> list[str]:
    """Every property name cdcflow accepts, sorted, for error messages and docs."""
    names = [field.alias for field in ConnectorProperties.model_fields.values() if field.alias]
    return sorted([*names, *DEPRECATED_ALIASES])


def parse_properties(raw: Mapping[str, Any]) -> ConnectorProperties:
    """Validate Debezium properties, translating deprecated names and explaining mistakes."""
    values: dict[str, Any] = {}
    overrides: dict[str, str] = {}
    for name, value in raw.items():
        if name in SECRET_PROPERTIES:
            raise ConfigError(
                f"`{name}` must not appear in the configuration: credentials come from a Secret "
                "(spec.source.*.credentials) or, locally, CDCFLOW_DATABASE_USER/"
                "CDCFLOW_DATABASE_PASSWORD or --credentials-file."
            )
        if name.startswith(OVERRIDES_PREFIX):
            overrides[name.removeprefix(OVERRIDES_PREFIX)] = str(value)
            continue
        if name in DEPRECATED_ALIASES:
            log.warning("property %s is deprecated; use %s", name, DEPRECATED_ALIASES[name])
            name = DEPRECATED_ALIASES[name]
        values[name] = value
    _reject_unknown(values)
    try:
        properties = ConnectorProperties.model_validate({**values, "statement_overrides": {}})
    except ValidationError as error:
        raise ConfigError(explain(error)) from None
    return properties.model_copy(update={"statement_overrides": _listed(properties, overrides)})


def _listed(properties: ConnectorProperties, overrides: Mapping[str, str]) -> dict[str, str]:
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
    return {table: statement for table, statement in overrides.items() if table in listed}


def _reject_unknown(values: Mapping[str, Any]) -> None:
    known = set(known_properties())
    unknown = [name for name in values if name not in known]
    if not unknown:
        return
    hints = []
    for name in unknown:
        close = difflib.get_close_matches(name, known, n=1)
        hints.append(f"`{name}`" + (f" (did you mean `{close[0]}`?)" if close else ""))
    raise ConfigError(
        f"unknown connector propert{'y' if len(unknown) == 1 else 'ies'}: {', '.join(hints)}. "
        f"Valid properties are: {', '.join(known_properties())}"
    )


def explain(error: ValidationError) -> str:
    lines = []
    for problem in error.errors():
        where = ".".join(str(part) for part in problem["loc"]) or "config"
        lines.append(f"{where}: {problem['msg']}")
    return "invalid configuration: " + "; ".join(lines)
