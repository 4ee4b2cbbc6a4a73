"""Avro records, unions, arrays and maps as flink-avro writes them, decoded as columns.

A record decodes field by field, each field as one column over every row. A union reads
every row's branch index, then decodes each branch once over the rows that took it. Arrays
and maps read every row's block count at once; fixed-width items are then located by
arithmetic and decoded in one go, variable-width ones one item index at a time over the rows
that still have items (as :func:`~.containers.decode_rounds` does for Flink's lists).

:class:`Avro` is the value of an `AvroSerializer`: it checks that each value ends within
the bytes its entry gives it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from .avro import SERIALIZER, AvroDataError, AvroNull, AvroString, bounds, damaged, read_counts, read_ints
from .base import FlinkType
from .buffer import Buf
from .composites import _expand


@dataclass(frozen=True)
class AvroRecord(FlinkType):
    name: str
    fields: tuple[tuple[str, FlinkType], ...]
    serializer: str = SERIALIZER

    @property
    def width(self):  # type: ignore[override]
        widths = [f.width for _, f in self.fields]
        return None if any(w is None for w in widths) else sum(widths)

    @property
    def min_width(self) -> int:
        return sum(min_width(f) for _, f in self.fields)

    def arrow(self):
        return pa.struct([(n, f.arrow()) for n, f in self.fields])

    def read(self, r):
        return {n: f.read(r) for n, f in self.fields}

    def column(self, buf, starts, limits=None):
        at = np.asarray(starts, dtype=np.int64)
        lim = bounds(buf, at, limits)
        arrays = []
        for _, f in self.fields:
            a, at = f.column(buf, at, lim)
            arrays.append(a)
        if not arrays:
            return pa.StructArray.from_buffers(pa.struct([]), len(at), [None]), at
        return pa.StructArray.from_arrays(arrays, fields=list(self.arrow())), at

    def describe(self):
        return f"record {self.name}"


def min_width(t: FlinkType) -> int:
    """The fewest bytes a value of *t* takes (for bounding item counts)."""
    if t.width is not None:
        return t.width
    if isinstance(t, AvroRecord):
        return t.min_width
    if isinstance(t, AvroUnion):
        return 4
    if isinstance(t, (AvroArray, AvroMap)):
        return 1
    return 4  # string, bytes, decimal on bytes: a length


@dataclass(frozen=True)
class AvroUnion(FlinkType):
    """A union: ``["null", T]`` (either order) reads as a nullable T; one other branch as
    that branch; more as a struct with one field per non-null branch (named by the branch's
    type), exactly one set, the struct null where the null branch was taken."""
    branches: tuple[tuple[str, FlinkType], ...]
    serializer: str = SERIALIZER

    @property
    def _others(self) -> list[int]:
        return [i for i, (_, b) in enumerate(self.branches) if not isinstance(b, AvroNull)]

    @property
    def nullable(self) -> bool:
        return len(self._others) == 1

    def arrow(self):
        others = self._others
        if len(others) == 1:
            return self.branches[others[0]][1].arrow()
        return pa.struct([(self.branches[i][0], self.branches[i][1].arrow()) for i in others])

    def read(self, r):
        at = r.pos
        i = r.int()
        if not 0 <= i < len(self.branches):
            raise r.error(f"damaged Avro value: a union has no branch {i}", at)
        name, branch = self.branches[i]
        value = branch.read(r)
        if self.nullable or isinstance(branch, AvroNull):
            return value
        return {self.branches[j][0]: (value if j == i else None) for j in self._others}

    def column(self, buf, starts, limits=None):
        starts = np.asarray(starts, dtype=np.int64)
        lim = bounds(buf, starts, limits)
        index = read_ints(buf, starts, lim, "union branch index")
        bad = (index < 0) | (index >= len(self.branches))
        if bad.any():
            i = int(np.argmax(bad))
            raise damaged(buf, f"a union of {len(self.branches)} branches has no branch {int(index[i])}",
                          int(starts[i]))
        ends = starts + 4
        columns = []
        for b in self._others:
            rows = index == b
            values, e = self.branches[b][1].column(buf, ends[rows], lim[rows])
            ends[rows] = e
            columns.append(_expand(values, rows))
        taken = np.isin(index, self._others)
        if self.nullable:
            return columns[0], ends
        mask = None if taken.all() else pa.array(~taken)
        return pa.StructArray.from_arrays(columns, fields=list(self.arrow()), mask=mask), ends

    def describe(self):
        return f"union [{', '.join(n for n, _ in self.branches)}]"


def _items(buf: Buf, starts: np.ndarray, limits, item: FlinkType, decode, what: str):
    """Every row's items of an array or map: (item columns, list offsets, ends).

    *decode(cursors, limits)* decodes one item at each cursor: (tuple of arrays, ends).
    Blocks follow each other until a count of 0; a row's items keep their order.
    """
    n = len(starts)
    lim = bounds(buf, starts, limits)
    cursors, remaining = starts.copy(), np.zeros(n, dtype=np.int64)
    active = np.arange(n)
    rows, parts = [], []
    width, least = item.width, min_width(item)
    while len(active):
        need = active[remaining[active] == 0]
        if len(need):
            counts, after = read_counts(buf, cursors[need], lim[need], least, what)
            cursors[need], remaining[need] = after, counts
            active = active[remaining[active] > 0]
            if not len(active):
                break
        if width is not None:  # every item of the current blocks at once
            k = remaining[active]
            first = np.repeat(cursors[active] - (np.cumsum(k) - k) * width, k) + np.arange(int(k.sum())) * width
            arrays, _ = decode(first, np.repeat(lim[active], k))
            rows.append(np.repeat(active, k))
            cursors[active] += k * width
            remaining[active] = 0
        else:  # one item of every row that has one left
            arrays, e = decode(cursors[active], lim[active])
            rows.append(active)
            cursors[active] = e
            remaining[active] -= 1
        parts.append(arrays)
    every = np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(every, minlength=n), out=offsets[1:])
    if offsets[-1] > np.iinfo(np.int32).max:
        raise damaged(buf, f"{what}s of {int(offsets[-1])} items in all", int(starts[0]))
    order = pa.array(np.argsort(every, kind="stable"))
    columns = [pa.concat_arrays([p[j] for p in parts]).take(order) for j in range(len(parts[0]))] if parts \
        else None
    return columns, pa.array(offsets.astype(np.int32)), cursors


@dataclass(frozen=True)
class AvroArray(FlinkType):
    items: FlinkType
    serializer: str = SERIALIZER

    def arrow(self):
        return pa.list_(self.items.arrow())

    def read(self, r):
        out = []
        for n in _blocks(r):
            out.extend(self.items.read(r) for _ in range(n))
        return out

    def column(self, buf, starts, limits=None):
        starts = np.asarray(starts, dtype=np.int64)

        def one(cursors, lim):
            a, e = self.items.column(buf, cursors, lim)
            return (a,), e
        columns, offsets, ends = _items(buf, starts, limits, self.items, one, "array")
        values = columns[0] if columns else pa.array([], self.items.arrow())
        return pa.ListArray.from_arrays(offsets, values), ends

    def describe(self):
        return f"array<{self.items.describe()}>"


_KEY = AvroString()


@dataclass(frozen=True)
class AvroMap(FlinkType):
    """A map: string keys (Avro's), read as map<string, value>."""
    values: FlinkType
    serializer: str = SERIALIZER

    def arrow(self):
        return pa.map_(pa.string(), self.values.arrow())

    def read(self, r):
        out = []
        for n in _blocks(r):
            for _ in range(n):
                k = _KEY.read(r)
                out.append((k, self.values.read(r)))
        return out

    def column(self, buf, starts, limits=None):
        starts = np.asarray(starts, dtype=np.int64)
        entry = AvroRecord("", (("key", _KEY), ("value", self.values)))

        def one(cursors, lim):
            k, e = _KEY.column(buf, cursors, lim)
            v, e = self.values.column(buf, e, lim)
            return (k, v), e
        columns, offsets, ends = _items(buf, starts, limits, entry, one, "map")
        if columns is None:
            columns = [pa.array([], pa.string()), pa.array([], self.values.arrow())]
        return pa.MapArray.from_arrays(offsets, columns[0], columns[1]), ends

    def describe(self):
        return f"map<{self.values.describe()}>"


def _blocks(r):
    """The item counts of an array's or map's blocks (the per-value path)."""
    while True:
        at = r.pos
        n = r.varint()
        if n == 0:
            return
        if n > r.remaining:
            raise r.error(f"damaged Avro value: {n} items cannot fit in {r.remaining} bytes", at)
        yield n


@dataclass(frozen=True)
class Avro(FlinkType):
    """A value of flink-avro's AvroSerializer, decoded from the writer schema in its snapshot."""
    root: FlinkType
    schema_name: str
    runtime_class: str = ""
    serializer: str = SERIALIZER
    # the serializer snapshot as the savepoint holds it (class, version, payload): a rewrite
    # writes it again as it was, writer schema and all
    snapshot: bytes = field(default=b"", repr=False)

    @property
    def width(self):  # type: ignore[override]
        return self.root.width

    def arrow(self):
        return self.root.arrow()

    def read(self, r):
        return self.root.read(r)

    def from_matrix(self, m):
        return self.root.from_matrix(m)

    def column(self, buf, starts, limits=None):
        starts = np.asarray(starts, dtype=np.int64)
        values, ends = self.root.column(buf, starts, limits)
        if limits is not None and len(ends):
            over = ends > np.asarray(limits, dtype=np.int64)
            if over.any():
                raise damaged(buf, f"an Avro {self.schema_name} runs past its value", int(starts[np.argmax(over)]))
        return values, ends

    def describe(self):
        return f"Avro {self.schema_name}"


__all__ = ["Avro", "AvroArray", "AvroDataError", "AvroMap", "AvroRecord", "AvroUnion", "min_width"]
