"""Optional dependencies of the command line: which pip extra installs which module.

A base install (``pip install cdcflow``) lists every command; a command that needs a module
of an extra imports it when it runs. :class:`ExtrasGroup` turns the ``ModuleNotFoundError``
of such an import into one line naming the extra to install, instead of a traceback.
"""

from __future__ import annotations

import importlib
from typing import Any

import click

MODULE_EXTRAS = {
    "psycopg": "postgres",
    "pymysql": "mysql",
    "pymysqlreplication": "mysql",
    "ibm_db": "db2",
    "confluent_kafka": "kafka",
    "kopf": "operator",
    "kubernetes": "operator",
    "pyspark": "spark",
    "delta": "spark",
}
"""Top-level module of each optional dependency, and the extra of pyproject.toml installing it."""


def missing_module(error: ModuleNotFoundError) -> str | None:
    """The optional top-level module whose absence raised ``error``; None for any other one."""
    top = (error.name or "").partition(".")[0]
    return top if top in MODULE_EXTRAS else None


def hint(command: str, module: str) -> str:
    """One line telling what to install so that ``command`` finds ``module``."""
    extra = MODULE_EXTRAS[module]
    return f"{command} needs {module}, which is not installed: pip install 'cdcflow[{extra}]'"


def require(*modules: str) -> None:
    """Import ``modules`` now, so a command fails before it starts anything when one is missing."""
    for module in modules:
        importlib.import_module(module)


class ExtrasGroup(click.Group):
    """A click group whose subcommands report a missing optional dependency in one line."""

    def invoke(self, ctx: click.Context) -> Any:
        """Run the subcommand; a missing extra's module becomes a ``ClickException`` (exit 1)."""
        try:
            return super().invoke(ctx)
        except ModuleNotFoundError as error:
            module = missing_module(error)
            if module is None:
                raise
            command = f"cdcflow {ctx.invoked_subcommand}" if ctx.invoked_subcommand else "cdcflow"
            raise click.ClickException(hint(command, module)) from None
