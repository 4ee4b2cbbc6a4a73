"""What every Flink value type knows: its Arrow type, its serializer, its width, how to read it."""

from __future__ import annotations

import dataclasses

import numpy as np
import pyarrow as pa

from ...errors import FlinkFormatError
from ..binary import Reader
from .buffer import Buf

LONG_MIN = -(1 << 63)


class DamagedValue(FlinkFormatError):
    """A damaged value: *what* is wrong, *offset* where in the bytes decoded (*source*); the
    stream's decoder names its state and key group (`streams._located`)."""

    kind = ""  # the encoding, for the message: Avro, Kryo

    def __init__(self, source: str, what: str, offset: int, base: int = 0):
        super().__init__(f"{source}: damaged {self.kind + ' ' if self.kind else ''}value: {what} at offset "
                         f"{base + offset}")
        self.source, self.what, self.offset, self.base = source, what, offset, base


class FlinkType:
    """A value type; subclasses set *serializer* and implement :meth:`read` and :meth:`arrow`."""

    serializer: str = ""
    width: int | None = None  # bytes per value when fixed-width

    def arrow(self) -> pa.DataType:
        raise NotImplementedError

    def read(self, r: Reader):
        """One value as Python (the per-value path)."""
        raise NotImplementedError

    def from_matrix(self, m: np.ndarray) -> pa.Array:
        raise NotImplementedError

    @property
    def decodable(self) -> bool:
        """Whether value boundaries are known without an enclosing length."""
        return True

    def describe(self) -> str:
        return self.serializer.rsplit(".", 1)[-1]

    def skipper(self, buf: Buf):
        """A function from a value's start in *buf* to its end (to walk streams without lengths)."""
        if self.width is not None:
            width = self.width
            return lambda pos: pos + width
        r = buf.reader()
        read = self.read

        def skip(pos: int) -> int:
            r.pos = pos
            read(r)
            return r.pos
        return skip

    def column(self, buf: Buf, starts: np.ndarray, limits: np.ndarray | None = None
               ) -> tuple[pa.Array, np.ndarray]:
        """The values starting at *starts* and where each ends; *limits* bound each value."""
        starts = np.asarray(starts, dtype=np.int64)
        if self.width is not None:
            return self.from_matrix(buf.gather(starts, self.width)), starts + self.width
        r = buf.reader()
        values = [None] * len(starts)
        ends = np.empty(len(starts), dtype=np.int64)
        read = self.read
        for i, s in enumerate(starts.tolist()):
            r.pos = s
            values[i] = read(r)
            ends[i] = r.pos
        return pa.array(values, type=self.arrow()), ends


def nested_types(t: "FlinkType"):
    """*t* and every type inside it (a tuple's fields, a list's element, a POJO's fields...)."""
    yield t
    for f in dataclasses.fields(t) if dataclasses.is_dataclass(t) else ():
        value = getattr(t, f.name)
        for item in value if isinstance(value, tuple) else (value,):
            for part in item if isinstance(item, tuple) else (item,):  # a POJO's (name, type) fields
                if isinstance(part, FlinkType):
                    yield from nested_types(part)
