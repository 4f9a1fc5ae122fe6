"""The CdcConnector custom resource: the YAML `cdcflow capture -f` runs and the operator reconciles.

One set of pydantic models serves three readers: the engine (which turns it into connector
properties), the operator (which renders it into a ConfigMap and a StatefulSet) and the CRD
generator (field descriptions become ``kubectl explain`` text, constraints become the
OpenAPI schema and CEL rules). Typed conveniences (``tables``, ``snapshot``, ``signals``,
``heartbeat``) map onto Debezium properties; everything else goes in ``config`` under its
Debezium name. Credentials are only ever Secret references.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, ClassVar, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from cdcflow.capture.config import (
    ConfigError,
    EngineProperties,
    HistorizedProperties,
    explain,
    model_for,
    parse_properties,
)
from cdcflow.capture.kinds import KINDS

API_VERSION = "cdcflow.io/v1alpha1"
DEFAULT_IMAGE = "ghcr.io/cdcflow/cdcflow:0.1.0"
SignalChannel = Literal["source", "kafka"]
SnapshotMode = Literal[
    "initial", "always", "never", "no_data", "initial_only", "when_needed", "exported"
]


class Spec(BaseModel):
    """Base of every spec model: unknown fields are errors, camelCase names on the wire."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Credentials(Spec):
    """A Secret holding the login; the operator mounts it as environment variables."""

    secret_name: str = Field(
        "", alias="secretName", description="Name of the Secret in the connector's namespace."
    )
    username_key: str = Field("username", alias="usernameKey", description="Key of the user.")
    password_key: str = Field("password", alias="passwordKey", description="Key of the password.")
    ssl_password_key: str | None = Field(
        None,
        alias="sslPasswordKey",
        description="Key of the client key's password (database.sslpassword), if it has one.",
    )


class DatabaseSource(Spec):
    """What every source database spec has: where it listens, the login Secret, the CA."""

    host: str = Field(min_length=1, description="Host name or address of the server.")
    port: int = Field(ge=1, le=65535, description="Port of the server.")
    credentials: Credentials = Field(
        default_factory=Credentials, description="Secret with the connector's database login."
    )
    ca_secret_name: str = Field(
        "", alias="caSecretName", description="Secret whose ca.crt verifies the server (TLS)."
    )

    ca_property: ClassVar[str] = ""
    """The connector property that names the CA file the operator mounts from caSecretName."""

    def url(self, kind: str) -> str:
        """``kind://host:port`` (and ``/database`` where the source names one), for status."""
        return f"{kind}://{self.host}:{self.port}"


class PostgresSource(DatabaseSource):
    """A PostgreSQL primary with wal_level=logical."""

    ca_property: ClassVar[str] = "database.sslrootcert"

    port: int = Field(5432, ge=1, le=65535, description="Port of the server.")
    database: str = Field(min_length=1, description="Database to capture.")
    ssl_mode: Literal["disable", "allow", "prefer", "require", "verify-ca", "verify-full"] = Field(
        "prefer", alias="sslMode", description="libpq sslmode."
    )

    def url(self, kind: str) -> str:
        return f"{super().url(kind)}/{self.database}"


class MySqlSource(DatabaseSource):
    """A MySQL or MariaDB server with its binlog on (ROW format, FULL row images).

    ``mysql`` and ``mariadb`` are Debezium's two connectors (MySqlConnector and
    MariaDbConnector): the same capture, with events named for the one chosen.
    """

    ca_property: ClassVar[str] = "database.ssl.ca"

    port: int = Field(3306, ge=1, le=65535, description="Port of the server.")
    server_id: int | None = Field(
        None,
        alias="serverId",
        ge=1,
        le=2**32 - 1,
        description="database.server.id: unique among the server's replicas (default random).",
    )
    ssl_mode: Literal["disabled", "preferred", "required", "verify_ca", "verify_identity"] = Field(
        "preferred", alias="sslMode", description="database.ssl.mode."
    )


