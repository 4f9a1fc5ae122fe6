"""Every mapped type reaches Kafka with Debezium's value, identically from snapshot and stream.

Uses the type table of ``test_postgres_types_roundtrip`` (one column per mapped type with its
expected Debezium value). One row is written before the connector starts (read by the snapshot)
and the same row again after (decoded from pgoutput); both events must carry exactly the
expected values, which proves the snapshot and the stream agree type by type.
"""

from __future__ import annotations

import uuid

from tests.integration.pg_type_catalog import COLUMNS
from tests.integration.pg_type_catalog import SUFFIX as ROUNDTRIP_SUFFIX
from tests.plugins.fix_capture import CaptureHarness

SUFFIX = uuid.uuid4().hex[:8]


def test_snapshot_and_stream_emit_the_same_debezium_value_for_every_type(
    capture: CaptureHarness,
) -> None:
    table = capture.table("types")
    mood, price, alias = f"mood_{SUFFIX}", f"price_{SUFFIX}", f"price_alias_{SUFFIX}"
    columns = COLUMNS
    definitions = ", ".join(
        f"{name} {_rename(sql_type, mood, price, alias)}" for name, sql_type, _, _ in columns
    )
    names = ", ".join(name for name, _, _, _ in columns)
    literals = ", ".join(_rename(literal, mood, price, alias) for _, _, literal, _ in columns)
    capture.sql(
        "CREATE EXTENSION IF NOT EXISTS hstore",
        "CREATE EXTENSION IF NOT EXISTS ltree",
        "CREATE EXTENSION IF NOT EXISTS citext",
        f"CREATE TYPE {mood} AS ENUM ('sad', 'happy')",
        f"ALTER TYPE {mood} ADD VALUE 'ok' BEFORE 'happy'",
        f"CREATE DOMAIN {price} AS numeric(8,3)",
        f"CREATE DOMAIN {alias} AS {price}",
        f"CREATE TABLE {table} (id int PRIMARY KEY, {definitions})",
        f"INSERT INTO {table} (id, {names}) VALUES (1, {literals})",
    )
    running = capture.start(capture.resource([table], **{"value.converter.schemas.enable": False}))
    capture.sql(f"INSERT INTO {table} (id, {names}) VALUES (2, {literals})")
    events = capture.wait_for_events(f"public.{table}", lambda ev: len(ev) >= 2)
    running.stop()

    expected = {name: value for name, _, _, value in columns}
    snapshot, streamed = events[0].payload, events[1].payload
    assert (snapshot["op"], streamed["op"]) == ("r", "c")
    from_snapshot = {k: v for k, v in snapshot["after"].items() if k != "id"}
    from_stream = {k: v for k, v in streamed["after"].items() if k != "id"}
    mismatched = {
        name: (from_snapshot.get(name), from_stream.get(name), want)
        for name, want in expected.items()
        if not (from_snapshot.get(name) == from_stream.get(name) == want)
    }
    assert mismatched == {}


def _rename(text: str, mood: str, price: str, alias: str) -> str:
    """Point the shared column list at this test's own enum and domain types."""
    theirs = ROUNDTRIP_SUFFIX
    return (
        text.replace(f"price_alias_{theirs}", alias)
        .replace(f"price_{theirs}", price)
        .replace(f"mood_{theirs}", mood)
    )
