"""Pydantic JSON Schema → structural OpenAPI v3 schema, as CustomResourceDefinitions need.

The API server requires a *structural* schema: every node typed, no ``$ref``, no ``anyOf`` of
types, ``nullable`` instead of a null branch. This module rewrites the JSON Schema pydantic
produces into that form and keeps what users see in ``kubectl explain``: descriptions, enums,
defaults, bounds and patterns. Mixed scalar values (``spec.config``) become
``x-kubernetes-int-or-string`` or ``x-kubernetes-preserve-unknown-fields``.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

JSON = dict[str, Any]
COPIED = (
    "type",
    "description",
    "enum",
    "pattern",
    "format",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minimum",
    "maximum",
)


def structural(model: type[BaseModel]) -> JSON:
    """The structural schema of ``model`` (by its wire names)."""
    schema = model.model_json_schema(by_alias=True, mode="validation")
    definitions = schema.pop("$defs", {})
    return _convert(schema, definitions)


def _convert(node: JSON, definitions: JSON) -> JSON:
    if "$ref" in node:
        target = definitions[node["$ref"].rsplit("/", 1)[-1]]
        merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        return _convert(merged, definitions)
    if "anyOf" in node:
        return _any_of(node, definitions)
    out: JSON = {key: node[key] for key in COPIED if key in node}
    if "const" in node:
        out["enum"] = [node["const"]]
        out.setdefault("type", "string")
    if "exclusiveMinimum" in node:
        out["minimum"], out["exclusiveMinimum"] = node["exclusiveMinimum"], True
    if node.get("default") is not None:
        out["default"] = node["default"]
    if "properties" in node:
        out["type"] = "object"
        out["properties"] = {
            name: _convert(child, definitions) for name, child in node["properties"].items()
        }
        if node.get("required"):
            out["required"] = list(node["required"])
    if isinstance(node.get("additionalProperties"), dict):
        out["type"] = "object"
        out["additionalProperties"] = _convert(node["additionalProperties"], definitions)
    if "items" in node:
        out["items"] = _convert(node["items"], definitions)
    if "type" not in out and not _open(out):
        out["x-kubernetes-preserve-unknown-fields"] = True
    return out


def _any_of(node: JSON, definitions: JSON) -> JSON:
    options = [option for option in node["anyOf"] if option.get("type") != "null"]
    rest = {k: v for k, v in node.items() if k != "anyOf"}
    if len(options) == 1:
        converted = _convert({**options[0], **rest}, definitions)
        if len(options) != len(node["anyOf"]):
            converted["nullable"] = True
        return converted
    types = {option.get("type") for option in options}
    out = {key: rest[key] for key in ("description",) if key in rest}
    if types <= {"string", "integer"}:
        out["x-kubernetes-int-or-string"] = True
    else:
        out["x-kubernetes-preserve-unknown-fields"] = True
    return out


def _open(node: JSON) -> bool:
    return bool(
        node.get("x-kubernetes-int-or-string") or node.get("x-kubernetes-preserve-unknown-fields")
    )
