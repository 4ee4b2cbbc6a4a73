"""Binary Arrow columns built from numpy, shared by both format families' encoders.

An encoder turns a column of n values into a column of n byte strings without a
per-value loop: fixed-width parts are numpy byte matrices (:func:`fixed`),
lengths are varints (:func:`varints`), a row's parts are joined (:func:`join`)
and a list's elements are cut out of one flat buffer by offsets
(:func:`group_rows`). statectl's RocksDB format keeps ``large_binary`` columns
throughout (``large=True``); Flink's encoders use ``binary`` unless the data
outgrows 32-bit offsets.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from .jit import numba_started

_INT32_MAX = 2**31 - 1
SMALL_GATHER_BYTES = 1 << 20  # slices joined by numpy's gather up to this many bytes, until numba is loaded


def flat(values) -> pa.Array:
    """One array of a possibly chunked one."""
    return values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values


def flat_elements(arr: pa.Array, children: list[pa.Array]) -> tuple[list[pa.Array], np.ndarray]:
    """The flat slice of *children* (a list's values, a map's keys and items) under *arr*'s rows,
    and the rows' offsets into it (n + 1, from 0); right for a sliced *arr* too."""
    offsets = np.asarray(arr.offsets, dtype=np.int64)
    first, last = int(offsets[0]), int(offsets[-1])
    return [c.slice(first, last - first) for c in children], offsets - first


def struct_fields(values: pa.Array, names: list[str], what: str, where: str) -> list[pa.Array]:
    """The fields *names* of a struct column, with the struct's nulls; an encoder's one error
    (at *where*, naming the Flink type *what*) when it is no struct or lacks one."""
    from .errors import FlinkEncodeError

    if not pa.types.is_struct(values.type):
        raise FlinkEncodeError(f"{where}: a Flink {what} needs a struct column, got {values.type}")
    have = [values.type.field(i).name for i in range(values.type.num_fields)]
    missing = [n for n in names if n not in have]
    if missing:
        raise FlinkEncodeError(f"{where}: the struct has no field(s) {', '.join(missing)} "
                               f"for {what} (it has {', '.join(have) or 'none'})")
    import pyarrow.compute as pc

    return [pc.struct_field(values, [have.index(n)]) for n in names]


def _validity(valid: np.ndarray | None) -> tuple[pa.Buffer | None, int]:
    if valid is None or valid.all():
        return None, 0
    return pa.py_buffer(np.packbits(valid, bitorder="little")), int((~valid).sum())


def binary(data, offsets: np.ndarray, valid: np.ndarray | None = None, large: bool = False) -> pa.Array:
    """A binary column: row i is ``data[offsets[i]:offsets[i + 1]]`` (n + 1 offsets), null where
    *valid* is false; ``large_binary`` when *large* or when 32-bit offsets cannot hold the data.

    *data* is bytes, an Arrow buffer, or a numpy array whose bytes are taken as they lie.
    """
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    if isinstance(data, np.ndarray):
        data = pa.py_buffer(np.ascontiguousarray(data).reshape(-1).view(np.uint8))
    elif not isinstance(data, pa.Buffer):
        data = pa.py_buffer(data)
    bitmap, nulls = _validity(valid)
    large = large or offsets[-1] > _INT32_MAX
    return pa.Array.from_buffers(pa.large_binary() if large else pa.binary(), len(offsets) - 1,
                                 [bitmap, pa.py_buffer(offsets if large else offsets.astype(np.int32)), data],
                                 nulls)


