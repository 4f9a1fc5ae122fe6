-- The tables this example captures, run once as a superuser in the `inventory` database:
--   psql -h <host> -U postgres -d inventory -f examples/postgres-to-delta/schema.sql
-- PostgreSQL needs wal_level=logical (postgresql.conf; a restart) for any change capture.

CREATE TABLE IF NOT EXISTS public.customers (
    id    serial PRIMARY KEY,
    name  text NOT NULL,
    email text UNIQUE
);

CREATE TABLE IF NOT EXISTS public.orders (
    id          serial PRIMARY KEY,
    customer_id int NOT NULL REFERENCES public.customers (id),
    placed      date NOT NULL DEFAULT current_date,   -- signal.yaml's backfill filters on it
    amount      numeric(10, 2) NOT NULL
);

-- The signal table (spec.signals.table): incremental snapshots write their watermarks here.
-- It is read, never captured into the topics or the lake.
CREATE TABLE IF NOT EXISTS public.debezium_signal (
    id   varchar(42) PRIMARY KEY,
    type varchar(32) NOT NULL,
    data text
);

-- The connector's login (secret.yaml): replication, reads, and writes to the signal table.
DO $$ BEGIN
    CREATE ROLE cdc WITH LOGIN REPLICATION PASSWORD 'change-me';
EXCEPTION WHEN duplicate_object THEN NULL;
END $$;
GRANT SELECT ON public.customers, public.orders TO cdc;
GRANT SELECT, INSERT ON public.debezium_signal TO cdc;

-- The publication, made here by the table owner: the connector (publication.autocreate.mode:
-- disabled) only uses it, so its login needs no ownership of the tables, and deleting the
-- connector never drops it. Its name is the connector's default: <topic prefix>_publication.
DO $$ BEGIN
    CREATE PUBLICATION inventory_publication
        FOR TABLE public.customers, public.orders, public.debezium_signal;
EXCEPTION WHEN duplicate_object THEN NULL;
END $$;
