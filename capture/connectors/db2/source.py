"""The Db2 ``source`` block: Debezium's ``io.debezium.connector.db2.Source``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cdcflow.capture.connectors.db2.lsn import Lsn
from cdcflow.capture.spi import ConnectSchema, TableId

SOURCE_SCHEMA: ConnectSchema = {
    "type": "struct",
    "optional": False,
    "name": "io.debezium.connector.db2.Source",
    "fields": [
        {"type": "string", "optional": False, "field": "version"},
        {"type": "string", "optional": False, "field": "connector"},
        {"type": "string", "optional": False, "field": "name"},
        {"type": "int64", "optional": False, "field": "ts_ms"},
        {
            "type": "string",
            "optional": True,
            "name": "io.debezium.data.Enum",
            "version": 1,
            "parameters": {
                "allowed": "true,first,first_in_data_collection,last_in_data_collection,"
                "last,false,incremental"
            },
            "default": "false",
            "field": "snapshot",
        },
        {"type": "string", "optional": False, "field": "db"},
        {"type": "string", "optional": True, "field": "sequence"},
        {"type": "int64", "optional": True, "field": "ts_us"},
        {"type": "int64", "optional": True, "field": "ts_ns"},
        {"type": "string", "optional": False, "field": "schema"},
        {"type": "string", "optional": False, "field": "table"},
        {"type": "string", "optional": True, "field": "change_lsn"},
        {"type": "string", "optional": True, "field": "commit_lsn"},
    ],
    "version": 1,
}


@dataclass(frozen=True)
class SourceBlock:
    """Builds ``source`` dicts: the connector's fixed fields plus an event's own."""

    version: str
    server: str
    database: str

    def block(
        self,
        *,
        ts_ms: int,
        table: TableId,
        commit_lsn: Lsn | None,
        change_lsn: Lsn | None = None,
        snapshot: str = "false",
    ) -> dict[str, Any]:
        return {
            "version": self.version,
            "connector": "db2",
            "name": self.server,
            "ts_ms": ts_ms,
            "snapshot": snapshot,
            "db": self.database,
            "sequence": None,
            "ts_us": ts_ms * 1000,
            "ts_ns": ts_ms * 1_000_000,
            "schema": table.schema,
            "table": table.table,
            "change_lsn": str(change_lsn) if change_lsn is not None else None,
            "commit_lsn": str(commit_lsn) if commit_lsn is not None else None,
        }