def parts_of(a: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(data as uint8, int64 offsets from 0 into it) of a binary column, without copying large_binary."""
    a = flat(a)
    if a.type != pa.large_binary():
        a = a.cast(pa.large_binary())
    if not len(a):
        return np.zeros(0, np.uint8), np.zeros(1, np.int64)
    _, offsets, data = a.buffers()
    offsets = np.frombuffer(offsets, dtype=np.int64)[a.offset:a.offset + len(a) + 1]
    first, last = int(offsets[0]), int(offsets[-1])
    if data is None or last == first:
        return np.zeros(0, np.uint8), offsets - first
    return np.frombuffer(data, dtype=np.uint8)[first:last], offsets - first


def fixed(values: np.ndarray, valid: np.ndarray | None = None, large: bool = False) -> pa.Array:
    """Each row of *values* as its bytes: a 1-d array's items, or a 2-d byte matrix's rows."""
    values = np.ascontiguousarray(values)
    width = values.dtype.itemsize * (values.shape[1] if values.ndim == 2 else 1)
    return binary(values, np.arange(len(values) + 1, dtype=np.int64) * width, valid, large)


def big_endian(values: np.ndarray, dtype: str) -> np.ndarray:
    """An (n, width) matrix of *values* as big-endian *dtype* (e.g. ``>i8``)."""
    v = np.ascontiguousarray(np.asarray(values).astype(dtype))
    return v.view(np.uint8).reshape(len(v), np.dtype(dtype).itemsize)


def constant(value: bytes, n: int, large: bool = False) -> pa.Array:
    """*value* n times."""
    return binary(value * n, np.arange(n + 1, dtype=np.int64) * len(value), large=large)


def varints(values: np.ndarray, large: bool = False) -> pa.Array:
    """Unsigned little-endian base-128 varints (LEB128), one per value."""
    v = np.asarray(values).astype(np.uint64)
    nbytes = np.ones(len(v), dtype=np.int64)
    for k in range(1, 10):
        nbytes += v >= np.uint64(1 << (7 * k))
    width = int(nbytes.max()) if len(v) else 1
    column = np.arange(width)
    groups = ((v[:, None] >> (column.astype(np.uint64) * np.uint64(7))) & np.uint64(0x7F)).astype(np.uint8)
    groups |= np.where(column[None, :] < nbytes[:, None] - 1, 0x80, 0).astype(np.uint8)
    offsets = np.zeros(len(v) + 1, dtype=np.int64)
    np.cumsum(nbytes, out=offsets[1:])
    return binary(groups[column[None, :] < nbytes[:, None]], offsets, large=large)


def join(*parts: pa.Array) -> pa.Array:
    """The parts (of one binary type) concatenated row by row, null where any part is null."""
    if len(parts) == 1:
        return parts[0]
    import pyarrow.compute as pc  # here, not at the top: loading a Flink savepoint needs none of it

    return pc.binary_join_element_wise(*parts, pa.scalar(b"", parts[0].type))


def join_rows(parts: list[pa.Array]) -> pa.Array:
    """Row *i* of the result is row *i* of every part, one after the other; a null adds no bytes
    (unlike :func:`join`), and the parts may be binary or large_binary."""
    if len(parts) == 1:
        return parts[0]
    pieces = []
    for p in parts:
        data, offsets = parts_of(p)
        pieces.append((data, offsets[:-1], offsets[1:]))
    return join_pieces(pieces, len(parts[0]))


def join_pieces(pieces: list[tuple[np.ndarray, np.ndarray, np.ndarray]], n: int) -> pa.Array:
    """Row *i* of the result is every piece's ``data[starts[i]:ends[i]]``, one after the other
    (pieces of bytes not yet copied: ``(data, starts, ends)``, n rows each), copied once."""
    if n == 0 or not pieces:
        return binary(b"", np.zeros(n + 1, dtype=np.int64))
    datas, starts, ends, base = [], [], [], 0
    for data, s, e in pieces:
        datas.append(data)
        starts.append(s + base)
        ends.append(e + base)
        base += len(data)
    s = np.column_stack(starts).ravel()
    e = np.column_stack(ends).ravel()
    return slices(np.concatenate(datas), s, e, parts=len(pieces))


def slices(data: np.ndarray, starts: np.ndarray, ends: np.ndarray, parts: int = 1) -> pa.Array:
    """The bytes ``data[start:end]`` of every row, as one binary column (the caller has checked
    the bounds). With *parts* > 1, each row is that many consecutive (start, end) pairs joined."""
    lengths = (ends - starts).astype(np.int64)
    offsets = np.zeros(len(starts) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return binary(joined_slices(data, starts, offsets), offsets[::parts])


def joined_slices(data: np.ndarray, starts: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """The bytes ``data[starts[i] : starts[i] + offsets[i+1] - offsets[i]]`` of every row, joined
    (*offsets*: the rows' offsets in the result): by a compiled copy, or, up to
    :data:`SMALL_GATHER_BYTES` while numba is not loaded, by numpy's gather (slower per byte,
    but a few rows are not worth the compiler's start)."""
    total = int(offsets[-1])
    starts = np.asarray(starts, dtype=np.int64)
    if total <= SMALL_GATHER_BYTES and not numba_started():
        return gathered_slices(data, starts, offsets)
    from .slicekernel import concat_slices
    return concat_slices(data, np.ascontiguousarray(starts), offsets)


def same_slices(a: np.ndarray, a_starts: np.ndarray, b: np.ndarray, b_starts: np.ndarray,
                lengths: np.ndarray) -> bool:
    """Whether the slices of *a* and *b* at *a_starts* and *b_starts*, of *lengths* bytes, are
    equal row by row: compiled, or by numpy's gather as :func:`joined_slices` decides."""
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if int(offsets[-1]) <= SMALL_GATHER_BYTES and not numba_started():
        return bool(np.array_equal(gathered_slices(a, a_starts, offsets), gathered_slices(b, b_starts, offsets)))
    from .slicekernel import same_slices as compiled
    return compiled(a, a_starts, b, b_starts, lengths)


def gathered_slices(data: np.ndarray, starts: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """:func:`joined_slices` by numpy's gather (an index per byte)."""
    total = int(offsets[-1])
    return data[np.repeat(np.asarray(starts, dtype=np.int64) - offsets[:-1], np.diff(offsets)) + np.arange(total)]


def group_rows(elements: pa.Array, list_offsets: np.ndarray, valid: np.ndarray | None = None,
               large: bool = False) -> pa.Array:
    """Per list, its elements' bytes back to back (*list_offsets*, n + 1, index *elements*);
    the elements' bytes are not copied."""
    data, offsets = parts_of(elements)
    return binary(data, offsets[np.asarray(list_offsets, dtype=np.int64)], valid, large)


def spread(values: pa.Array, present: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(data, offsets) of a column holding *values* in order at the rows where *present* is true,
    empty elsewhere."""
    data, offsets = parts_of(values)
    lengths = np.zeros(len(present), dtype=np.int64)
    lengths[present] = np.diff(offsets)
    out = np.zeros(len(present) + 1, dtype=np.int64)
    np.cumsum(lengths, out=out[1:])
    return data, out


def scattered(values: pa.Array, present: np.ndarray) -> pa.Array:
    """A binary column holding *values* in order at the rows where *present* is true, null elsewhere."""
    if present.all():
        return values
    data, offsets = spread(values, present)
    valid = pa.array(present).buffers()[1]
    return pa.Array.from_buffers(pa.binary(), len(present),
                                 [valid, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data)])


def delimited(elements: pa.Array, list_offsets: np.ndarray, delimiter: int) -> pa.Array:
    """Per list, its elements' bytes separated by *delimiter* (RocksDB's list state layout)."""
    list_offsets = np.asarray(list_offsets, dtype=np.int64)
    n_elem = len(elements)
    if n_elem == 0:
        return binary(b"", np.zeros(len(list_offsets), dtype=np.int64))
    # every element but each list's last is followed by the delimiter
    last = np.zeros(n_elem, dtype=bool)
    counts = np.diff(list_offsets)
    last[list_offsets[1:][counts > 0] - 1] = True
    sep = binary(np.full(int((~last).sum()), delimiter, dtype=np.uint8),
                 np.concatenate([[0], np.cumsum(~last)]))
    joined = join_rows([elements, sep])
    return group_rows(joined, list_offsets)
