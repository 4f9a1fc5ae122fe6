"""Debezium 3.x PostgreSQL properties beyond the basics: parsed with Debezium's defaults and
semantics, or refused with the reason when they cannot apply to cdcflow."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

import pytest

from cdcflow.capture.config import ConfigError, known_properties, unsupported_reason
from cdcflow.capture.connector_resource import parse_connector
from cdcflow.capture.connectors.postgres.connection import Endpoint
from cdcflow.capture.connectors.postgres.properties import (
    POSTGRES_UNSUPPORTED as UNSUPPORTED_PROPERTIES,
)
from cdcflow.capture.connectors.postgres.properties import PostgresProperties, parse_properties
from cdcflow.capture.credentials import Login
from cdcflow.capture.mapping import ColumnRule
from cdcflow.capture.spi import TableId
from cdcflow.capture.topics import TopicNames


def _parse(**config: Any) -> Any:
    return parse_properties({"topic.prefix": "shop", **config})


def test_new_properties_default_to_debeziums_defaults() -> None:
    p = _parse()
    assert (p.slot_max_retries, p.slot_retry_delay_ms, p.snapshot_lock_timeout_ms) == (
        6,
        10000,
        10000,
    )
    assert (p.snapshot_locking_mode, p.snapshot_query_mode, p.snapshot_max_threads) == (
        "none",
        "select_all",
        1,
    )
    assert (p.field_name_adjustment_mode, p.schema_name_adjustment_mode) == ("none", "none")
    assert (p.money_fraction_digits, p.database_tcp_keep_alive, p.query_fetch_size) == (2, True, 0)
    assert p.schema_refresh_mode == "columns_diff"
    assert (p.notification_http_timeout_ms, p.notification_http_retries) == (5000, 2)
    assert not p.publish_via_partition_root and not p.skip_messages_without_change
    assert p.column_rules == () and p.custom_metric_tags == {}


def test_column_rule_properties_are_collected_in_configuration_order() -> None:
    p = _parse(
        **{
            "column.mask.with.3.chars": r"public\.t\.a",
            "column.truncate.to.10.chars": [r"public\.t\.b", r"public\.t\.c"],
        }
    )
    assert p.column_rules == (
        ColumnRule("mask", (r"public\.t\.a",), length=3),
        ColumnRule("truncate", (r"public\.t\.b", r"public\.t\.c"), length=10),
    )


def test_a_bad_hash_algorithm_is_refused_naming_the_property() -> None:
    with pytest.raises(ConfigError, match=r"column\.mask\.hash\.MD2.*unsupported hash"):
        _parse(**{"column.mask.hash.MD2.with.salt.s": "a"})


@pytest.mark.parametrize("name", sorted(UNSUPPORTED_PROPERTIES))
def test_unsupported_properties_are_refused_with_their_reason(name: str) -> None:
    reason = UNSUPPORTED_PROPERTIES[name]
    with pytest.raises(ConfigError, match=re.escape(f"not supported by cdcflow: {reason}")):
        _parse(**{name: "com.example.Thing"})
    assert unsupported_reason(name, PostgresProperties) == reason


def test_the_custom_snapshotter_refusal_names_the_properties_that_replace_it() -> None:
    reason = unsupported_reason("snapshot.custom.class", PostgresProperties) or ""
    for replacement in ("snapshot.mode", "snapshot.select.statement.overrides", "locking.mode"):
        assert replacement in reason


@pytest.mark.parametrize("name", ["snapshot.locking.mode", "snapshot.query.mode"])
def test_custom_locking_and_query_modes_are_refused(name: str) -> None:
    with pytest.raises(ConfigError, match=rf"{name}.*Java implementation {name}\.custom\.name"):
        _parse(**{name: "custom"})


def test_the_ssl_key_password_is_a_secret_and_never_configuration() -> None:
    with pytest.raises(ConfigError, match="CDCFLOW_DATABASE_SSLPASSWORD"):
        _parse(**{"database.sslpassword": "hunter2"})


def test_sanitize_field_names_is_the_deprecated_avro_field_adjustment(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING):
        assert _parse(**{"sanitize.field.names": "true"}).field_name_adjustment_mode == "avro"
    assert "sanitize.field.names is deprecated" in caplog.text
    assert _parse(**{"sanitize.field.names": False}).field_name_adjustment_mode == "none"
    explicit = {"sanitize.field.names": True, "field.name.adjustment.mode": "avro_unicode"}
    assert _parse(**explicit).field_name_adjustment_mode == "avro_unicode"


def test_stream_params_split_like_debezium_and_refuse_binary(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING):
        params = _parse(**{"slot.stream.params": "origin=none;a=b=c;empty=;x=1"}).stream_params
    assert params == {"origin": "none", "x": "1"}
    assert "a=b=c" in caplog.text and "empty=" in caplog.text
    with pytest.raises(ConfigError, match="binary"):
        _parse(**{"slot.stream.params": "binary=true"})


def test_custom_metric_tags_are_prometheus_labels() -> None:
    assert _parse(**{"custom.metric.tags": "env=prod, team = cdc"}).custom_metric_tags == {
        "env": "prod",
        "team": "cdc",
    }
    for bad in ("env", "server=x", "bad-key=1"):
        with pytest.raises(ConfigError, match=r"custom\.metric\.tags"):
            _parse(**{"custom.metric.tags": bad})


def test_the_http_notification_channel_needs_a_valid_url() -> None:
    with pytest.raises(ConfigError, match=r"notification\.http\.url"):
        _parse(**{"notification.enabled.channels": "log,http"})
    with pytest.raises(ConfigError, match=r"http\(s\) URL with a host"):
        _parse(**{"notification.enabled.channels": "http", "notification.http.url": "ftp://x"})
    ok = {"notification.enabled.channels": "http", "notification.http.url": "https://h/x"}
    assert _parse(**ok).notification_http_url == "https://h/x"


def test_propagation_regexes_are_checked() -> None:
    with pytest.raises(ConfigError, match="not a regular expression"):
        _parse(**{"datatype.propagate.source.type": "public.("})


def test_property_names_with_arguments_are_known_only_by_pattern() -> None:
    names = known_properties(PostgresProperties)
    assert "sanitize.field.names" in names and "column.propagate.source.type" in names
    assert not any(name.startswith("column.mask.with") for name in names)


def test_client_certificate_files_and_keepalives_reach_libpq() -> None:
    endpoint = Endpoint(
        host="h",
        port=5432,
        database="d",
        user="u",
        password="p",
        sslcert="/c.crt",
        sslkey="/c.key",
        sslpassword="kp",
        keepalives=False,
    )
    info = endpoint.conninfo()
    for part in ("sslcert=/c.crt", "sslkey=/c.key", "sslpassword=kp", "keepalives=0"):
        assert part in info
    assert "kp" not in repr(endpoint)


def test_the_ssl_key_password_comes_from_the_environment_or_the_credentials_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("CDCFLOW_DATABASE_USER", "u")
    monkeypatch.setenv("CDCFLOW_DATABASE_SSLPASSWORD", "from-env")
    assert Login.from_environment().ssl_password == "from-env"
    secret = tmp_path / "sslpassword"
    secret.write_text("from-file\n")
    monkeypatch.setenv("CDCFLOW_DATABASE_SSLPASSWORD_FILE", str(secret))
    assert Login.from_environment().ssl_password == "from-file"
    credentials = tmp_path / "login.yaml"
    credentials.write_text("username: u\npassword: p\nsslpassword: in-yaml\n")
    assert Login.from_environment(credentials).ssl_password == "in-yaml"
    assert "in-yaml" not in repr(Login.from_environment(credentials))


def test_the_credentials_secret_may_name_the_ssl_key_password() -> None:
    from cdcflow.operator import children

    connector = parse_connector(
        {
            "apiVersion": "cdcflow.io/v1alpha1",
            "kind": "CdcConnector",
            "metadata": {"name": "shop"},
            "spec": {
                "source": {
                    "postgresql": {
                        "host": "h",
                        "database": "d",
                        "credentials": {"secretName": "pg", "sslPasswordKey": "keypass"},
                    }
                }
            },
        }
    )
    stateful_set = children.stateful_set(connector, uid="u", secret_hash="h")
    env = {e["name"]: e for e in stateful_set["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["CDCFLOW_DATABASE_SSLPASSWORD"]["valueFrom"]["secretKeyRef"] == {
        "name": "pg",
        "key": "keypass",
    }


def test_schema_names_follow_the_data_topic_and_the_adjustment_mode() -> None:
    table = TableId("public", "order-items")
    plain = TopicNames.from_properties(_parse(**{"topic.delimiter": "_"}))
    assert plain.schema_name(table, "Value") == "shop_public_order-items.Value"
    avro = TopicNames.from_properties(_parse(**{"schema.name.adjustment.mode": "avro"}))
    assert avro.schema_name(table, "Envelope") == "shop.public.order_items.Envelope"


def test_a_listed_override_table_without_a_statement_is_warned_about(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING):
        properties = _parse(**{"snapshot.select.statement.overrides": "public.orders"})
    assert properties.statement_overrides == {}
    assert "snapshot.select.statement.overrides.public.orders is not set" in caplog.text
