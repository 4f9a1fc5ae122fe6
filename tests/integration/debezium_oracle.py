"""Comparing cdcflow's Kafka records with the real Debezium's, field by field.

Both sides capture the same database changes under different topic prefixes. Records are
decoded, the prefix is replaced by a placeholder, and the fields that legitimately differ are
blanked — each named once in :data:`VOLATILE` with the reason. What remains must be equal; a
difference is reported as a unified diff of the two topics' records.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from tests.plugins.fix_kafka import read_topic_to_end

PREFIX = "<prefix>"
BLANK = "<differs>"

#: Fields whose values differ between two correct connectors, and why. Paths are dotted, from
#: the record (``key``, ``value``, ``headers``), on the payload of a value with a schema.
VOLATILE: Mapping[str, str] = {
    "value.ts_ms": "when the connector processed the event",
    "value.ts_us": "when the connector processed the event",
    "value.ts_ns": "when the connector processed the event",
    "value.source.version": "the connector's version",
    "headers.__debezium.context.runId": "a random id per connector run",
}

#: Snapshot (``op: r``) events of two connectors read two different snapshot transactions.
SNAPSHOT_VOLATILE: Mapping[str, str] = {
    "value.source.ts_ms": "the snapshot's own start time",
    "value.source.ts_us": "the snapshot's own start time",
    "value.source.ts_ns": "the snapshot's own start time",
    "value.source.lsn": "each connector's slot is created at its own LSN",
    "value.source.txId": "each connector's snapshot transaction has its own xid",
    "value.source.sequence": "built from the slot's LSN",
    "value.source.xmin": "each snapshot transaction has its own xmin",
}


#: Columns where cdcflow deliberately differs from Debezium 3.7 (docs/postgresql.md, "Where
#: cdcflow differs"); they are left out of the comparison of values and schemas.
DEVIATING_COLUMNS: Mapping[str, str] = {
    "c_date_inf": "Debezium writes different numbers for date 'infinity' in snapshot and stream",
    "c_date_bc": "Debezium's snapshot drops the era of BC dates (0001-01-01 BC reads as AD)",
    "c_name": "Debezium's stream writes null for columns of type name",
}


@dataclass(frozen=True)
class Decoded:
    """One Kafka record with JSON key and value decoded (None for tombstones)."""

    key: Any
    value: Any
    headers: tuple[tuple[str, Any], ...]

    def as_dict(self) -> dict[str, Any]:
        return {"key": self.key, "value": self.value, "headers": dict(self.headers)}


def read_records(bootstrap_servers: str, topic: str) -> list[Decoded]:
    """Every record of ``topic`` so far, decoded."""
    return [
        Decoded(
            key=_json(message.key()),
            value=_json(message.value()),
            headers=tuple((name, _header(value)) for name, value in message.headers() or []),
        )
        for message in read_topic_to_end(bootstrap_servers, topic)
    ]


def _json(raw: bytes | None) -> Any:
    return None if raw is None else orjson.loads(raw)


def _header(raw: bytes | None) -> Any:
    """Header values are JSON (Connect's JsonConverter as header converter); keep text else."""
    if raw is None:
        return None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return raw.decode(errors="replace")


#: Debezium counts each logical decoding message under a data collection named after a Java
#: object's identity hash (``…LogicalDecodingMessageId@1e3451f4``), a new one per message, so
#: its name and its place in the END event's list cannot be reproduced; cdcflow names it
#: ``LOGICAL_DECODING_MESSAGE``. Both are compared as this name, the list sorted.
MESSAGE_COLLECTION = re.compile(r"io\.debezium\..*LogicalDecodingMessageId@[0-9a-f]+")


def _message_collections(record: dict[str, Any]) -> None:
    collections = payload(record.get("value")).get("data_collections")
    if not isinstance(collections, list) or not any(
        MESSAGE_COLLECTION.fullmatch(c["data_collection"])
        or c["data_collection"] == "LOGICAL_DECODING_MESSAGE"
        for c in collections
    ):
        return
    for entry in collections:
        if MESSAGE_COLLECTION.fullmatch(entry["data_collection"]):
            entry["data_collection"] = "LOGICAL_DECODING_MESSAGE"
    collections.sort(key=lambda entry: entry["data_collection"])


def _from_a_snapshot(value: Any) -> bool:
    """Whether a record was written by a snapshot: a read (``op: r``), or a schema-change
    record (no ``op``; the MySQL/MariaDB connectors' topic ``<prefix>``) whose source says
    ``snapshot`` — both carry the time of their connector's own snapshot."""
    body = payload(value)
    if body.get("op") == "r":
        return True
    snapshot = (body.get("source") or {}).get("snapshot")
    return "op" not in body and "ddl" in body and snapshot not in (None, "false")


def normalized(records: Iterable[Decoded], *, prefix: str) -> list[dict[str, Any]]:
    """Records with the topic prefix replaced and volatile fields blanked, payloads only.

    The key and value schemas are left out here (they repeat on every record); compare them
    with :func:`schemas`.
    """
    out = []
    for record in records:
        as_dict = _replace_prefix(record.as_dict(), prefix)
        as_dict["key"] = _payload_or_self(as_dict["key"])
        as_dict["value"] = _payload_or_self(as_dict["value"])
        for image in ("before", "after"):
            row = payload(as_dict["value"]).get(image)
            if isinstance(row, dict):
                for column in DEVIATING_COLUMNS:
                    row.pop(column, None)
        _blank(as_dict, VOLATILE)
        _message_collections(as_dict)
        if _from_a_snapshot(as_dict.get("value")):
            _blank(as_dict, SNAPSHOT_VOLATILE)
        out.append(as_dict)
    return out


def schemas(records: Iterable[Decoded], *, prefix: str) -> list[dict[str, Any]]:
    """The distinct key and value schemas of a topic, in order of first appearance."""
    seen: list[dict[str, Any]] = []
    for record in records:
        for part, value in (("key", record.key), ("value", record.value)):
            if isinstance(value, dict) and "schema" in value:
                entry = {part: _without_deviating_fields(_replace_prefix(value["schema"], prefix))}
                if entry not in seen:
                    seen.append(entry)
    return seen


def _without_deviating_fields(schema: Any) -> Any:
    """A schema with the fields of :data:`DEVIATING_COLUMNS` removed, at any depth."""
    if isinstance(schema, list):
        return [
            _without_deviating_fields(item)
            for item in schema
            if not (isinstance(item, dict) and item.get("field") in DEVIATING_COLUMNS)
        ]
    if isinstance(schema, dict):
        return {key: _without_deviating_fields(item) for key, item in schema.items()}
    return schema


def _payload_or_self(value: Any) -> Any:
    if isinstance(value, dict) and "payload" in value and "schema" in value:
        return value["payload"]
    return value


def _replace_prefix(value: Any, prefix: str) -> Any:
    if isinstance(value, str):
        return value.replace(prefix, PREFIX)
    if isinstance(value, list):
        return [_replace_prefix(item, prefix) for item in value]
    if isinstance(value, dict):
        return {key: _replace_prefix(item, prefix) for key, item in value.items()}
    return value


def payload(value: Any) -> dict[str, Any]:
    """The payload of a value (with or without a schema frame); {} for tombstones."""
    if not isinstance(value, dict):
        return {}
    if "payload" in value and "schema" in value:
        inner = value["payload"]
        return inner if isinstance(inner, dict) else {}
    return value


def _blank(record: dict[str, Any], paths: Mapping[str, str]) -> None:
    for path in paths:
        part, *rest = path.split(".", 1)
        target: Any = record.get(part)
        if part in ("key", "value"):
            target = payload(target)
        _blank_path(target, rest[0] if rest else "")


def _blank_path(target: Any, path: str) -> None:
    if not isinstance(target, dict) or not path:
        return
    if path in target:  # header names contain dots themselves
        _blank_value(target, path)
        return
    head, _, rest = path.partition(".")
    if head in target:
        if rest:
            _blank_path(target[head], rest)
        else:
            _blank_value(target, head)


def _blank_value(target: dict[str, Any], name: str) -> None:
    """Blank a value that is present: a null where the other side has a value still shows."""
    if target[name] is not None:
        target[name] = BLANK


def diff(
    expected: Sequence[dict[str, Any]],
    actual: Sequence[dict[str, Any]],
    *,
    labels: tuple[str, str] = ("debezium", "cdcflow"),
) -> str:
    """A unified diff of two record lists as indented JSON, empty when they are equal."""
    if expected == actual:
        return ""

    def dump(records: Sequence[dict[str, Any]]) -> list[str]:
        return (
            orjson.dumps(list(records), option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS)
            .decode()
            .splitlines()
        )

    return "\n".join(
        difflib.unified_diff(
            dump(expected), dump(actual), fromfile=labels[0], tofile=labels[1], lineterm="", n=6
        )
    )
