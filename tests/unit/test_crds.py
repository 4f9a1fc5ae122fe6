"""The committed CRDs are exactly what the models generate, and they are structural."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from cdcflow.operator.crd import files
from cdcflow.operator.crd.definitions import all_crds

CRDS = Path(__file__).resolve().parents[2] / "crds"


def test_committed_crds_match_the_models() -> None:
    assert files.drift(CRDS) == [], "run `cdcflow crds generate` and commit crds/"


def _walk(node: Any, path: str = "") -> list[str]:
    """Paths of schema nodes that are not structural (no type and not explicitly open)."""
    if not isinstance(node, dict):
        return []
    problems = []
    open_node = node.get("x-kubernetes-preserve-unknown-fields") or node.get(
        "x-kubernetes-int-or-string"
    )
    if "type" not in node and not open_node:
        problems.append(path or "/")
    for forbidden in ("$ref", "anyOf", "oneOf", "allOf", "title"):
        if forbidden in node:
            problems.append(f"{path}:{forbidden}")
    for name, child in node.get("properties", {}).items():
        problems += _walk(child, f"{path}.{name}")
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), dict):
            problems += _walk(node[key], f"{path}[{key}]")
    return problems


def test_every_schema_node_is_typed_as_the_api_server_requires() -> None:
    for name, crd in all_crds().items():
        schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        assert _walk(schema) == [], name


def test_connector_crd_has_status_columns_short_names_and_category() -> None:
    crd = yaml.safe_load((CRDS / "cdcflow.io_cdcconnectors.yaml").read_text())
    version = crd["spec"]["versions"][0]
    assert crd["spec"]["names"]["shortNames"] == ["cdcc"]
    assert crd["spec"]["names"]["categories"] == ["cdc"]
    assert version["subresources"] == {"status": {}}
    columns = [column["name"] for column in version["additionalPrinterColumns"]]
    assert columns == ["Source", "State", "Snapshot", "Lag", "Ready", "Reason", "Age"]
    spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert spec["properties"]["state"]["enum"] == ["running", "paused", "stopped"]
    assert "Debezium connector properties" in spec["properties"]["config"]["description"]


def test_no_password_field_exists_anywhere_in_the_schemas() -> None:
    for crd in all_crds().values():
        text = yaml.safe_dump(crd["spec"]["versions"][0]["schema"]).lower()
        assert "password:" not in text.replace("passwordkey", "")
