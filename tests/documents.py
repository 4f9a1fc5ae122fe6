"""Custom-resource documents the tests write, as users would (YAML files for the CLI)."""

from __future__ import annotations

from pathlib import Path

import yaml


def connector_file(tmp_path: Path) -> Path:
    """``connector.yaml``: a CdcConnector ``orders`` (PostgreSQL ``db``/``shop``, prefix
    ``shop``) keeping its offsets in ``offsets.json`` beside it."""
    path = tmp_path / "connector.yaml"
    document = {
        "apiVersion": "cdcflow.io/v1alpha1",
        "kind": "CdcConnector",
        "metadata": {"name": "orders"},
        "spec": {
            "source": {"postgresql": {"host": "db", "database": "shop"}},
            "offsets": {"store": "file", "path": str(tmp_path / "offsets.json")},
            "config": {"topic.prefix": "shop"},
        },
    }
    path.write_text(yaml.safe_dump(document))
    return path
