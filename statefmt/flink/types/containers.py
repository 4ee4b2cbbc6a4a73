"""Flink's collections: primitive arrays, lists and maps, decoded one element index at a time."""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ...errors import FlinkFormatError
from .base import FlinkType
from .buffer import Buf, as_dtype
from .composites import null_flagged


@dataclass(frozen=True)
class PrimitiveArray(FlinkType):
    """long[], int[], ...: int length + fixed-width elements, no nulls."""
    element: FlinkType
    serializer: str = ""

    def arrow(self):
        return pa.list_(self.element.arrow())

    def read(self, r):
        n = r.int()
        return [self.element.read(r) for _ in range(n)]

    def column(self, buf, starts, limits=None):
        starts = np.asarray(starts, dtype=np.int64)
        counts = as_dtype(buf.gather(starts, 4), ">i4").astype(np.int64)
        if len(counts) and counts.min() < 0:
            raise FlinkFormatError(f"{buf.source}: negative array length")
        w = self.element.width
        offsets = np.zeros(len(starts) + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        elem_starts = np.repeat(starts + 4 - offsets[:-1] * w, counts) + np.arange(offsets[-1]) * w
        values, _ = self.element.column(buf, elem_starts)
        return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), values), starts + 4 + counts * w


def decode_rounds(elem_cols, buf: Buf, starts: np.ndarray, counts: np.ndarray):
    """Decode *counts[i]* consecutive elements from each start, one element index at a time.

    *elem_cols(cursors)* decodes one element for every cursor and returns
    (arrays tuple, ends). Returns the per-element arrays in row order, the
    list offsets and each row's end.
    """
    offsets = np.zeros(len(starts) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    total = int(offsets[-1])
    cursors = starts.copy()
    parts: list[tuple[pa.Array, ...]] = []
    perm = np.empty(total, dtype=np.int64)
    base = 0
    k = 0
    while True:
        active = np.nonzero(counts > k)[0]
        if not len(active):
            break
        arrays, ends = elem_cols(cursors[active])
        parts.append(arrays)
        perm[offsets[active] + k] = base + np.arange(len(active))
        base += len(active)
        cursors[active] = ends
        k += 1
    columns = []
    width = len(parts[0]) if parts else 0
    for j in range(width):
        chunked = pa.concat_arrays([p[j] for p in parts])
        columns.append(chunked.take(pa.array(perm)))
    return columns, offsets, cursors


def collection_sizes(buf: Buf, starts: np.ndarray) -> np.ndarray:
    counts = as_dtype(buf.gather(starts, 4), ">i4").astype(np.int64)
    if len(counts) and counts.min() < 0:
        raise FlinkFormatError(f"{buf.source}: negative collection size at offset "
                               f"{buf.base + int(starts[np.argmin(counts)])}")
    return counts


@dataclass(frozen=True)
class List(FlinkType):
    """ListSerializer, SetSerializer, GenericArraySerializer: int n + elements."""
    element: FlinkType
    serializer: str = ""

    def arrow(self):
        return pa.list_(self.element.arrow())

    @property
    def decodable(self):
        return self.element.decodable

    def read(self, r):
        return [self.element.read(r) for _ in range(r.int())]

    def skipper(self, buf):
        width = self.element.width
        data, unpack = buf.data, struct.Struct(">i").unpack_from
        if width is not None:
            return lambda pos: pos + 4 + unpack(data, pos)[0] * width
        element = self.element.skipper(buf)

        def skip(pos: int) -> int:
            n = unpack(data, pos)[0]
            pos += 4
            for _ in range(n):
                pos = element(pos)
            return pos
        return skip

    def column(self, buf, starts, limits=None):
        starts = np.asarray(starts, dtype=np.int64)
        counts = collection_sizes(buf, starts)
        if self.element.width is not None:
            return PrimitiveArray(self.element).column(buf, starts)

        def one(cursors):
            a, e = self.element.column(buf, cursors)
            return (a,), e
        if not len(starts):
            return pa.array([], self.arrow()), starts
        cols, offsets, ends = decode_rounds(one, buf, starts + 4, counts)
        values = cols[0] if cols else pa.array([], self.element.arrow())
        return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), values), ends

    def describe(self):
        return f"List<{self.element.describe()}>"


@dataclass(frozen=True)
class Map(FlinkType):
    """MapSerializer: int n × (key, bool isNull, value)."""
    key: FlinkType
    value: FlinkType
    serializer: str = ""

    def arrow(self):
        return pa.map_(self.key.arrow(), self.value.arrow())

    @property
    def decodable(self):
        return self.key.decodable and self.value.decodable

    def read(self, r):
        out = []
        for _ in range(r.int()):
            k = self.key.read(r)
            out.append((k, None if r.bool() else self.value.read(r)))
        return out

    def skipper(self, buf):
        data, unpack = buf.data, struct.Struct(">i").unpack_from
        key, value = self.key.skipper(buf), self.value.skipper(buf)

        def skip(pos: int) -> int:
            n = unpack(data, pos)[0]
            pos += 4
            for _ in range(n):
                pos = key(pos)
                null = data[pos]
                pos = pos + 1 if null else value(pos + 1)
            return pos
        return skip

    def column(self, buf, starts, limits=None):
        starts = np.asarray(starts, dtype=np.int64)
        counts = collection_sizes(buf, starts)

        def one(cursors):
            k, e = self.key.column(buf, cursors)
            v, e = null_flagged(self.value, buf, e)
            return (k, v), e
        if not len(starts):
            return pa.array([], self.arrow()), starts
        cols, offsets, ends = decode_rounds(one, buf, starts + 4, counts)
        if not cols:
            cols = [pa.array([], self.key.arrow()), pa.array([], self.value.arrow())]
        return pa.MapArray.from_arrays(pa.array(offsets, pa.int32()), cols[0], cols[1]), ends

    def describe(self):
        return f"Map<{self.key.describe()}, {self.value.describe()}>"
