"""Everything that talks to Kafka through confluent-kafka: producer sink and offset store."""
