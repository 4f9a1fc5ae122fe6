"""The CdcSink resource: defaults users rely on, and errors that say what to fix."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from cdcflow.sparkapps.config import CdcSink, SinkConfigError, load_sink, parse_sink


def _document(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "connectorRef": {"name": "inventory"},
        "kafka": {"bootstrapServers": "kafka:9092"},
        "target": {"path": "s3a://lake/cdc"},
    }
    base.update(spec)
    return {
        "apiVersion": "cdcflow.io/v1alpha1",
        "kind": "CdcSink",
        "metadata": {"name": "inventory-lake"},
        "spec": {k: v for k, v in base.items() if v is not None},
    }


def _error(**spec: Any) -> str:
    with pytest.raises(SinkConfigError) as caught:
        parse_sink(_document(**spec))
    return str(caught.value)


def test_a_minimal_sink_gets_scd1_delta_tables_and_a_checkpoint_beside_them() -> None:
    sink = parse_sink(_document())

    assert (sink.spec.mode, sink.spec.target.format) == ("scd1", "delta")
    assert sink.checkpoint_location == "s3a://lake/cdc/_cdc_checkpoint"
    assert sink.spec.starting_offsets == "earliest"
    assert sink.spec.trigger.interval == "10 seconds"
    assert sink.spec.unavailable_value_placeholder == "__debezium_unavailable_value"
    assert sink.fails_on_bad_records  # no dead-letter location: nowhere to put them


def test_connector_ref_subscribes_to_the_connectors_data_topics_only() -> None:
    option, pattern = parse_sink(_document()).subscription()

    assert option == "subscribePattern"
    assert re.fullmatch(pattern, "inventory.public.customers")
    assert re.fullmatch(pattern, "inventory.transaction") is None
    assert re.fullmatch(pattern, "inventory-offsets") is None
    assert re.fullmatch(pattern, "inventoryx.public.customers") is None


def test_topic_prefix_overrides_the_connector_name_and_topics_override_both() -> None:
    renamed = parse_sink(_document(connectorRef={"name": "inv", "topicPrefix": "dbserver1"}))
    explicit = parse_sink(_document(topics=["dbserver1.public.a", "dbserver1.public.b"]))

    assert re.fullmatch(renamed.subscription()[1], "dbserver1.inventory.orders")
    assert explicit.subscription() == ("subscribe", "dbserver1.public.a,dbserver1.public.b")


def test_table_names_and_paths_follow_the_template() -> None:
    target = parse_sink(
        _document(target={"path": "/lake/", "tableNameTemplate": "{prefix}__{table}"})
    )

    assert target.spec.target.table_name("my.server.public.orders") == "my.server__orders"
    assert target.spec.target.table_path("srv.public.orders") == "/lake/srv__orders"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"connectorRef": None}, "name the topics: set connectorRef, topics or topicPattern"),
        ({"topics": ["a.b.c"], "topicPattern": "a.*"}, "either topics or topicPattern"),
        ({"topics": ["orders"]}, "spec.topics: topic 'orders' is not <prefix>.<schema>.<table>"),
        ({"topicPattern": "a(("}, "spec.topicPattern: not a valid regular expression"),
        ({"connectorRef": None, "topics": ["a.b.c"], "kafka": None}, "kafka.bootstrapServers"),
        ({"mode": "scd3"}, "spec.mode: Input should be 'scd1' or 'scd2'"),
        (
            {"mode": "scd2", "target": {"path": "/l", "format": "parquet"}},
            "mode scd2 needs target.format delta",
        ),
        (
            {"target": {"path": "/l", "tableNameTemplate": "{schema}_{tabel}"}},
            "unknown placeholder(s) ['tabel']",
        ),
        ({"target": {"path": "/l", "tableNameTemplate": "{schema}"}}, "include {table} or {topic}"),
        ({"deadLetter": {"onError": "deadletter"}}, "onError: deadletter needs a path"),
        ({"trigger": {"processingTime": "5 s", "availableNow": True}}, "not both"),
        ({"trigger": {"processingTime": "soon"}}, "spec.trigger.processingTime"),
        ({"startingOffsets": "beginning"}, "use earliest, latest or a JSON object"),
        (
            {"kafka": {"bootstrapServers": "k:9092", "options": {"subscribe": "x"}}},
            "use spec.topics",
        ),
        ({"kafka": {"bootstrapServers": "k:9092", "maxOffsetsPerTrigger": 0}}, "greater than 0"),
        ({"spark": {"driver": {"memory": "lots"}}}, "spec.spark.driver.memory"),
        ({"targett": {"path": "/l"}}, "spec.targett: Extra inputs are not permitted"),
    ],
)
def test_invalid_specs_are_rejected_with_the_field_and_the_fix(
    spec: dict[str, Any], message: str
) -> None:
    assert message in _error(**spec)


def test_dead_letters_are_routed_by_default_once_a_path_is_given() -> None:
    routed = parse_sink(_document(deadLetter={"path": "/lake/_dead"}))
    failing = parse_sink(_document(deadLetter={"path": "/lake/_dead", "onError": "fail"}))

    assert not routed.fails_on_bad_records
    assert failing.fails_on_bad_records


def test_running_needs_bootstrap_servers_that_only_the_operator_may_fill_in() -> None:
    sink = parse_sink(_document(kafka=None))

    with pytest.raises(SinkConfigError, match="bootstrapServers is required to run the job"):
        sink.bootstrap_servers()


def test_load_sink_names_the_file_and_rejects_other_kinds(tmp_path: Path) -> None:
    good = tmp_path / "sink.yaml"
    good.write_text(yaml.safe_dump(_document()))
    other = tmp_path / "connector.yaml"
    other.write_text(yaml.safe_dump({**_document(), "kind": "CdcConnector"}))
    broken = tmp_path / "broken.yaml"
    broken.write_text(yaml.safe_dump(_document(mode="scd9")))

    assert isinstance(load_sink(good), CdcSink)
    with pytest.raises(SinkConfigError, match=r"connector\.yaml is not a CdcSink resource"):
        load_sink(other)
    with pytest.raises(SinkConfigError, match=r"broken\.yaml: invalid CdcSink: spec\.mode"):
        load_sink(broken)


def test_every_spec_field_is_described_for_kubectl_explain() -> None:
    from pydantic import BaseModel

    undocumented: list[str] = []

    def walk(model: type[BaseModel], where: str) -> None:
        for name, field in model.model_fields.items():
            if not field.description:
                undocumented.append(f"{where}.{field.alias or name}")
            annotation = field.annotation
            for candidate in getattr(annotation, "__args__", (annotation,)):
                if isinstance(candidate, type) and issubclass(candidate, BaseModel):
                    walk(candidate, f"{where}.{field.alias or name}")

    walk(CdcSink.model_fields["spec"].annotation, "spec")  # type: ignore[arg-type]
    assert undocumented == []


def test_cdcflow_sink_reports_an_invalid_file_without_starting_spark(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from cdcflow.operator.cli.main import cli

    path = tmp_path / "sink.yaml"
    path.write_text(yaml.safe_dump(_document(mode="scd9")))

    result = CliRunner().invoke(cli, ["sink", "-f", str(path)])

    assert result.exit_code == 1
    assert "invalid CdcSink: spec.mode: Input should be 'scd1' or 'scd2'" in result.output
