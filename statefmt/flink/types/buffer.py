"""The bytes of one stream (or block), read as columns: fixed-width matrices and slices;
rows' bytes left where they lie (:class:`Extents`) until a column needs them copied."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ...bytecolumns import same_slices, slices
from ...errors import FlinkFormatError
from ...jit import numba_started
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
        if len(starts) and (int(starts.max()) + width > len(self.data) or int(starts.min()) < 0):
            bad = int(starts[np.argmax((starts + width > len(self.data)) | (starts < 0))])
            raise FlinkFormatError(f"{self.source}: ends early: a {width}-byte value at offset "
                                   f"{self.base + bad} runs past the end")
        if width == 0 or not len(starts):
            return np.zeros((len(starts), width), dtype=np.uint8)
        if numba_started():  # compiled code costs no start now
            from ...slicekernel import gather_rows

            return gather_rows(self.arr, starts, width)
        return np.lib.stride_tricks.sliding_window_view(self.arr, width)[starts]

    def slices(self, starts: np.ndarray, ends: np.ndarray, parts: int = 1) -> pa.BinaryArray:
        """The bytes [start, end) of every row, as one binary column, copied by a compiled loop.

        With *parts* > 1, each row is that many consecutive (start, end) pairs joined.
        """
        self.check_extents(starts, ends)
        return slices(self.arr, starts, ends, parts)

    def check_extents(self, starts: np.ndarray, ends: np.ndarray) -> None:
        """One error unless every ``[start, end)`` lies in these bytes."""
        if len(starts) and ((ends - starts).min() < 0 or int(starts.min()) < 0 or int(ends.max()) > len(self.data)):
            raise FlinkFormatError(f"{self.source}: a value runs past the end of its bytes")


class Extents:
    """Each row's bytes as the extent ``[start, end)`` of one :class:`Buf`, not copied: what a
    decoder keeps of its rows' keys until it knows whether it needs them as a column
    (:meth:`binary`) or only compared (:meth:`same`) or decoded (``buf``, ``starts``, ``ends``)."""

    __slots__ = ("buf", "starts", "ends")

    def __init__(self, buf: Buf, starts: np.ndarray, ends: np.ndarray):
        self.buf, self.starts, self.ends = buf, starts, ends

    @classmethod
    def of(cls, binary: pa.Array, source: str) -> "Extents":
        """The rows of a binary column (its bytes copied once, into a :class:`Buf`)."""
        binary = pa.concat_arrays([binary.cast(pa.binary())]) if binary.offset else binary.cast(pa.binary())
        offsets = np.frombuffer(binary.buffers()[1], dtype=np.int32)[: len(binary) + 1].astype(np.int64)
        data = binary.buffers()[2]
        return cls(Buf(data.to_pybytes() if data is not None else b"", source), offsets[:-1], offsets[1:])

    def __len__(self) -> int:
        return len(self.starts)

    def binary(self) -> pa.BinaryArray:
        """The rows' bytes as one binary column."""
        return self.buf.slices(self.starts, self.ends)

    def same(self, other: "Extents") -> bool:
        """Whether *other* holds the same bytes row by row."""
        lengths = self.ends - self.starts
        if len(self) != len(other) or not np.array_equal(lengths, other.ends - other.starts):
            return False
        self.buf.check_extents(self.starts, self.ends)
        other.buf.check_extents(other.starts, other.ends)
        return same_slices(self.buf.arr, self.starts, other.buf.arr, other.starts, lengths)


def as_dtype(m: np.ndarray, dtype: str) -> np.ndarray:
    return np.ascontiguousarray(m).view(dtype).ravel()
