"""Build the Db2 connector from a CdcConnector (the registry's entry for ``db2``)."""

from __future__ import annotations

from cdcflow.capture.connector_resource import Db2Source
from cdcflow.capture.connectors.db2.connection import Endpoint, load_driver
from cdcflow.capture.connectors.db2.connector import Db2Connector
from cdcflow.capture.connectors.db2.properties import Db2Properties
from cdcflow.capture.registry import ConnectorContext
from cdcflow.capture.spi import Connector


def build(context: ConnectorContext) -> Connector:
    """The connector for ``spec.source.db2`` (typed as the contract, so mypy checks that
    Db2Connector fulfils it)."""
    properties, login = context.properties, context.login
    assert isinstance(properties, Db2Properties), "the registry parsed another model"
    source = context.resource.spec.source.selected
    assert isinstance(source, Db2Source)
    endpoint = Endpoint(
        host=context.host_override or source.host,
        port=source.port,
        database=source.database,
        user=login.user,
        password=login.password,
        ssl=source.ssl or bool(properties.database_ssl_ca),
        ssl_ca=properties.database_ssl_ca,
        connect_timeout_s=properties.connect_timeout_ms / 1000,
        driver=properties.db2_driver,
    )
    return Db2Connector(
        endpoint=endpoint,
        driver=load_driver(properties.db2_driver),
        properties=properties,
        filters=context.filters,
        version=context.version,
    )
