"""Messages quote libraries' messages cleanly."""

from __future__ import annotations

import importlib
import logging
from pathlib import Path

import pytest
from click.testing import CliRunner

from cdcflow.capture.errors import sentence

# the package exports the command under the module's name: reach the module itself
capture_cli = importlib.import_module("cdcflow.capture.cli.capture")


def test_quoted_library_messages_do_not_double_their_punctuation() -> None:
    assert sentence("Is the server running on that host?") == "Is the server running on that host?"
    assert sentence("no route to host.\n") == "no route to host."
    assert sentence("timeout expired") == "timeout expired."


def test_a_failed_capture_writes_its_error_as_the_pods_termination_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    termination_log = tmp_path / "termination-log"
    termination_log.touch()  # the kubelet makes it in every container
    monkeypatch.setattr(capture_cli, "TERMINATION_LOG", termination_log)
    config = tmp_path / "connector.yaml"
    config.write_text("apiVersion: cdcflow.io/v1alpha1\nkind: CdcConnector\nspec: {}\n")

    result = CliRunner().invoke(capture_cli.capture, ["-f", str(config)])

    assert result.exit_code != 0
    message = termination_log.read_text()
    assert message.startswith(str(config)) and "spec.source" in message  # the error alone
    assert message in result.output


def test_api_requests_kopf_retries_are_not_logged_as_errors() -> None:
    from cdcflow.operator.cli.operator_command import RetriedRequests

    def record(message: str) -> logging.LogRecord:
        return logging.LogRecord("kopf.objects", logging.ERROR, "", 0, message, None, None)

    busy = record("Request attempt #1/9 failed; will retry: PATCH x -> APITooManyRequestsError()")
    retried = record("Request attempt #1/9 failed; will retry: GET x -> APIServerError()")
    final = record("Request attempt #9/9 failed; escalating: GET x -> APIServerError()")
    for one in (busy, retried, final):
        assert RetriedRequests().filter(one)
    assert [r.levelname for r in (busy, retried, final)] == ["INFO", "WARNING", "ERROR"]
