"""The source kinds cdcflow captures, registered once: ``spec.source.<kind>`` to the connector
package that captures it and the pip extra that installs its driver.

Connector packages are named here, never imported: the engine, the configuration and the
registry load a package's ``factory`` or ``properties`` module by name only when a connector
of its kind is built (a base install without database drivers still parses configuration).
"""

from __future__ import annotations

from dataclasses import dataclass

CONNECTORS_PACKAGE = "cdcflow.capture.connectors"


@dataclass(frozen=True)
class SourceKind:
    """One ``spec.source`` kind."""

    package: str
    """Its connector package under ``cdcflow.capture.connectors`` (MariaDB's is ``mysql``)."""
    extra: str
    """The pip extra that installs its driver."""

    @property
    def factory_module(self) -> str:
        return f"{CONNECTORS_PACKAGE}.{self.package}.factory"

    @property
    def properties_module(self) -> str:
        return f"{CONNECTORS_PACKAGE}.{self.package}.properties"


KINDS = {
    "postgresql": SourceKind(package="postgres", extra="postgres"),
    "mysql": SourceKind(package="mysql", extra="mysql"),
    "mariadb": SourceKind(package="mysql", extra="mysql"),
    "db2": SourceKind(package="db2", extra="db2"),
}
"""Every ``spec.source`` kind, in the order documentation and errors list them."""
