"""The PostgreSQL connector's properties: the engine's plus slots, publications, pgoutput,
libpq TLS, LSN flushing and the PostgreSQL type modes, as Debezium's PostgresConnectorConfig."""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, ClassVar, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from cdcflow.capture.config import (
    DEPRECATED_ALIASES,
    JAVA_ONLY,
    UNSUPPORTED_PROPERTIES,
    EngineProperties,
)
from cdcflow.capture.config import parse_properties as _parse

log = logging.getLogger(__name__)

#: The heartbeat interval Debezium falls back to under ``lsn.flush.mode=connector_and_driver``.
CONNECTOR_AND_DRIVER_HEARTBEAT_MS = 600000
#: ``replica.identity.autoset.values`` entries, as Debezium's ``REPLICA_AUTO_SET_PATTERN``.
REPLICA_IDENTITY_ENTRY = re.compile(
    r"^\s*(?P<table>[^\s:]+):(?P<identity>DEFAULT|INDEX (?P<index>.\w*)|FULL|NOTHING)\s*$",
    re.IGNORECASE,
)
_NO_HISTORY = (
    "the PostgreSQL connector keeps no schema history: pgoutput sends each table's structure "
    "with its changes. Leave it out"
)
#: What the PostgreSQL connector refuses beyond the engine's refusals.
POSTGRES_UNSUPPORTED: Mapping[str, str] = MappingProxyType(
    {
        **UNSUPPORTED_PROPERTIES,
        "database.sslfactory": (
            f"{JAVA_ONLY} (an SSLSocketFactory); cdcflow connects with libpq. Use "
            "database.sslmode, database.sslrootcert, database.sslcert and database.sslkey"
        ),
        "database.include.list": (
            "a PostgreSQL connector captures the one database of spec.source.postgresql "
            "(Debezium's PostgreSQL connector matches it against table ids that carry no "
            "database name, so an include list leaves the stream empty). Use "
            "schema.include.list / table.include.list"
        ),
        "database.exclude.list": (
            "a PostgreSQL connector captures the one database of spec.source.postgresql; to "
            "capture another, run another connector. Use schema.exclude.list / "
            "table.exclude.list to leave tables out"
        ),
        "snapshot.max.threads.multiplier": (
            "Debezium's chunked parallel snapshot splits tables into key ranges; cdcflow reads "
            "whole tables on snapshot.max.threads connections of one exported snapshot (the "
            "legacy.snapshot.max.threads=true way). Raise snapshot.max.threads instead"
        ),
        "schema.history.internal.": _NO_HISTORY,
        "database.history.": _NO_HISTORY,
    }
)
POSTGRES_ALIASES: Mapping[str, str] = MappingProxyType(
    {**DEPRECATED_ALIASES, "internal.legacy.snapshot.max.threads": "legacy.snapshot.max.threads"}
)
_CUSTOM_NAMES = {
    "snapshot_locking_mode": "snapshot.locking.mode.custom.name",
    "snapshot_query_mode": "snapshot.query.mode.custom.name",
}


@dataclass(frozen=True)
class ReplicaIdentityRule:
    """One ``replica.identity.autoset.values`` entry: a table regex and the identity it gets.

    ``identity`` is what ``ALTER TABLE … REPLICA IDENTITY`` takes and what Debezium compares
    the current one with: ``DEFAULT``, ``FULL``, ``NOTHING`` or ``USING INDEX <name>``.
    """

    table: str
    identity: str

    def matches(self, table: str) -> bool:
        """Whether ``table`` (``schema.table``) fully matches, case-insensitively."""
        return re.fullmatch(self.table, table, re.IGNORECASE) is not None

    @property
    def index(self) -> str | None:
        """The index name of a ``USING INDEX`` identity."""
        prefix = "USING INDEX "
        return self.identity.removeprefix(prefix) if self.identity.startswith(prefix) else None


def parse_replica_identities(text: str) -> tuple[ReplicaIdentityRule, ...]:
    """``replica.identity.autoset.values``: ``<table regex>:<identity>`` entries, comma
    separated, each identity ``DEFAULT``, ``FULL``, ``NOTHING`` or ``INDEX <name>``."""
    if not text.strip():
        raise ValueError("replica.identity.autoset.values must not be empty")
    rules = []
    for entry in text.split(","):
        found = REPLICA_IDENTITY_ENTRY.match(entry)
        if found is None:
            raise ValueError(
                f"replica.identity.autoset.values entry {entry.strip()!r} is not "
                "<schema>.<table>:<DEFAULT|FULL|NOTHING|INDEX name>"
            )
        try:
            re.compile(found["table"])
        except re.error as error:
            raise ValueError(f"{found['table']!r} is not a regular expression: {error}") from None
        index = found["index"]
        identity = f"USING INDEX {index}" if index else found["identity"].upper()
        rules.append(ReplicaIdentityRule(found["table"], identity))
    return tuple(rules)


