"""Messages quote libraries' messages cleanly."""

from __future__ import annotations

from cdcflow.capture.errors import sentence


def test_quoted_library_messages_do_not_double_their_punctuation() -> None:
    assert sentence("Is the server running on that host?") == "Is the server running on that host?"
    assert sentence("no route to host.\n") == "no route to host."
    assert sentence("timeout expired") == "timeout expired."
