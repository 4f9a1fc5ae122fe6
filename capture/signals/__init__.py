"""Signals: ad hoc commands to a running connector, and the snapshots they drive.

A signal is Debezium's ``(id, type, data)`` triple, ``data`` a JSON object: ``execute-snapshot``,
``stop-snapshot``, ``pause-snapshot``, ``resume-snapshot`` and ``log``, plus the
``snapshot-window-open``/``-close`` watermarks the snapshotter writes itself.

- :mod:`.commands` parses signals into commands; a malformed one becomes a ``SignalError``
  that is reported and skipped, never raised into the event loop.
- :mod:`.channels` routes signals from their channels to the snapshotter: the source channel
  (inserts into ``signal.data.collection`` arriving through the log) and the Kafka channel
  (``signal.kafka.topic``, polled by :mod:`cdcflow.capture.kafka.signals`, which lives with the
  other confluent-kafka code). It also delivers notifications to the log, the notification
  topic, HTTP and the engine's ``/status``.
- :mod:`.incremental` runs the snapshots: incremental ones in chunks between DBLog watermarks
  while streaming goes on (resumable from the offsets), and blocking ones.
"""
