"""What exactly-once costs: the same insert backlog drained at-least-once and exactly-once.

Starts PostgreSQL and Kafka, writes N inserts (default 200k, in 1000-row transactions) while
nothing reads them, then drains them ``--pairs`` times (default 3) with ``cdcflow capture``,
each drain on its own slot and topic prefix: at-least-once (the default, offsets in Kafka) and,
right after it, ``exactly.once.support=required`` (records and offsets in Kafka transactions).
Both are timed the same way, from the first record in the topic until the offset the capture
committed covers the backlog: the moment a ``read_committed`` consumer can see all of it. It
prints each pair, the median drain of each mode and the cost (goal: at most 15 % fewer
events/s).

    python -m bench.exactly_once_cost [--rows 200000] [--pairs 3]
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from bench.common import (
    Rate,
    bench_arguments,
    capture_running,
    cpu_seconds,
    peak_rss_mb,
    postgres_connector,
    print_goal,
    print_line,
    topic_consumer,
    topic_size,
    warm_kafka_for_drains,
)
from bench.pipeline_throughput import _current_lsn, _saved_lsn, prepare, write_backlog
from cdcflow.operator.devservices import kafka, postgres

#: At most this share of at-least-once's events/s may exactly-once lose.
GOAL_COST = 0.15
MODES = {"at-least-once": "requested", "exactly-once": "required"}


def _drain(
    server: postgres.PostgresServer,
    broker: kafka.KafkaBroker,
    *,
    slot: str,
    mode: str,
    target: int,
    rows: int,
) -> Rate:
    """One drain of the backlog on ``slot``: first record in the topic to committed offset."""
    config = {
        "topic.prefix": slot,
        "slot.name": slot,
        "publication.name": "bench",
        "snapshot.mode": "never",
        "exactly.once.support": mode,
    }
    resource = postgres_connector(server, broker, name=slot.replace("_", "-"), config=config)
    spec = resource["spec"]
    assert isinstance(spec, dict)
    spec["offsets"] = {"store": "kafka"}
    login = (server.superuser, server.superuser_password)
    with (
        tempfile.TemporaryDirectory() as workdir,
        topic_consumer(broker) as consumer,
        capture_running(resource, workdir=Path(workdir), login=login) as capture,
    ):
        pid, topic = capture.process.pid, f"{slot}.public.bench"
        while topic_size(consumer, topic) == 0:
            capture.status()  # raises when the capture died
            time.sleep(0.02)
        started, cpu = time.perf_counter(), cpu_seconds(pid)
        while _saved_lsn(capture.status()) < target:
            time.sleep(0.05)
        return Rate(time.perf_counter() - started, rows, cpu_seconds(pid) - cpu, peak_rss_mb(pid))


def main() -> None:
    args = bench_arguments(__doc__.splitlines()[0], rows=200_000, pairs=3)
    rows: int = args.rows
    pairs: int = args.pairs
    drains: dict[str, list[Rate]] = {mode: [] for mode in MODES}
    with postgres.running_postgres() as server, kafka.running_kafka() as broker:
        warm_kafka_for_drains(broker.bootstrap_servers)
        dsn = server.dsn()
        slot_of = {
            (label, i): f"bench_{mode}{i}" for label, mode in MODES.items() for i in range(pairs)
        }
        prepare(dsn, slots=list(slot_of.values()))
        write_backlog(dsn, rows)
        target = _current_lsn(dsn)
        for index in range(pairs):
            for label, mode in MODES.items():
                slot = slot_of[(label, index)]
                rate = _drain(server, broker, slot=slot, mode=mode, target=target, rows=rows)
                drains[label].append(rate)
                print(f"pair {index + 1}: {label:<14} {rate.per_s:>10,.0f} events/s", flush=True)
    medians = {
        label: sorted(r.per_s for r in rates)[(len(rates) - 1) // 2]
        for label, rates in drains.items()
    }
    for label, rates in drains.items():
        rss = max(r.peak_rss_mb for r in rates)
        print_line(
            label, f"{medians[label]:,.0f} events/s (median of {pairs}), peak RSS {rss:.0f} MB"
        )
    cost = 1 - medians["exactly-once"] / medians["at-least-once"]
    print_line("exactly-once cost", f"{cost:.1%} fewer events/s")
    print_goal("exactly-once keeps this share of the rate", 1 - cost, 1 - GOAL_COST)


if __name__ == "__main__":
    main()
