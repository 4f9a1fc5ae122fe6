"""Every statement the Db2 connector issues, in one place.

Identifiers are always quoted with their stored (upper) case, parameters are ``?`` markers,
LSNs are compared as binary values bound as parameters (never ``X'…'`` literals), row limits
are ``FETCH FIRST n ROWS ONLY`` and multi-column key ranges are spelled out with ``AND``/``OR``
(Db2 has no row-value ``>``): Db2's SQL, which the test suite's emulation of Db2 runs too (it
translates the few Db2-only statements, the snapshot's locks, for its PostgreSQL).

The ASN objects read (``cdc.control.schema``, default ``ASNCDC``):

* ``IBMSNAP_REGISTER`` — one row per table in capture mode (``GLOBAL_RECORD = 'N'``): the
  source table, its change-data (CD) table, ``STATE`` (``A`` active, ``I`` inactive),
  ``CD_OLD_SYNCHPOINT`` (where the agent started capturing the table) and
  ``CD_NEW_SYNCHPOINT`` (its last captured commit); and the global row
  (``GLOBAL_RECORD = 'Y'``), whose ``SYNCHPOINT``/``SYNCHTIME`` the capture agent advances on
  every commit cycle.
* the CD tables (``cdc.change.tables.schema``): ``IBMSNAP_COMMITSEQ`` (commit LSN),
  ``IBMSNAP_INTENTSEQ`` (change LSN), ``IBMSNAP_OPERATION`` (``I``/``D``; an update is a
  ``D`` then an ``I`` in the same commit where ``CHG_UPD_TO_DEL_INS='Y'``, one ``U`` row
  otherwise) and the source table's columns (LOB and XML values are not copied).
* ``IBMSNAP_CAPPARMS`` — the agent's ``COMMIT_INTERVAL`` and ``SLEEP_INTERVAL`` (seconds)
  and ``RETENTION_LIMIT`` (minutes).

And the catalog: ``SYSCAT.TABLES`` and ``SYSCAT.COLUMNS``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

UPDATE_BEFORE, UPDATE_AFTER, DELETE, INSERT = 3, 4, 1, 2
"""The ``OPCODE`` the change query gives each CD row (Debezium's numbering)."""
UPDATE_ROW = 5
"""An update captured as one ``U`` row, its after image only (a registration with
``CHG_UPD_TO_DEL_INS='N'``, IBM's default outside Debezium's ``ADDTABLE``)."""


def quote(name: str) -> str:
    """A delimited identifier (its case kept)."""
    return '"' + name.replace('"', '""') + '"'


def table_name(schema: str, table: str) -> str:
    return f"{quote(schema)}.{quote(table)}"


#: A lock that keeps a table's structure from changing while it is read: a read of no row
#: under cursor stability takes the table's intent lock (Debezium's statement). Db2 keeps it
#: past a rollback to the savepoint taken before it, until the transaction ends.
SCHEMA_LOCK = "SELECT * FROM {table} WHERE 0=1 WITH CS"
#: Db2 requires a savepoint to say what a rollback to it does to open cursors.
SAVEPOINT = "SAVEPOINT {name} ON ROLLBACK RETAIN CURSORS"


def lock_timeout(timeout_ms: int) -> str:
    """``snapshot.lock.timeout.ms`` as Db2's ``CURRENT LOCK TIMEOUT`` (whole seconds): -1
    waits forever, 0 fails at once."""
    if timeout_ms < 0:
        return "SET CURRENT LOCK TIMEOUT WAIT"
    if timeout_ms == 0:
        return "SET CURRENT LOCK TIMEOUT NOT WAIT"
    return f"SET CURRENT LOCK TIMEOUT {max(1, round(timeout_ms / 1000))}"


ROLLBACK_TO_SAVEPOINT = "ROLLBACK TO SAVEPOINT {name}"
EXCLUSIVE_LOCK = "LOCK TABLE {table} IN EXCLUSIVE MODE"


@dataclass(frozen=True)
class AsnStatements:
    """The statements on the ASN control and change-data tables of one control schema."""

    control_schema: str = "ASNCDC"

    def _control(self, table: str) -> str:
        return table_name(self.control_schema, table)

    @property
    def max_lsn(self) -> str:
        """The highest commit LSN the agent has captured up to (Debezium's max LSN: the
        largest ``SYNCHPOINT`` or ``CD_NEW_SYNCHPOINT`` of the register)."""
        register = self._control("IBMSNAP_REGISTER")
        return (
            'SELECT t."SYNCHPOINT" FROM ('
            f'SELECT "CD_NEW_SYNCHPOINT" AS "SYNCHPOINT" FROM {register} '
            f'UNION ALL SELECT "SYNCHPOINT" FROM {register}) t '
            'WHERE t."SYNCHPOINT" IS NOT NULL '
            'ORDER BY t."SYNCHPOINT" DESC FETCH FIRST 1 ROWS ONLY'
        )

    @property
    def registrations(self) -> str:
        """Tables in capture mode: source, CD table, state, the LSN the agent started
        capturing the table at (``CD_OLD_SYNCHPOINT``) and how it stores updates."""
        return (
            'SELECT r."SOURCE_OWNER", r."SOURCE_TABLE", r."CD_OWNER", r."CD_TABLE", '
            'r."STATE", r."CD_OLD_SYNCHPOINT", r."CHG_UPD_TO_DEL_INS" '
            f"FROM {self._control('IBMSNAP_REGISTER')} r "
            "WHERE r.\"GLOBAL_RECORD\" = 'N' "
            'ORDER BY r."SOURCE_OWNER", r."SOURCE_TABLE"'
        )

    @property
    def agent_progress(self) -> str:
        """The global row's ``SYNCHPOINT`` and ``SYNCHTIME``: the agent's heartbeat."""
        return (
            'SELECT r."SYNCHPOINT", r."SYNCHTIME" '
            f"FROM {self._control('IBMSNAP_REGISTER')} r "
            "WHERE r.\"GLOBAL_RECORD\" = 'Y'"
        )

    @property
    def capture_parameters(self) -> str:
        """The agent's ``COMMIT_INTERVAL`` and ``SLEEP_INTERVAL`` in seconds."""
        return (
            'SELECT p."COMMIT_INTERVAL", p."SLEEP_INTERVAL" '
            f"FROM {self._control('IBMSNAP_CAPPARMS')} p FETCH FIRST 1 ROWS ONLY"
        )

    @property
    def retention_limit(self) -> str:
        """The agent's ``RETENTION_LIMIT`` in minutes: it prunes change rows older than that,
        read or not."""
        return (
            'SELECT p."RETENTION_LIMIT" '
            f"FROM {self._control('IBMSNAP_CAPPARMS')} p FETCH FIRST 1 ROWS ONLY"
        )


def first_change_after(cd_schema: str, cd_table: str) -> str:
    """When the first change committed after ``?`` (a commit LSN) was captured."""
    return (
        'SELECT cdc."IBMSNAP_LOGMARKER" '
        f"FROM {table_name(cd_schema, cd_table)} cdc "
        'WHERE cdc."IBMSNAP_COMMITSEQ" > ? '
        'ORDER BY cdc."IBMSNAP_COMMITSEQ" FETCH FIRST 1 ROWS ONLY'
    )


def changes(cd_schema: str, cd_table: str) -> str:
    """A CD table's rows committed in ``[?, ?]`` (commit LSNs, both ends inclusive) in
    (commit LSN, change LSN) order, each with Debezium's ``OPCODE``: 3 and 4 for the delete
    and insert an update was captured as, 1 a delete, 2 an insert; and 5 for an update
    stored as one ``U`` row, which Debezium's query leaves without a code (and drops)."""
    operation = 'cdc."IBMSNAP_OPERATION"'
    window = 'PARTITION BY cdc."IBMSNAP_COMMITSEQ" ORDER BY cdc."IBMSNAP_INTENTSEQ"'
    return (
        "SELECT CASE "
        f"WHEN {operation} = 'D' AND LEAD({operation}, 1, 'X') OVER ({window}) = 'I' "
        f"THEN {UPDATE_BEFORE} "
        f"WHEN {operation} = 'I' AND LAG({operation}, 1, 'X') OVER ({window}) = 'D' "
        f"THEN {UPDATE_AFTER} "
        f"WHEN {operation} = 'D' THEN {DELETE} "
        f"WHEN {operation} = 'I' THEN {INSERT} "
        f"WHEN {operation} = 'U' THEN {UPDATE_ROW} "
        'END AS "OPCODE", cdc.* '
        f"FROM {table_name(cd_schema, cd_table)} cdc "
        'WHERE cdc."IBMSNAP_COMMITSEQ" >= ? AND cdc."IBMSNAP_COMMITSEQ" <= ? '
        'ORDER BY cdc."IBMSNAP_COMMITSEQ", cdc."IBMSNAP_INTENTSEQ"'
    )


#: Columns of a table as the catalog describes them, in order. ``KEYSEQ`` > 0 marks the
#: primary key's columns; ``CODEPAGE`` 0 marks ``FOR BIT DATA`` character columns.
COLUMNS = (
    'SELECT c."COLNAME", c."COLNO", c."TYPENAME", c."LENGTH", c."SCALE", c."NULLS", '
    'c."KEYSEQ", c."DEFAULT", c."IDENTITY", c."GENERATED", c."CODEPAGE", c."REMARKS" '
    'FROM "SYSCAT"."COLUMNS" c WHERE c."TABSCHEMA" = ? AND c."TABNAME" = ? '
    'ORDER BY c."COLNO"'
)

#: Regular tables outside the catalog schemas, with their cardinality statistic (-1: never
#: collected).
TABLES = (
    'SELECT t."TABSCHEMA", t."TABNAME", t."CARD" FROM "SYSCAT"."TABLES" t '
    "WHERE t.\"TYPE\" = 'T' AND t.\"TABSCHEMA\" NOT LIKE 'SYS%' "
    'ORDER BY t."TABSCHEMA", t."TABNAME"'
)


def select_columns(schema: str, table: str, columns: Sequence[str]) -> str:
    """The snapshot's read of a table (unless ``snapshot.select.statement.overrides``)."""
    return f"SELECT {', '.join(map(quote, columns))} FROM {table_name(schema, table)}"


def key_after(key: Sequence[str]) -> str:
    """``key > (?, …)`` in key order, spelled out: ``a > ? OR (a = ? AND b > ?)``; its
    parameters are :func:`key_after_parameters`."""
    terms = []
    for index, column in enumerate(key):
        equal = [f"{quote(c)} = ?" for c in key[:index]]
        terms.append("(" + " AND ".join([*equal, f"{quote(column)} > ?"]) + ")")
    return "(" + " OR ".join(terms) + ")"


def key_after_parameters(values: Sequence[object]) -> list[object]:
    """The parameters of :func:`key_after` for the key ``values``."""
    parameters: list[object] = []
    for index in range(len(values)):
        parameters.extend(values[: index + 1])
    return parameters


def key_at_most(key: Sequence[str]) -> str:
    """``key <= (?, …)``, spelled out; parameters as :func:`key_after_parameters`."""
    terms = []
    for index, column in enumerate(key):
        equal = [f"{quote(c)} = ?" for c in key[:index]]
        last = "<=" if index == len(key) - 1 else "<"
        terms.append("(" + " AND ".join([*equal, f"{quote(column)} {last} ?"]) + ")")
    return "(" + " OR ".join(terms) + ")"


def chunk(
    schema: str,
    table: str,
    *,
    columns: Sequence[str],
    key: Sequence[str],
    after: bool,
    condition: str | None,
    limit: int,
) -> str:
    """An incremental snapshot chunk: rows with ``after < key <= up_to`` in key order."""
    where = [key_at_most(key)]
    if after:
        where.insert(0, key_after(key))
    if condition:
        where.append(f"({condition})")
    order = ", ".join(map(quote, key))
    return (
        f"{select_columns(schema, table, columns)} WHERE {' AND '.join(where)} "
        f"ORDER BY {order} FETCH FIRST {int(limit)} ROWS ONLY"
    )


def max_key(schema: str, table: str, *, key: Sequence[str], condition: str | None) -> str:
    """The largest key of a table's rows (that meet ``condition``)."""
    where = f" WHERE {condition}" if condition else ""
    descending = ", ".join(f"{quote(c)} DESC" for c in key)
    return (
        f"SELECT {', '.join(map(quote, key))} FROM {table_name(schema, table)}{where} "
        f"ORDER BY {descending} FETCH FIRST 1 ROWS ONLY"
    )


def insert_signal(schema: str, table: str) -> str:
    """A signal row (id, type, data), as Debezium's signal table has them in this order."""
    return f"INSERT INTO {table_name(schema, table)} VALUES (?, ?, ?)"


def delete_signal(schema: str, table: str, id_column: str) -> str:
    return f"DELETE FROM {table_name(schema, table)} WHERE {quote(id_column)} = ?"
