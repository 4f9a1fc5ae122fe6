"""The docs list every connector property the code accepts."""

from __future__ import annotations

from pathlib import Path

import pytest

from cdcflow.capture.config import EngineProperties
from cdcflow.capture.connectors.db2.properties import Db2Properties
from cdcflow.capture.connectors.mysql.properties import MySqlProperties
from cdcflow.capture.connectors.postgres.properties import PostgresProperties

DOCS = Path(__file__).resolve().parents[2] / "docs"


@pytest.mark.parametrize("model", [PostgresProperties, MySqlProperties, Db2Properties])
def test_every_property_is_documented(model: type[EngineProperties]) -> None:
    text = (DOCS.parent / model.docs_page).read_text()
    names = [field.alias for field in model.model_fields.values() if field.alias]
    assert [name for name in names if f"`{name}`" not in text] == []
