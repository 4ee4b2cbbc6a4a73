"""Figures of `statectl stats` gathered batch by batch from a keyed table's or the timers'
decoded rows: each batch is looked at once, columnar (`readers.measure` sizes its values), and
only a few keys (the largest) are ever turned into Python values.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from statectl.statefmt.expiry import expired
from statectl.statefmt.model import NAMESPACE_COLUMN, TTL_SUFFIX, KeyedStateDescriptor
from statectl.statefmt.vocabulary import StateKind

from .measure import entries_of, valid_mask, value_bytes, value_elements

BUCKETS = 10  # bars of a time histogram


@dataclass(frozen=True)
class Bucket:
    """Values from *start* to *end* (inclusive, epoch ms): *count* of them."""

    start: int
    end: int
    count: int


@dataclass(frozen=True)
class KeyFigure:
    """One key of a state (and its namespace, if the table has one): its value's bytes and
    elements (list elements, map entries; 1 for another value)."""

    key: str
    namespace: str | None
    bytes: int
    elements: int


def buckets(values: np.ndarray, count: int = BUCKETS) -> list[Bucket]:
    """*values* (int64) counted in at most *count* equal ranges from their least to their largest."""
    if len(values) == 0:
        return []
    lo, hi = int(values.min()), int(values.max())
    width = -(-(hi - lo + 1) // count)  # ceil, in Python integers: no overflow at the extremes
    offset = values.astype(np.uint64) - np.uint64(lo & 0xFFFFFFFFFFFFFFFF)  # wraps to the distance
    place = (offset // np.uint64(width)).astype(np.int64)
    counted = np.bincount(place, minlength=-(-(hi - lo + 1) // width))
    return [Bucket(lo + i * width, min(lo + (i + 1) * width - 1, hi), int(n)) for i, n in enumerate(counted)]


def render(value) -> str:
    """A key or namespace as one short line of text."""
    if isinstance(value, bytes):
        return "0x" + value.hex()
    if isinstance(value, tuple):
        return "(" + ", ".join(render(v) for v in value) + ")"
    return str(value)


class TopKeys:
    """The *k* keys with the largest score seen so far; of equal scores, the first seen (the
    first in key-group order) is kept."""

    def __init__(self, k: int, key_names: list[str], namespace: bool):
        self.k, self.key_names, self.namespace = k, key_names, namespace
        self.found: list[tuple[int, KeyFigure]] = []

    def offer(self, batch: pa.RecordBatch, rows: np.ndarray, score: np.ndarray,
              sizes: np.ndarray, elements: np.ndarray) -> None:
        """Rows *rows* of *batch* with their *score*, *sizes* and *elements* (aligned with *rows*)."""
        if self.k == 0 or len(rows) == 0:
            return
        if len(self.found) == self.k:  # only rows that can enter: a tie stays out
            keep = score > self.found[-1][0]
            rows, score, sizes, elements = rows[keep], score[keep], sizes[keep], elements[keep]
        if len(rows) > self.k:
            pick = np.sort(np.argsort(-score, kind="stable")[:self.k])
            rows, score, sizes, elements = rows[pick], score[pick], sizes[pick], elements[pick]
        keys = self._keys(batch, rows)
        self.found += [(int(s), KeyFigure(k, ns, int(b), int(e)))
                       for s, (k, ns), b, e in zip(score, keys, sizes, elements)]
        self.found.sort(key=lambda f: -f[0])  # stable: of equal scores, the first seen first
        del self.found[self.k:]

    def figures(self) -> list[KeyFigure]:
        return [f for _, f in self.found]

    def _keys(self, batch: pa.RecordBatch, rows: np.ndarray) -> list[tuple[str, str | None]]:
        taken = batch.take(pa.array(rows, pa.int64()))
        columns = [taken.column(n).to_pylist() for n in self.key_names]
        keys = [render(v[0]) if len(v) == 1 else render(tuple(v)) for v in zip(*columns)]
        spaces = taken.column(NAMESPACE_COLUMN).to_pylist() if self.namespace else [None] * len(keys)
        return [(k, None if ns is None else render(ns)) for k, ns in zip(keys, spaces)]


class StateTally:
    """One keyed state's figures over the batches of its table: rows holding it, elements,
    bytes, the largest keys, the keys with most elements, and its last-access times if TTL."""

    def __init__(self, state: KeyedStateDescriptor, key_names: list[str], namespace: bool, top: int):
        self.state = state
        self.rows = self.elements = self.bytes = 0
        self.largest = TopKeys(top, key_names, namespace)
        self.most = TopKeys(top, key_names, namespace) if state.kind in (StateKind.LIST, StateKind.MAP) else None
        self.access: list[np.ndarray] = []  # last-access times of entries, and their bytes
        self.access_bytes: list[np.ndarray] = []

    def add(self, batch: pa.RecordBatch) -> None:
        values = batch.column(self.state.name)
        sizes, elements = value_bytes(values), value_elements(values)
        rows = np.flatnonzero(valid_mask(values))
        self.rows += len(rows)
        self.elements += int(elements.sum())
        self.bytes += int(sizes.sum())
        self.largest.offer(batch, rows, sizes[rows], sizes[rows], elements[rows])
        if self.most is not None:
            self.most.offer(batch, rows, elements[rows], sizes[rows], elements[rows])
        if self.state.ttl:
            self._add_access(values, batch.column(self.state.name + TTL_SUFFIX), sizes)

    def _add_access(self, values: pa.Array, stamps: pa.Array, sizes: np.ndarray) -> None:
        """Each entry's last access and bytes: a list's elements, a map's entries, else a row's value."""
        if self.state.kind in (StateKind.LIST, StateKind.MAP):
            stamps = entries_of(stamps)
            if self.state.kind == StateKind.MAP:
                stamps = stamps.field(1)
            entries = entries_of(values)
            if len(entries) != len(stamps):
                raise ValueError(f"state {self.state.name!r}: {len(stamps)} last-access times "
                                 f"for {len(entries)} entries")
            sizes = value_bytes(entries)
        held = valid_mask(stamps)
        self.access.append(np.asarray(stamps.fill_null(0), dtype=np.int64)[held])
        self.access_bytes.append(sizes[held])

    def last_access(self) -> tuple[np.ndarray, np.ndarray]:
        """(last-access times, bytes) of every entry seen."""
        if not self.access:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        return np.concatenate(self.access), np.concatenate(self.access_bytes)

    def expired(self, ttl: int, now: int) -> tuple[int, int]:
        """(entries, bytes) expired at *now* with a time to live of *ttl* ms."""
        times, sizes = self.last_access()
        mask = expired(times, ttl, now)
        return int(mask.sum()), int(sizes[mask].sum())


class TimerTally:
    """The timers of an operator: their times (epoch ms) per domain (event, processing)."""

    def __init__(self):
        self.times: dict[str, list[np.ndarray]] = {}

    def add(self, batch: pa.RecordBatch) -> None:
        times, domains = epoch_millis(batch.column("timestamp")), batch.column("domain")
        for domain in pc.unique(domains).to_pylist():
            mask = np.asarray(pc.equal(domains, domain).fill_null(False), dtype=bool)
            self.times.setdefault(str(domain), []).append(times[mask])

    def domain_times(self) -> dict[str, np.ndarray]:
        """Each domain's timer times, domains in name order."""
        return {d: np.concatenate(self.times[d]) for d in sorted(self.times)}


def epoch_millis(column: pa.Array) -> np.ndarray:
    """A timestamp or integer column as epoch milliseconds (int64)."""
    t = column.type
    if pa.types.is_timestamp(t):
        per_ms = {"s": None, "ms": 1, "us": 1000, "ns": 1_000_000}[t.unit]
        raw = np.asarray(column.cast(pa.int64()).fill_null(0), dtype=np.int64)
        return raw * 1000 if per_ms is None else raw // per_ms
    return np.asarray(column.cast(pa.int64()).fill_null(0), dtype=np.int64)
