"""The coordinator: one connector's running parts and the loop that runs them.

:meth:`Engine.run` loads the offset, recovers the schema history, snapshots if
``snapshot.mode`` says so, then streams until stopped. Retriable failures after the connector
first came up restart it from the last durable offset with backoff; fatal ones stop it with
their message. :mod:`cdcflow.capture.assembly` builds the parts from a CdcConnector.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from cdcflow.capture import native, replay
from cdcflow.capture import snapshot as snapshots
from cdcflow.capture.capabilities import (
    Discarding,
    Heartbeats,
    Historized,
    LogBudgets,
    LogMessages,
    PositionWatermarks,
    SignalWriter,
)
from cdcflow.capture.config import ConfigError, EngineProperties, HistorizedProperties
from cdcflow.capture.connector_resource import CdcConnector
from cdcflow.capture.converting import ConversionError
from cdcflow.capture.credentials import kafka_security
from cdcflow.capture.envelope import Framing, context_headers
from cdcflow.capture.errors import FatalError, RetriableError, sentence
from cdcflow.capture.filters import Filters
from cdcflow.capture.log_budget import LogBudgetWatch
from cdcflow.capture.notify_http import HttpNotifier
from cdcflow.capture.pipeline import Dispatcher, Pipeline
from cdcflow.capture.signals.channels import Notifications, SignalInbox, Signalling
from cdcflow.capture.signals.incremental import IncrementalSnapshotter
from cdcflow.capture.spi import (
    ChunkSource,
    Connector,
    Offset,
    OffsetStore,
    Record,
    SchemaChange,
    SchemaHistory,
    Sink,
)
from cdcflow.capture.stats import Stats
from cdcflow.capture.topics import TopicNames

log = logging.getLogger(__name__)

MAX_BACKOFF_S = 300.0
FIRST_RETRY_S = 0.5


def retry_delay(attempt: int, wait: float) -> float:
    """Seconds before retry ``attempt`` (1, 2, …) after a lost connection: 0.5 s, doubling up
    to ``retriable.restart.connector.wait.ms`` (10 s by default), so a blip costs half a second
    and a long outage is not hammered."""
    first = min(FIRST_RETRY_S, wait)
    return min(max(wait, first), first * 2.0 ** min(attempt - 1, 20), MAX_BACKOFF_S)


@dataclass
class Engine:
    """One connector's running parts."""

    resource: CdcConnector
    properties: EngineProperties
    connector: Connector
    filters: Filters
    sink: Sink
    offsets: OffsetStore
    stats: Stats
    history: SchemaHistory | None = None
    """Where a historized connector's schema changes are kept (None for PostgreSQL)."""
    stop: threading.Event = field(default_factory=threading.Event)
    _http_notifier: HttpNotifier | None = field(default=None, init=False, repr=False)
    _inbox: SignalInbox = field(default_factory=SignalInbox, init=False, repr=False)

    def send_signal(self, signal_id: str, signal_type: str, data: str) -> bool:
        """Insert a signal into the signal table unless a row with this id exists (idempotent);
        under ``read.only``, hand it to the streaming thread instead (nothing is written)."""
        if self.properties.read_only:
            return self._inbox.put(signal_id, signal_type, data)
        if not self.properties.signal_data_collection:
            raise ConfigError("no signal.data.collection configured")
        if not isinstance(self.connector, SignalWriter):
            raise ConfigError(f"the {self.resource.spec.source.kind} connector takes no signals")
        return self.connector.insert_signal(
            table=self.properties.signal_data_collection,
            signal_id=signal_id,
            signal_type=signal_type,
            data=data,
        )

    def _pipeline(self) -> Pipeline:
        headers = (
            context_headers(
                logical_name=self.properties.topic_prefix,
                # Debezium names the connector type here (its context's connector name)
                connector_name=self.resource.spec.source.kind,
                run_id=str(uuid.uuid4()),
            )
            if self.properties.extended_headers_enabled
            else ()
        )
        framing = Framing(
            topics=TopicNames.from_properties(self.properties),
            source_schema=self.connector.source_schema,
            key_schemas=self.properties.key_converter_schemas_enable,
            value_schemas=self.properties.value_converter_schemas_enable,
            context_headers=headers,
        )
        dispatcher = Dispatcher(
            properties=self.properties,
            framing=framing,
            filters=self.filters,
            sink=self.sink,
            stats=self.stats,
        )
        return Pipeline(
            dispatcher=dispatcher,
            sink=self.sink,
            offsets=self.offsets,
            properties=self.properties,
            stats=self.stats,
            stop=self.stop,
            on_heartbeat=(
                self.connector.heartbeat if isinstance(self.connector, Heartbeats) else None
            ),
            message_record=(
                self.connector.message_record if isinstance(self.connector, LogMessages) else None
            ),
            history=self.history,
            schema_change_record=self._schema_change_records(headers),
        )

    def _schema_change_records(
        self, headers: tuple[tuple[str, bytes], ...]
    ) -> Callable[[SchemaChange], Record] | None:
        """The schema-change topic's records, when ``include.schema.changes`` is on (with
        the data records' ``__debezium.context.*`` headers, as Debezium writes them)."""
        properties = self.properties
        if (
            not isinstance(properties, HistorizedProperties)
            or not properties.include_schema_changes
        ):
            return None
        from cdcflow.capture.schema_changes import SchemaChangeRecords

        return SchemaChangeRecords(
            topic=properties.topic_prefix,
            connector=self.resource.spec.source.kind,
            source_schema=self.connector.source_schema,
            key_schemas=properties.key_converter_schemas_enable,
            value_schemas=properties.value_converter_schemas_enable,
            headers=headers,
        ).record

    def _recover(self, offset: Offset | None) -> None:
        """Rebuild a historized connector's table structures as of ``offset``."""
        connector, history = self.connector, self.history
        if not isinstance(connector, Historized) or history is None:
            return
        history.start()
        if offset is not None and not offset.connector_values():
            offset = None  # only an interrupted snapshot's marker: it starts over
        if self.properties.snapshot_mode in snapshots.HISTORY_REBUILDING_MODES:
            log.info(
                "snapshot.mode=%s: rebuilding the schema history", self.properties.snapshot_mode
            )
        elif history.exists():
            connector.recover(history.changes(), offset)
        elif offset is not None:
            raise FatalError(
                "the schema history is empty but the connector has stored offsets, so rows "
                "cannot be decoded with the structure they were written with. Rebuild the "
                "history with snapshot.mode=recovery (the structure as it is now), or reset the "
                "offsets (`cdcflow offsets reset`) to snapshot again"
            )

    def run(self) -> None:
        """Run until stopped; retry retriable failures once the connector has come up.

        Stopping waits up to ``executor.shutdown.timeout.ms`` for the HTTP notifications
        still queued.
        """
        if outdated := native.stale():
            log.warning(
                "%s were compiled from older sources and run that older code; rebuild them "
                "(python -m cdcflow.capture.native build) or remove them (… native clean)",
                ", ".join(outdated),
            )
        try:
            self._run_with_retries()
        finally:
            if self._http_notifier is not None:
                self._http_notifier.close(self.properties.executor_shutdown_timeout_ms / 1000)
            self.sink.close()
            self.offsets.close()

    def _http_notifications(self) -> HttpNotifier | None:
        """The ``http`` notification channel, made once per engine, when it is enabled."""
        properties = self.properties
        if "http" in properties.notification_enabled_channels and self._http_notifier is None:
            self._http_notifier = HttpNotifier(
                url=properties.notification_http_url,
                timeout_s=properties.notification_http_timeout_ms / 1000,
                retries=properties.notification_http_retries,
                allow_private=properties.notification_http_allow_private_networks,
            )
        return self._http_notifier

    def _run_with_retries(self) -> None:
        attempt, came_up = 0, False
        wait = self.properties.retriable_restart_connector_wait_ms / 1000
        while not self.stop.is_set():
            committed = self.stats.offsets_committed
            try:
                self._run_once()
                return
            except InterruptedError as stopped:
                log.info("%s", stopped)
                self.stats.phase = "stopped"
                return
            except RetriableError as error:
                limit = self.properties.errors_max_retries
                if not came_up and self.stats.phase == "starting":
                    raise FatalError(str(error)) from None
                if self.stats.offsets_committed > committed:
                    attempt = 0  # it worked again in between: this is a new outage (Debezium)
                attempt += 1
                if 0 <= limit < attempt:
                    raise
                came_up = True
                delay = retry_delay(attempt, wait)
                self.stats.last_error = str(error)
                self.stats.connected = False
                log.warning("%s; restarting from the last offset in %.1fs", error, delay)
                if isinstance(self.sink, Discarding):  # exactly once: nothing of this run
                    self.sink.discard()
                self.connector.close()
                self.stop.wait(delay)
            finally:
                if self.stats.phase in ("snapshot", "streaming"):
                    came_up = True

    def _run_once(self) -> None:
        pipeline = self._pipeline()
        connector, properties, stats = self.connector, self.properties, self.stats
        finished, watch = False, None
        try:
            offset = self.offsets.load()
            self._recover(offset)
            stats.captured_tables = [str(t) for t in connector.prepare()]
            stats.connected = True
            pipeline.dispatcher.signalling = self._signalling(pipeline, offset)
            mode = properties.snapshot_mode
            plan = snapshots.plan_start(
                mode,
                offset,
                position_available=connector.position_available(offset),
                configured=_configuration_based(properties),
            )
            offset = plan.offset
            if plan.stream:  # initial_only opens no slot, as Debezium: it would hold WAL for nobody
                connector.prepare_stream(
                    for_snapshot=plan.snapshot, offset=None if plan.snapshot else offset
                )
                watch = self._watch_log_budget()  # once the slot exists
            if plan.snapshot and properties.snapshot_strategy == "chunked":
                offset = self._chunked_snapshot(pipeline)
            elif plan.snapshot:
                offset = self._snapshot(pipeline, stored=offset)
            elif isinstance(connector, Historized) and snapshots.needs_structure(mode, offset):
                offset = self._structure_snapshot(pipeline, stored=offset)
            if not plan.stream:
                log.info("snapshot.mode=%s: not streaming", mode)
                stats.phase = "stopped"
                finished = True
                return
            if plan.snapshot and not self._delay_streaming():
                stats.phase = "stopped"
                finished = True
                return
            source = connector.streaming(offset)
            log.info("streaming changes")
            with _start_up_objects_frozen():
                pipeline.dispatcher.resume(offset)
                pipeline.stream(source, delivered=_delivered_before(connector, offset))
            stats.phase = "stopped"
            finished = True
        except ConversionError as error:
            raise FatalError(
                f"{sentence(error)} Fix the value; or set event.converting.failure.handling.mode"
                "=warn (or skip) to emit a nullable column's value as null"
            ) from None
        finally:
            if watch is not None:
                watch.close()
            if pipeline.dispatcher.signalling is not None:
                pipeline.dispatcher.signalling.close()
            connector.close(stopping=finished)

    def _watch_log_budget(self) -> LogBudgetWatch | None:
        """Measure the log the connector holds back every ``log.budget.check.interval.ms``."""
        interval_ms = self.properties.log_budget_check_interval_ms
        if not interval_ms or not isinstance(self.connector, LogBudgets):
            return None
        return LogBudgetWatch(
            self.connector.log_budget, self.stats, interval_s=interval_ms / 1000
        ).start()

    def _delay_streaming(self) -> bool:
        """``streaming.delay.ms`` after a snapshot; False when stopped meanwhile."""
        delay_ms = self.properties.streaming_delay_ms
        if not delay_ms:
            return True
        log.info("streaming.delay.ms: streaming starts in %d ms", delay_ms)
        return not self.stop.wait(delay_ms / 1000)

    def _signalling(self, pipeline: Pipeline, offset: Offset | None) -> Signalling | None:
        """Signals and incremental snapshots, when a signal table is set or under
        ``read.only`` (signals then come through Kafka or ``POST /signals``)."""
        properties = self.properties
        kafka_channel = "kafka" in properties.signal_enabled_channels
        if not properties.signal_data_collection and not properties.read_only:
            if kafka_channel:
                log.warning(
                    "signal.enabled.channels includes kafka but signal.data.collection is not "
                    "set: incremental snapshots need the signal table for their watermarks"
                )
            return None
        notify = Notifications(
            channels=properties.notification_enabled_channels,
            topic=properties.notification_sink_topic_name,
            sink=self.sink,
            stats=self.stats,
            http=self._http_notifications(),
        )
        source = self.connector.chunk_source()
        positions = None
        if properties.read_only:
            if not isinstance(source, PositionWatermarks):
                raise FatalError(
                    f"read.only: the {self.resource.spec.source.kind} connector cannot place "
                    "a chunk read in its log without writing a watermark row"
                )
            positions = source
        snapshotter = IncrementalSnapshotter(
            source=source,
            chunk_size=properties.incremental_snapshot_chunk_size,
            strategy=properties.incremental_snapshot_watermarking_strategy,
            connector_name=self.resource.metadata.name,
            emit=pipeline.dispatcher.row,
            notify=notify,
            allow_schema_changes=properties.incremental_snapshot_allow_schema_changes,
            stats=self.stats,
            readers=self._parallel_readers(),
            positions=positions,
        )
        signalling = Signalling(
            snapshotter=snapshotter,
            notify=notify,
            kafka=self._kafka_signals() if kafka_channel else None,
            strategy=properties.incremental_snapshot_watermarking_strategy,
            inbox=self._inbox if properties.read_only else None,
            watches_positions=positions is not None,
        )
        signalling.restore(offset)
        return signalling

    def _parallel_readers(self) -> list[ChunkSource]:
        """Chunk sources beyond the first, one per further ``snapshot.max.threads``: a window
        of the chunked initial snapshot reads a chunk of that many tables at once."""
        properties = self.properties
        if properties.snapshot_strategy != "chunked":
            return []
        return [self.connector.chunk_source() for _ in range(properties.snapshot_max_threads - 1)]

    def _kafka_signals(self) -> Any:
        from cdcflow.capture.kafka.signals import KafkaSignalChannel

        properties = self.properties
        bootstrap = properties.signal_kafka_bootstrap_servers or (
            self.resource.spec.kafka.bootstrap_servers if self.resource.spec.kafka else ""
        )
        if not bootstrap:
            raise ConfigError("signal.enabled.channels=kafka needs signal.kafka.bootstrap.servers")
        return KafkaSignalChannel(
            bootstrap_servers=bootstrap,
            client_config=kafka_security(self.resource.spec.kafka)
            if self.resource.spec.kafka
            else None,
            topic=properties.signal_kafka_topic or f"{properties.topic_prefix}-signal",
            group_id=properties.signal_kafka_group_id,
            server=properties.topic_prefix,
            timeout_ms=properties.signal_kafka_poll_timeout_ms,
        )

    def _snapshot(self, pipeline: Pipeline, *, stored: Offset | None) -> Offset | None:
        """Take the snapshot; its offset replays the log from where an earlier attempt (or
        run) stood, when that was earlier (:mod:`cdcflow.capture.replay`)."""
        self._snapshot_delay()
        tables = self.connector.snapshot_tables()
        self.stats.start_snapshot({str(table): rows for table, rows in tables.items()})
        marker = Offset({snapshots.SNAPSHOT_IN_PROGRESS: True})
        self.offsets.save(marker)
        log.info("snapshot of %d table(s) starting", len(tables))
        started = time.monotonic()
        steps = self.connector.snapshot_steps(list(tables))
        try:
            steps.lock()
            offset = steps.position()
            replay_from = self._replay_start(stored) or offset
            # before any row is sent: a next attempt replays the log from here
            self.offsets.save(marker.replaying_from(replay_from))
            for change in steps.structure():
                pipeline.schema_change(change)
            steps.release()
            rows = snapshots.mark_positions(steps.rows(), first_table=next(iter(tables), None))
            in_progress = marker.replaying_from(replay_from)
            pipeline.snapshot(
                snapshots.track_tables(rows, self.stats),
                checkpoint=in_progress if self.properties.exactly_once else None,
            )
        except InterruptedError as stopped:
            self.stats.finish_snapshot(aborted=True)
            raise InterruptedError(f"{stopped}; the next start takes the snapshot again") from None
        finally:
            steps.close()
        offset = replay.snapshot_offset(offset, replay_from=replay_from, order_key=self._order_key)
        pipeline.commit(offset, None)
        self.stats.finish_snapshot()
        log.info(
            "snapshot completed: %d rows in %.1fs",
            sum(p.rows_scanned for p in self.stats.tables.values()),
            time.monotonic() - started,
        )
        return offset

    def _snapshot_delay(self) -> None:
        if self.properties.snapshot_delay_ms:
            log.info("snapshot.delay.ms: waiting %d ms", self.properties.snapshot_delay_ms)
            if self.stop.wait(self.properties.snapshot_delay_ms / 1000):
                raise InterruptedError("stopped before the snapshot")

    def _chunked_snapshot(self, pipeline: Pipeline) -> Offset:
        """``snapshot.strategy=chunked``: record the structure at the current position (briefly
        locked as ``snapshot.locking.mode`` says), queue every table's chunks, and commit that
        position with the queue; the chunks are read while streaming from it. Until that
        commit the offset says a snapshot is in progress, so a stop before it starts again."""
        self._snapshot_delay()
        signalling = pipeline.dispatcher.signalling
        assert signalling is not None, "the configuration requires signal.data.collection"
        tables = self.connector.snapshot_tables()
        self.offsets.save(Offset({snapshots.SNAPSHOT_IN_PROGRESS: True}))
        steps = self.connector.snapshot_steps(list(tables))
        try:
            steps.lock()
            offset = steps.position()
            for change in steps.structure():
                pipeline.schema_change(change)
            steps.release()
        finally:
            steps.close()
        signalling.snapshotter.begin_initial(tables)
        pipeline.commit(offset, None)
        log.info("chunked snapshot of %d table(s) starts with streaming", len(tables))
        return offset

    def _replay_start(self, stored: Offset | None) -> Offset | None:
        """Where the log must be read again from after this snapshot: an interrupted
        attempt's position, or the position a previous run reached (while the server keeps
        it); None on a first snapshot."""
        if stored is None:
            return None
        if (start := stored.replay_start()) is not None:
            return start
        if stored.connector_values() and self.connector.position_available(stored):
            return stored
        return None

    def _order_key(self, offset: Offset) -> tuple[Any, ...]:
        return self.connector.position(offset).order_key()

    def _structure_snapshot(self, pipeline: Pipeline, *, stored: Offset | None) -> Offset | None:
        """A historized connector's snapshot of the tables' structure and no rows
        (``no_data``, and the ``recovery`` modes, which record it at the stored offset)."""
        tables = list(self.connector.snapshot_tables())
        log.info("snapshot of the structure of %d table(s) (no rows)", len(tables))
        steps = self.connector.snapshot_steps(tables)
        try:
            steps.lock()
            offset = steps.position()
            for change in steps.structure():
                pipeline.schema_change(change if stored is None else replace(change, offset=stored))
            steps.release()
        finally:
            steps.close()
        if stored is not None:
            return stored
        pipeline.commit(offset, None)
        return offset


