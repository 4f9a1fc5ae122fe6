"""The connector registry: ``spec.source.<kind>`` to the module that builds its connector.

Connector modules are imported by name only when a connector of their kind is built, so the
engine never imports a connector (an import-linter contract holds it to that) and a base
install without a database driver still runs ``cdcflow --help``. Each connector package has a
``factory`` module with ``build(context) -> Connector``.
"""

from __future__ import annotations

import importlib
import threading
from dataclasses import dataclass, field
from typing import Protocol, cast

from cdcflow.capture.config import ConfigError, EngineProperties
from cdcflow.capture.connector_resource import CdcConnector
from cdcflow.capture.credentials import Login
from cdcflow.capture.filters import Filters
from cdcflow.capture.kinds import KINDS
from cdcflow.capture.spi import Connector


@dataclass(frozen=True)
class ConnectorContext:
    """Everything a connector is built from."""

    resource: CdcConnector
    properties: EngineProperties
    filters: Filters
    login: Login
    version: str
    host_override: str | None = None
    stop: threading.Event = field(default_factory=threading.Event)
    """Set when the engine is asked to stop: a connector waiting (to retry, for a slot) gives
    up at once instead of holding a SIGTERM for its whole wait."""


class Factory(Protocol):
    """A connector package's ``factory`` module."""

    def build(self, context: ConnectorContext) -> Connector: ...


def build_connector(context: ConnectorContext) -> Connector:
    """The connector of ``context.resource``'s source kind."""
    kind = context.resource.spec.source.kind
    registered = KINDS.get(kind)
    if registered is None:
        raise ConfigError(f"no connector for spec.source.{kind}; known: {', '.join(KINDS)}")
    try:
        factory = cast(Factory, importlib.import_module(registered.factory_module))
    except ModuleNotFoundError as missing:
        raise ConfigError(
            f"the {kind} connector needs {missing.name}, which is not installed: "
            f"pip install 'cdcflow[{registered.extra}]'"
        ) from None
    return factory.build(context)
