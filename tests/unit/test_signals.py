"""Signals parse like Debezium's, and malformed ones are explained rather than fatal."""

from __future__ import annotations

import pytest

from cdcflow.capture.signals import commands


def test_execute_snapshot_defaults_to_incremental() -> None:
    signal = commands.parse(
        "ad-hoc-1", "execute-snapshot", '{"data-collections": ["public.a"]}', channel="source"
    )
    request = commands.snapshot_request(signal)
    assert (request.kind, request.collections) == ("incremental", ("public.a",))


def test_additional_conditions_both_forms() -> None:
    listed = commands.parse(
        "1",
        "execute-snapshot",
        '{"data-collections": ["public.a", "public.b"], "additional-conditions": '
        '[{"data-collection": "public.a", "filter": "color = \'blue\'"}]}',
        channel="source",
    )
    single = commands.parse(
        "2",
        "execute-snapshot",
        '{"data-collections": ["public.a"], "additional-condition": "x > 1"}',
        channel="source",
    )
    assert commands.snapshot_request(listed).conditions == {"public.a": "color = 'blue'"}
    assert commands.snapshot_request(single).conditions == {"public.a": "x > 1"}


@pytest.mark.parametrize(
    ("signal_type", "data", "message"),
    [
        ("make-coffee", "{}", "unknown signal type 'make-coffee'"),
        ("execute-snapshot", "{not json", "not valid JSON"),
        ("execute-snapshot", "[1]", "must be a JSON object"),
        ("execute-snapshot", '{"data-collections": []}', "nothing to snapshot"),
        ("execute-snapshot", '{"data-collections": "public.a"}', "must be an array"),
        (
            "execute-snapshot",
            '{"data-collections": ["a"], "type": "eventual"}',
            "incremental or blocking",
        ),
    ],
)
def test_malformed_signals_are_explained(signal_type: str, data: str, message: str) -> None:
    with pytest.raises(commands.SignalError, match=message) as error:
        commands.snapshot_request(commands.parse("sig-9", signal_type, data, channel="source"))
    assert error.value.signal_id == "sig-9"


def test_stop_snapshot_requires_the_type() -> None:
    signal = commands.parse(
        "s", "stop-snapshot", '{"data-collections": ["public.a"]}', channel="source"
    )
    with pytest.raises(commands.SignalError, match="requires"):
        commands.snapshot_request(signal, stopping=True)


def test_kafka_signal_takes_its_id_from_the_position_when_absent() -> None:
    signal = commands.parse_kafka(
        b"shop",
        b'{"type": "execute-snapshot", "data": {"data-collections": ["public.a"]}}',
        position="signals:0:5",
    )
    assert (signal.id, signal.channel, signal.type) == ("signals:0:5", "kafka", "execute-snapshot")
