"""The cdcflow capture engine: connectors, pipeline, offsets and sinks.

Imports stay light here: each connector's driver (psycopg, mysql-replication, ibm_db) and the
Kafka client load only when the engine is built for them.
"""
