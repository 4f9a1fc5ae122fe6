"""Assembly: a CdcConnector resource and a database login into a ready :class:`Engine`.

:func:`build_engine` parses the Debezium properties, logs the configuration (masked), and
wires the connector the registry builds for the source kind, the sink (Kafka or stdout), the
offset store (file, Kafka or memory), the schema history of historized connectors and the
stats; :mod:`cdcflow.capture.engine` then runs them. :func:`offset_store` and
:func:`schema_history` serve the ``offsets`` and ``cleanup`` commands too.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from cdcflow.capture import registry
from cdcflow.capture.config import ConfigError, EngineProperties, HistorizedProperties
from cdcflow.capture.connector_resource import CdcConnector
from cdcflow.capture.credentials import Login, kafka_security
from cdcflow.capture.engine import Engine
from cdcflow.capture.filters import Filters
from cdcflow.capture.offsets import FileOffsetStore, MemoryOffsetStore
from cdcflow.capture.spi import OffsetStore, SchemaHistory, Sink
from cdcflow.capture.stats import Stats
from cdcflow.capture.stdout_sink import StdoutSink

if TYPE_CHECKING:  # Kafka's client is an extra: imported where a Kafka sink is built
    from cdcflow.capture.kafka.producer import KafkaSink as KafkaSinkType

log = logging.getLogger(__name__)

SinkKind = Literal["kafka", "stdout"]


def default_offsets_path(resource: CdcConnector) -> Path:
    root = Path(os.environ.get("CDCFLOW_CACHE", Path.home() / ".cache" / "cdcflow"))
    return root / "offsets" / f"{resource.metadata.namespace}.{resource.metadata.name}.json"


def version() -> str:
    return metadata.version("cdcflow")


def build_engine(
    resource: CdcConnector,
    *,
    login: Login,
    sink: SinkKind = "kafka",
    offsets_path: Path | None = None,
    host_override: str | None = None,
) -> Engine:
    """Wire the connector, sink, offset store and stats for ``resource``."""
    properties = resource.properties()
    log_configuration(resource, properties)
    filters = Filters.from_properties(properties)
    stats = Stats(
        connector=resource.metadata.name,
        server=properties.topic_prefix,
        metric_tags=dict(properties.custom_metric_tags),
    )
    stop = threading.Event()
    context = registry.ConnectorContext(
        resource=resource,
        properties=properties,
        filters=filters,
        login=login,
        host_override=host_override,
        version=version(),
        stop=stop,
    )
    connector = registry.build_connector(context)
    if properties.exactly_once and sink != "kafka":
        raise ConfigError("exactly.once.support=required needs the Kafka sink, not --sink stdout")
    sink_ = _sink(resource, properties, sink, stats=stats)
    # exactly-once: offsets and schema history commit in the sink's Kafka transactions
    transactions = _kafka(sink_) if properties.exactly_once else None
    return Engine(
        resource=resource,
        properties=properties,
        connector=connector,
        filters=filters,
        sink=sink_,
        offsets=_offsets(resource, properties, offsets_path, transactions=transactions),
        stats=stats,
        history=schema_history(resource, properties, transactions=transactions),
        stop=stop,
    )


def _kafka(sink: Sink) -> KafkaSinkType:
    from cdcflow.capture.kafka.producer import KafkaSink

    assert isinstance(sink, KafkaSink), "refuse_without_transactions checked the sink's kind"
    return sink


def schema_history(
    resource: CdcConnector,
    properties: EngineProperties,
    *,
    transactions: KafkaSinkType | None = None,
) -> SchemaHistory | None:
    """The schema history store ``schema.history.internal`` names, for historized connectors
    (written in ``transactions`` under exactly-once)."""
    if not isinstance(properties, HistorizedProperties):
        return None
    from cdcflow.capture.history import FileSchemaHistory, MemorySchemaHistory

    server = properties.topic_prefix
    if properties.history_store == "memory":
        return MemorySchemaHistory()
    if properties.history_store == "file":
        name = properties.schema_history_internal_file_filename
        path = Path(name) if name else default_offsets_path(resource).with_suffix(".history")
        return FileSchemaHistory(path, server=server)
    bootstrap = properties.schema_history_internal_kafka_bootstrap_servers or (
        resource.spec.kafka.bootstrap_servers if resource.spec.kafka else ""
    )
    if not bootstrap:
        raise ConfigError(
            "schema history in Kafka needs schema.history.internal.kafka.bootstrap.servers "
            "or spec.kafka.bootstrapServers"
        )
    from cdcflow.capture.kafka.history import KafkaSchemaHistory

    return KafkaSchemaHistory(
        bootstrap_servers=bootstrap,
        client_config=kafka_security(resource.spec.kafka) if resource.spec.kafka else {},
        topic=properties.schema_history_internal_kafka_topic or f"{server}-schema-history",
        server=server,
        recovery_poll_interval_ms=properties.schema_history_internal_kafka_recovery_poll_interval_ms,
        recovery_attempts=properties.schema_history_internal_kafka_recovery_attempts,
        transactions=transactions,
    )


def masked_configuration(raw: Mapping[str, Any], pattern: str) -> dict[str, str]:
    """The configured properties as text, values masked (``********``) whose names fully match
    ``pattern`` (``custom.sanitize.pattern``), in name order."""
    masked = re.compile(pattern)
    return {name: "********" if masked.fullmatch(name) else str(raw[name]) for name in sorted(raw)}


def log_configuration(resource: CdcConnector, properties: EngineProperties) -> None:
    """Log the connector's configuration at start, as Debezium does, masked by
    ``custom.sanitize.pattern``; and the heartbeat ``lsn.flush.mode`` adds."""
    log.info("Starting connector %s with configuration:", resource.metadata.name)
    for name, value in masked_configuration(
        resource.raw_properties(), properties.custom_sanitize_pattern
    ).items():
        log.info("   %s = %s", name, value)
    if properties.effective_heartbeat_interval_ms != properties.heartbeat_interval_ms:
        log.warning(
            "heartbeat.interval.ms was internally set to %d ms since lsn.flush.mode="
            "connector_and_driver requires periodic opportunities to propagate LSNs. If this "
            "behavior is not desired, explicitly set heartbeat.interval.ms to more than 0 or "
            "enable provide.transaction.metadata.",
            properties.effective_heartbeat_interval_ms,
        )


def _sink(
    resource: CdcConnector, properties: EngineProperties, kind: SinkKind, *, stats: Stats
) -> Sink:
    if kind == "stdout":
        return StdoutSink()
    if resource.spec.kafka is None:
        raise ConfigError("spec.kafka.bootstrapServers is required (or run with --sink stdout)")
    from cdcflow.capture.kafka.producer import KafkaSink

    tuning: dict[str, Any] = {
        "queue.buffering.max.messages": max(properties.max_queue_size, properties.max_batch_size),
        "batch.num.messages": properties.max_batch_size,
    }
    if properties.max_queue_size_in_bytes:
        tuning["queue.buffering.max.kbytes"] = max(1, properties.max_queue_size_in_bytes // 1024)
    return KafkaSink(
        bootstrap_servers=resource.spec.kafka.bootstrap_servers,
        client_config=kafka_security(resource.spec.kafka),
        producer_config={**tuning, **resource.spec.kafka.producer},
        partitions=properties.topic_creation_default_partitions,
        replication_factor=properties.topic_creation_default_replication_factor,
        on_reachability=stats.sink_reachability,
        transactional_id=transactional_id(resource) if properties.exactly_once else None,
    )


def transactional_id(resource: CdcConnector) -> str:
    """The connector's Kafka ``transactional.id``: the same for every process of it (so a new
    one fences the one before), different for every connector."""
    namespace = resource.metadata.namespace or "default"
    return f"cdcflow-{namespace}-{resource.metadata.name}"


def offset_store(resource: CdcConnector, path: Path | None = None) -> OffsetStore:
    """The offset store ``resource`` names (file by default), for the engine and the CLI."""
    return _offsets(resource, resource.properties(), path)


def _offsets(
    resource: CdcConnector,
    properties: EngineProperties,
    path: Path | None,
    *,
    transactions: KafkaSinkType | None = None,
) -> OffsetStore:
    spec = resource.spec.offsets
    name, server = resource.metadata.name, properties.topic_prefix
    if spec.store == "memory":
        return MemoryOffsetStore()
    if spec.store == "kafka":
        if resource.spec.kafka is None:
            raise ConfigError("offsets.store=kafka needs spec.kafka")
        from cdcflow.capture.kafka.offsets import KafkaOffsetStore

        return KafkaOffsetStore(
            bootstrap_servers=resource.spec.kafka.bootstrap_servers,
            client_config=kafka_security(resource.spec.kafka),
            topic=spec.topic or f"{server}-offsets",
            connector=name,
            server=server,
            transactions=transactions,
        )
    target = path or (Path(spec.path) if spec.path else default_offsets_path(resource))
    return FileOffsetStore(target, connector=name, server=server)
