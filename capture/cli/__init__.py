"""The capture side's commands: ``capture``, ``offsets`` and ``cleanup``.

The top-level ``cdcflow`` group mounts :data:`commands`. Importing this package needs only
the base install: each command imports its database driver or Kafka client when it runs.
"""

from __future__ import annotations

import click

from cdcflow.capture.cli.capture import capture
from cdcflow.capture.cli.cleanup import cleanup
from cdcflow.capture.cli.offsets import offsets

commands: list[click.Command] = [capture, offsets, cleanup]
"""The commands the capture package adds to ``cdcflow``."""
