"""Columns of short ASCII Flink Strings, compiled: String keys and list states of Strings.

A Flink String is its length + 1 as a varint, then its UTF-16 units as varints (0 alone is
null): a string of fewer than 127 ASCII characters is one length byte under 0x80 and one
byte per character, which is the Arrow string's UTF-8 as it lies. Each column is two
passes and a check: one pass reads the length bytes only (the result's sizes), the other
copies the characters into the Arrow buffers, and numpy checks they are all ASCII. A kernel
answers -1 (or False) at anything else (a longer or non-ASCII string, a missing ',', a string past
its bytes); the caller then decodes the general way, which says what is wrong. Compiled and
cached as :mod:`.kernels` are.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..jit import njit
from ..slicekernel import copy_slice
from .list_layout import LIST_DELIMITER

_njit = njit(__file__)


@_njit
def _measure_lists(data, starts, ends):
    """(strings, characters) of the lists ``data[starts[i]:ends[i]]`` of strings separated
    by ','; (-1, -1) at anything but one-byte lengths, ',' between strings and no overrun."""
    n, total = 0, 0
    for i in range(starts.shape[0]):
        pos, end = starts[i], ends[i]
        while pos < end:
            b = np.int64(data[pos])
            if b == 0 or b >= 0x80 or pos + b > end:
                return -1, -1
            n += 1
            total += b - 1
            pos += b
            if pos < end:
                if data[pos] != LIST_DELIMITER:
                    return -1, -1
                pos += 1
    return n, total


@_njit
def _fill_lists(data, starts, ends, list_offsets, char_offsets, chars):
    """The lists' offsets into their strings, the strings' into their characters, and the
    characters (the lists measured by :func:`_measure_lists`)."""
    k, at = 0, 0
    for i in range(starts.shape[0]):
        pos, end = starts[i], ends[i]
        while pos < end:
            n = np.int64(data[pos]) - 1
            copy_slice(data, pos + 1, n, chars, at)
            at += n
            k += 1
            char_offsets[k] = at
            pos += n + 2  # the length byte, the characters, the ','
        list_offsets[i + 1] = k


def ascii(chars: np.ndarray) -> bool:
    """Whether every byte is ASCII (one vectorised pass over the copied characters)."""
    return not len(chars) or int(chars.max()) < 0x80


def short_ascii_lists(data: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> pa.ListArray | None:
    """The lists of Strings separated by ',' (RocksDB's list state) at ``[starts[i], ends[i])``
    of *data*, or None where they hold anything but short ASCII strings."""
    starts = np.ascontiguousarray(starts, dtype=np.int64)
    ends = np.ascontiguousarray(ends, dtype=np.int64)
    n, total = _measure_lists(data, starts, ends)
    if n < 0 or total > np.iinfo(np.int32).max:
        return None
    list_offsets = np.zeros(len(starts) + 1, dtype=np.int32)
    char_offsets = np.zeros(n + 1, dtype=np.int32)
    chars = np.empty(total, dtype=np.uint8)
    _fill_lists(data, starts, ends, list_offsets, char_offsets, chars)
    if not ascii(chars):
        return None
    strings = pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(char_offsets), pa.py_buffer(chars)])
    return pa.ListArray.from_arrays(pa.array(list_offsets), strings)


@_njit
def _measure_strings(data, starts):
    """Characters of the strings at *starts* (a null counts none); -1 at a longer one."""
    total = 0
    for i in range(starts.shape[0]):
        b = np.int64(data[starts[i]])
        if b >= 0x80:
            return -1
        if b:
            total += b - 1
    return total


@_njit
def _fill_strings(data, starts, offsets, chars, valid, ends):
    """Each string's offset into the characters, the characters, whether it is not null and
    where it ends (the strings measured by :func:`_measure_strings`); False at a string past
    the data."""
    at = 0
    for i in range(starts.shape[0]):
        s = starts[i]
        b = np.int64(data[s])
        n = b - 1 if b else 0
        if s + 1 + n > data.shape[0]:
            return False
        copy_slice(data, s + 1, n, chars, at)
        at += n
        offsets[i + 1] = at
        valid[i] = b != 0
        ends[i] = s + 1 + n
    return True


def short_ascii_strings(data: np.ndarray, starts: np.ndarray) -> tuple[pa.StringArray, np.ndarray] | None:
    """(the Strings at *starts* of *data*, where each ends), or None where one is not a short
    ASCII string or runs past the data (the caller has checked every start lies in *data*)."""
    starts = np.ascontiguousarray(starts, dtype=np.int64)
    total = _measure_strings(data, starts)
    if total < 0 or total > np.iinfo(np.int32).max:
        return None
    offsets = np.zeros(len(starts) + 1, dtype=np.int32)
    chars = np.empty(total, dtype=np.uint8)
    valid = np.empty(len(starts), dtype=np.bool_)
    ends = np.empty(len(starts), dtype=np.int64)
    if not _fill_strings(data, starts, offsets, chars, valid, ends) or not ascii(chars):
        return None
    nulls = len(starts) - int(np.count_nonzero(valid))
    bitmap = pa.py_buffer(np.packbits(valid, bitorder="little")) if nulls else None
    return pa.Array.from_buffers(pa.string(), len(starts), [bitmap, pa.py_buffer(offsets), pa.py_buffer(chars)],
                                 nulls), ends
