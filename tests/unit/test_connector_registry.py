"""Connectors are chosen by the source kind and loaded by name; a missing driver says which
extra installs it."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

from cdcflow.capture import registry
from cdcflow.capture.capabilities import Cleanup, Heartbeats, Historized, LogMessages, SignalWriter
from cdcflow.capture.config import ConfigError
from cdcflow.capture.connector_resource import Source, parse_connector
from cdcflow.capture.credentials import Login
from cdcflow.capture.filters import Filters
from cdcflow.capture.kinds import KINDS, SourceKind
from cdcflow.capture.spi import TableId

POSTGRES = {"postgresql": {"host": "h", "database": "d"}}


def _document(
    config: dict[str, str] | None = None, source: dict[str, Any] | None = None
) -> dict[str, Any]:
    return {
        "apiVersion": "cdcflow.io/v1alpha1",
        "kind": "CdcConnector",
        "metadata": {"name": "shop"},
        "spec": {"source": source or POSTGRES, "config": config or {}},
    }


def _context(
    config: dict[str, str] | None = None, source: dict[str, Any] | None = None
) -> registry.ConnectorContext:
    resource = parse_connector(_document(config, source))
    properties = resource.properties()
    return registry.ConnectorContext(
        resource=resource,
        properties=properties,
        filters=Filters.from_properties(properties),
        login=Login("u", "p"),
        version="test",
    )


def test_the_postgresql_source_builds_the_postgresql_connector_with_its_capabilities() -> None:
    connector: Any = registry.build_connector(_context())
    assert type(connector).__name__ == "PostgresConnector"
    for capability in (Heartbeats, LogMessages, SignalWriter, Cleanup):
        assert isinstance(connector, capability), capability.__name__


def test_a_connector_whose_driver_is_missing_names_the_extra_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    context = _context()
    missing = SourceKind(package="missing_driver", extra="postgres")
    monkeypatch.setitem(registry.KINDS, "postgresql", missing)
    with pytest.raises(ConfigError, match=r"pip install 'cdcflow\[postgres\]'"):
        registry.build_connector(context)


def test_every_registered_kind_is_a_spec_source_field_with_a_connector_package() -> None:
    assert set(Source.model_fields) == set(KINDS)  # spec.source names every kind, no other
    for registered in KINDS.values():
        assert importlib.util.find_spec(registered.factory_module) is not None
        assert importlib.util.find_spec(registered.properties_module) is not None


def test_each_connector_validates_its_own_properties() -> None:
    from cdcflow.capture.connectors.postgres.properties import PostgresProperties

    properties = _context().properties
    assert isinstance(properties, PostgresProperties) and properties.slot_name == "shop"
    with pytest.raises(ConfigError, match=r"keeps no schema history"):
        parse_connector(_document({"database.history.kafka.topic": "history"}))
    with pytest.raises(ConfigError, match=r"unknown connector property: `database.server.id`"):
        parse_connector(_document({"database.server.id": "5400"}))  # MySQL's, not PostgreSQL's


def test_a_configuration_with_two_mistakes_names_both() -> None:
    with pytest.raises(ConfigError) as refused:
        parse_connector(_document({"snapshot.mod": "never", "heartbeat.interval.ms": "soon"}))
    message = str(refused.value)
    assert "unknown connector property: `snapshot.mod` (did you mean `snapshot.mode`?)" in message
    assert "heartbeat.interval.ms" in message and "integer" in message


@pytest.mark.parametrize("kind", ["mysql", "mariadb"])
def test_a_mysql_or_mariadb_source_builds_the_binlog_connector_named_for_its_kind(
    kind: str,
) -> None:
    from cdcflow.capture.connectors.mysql.properties import MySqlProperties

    context = _context(
        {"database.include.list": "inventory", "database.history.kafka.topic": "h"},
        {kind: {"host": "db", "serverId": 5501}},
    )
    connector: Any = registry.build_connector(context)

    assert type(connector).__name__ == "MySqlConnector"
    assert isinstance(connector, Historized) and isinstance(connector, SignalWriter)
    assert not isinstance(connector, Cleanup)  # a binlog reader leaves nothing on the server
    assert connector.source_schema["name"] == f"io.debezium.connector.{kind}.Source"
    assert (connector.endpoint.host, connector.endpoint.port) == ("db", 3306)
    assert connector.properties.database_server_id == 5501
    properties = context.properties
    assert isinstance(properties, MySqlProperties)
    assert properties.schema_history_internal_kafka_topic == "h"  # the deprecated alias
    assert connector.filters.captures(TableId("inventory", "orders"))
    assert not connector.filters.captures(TableId("other", "orders"))


def test_mysql_refuses_postgresql_properties_and_java_only_ones() -> None:
    mysql = {"mysql": {"host": "db"}}
    with pytest.raises(ConfigError, match=r"unknown connector property: `slot.name`"):
        parse_connector(_document({"slot.name": "s"}, mysql))
    with pytest.raises(ConfigError, match=r"database.ssl.ca"):
        parse_connector(_document({"database.ssl.truststore": "/x.jks"}, mysql))


def test_a_db2_source_builds_the_asn_connector_with_ibm_db_unless_another_driver_is_named() -> None:
    source = {"db2": {"host": "db2", "database": "TESTDB"}}
    connector: Any = registry.build_connector(
        _context({"table.include.list": "DB2INST1\\..*"}, source)
    )

    assert type(connector).__name__ == "Db2Connector"
    assert isinstance(connector, Historized) and isinstance(connector, SignalWriter)
    assert not isinstance(connector, Cleanup)  # polling change tables leaves nothing behind
    assert connector.source_schema["name"] == "io.debezium.connector.db2.Source"
    endpoint = connector.endpoint
    assert (endpoint.host, endpoint.port, endpoint.database, endpoint.ssl) == (
        "db2",
        50000,
        "TESTDB",
        False,
    )
    assert type(connector.driver).__name__ == "IbmDbDriver"
    with pytest.raises(ConfigError, match=r"db2.platform.*LUW"):
        parse_connector(_document({"db2.platform": "ZOS"}, source))
    with pytest.raises(ConfigError, match=r"unknown connector property: `slot.name`"):
        parse_connector(_document({"slot.name": "s"}, source))
