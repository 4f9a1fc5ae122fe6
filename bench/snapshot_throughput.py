"""Snapshot a table into Kafka with `cdcflow capture`, beside the Debezium PostgreSQL connector.

Starts PostgreSQL and Kafka and fills table ``snap`` (the columns of
:mod:`bench.pipeline_throughput`'s table) with N rows (default 1,000,000) in one
``INSERT … SELECT generate_series``, then ``VACUUM (FREEZE, ANALYZE)`` so that every reader
finds the same pages (the first one does not pay for setting hint bits) and a row estimate;
publication ``snap`` covers it. The ceiling is the table read as cdcflow's snapshot reads it
(a server-side cursor, every column as the server's text) with nothing done with the rows.
Then, one after another over the same table:

1. ``cdcflow capture`` as a child process (slot ``snap``, JSON with schemas, Kafka sink) is
   timed from the first record in its topic ``bench.public.snap`` until the topic holds every
   row, with its CPU seconds over that span (events per CPU-second) and its peak RSS;
2. the Debezium PostgreSQL connector (pgoutput, publication ``snap`` with
   ``publication.autocreate.mode=disabled``, JSON with schemas, the worker's default
   converters) on a fresh standalone Kafka Connect worker with the full JIT, timed alike with
   the worker's CPU seconds and peak RSS; twice: with Connect's default producer (slot
   ``bench_dbz``, prefix ``dbz``) and with a producer tuned like cdcflow's (``linger.ms`` 5,
   ``batch.size`` 1 MB, lz4, as ``producer.override.*``; slot ``bench_dbzt``, prefix
   ``dbzt``). ``--no-debezium`` skips it; when the worker or the plugin is unavailable the
   bench says why.

Both run ``snapshot.mode=initial``, not ``initial_only``: ``cdcflow capture`` exits once an
``initial_only`` snapshot is done, taking its CPU time and peak RSS out of ``/proc`` before the
last record may have been counted. Under ``initial`` each connector creates its slot and reads
the table in the slot's exported snapshot, then streams a slot that receives nothing; the slot
is created before the first record, outside the timed span.

It ends with the ratios the goals name: cdcflow against tuned Debezium in events/s and in
events per CPU-second, and cdcflow against the ceiling.

    python -m bench.snapshot_throughput [--rows 1000000] [--no-debezium]
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

import psycopg
from psycopg.types.string import TextLoader

from bench import pipeline_throughput as pipeline
from bench.common import (
    Rate,
    bench_arguments,
    debezium_skipped,
    print_goal,
    print_line,
    run_debezium,
    topic_consumer,
    topic_rate,
    warm_kafka_for_drains,
)
from cdcflow.operator.devservices import kafka, postgres

TABLE = "snap"
#: The publication and cdcflow's slot.
PUBLICATION = SLOT = "snap"
#: The topic prefix :func:`bench.pipeline_throughput.start_capture` gives cdcflow.
CAPTURE_PREFIX = "bench"
SNAPSHOT_MODE = "initial"
#: Rows per round trip, as cdcflow's snapshot.fetch.size default.
FETCH_SIZE = 10_240
SCHEMA = pipeline.SCHEMA.replace("CREATE TABLE bench ", f"CREATE TABLE {TABLE} ", 1)
#: The properties both connectors get on top of their bench defaults.
SNAPSHOT_CONFIG = {
    "slot.name": SLOT,
    "publication.name": PUBLICATION,
    "table.include.list": f"public\\.{TABLE}",
    "snapshot.mode": SNAPSHOT_MODE,
}


def _topic(prefix: str) -> str:
    return f"{prefix}.public.{TABLE}"


def _prepare(dsn: str, rows: int) -> float:
    """The table filled with ``rows`` rows, vacuumed, and its publication; the seconds taken."""
    started = time.perf_counter()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(SCHEMA)
        conn.execute(
            f"INSERT INTO {TABLE} (id, name, amount) SELECT g, 'customer ' || g, g / 100.0 "
            "FROM generate_series(1, %s::bigint) g",
            (rows,),
        )
        conn.execute(f"VACUUM (FREEZE, ANALYZE) {TABLE}")
        conn.execute(f"CREATE PUBLICATION {PUBLICATION} FOR TABLE {TABLE}")
    return time.perf_counter() - started


def _raw_ceiling(dsn: str) -> Rate:
    """The table read as cdcflow's snapshot reads it (a server-side cursor, every column
    loaded as the server's text, :data:`FETCH_SIZE` rows per round trip) with nothing done
    with the rows: the ceiling of a Python snapshot reader."""
    with psycopg.connect(dsn) as conn:
        for oid in conn.execute(
            "SELECT DISTINCT atttypid FROM pg_attribute WHERE attrelid = %s::regclass "
            "AND attnum > 0",
            (TABLE,),
        ).fetchall():
            conn.adapters.register_loader(oid[0], TextLoader)
        started, rows = time.perf_counter(), 0
        with conn.cursor(name="raw") as cursor:
            cursor.itersize = FETCH_SIZE
            cursor.execute(f"SELECT * FROM {TABLE}")
            for _ in cursor:
                rows += 1
        return Rate(time.perf_counter() - started, rows)


def _run_capture(
    server: postgres.PostgresServer, broker: kafka.KafkaBroker, *, workdir: Path, rows: int
) -> Rate:
    """cdcflow's snapshot from its first record in Kafka to all ``rows`` of them, with the
    capture's CPU seconds over that span and its peak RSS (the rate counts the records that
    arrived within the span)."""
    with (
        topic_consumer(broker) as consumer,  # first: it polls as soon as the capture is connected
        pipeline.start_capture(server, broker, workdir, config=SNAPSHOT_CONFIG) as capture,
    ):
        return topic_rate(
            consumer,
            topic=_topic(CAPTURE_PREFIX),
            rows=rows,
            pid=capture.process.pid,
            check=capture.status,  # raises when the capture died
        )


# -- Debezium ------------------------------------------------------------------------------------


def _debezium_config(server: postgres.PostgresServer, run: pipeline.DebeziumRun) -> dict[str, str]:
    """pipeline_throughput's connector for ``run``, snapshotting this bench's table."""
    return {**pipeline.debezium_config(server, run), **SNAPSHOT_CONFIG, "slot.name": run.slot}


def _run_debezium(
    server: postgres.PostgresServer, broker: kafka.KafkaBroker, *, rows: int
) -> dict[str, Rate | str]:
    """Each of pipeline_throughput's Debezium runs over the table, by label: its rate, or why
    not."""
    results: dict[str, Rate | str] = {}
    for run in pipeline.DEBEZIUM_RUNS:
        config = _debezium_config(server, run)
        try:
            results[run.label] = run_debezium(
                broker, name=run.prefix, config=config, topic=_topic(run.prefix), rows=rows
            )
        except Exception as error:  # reported beside the results
            results[run.label] = f"failed: {type(error).__name__}: {error}"
    return results


# -- Report --------------------------------------------------------------------------------------


def _print_cdcflow(raw: Rate, capture: Rate) -> None:
    print_line("raw snapshot read ceiling", f"{raw.per_s:>10,.0f} rows/s ({raw.rows:,} rows)")
    print_line(
        "cdcflow snapshot → Kafka",
        f"{capture.per_s:>10,.0f} events/s ({capture.rows:,} events timed)",
    )
    print_line(
        "cdcflow capture CPU while snapshotting",
        f"{capture.cpu_s:>10.1f} s ({capture.cpu_s / capture.seconds:.2f} cores, "
        f"{capture.seconds:.1f} s wall)",
    )
    print_line("cdcflow events per CPU-second", f"{capture.per_cpu_s:>10,.0f}")
    print_line("cdcflow capture peak RSS", f"{capture.peak_rss_mb:>10.0f} MB")


def _print_debezium(results: Mapping[str, Rate | str], not_measured: str | None) -> None:
    if results:
        pipeline.print_debezium(results)
    else:
        print_line("Debezium PostgreSQL connector", f"not measured, {not_measured}")


def _print_goals(raw: Rate, capture: Rate, tuned: Rate | None) -> None:
    print_goal(
        "cdcflow ÷ tuned Debezium, events/s",
        capture.per_s / tuned.per_s if tuned else None,
        pipeline.GOAL_VS_DEBEZIUM,
    )
    print_goal(
        "cdcflow ÷ tuned Debezium, events per CPU-s",
        capture.per_cpu_s / tuned.per_cpu_s if tuned else None,
        pipeline.GOAL_PER_CPU_VS_DEBEZIUM,
    )
    print_line("cdcflow ÷ raw snapshot read ceiling", f"{capture.per_s / raw.per_s:>10.2f}")


def main() -> None:
    args = bench_arguments(__doc__.splitlines()[0], rows=1_000_000)
    rows: int = args.rows
    not_measured = debezium_skipped(
        args, connector="POSTGRES_CONNECTOR", plugin="postgres", database="PostgreSQL"
    )
    debezium: dict[str, Rate | str] = {}
    with postgres.running_postgres() as server, kafka.running_kafka() as broker:
        warm_kafka_for_drains(broker.bootstrap_servers)
        seconds = _prepare(server.dsn(), rows)
        print(f"table: {rows:,} rows written and vacuumed in {seconds:.1f}s")
        raw = _raw_ceiling(server.dsn())
        with tempfile.TemporaryDirectory() as workdir:
            capture = _run_capture(server, broker, workdir=Path(workdir), rows=rows)
        if not_measured is None:
            debezium = _run_debezium(server, broker, rows=rows)
    _print_cdcflow(raw, capture)
    _print_debezium(debezium, not_measured)
    tuned = debezium.get("tuned producer")
    _print_goals(raw, capture, tuned if isinstance(tuned, Rate) else None)


if __name__ == "__main__":
    main()