class Db2Source(DatabaseSource):
    """A Db2 (LUW) database whose captured tables are in ASN capture mode."""

    ca_property: ClassVar[str] = "database.ssl.ca"

    port: int = Field(50000, ge=1, le=65535, description="Port of the server.")
    database: str = Field(min_length=1, description="database.dbname: the database to capture.")
    ssl: bool = Field(False, description="Connect with TLS (on when caSecretName is set).")

    def url(self, kind: str) -> str:
        return f"{super().url(kind)}/{self.database}"


class Source(Spec):
    """The source database: exactly one of the typed sources, named by its kind."""

    postgresql: PostgresSource | None = Field(None, description="A PostgreSQL source.")
    mysql: MySqlSource | None = Field(None, description="A MySQL source.")
    mariadb: MySqlSource | None = Field(None, description="A MariaDB source.")
    db2: Db2Source | None = Field(None, description="A Db2 source (ASN capture mode).")

    @model_validator(mode="after")
    def _exactly_one(self) -> Source:
        chosen = [kind for kind in SOURCE_KINDS if getattr(self, kind) is not None]
        if len(chosen) != 1:
            raise ValueError(f"spec.source needs exactly one of: {', '.join(SOURCE_KINDS)}")
        return self

    @property
    def kind(self) -> str:
        """The one source's kind, e.g. ``postgresql``."""
        return next(kind for kind in SOURCE_KINDS if getattr(self, kind) is not None)

    @property
    def selected(self) -> DatabaseSource:
        """The one source's spec."""
        chosen: DatabaseSource = getattr(self, self.kind)
        return chosen

    def url(self) -> str:
        """``postgresql://host:port/database`` and the like, for the SOURCE column."""
        return self.selected.url(self.kind)


_PACKAGE_SPECS: dict[str, type[DatabaseSource]] = {
    "postgres": PostgresSource,
    "mysql": MySqlSource,
    "db2": Db2Source,
}
SOURCE_MODELS = {kind: _PACKAGE_SPECS[registered.package] for kind, registered in KINDS.items()}
"""The spec of each ``spec.source`` kind (:data:`cdcflow.capture.kinds.KINDS`): the fields of
:class:`Source`, one per connector package."""
SOURCE_KINDS = tuple(SOURCE_MODELS)


def default_port(kind: str) -> int:
    """The port a ``spec.source.<kind>`` gets when it names none."""
    default = SOURCE_MODELS[kind].model_fields["port"].default
    assert isinstance(default, int)
    return default


class Tables(Spec):
    """Which tables to capture (regular expressions over schema.table)."""

    include: list[str] = Field(default_factory=list, description="table.include.list")
    exclude: list[str] = Field(default_factory=list, description="table.exclude.list")


class Snapshot(Spec):
    """How the connector snapshots."""

    mode: SnapshotMode | None = Field(None, description="snapshot.mode (default initial).")


class Signals(Spec):
    """Where signals (ad hoc snapshots, CdcSnapshotSignal) arrive."""

    table: str = Field("", description="signal.data.collection: schema.table of the signal table.")
    channels: list[SignalChannel] = Field(
        default_factory=lambda: list[SignalChannel](["source"]),
        description="signal.enabled.channels",
    )


class Heartbeat(Spec):
    """Heartbeats keep slots advancing while captured tables are quiet."""

    interval_ms: int = Field(0, alias="intervalMs", ge=0, description="heartbeat.interval.ms")
    action_query: str = Field("", alias="actionQuery", description="heartbeat.action.query")


class KafkaAuthentication(Spec):
    """SASL login to Kafka, from a Secret."""

    mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] = "SCRAM-SHA-512"
    secret_name: str = Field(alias="secretName", min_length=1, description="Secret with the login.")
    username_key: str = Field("username", alias="usernameKey")
    password_key: str = Field("password", alias="passwordKey")


class KafkaTls(Spec):
    """TLS to Kafka."""

    enabled: bool = Field(False, description="Connect with TLS.")
    ca_secret_name: str = Field(
        "", alias="caSecretName", description="Secret whose ca.crt verifies the brokers."
    )


