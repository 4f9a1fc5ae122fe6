"""The Db2 connector's properties: the engine's and schema history's, plus the ASN schemas,
snapshot isolation and the driver, as Debezium's Db2ConnectorConfig."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, ClassVar, Literal

from pydantic import Field

from cdcflow.capture.config import JAVA_ONLY, UNSUPPORTED_PROPERTIES, HistorizedProperties
from cdcflow.capture.config import parse_properties as _parse

DB2_UNSUPPORTED: Mapping[str, str] = MappingProxyType(
    {
        **UNSUPPORTED_PROPERTIES,
        "db2.platform": (
            "only Db2 for Linux, UNIX and Windows (LUW, Debezium's default) is supported; "
            "remove db2.platform or set it to LUW"
        ),
        "database.ssl.truststore": (
            f"{JAVA_ONLY} (a Java truststore); give the CA certificate as a PEM or ARM file "
            "with database.ssl.ca (or spec.source.db2.caSecretName)"
        ),
        "database.ssl.truststore.password": (
            f"{JAVA_ONLY} (a Java truststore's password); give the CA certificate as a file "
            "with database.ssl.ca"
        ),
        "streaming.query.timespan.seconds": (
            "cdcflow reads each poll window completely, streaming the change tables' rows "
            "(it never holds a window in memory), so windows need no time limit"
        ),
        "z.stop.lsn.ignore": "a Db2 for z/OS setting; cdcflow supports Db2 LUW",
        "read.only": (
            "a chunk read from a Db2 table can be placed among ASN's change rows only by a "
            "watermark row that ASN captures too (the log position ASN would need is not in "
            "its change tables); Debezium's Db2 connector has no read-only mode either"
        ),
    }
)


class Db2Properties(HistorizedProperties):
    """The Db2 connector's properties."""

    source_kind: ClassVar[str] = "db2"
    unsupported: ClassVar[Mapping[str, str]] = DB2_UNSUPPORTED
    docs_page: ClassVar[str] = "docs/db2.md"

    snapshot_mode: Literal[
        "initial",
        "initial_only",
        "when_needed",
        "no_data",
        "schema_only",
        "recovery",
        "schema_only_recovery",
        "always",
    ] = Field("initial", alias="snapshot.mode")
    snapshot_isolation_mode: Literal[
        "read_uncommitted", "read_committed", "repeatable_read", "exclusive"
    ] = Field("repeatable_read", alias="snapshot.isolation.mode")
    snapshot_lock_timeout_ms: int = Field(10000, alias="snapshot.lock.timeout.ms", ge=-1)
    cdc_control_schema: str = Field("ASNCDC", alias="cdc.control.schema", min_length=1)
    cdc_change_tables_schema: str = Field("ASNCDC", alias="cdc.change.tables.schema", min_length=1)
    time_precision_mode: Literal["adaptive", "adaptive_time_microseconds", "connect"] = Field(
        "adaptive", alias="time.precision.mode"
    )
    database_ssl_ca: str = Field("", alias="database.ssl.ca")
    connect_timeout_ms: int = Field(30000, alias="connect.timeout.ms", gt=0)
    db2_driver: str = Field(
        "ibm_db",
        alias="db2.driver",
        description="ibm_db, or module:attribute naming another DB-API driver for Db2's SQL.",
    )

    @property
    def schema_snapshot_only(self) -> bool:
        """Modes that snapshot the structure and no rows."""
        return self.snapshot_mode in ("no_data", "schema_only")

    @property
    def rebuilds_history(self) -> bool:
        """``recovery``/``schema_only_recovery``: rebuild a lost schema history from the
        structure as it is now, then stream from the stored offset."""
        return self.snapshot_mode in ("recovery", "schema_only_recovery")


MODEL = Db2Properties
"""The model :func:`cdcflow.capture.config.model_for` loads for ``db2``."""


def parse_properties(raw: Mapping[str, Any]) -> Db2Properties:
    """Validate a Db2 connector's Debezium properties."""
    return _parse(raw, Db2Properties)
