"""Schema history in a Kafka topic, kept as Debezium's ``KafkaSchemaHistory`` keeps it.

The topic has one partition (the history is an ordered log), deletes nothing
(``cleanup.policy=delete`` with unlimited retention: history records have no key, so compaction
cannot keep them) and holds one history record document per message, with a null key.
:meth:`KafkaSchemaHistory.start` creates the topic so, or refuses one that would lose or
reorder records; ``record`` returns once every in-sync replica has the record; ``changes``
reads (committed records only) from the beginning to the end offset the topic had when reading
started. Under exactly-once a record is written into the connector's open Kafka transaction
instead, and becomes visible with the offset commit that covers it.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator, Mapping
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    ConfigResource,
    NewTopic,
    ResourceType,
)

from cdcflow.capture.errors import FatalError, RetriableError, sentence
from cdcflow.capture.history import decode, encode
from cdcflow.capture.kafka.consumer import read_to, watermarks
from cdcflow.capture.kafka.producer import RETRIABLE_CODES, KafkaSink, client_log
from cdcflow.capture.spi import Record, SchemaChange

log = logging.getLogger(__name__)

PARTITION = 0
#: What the topic is created with (Debezium sets retention.ms to Long.MAX_VALUE: also unlimited).
TOPIC_CONFIG: Mapping[str, str] = {
    "cleanup.policy": "delete",
    "retention.ms": "-1",
    "retention.bytes": "-1",
}
#: Debezium accepts a finite retention.ms of at least five years.
RETENTION_MS_MIN = 5 * 365 * 24 * 3600 * 1000
ADMIN_TIMEOUT_S = 30.0
WRITE_TIMEOUT_S = 30.0
CLOSE_TIMEOUT_S = 5.0


def topic_problems(topic: str, *, partitions: int, config: Mapping[str, str | None]) -> list[str]:
    """What makes an existing topic unfit for schema history, each with its fix (Debezium's
    checks, which only warn there: here they stop the start, as the history would be lost)."""
    problems: list[str] = []
    alter = (
        "kafka-configs.sh --bootstrap-server <brokers> --alter --entity-type topics "
        f"--entity-name {topic} --add-config"
    )
    if partitions != 1:
        problems.append(
            f"it has {partitions} partitions, and the history must be one ordered partition "
            "(partitions cannot be removed): point schema.history.internal.kafka.topic at a new "
            "topic, which cdcflow creates with 1 partition, cleanup.policy=delete, "
            "retention.ms=-1 and retention.bytes=-1, and rebuild the history with "
            "snapshot.mode=recovery"
        )
    policy = config.get("cleanup.policy") or ""
    if "compact" in [part.strip() for part in policy.split(",")]:
        problems.append(
            f"its cleanup.policy is {policy}, and compaction cannot keep history records (they "
            f"have no key): set it to delete with `{alter} cleanup.policy=delete`"
        )
    retention_bytes = _number(config.get("retention.bytes"))
    retention_ms = _number(config.get("retention.ms"))
    if (retention_bytes is not None and retention_bytes != -1) or (
        retention_ms is not None and retention_ms != -1 and retention_ms < RETENTION_MS_MIN
    ):
        problems.append(
            f"its retention (retention.ms={config.get('retention.ms')}, retention.bytes="
            f"{config.get('retention.bytes')}) would delete history records: make it unlimited "
            f"with `{alter} retention.ms=-1,retention.bytes=-1` (if records were deleted "
            "already, rebuild the history with snapshot.mode=recovery)"
        )
    return problems


def _reason(error: KafkaException) -> str:
    """librdkafka's text of ``error`` as a sentence."""
    first = error.args[0] if error.args else error
    return sentence(first.str() if isinstance(first, KafkaError) else first)


def _number(value: str | None) -> int | None:
    try:
        return None if value is None else int(value)
    except ValueError:
        return None


