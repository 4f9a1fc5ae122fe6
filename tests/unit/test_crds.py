"""The committed CRDs are exactly what the models generate, and they are structural."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from cdcflow.capture.connector_resource import CdcConnector
from cdcflow.operator import children, sink_children
from cdcflow.operator.crd import files
from cdcflow.operator.crd.definitions import all_crds
from cdcflow.sparkapps.config import CdcSink

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
    assert columns == ["Source", "State", "Snapshot", "Lag", "Log", "Ready", "Reason", "Age"]
    spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert spec["properties"]["state"]["enum"] == ["running", "paused", "stopped"]
    assert "Debezium connector properties" in spec["properties"]["config"]["description"]


def test_no_password_field_exists_anywhere_in_the_schemas() -> None:
    for crd in all_crds().values():
        text = yaml.safe_dump(crd["spec"]["versions"][0]["schema"]).lower()
        assert "password:" not in text.replace("passwordkey", "")


def test_paused_and_stopped_say_they_keep_no_capture_pod() -> None:
    crd = yaml.safe_load((CRDS / "cdcflow.io_cdcconnectors.yaml").read_text())
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert "no capture pod" in spec["properties"]["state"]["description"]  # kubectl explain


def _longest_name(plural: str) -> int:
    """The name length the CRD's CEL rule ``self.metadata.name.size() <= N`` allows."""
    crd = yaml.safe_load((CRDS / f"cdcflow.io_{plural}.yaml").read_text())
    root = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    rules = [rule["rule"] for rule in root.get("x-kubernetes-validations", [])]
    limits = [re.fullmatch(r"self\.metadata\.name\.size\(\) <= (\d+)", r) for r in rules]
    (limit,) = [int(match.group(1)) for match in limits if match]
    return limit


def test_the_longest_names_the_crds_allow_give_children_the_api_server_accepts() -> None:
    """Label values (and Service names) are at most 63 characters: every name the CRD lets
    through must make children within that, and one character more must not."""
    longest = _longest_name("cdcconnectors")
    connector = CdcConnector.model_validate(
        {
            "metadata": {"name": "c" * longest, "namespace": "shop"},
            "spec": {"source": {"postgresql": {"host": "pg", "database": "shop"}}},
        }
    )
    # the StatefulSet's pods carry controller-revision-hash=<statefulset>-<10 characters>
    assert len(f"{children.child_name(connector)}-0123456789") == 63
    longest = _longest_name("cdcsinks")
    sink = CdcSink.model_validate(
        {
            "metadata": {"name": "s" * longest, "namespace": "shop"},
            "spec": {
                "connectorRef": {"name": "orders"},
                "target": {"format": "delta", "path": "s3a://lake/t"},
            },
        }
    )
    # the Spark operator labels the driver and executors with the SparkApplication's name
    assert len(sink_children.app_name(sink)) == 63
    crd = yaml.safe_load((CRDS / "cdcflow.io_cdcsinks.yaml").read_text())
    messages = [
        r["message"]
        for r in crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["x-kubernetes-validations"]
    ]
    assert any(f"at most {longest} characters" in message for message in messages)
