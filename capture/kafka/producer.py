"""The Kafka sink: an idempotent confluent-kafka producer whose ``flush`` means durable.

Records are produced asynchronously in batches (librdkafka does the batching and
compression); only errors are reported back (``delivery.report.only.error``) so a healthy
stream costs no Python callback per record. ``flush`` waits until every record produced so far
is acknowledged by all in-sync replicas and raises if any delivery failed, which is what lets
the pipeline confirm a source position only after Kafka has everything before it.
Topics are created on first use with the configured partitions and replication factor.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from cdcflow.capture.errors import FatalError, RetriableError
from cdcflow.capture.spi import Record

log = logging.getLogger(__name__)


class RepeatLimiter(logging.Filter):
    """Lets a librdkafka message through once per ``every_s`` seconds: an unreachable broker
    makes it repeat the same error several times a second. Messages differing only in numbers
    (timings, counts) count as the same."""

    def __init__(self, every_s: float = 60.0) -> None:
        super().__init__()
        self._every_s = every_s
        self._last: dict[str, float] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        key = _DIGITS.sub("#", record.getMessage())
        now = time.monotonic()
        if now - self._last.get(key, -self._every_s) < self._every_s:
            return False
        self._last[key] = now
        return True


_DIGITS = re.compile(r"\d+")
#: librdkafka's own log lines go here, repeat-limited.
client_log = logging.getLogger(f"{__name__}.librdkafka")
client_log.addFilter(RepeatLimiter())

DEFAULTS: Mapping[str, Any] = {
    "enable.idempotence": True,
    "acks": "all",
    # a batch waits at most 5 ms: p50 commit -> Kafka latency of a few ms, batches still full
    # under load (docs/performance.md has the measured trade)
    "linger.ms": 5,
    "batch.size": 1_000_000,
    "batch.num.messages": 10_000,
    "compression.type": "lz4",
    "queue.buffering.max.messages": 200_000,
    "queue.buffering.max.kbytes": 262_144,
    "message.max.bytes": 10_000_000,
    # the Java client's partitioner (murmur2 of the key): a key lands on the partition it
    # would have under Debezium on Kafka Connect, not librdkafka's crc32 choice
    "partitioner": "murmur2_random",
}
RETRIABLE_CODES = frozenset(
    {KafkaError._MSG_TIMED_OUT, KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN}
)
FLUSH_SLICE_S = 1.0
STATISTICS_INTERVAL_MS = 5_000
CLOSE_TIMEOUT_S = 5.0
#: A header as confluent-kafka's produce() takes it.
HeaderPair = tuple[str, str | bytes | None]
#: librdkafka's "no partition given": its partitioner picks one from the key.
UNASSIGNED = -1
#: Records produced between two polls for callbacks.
POLL_EVERY = 256
#: How long records may wait with no acknowledgement at all before Kafka counts as
#: unavailable: a broker that is frozen (SIGSTOP, a stuck disk) keeps its connections up, and
#: librdkafka would only time the records out after message.timeout.ms (five minutes).
STALL_S = 15.0
#: The callback thread's wait for librdkafka events (also how long a close waits for it).
SERVE_WAIT_S = 0.5
#: A topic lookup's wait for an unreachable Kafka: short, so a stop is never held up long (the
#: engine retries the lookup with its backoff).
LOOKUP_TIMEOUT_S = 5.0


@dataclass
class DeliveryWatch:
    """How long Kafka has acknowledged nothing while records wait, from the producer's
    statistics (records waiting) and the count of records produced."""

    acknowledged: int = 0
    progress_at: float = 0.0

    def stalled_for(self, *, produced: int, waiting: int, now: float) -> float:
        """Seconds without any acknowledgement while records wait (0 when none wait or some
        were acknowledged since the last look)."""
        acknowledged = produced - waiting
        if waiting <= 0 or acknowledged > self.acknowledged or not self.progress_at:
            self.acknowledged, self.progress_at = acknowledged, now
            return 0.0
        return now - self.progress_at


class KafkaSink:
    """Writes records to Kafka; see the module docstring for the durability contract."""

    def __init__(
        self,
        *,
        bootstrap_servers: str,
        client_config: Mapping[str, Any] | None = None,
        producer_config: Mapping[str, Any] | None = None,
        partitions: int = 1,
        replication_factor: int = 1,
        on_reachability: Callable[[str], None] | None = None,
    ) -> None:
        security = dict(client_config or {})
        self._on_reachability = on_reachability
        config = {
            **DEFAULTS,
            **security,
            **(producer_config or {}),
            "bootstrap.servers": bootstrap_servers,
            "delivery.report.only.error": True,
            "on_delivery": self._on_delivery,
            "logger": client_log,
            "error_cb": self._on_error,
            "stats_cb": self._on_statistics,
            "statistics.interval.ms": STATISTICS_INTERVAL_MS,
        }
        self._producer = Producer(config)
        admin_config: dict[str, Any] = {
            **security,
            "bootstrap.servers": bootstrap_servers,
            "logger": client_log,
            # a lookup must not make a broker with auto.create.topics.enable create the topic
            # with its defaults: cdcflow creates it with the configured partitions
            "allow.auto.create.topics": False,
        }
        self._admin = AdminClient(admin_config)
        self._partitions = partitions
        self._replication = replication_factor
        #: Topics known to exist, with the partition to write to: 0 for a one-partition topic
        #: (no partitioner call per record), else librdkafka's choice by key.
        self._partition_of: dict[str, int] = {}
        self._errors: list[KafkaError] = []
        self._unpolled = 0
        self._produced = 0
        self._deliveries = DeliveryWatch()
        # Callbacks (statistics, client errors) are served by writes and flushes, and by this
        # thread while none come: an idle connector must still see Kafka come back, or go.
        self._closing = threading.Event()
        self._server = threading.Thread(target=self._serve, name="kafka-callbacks", daemon=True)
        self._last_headers: tuple[tuple[str, bytes], ...] = ()
        self._headers_list: list[HeaderPair] = []
        self._server.start()

    def _serve(self) -> None:
        while not self._closing.is_set():
            try:
                self._producer.poll(SERVE_WAIT_S)
            except Exception:  # a callback that failed must not end the serving of the others
                log.exception("a Kafka client callback failed")

    def _on_delivery(self, error: KafkaError | None, _message: object) -> None:
        if error is not None:
            self._errors.append(error)

    def _on_error(self, error: KafkaError) -> None:
        """librdkafka's client-level errors: all brokers down, transport failures."""
        if error.code() in RETRIABLE_CODES and self._on_reachability is not None:
            self._on_reachability(f"Kafka unreachable: {error.str()}")

    def _on_statistics(self, document: str) -> None:
        """Every STATISTICS_INTERVAL_MS: Kafka is reachable when any real broker is UP and
        records waiting are being acknowledged."""
        if self._on_reachability is None:
            return
        statistics = orjson.loads(document)
        waiting = int(statistics.get("msg_cnt") or 0)
        stalled = self._deliveries.stalled_for(
            produced=self._produced, waiting=waiting, now=time.monotonic()
        )
        if stalled >= STALL_S:
            self._on_reachability(
                f"Kafka has acknowledged none of the {waiting} records waiting for "
                f"{stalled:.0f}s: a broker is not answering"
            )
            return
        brokers = statistics.get("brokers") or {}
        states = [b.get("state") for b in brokers.values() if int(b.get("nodeid", -1)) >= 0]
        if "UP" in states:
            self._on_reachability("")
        elif states:
            self._on_reachability(f"Kafka unreachable: no broker is up ({', '.join(brokers)})")

    def write(self, record: Record) -> None:
        """Queue one record; blocks (serving acknowledgements) while librdkafka's queue is full."""
        partition = self._partition_of.get(record.topic)
        if partition is None:
            partition = self.ensure_topic(record.topic)
        headers = record.headers
        while True:
            try:
                if headers:  # every argument by position: no keyword dict per record
                    self._producer.produce(
                        record.topic,
                        record.value,
                        record.key,
                        partition,
                        None,  # callback: the producer's on_delivery
                        None,  # on_delivery (callback's alias)
                        0,  # timestamp: now
                        self._header_list(headers),
                    )
                else:
                    self._producer.produce(record.topic, record.value, record.key, partition)
                break
            except BufferError:
                self._producer.poll(0.05)
        # Serving callbacks (errors, statistics) costs a call into librdkafka: once per batch
        # of records is enough; flush() serves them too.
        self._produced += 1
        self._unpolled += 1
        if self._unpolled >= POLL_EVERY:
            self._unpolled = 0
            self._producer.poll(0)

    def _header_list(self, headers: tuple[tuple[str, bytes], ...]) -> list[HeaderPair]:
        """``headers`` as the list confluent-kafka takes, made once per header tuple (a
        connector's records share one: Debezium's context headers)."""
        if headers is not self._last_headers:
            self._last_headers, self._headers_list = headers, list(headers)
        return self._headers_list

    def flush(self) -> None:
        """Return once everything written is acknowledged; raise if anything failed."""
        while self._producer.flush(FLUSH_SLICE_S) > 0:
            self._raise_errors()
        self._raise_errors()

    def _raise_errors(self) -> None:
        if not self._errors:
            return
        errors, self._errors = self._errors, []
        first = errors[0]
        text = f"Kafka rejected {len(errors)} record(s); first error: {first.str()}"
        if first.code() in RETRIABLE_CODES or first.retriable():
            raise RetriableError(
                text + ". Kafka may be unreachable; will resume from the last offset."
            )
        raise FatalError(text)

    def ensure_topic(self, topic: str) -> int:
        """Create ``topic`` unless it exists (idempotent across processes); the partition to
        write it with (see ``_partition_of``)."""
        try:
            metadata = self._admin.list_topics(topic=topic, timeout=LOOKUP_TIMEOUT_S)
        except KafkaException as error:
            problem = f"Kafka unreachable: cannot look up topic {topic}: {error.args[0].str()}"
            if self._on_reachability is not None:
                self._on_reachability(problem)
            raise RetriableError(problem) from None
        if self._on_reachability is not None:
            self._on_reachability("")
        described = metadata.topics.get(topic)
        if described is None or described.error is not None:
            self._create(topic)
            partitions = self._partitions
        else:
            partitions = len(described.partitions)
        partition = 0 if partitions == 1 else UNASSIGNED
        self._partition_of[topic] = partition
        return partition

    def _create(self, topic: str) -> None:
        new = NewTopic(topic, num_partitions=self._partitions, replication_factor=self._replication)
        future = self._admin.create_topics([new], operation_timeout=30)[topic]
        try:
            future.result()
            log.info("created topic %s", topic)
        except KafkaException as error:
            if error.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise FatalError(
                    f"cannot create topic {topic}: {error.args[0].str()}. Create it beforehand "
                    "(with the partitions it should have), or let the connector's Kafka user "
                    "create topics (the CreateTopics ACL)"
                ) from None

    def close(self) -> None:
        """Give in-flight records a moment, then stop librdkafka's threads.

        Nothing depends on this flush: every committed offset was preceded by a full flush,
        so records dropped here are replayed on the next start.
        """
        self._closing.set()
        self._server.join(SERVE_WAIT_S * 2)
        self._producer.purge(in_queue=True, in_flight=False)
        self._producer.flush(CLOSE_TIMEOUT_S)
        self._producer.close()
