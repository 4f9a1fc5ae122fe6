"""Test-suite wiring: service fixture plugins and tier markers taken from the folder names."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = [
    "tests.plugins.fix_kafka",
    "tests.plugins.fix_kube",
    "tests.plugins.fix_node",
    "tests.plugins.fix_mariadb",
    "tests.plugins.fix_postgres",
    "tests.plugins.fix_db2",
    "tests.plugins.fix_capture",
    "tests.plugins.fix_conformance",
    "tests.plugins.fix_connect",
    "tests.plugins.fix_spark",
]

TIERS = ("unit", "integration", "e2e")


def pytest_configure(config: pytest.Config) -> None:
    """Refuse to test compiled hot-path modules built from older sources (capture/native.py):
    the tests would exercise code that is no longer in the checkout."""
    from cdcflow.capture import native

    if outdated := native.stale():
        raise pytest.UsageError(
            f"{', '.join(outdated)} compiled from older sources: run `make setup` (or "
            "`python -m cdcflow.capture.native build`; `make setup NATIVE=0` for plain Python)"
        )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test with its tier (unit, integration, e2e) from the folder it lives in."""
    for item in items:
        parts = Path(str(item.fspath)).parts
        for tier in TIERS:
            if tier in parts:
                item.add_marker(getattr(pytest.mark, tier))
