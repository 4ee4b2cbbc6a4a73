"""Flink's composite values: tuples, POJOs, rows, nullables, Either, TTL wrappers and timers,
decoded field by field, each field as one column."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ...errors import UnsupportedFlinkFeature
from .base import LONG_MIN, FlinkType
from .buffer import Buf, as_dtype


def _expand(subset: pa.Array, present: np.ndarray) -> pa.Array:
    """*subset* (values of the rows where *present*) spread over all rows, null elsewhere."""
    if present.all():
        return subset
    idx = np.cumsum(present) - 1
    return subset.take(pa.array(idx, mask=~present))


def null_flagged(t: FlinkType, buf: Buf, starts: np.ndarray, limits=None) -> tuple[pa.Array, np.ndarray]:
    """A bool isNull flag, then the value when not null."""
    null = buf.gather(starts, 1)[:, 0] != 0
    present = ~null
    ends = starts + 1
    if present.any():
        sub_limits = None if limits is None else limits[present]
        values, sub_ends = t.column(buf, ends[present], sub_limits)
        ends[present] = sub_ends
    else:
        values = pa.nulls(0, t.arrow())
    return _expand(values, present), ends


@dataclass(frozen=True)
class Tuple(FlinkType):
    tuple_class: str
    fields: tuple[FlinkType, ...]
    serializer: str = ""

    @property
    def width(self):  # type: ignore[override]
        widths = [f.width for f in self.fields]
        return None if any(w is None for w in widths) else sum(widths)

    @property
    def names(self) -> list[str]:
        return [f"f{i}" for i in range(len(self.fields))]

    def arrow(self):
        return pa.struct([(n, f.arrow()) for n, f in zip(self.names, self.fields)])

    @property
    def decodable(self):
        return all(f.decodable for f in self.fields)

    def read(self, r):
        return {n: f.read(r) for n, f in zip(self.names, self.fields)}

    def skipper(self, buf):
        if self.width is not None:
            return super().skipper(buf)
        fields = [f.skipper(buf) for f in self.fields]

        def skip(pos: int) -> int:
            for field in fields:
                pos = field(pos)
            return pos
        return skip

    def from_matrix(self, m):
        arrays, at = [], 0
        for f in self.fields:
            arrays.append(f.from_matrix(m[:, at:at + f.width]))
            at += f.width
        return pa.StructArray.from_arrays(arrays, fields=list(self.arrow()))

    def column(self, buf, starts, limits=None):
        starts = np.asarray(starts, dtype=np.int64)
        if self.width is not None:
            return super().column(buf, starts)
        arrays, at = [], starts
        for i, f in enumerate(self.fields):
            last = i == len(self.fields) - 1
            a, at = f.column(buf, at, limits if last else None)
            arrays.append(a)
        return pa.StructArray.from_arrays(arrays, fields=list(self.arrow())), at

    def describe(self):
        return f"{self.tuple_class.rsplit('.', 1)[-1]}<{', '.join(f.describe() for f in self.fields)}>"


POJO_NULL, POJO_NO_SUBCLASS, POJO_SUBCLASS, POJO_TAGGED = 1, 2, 4, 8


@dataclass(frozen=True)
class Pojo(FlinkType):
    pojo_class: str
    fields: tuple[tuple[str, FlinkType], ...]
    subclasses: tuple[str, ...] = ()
    serializer: str = ""

    def arrow(self):
        return pa.struct([(n, f.arrow()) for n, f in self.fields])

    @property
    def decodable(self):
        return all(f.decodable for _, f in self.fields)

    def read(self, r):
        flags = r.ubyte()
        if flags & POJO_NULL:
            return None
        self._check_flags(flags, r.source)
        out = {}
        for name, f in self.fields:
            out[name] = None if r.bool() else f.read(r)
        return out

    def skipper(self, buf):
        data, fields, read_whole = buf.data, [f.skipper(buf) for _, f in self.fields], super().skipper(buf)

        def skip(pos: int) -> int:
            flags = data[pos]
            if flags & POJO_NULL:
                return pos + 1
            if flags & (POJO_SUBCLASS | POJO_TAGGED):
                return read_whole(pos)  # refused as reading refuses it
            pos += 1
            for field in fields:
                pos = pos + 1 if data[pos] else field(pos + 1)
            return pos
        return skip

    def _check_flags(self, flags: int, source: str) -> None:
        if flags & (POJO_SUBCLASS | POJO_TAGGED):
            raise UnsupportedFlinkFeature(
                f"{source}: a value of a subclass of POJO {self.pojo_class} cannot be decoded "
                "(its fields are not in the snapshot)")

    def column(self, buf, starts, limits=None):
        starts = np.asarray(starts, dtype=np.int64)
        flags = buf.gather(starts, 1)[:, 0]
        if len(flags) and (flags & (POJO_SUBCLASS | POJO_TAGGED)).any():
            self._check_flags(int(flags[(flags & (POJO_SUBCLASS | POJO_TAGGED)) != 0][0]), buf.source)
        present = (flags & POJO_NULL) == 0
        at = starts[present] + 1
        arrays = []
        for name, f in self.fields:
            a, at = null_flagged(f, buf, at)
            arrays.append(a)
        ends = starts + 1
        ends[present] = at
        struct = pa.StructArray.from_arrays(arrays, fields=list(self.arrow())) if arrays else \
            pa.array([{}] * int(present.sum()), self.arrow())
        if present.all():
            return struct, ends
        mask = pa.array(~present)
        full = _expand(struct, present)
        return pa.StructArray.from_arrays(
            [full.field(i) for i in range(full.type.num_fields)], fields=list(self.arrow()), mask=mask), ends

    def describe(self):
        return f"POJO {self.pojo_class}"


@dataclass(frozen=True)
class Row(FlinkType):
    """Row (RowSerializer): a bitmask, most significant bit first, of the RowKind (2 bits,
    when the snapshot says rows carry it) and one null flag per field; then the non-null fields."""
    fields: tuple[tuple[str, FlinkType], ...]
    kind_bits: int = 2
    serializer: str = ""

    def arrow(self):
        return pa.struct([(n, f.arrow()) for n, f in self.fields])

    def read(self, r):
        n = len(self.fields)
        mask_bytes = r.bytes((n + self.kind_bits + 7) // 8)
        bits = int.from_bytes(mask_bytes, "big")
        total = len(mask_bytes) * 8
        out = {}
        for i, (name, f) in enumerate(self.fields):
            bit = total - 1 - (i + self.kind_bits)
            out[name] = None if (bits >> bit) & 1 else f.read(r)
        return out

    def describe(self):
        return "Row"


@dataclass(frozen=True)
class Nullable(FlinkType):
    inner: FlinkType
    padding: int = 0
    serializer: str = ""

    def arrow(self):
        return self.inner.arrow()

    @property
    def decodable(self):
        return self.inner.decodable

    def read(self, r):
        if r.bool():
            r.skip(self.padding)
            return None
        return self.inner.read(r)

    def skipper(self, buf):
        data, inner, padding = buf.data, self.inner.skipper(buf), self.padding
        return lambda pos: pos + 1 + padding if data[pos] else inner(pos + 1)

    def column(self, buf, starts, limits=None):
        starts = np.asarray(starts, dtype=np.int64)
        values, ends = null_flagged(self.inner, buf, starts, limits)
        null = buf.gather(starts, 1)[:, 0] != 0
        ends[null] += self.padding
        return values, ends

    def describe(self):
        return self.inner.describe()


@dataclass(frozen=True)
class Either(FlinkType):
    left: FlinkType
    right: FlinkType
    serializer: str = ""

    def arrow(self):
        return pa.struct([("left", self.left.arrow()), ("right", self.right.arrow())])

    def read(self, r):
        if r.bool():
            return {"left": self.left.read(r), "right": None}
        return {"left": None, "right": self.right.read(r)}

    def describe(self):
        return f"Either<{self.left.describe()}, {self.right.describe()}>"


TTL_FIELD = "ttl_ts"


@dataclass(frozen=True)
class Ttl(FlinkType):
    """TtlSerializer: the last-access timestamp (epoch ms), then the user value."""
    inner: FlinkType
    serializer: str = ""

    @property
    def width(self):  # type: ignore[override]
        return None if self.inner.width is None else 8 + self.inner.width

    def arrow(self):
        return pa.struct([(TTL_FIELD, pa.int64()), ("value", self.inner.arrow())])

    @property
    def decodable(self):
        return self.inner.decodable

    def read(self, r):
        return {TTL_FIELD: r.long(), "value": self.inner.read(r)}

    def skipper(self, buf):
        if self.width is not None:
            return super().skipper(buf)
        inner = self.inner.skipper(buf)
        return lambda pos: inner(pos + 8)

    def from_matrix(self, m):
        return pa.StructArray.from_arrays(
            [pa.array(as_dtype(m[:, :8], ">i8").astype("<i8")), self.inner.from_matrix(m[:, 8:])],
            fields=list(self.arrow()))

    def column(self, buf, starts, limits=None):
        starts = np.asarray(starts, dtype=np.int64)
        if self.width is not None:
            return super().column(buf, starts)
        ts = pa.array(as_dtype(buf.gather(starts, 8), ">i8").astype("<i8"))
        v, ends = self.inner.column(buf, starts + 8, limits)
        return pa.StructArray.from_arrays([ts, v], fields=list(self.arrow())), ends

    def describe(self):
        return f"TTL {self.inner.describe()}"


@dataclass(frozen=True)
class Timer(FlinkType):
    """TimerSerializer (heap timers): timestamp XOR Long.MIN_VALUE, key, namespace."""
    key: FlinkType
    namespace: FlinkType
    serializer: str = ""

    def arrow(self):
        return pa.struct([("timestamp", pa.int64()), ("key", self.key.arrow()),
                          ("namespace", self.namespace.arrow())])

    def read(self, r):
        return {"timestamp": r.long() ^ LONG_MIN, "key": self.key.read(r), "namespace": self.namespace.read(r)}

    def skipper(self, buf):
        key, namespace = self.key.skipper(buf), self.namespace.skipper(buf)
        return lambda pos: namespace(key(pos + 8))

    def column(self, buf, starts, limits=None):
        starts = np.asarray(starts, dtype=np.int64)
        ts = pa.array(as_dtype(buf.gather(starts, 8), ">i8").astype("<i8") ^ np.int64(LONG_MIN))
        k, e = self.key.column(buf, starts + 8)
        ns, e = self.namespace.column(buf, e, limits)
        return pa.StructArray.from_arrays([ts, k, ns], fields=list(self.arrow())), e

    def describe(self):
        return "Timer"
