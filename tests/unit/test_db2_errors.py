"""The Db2 driver's messages as users read them: ibm_db_dbi's wording reduced to Db2's."""

from __future__ import annotations

from cdcflow.capture.connectors.db2.connection import describe_error, sqlcode

#: ``str()`` of a real ibm_db_dbi error, verbatim (its shape: ibm_db_dbi.py Error.__str__ and
#: ibm_db.c's "Statement Execute Failed: " prefix).
REAL = (
    "ibm_db_dbi::ProgrammingError: Statement Execute Failed: [IBM][CLI Driver][DB2/LINUXX8664] "
    'SQL0204N  "DB2INST1.MISSING" is an undefined name.  SQLSTATE=42704 SQLCODE=-204'
)


def test_a_real_driver_message_loses_the_driver_prefixes_and_keeps_db2s_words() -> None:
    described = describe_error(Exception(REAL))
    assert described.startswith('SQL0204N  "DB2INST1.MISSING" is an undefined name.')
    assert "ibm_db_dbi" not in described and "Statement Execute Failed" not in described
    assert sqlcode(Exception(REAL)) == -204


def test_a_connect_failure_loses_its_prefix_and_never_shows_the_password() -> None:
    message = (
        "ibm_db_dbi::OperationalError: [IBM][CLI Driver] SQL30082N  Security processing failed "
        'with reason "24" ("USERNAME AND/OR PASSWORD INVALID") for s3cret.  SQLSTATE=08001 '
        "SQLCODE=-30082"
    )
    described = describe_error(Exception(message), password="s3cret")
    assert described.startswith("SQL30082N  Security processing failed")
    assert "s3cret" not in described