class KafkaSpec(Spec):
    """The Kafka cluster events are written to."""

    bootstrap_servers: str = Field(
        alias="bootstrapServers", min_length=1, description="host:port[,host:port]"
    )
    producer: dict[str, str | int | bool] = Field(
        default_factory=dict, description="librdkafka producer settings passed through as is."
    )
    tls: KafkaTls | None = Field(None, description="TLS settings.")
    authentication: KafkaAuthentication | None = Field(None, description="SASL settings.")


class OffsetsSpec(Spec):
    """Where connector positions are stored."""

    store: Literal["file", "kafka", "memory"] = Field(
        "file", description="file (a volume of the capture pod), kafka (compacted topic), memory."
    )
    path: str = Field("", description="file store: the offsets file (default under the cache).")
    topic: str = Field("", description="kafka store: compacted topic (default <prefix>-offsets).")
    reset_request: int = Field(
        0,
        alias="resetRequest",
        ge=0,
        description="Raise to reset the stored offsets once; allowed only while state is stopped.",
    )


#: A Kubernetes resource quantity (``512Mi``, ``0.5``, ``250m``), as the API server parses it.
QUANTITY = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)


class Resources(Spec):
    """Compute requests and limits of the capture container."""

    requests: dict[str, str | int] = Field(default_factory=dict)
    limits: dict[str, str | int] = Field(default_factory=dict)

    @field_validator("requests", "limits")
    @classmethod
    def _quantities(cls, value: dict[str, str | int]) -> dict[str, str | int]:
        for name, quantity in value.items():
            if isinstance(quantity, str) and not re.fullmatch(QUANTITY, quantity):
                raise ValueError(
                    f"{name}: {quantity!r} is not a Kubernetes quantity (e.g. 512Mi, 1Gi, 500m, "
                    "2); note MB/GB are not units there: use Mi/Gi or M/G"
                )
        return value


class Runtime(Spec):
    """The capture pod the operator runs."""

    image: str = Field(DEFAULT_IMAGE, description="Image with cdcflow[capture] installed.")
    image_pull_policy: Literal["Always", "IfNotPresent", "Never"] = Field(
        "IfNotPresent", alias="imagePullPolicy"
    )
    resources: Resources = Field(default_factory=Resources)


class AutoRestart(Spec):
    """Bounds on restarting a failed capture container (the kubelet backs off between them)."""

    enabled: bool = Field(True, description="false: halt the connector at the first failure.")
    max_restarts: int | None = Field(
        None,
        alias="maxRestarts",
        ge=0,
        description="Halt after this many restarts (unset: no limit); restartRequest resumes.",
    )


class ConnectorSpec(Spec):
    """What to capture, where to send it and how to run it."""

    source: Source = Field(description="The source database.")
    tables: Tables = Field(default_factory=Tables, description="Captured tables.")
    snapshot: Snapshot = Field(default_factory=Snapshot, description="Snapshot behaviour.")
    signals: Signals = Field(default_factory=Signals, description="Signal channels.")
    heartbeat: Heartbeat = Field(default_factory=Heartbeat, description="Heartbeats.")
    topic_prefix: str = Field(
        "",
        alias="topicPrefix",
        pattern=r"^([A-Za-z0-9._-]+)?$",
        description="topic.prefix (default: the resource name).",
    )
    kafka: KafkaSpec | None = Field(None, description="The Kafka cluster.")
    offsets: OffsetsSpec = Field(default_factory=OffsetsSpec, description="Offset storage.")
    runtime: Runtime = Field(default_factory=Runtime, description="The capture pod.")
    state: Literal["running", "paused", "stopped"] = Field(
        "running",
        description="running; paused or stopped: no capture pod, the slot and offsets kept "
        "(Argo CD shows paused as Suspended).",
    )
    restart_request: int = Field(
        0, alias="restartRequest", ge=0, description="Raise to restart the capture pod once."
    )
    auto_restart: AutoRestart = Field(
        default_factory=AutoRestart, alias="autoRestart", description="Automatic restarts."
    )
    cleanup_policy: Literal["Retain", "Delete"] = Field(
        "Retain",
        alias="cleanupPolicy",
        description="Delete drops the replication slot and publication when the resource goes.",
    )
    config: dict[str, str | int | bool | float] = Field(
        default_factory=dict, description="Debezium connector properties by their Debezium names."
    )


