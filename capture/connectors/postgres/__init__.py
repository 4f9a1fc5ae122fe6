"""The PostgreSQL connector: pgoutput logical replication over psycopg 3."""
