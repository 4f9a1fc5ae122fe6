-- The Db2 side of the test suite's Db2 emulation, played inside PostgreSQL.
--
-- No Db2 server can run on the project's machines, so this script recreates, in a dedicated
-- PostgreSQL database, the objects the Db2 connector reads (capture/connectors/db2/sql.py),
-- with the same QUOTED UPPER-CASE names:
--
-- * ASN SQL replication's control tables "ASNCDC"."IBMSNAP_REGISTER" and "IBMSNAP_CAPPARMS";
-- * the catalog views "SYSCAT"."TABLES", "SYSCAT"."COLUMNS" and "SYSIBM"."SYSDUMMY1",
--   reporting PostgreSQL columns under Db2's type names;
-- * Debezium's management routines "ASNCDC"."ADDTABLE", "REMOVETABLE" and "ASNCDCSERVICES"
--   (also callable unquoted, as the documentation writes them: asncdc.addtable(...));
-- * "DB2TYPES": domains for the Db2 types PostgreSQL lacks (DECFLOAT, CLOB, BLOB, GRAPHIC,
--   VARGRAPHIC, DBCLOB, XML, BINARY, CHARACTER/VARCHAR FOR BIT DATA); a sized one is made by
--   "DB2TYPES"."SIZED"('VARGRAPHIC', 20), which returns its qualified name.
--
-- The capture agent itself (agent.py) reads the agent's wishes from "ASNCDC"."EMULATION_AGENT"
-- and its publication and slot names from the same row. The installer substitutes nothing:
-- it fills that row after running this script.

CREATE SCHEMA "ASNCDC";
CREATE SCHEMA "SYSCAT";
CREATE SCHEMA "SYSIBM";
CREATE SCHEMA "DB2TYPES";
CREATE SCHEMA asncdc;

-- ---------------------------------------------------------------------------------------
-- ASN control tables
-- ---------------------------------------------------------------------------------------

CREATE TABLE "ASNCDC"."IBMSNAP_REGISTER" (
    "SOURCE_OWNER" varchar(128) NOT NULL,
    "SOURCE_TABLE" varchar(128) NOT NULL,
    "SOURCE_VIEW_QUAL" smallint NOT NULL DEFAULT 0,
    "GLOBAL_RECORD" char(1) NOT NULL DEFAULT 'N',
    "SOURCE_STRUCTURE" smallint NOT NULL DEFAULT 1,
    "SOURCE_CONDENSED" char(1) NOT NULL DEFAULT 'N',
    "SOURCE_COMPLETE" char(1) NOT NULL DEFAULT 'Y',
    "CD_OWNER" varchar(128),
    "CD_TABLE" varchar(128),
    "PHYS_CHANGE_OWNER" varchar(128),
    "PHYS_CHANGE_TABLE" varchar(128),
    "CD_OLD_SYNCHPOINT" bytea,
    "CD_NEW_SYNCHPOINT" bytea,
    "DISABLE_REFRESH" smallint NOT NULL DEFAULT 0,
    "SYNCHPOINT" bytea,
    "SYNCHTIME" timestamp,
    "STATE" char(1) NOT NULL DEFAULT 'I',
    "STATE_TIME" timestamp NOT NULL DEFAULT now(),
    "STATE_INFO" char(8),
    -- IBM's default: an update is one 'U' row (Debezium's ADDTABLE writes 'Y': a D and an I)
    "CHG_UPD_TO_DEL_INS" char(1) NOT NULL DEFAULT 'N',
    "CHGONLY" char(1) NOT NULL DEFAULT 'N',
    "RECAPTURE" char(1) NOT NULL DEFAULT 'Y',
    "STOP_ON_ERROR" char(1) NOT NULL DEFAULT 'Y',
    PRIMARY KEY ("SOURCE_OWNER", "SOURCE_TABLE", "SOURCE_VIEW_QUAL")
);

-- The global row: the agent's position (SYNCHPOINT) and heartbeat (SYNCHTIME).
INSERT INTO "ASNCDC"."IBMSNAP_REGISTER" ("SOURCE_OWNER", "SOURCE_TABLE", "GLOBAL_RECORD", "STATE")
VALUES (' ', ' ', 'Y', 'A');

