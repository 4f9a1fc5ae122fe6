"""Signal channels and notifications around the incremental snapshotter.

Routes signals from the source channel (rows of ``signal.data.collection`` arriving in the
log), the Kafka channel (``signal.kafka.topic``) and, under ``read.only``, the inbox of
``POST /signals`` to the :class:`IncrementalSnapshotter`,
reports malformed signals instead of failing on them, and publishes notifications to the log,
the notification topic (``notification.enabled.channels=sink``) and the engine's ``/status``.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections import deque
from collections.abc import Callable
from typing import Any, Protocol

import orjson

from cdcflow.capture.errors import SnapshotQueryError
from cdcflow.capture.signals import commands
from cdcflow.capture.signals.incremental import IncrementalSnapshotter, Notification
from cdcflow.capture.spi import Offset, Op, Record, RowChange, Sink
from cdcflow.capture.stats import Stats

log = logging.getLogger(__name__)
RECENT_NOTIFICATIONS = 200


class KafkaSignals(Protocol):
    """A polled Kafka signal channel (see :mod:`cdcflow.capture.kafka.signals`)."""

    def poll(self) -> list[tuple[bytes | None, bytes | None, str]]: ...

    def close(self) -> None: ...


class SignalInbox:
    """Signals handed to the engine directly — ``POST /signals`` (a CdcSnapshotSignal) under
    ``read.only``, where nothing may be inserted into a signal table — until the streaming
    thread takes them. An id seen before is refused, as a signal row's primary key is."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: deque[tuple[str, str, str]] = deque()
        self._seen: set[str] = set()

    def put(self, signal_id: str, signal_type: str, data: str) -> bool:
        """Keep the signal; False when its id came before."""
        with self._lock:
            if signal_id in self._seen:
                return False
            self._seen.add(signal_id)
            self._waiting.append((signal_id, signal_type, data))
            return True

    def take(self) -> list[tuple[str, str, str]]:
        with self._lock:
            taken = list(self._waiting)
            self._waiting.clear()
            return taken


class Notifications:
    """Delivers notifications to the enabled channels and keeps the recent ones for /status."""

    def __init__(
        self,
        *,
        channels: tuple[str, ...],
        topic: str,
        sink: Sink,
        stats: Stats,
        http: Callable[[Notification], None] | None = None,
    ) -> None:
        self._http = http if "http" in channels else None
        self._log = "log" in channels
        self._topic = topic if "sink" in channels and topic else ""
        self._sink = sink
        self._stats = stats
        self.recent: deque[dict[str, Any]] = deque(maxlen=RECENT_NOTIFICATIONS)

    def __call__(self, notification: Notification) -> None:
        document = notification.to_dict()
        self.recent.append(document)
        signal_id = notification.additional_data.get("signal_id", "")
        if signal_id:
            entry = self._stats.signals.setdefault(signal_id, {})
            entry["aggregateType"] = notification.aggregate_type
            entry["status"] = notification.type
            entry.setdefault("events", []).append(
                {"type": notification.type, **notification.additional_data}
            )
        if self._log:
            log.info(
                "notification %s %s %s",
                notification.aggregate_type,
                notification.type,
                notification.additional_data,
            )
        if self._topic:
            key = orjson.dumps(signal_id or notification.id)
            self._sink.write(Record(self._topic, key, orjson.dumps(document)))
        if self._http is not None:
            self._http(notification)


class Signalling:
    """Everything signal-driven for one connector."""

    def __init__(
        self,
        *,
        snapshotter: IncrementalSnapshotter,
        notify: Notifications,
        kafka: KafkaSignals | None,
        strategy: str,
        inbox: SignalInbox | None = None,
        watches_positions: bool = False,
    ) -> None:
        self.snapshotter = snapshotter
        self._notify = notify
        self._kafka = kafka
        self._strategy = strategy
        self._inbox = inbox
        #: ``read.only``: the pipeline reports streamed positions (:meth:`on_position`)
        self.watches_positions = watches_positions

    # -- hooks called by the dispatcher and the pipeline -------------------------------------

    def on_signal_row(self, change: RowChange) -> None:
        """A change of the signal table: inserts are signals, deletes may close a window."""
        if change.op is Op.DELETE and change.before is not None:
            if self._strategy == "insert_delete":
                self.snapshotter.on_watermark_deleted(str(change.before[0]), change)
            return
        if change.op is not Op.CREATE or change.after is None:
            return  # snapshot reads of old signal rows must not run them again
        signal_id, signal_type, data = (*change.after, None, None, None)[:3]
        self._handle(
            lambda: commands.parse(str(signal_id), str(signal_type), data, channel="source"),
            change,
        )

    def poll(self) -> None:
        """Act on signals waiting in the Kafka channel and the inbox."""
        if self._inbox is not None:
            for signal_id, signal_type, data in self._inbox.take():
                self._handle(
                    functools.partial(commands.parse, signal_id, signal_type, data, channel="http"),
                    None,
                )
        if self._kafka is None:
            return
        for key, value, position in self._kafka.poll():
            self._handle(
                functools.partial(commands.parse_kafka, key, value, position=position), None
            )

    def _handle(self, parse: Callable[[], commands.Signal], change: RowChange | None) -> None:
        try:
            signal = parse()
            if signal.type == "log":
                log.info("signal %s: %s", signal.id, signal.data.get("message", ""))
                return
            self.snapshotter.on_signal(signal, change)
        except commands.SignalError as error:
            self._reject(error.signal_id, str(error))
        except SnapshotQueryError as error:
            self._reject("", str(error))

    def _reject(self, signal_id: str, reason: str) -> None:
        log.warning("signal %s rejected: %s", signal_id or "?", reason)
        self._notify(
            Notification(
                "Signal",
                "REJECTED",
                {"connector_name": "", "signal_id": signal_id, "reason": reason},
            )
        )

    def on_change(self, change: RowChange) -> None:
        self.snapshotter.on_change(change)

    def on_position(self, offset: Offset) -> None:
        """Streaming reached ``offset`` (a commit, a transaction's commit position, a
        keepalive): a ``read.only`` window closes once past its chunk's position."""
        try:
            self.snapshotter.on_position(offset)
        except SnapshotQueryError as error:
            self._reject("", str(error))

    @property
    def chunk_closed(self) -> bool:
        """A snapshot chunk closed since the last commit: commit it now."""
        return self.snapshotter.chunk_closed

    def decorate(self, offset: Offset) -> Offset:
        return self.snapshotter.decorate(offset)

    def restore(self, offset: Offset | None) -> None:
        self.snapshotter.restore(offset)

    def start(self) -> None:
        try:
            self.snapshotter.start()
        except SnapshotQueryError as error:
            self._reject("", str(error))

    def close(self) -> None:
        self.snapshotter.close()
        if self._kafka is not None:
            self._kafka.close()