def _delivered_before(
    connector: Connector, offset: Offset | None
) -> Callable[[Offset], bool] | None:
    """Whether a transaction committing at a position was delivered before ``offset``."""
    if offset is None:
        return None
    stored = connector.position(offset.replay_start() or offset).order_key()
    return lambda commits_at: connector.position(commits_at).order_key() < stored


def _configuration_based(properties: EngineProperties) -> snapshots.ConfigurationBased:
    """The ``snapshot.mode.configuration.based.*`` switches."""
    return snapshots.ConfigurationBased(
        snapshot_data=properties.snapshot_mode_configuration_based_snapshot_data,
        snapshot_schema=properties.snapshot_mode_configuration_based_snapshot_schema,
        start_stream=properties.snapshot_mode_configuration_based_start_stream,
        snapshot_on_schema_error=properties.snapshot_mode_configuration_based_snapshot_on_schema_error,
        snapshot_on_data_error=properties.snapshot_mode_configuration_based_snapshot_on_data_error,
    )


@contextlib.contextmanager
def _start_up_objects_frozen() -> Iterator[None]:
    """Keep what is alive when streaming starts (modules, clients, schemas: ~75k objects) out
    of the cyclic garbage collector's full collections, which otherwise pause the event thread
    for ~25 ms each (a latency tail); released when streaming ends, so whatever a retry leaves
    behind is collected as usual."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
