"""The MySQL/MariaDB connector: binlog streaming, consistent snapshots, schema history."""
