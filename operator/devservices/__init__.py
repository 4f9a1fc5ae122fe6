"""Throwaway database and broker processes for `cdcflow demo` and the test suite.

PostgreSQL, Kafka and the process helpers they share; the launchers only the tests need
(Kubernetes, Kafka Connect, MariaDB, …) are in ``tests.services``, outside the wheel.

Each service starts on 127.0.0.1 on a free port inside a temporary directory and installs
what it is missing into the cache directory (``~/.cache/cdcflow`` unless ``CDCFLOW_CACHE``
says otherwise) on first use.
"""