CREATE TABLE "ASNCDC"."IBMSNAP_CAPPARMS" (
    "RETENTION_LIMIT" integer NOT NULL DEFAULT 10080,
    "LAG_LIMIT" integer NOT NULL DEFAULT 10080,
    "COMMIT_INTERVAL" integer NOT NULL DEFAULT 30,
    "PRUNE_INTERVAL" integer NOT NULL DEFAULT 300,
    "SLEEP_INTERVAL" integer NOT NULL DEFAULT 5,
    "STARTMODE" varchar(10) NOT NULL DEFAULT 'WARMSI'
);
INSERT INTO "ASNCDC"."IBMSNAP_CAPPARMS" DEFAULT VALUES;

-- What ASNCDCSERVICES asked of the agent, and what the agent last did (emulation only).
CREATE TABLE "ASNCDC"."EMULATION_AGENT" (
    "ONE_ROW" boolean PRIMARY KEY DEFAULT true CHECK ("ONE_ROW"),
    "REQUESTED_STATE" varchar(8) NOT NULL DEFAULT 'started',
    "ACTUAL_STATE" varchar(8) NOT NULL DEFAULT 'stopped',
    "REINITS_REQUESTED" bigint NOT NULL DEFAULT 0,
    "REINITS_DONE" bigint NOT NULL DEFAULT 0,
    "LAST_CYCLE" timestamp,
    "PUBLICATION" text NOT NULL DEFAULT '',
    "SLOT" text NOT NULL DEFAULT ''
);
INSERT INTO "ASNCDC"."EMULATION_AGENT" DEFAULT VALUES;

-- ---------------------------------------------------------------------------------------
-- Db2 types PostgreSQL lacks
-- ---------------------------------------------------------------------------------------

CREATE DOMAIN "DB2TYPES"."DECFLOAT" AS numeric;
CREATE DOMAIN "DB2TYPES"."DECFLOAT(16)" AS numeric;
CREATE DOMAIN "DB2TYPES"."DECFLOAT(34)" AS numeric;
CREATE DOMAIN "DB2TYPES"."CLOB" AS text;
CREATE DOMAIN "DB2TYPES"."DBCLOB" AS text;
CREATE DOMAIN "DB2TYPES"."BLOB" AS bytea;
CREATE DOMAIN "DB2TYPES"."XML" AS xml;
CREATE DOMAIN "DB2TYPES"."GRAPHIC" AS char(1);

-- A sized Db2 type, e.g. SIZED('VARGRAPHIC', 20) → "DB2TYPES"."VARGRAPHIC(20)" (made once).
CREATE FUNCTION "DB2TYPES"."SIZED"(type_name text, size integer) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    domain_name text := upper(type_name) || '(' || size || ')';
    base text := CASE upper(type_name)
        WHEN 'GRAPHIC' THEN format('char(%s)', size)
        WHEN 'VARGRAPHIC' THEN format('varchar(%s)', size)
        WHEN 'CLOB' THEN 'text'
        WHEN 'DBCLOB' THEN 'text'
        WHEN 'DECFLOAT' THEN 'numeric'
        WHEN 'BLOB' THEN 'bytea'
        WHEN 'BINARY' THEN 'bytea'
        WHEN 'VARBINARY' THEN 'bytea'
        WHEN 'CHARACTER FOR BIT DATA' THEN 'bytea'
        WHEN 'VARCHAR FOR BIT DATA' THEN 'bytea'
    END;
BEGIN
    IF base IS NULL THEN
        RAISE EXCEPTION 'no sized Db2 type %', type_name USING ERRCODE = '42704';
    END IF;
    IF to_regtype(format('%I.%I', 'DB2TYPES', domain_name)) IS NULL THEN
        EXECUTE format('CREATE DOMAIN %I.%I AS %s', 'DB2TYPES', domain_name, base);
    END IF;
    RETURN format('%I.%I', 'DB2TYPES', domain_name);
END $$;

-- How SYSCAT.COLUMNS describes a column of type (type_oid, type_mod): Db2's TYPENAME,
-- LENGTH (bytes for numbers and dates, precision for DECIMAL, characters for strings),
-- SCALE and CODEPAGE (0: binary or not character data).
CREATE FUNCTION "DB2TYPES"."DESCRIBE"(
    type_oid oid, type_mod integer,
    OUT type_name varchar(128), OUT length integer, OUT scale smallint, OUT codepage smallint
) LANGUAGE plpgsql STABLE AS $$
DECLARE
    t pg_type;
    parts text[];
    size integer;
