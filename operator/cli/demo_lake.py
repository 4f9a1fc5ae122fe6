"""The Spark half of ``cdcflow demo``: apply the demo's change topics to Delta tables and
show that each table now equals its source table."""

from __future__ import annotations

import datetime as dt
import tempfile
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from cdcflow.operator.devservices import kafka, postgres

TABLES = ("customers", "orders")


def _sink(broker: kafka.KafkaBroker, lake: Path) -> Any:
    from cdcflow.sparkapps.config import CdcSink

    return CdcSink.model_validate(
        {
            "metadata": {"name": "demo-lake"},
            "spec": {
                "topics": [f"demo.public.{table}" for table in TABLES],
                "kafka": {"bootstrapServers": broker.bootstrap_servers},
                "target": {"format": "delta", "path": str(lake)},
                "trigger": {"availableNow": True},
                "spark": {"driver": {"memory": "1g"}},
            },
        }
    )


def show_lake(console: Console, pg: postgres.PostgresServer, broker: kafka.KafkaBroker) -> bool:
    """Run the sink once over the topics; print each Delta table beside its source table."""
    import psycopg

    from cdcflow.sparkapps import sink as job

    with tempfile.TemporaryDirectory(prefix="cdcflow-demo-lake-") as folder:
        sink = _sink(broker, Path(folder))
        with console.status("applying the topics to Delta tables with Spark (local mode)…"):
            spark = job.spark_session(sink)
            job.run(spark, sink, available_now=True)
        equal = True
        with psycopg.connect(pg.dsn()) as conn:
            for table in TABLES:
                path = sink.spec.target.table_path(f"demo.public.{table}")
                lake = spark.read.format("delta").load(path)
                columns = [c for c in lake.columns if not c.startswith("_cdc_")]
                rows = sorted(tuple(row) for row in lake.select(*columns).collect())
                source = sorted(
                    tuple(row)
                    for row in conn.execute(f"SELECT {', '.join(columns)} FROM {table}").fetchall()
                )
                equal &= [_comparable(row) for row in rows] == [_comparable(row) for row in source]
                console.print(_table(f"Delta table public_{table} ({path})", columns, rows))
        spark.stop()
    return equal


def _comparable(row: tuple[Any, ...]) -> tuple[str, ...]:
    """Values as text; times are left out (time zones differ between the two readers)."""
    return tuple(str(value) for value in row if not isinstance(value, dt.date))


def _table(title: str, columns: list[str], rows: list[tuple[Any, ...]]) -> Table:
    table = Table(title=title)
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*(str(value) for value in row))
    return table
