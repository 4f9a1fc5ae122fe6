"""Where the Kafka sink puts keyed records: on the partition the Java client (and so Debezium
on Kafka Connect) would pick, so consumers co-partitioned with Java producers keep working."""

from __future__ import annotations

from cdcflow.capture.kafka.producer import KafkaSink
from cdcflow.capture.spi import Record
from cdcflow.operator.devservices import kafka
from tests.plugins.fix_kafka import read_topic_to_end, unique_topic_name

MASK = 0xFFFFFFFF


def _java_murmur2(data: bytes) -> int:
    """``org.apache.kafka.common.utils.Utils.murmur2`` on 32-bit unsigned arithmetic."""
    m, length = 0x5BD1E995, len(data)
    h = (0x9747B28C ^ length) & MASK
    for i in range(0, length - length % 4, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * m) & MASK
        k ^= k >> 24
        k = (k * m) & MASK
        h = ((h * m) & MASK) ^ k
    tail = data[length - length % 4 :]
    if tail:
        for index in range(len(tail) - 1, -1, -1):
            h ^= tail[index] << (8 * index)
        h = (h * m) & MASK
    h ^= h >> 13
    h = (h * m) & MASK
    h ^= h >> 15
    return h


def _java_partition(key: bytes, partitions: int) -> int:
    """The Java producer's default partition of a keyed record: positive murmur2 mod n."""
    return (_java_murmur2(key) & 0x7FFFFFFF) % partitions


def test_murmur2_matches_the_java_clients_published_values() -> None:
    # Values from Kafka's own UtilsTest.testMurmur2 (as signed Java ints).
    expected = {b"21": -973932308, b"foobar": -790332482, b"a-little-bit-long-string": -985981536}
    for data, signed in expected.items():
        assert _java_murmur2(data) == signed & MASK


def test_keyed_records_land_on_the_partition_the_java_client_picks(
    kafka_broker: kafka.KafkaBroker,
) -> None:
    topic = unique_topic_name("partitioned")
    sink = KafkaSink(bootstrap_servers=kafka_broker.bootstrap_servers, partitions=3)
    keys = [f'{{"id":{i}}}'.encode() for i in range(40)]
    try:
        for key in keys:
            sink.write(Record(topic, key, b"{}"))
        sink.flush()
    finally:
        sink.close()

    received = read_topic_to_end(kafka_broker.bootstrap_servers, topic)

    placed = {message.key(): message.partition() for message in received}
    assert set(placed) == set(keys)
    assert {key: _java_partition(key, 3) for key in keys} == placed
    assert len(set(placed.values())) == 3  # the keys really spread over the partitions


def test_a_one_partition_topic_takes_every_record_in_order(kafka_broker: kafka.KafkaBroker) -> None:
    topic = unique_topic_name("single")
    sink = KafkaSink(bootstrap_servers=kafka_broker.bootstrap_servers)
    try:
        for i in range(20):
            sink.write(Record(topic, f"k{i % 3}".encode(), str(i).encode()))
        sink.flush()
    finally:
        sink.close()

    received = read_topic_to_end(kafka_broker.bootstrap_servers, topic)

    assert [(m.partition(), m.value()) for m in received] == [
        (0, str(i).encode()) for i in range(20)
    ]
