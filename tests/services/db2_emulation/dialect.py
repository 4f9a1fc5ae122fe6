"""Db2 SQL as the emulation's PostgreSQL runs it.

The tests write Db2's SQL, so the same statements run against a real Db2
(``CDCFLOW_DB2_DSN``) and against the emulation. :func:`to_postgres` rewrites, outside quoted
identifiers and string literals, what PostgreSQL spells otherwise:

* the Db2 types PostgreSQL lacks, as the emulation's ``DB2TYPES`` domains (``CLOB``,
  ``DBCLOB``, ``BLOB``, ``XML``, ``DECFLOAT``), ``DOUBLE`` as ``DOUBLE PRECISION``,
  ``VARBINARY(n)``/``BINARY(n)`` and ``… FOR BIT DATA`` as ``bytea``;
* binary string constants ``BX'00FF'`` as ``'\\x00ff'::bytea``.

Anything else passes unchanged: PostgreSQL then refuses what Db2 would not accept either
(or accepts more; the translation makes no promise beyond the forms listed).
"""

from __future__ import annotations

import re

#: Quoted identifiers and string literals, kept as they are.
_QUOTED = re.compile(r"(\"(?:[^\"]|\"\")*\"|'(?:[^']|'')*')")
_BINARY_CONSTANT = re.compile(r"\bBX'([0-9A-Fa-f]*)'")
_TYPES = re.compile(
    r"\b(?:(?P<lob>CLOB|DBCLOB|BLOB)(?:\s*\(\s*\d+\s*[KMG]?\s*\))?"
    r"|(?P<xml>XML)\b"
    r"|DECFLOAT(?:\s*\(\s*(?P<digits>16|34)\s*\))?"
    r"|(?P<bits>(?:VAR)?CHAR(?:ACTER)?\s*\(\s*\d+\s*\)\s+FOR\s+BIT\s+DATA\b"
    r"|(?:VAR)?BINARY\s*\(\s*\d+\s*\))"
    r"|(?P<double>DOUBLE)\b(?!\s+PRECISION))",
    re.IGNORECASE,
)


def _type(found: re.Match[str]) -> str:
    if found["lob"]:
        return f'"DB2TYPES"."{found["lob"].upper()}"'
    if found["xml"]:
        return '"DB2TYPES"."XML"'
    if found["bits"]:
        return "bytea"
    if found["double"]:
        return "DOUBLE PRECISION"
    digits = found["digits"]
    return f'"DB2TYPES"."DECFLOAT({digits})"' if digits else '"DB2TYPES"."DECFLOAT"'


def to_postgres(statement: str) -> str:
    """``statement`` (Db2 SQL) as PostgreSQL runs it in the emulation."""
    statement = _BINARY_CONSTANT.sub(lambda m: f"'\\x{m.group(1).lower()}'::bytea", statement)
    parts = _QUOTED.split(statement)
    for index in range(0, len(parts), 2):  # even parts are outside quotes
        parts[index] = _TYPES.sub(_type, parts[index])
    return "".join(parts)