class KafkaSchemaHistory:
    """Schema history in a one-partition Kafka topic; see the module docstring.

    ``recovery_poll_interval_ms`` and ``recovery_attempts`` are Debezium's
    ``schema.history.internal.kafka.recovery.*``: reading gives up after that many polls in a
    row that return nothing before the end is reached.
    """

    def __init__(
        self,
        *,
        bootstrap_servers: str,
        client_config: Mapping[str, Any],
        topic: str,
        server: str,
        recovery_poll_interval_ms: int = 100,
        recovery_attempts: int = 100,
        transactions: KafkaSink | None = None,
    ) -> None:
        self.topic = topic
        #: The transactional sink records are written with (exactly-once), else None.
        self._transactions = transactions
        self._bootstrap = bootstrap_servers
        self._security = dict(client_config)
        self._server = server
        self._poll_s = recovery_poll_interval_ms / 1000
        self._attempts = recovery_attempts
        self._producer: Producer | None = None

    def _config(self, **extra: Any) -> dict[str, Any]:
        return {**self._security, "bootstrap.servers": self._bootstrap, **extra}

    def start(self) -> None:
        """Create the topic if it is missing, else check it; raise FatalError naming the fix."""
        admin = AdminClient(self._config(logger=client_log))
        described = self._describe(admin)
        if described is None:
            self._create(admin)
        else:
            self._check(admin, partitions=len(described.partitions))
        if self._producer is None and self._transactions is None:
            self._producer = Producer(
                self._config(**{"enable.idempotence": True, "acks": "all", "logger": client_log})
            )

    def _describe(self, admin: AdminClient) -> Any:
        """The topic's metadata, or None when it does not exist (listing every topic, as asking
        for one by name may create it with the broker's defaults)."""
        try:
            metadata = admin.list_topics(timeout=ADMIN_TIMEOUT_S)
        except KafkaException as error:
            raise RetriableError(
                f"cannot reach Kafka at {self._bootstrap} to look up the schema history topic "
                f"{self.topic}: {_reason(error)}"
            ) from None
        described = metadata.topics.get(self.topic)
        return None if described is None or described.error is not None else described

    def _create(self, admin: AdminClient) -> None:
        # replication_factor -1: the broker's default.replication.factor, as Debezium does.
        new = NewTopic(
            self.topic, num_partitions=1, replication_factor=-1, config=dict(TOPIC_CONFIG)
        )
        future = admin.create_topics([new], operation_timeout=ADMIN_TIMEOUT_S)[self.topic]
        try:
            future.result()
            log.info("created schema history topic %s", self.topic)
        except KafkaException as error:
            if error.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise FatalError(
                    f"cannot create the schema history topic {self.topic}: "
                    f"{_reason(error)} Create it with 1 partition, "
                    "cleanup.policy=delete, retention.ms=-1 and retention.bytes=-1"
                ) from None
            described = self._describe(admin)
            self._check(admin, partitions=len(described.partitions) if described else 1)

    def _check(self, admin: AdminClient, *, partitions: int) -> None:
        resource = ConfigResource(ResourceType.TOPIC, self.topic)
        try:
            entries = admin.describe_configs([resource])[resource].result(timeout=ADMIN_TIMEOUT_S)
            config = {name: entry.value for name, entry in entries.items()}
        except KafkaException as error:
            log.warning(
                "cannot read the settings of schema history topic %s (%s); only its partitions "
                "are checked",
                self.topic,
                _reason(error),
            )
            config = {}
        problems = topic_problems(self.topic, partitions=partitions, config=config)
        if problems:
            raise FatalError(
                f"the schema history topic {self.topic} would lose or reorder the history: "
                + "; ".join(problems)
            )

    def _consumer(self) -> Consumer:
        return Consumer(
            self._config(
                **{
                    "group.id": f"cdcflow-history-{uuid.uuid4()}",
                    "enable.auto.commit": False,
                    "auto.offset.reset": "earliest",
                    "isolation.level": "read_committed",
                    "logger": client_log,
                }
            )
        )

    def _watermarks(self, consumer: Consumer) -> tuple[int, int]:
        try:
            low, high = watermarks(
                consumer, TopicPartition(self.topic, PARTITION), timeout=ADMIN_TIMEOUT_S
            )
        except KafkaException as error:
            raise RetriableError(
                f"cannot read the end of schema history topic {self.topic}: {_reason(error)}"
            ) from None
        return int(low), int(high)

    def exists(self) -> bool:
        """Whether the topic holds any record (Debezium: end offset past the beginning)."""
        admin = AdminClient(self._config(logger=client_log))
        if self._describe(admin) is None:
            return False
        consumer = self._consumer()
        try:
            low, high = self._watermarks(consumer)
        finally:
            consumer.close()
        return high > low

    def record(self, change: SchemaChange) -> None:
        """Produce the record and wait until all in-sync replicas have it."""
        if self._transactions is not None:
            self._transactions.write(Record(self.topic, None, encode(change, server=self._server)))
            return
        if self._producer is None:
            raise RuntimeError("KafkaSchemaHistory.record() before start()")
        errors: list[KafkaError] = []

        def delivered(error: KafkaError | None, _message: object) -> None:
            if error is not None:
                errors.append(error)

        self._producer.produce(
            self.topic,
            encode(change, server=self._server),
            None,
            partition=PARTITION,
            on_delivery=delivered,
        )
        remaining = self._producer.flush(WRITE_TIMEOUT_S)
        if errors:
            error = errors[0]
            text = (
                f"Kafka rejected a schema history record for {self.topic}: {sentence(error.str())}"
            )
            if error.code() in RETRIABLE_CODES or error.retriable():
                raise RetriableError(text)
            raise FatalError(text)
        if remaining:
            raise RetriableError(
                f"a schema history record for {self.topic} was not acknowledged within "
                f"{WRITE_TIMEOUT_S:.0f}s; Kafka may be unreachable"
            )

    def changes(self) -> Iterator[SchemaChange]:
        """Every record from the beginning to the end offset at the time of the call."""
        consumer = self._consumer()
        try:
            low, high = self._watermarks(consumer)
            if high <= low:
                return
            consumer.assign([TopicPartition(self.topic, PARTITION, low)])
            position, empty = low, 0
            while position < high:
                message = consumer.poll(self._poll_s)
                if message is None:
                    if read_to(consumer, TopicPartition(self.topic, PARTITION), high):
                        return  # the rest are transaction markers or aborted records
                    empty += 1
                    if empty > self._attempts:
                        raise RetriableError(self._stalled(position, high))
                    continue
                error = message.error()
                if error is not None:
                    raise RetriableError(
                        f"cannot read schema history topic {self.topic}: {sentence(error.str())}"
                    )
                empty, offset = 0, message.offset() or 0
                if offset >= high:
                    return
                position = offset + 1
                value = message.value()
                if value is None:
                    log.warning("skipping a null record at offset %d of %s", offset, self.topic)
                    continue
                yield self._decode(value, offset)
        finally:
            consumer.close()

    def _stalled(self, position: int, high: int) -> str:
        return (
            f"the schema history in {self.topic} could not be read to its end (offset {position} "
            f"of {high}): {self._attempts} polls of {self._poll_s * 1000:.0f} ms returned "
            "nothing. Raise schema.history.internal.kafka.recovery.poll.interval.ms or "
            "schema.history.internal.kafka.recovery.attempts if Kafka is slow"
        )

    def _decode(self, value: bytes, offset: int) -> SchemaChange:
        try:
            return decode(value)
        except ValueError as error:
            raise FatalError(
                f"the record at offset {offset} of schema history topic {self.topic} is not a "
                f"schema history record ({error}); only this connector may write to its history "
                "topic. Point schema.history.internal.kafka.topic at a new topic and rebuild "
                "the history with snapshot.mode=recovery"
            ) from None

    def close(self) -> None:
        if self._producer is not None:
            self._producer.flush(CLOSE_TIMEOUT_S)
            self._producer.close()
            self._producer = None
