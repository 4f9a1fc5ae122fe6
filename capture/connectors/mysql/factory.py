"""Build the MySQL/MariaDB connector from a CdcConnector (the registry's entry for ``mysql``
and ``mariadb``)."""

from __future__ import annotations

import dataclasses

from cdcflow.capture.connector_resource import MySqlSource
from cdcflow.capture.connectors.mysql.connection import Endpoint, split_statements
from cdcflow.capture.connectors.mysql.connector import MySqlConnector
from cdcflow.capture.connectors.mysql.properties import MySqlProperties
from cdcflow.capture.filters import Filters, compile_patterns
from cdcflow.capture.registry import ConnectorContext
from cdcflow.capture.spi import Connector


def build(context: ConnectorContext) -> Connector:
    """The connector for ``spec.source.mysql`` or ``spec.source.mariadb`` (typed as the
    contract, so mypy checks that MySqlConnector fulfils it)."""
    resource, properties, login = context.resource, context.properties, context.login
    assert isinstance(properties, MySqlProperties), "the registry parsed another model"
    kind = resource.spec.source.kind
    source = resource.spec.source.selected
    assert isinstance(source, MySqlSource)
    config = resource.spec.config
    if source.server_id is not None and "database.server.id" not in config:
        properties = properties.model_copy(update={"database_server_id": source.server_id})
    endpoint = Endpoint(
        host=context.host_override or source.host,
        port=source.port,
        user=login.user,
        password=login.password,
        ssl_mode=properties.database_ssl_mode if "database.ssl.mode" in config else source.ssl_mode,
        ssl_ca=properties.database_ssl_ca,
        ssl_cert=properties.database_ssl_cert,
        ssl_key=properties.database_ssl_key,
        connect_timeout_s=properties.connect_timeout_ms / 1000,
        # TIMESTAMP values are read as text in this zone; UTC unless one is configured.
        time_zone=properties.database_connection_time_zone or "+00:00",
        initial_statements=split_statements(properties.database_initial_statements),
        product="MariaDB" if kind == "mariadb" else "MySQL",
    )
    return MySqlConnector(
        endpoint=endpoint,
        properties=properties,
        filters=_database_filters(context, properties),
        version=context.version,
        flavor=kind,
    )


def _database_filters(context: ConnectorContext, properties: MySqlProperties) -> Filters:
    """``database.include.list``/``exclude.list`` filter MySQL's databases, which the engine's
    filters know as the tables' schemas."""
    filters = context.filters
    if properties.database_include_list:
        filters = dataclasses.replace(
            filters, schema_include=compile_patterns(properties.database_include_list)
        )
    if properties.database_exclude_list:
        filters = dataclasses.replace(
            filters, schema_exclude=compile_patterns(properties.database_exclude_list)
        )
    return filters
