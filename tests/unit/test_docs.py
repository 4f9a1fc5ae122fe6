"""The docs list every connector property the code accepts."""

from __future__ import annotations

from pathlib import Path

from cdcflow.capture.connectors.postgres.properties import PostgresProperties

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_every_property_is_documented() -> None:
    text = (DOCS / "postgresql.md").read_text()
    names = [field.alias for field in PostgresProperties.model_fields.values() if field.alias]
    assert [name for name in names if f"`{name}`" not in text] == []
