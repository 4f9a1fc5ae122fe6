"""exactly.once.support=required as a user configures it: refused, with the fix, unless the
records, offsets and schema history can all commit in one Kafka transaction."""

from __future__ import annotations

from typing import Any

import pytest

from cdcflow.capture.assembly import build_engine, transactional_id
from cdcflow.capture.config import ConfigError
from cdcflow.capture.connector_resource import CdcConnector, parse_connector
from cdcflow.capture.credentials import Login

POSTGRES = {"postgresql": {"host": "db", "database": "shop"}}
MARIADB = {"mariadb": {"host": "db", "serverId": 5501}}


def _document(source: dict[str, Any], *, offsets: str = "kafka", **config: str) -> dict[str, Any]:
    return {
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


def _connector(source: dict[str, Any], **config: str) -> CdcConnector:
    return parse_connector(_document(source, **config))


def _refusal(document: dict[str, Any]) -> str:
    """What validating the resource (as the operator and ``cdcflow capture`` do) says."""
    with pytest.raises(ConfigError) as refused:
        parse_connector(document)
    return str(refused.value)


def test_offsets_outside_kafka_are_refused_with_the_setting_to_change() -> None:
    assert "spec.offsets.store: kafka" in _refusal(_document(POSTGRES, offsets="file"))


def test_a_schema_history_outside_kafka_is_refused() -> None:
    file_history = "io.debezium.storage.file.history.FileSchemaHistory"
    document = _document(MARIADB, **{"schema.history.internal": file_history})
    assert "schema history in Kafka" in _refusal(document)


def test_the_stdout_sink_is_refused() -> None:
    with pytest.raises(ConfigError, match="needs the Kafka sink"):
        build_engine(_connector(POSTGRES), login=Login("u", "p"), sink="stdout")


def test_everything_in_kafka_is_accepted_under_one_transactional_id_per_connector() -> None:
    resource = _connector(MARIADB)
    assert resource.properties().exactly_once
    assert transactional_id(resource) == "cdcflow-sales-shop"


def test_requested_is_kafka_connects_default_and_means_at_least_once() -> None:
    assert (
        not _connector(POSTGRES, **{"exactly.once.support": "requested"}).properties().exactly_once
    )