BEGIN
    SELECT * INTO t FROM pg_type WHERE oid = type_oid;
    scale := 0;
    codepage := 0;
    IF t.typtype = 'd' AND t.typnamespace = '"DB2TYPES"'::regnamespace THEN
        parts := regexp_match(t.typname, '^(.*?)(?:\((\d+)\))?$');
        type_name := parts[1];
        size := parts[2]::integer;
        IF size IS NULL AND t.typtypmod > 4 AND t.typbasetype IN ('bpchar'::regtype, 'varchar'::regtype) THEN
            size := t.typtypmod - 4;
        END IF;
        IF type_name LIKE '% FOR BIT DATA' THEN
            type_name := regexp_replace(type_name, ' FOR BIT DATA$', '');
        ELSIF type_name IN ('GRAPHIC', 'VARGRAPHIC', 'DBCLOB') THEN
            codepage := 1200;
        ELSIF type_name = 'CLOB' THEN
            codepage := 1208;
        END IF;
        length := CASE
            WHEN type_name = 'DECFLOAT' THEN CASE WHEN size = 16 THEN 8 ELSE 16 END
            WHEN size IS NOT NULL THEN size
            WHEN type_name IN ('CLOB', 'BLOB', 'DBCLOB') THEN 1048576
            WHEN type_name = 'GRAPHIC' THEN 1
            ELSE 0
        END;
        RETURN;
    END IF;
    IF t.typtype = 'd' THEN  -- another domain: described as its base type
        SELECT d.type_name, d.length, d.scale, d.codepage
          INTO type_name, length, scale, codepage
          FROM "DB2TYPES"."DESCRIBE"(t.typbasetype, t.typtypmod) d;
        RETURN;
    END IF;
    CASE type_oid
        WHEN 'int2'::regtype THEN type_name := 'SMALLINT'; length := 2;
        WHEN 'int4'::regtype THEN type_name := 'INTEGER'; length := 4;
        WHEN 'int8'::regtype THEN type_name := 'BIGINT'; length := 8;
        WHEN 'float4'::regtype THEN type_name := 'REAL'; length := 4;
        WHEN 'float8'::regtype THEN type_name := 'DOUBLE'; length := 8;
        WHEN 'numeric'::regtype THEN
            IF type_mod < 0 THEN  -- unconstrained: Db2's DECFLOAT(34)
                type_name := 'DECFLOAT'; length := 16;
            ELSE
                type_name := 'DECIMAL';
                length := ((type_mod - 4) >> 16) & 65535;
                scale := (type_mod - 4) & 65535;
            END IF;
        WHEN 'bpchar'::regtype THEN
            type_name := 'CHARACTER'; length := greatest(type_mod - 4, 1); codepage := 1208;
        WHEN 'varchar'::regtype THEN
            type_name := 'VARCHAR'; codepage := 1208;
            length := CASE WHEN type_mod > 4 THEN type_mod - 4 ELSE 32672 END;
        WHEN 'text'::regtype THEN type_name := 'CLOB'; length := 1048576; codepage := 1208;
        WHEN 'bytea'::regtype THEN type_name := 'VARBINARY'; length := 32672;
        WHEN 'date'::regtype THEN type_name := 'DATE'; length := 4;
        WHEN 'time'::regtype THEN type_name := 'TIME'; length := 3;
        WHEN 'timestamp'::regtype, 'timestamptz'::regtype THEN
            type_name := 'TIMESTAMP';
            scale := CASE WHEN type_mod < 0 THEN 6 ELSE type_mod END;
            length := 7 + (scale + 1) / 2;
        WHEN 'bool'::regtype THEN type_name := 'BOOLEAN'; length := 1;
        WHEN 'xml'::regtype THEN type_name := 'XML'; length := 0;
        ELSE
            type_name := upper(t.typname); length := greatest(t.typlen, 0);
    END CASE;
END $$;

