"""The CdcSnapshotSignal custom resource, the operator's own kind.

The CdcConnector model lives with the engine, in :mod:`cdcflow.capture.connector_resource`.

``CdcSnapshotSignal`` is a one-shot action, like Strimzi's KafkaRebalance: its spec is
immutable (a CEL rule in the CRD enforces it) and its UID is the signal id, so a retried
reconcile can never signal twice.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from cdcflow.capture.connector_resource import Metadata, Spec

SignalAction = Literal["execute", "stop", "pause", "resume"]


class ConnectorRef(Spec):
    """The CdcConnector in the same namespace."""

    name: str = Field(min_length=1, max_length=253, description="Name of the CdcConnector.")


class AdditionalCondition(Spec):
    """A filter that narrows the rows snapshotted from one table."""

    data_collection: str = Field(
        alias="dataCollection",
        min_length=1,
        max_length=512,
        description="schema.table (a regular expression).",
    )
    filter: str = Field(
        min_length=1,
        max_length=4096,
        description="SQL condition, e.g. created_at > '2026-01-01'.",
    )


class SnapshotSignalSpec(Spec):
    """What to ask the connector to do. Immutable once created."""

    connector_ref: ConnectorRef = Field(alias="connectorRef", description="Target connector.")
    action: SignalAction = Field(
        "execute", description="execute, stop, pause or resume a snapshot."
    )
    type: Literal["incremental", "blocking"] = Field(
        "incremental", description="incremental (chunked, while streaming) or blocking."
    )
    data_collections: list[Annotated[str, StringConstraints(max_length=512)]] = Field(
        default_factory=list,
        alias="dataCollections",
        max_length=100,
        description="Tables to snapshot (regular expressions over schema.table).",
    )
    additional_conditions: list[AdditionalCondition] = Field(
        default_factory=list,
        alias="additionalConditions",
        max_length=100,
        description="Per-table filters.",
    )
    surrogate_key: str = Field(
        "",
        alias="surrogateKey",
        max_length=253,
        description="Column to chunk by when a table has no key.",
    )
    ttl_seconds_after_finished: int | None = Field(
        None,
        alias="ttlSecondsAfterFinished",
        ge=0,
        description="Delete this resource this long after it finished (unset: keep).",
    )

    @model_validator(mode="after")
    def _collections_for_execute(self) -> SnapshotSignalSpec:
        if self.action == "execute" and not self.data_collections:
            raise ValueError("action execute needs at least one entry in dataCollections")
        return self

    def signal(self) -> tuple[str, str]:
        """The Debezium signal (type column, data JSON) this spec stands for."""
        data: dict[str, Any] = {"type": self.type.upper()}
        if self.data_collections:
            data["data-collections"] = self.data_collections
        if self.additional_conditions:
            data["additional-conditions"] = [
                {"data-collection": c.data_collection, "filter": c.filter}
                for c in self.additional_conditions
            ]
        if self.surrogate_key:
            data["surrogate-key"] = self.surrogate_key
        return f"{self.action}-snapshot", orjson.dumps(data).decode()


class CdcSnapshotSignal(BaseModel):
    """An ad hoc snapshot request for a CdcConnector (cdcflow.io/v1alpha1 CdcSnapshotSignal)."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)
    api_version: Literal["cdcflow.io/v1alpha1"] = Field("cdcflow.io/v1alpha1", alias="apiVersion")
    kind: Literal["CdcSnapshotSignal"] = "CdcSnapshotSignal"
    metadata: Metadata
    spec: SnapshotSignalSpec
