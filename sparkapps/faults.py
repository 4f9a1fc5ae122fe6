"""Crash points for the restart tests: ``CDCFLOW_SPARK_CRASH_POINT=<name>:<n>`` kills the job
(like ``kill -9``: no cleanup, no Spark shutdown) the n-th time it passes the named point.

Unset, a crash point costs one environment lookup per table per micro-batch.
"""

from __future__ import annotations

import os
from collections import Counter

ENV = "CDCFLOW_SPARK_CRASH_POINT"
_passes: Counter[str] = Counter()


def crash_point(name: str) -> None:
    """Exit immediately with status 137 when the environment asks for a crash here."""
    wanted = os.environ.get(ENV)
    if not wanted:
        return
    point, _, count = wanted.partition(":")
    if point != name:
        return
    _passes[name] += 1
    if _passes[name] >= int(count or 1):
        os._exit(137)
