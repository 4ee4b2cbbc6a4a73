"""The bytes of one stream (or block), read as columns: fixed-width matrices and slices."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ...bytecolumns import slices
from ...errors import FlinkFormatError
from ..binary import Reader


class Buf:
    """The bytes of one stream (or block), with a numpy view, named for errors."""

    __slots__ = ("data", "arr", "source", "base")

    def __init__(self, data: bytes, source: str, base: int = 0):
        self.data = data
        self.arr = np.frombuffer(data, dtype=np.uint8)
        self.source = source
        self.base = base

    def reader(self) -> Reader:
        return Reader(self.data, self.source, base=self.base)

    def gather(self, starts: np.ndarray, width: int) -> np.ndarray:
        """An (n, width) matrix of the bytes at each start."""
        if len(starts) and int(starts.max()) + width > len(self.data):
            bad = int(starts[np.argmax(starts + width > len(self.data))])
            raise FlinkFormatError(f"{self.source}: ends early: a {width}-byte value at offset "
                                   f"{self.base + bad} runs past the end")
        if width == 0 or not len(starts):
            return np.zeros((len(starts), width), dtype=np.uint8)
        return np.lib.stride_tricks.sliding_window_view(self.arr, width)[starts]

    def slices(self, starts: np.ndarray, ends: np.ndarray, parts: int = 1) -> pa.BinaryArray:
        """The bytes [start, end) of every row, as one binary column, copied by a compiled loop.

        With *parts* > 1, each row is that many consecutive (start, end) pairs joined.
        """
        lengths = (ends - starts).astype(np.int64)
        if len(lengths) and (lengths.min() < 0 or int(ends.max()) > len(self.data)):
            raise FlinkFormatError(f"{self.source}: a value runs past the end of its bytes")
        return slices(self.arr, starts, ends, parts)


def as_dtype(m: np.ndarray, dtype: str) -> np.ndarray:
    return np.ascontiguousarray(m).view(dtype).ravel()
