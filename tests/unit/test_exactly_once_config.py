"""exactly.once.support=required as a user configures it: refused, with the fix, unless the
records, offsets and schema history can all commit in one Kafka transaction."""

from __future__ import annotations

from typing import Any

import pytest

from cdcflow.capture.assembly import refuse_without_transactions, transactional_id
from cdcflow.capture.config import ConfigError
from cdcflow.capture.connector_resource import CdcConnector, parse_connector

POSTGRES = {"postgresql": {"host": "db", "database": "shop"}}
MARIADB = {"mariadb": {"host": "db", "serverId": 5501}}


def _connector(source: dict[str, Any], *, offsets: str = "kafka", **config: str) -> CdcConnector:
    return parse_connector(
        {
            "apiVersion": "cdcflow.io/v1alpha1",
            "kind": "CdcConnector",
            "metadata": {"name": "shop", "namespace": "sales"},
            "spec": {
                "source": source,
                "kafka": {"bootstrapServers": "kafka:9092"},
                "offsets": {"store": offsets},
                "config": {"exactly.once.support": "required", **config},
            },
        }
    )


def _refusal(resource: CdcConnector, *, sink: Any = "kafka") -> str:
    with pytest.raises(ConfigError) as refused:
        refuse_without_transactions(resource, resource.properties(), sink=sink)
    return str(refused.value)


def test_offsets_outside_kafka_are_refused_with_the_setting_to_change() -> None:
    assert "spec.offsets.store: kafka" in _refusal(_connector(POSTGRES, offsets="file"))


def test_a_schema_history_outside_kafka_is_refused() -> None:
    resource = _connector(
        MARIADB,
        **{"schema.history.internal": "io.debezium.storage.file.history.FileSchemaHistory"},
    )
    assert "schema history in Kafka" in _refusal(resource)


def test_the_stdout_sink_is_refused() -> None:
    assert "needs the Kafka sink" in _refusal(_connector(POSTGRES), sink="stdout")


def test_everything_in_kafka_is_accepted_under_one_transactional_id_per_connector() -> None:
    resource = _connector(MARIADB)
    properties = resource.properties()
    assert properties.exactly_once
    refuse_without_transactions(resource, properties, sink="kafka")
    assert transactional_id(resource) == "cdcflow-sales-shop"


def test_requested_is_kafka_connects_default_and_means_at_least_once() -> None:
    assert (
        not _connector(POSTGRES, **{"exactly.once.support": "requested"}).properties().exactly_once
    )
