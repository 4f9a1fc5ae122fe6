"""Java collection iteration order, where Debezium's output depends on it.

Debezium fills some values from a ``java.util.HashMap`` and writes them in its iteration
order: hstore keys (pgjdbc parses them into one) and the per-table counts of a transaction's
END event. Reproducing that order makes cdcflow's records byte-for-byte equal.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final


def java_string_hash(text: str) -> int:
    """``String.hashCode()`` over UTF-16 code units, as an unsigned 32-bit value."""
    units = text.encode("utf-16-le")
    h = 0
    for i in range(0, len(units), 2):
        h = (31 * h + units[i] + (units[i + 1] << 8)) & 0xFFFFFFFF
    return h


def hashmap_order(keys: Sequence[str]) -> list[int]:
    """Indexes of ``keys`` in the order a Java ``HashMap`` filled in that order iterates them.

    Buckets are ``(h ^ h >>> 16) & (capacity - 1)``; the table starts at 16, doubles past a
    0.75 load and also when a bucket outgrows 8 entries below capacity 64. Resizing keeps the
    insertion order inside a bucket. (Tree bins, 9+ colliding keys at capacity 64+, are not
    modelled.)
    """
    spread = [h ^ (h >> 16) for h in map(java_string_hash, keys)]
    capacity = 16
    buckets: dict[int, int] = {}
    for size, hashed in enumerate(spread, start=1):
        if capacity < _JAVA_MIN_TREEIFY_CAPACITY:
            index = hashed & (capacity - 1)
            already = buckets.get(index, 0)
            buckets[index] = already + 1
            if already >= _JAVA_TREEIFY_THRESHOLD:
                capacity *= 2
                buckets = _bucket_sizes(spread[:size], capacity)
        if size > capacity * 3 // 4:
            capacity *= 2
            buckets = _bucket_sizes(spread[:size], capacity)
    return sorted(range(len(keys)), key=lambda i: (spread[i] & (capacity - 1), i))


_JAVA_TREEIFY_THRESHOLD: Final = 8
_JAVA_MIN_TREEIFY_CAPACITY: Final = 64


def _bucket_sizes(spread: Sequence[int], capacity: int) -> dict[int, int]:
    sizes: dict[int, int] = {}
    for hashed in spread:
        index = hashed & (capacity - 1)
        sizes[index] = sizes.get(index, 0) + 1
    return sizes
