"""The MySQL/MariaDB connector's properties: the engine's and schema history's, plus the server
id, GTID filters, snapshot locking and the MySQL type modes, as Debezium's BinlogConnectorConfig."""

from __future__ import annotations

import random
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator

from cdcflow.capture.config import (
    HISTORY_ALIASES,
    JAVA_ONLY,
    UNSUPPORTED_PROPERTIES,
    HistorizedProperties,
)
from cdcflow.capture.config import parse_properties as _parse

#: Debezium picks a random server id in this range when none is configured.
SERVER_ID_RANGE = (5400, 6400)

MYSQL_UNSUPPORTED: Mapping[str, str] = MappingProxyType(
    {
        **UNSUPPORTED_PROPERTIES,
        "database.ssl.keystore": (
            f"{JAVA_ONLY} (a Java keystore); give the client certificate and key as PEM files "
            "with database.ssl.cert and database.ssl.key"
        ),
        "database.ssl.truststore": (
            f"{JAVA_ONLY} (a Java truststore); give the CA certificate as a PEM file with "
            "database.ssl.ca"
        ),
        "database.jdbc.driver": f"{JAVA_ONLY} (a JDBC driver class); cdcflow connects with PyMySQL",
        "database.ssl.keystore.password": (
            f"{JAVA_ONLY} (a Java keystore's password); give PEM files with database.ssl.cert "
            "and database.ssl.key"
        ),
        "database.ssl.truststore.password": (
            f"{JAVA_ONLY} (a Java truststore's password); give the CA as a PEM file with "
            "database.ssl.ca"
        ),
        "database.server.id.offset": (
            "Debezium offsets the server id of its legacy parallel snapshot's extra binlog "
            "readers; cdcflow reads the binlog with one reader, as database.server.id"
        ),
        "snapshot.max.threads.multiplier": (
            "Debezium's chunked parallel snapshot; cdcflow reads the snapshot in one "
            "REPEATABLE READ transaction"
        ),
        "internal.legacy.snapshot.max.threads": (
            "Debezium's legacy parallel snapshot; cdcflow reads the snapshot in one "
            "REPEATABLE READ transaction"
        ),
        "binlog.net.read.timeout": (
            "cdcflow's binlog connection asks the server for a heartbeat every second and "
            "treats a silent connection as lost; there is no timeout to set"
        ),
        "binlog.net.write.timeout": (
            "cdcflow's binlog connection asks the server for a heartbeat every second and "
            "treats a silent connection as lost; there is no timeout to set"
        ),
        "use.nongraceful.disconnect": (
            "cdcflow always stops its binlog reader by closing the socket under it"
        ),
    }
)
MYSQL_ALIASES: Mapping[str, str] = MappingProxyType(
    {
        **HISTORY_ALIASES,
        "event.deserialization.failure.handling.mode": "event.processing.failure.handling.mode",
        "inconsistent.schema.handling.mode": "event.processing.failure.handling.mode",
    }
)


