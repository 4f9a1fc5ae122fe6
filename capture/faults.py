"""Crash points for the crash-safety tests: ``CDCFLOW_CRASH_POINT=<name>:<n>`` kills the
process (like ``kill -9``, no cleanup) the n-th time execution passes the named point.

Unset, a crash point costs one dictionary lookup per offset commit, never per event.
"""

from __future__ import annotations

import os
from collections import Counter

_ENV = "CDCFLOW_CRASH_POINT"
_passes: Counter[str] = Counter()


def crash_point(name: str) -> None:
    """Exit immediately with status 137 when the environment asks for a crash here."""
    wanted = os.environ.get(_ENV)
    if not wanted:
        return
    point, _, count = wanted.partition(":")
    if point != name:
        return
    _passes[name] += 1
    if _passes[name] >= int(count or 1):
        os._exit(137)