-- A column default as Db2's catalog writes it: 'abc', 42, CURRENT TIMESTAMP (NULL: none).
CREATE FUNCTION "DB2TYPES"."DEFAULT_TEXT"(expression text) RETURNS varchar(254)
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    bare text;
BEGIN
    IF expression IS NULL OR expression LIKE 'nextval(%' THEN
        RETURN NULL;
    END IF;
    IF expression IN ('now()', 'CURRENT_TIMESTAMP', 'LOCALTIMESTAMP', 'CURRENT_TIMESTAMP(6)') THEN
        RETURN 'CURRENT TIMESTAMP';
    ELSIF expression = 'CURRENT_DATE' THEN
        RETURN 'CURRENT DATE';
    ELSIF expression IN ('CURRENT_TIME', 'LOCALTIME') THEN
        RETURN 'CURRENT TIME';
    ELSIF expression IN ('CURRENT_USER', 'SESSION_USER', 'USER') THEN
        RETURN 'USER';
    END IF;
    -- strip the casts PostgreSQL adds: '-1'::integer, 'abc'::character varying
    bare := regexp_replace(expression, '(::[a-zA-Z_ ."]+(\([0-9, ]+\))?)+$', '');
    IF bare ~ '^''-?[0-9]+(\.[0-9]+)?''$' THEN
        RETURN btrim(bare, '''');
    ELSIF bare IN ('true', 'false') THEN
        RETURN upper(bare);
    END IF;
    RETURN bare;
END $$;

-- ---------------------------------------------------------------------------------------
-- The catalog views
-- ---------------------------------------------------------------------------------------

CREATE VIEW "SYSIBM"."SYSDUMMY1" AS SELECT 'Y'::char(1) AS "IBMREQD";

CREATE VIEW "SYSCAT"."TABLES" AS
SELECT n.nspname::varchar(128) AS "TABSCHEMA",
       c.relname::varchar(128) AS "TABNAME",
       (CASE WHEN c.relkind IN ('r', 'p') THEN 'T' ELSE 'V' END)::char(1) AS "TYPE",
       (CASE WHEN c.reltuples < 0 THEN -1 ELSE c.reltuples::bigint END) AS "CARD",
       obj_description(c.oid, 'pg_class')::varchar(254) AS "REMARKS"
  FROM pg_class c
  JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE c.relkind IN ('r', 'p', 'v')
   AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast',
                         'ASNCDC', 'asncdc', 'DB2TYPES', 'SYSCAT', 'SYSIBM')
   AND n.nspname NOT LIKE 'pg\_%';

CREATE VIEW "SYSCAT"."COLUMNS" AS
SELECT n.nspname::varchar(128) AS "TABSCHEMA",
       c.relname::varchar(128) AS "TABNAME",
       a.attname::varchar(128) AS "COLNAME",
       (row_number() OVER (PARTITION BY c.oid ORDER BY a.attnum) - 1)::smallint AS "COLNO",
       d.type_name AS "TYPENAME",
       d.length AS "LENGTH",
       d.scale AS "SCALE",
       (CASE WHEN a.attnotnull THEN 'N' ELSE 'Y' END)::char(1) AS "NULLS",
       (SELECT k.position::smallint
          FROM pg_index i, unnest(i.indkey) WITH ORDINALITY AS k(attnum, position)
         WHERE i.indrelid = c.oid AND i.indisprimary AND k.attnum = a.attnum) AS "KEYSEQ",
       (CASE WHEN a.attgenerated = '' THEN "DB2TYPES"."DEFAULT_TEXT"(pg_get_expr(ad.adbin, ad.adrelid))
        END) AS "DEFAULT",
       (CASE WHEN a.attidentity <> '' OR pg_get_expr(ad.adbin, ad.adrelid) LIKE 'nextval(%'
             THEN 'Y' ELSE 'N' END)::char(1) AS "IDENTITY",
       (CASE WHEN a.attidentity = 'a' OR a.attgenerated = 's' THEN 'A'
             WHEN a.attidentity = 'd' OR pg_get_expr(ad.adbin, ad.adrelid) LIKE 'nextval(%' THEN 'D'
             ELSE ' ' END)::char(1) AS "GENERATED",
       d.codepage AS "CODEPAGE",
       col_description(c.oid, a.attnum)::varchar(254) AS "REMARKS"
  FROM pg_attribute a
  JOIN pg_class c ON c.oid = a.attrelid
  JOIN pg_namespace n ON n.oid = c.relnamespace
  LEFT JOIN pg_attrdef ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum
  CROSS JOIN LATERAL "DB2TYPES"."DESCRIBE"(a.atttypid, a.atttypmod) d
 WHERE c.relkind IN ('r', 'p', 'v')
   AND a.attnum > 0 AND NOT a.attisdropped
   AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast')
   AND n.nspname NOT LIKE 'pg\_%';

-- ---------------------------------------------------------------------------------------
-- ASNCDC.ADDTABLE / REMOVETABLE / ASNCDCSERVICES
-- ---------------------------------------------------------------------------------------

-- Put a table in capture mode as Debezium's ADDTABLE does: full before-images, its CD table,
-- an ACTIVE registration storing updates as a D and an I row (the agent starts capturing it
-- at its next reinit) and the table in the agent's publication. SQL Replication does not
-- support BOOLEAN columns (Debezium's documentation: such tables can only be snapshotted), so
-- a table with one is refused. As the script joins the names into its statements unquoted,
-- Db2 folds them to upper case: a table whose name has lower-case letters cannot be added.
CREATE PROCEDURE "ASNCDC"."ADDTABLE"(given_schema text, given_name text)
LANGUAGE plpgsql AS $$
DECLARE
    -- Debezium's script joins the names unquoted into its statements: Db2 folds them
    table_schema text := upper(given_schema);
    table_name text := upper(given_name);
    source regclass := format('%I.%I', table_schema, table_name)::regclass;
    cd_name text := 'CDC_' || table_schema || '_' || table_name;
    columns text;
    publication text;
    unsupported text;
BEGIN
    SELECT string_agg(c."COLNAME", ', ') INTO unsupported FROM "SYSCAT"."COLUMNS" c
     WHERE c."TABSCHEMA" = table_schema AND c."TABNAME" = table_name AND c."TYPENAME" = 'BOOLEAN';
    IF unsupported IS NOT NULL THEN
        RAISE EXCEPTION 'SQL Replication does not support the BOOLEAN column(s) % of %.%: such a table can only be snapshotted',
            unsupported, table_schema, table_name USING ERRCODE = '42997';
    END IF;
    EXECUTE format('ALTER TABLE %s REPLICA IDENTITY FULL', source);
    SELECT string_agg(format('%I %s', a.attname, format_type(a.atttypid, a.atttypmod)), ', '
                      ORDER BY a.attnum)
      INTO columns
      FROM pg_attribute a
     WHERE a.attrelid = source AND a.attnum > 0 AND NOT a.attisdropped;
    EXECUTE format('DROP TABLE IF EXISTS %I.%I', 'ASNCDC', cd_name);
    EXECUTE format(
        'CREATE TABLE %I.%I ("IBMSNAP_COMMITSEQ" bytea NOT NULL, '
        '"IBMSNAP_INTENTSEQ" bytea NOT NULL, "IBMSNAP_OPERATION" char(1) NOT NULL, '
        '"IBMSNAP_LOGMARKER" timestamp NOT NULL, %s)', 'ASNCDC', cd_name, columns);
    EXECUTE format('CREATE INDEX ON %I.%I ("IBMSNAP_COMMITSEQ", "IBMSNAP_INTENTSEQ")',
                   'ASNCDC', cd_name);
    INSERT INTO "ASNCDC"."IBMSNAP_REGISTER"
        ("SOURCE_OWNER", "SOURCE_TABLE", "GLOBAL_RECORD", "SOURCE_CONDENSED", "CD_OWNER",
         "CD_TABLE", "PHYS_CHANGE_OWNER", "PHYS_CHANGE_TABLE", "STATE", "STATE_TIME",
         "CHG_UPD_TO_DEL_INS")
    VALUES (table_schema, table_name, 'N', 'Y', 'ASNCDC', cd_name, 'ASNCDC', cd_name, 'A', now(),
            'Y')
    ON CONFLICT ("SOURCE_OWNER", "SOURCE_TABLE", "SOURCE_VIEW_QUAL") DO UPDATE
       SET "CD_OWNER" = EXCLUDED."CD_OWNER", "CD_TABLE" = EXCLUDED."CD_TABLE",
           "STATE" = 'A', "STATE_TIME" = now(), "CHG_UPD_TO_DEL_INS" = 'Y',
           "CD_NEW_SYNCHPOINT" = NULL, "CD_OLD_SYNCHPOINT" = NULL;
    SELECT a."PUBLICATION" INTO publication FROM "ASNCDC"."EMULATION_AGENT" a;
    IF NOT EXISTS (SELECT 1 FROM pg_publication_rel r JOIN pg_publication p ON p.oid = r.prpubid
                    WHERE p.pubname = publication AND r.prrelid = source) THEN
        EXECUTE format('ALTER PUBLICATION %I ADD TABLE %s', publication, source);
    END IF;
END $$;

-- Take a table out of capture mode: its registration and CD table go.
CREATE PROCEDURE "ASNCDC"."REMOVETABLE"(given_schema text, given_name text)
LANGUAGE plpgsql AS $$
DECLARE
    table_schema text := upper(given_schema);
    table_name text := upper(given_name);
    registration record;
    publication text;
    source regclass := to_regclass(format('%I.%I', table_schema, table_name));
BEGIN
    DELETE FROM "ASNCDC"."IBMSNAP_REGISTER"
     WHERE "SOURCE_OWNER" = table_schema AND "SOURCE_TABLE" = table_name
       AND "GLOBAL_RECORD" = 'N'
    RETURNING "CD_OWNER", "CD_TABLE" INTO registration;
    IF registration IS NOT NULL THEN
        EXECUTE format('DROP TABLE IF EXISTS %I.%I', registration."CD_OWNER",
                       registration."CD_TABLE");
    END IF;
    SELECT a."PUBLICATION" INTO publication FROM "ASNCDC"."EMULATION_AGENT" a;
    IF source IS NOT NULL AND EXISTS (
        SELECT 1 FROM pg_publication_rel r JOIN pg_publication p ON p.oid = r.prpubid
         WHERE p.pubname = publication AND r.prrelid = source) THEN
        EXECUTE format('ALTER PUBLICATION %I DROP TABLE %s', publication, source);
    END IF;
END $$;

-- Debezium's asncdc UDF: 'start', 'stop', 'reinit' or 'status' of the capture agent.
CREATE FUNCTION "ASNCDC"."ASNCDCSERVICES"(action text, control_schema text) RETURNS varchar(2000)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    agent "ASNCDC"."EMULATION_AGENT";
BEGIN
    CASE lower(action)
        WHEN 'start' THEN
            UPDATE "ASNCDC"."EMULATION_AGENT" SET "REQUESTED_STATE" = 'started';
            RETURN 'asncap started for ' || control_schema;
        WHEN 'stop' THEN
            UPDATE "ASNCDC"."EMULATION_AGENT" SET "REQUESTED_STATE" = 'stopped';
            RETURN 'asncap stopped for ' || control_schema;
        WHEN 'reinit' THEN
            UPDATE "ASNCDC"."EMULATION_AGENT" SET "REINITS_REQUESTED" = "REINITS_REQUESTED" + 1;
            RETURN 'asncap reinitialised for ' || control_schema;
        WHEN 'status' THEN
            SELECT * INTO agent FROM "ASNCDC"."EMULATION_AGENT";
            IF agent."ACTUAL_STATE" = 'started' THEN
                RETURN 'asncap is doing work (last cycle ' || coalesce(agent."LAST_CYCLE"::text, '-') || ')';
            END IF;
            RETURN 'asncap is not running';
        ELSE
            RAISE EXCEPTION 'unknown action % (start, stop, reinit, status)', action
                USING ERRCODE = '22023';
    END CASE;
END $$;

-- The unquoted spellings of the documentation: CALL ASNCDC.ADDTABLE('DB2INST1','CUSTOMERS');
-- and VALUES (ASNCDC.ASNCDCSERVICES('reinit','asncdc')) -- PostgreSQL's VALUES needs the
-- parentheses Db2's does not.
CREATE PROCEDURE asncdc.addtable(table_schema text, table_name text)
LANGUAGE sql AS $$ CALL "ASNCDC"."ADDTABLE"(table_schema, table_name) $$;
CREATE PROCEDURE asncdc.removetable(table_schema text, table_name text)
LANGUAGE sql AS $$ CALL "ASNCDC"."REMOVETABLE"(table_schema, table_name) $$;
CREATE FUNCTION asncdc.asncdcservices(action text, control_schema text) RETURNS varchar(2000)
LANGUAGE sql VOLATILE AS $$ SELECT "ASNCDC"."ASNCDCSERVICES"(action, control_schema) $$;
