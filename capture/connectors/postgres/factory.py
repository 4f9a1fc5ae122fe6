"""Build the PostgreSQL connector from a CdcConnector (the registry's entry for ``postgresql``)."""

from __future__ import annotations

from cdcflow.capture.connectors.postgres.connection import (
    Endpoint,
    query_timeout_ms,
    split_statements,
)
from cdcflow.capture.connectors.postgres.connector import PostgresConnector
from cdcflow.capture.connectors.postgres.properties import PostgresProperties
from cdcflow.capture.registry import ConnectorContext
from cdcflow.capture.spi import Connector


def build(context: ConnectorContext) -> Connector:
    """The connector for ``spec.source.postgresql`` with the login and the properties (typed
    as the contract, so mypy checks that PostgresConnector fulfils it)."""
    resource, properties, login = context.resource, context.properties, context.login
    assert isinstance(properties, PostgresProperties), "the registry parsed another model"
    source = resource.spec.source.postgresql
    assert source is not None
    endpoint = Endpoint(
        host=context.host_override or source.host,
        port=source.port,
        database=source.database,
        user=login.user,
        password=login.password,
        sslmode=properties.database_sslmode
        if "database.sslmode" in resource.spec.config
        else source.ssl_mode,
        sslrootcert=properties.database_sslrootcert,
        sslcert=properties.database_sslcert,
        sslkey=properties.database_sslkey,
        sslpassword=login.ssl_password,
        keepalives=properties.database_tcp_keep_alive,
        initial_statements=split_statements(properties.database_initial_statements),
        query_timeout_ms=query_timeout_ms(properties.database_query_timeout_ms),
    )
    return PostgresConnector(
        endpoint=endpoint,
        properties=properties,
        filters=context.filters,
        version=context.version,
        stop=context.stop,
    )
