"""The Kafka sink: an idempotent confluent-kafka producer whose ``flush`` means durable.

Records are produced asynchronously in batches (librdkafka does the batching and
compression); only errors are reported back (``delivery.report.only.error``) so a healthy
stream costs no Python callback per record. ``flush`` waits until every record produced so far
is acknowledged by all in-sync replicas and raises if any delivery failed, which is what lets
the pipeline confirm a source position only after Kafka has everything before it.
Topics are created on first use with the configured partitions and replication factor.

With a ``transactional_id`` (``exactly.once.support=required``) every record is written inside
a Kafka transaction: :meth:`KafkaSink.commit_transaction` commits what was written since the
last commit (the offsets record among it) at once, so a ``read_committed`` consumer sees each
record once; a failure aborts the transaction (its records are never seen) and the engine
resumes from the last committed offset. Starting fences any earlier producer with the same id:
a restarted or second capture process of the connector stops the one before it.
"""

from __future__ import annotations

import contextlib
import logging
import re
import threading
import time
import warnings
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
#: How long a flush that failed bare waits for the callback thread to record the fatal error.
FATAL_WAIT_S = 2.0
#: How long the broker keeps a transaction open without a commit before aborting it (commits
#: come every offset.flush.interval.ms, and during snapshots too).
TRANSACTION_TIMEOUT_MS = 60_000
#: The wait for transactional calls (init, commit, abort).
TRANSACTION_CALL_S = 30.0
#: Error codes of a producer another one with the same transactional.id took over from.
FENCED_CODES = frozenset({KafkaError._FENCED, KafkaError.PRODUCER_FENCED})
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
        transactional_id: str | None = None,
    ) -> None:
        security = dict(client_config or {})
        self._on_reachability = on_reachability
        self.transactional_id = transactional_id
        transactional = (
            {"transactional.id": transactional_id, "transaction.timeout.ms": TRANSACTION_TIMEOUT_MS}
            if transactional_id
            else {}
        )
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
            **transactional,
        }
        self._producer = Producer(config)
        #: Transactions are started (fencing earlier producers) before the first write.
        self._needs_start = bool(transactional_id)
        #: an open transaction that could not be aborted yet (Kafka was unreachable)
        self._abort_pending = False
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
        #: A fatal client error: the producer can write nothing more.
        self._fatal: KafkaError | None = None
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
            except KafkaException as raised:  # fatal (fenced): the producer is done
                self._fatal = raised.args[0]
                return
            except Exception:  # a callback that failed must not end the serving of the others
                log.exception("a Kafka client callback failed")

    def _on_delivery(self, error: KafkaError | None, _message: object) -> None:
        if error is not None:
            self._errors.append(error)

    def _on_error(self, error: KafkaError) -> None:
        """librdkafka's client-level errors: all brokers down, transport failures, and the
        fatal ones (a transactional producer fenced by a newer one)."""
        if error.fatal():
            self._fatal = error
            return
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

    def start_transactions(self) -> None:
        """Fence every earlier producer of this transactional id (aborting what it left
        open, so ``read_committed`` readers are not held up) and open a transaction. Called
        before the first write, and by the offset store before it reads; idempotent."""
        if not self._needs_start:
            return
        self._transaction_call(self._producer.init_transactions, TRANSACTION_CALL_S)
        self._producer.begin_transaction()
        self._needs_start = False

    def write(self, record: Record) -> None:
        """Queue one record; blocks (serving acknowledgements) while librdkafka's queue is full."""
        if self._needs_start:
            self.start_transactions()
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
            except KafkaException as raised:  # fatal: fenced by a newer producer
                self._fatal = raised.args[0]
                raise self._fatal_error() from None
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
        try:
            while self._producer.flush(FLUSH_SLICE_S) > 0:
                self._raise_errors()
        except (KafkaException, SystemError) as raised:
            # a fatal error surfaces here (as a SystemError when raised while a callback ran)
            cause = raised if isinstance(raised, KafkaException) else raised.__cause__
            if isinstance(cause, KafkaException):
                self._fatal = cause.args[0]
            if not self._fatal_recorded():
                raise
            raise self._fatal_error() from None
        self._raise_errors()

    def _fatal_recorded(self) -> bool:
        """Whether a fatal error is known, waiting briefly for it: the callback thread may be
        the one that caught it, while this one's flush got only a bare SystemError."""
        deadline = time.monotonic() + FATAL_WAIT_S
        while self._fatal is None and time.monotonic() < deadline:
            time.sleep(0.02)
        return self._fatal is not None

    def _fatal_error(self) -> FatalError:
        error = self._fatal
        assert error is not None
        if error.code() in FENCED_CODES:
            return FatalError(
                f"another capture process of this connector took over its Kafka transactions "
                f"(transactional.id {self.transactional_id}): {error.str()}. This one stops "
                "so that only one writes; if none other should run, start the connector again"
            )
        return FatalError(f"the Kafka producer failed for good: {error.str()}")

    def commit_transaction(self) -> None:
        """Commit everything written since the last commit at once, and open the next
        transaction; on failure nothing of it is ever seen (see the module docstring)."""
        self.start_transactions()
        if self._abort_pending:
            # records of a failed run are in this transaction with the current run's: end it
            # all; the engine then resumes from the last committed offset
            self._abort()
            raise RetriableError(
                "a Kafka transaction left open by a failed run could not be aborted until now; "
                "resuming from the last committed offset"
            )
        self._raise_errors()
        self._transaction_call(self._producer.commit_transaction, TRANSACTION_CALL_S)
        self._producer.begin_transaction()

    def discard(self) -> None:
        """Drop everything written since the last commit: the open transaction is aborted
        (now, or before the next commit if Kafka cannot be reached), so a run that restarts
        from the last committed offset writes it once. Without transactions, nothing: those
        records are delivered (at least once)."""
        if self.transactional_id and self._fatal is None:
            self._abort()

    def _transaction_call(self, call: Callable[[float], None], timeout_s: float) -> None:
        """A transactional call whose failure is told the way the engine acts on it."""
        try:
            call(timeout_s)
        except KafkaException as raised:
            error: KafkaError = raised.args[0]
            if error.code() in FENCED_CODES or error.fatal():
                self._fatal = error
                raise self._fatal_error() from None
            self._abort()
            raise RetriableError(
                f"the Kafka transaction failed and was aborted ({error.str()}); its records "
                "will never be read: resuming from the last committed offset"
            ) from None

    def _abort(self) -> None:
        """Abort the open transaction (best effort) and open the next one."""
        if self._needs_start:
            return  # none was opened
        try:
            self._producer.abort_transaction(TRANSACTION_CALL_S)
            self._producer.begin_transaction()
            self._abort_pending = False
        except KafkaException as error:
            self._abort_pending = True
            log.warning("could not abort the Kafka transaction: %s", error.args[0].str())

    def _raise_errors(self) -> None:
        if self._fatal is not None:
            raise self._fatal_error()
        if not self._errors:
            return
        errors, self._errors = self._errors, []
        # records purged from the queue are what a fatal error (fencing) leaves behind: say
        # why, once the callback thread has recorded it
        purged = any(e.code() == KafkaError._PURGE_QUEUE for e in errors)
        if purged and self.transactional_id and self._fatal_recorded():
            raise self._fatal_error()
        if self.transactional_id:
            self._abort()  # a transaction with a failed record can only be aborted
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
        if self.transactional_id and not self._needs_start and self._fatal is None:
            try:  # what was not committed is never read
                self._producer.abort_transaction(CLOSE_TIMEOUT_S)
            except KafkaException as error:
                log.info("the open Kafka transaction was not aborted: %s", error.args[0].str())
        with contextlib.suppress(KafkaException, SystemError):  # fenced: nothing may be written
            self._producer.flush(CLOSE_TIMEOUT_S)
        with warnings.catch_warnings():  # a fenced producer warns that it cannot abort
            warnings.simplefilter("ignore", RuntimeWarning)
            self._producer.close()
