"""Bad input a user gives any connector, asserted once for every connector kind: ``cdcflow
capture`` as a user runs it stops at start with a message that says what to check, never a
traceback, never the password it was given."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from cdcflow.capture.connector_resource import CdcConnector
from cdcflow.operator.devservices.processes import free_port
from tests.plugins.fix_capture import assert_clean_failure
from tests.plugins.fix_conformance import ConnectorDriver

SECRET = "not-the-password-4711"


def _capture(
    driver: ConnectorDriver, resource: CdcConnector, *, password: str, tmp_path: Path
) -> subprocess.CompletedProcess[str]:
    path = driver.capture.write_yaml(resource)
    env = {
        **os.environ,
        "CDCFLOW_DATABASE_USER": driver.login.user,
        "CDCFLOW_DATABASE_PASSWORD": password,
    }
    command = [
        sys.executable, "-m", "cdcflow.operator.cli", "capture", "-f", str(path),
        "--offsets-file", str(tmp_path / "offsets.json"), "--status-port", "-1",
    ]  # fmt: skip
    return subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=120, check=False
    )


def test_a_wrong_password_stops_at_start_naming_where_the_credentials_come_from(
    driver: ConnectorDriver, tmp_path: Path
) -> None:
    table = driver.table("login")
    driver.create_table(table)
    result = _capture(driver, driver.resource([table]), password=SECRET, tmp_path=tmp_path)
    assert_clean_failure(result, "credentials Secret", "CDCFLOW_DATABASE_PASSWORD", secret=SECRET)


def test_a_closed_port_stops_at_start_saying_what_to_check(
    driver: ConnectorDriver, tmp_path: Path
) -> None:
    table = driver.table("port")
    driver.create_table(table)
    document = driver.resource([table]).model_dump(by_alias=True, exclude_none=True)
    document["spec"]["source"][driver.kind]["port"] = free_port()
    resource = CdcConnector.model_validate(document)
    result = _capture(driver, resource, password=driver.login.password, tmp_path=tmp_path)
    assert_clean_failure(result, "is running and reachable", secret=SECRET)


def test_filters_that_match_no_table_stop_at_start_naming_the_lists(
    driver: ConnectorDriver, tmp_path: Path
) -> None:
    table = driver.table("filtered")
    driver.create_table(table)
    typo = "nosuchschema\\.no_such_table"
    resource = driver.resource([table], **{"table.include.list": typo})
    result = _capture(driver, resource, password=driver.login.password, tmp_path=tmp_path)
    assert_clean_failure(result, "no table matches the filters", typo, secret=SECRET)
