"""Connection errors through IBM's real ibm_db driver: each says what is wrong, with Db2's
SQLCODE, whether a retry can help, and never the password.

No Db2 server runs here, but the driver itself does: it reports a refused port, a host name
that cannot resolve and an unreadable CA file the way it would against any Db2.
"""

from __future__ import annotations

import socket

import pytest

from cdcflow.capture.connectors.db2.connection import Endpoint, connect
from cdcflow.capture.errors import FatalError, RetriableError

PASSWORD = "s3cret-db2-pw"


def _closed_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def _endpoint(**changes: object) -> Endpoint:
    settings: dict[str, object] = {
        "host": "127.0.0.1",
        "port": _closed_port(),
        "database": "TESTDB",
        "user": "db2inst1",
        "password": PASSWORD,
        "connect_timeout_s": 2.0,
    }
    settings.update(changes)
    return Endpoint(**settings)  # type: ignore[arg-type]


def test_a_refused_port_is_retriable_and_names_the_sqlcode_and_db2s_port() -> None:
    endpoint = _endpoint()
    with pytest.raises(RetriableError) as caught:
        connect(endpoint)
    message = str(caught.value)
    assert "SQLCODE=-30081" in message
    assert f"127.0.0.1:{endpoint.port}" in message and "50000" in message
    assert PASSWORD not in message
    assert "ibm_db_dbi::" not in message and "[IBM]" not in message


def test_a_host_name_that_cannot_be_a_host_is_reported_with_sql1336() -> None:
    # Spaces make the name invalid before any lookup leaves the machine.
    with pytest.raises(RetriableError, match=r"does not resolve.*SQLCODE=-1336") as caught:
        connect(_endpoint(host="no such host"))
    assert "spec.source.db2.host" in str(caught.value)
    assert PASSWORD not in str(caught.value)


def test_an_unreadable_ca_certificate_is_named_before_connecting() -> None:
    with pytest.raises(FatalError, match=r"database\.ssl\.ca=/nonexistent/ca\.arm cannot be read"):
        connect(_endpoint(ssl=True, ssl_ca="/nonexistent/ca.arm"))
