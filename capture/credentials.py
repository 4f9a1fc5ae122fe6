"""A connector's secrets: the database login and Kafka's, from the environment or files.

In Kubernetes the operator maps the credentials Secret to ``CDCFLOW_DATABASE_USER`` and
``CDCFLOW_DATABASE_PASSWORD`` (or ``…_FILE`` paths); locally ``--credentials-file`` names a
YAML file. Kafka's SASL login and CA come the same way (:func:`kafka_security`). Passwords
never appear in a repr or a log line.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from cdcflow.capture.config import ConfigError
from cdcflow.capture.connector_resource import KafkaSpec

KAFKA_CA_FILE = "/etc/cdcflow/kafka-ca/ca.crt"


@dataclass(frozen=True)
class Login:
    """Database credentials; the password never appears in repr or logs."""

    user: str
    password: str = field(repr=False)
    #: ``database.sslpassword``: the password of the client key (database.sslkey), if any.
    ssl_password: str = field(default="", repr=False)

    @classmethod
    def from_environment(cls, credentials_file: Path | None = None) -> Login:
        """Read ``CDCFLOW_DATABASE_USER``/``_PASSWORD``/``_SSLPASSWORD`` or a credentials file."""
        if credentials_file is not None:
            return cls._from_file(credentials_file)
        user = os.environ.get("CDCFLOW_DATABASE_USER", "")
        password = _secret("CDCFLOW_DATABASE_PASSWORD")
        ssl_password = _secret("CDCFLOW_DATABASE_SSLPASSWORD")
        if not user:
            raise ConfigError(
                "no database user: set CDCFLOW_DATABASE_USER and CDCFLOW_DATABASE_PASSWORD "
                "(in Kubernetes they come from the credentials Secret), or pass "
                "--credentials-file with `username:` and `password:` lines"
            )
        return cls(user, password, ssl_password)

    @classmethod
    def _from_file(cls, path: Path) -> Login:
        import yaml

        try:
            document = yaml.safe_load(path.read_text())
        except (OSError, yaml.YAMLError) as error:
            raise ConfigError(f"cannot read credentials file {path}: {error}") from None
        if not isinstance(document, dict) or "username" not in document:
            raise ConfigError(f"{path} must hold `username:` and `password:` entries")
        return cls(
            str(document["username"]),
            str(document.get("password", "")),
            str(document.get("sslpassword", "")),
        )


def _secret(variable: str) -> str:
    """An environment secret, or the contents of the file ``<variable>_FILE`` names."""
    path = os.environ.get(f"{variable}_FILE")
    return Path(path).read_text().strip() if path else os.environ.get(variable, "")


def kafka_security(spec: KafkaSpec) -> dict[str, str]:
    """librdkafka TLS/SASL settings from the spec; secrets come from the environment.

    In the capture pod the operator maps the Kafka Secret to ``CDCFLOW_KAFKA_USERNAME`` and
    ``CDCFLOW_KAFKA_PASSWORD`` and mounts the CA at ``/etc/cdcflow/kafka-ca/ca.crt``.
    """
    tls = spec.tls is not None and spec.tls.enabled
    config: dict[str, str] = {}
    if spec.authentication is not None:
        user = os.environ.get("CDCFLOW_KAFKA_USERNAME", "")
        if not user:
            raise ConfigError(
                "spec.kafka.authentication is set but CDCFLOW_KAFKA_USERNAME/_PASSWORD are not "
                f"(they come from Secret {spec.authentication.secret_name} in the cluster)"
            )
        config |= {
            "security.protocol": "SASL_SSL" if tls else "SASL_PLAINTEXT",
            "sasl.mechanism": spec.authentication.mechanism,
            "sasl.username": user,
            "sasl.password": os.environ.get("CDCFLOW_KAFKA_PASSWORD", ""),
        }
    elif tls:
        config["security.protocol"] = "SSL"
    if tls and spec.tls is not None and spec.tls.ca_secret_name:
        config["ssl.ca.location"] = os.environ.get("CDCFLOW_KAFKA_CA_FILE", KAFKA_CA_FILE)
    return config
