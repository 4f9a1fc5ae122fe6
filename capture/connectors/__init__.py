"""Database connectors: each turns one database's log into spi events."""
