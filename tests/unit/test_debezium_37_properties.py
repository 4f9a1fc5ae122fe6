"""The rest of Debezium 3.7's PostgreSQL ConfigDef: parsed with Debezium's defaults and
semantics (LSN flushing, timeouts, guardrails, snapshot modes and ordering, replica
identities, topic naming, configuration logging), without a server."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from cdcflow.capture.assembly import log_configuration, masked_configuration
from cdcflow.capture.config import PASSWORD_PATTERN, ConfigError
from cdcflow.capture.connector_resource import parse_connector
from cdcflow.capture.connectors.postgres import checks, identity, snapshotter
from cdcflow.capture.connectors.postgres.connection import (
    Endpoint,
    query_timeout_ms,
    validation_timeout_s,
)
from cdcflow.capture.connectors.postgres.properties import (
    ReplicaIdentityRule,
    parse_properties,
    parse_replica_identities,
)
from cdcflow.capture.errors import FatalError
from cdcflow.capture.filters import Filters
from cdcflow.capture.snapshot import ConfigurationBased, StartPlan, plan_start
from cdcflow.capture.spi import Offset, TableId
from cdcflow.capture.topics import TopicNames, sanitized_topic


def _parse(**config: Any) -> Any:
    return parse_properties({"topic.prefix": "shop", **config})


def test_the_remaining_properties_default_to_debeziums_defaults() -> None:
    p = _parse()
    assert (p.database_query_timeout_ms, p.connection_validation_timeout_ms) == (600000, 60000)
    assert (p.lsn_flush_timeout_ms, p.lsn_flush_timeout_action, p.flush_mode) == (
        30000,
        "fail",
        "connector",
    )
    assert p.event_converting_failure_handling_mode == "fail"  # Debezium: warn
    assert (p.snapshot_isolation_mode, p.snapshot_tables_order_by_row_count) == (
        "serializable",
        "disabled",
    )
    assert (p.signal_poll_interval_ms, p.signal_emit_failure_max_retries) == (5000, 0)
    assert (p.signal_emit_failure_backoff_ms, p.executor_shutdown_timeout_ms) == (10000, 4000)
    assert (p.guardrail_collections_max, p.guardrail_collections_limit_action) == (0, "warn")
    assert p.table_ignore_builtin and not p.include_schema_comments and not p.slot_failover
    assert p.streaming_delay_ms == 0 and p.custom_sanitize_pattern == PASSWORD_PATTERN
    assert p.topic_naming_strategy == "io.debezium.schema.SchemaTopicNamingStrategy"


@pytest.mark.parametrize(
    ("config", "mode"),
    [
        ({}, "connector"),
        ({"flush.lsn.source": "false"}, "manual"),
        ({"flush.lsn.source": "true"}, "connector"),
        (
            {"lsn.flush.mode": "connector_and_driver", "flush.lsn.source": "false"},
            "connector_and_driver",
        ),
    ],
)
def test_lsn_flush_mode_wins_over_the_deprecated_flush_lsn_source(
    config: dict[str, str], mode: str
) -> None:
    assert _parse(**config).flush_mode == mode


def test_connector_and_driver_flushing_falls_back_to_a_ten_minute_heartbeat() -> None:
    assert _parse(**{"lsn.flush.mode": "connector_and_driver"}).effective_heartbeat_interval_ms == (
        600000
    )
    kept = {"lsn.flush.mode": "connector_and_driver", "heartbeat.interval.ms": 5}
    assert _parse(**kept).effective_heartbeat_interval_ms == 5
    with_tx = {"lsn.flush.mode": "connector_and_driver", "provide.transaction.metadata": True}
    assert _parse(**with_tx).effective_heartbeat_interval_ms == 0
    assert _parse().effective_heartbeat_interval_ms == 0


@pytest.mark.parametrize(
    "strategy",
    [
        "io.debezium.schema.SchemaTopicNamingStrategy",
        "io.debezium.schema.DefaultTopicNamingStrategy",
    ],
)
def test_debeziums_default_topic_naming_strategies_are_accepted(strategy: str) -> None:
    assert _parse(**{"topic.naming.strategy": strategy}).topic_naming_strategy == strategy


def test_another_topic_naming_strategy_is_refused_naming_what_cdcflow_does() -> None:
    with pytest.raises(ConfigError, match=r"Java TopicNamingStrategy.*<topic\.prefix>"):
        _parse(**{"topic.naming.strategy": "io.debezium.schema.DefaultRegexTopicNamingStrategy"})


def test_data_topics_are_sanitized_as_debeziums_default_strategy_does() -> None:
    names = TopicNames.from_properties(_parse())
    assert names.data(TableId("public", "my table$")) == "shop.public.my_table_"
    assert names.schema_name(TableId("public", "ä"), "Value") == "shop.public._.Value"
    assert sanitized_topic("x" * 300) == "x" * 249
    assert (sanitized_topic("."), sanitized_topic("..")) == ("_", "__")


def test_replica_identity_rules_parse_as_debezium_validates_them() -> None:
    rules = parse_replica_identities("public.a:FULL, public\\.b.*:index b_idx ,s.c:nothing")
    assert rules == (
        ReplicaIdentityRule("public.a", "FULL"),
        ReplicaIdentityRule("public\\.b.*", "USING INDEX b_idx"),
        ReplicaIdentityRule("s.c", "NOTHING"),
    )
    assert rules[1].index == "b_idx" and rules[0].index is None
    for bad in ("", "public.a", "public.a:PARTIAL", "public.a FULL"):
        with pytest.raises(ConfigError, match=r"replica\.identity\.autoset\.values"):
            _parse(**{"replica.identity.autoset.values": bad})


def test_a_table_two_replica_identity_rules_match_is_an_error() -> None:
    rules = parse_replica_identities("public.t:FULL,public.*:DEFAULT")
    with pytest.raises(ValueError, match="More than one"):
        identity.rule_for(TableId("public", "t"), rules)
    assert identity.rule_for(TableId("public", "u"), rules) == rules[1]
    assert identity.rule_for(TableId("other", "t"), rules) is None


def test_replica_identity_statements_quote_table_and_index() -> None:
    (full, index) = parse_replica_identities("a.b:FULL,a.b:INDEX Ix")
    assert identity.alter_statement(TableId("a", "B"), full).as_string(None) == (
        'ALTER TABLE "a"."B" REPLICA IDENTITY FULL'
    )
    assert identity.alter_statement(TableId("a", "B"), index).as_string(None) == (
        'ALTER TABLE "a"."B" REPLICA IDENTITY USING INDEX "Ix"'
    )


def test_the_query_timeout_is_whole_seconds_on_sql_connections_only() -> None:
    assert [query_timeout_ms(ms) for ms in (600000, 1500, 999, 0)] == [600000, 1000, 0, 0]
    endpoint = Endpoint("h", 5432, "db", "u", "p", query_timeout_ms=2000)
    assert "statement_timeout=2000" in endpoint.conninfo()
    assert "statement_timeout" not in endpoint.conninfo(replication=True)


def test_the_validating_connection_waits_the_validation_timeout_in_whole_seconds() -> None:
    assert [validation_timeout_s(ms) for ms in (60000, 1500, 1)] == [60, 2, 2]
    endpoint = Endpoint("h", 5432, "db", "u", "p")
    assert "connect_timeout=7" in endpoint.conninfo(connect_timeout_s=7)
    assert "connect_timeout=10" in endpoint.conninfo()


def test_the_guardrail_warns_or_fails_above_its_limit(caplog: pytest.LogCaptureFixture) -> None:
    tables = [TableId("public", f"t{i}") for i in range(3)]
    checks.check_guardrail(tables, limit=0, action="fail")
    checks.check_guardrail(tables, limit=3, action="fail")
    with caplog.at_level(logging.WARNING):
        checks.check_guardrail(tables, limit=2, action="warn")
    assert "Guardrail limit exceeded: 3 tables/collections" in caplog.text
    with pytest.raises(FatalError, match=r"maximum allowed is 2.*guardrail\.collections\.max"):
        checks.check_guardrail(tables, limit=2, action="fail")


def test_builtin_tables_are_left_out_unless_table_ignore_builtin_is_false() -> None:
    builtin = [TableId("public", "spatial_ref_sys"), TableId("pg_temp_3", "scratch")]
    ignoring = Filters.from_properties(_parse())
    keeping = Filters.from_properties(_parse(**{"table.ignore.builtin": False}))
    assert not any(ignoring.captures(table) for table in builtin)
    assert all(keeping.captures(table) for table in builtin)
    assert not keeping.captures(TableId("pg_catalog", "pg_class"))
    assert ignoring.captures(TableId("public", "orders"))


def test_snapshot_tables_are_ordered_by_row_count_when_asked() -> None:
    estimates = {TableId("s", "a"): 5, TableId("s", "b"): 50, TableId("s", "c"): 5}
    assert list(snapshotter.order_by_row_count(estimates, "disabled")) == list(estimates)
    ascending = snapshotter.order_by_row_count(estimates, "ascending")
    assert [t.table for t in ascending] == ["a", "c", "b"]
    descending = snapshotter.order_by_row_count(estimates, "descending")
    assert [t.table for t in descending] == ["b", "a", "c"]


def test_only_snapshot_isolation_levels_with_one_snapshot_share_it_with_helpers() -> None:
    assert [snapshotter.shares_snapshot(m) for m in snapshotter.ISOLATION_LEVELS] == [
        True,
        True,
        False,
        False,
    ]


STREAMING = Offset({"lsn": 100, "lsn_commit": 100})
INCOMPLETE = Offset({"snapshot": True})


@pytest.mark.parametrize(
    ("settings", "offset", "available", "expected"),
    [
        (ConfigurationBased(), None, True, StartPlan(False, False, None)),
        (
            ConfigurationBased(snapshot_data=True, start_stream=True),
            STREAMING,
            True,
            StartPlan(True, True, STREAMING),
        ),
        (ConfigurationBased(start_stream=True), STREAMING, True, StartPlan(False, True, STREAMING)),
        (
            ConfigurationBased(start_stream=True, snapshot_on_data_error=True),
            STREAMING,
            False,
            StartPlan(False, True, None),
        ),
        (
            ConfigurationBased(snapshot_data=True),
            INCOMPLETE,
            True,
            StartPlan(True, False, INCOMPLETE),
        ),
    ],
)
def test_configuration_based_snapshots_do_what_the_switches_say(
    settings: ConfigurationBased, offset: Offset | None, available: bool, expected: StartPlan
) -> None:
    plan = plan_start(
        "configuration_based", offset, position_available=available, configured=settings
    )
    assert plan == expected


@pytest.mark.parametrize(
    ("settings", "offset", "available", "message"),
    [
        (ConfigurationBased(snapshot_on_schema_error=True), None, True, "schema only recovery"),
        (ConfigurationBased(), INCOMPLETE, True, "never allow snapshots"),
        (ConfigurationBased(start_stream=True), STREAMING, False, "on.data.error=true"),
    ],
)
def test_configuration_based_snapshots_refuse_what_debezium_refuses(
    settings: ConfigurationBased, offset: Offset | None, available: bool, message: str
) -> None:
    with pytest.raises(FatalError, match=message):
        plan_start("configuration_based", offset, position_available=available, configured=settings)


def test_other_snapshot_modes_plan_as_before() -> None:
    assert plan_start("initial", None) == StartPlan(True, True, None)
    assert plan_start("initial_only", STREAMING) == StartPlan(False, False, STREAMING)
    assert plan_start("when_needed", STREAMING, position_available=False).snapshot


def test_whether_the_connector_streams_follows_the_snapshot_mode() -> None:
    assert _parse().streams and not _parse(**{"snapshot.mode": "initial_only"}).streams
    based = {"snapshot.mode": "configuration_based"}
    assert not _parse(**based).streams
    assert _parse(**based, **{"snapshot.mode.configuration.based.start.stream": True}).streams


def test_the_legacy_thread_alias_is_deprecated(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        properties = _parse(**{"internal.legacy.snapshot.max.threads": True})
    assert properties.legacy_snapshot_max_threads
    assert "use legacy.snapshot.max.threads" in caplog.text


def test_configuration_values_are_masked_by_the_sanitize_pattern() -> None:
    raw = {"topic.prefix": "shop", "x.password": "p", "api.token": "t", "Y.SECRET": "s"}
    assert masked_configuration(raw, PASSWORD_PATTERN) == {
        "Y.SECRET": "s",  # Debezium compiles the pattern without CASE_INSENSITIVE
        "api.token": "t",
        "topic.prefix": "shop",
        "x.password": "********",
    }
    assert masked_configuration(raw, r".*\.token")["api.token"] == "********"
    with pytest.raises(ConfigError, match=r"custom\.sanitize\.pattern"):
        _parse(**{"custom.sanitize.pattern": "("})


def test_the_configuration_is_logged_at_start_with_masked_values(
    caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    resource = parse_connector(
        {
            "apiVersion": "cdcflow.io/v1alpha1",
            "kind": "CdcConnector",
            "metadata": {"name": "shop"},
            "spec": {
                "source": {"postgresql": {"host": "h", "database": "d"}},
                "config": {
                    "notification.http.url": "https://hooks.example.com/t0ken",
                    "custom.sanitize.pattern": r".*\.url",
                    "lsn.flush.mode": "connector_and_driver",
                },
            },
        }
    )
    with caplog.at_level(logging.INFO):
        log_configuration(resource, resource.properties())
    assert "notification.http.url = ********" in caplog.text
    assert "t0ken" not in caplog.text
    assert "topic.prefix = shop" in caplog.text
    assert "heartbeat.interval.ms was internally set to 600000 ms" in caplog.text