class Metadata(BaseModel):
    """The parts of ObjectMeta cdcflow reads."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)
    name: str = Field(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length=63)
    namespace: str = "default"


class CdcConnector(Spec):
    """A change data capture connector (cdcflow.io/v1alpha1 CdcConnector)."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)
    api_version: Literal["cdcflow.io/v1alpha1"] = Field("cdcflow.io/v1alpha1", alias="apiVersion")
    kind: Literal["CdcConnector"] = "CdcConnector"
    metadata: Metadata
    spec: ConnectorSpec

    def properties(self) -> EngineProperties:
        """Debezium properties: ``config`` plus the typed fields (setting one twice is an error),
        validated by the source kind's own model."""
        return parse_properties(self.raw_properties(), model_for(self.spec.source.kind))

    def raw_properties(self) -> dict[str, Any]:
        """The properties as configured: ``config`` plus the typed fields, not yet parsed."""
        raw: dict[str, Any] = dict(self.spec.config)
        for name, value in self._typed_properties().items():
            if name in raw and raw[name] != value:
                raise ConfigError(
                    f"{name} is set both by a typed spec field and in spec.config; keep one"
                )
            raw[name] = value
        if "topic.prefix" not in raw and "database.server.name" not in raw:
            raw["topic.prefix"] = self.metadata.name
        return raw

    def _typed_properties(self) -> dict[str, Any]:
        spec, out = self.spec, dict[str, Any]()
        if spec.tables.include:
            out["table.include.list"] = ",".join(spec.tables.include)
        if spec.tables.exclude:
            out["table.exclude.list"] = ",".join(spec.tables.exclude)
        if spec.snapshot.mode:
            out["snapshot.mode"] = spec.snapshot.mode
        if spec.signals.table:
            out["signal.data.collection"] = spec.signals.table
            out["signal.enabled.channels"] = ",".join(spec.signals.channels)
        if spec.heartbeat.interval_ms:
            out["heartbeat.interval.ms"] = spec.heartbeat.interval_ms
        if spec.heartbeat.action_query:
            out["heartbeat.action.query"] = spec.heartbeat.action_query
        if spec.topic_prefix:
            out["topic.prefix"] = spec.topic_prefix
        return out


def load_connector(path: Path) -> CdcConnector:
    """Read a CdcConnector YAML file, with errors that name the file and the field."""
    try:
        document = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as error:
        raise ConfigError(f"cannot read {path}: {error}") from None
    if not isinstance(document, dict) or document.get("kind") != "CdcConnector":
        raise ConfigError(f"{path} is not a CdcConnector resource (kind: CdcConnector expected)")
    return parse_connector(document, origin=str(path))


def parse_connector(document: dict[str, Any], *, origin: str = "CdcConnector") -> CdcConnector:
    """Validate a CdcConnector document (from a file or the API server)."""
    try:
        connector = CdcConnector.model_validate(document)
    except ValidationError as error:
        raise ConfigError(f"{origin}: {explain(error)}") from None
    refuse_exactly_once_outside_kafka(connector, connector.properties())
    return connector


def refuse_exactly_once_outside_kafka(
    connector: CdcConnector, properties: EngineProperties
) -> None:
    """``exactly.once.support=required`` commits records, offsets and schema history in one
    Kafka transaction: the offsets and the history must be in Kafka."""
    if not properties.exactly_once:
        return
    if connector.spec.offsets.store != "kafka":
        raise ConfigError(
            "exactly.once.support=required commits the offsets in the same Kafka transactions "
            "as the records: set spec.offsets.store: kafka (the topic defaults to "
            "<topic.prefix>-offsets)"
        )
    if isinstance(properties, HistorizedProperties) and properties.history_store != "kafka":
        raise ConfigError(
            "exactly.once.support=required keeps the schema history in Kafka, in the same "
            "transactions as the records: remove schema.history.internal (its default is "
            "Kafka's) or set it to io.debezium.storage.kafka.history.KafkaSchemaHistory"
        )
