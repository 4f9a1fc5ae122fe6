"""Connector configuration takes Debezium's property names and explains every mistake."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import yaml

from cdcflow.capture.config import ConfigError
from cdcflow.capture.connector_resource import CdcConnector, KafkaSpec, load_connector
from cdcflow.capture.connectors.postgres.properties import parse_properties
from cdcflow.capture.credentials import kafka_security


def test_defaults_match_debezium() -> None:
    properties = parse_properties({"topic.prefix": "shop"})
    assert properties.snapshot_mode == "initial"
    assert properties.tombstones_on_delete is True
    assert properties.unavailable_value_placeholder == "__debezium_unavailable_value"
    assert properties.incremental_snapshot_chunk_size == 1024
    assert properties.skipped == frozenset({"t"})


def test_two_connectors_never_share_a_slot_or_publication_by_default() -> None:
    orders = parse_properties({"topic.prefix": "Orders-EU.v2"})
    billing = parse_properties({"topic.prefix": "billing"})
    assert (orders.slot_name, orders.publication_name) == (
        "orders_eu_v2",
        "orders_eu_v2_publication",
    )
    assert billing.slot_name != orders.slot_name
    named = parse_properties({"topic.prefix": "shop", "slot.name": "debezium"})
    assert (named.slot_name, named.publication_name) == ("debezium", "debezium_publication")
    long = parse_properties({"topic.prefix": "x" * 100})
    assert len(long.slot_name) == len(long.publication_name) == 63  # PostgreSQL's longest


def test_comma_separated_lists_and_yaml_lists_are_both_accepted() -> None:
    text = parse_properties({"topic.prefix": "s", "table.include.list": "public.a, public.b"})
    listed = parse_properties({"topic.prefix": "s", "table.include.list": ["public.a", "public.b"]})
    assert text.table_include_list == listed.table_include_list == ("public.a", "public.b")


def test_string_values_are_coerced_like_kafka_connect_properties() -> None:
    properties = parse_properties(
        {"topic.prefix": "s", "tombstones.on.delete": "false", "snapshot.fetch.size": "100"}
    )
    assert properties.tombstones_on_delete is False
    assert properties.snapshot_fetch_size == 100


def test_unknown_property_gives_a_suggestion_and_points_to_the_list_briefly() -> None:
    with pytest.raises(ConfigError) as error:
        parse_properties({"topic.prefix": "s", "slot.nmae": "x"})
    message = str(error.value)
    assert "`slot.nmae` (did you mean `slot.name`?)" in message
    assert "docs/postgresql.md" in message
    assert len(message) < 300, "a condition message, not the list of ~170 properties"


def test_invalid_enum_value_names_the_allowed_values() -> None:
    with pytest.raises(ConfigError, match=r"snapshot\.mode.*'initial', 'always'"):
        parse_properties({"topic.prefix": "s", "snapshot.mode": "sometimes"})


@pytest.mark.parametrize(
    ("extra", "fix"),
    [
        ({}, r"set signal\.data\.collection"),
        ({"snapshot.mode": "initial_only"}, r"initial_only does not stream"),
        (
            {
                "snapshot.select.statement.overrides": "public.a",
                "snapshot.select.statement.overrides.public.a": "SELECT 1",
            },
            r"use snapshot\.strategy=exported",
        ),
    ],
)
def test_a_chunked_snapshot_that_cannot_run_is_refused_with_the_fix(
    extra: dict[str, str], fix: str
) -> None:
    signal = {} if not extra else {"signal.data.collection": "public.signal"}
    with pytest.raises(ConfigError, match=fix):
        parse_properties({"topic.prefix": "s", "snapshot.strategy": "chunked", **signal, **extra})


def test_a_chunked_snapshot_with_a_signal_table_is_accepted() -> None:
    properties = parse_properties(
        {"topic.prefix": "s", "snapshot.strategy": "chunked", "signal.data.collection": "public.s"}
    )
    assert properties.snapshot_strategy == "chunked"


def test_include_and_exclude_lists_are_mutually_exclusive() -> None:
    with pytest.raises(ConfigError, match="mutually exclusive"):
        parse_properties(
            {"topic.prefix": "s", "table.include.list": "a", "table.exclude.list": "b"}
        )


@pytest.mark.parametrize("secret", ["database.password", "database.user"])
def test_credentials_are_refused_in_the_configuration(secret: str) -> None:
    with pytest.raises(ConfigError, match="credentials come from a Secret"):
        parse_properties({"topic.prefix": "s", secret: "hunter2"})


def test_deprecated_1x_names_still_work_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        properties = parse_properties({"database.server.name": "legacy"})
    assert properties.topic_prefix == "legacy"
    assert "database.server.name is deprecated; use topic.prefix" in caplog.text


def test_truncate_handling_mode_include_unskips_truncate() -> None:
    properties = parse_properties({"topic.prefix": "s", "truncate.handling.mode": "include"})
    assert "t" not in properties.skipped


QUERY = "SELECT * FROM orders WHERE NOT deleted"


def test_per_table_snapshot_overrides_are_collected() -> None:
    properties = parse_properties(
        {
            "topic.prefix": "s",
            "snapshot.select.statement.overrides": "public.orders",
            "snapshot.select.statement.overrides.public.orders": QUERY,
        }
    )
    assert properties.statement_overrides == {"public.orders": QUERY}


def _write(tmp_path: Path, document: object) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


def test_topic_prefix_defaults_to_the_resource_name(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        {
            "apiVersion": "cdcflow.io/v1alpha1",
            "kind": "CdcConnector",
            "metadata": {"name": "orders"},
            "spec": {"source": {"postgresql": {"host": "db", "database": "shop"}}},
        },
    )
    assert load_connector(path).properties().topic_prefix == "orders"


def test_a_resource_of_another_kind_is_rejected_by_name(tmp_path: Path) -> None:
    path = _write(tmp_path, {"kind": "KafkaConnector", "metadata": {"name": "x"}})
    with pytest.raises(ConfigError, match="not a CdcConnector"):
        load_connector(path)


def test_a_source_is_required(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        {"kind": "CdcConnector", "metadata": {"name": "x"}, "spec": {"source": {}}},
    )
    with pytest.raises(ConfigError, match="exactly one of: postgresql"):
        load_connector(path)


def test_a_misspelled_spec_field_is_rejected(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        {
            "kind": "CdcConnector",
            "metadata": {"name": "x"},
            "spec": {"source": {"postgresql": {"host": "db", "database": "d"}}, "kafak": {}},
        },
    )
    with pytest.raises(ConfigError, match=r"spec\.kafak: Extra inputs are not permitted"):
        load_connector(path)


def _resource(spec: dict[str, object]) -> CdcConnector:
    return CdcConnector.model_validate(
        {"kind": "CdcConnector", "metadata": {"name": "shop"}, "spec": spec}
    )


SOURCE = {"postgresql": {"host": "db", "database": "shop"}}


def test_typed_spec_fields_become_debezium_properties() -> None:
    properties = _resource(
        {
            "source": SOURCE,
            "tables": {"include": ["public.orders", "public.items"]},
            "snapshot": {"mode": "when_needed"},
            "signals": {"table": "public.signals", "channels": ["source", "kafka"]},
            "heartbeat": {"intervalMs": 5000},
            "topicPrefix": "shop-eu",
        }
    ).properties()
    assert properties.table_include_list == ("public.orders", "public.items")
    assert properties.snapshot_mode == "when_needed"
    assert properties.signal_data_collection == "public.signals"
    assert properties.signal_enabled_channels == ("source", "kafka")
    assert properties.heartbeat_interval_ms == 5000
    assert properties.topic_prefix == "shop-eu"


def test_a_property_set_by_a_typed_field_and_in_config_is_an_error() -> None:
    resource = _resource(
        {
            "source": SOURCE,
            "snapshot": {"mode": "never"},
            "config": {"snapshot.mode": "initial"},
        }
    )
    with pytest.raises(ConfigError, match=r"snapshot\.mode is set both"):
        resource.properties()


def test_kafka_sasl_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = KafkaSpec.model_validate(
        {
            "bootstrapServers": "k:9093",
            "tls": {"enabled": True, "caSecretName": "kafka-ca"},
            "authentication": {"mechanism": "SCRAM-SHA-512", "secretName": "kafka-login"},
        }
    )
    with pytest.raises(ConfigError, match="CDCFLOW_KAFKA_USERNAME"):
        kafka_security(spec)
    monkeypatch.setenv("CDCFLOW_KAFKA_USERNAME", "cdc")
    monkeypatch.setenv("CDCFLOW_KAFKA_PASSWORD", "pw")
    assert kafka_security(spec) == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "cdc",
        "sasl.password": "pw",
        "ssl.ca.location": "/etc/cdcflow/kafka-ca/ca.crt",
    }


def test_table_names_parse_alike_for_every_connector() -> None:
    from cdcflow.capture.spi import TableId

    assert TableId.parse("public.orders") == TableId("public", "orders")
    assert TableId.parse("inventory.orders") == TableId("inventory", "orders")  # MySQL db.table
    assert TableId.parse("TESTDB.DB2INST1.ORDERS") == TableId("DB2INST1", "ORDERS")  # Db2
    with pytest.raises(ConfigError, match=r"signal.data.collection.*write schema.table"):
        parse_properties({"topic.prefix": "shop", "signal.data.collection": "signals"})


def test_validator_messages_reach_the_user_without_pydantics_prefix() -> None:
    with pytest.raises(ConfigError) as raised:
        parse_properties(
            {"topic.prefix": "s", "table.include.list": "a\\.b", "table.exclude.list": "a\\.c"}
        )
    assert "are mutually exclusive" in str(raised.value)
    assert "Value error" not in str(raised.value)