class MySqlProperties(HistorizedProperties):
    """The MySQL and MariaDB connectors' properties."""

    source_kind: ClassVar[str] = "mysql"
    unsupported: ClassVar[Mapping[str, str]] = MYSQL_UNSUPPORTED
    aliases: ClassVar[Mapping[str, str]] = MYSQL_ALIASES
    docs_page: ClassVar[str] = "docs/mysql.md"

    database_server_id: int = Field(
        default_factory=lambda: random.randint(*SERVER_ID_RANGE),
        alias="database.server.id",
        gt=0,
        lt=2**32,
        description="This client's replication server id (unique among the server's replicas).",
    )
    database_include_list: tuple[str, ...] = Field((), alias="database.include.list")
    database_exclude_list: tuple[str, ...] = Field((), alias="database.exclude.list")
    snapshot_mode: Literal[
        "initial",
        "initial_only",
        "when_needed",
        "never",
        "no_data",
        "schema_only",
        "schema_only_recovery",
        "recovery",
        "always",
        "configuration_based",
    ] = Field("initial", alias="snapshot.mode")
    snapshot_locking_mode: Literal["minimal", "minimal_percona", "extended", "none"] = Field(
        "minimal", alias="snapshot.locking.mode"
    )
    snapshot_lock_timeout_ms: int = Field(10000, alias="snapshot.lock.timeout.ms", ge=0)
    snapshot_query_mode: Literal["select_all"] = Field("select_all", alias="snapshot.query.mode")
    time_precision_mode: Literal["adaptive_time_microseconds", "connect"] = Field(
        "adaptive_time_microseconds", alias="time.precision.mode"
    )
    bigint_unsigned_handling_mode: Literal["long", "precise"] = Field(
        "long", alias="bigint.unsigned.handling.mode"
    )
    binary_handling_mode: Literal["bytes", "base64", "base64-url-safe", "hex"] = Field(  # type: ignore[assignment]
        "bytes", alias="binary.handling.mode"
    )
    include_query: bool = Field(False, alias="include.query")
    gtid_source_includes: tuple[str, ...] = Field((), alias="gtid.source.includes")
    gtid_source_excludes: tuple[str, ...] = Field((), alias="gtid.source.excludes")
    gtid_source_filter_dml_events: bool = Field(True, alias="gtid.source.filter.dml.events")
    connect_timeout_ms: int = Field(30000, alias="connect.timeout.ms", gt=0)
    connect_keep_alive: bool = Field(True, alias="connect.keep.alive")
    connect_keep_alive_interval_ms: int = Field(60000, alias="connect.keep.alive.interval.ms", gt=0)
    database_ssl_mode: Literal[
        "disabled", "preferred", "required", "verify_ca", "verify_identity"
    ] = Field("preferred", alias="database.ssl.mode")
    database_ssl_ca: str = Field("", alias="database.ssl.ca")
    database_ssl_cert: str = Field("", alias="database.ssl.cert")
    database_ssl_key: str = Field("", alias="database.ssl.key")
    database_connection_time_zone: str | None = Field(None, alias="database.connectionTimeZone")
    enable_time_adjuster: bool = Field(True, alias="enable.time.adjuster")
    min_row_count_to_stream_results: int = Field(
        1000, alias="min.row.count.to.stream.results", ge=0
    )
    binlog_buffer_size: int = Field(0, alias="binlog.buffer.size", ge=0)

    def table_filters(self) -> dict[str, tuple[str, ...]]:
        """MySQL names its schemas databases."""
        return {
            "database.include.list": self.database_include_list,
            "database.exclude.list": self.database_exclude_list,
            "table.include.list": self.table_include_list,
            "table.exclude.list": self.table_exclude_list,
        }

    @field_validator("database_include_list", "database_exclude_list", "gtid_source_includes",
                     "gtid_source_excludes", mode="before")  # fmt: skip
    @classmethod
    def _split(cls, value: object) -> object:
        if isinstance(value, str):
            return tuple(p.strip() for p in value.split(",") if p.strip())
        return value

    @property
    def schema_snapshot_only(self) -> bool:
        """Modes that snapshot the structure and no rows."""
        return self.snapshot_mode in ("no_data", "schema_only")

    @property
    def rebuilds_history(self) -> bool:
        """``recovery``/``schema_only_recovery``: rebuild a lost schema history from the
        structure as it is now, then stream from the stored offset."""
        return self.snapshot_mode in ("recovery", "schema_only_recovery")


MODEL = MySqlProperties
"""The model :func:`cdcflow.capture.config.model_for` loads for ``mysql`` and ``mariadb``."""


def parse_properties(raw: Mapping[str, Any]) -> MySqlProperties:
    """Validate a MySQL connector's Debezium properties."""
    return _parse(raw, MySqlProperties)