MAX_IDENTIFIER = 63
"""PostgreSQL's longest identifier (NAMEDATALEN - 1)."""


def server_object_name(prefix: str) -> str:
    """A slot name made from a topic prefix: lower case, ``[a-z0-9_]`` only, at most
    :data:`MAX_IDENTIFIER` characters."""
    return re.sub(r"[^a-z0-9_]", "_", prefix.lower())[:MAX_IDENTIFIER] or "cdcflow"


class PostgresProperties(EngineProperties):
    """The PostgreSQL connector's properties."""

    source_kind: ClassVar[str] = "postgresql"
    unsupported: ClassVar[Mapping[str, str]] = POSTGRES_UNSUPPORTED
    aliases: ClassVar[Mapping[str, str]] = POSTGRES_ALIASES
    docs_page: ClassVar[str] = "docs/postgresql.md"

    plugin_name: Literal["pgoutput"] = Field("pgoutput", alias="plugin.name")
    slot_name: str = Field(
        alias="slot.name",
        pattern=r"^[a-z0-9_]{1,63}$",
        description="Replication slot (default: the topic prefix as a slot name).",
    )
    slot_drop_on_stop: bool = Field(False, alias="slot.drop.on.stop")
    publication_name: str = Field(
        alias="publication.name",
        max_length=63,
        description="Publication (default: <slot name>_publication).",
    )
    publication_autocreate_mode: Literal["all_tables", "disabled", "filtered"] = Field(
        "all_tables", alias="publication.autocreate.mode"
    )
    snapshot_mode: Literal[
        "initial",
        "always",
        "never",
        "no_data",
        "initial_only",
        "when_needed",
        "exported",
        "configuration_based",
    ] = Field("initial", alias="snapshot.mode")
    hstore_handling_mode: Literal["json", "map"] = Field("json", alias="hstore.handling.mode")
    interval_handling_mode: Literal["numeric", "string"] = Field(
        "numeric", alias="interval.handling.mode"
    )
    include_unknown_datatypes: bool = Field(False, alias="include.unknown.datatypes")
    status_update_interval_ms: int = Field(10000, alias="status.update.interval.ms", gt=0)
    database_sslmode: Literal[
        "disable", "allow", "prefer", "require", "verify-ca", "verify-full"
    ] = Field("prefer", alias="database.sslmode")
    database_sslrootcert: str = Field("", alias="database.sslrootcert")
    database_sslcert: str = Field(
        "", alias="database.sslcert", description="Client certificate file (libpq sslcert)."
    )
    database_sslkey: str = Field(
        "", alias="database.sslkey", description="Client private key file (libpq sslkey)."
    )
    database_tcp_keep_alive: bool = Field(
        True, alias="database.tcpKeepAlive", description="TCP keepalives (libpq keepalives)."
    )
    money_fraction_digits: int = Field(
        2, alias="money.fraction.digits", ge=0, le=1000, description="Scale of money decimals."
    )
    schema_refresh_mode: Literal["columns_diff", "columns_diff_exclude_unchanged_toast"] = Field(
        "columns_diff", alias="schema.refresh.mode"
    )
    slot_max_retries: int = Field(6, alias="slot.max.retries", ge=0)
    slot_retry_delay_ms: int = Field(10000, alias="slot.retry.delay.ms", ge=0)
    slot_stream_params: str = Field("", alias="slot.stream.params")
    stream_in_progress_transactions: bool = Field(
        True,
        alias="stream.in.progress.transactions",
        description="cdcflow: a transaction larger than the server's logical_decoding_work_mem "
        "is streamed while it runs (pgoutput protocol 2, PostgreSQL 14+) and kept on the "
        "capture's disk ($TMPDIR) until it commits, instead of spilled on the server's; events "
        "are emitted at commit as always.",
    )
    snapshot_lock_timeout_ms: int = Field(10000, alias="snapshot.lock.timeout.ms", ge=0)
    snapshot_locking_mode: Literal["none", "shared"] = Field("none", alias="snapshot.locking.mode")
    snapshot_query_mode: Literal["select_all"] = Field("select_all", alias="snapshot.query.mode")
    publish_via_partition_root: bool = Field(False, alias="publish.via.partition.root")
    xmin_fetch_interval_ms: int = Field(0, alias="xmin.fetch.interval.ms", ge=0)
    lsn_flush_mode: Literal["connector", "manual", "connector_and_driver"] | None = Field(
        None, alias="lsn.flush.mode", description="Default connector (or flush.lsn.source)."
    )
    flush_lsn_source: bool | None = Field(
        None, alias="flush.lsn.source", description="Deprecated: use lsn.flush.mode."
    )
    lsn_flush_timeout_ms: int = Field(30000, alias="lsn.flush.timeout.ms", gt=0)
    lsn_flush_timeout_action: Literal["fail", "warn", "ignore"] = Field(
        "fail", alias="lsn.flush.timeout.action"
    )
    snapshot_isolation_mode: Literal[
        "serializable", "repeatable_read", "read_committed", "read_uncommitted"
    ] = Field("serializable", alias="snapshot.isolation.mode")
    replica_identity_autoset_values: str | None = Field(
        None, alias="replica.identity.autoset.values"
    )
    slot_failover: bool = Field(False, alias="slot.failover")

    def server_objects(self) -> tuple[str, ...]:
        return (f"replication slot {self.slot_name}", f"publication {self.publication_name}")

    @model_validator(mode="before")
    @classmethod
    def _names_of_this_connector(cls, data: Any) -> Any:
        """Slot and publication named after the topic prefix unless set: two connectors on
        one database never share them by default (Debezium's ``debezium`` and
        ``dbz_publication`` are shared, and deleting one connector dropped the other's
        publication)."""
        if not isinstance(data, dict) or not isinstance(data.get("topic.prefix"), str):
            return data
        slot = str(data.get("slot.name") or server_object_name(data["topic.prefix"]))
        suffix = "_publication"
        publication = f"{slot[: MAX_IDENTIFIER - len(suffix)]}{suffix}"
        return {"slot.name": slot, "publication.name": publication, **data}

    @field_validator("snapshot_locking_mode", "snapshot_query_mode", mode="before")
    @classmethod
    def _no_custom_plugins(cls, value: object, info: ValidationInfo) -> object:
        if isinstance(value, str) and value.strip().lower() == "custom":
            named_by = _CUSTOM_NAMES.get(info.field_name or "", "a custom.name property")
            raise ValueError(
                f"'custom' loads the Java implementation {named_by} names, which cdcflow "
                "cannot run; use one of the built-in modes"
            )
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("slot_stream_params")
    @classmethod
    def _stream_params(cls, value: str) -> str:
        if "binary" in parse_stream_params(value, warn=False):
            raise ValueError(
                "binary=… would make pgoutput send values in binary; cdcflow decodes the text "
                "format, leave it out"
            )
        return value

    @field_validator("replica_identity_autoset_values")
    @classmethod
    def _replica_identities(cls, value: str | None) -> str | None:
        if value is not None:
            parse_replica_identities(value)
        return value

    @property
    def stream_params(self) -> dict[str, str]:
        """``slot.stream.params`` as pgoutput options."""
        return parse_stream_params(self.slot_stream_params)

    @property
    def flush_mode(self) -> str:
        """``lsn.flush.mode``, else the deprecated ``flush.lsn.source`` (true: ``connector``,
        false: ``manual``), else ``connector``, as Debezium resolves them."""
        if self.lsn_flush_mode is not None:
            return self.lsn_flush_mode
        if self.flush_lsn_source is not None:
            return "connector" if self.flush_lsn_source else "manual"
        return "connector"

    @property
    def effective_heartbeat_interval_ms(self) -> int:
        """``heartbeat.interval.ms``; Debezium sets it to 10 minutes when it is 0 under
        ``lsn.flush.mode=connector_and_driver`` without transaction metadata."""
        if (
            self.flush_mode == "connector_and_driver"
            and not self.heartbeat_interval_ms
            and not self.provide_transaction_metadata
        ):
            return CONNECTOR_AND_DRIVER_HEARTBEAT_MS
        return self.heartbeat_interval_ms

    @property
    def replica_identities(self) -> tuple[ReplicaIdentityRule, ...]:
        """``replica.identity.autoset.values`` as rules."""
        if self.replica_identity_autoset_values is None:
            return ()
        return parse_replica_identities(self.replica_identity_autoset_values)

    def warn_deprecated(self) -> None:
        if self.flush_lsn_source is not None and self.lsn_flush_mode is None:
            log.warning(
                "property flush.lsn.source is deprecated; use lsn.flush.mode=%s", self.flush_mode
            )


MODEL = PostgresProperties
"""The model :func:`cdcflow.capture.config.model_for` loads for ``postgresql``."""


def parse_properties(raw: Mapping[str, Any]) -> PostgresProperties:
    """Validate a PostgreSQL connector's Debezium properties."""
    return _parse(raw, PostgresProperties)


def parse_stream_params(text: str, *, warn: bool = True) -> dict[str, str]:
    """``slot.stream.params``: ``a=b;c=d``; a malformed entry is skipped with a warning, as in
    Debezium (whose ``String.split`` also drops trailing empty parts: ``a=`` is malformed)."""
    params: dict[str, str] = {}
    for entry in filter(None, text.split(";")):
        parts = entry.split("=")
        while parts and not parts[-1]:
            parts.pop()
        if len(parts) == 2:
            params[parts[0]] = parts[1]
        elif warn:
            log.warning("The following slot.stream.params value is invalid: %s", entry)
    return params
