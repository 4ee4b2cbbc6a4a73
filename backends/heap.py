"""The heap backend: state in Python dicts (as Flink's HashMapStateBackend).

Values are kept as Python objects, not encoded; entries are keyed by the
same ``key group ‖ key ‖ namespace`` bytes as in RocksDB, so both backends
order keys and fire timers identically.
"""

from __future__ import annotations

import heapq
from typing import Iterator

from statectl.statefmt.model import KeyedStateDescriptor
from statectl.statefmt.rocksdb.codec import ValueCodec, map_pairs
from statectl.statefmt.vocabulary import StateKind, TimerDomain

from .base import KeyedStateBackend


class HeapTable:
    def __init__(self, descriptor: KeyedStateDescriptor):
        self.descriptor = descriptor
        self._data: dict[bytes, object] = {}
        if descriptor.kind == StateKind.MAP:
            self._user_key = ValueCodec(descriptor.user_key_type)

    def get(self, kns: bytes):
        return self._data.get(kns)

    def put(self, kns: bytes, value) -> None:
        self._data[kns] = list(value) if self.descriptor.kind == StateKind.LIST else value

    def delete(self, kns: bytes) -> None:
        self._data.pop(kns, None)

    def append(self, kns: bytes, values: list) -> None:
        self._data.setdefault(kns, []).extend(values)

    # map state: {kns: {encoded user key: (user key, value)}}
    def map_get(self, kns: bytes, user_key):
        entry = self._data.get(kns, {}).get(self._user_key.encode(user_key))
        return None if entry is None else entry[1]

    def map_contains(self, kns: bytes, user_key) -> bool:
        return self._user_key.encode(user_key) in self._data.get(kns, {})

    def map_put(self, kns: bytes, user_key, value) -> None:
        self._data.setdefault(kns, {})[self._user_key.encode(user_key)] = (user_key, value)

    def map_remove(self, kns: bytes, user_key) -> None:
        entries = self._data.get(kns)
        if entries is not None:
            entries.pop(self._user_key.encode(user_key), None)
            if not entries:
                del self._data[kns]

    def map_items(self, kns: bytes) -> list[tuple]:
        entries = self._data.get(kns, {})
        return [entries[k] for k in sorted(entries)]

    def load(self, kns: bytes, value) -> None:
        if self.descriptor.kind == StateKind.MAP:
            for k, v in map_pairs(value):
                self.map_put(kns, k, v)
        else:
            self.put(kns, value)

    def scan(self) -> Iterator[tuple[bytes, object]]:
        """(kns, value) in byte order; a map's value is its (key, value) pairs."""
        for kns in sorted(self._data):
            value = self._data[kns]
            if self.descriptor.kind == StateKind.MAP:
                value = [value[k] for k in sorted(value)]
            yield kns, value


class HeapBackend(KeyedStateBackend):
    """Keyed state in memory; snapshots to the canonical format."""

    def _open(self, **options) -> None:
        super()._open(**options)
        # per domain: a heap of (ts, kg, key_ns) and the set of live timers (lazy deletion)
        self._timer_heap: dict[str, list] = {d: [] for d in TimerDomain}
        self._timer_live: dict[str, set] = {d: set() for d in TimerDomain}

    def _new_table(self, descriptor: KeyedStateDescriptor) -> HeapTable:
        return HeapTable(descriptor)

    def _timer_add(self, domain: str, kg: int, ts: int, key_ns: bytes) -> None:
        entry = (ts, kg, key_ns)
        live = self._timer_live[domain]
        if entry not in live:
            live.add(entry)
            heapq.heappush(self._timer_heap[domain], entry)

    def _timer_remove(self, domain: str, kg: int, ts: int, key_ns: bytes) -> None:
        self._timer_live[domain].discard((ts, kg, key_ns))

    def _timer_pop_due(self, domain: str, up_to: int):
        heap, live = self._timer_heap[domain], self._timer_live[domain]
        while heap:
            entry = heap[0]
            if entry not in live:
                heapq.heappop(heap)
                continue
            if entry[0] > up_to:
                return None
            heapq.heappop(heap)
            live.discard(entry)
            return entry
        return None

    def _timer_scan(self):
        rows = [(kg, domain, ts, key_ns) for domain, live in self._timer_live.items()
                for ts, kg, key_ns in live]
        return iter(sorted(rows, key=lambda r: (r[0], r[1] != TimerDomain.EVENT, r[2], r[3])))
