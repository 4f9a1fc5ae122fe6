"""PySpark jobs that consume cdcflow change topics and apply them to lakehouse tables."""
