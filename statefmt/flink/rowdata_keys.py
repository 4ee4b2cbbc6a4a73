"""The key groups Flink gives a SQL operator's keys: a key is a `BinaryRowData` (as the
planner's key projection writes it, `rowdata_write.py`), its hash code MurmurHash3 (x86 32-bit,
seed 42) over the row's 4-byte words (`BinaryRowData.hashCode`), and its key group Flink's
usual ``murmurHash(hashCode) % maxParallelism`` (checked against every key of the suite's
SQL savepoints).
"""

from __future__ import annotations

import decimal

import numpy as np
import pyarrow as pa

from ..bytecolumns import parts_of
from ..errors import FlinkEncodeError, KeyTypeError
from ..keygroups import check_max_parallelism
from .keyhash import murmur_hash_array
from .rowdata import ROW_KIND_FIELD, ROW_KINDS
from .rowdata_write import encode_rows
from .sqltypes import SqlType

ROW_HASH_SEED = 42
_U32 = np.uint32


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << _U32(r)) | (x >> _U32(32 - r))


def _murmur_words(words: np.ndarray, length: int) -> np.ndarray:
    """MurmurHash3 x86 32-bit (seed 42) of each row of an (n, k) uint32 matrix of *length* bytes."""
    h = np.full(len(words), ROW_HASH_SEED, _U32)
    for j in range(words.shape[1]):
        k = _rotl(words[:, j] * _U32(0xCC9E2D51), 15) * _U32(0x1B873593)
        h = _rotl(h ^ k, 13) * _U32(5) + _U32(0xE6546B64)
    h ^= _U32(length)
    h ^= h >> _U32(16)
    h *= _U32(0x85EBCA6B)
    h ^= h >> _U32(13)
    h *= _U32(0xC2B2AE35)
    h ^= h >> _U32(16)
    return h.view(np.int32)


def row_hash_codes(rows: pa.Array, skip: int = 0) -> np.ndarray:
    """`BinaryRowData.hashCode()` of each row (whole 8-byte words, as every row is), int32,
    after the first *skip* bytes of each value (4: a serializer's length); rows of one length
    are hashed together."""
    data, offsets = parts_of(rows)
    return hash_codes_at(data, offsets[:-1] + skip, np.diff(offsets) - skip)


def hash_codes_at(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """`BinaryRowData.hashCode()` of the row of *lengths* bytes at each of *starts* in *data*
    (uint8), int32, without copying the rows out."""
    out = np.empty(len(lengths), np.int32)
    for length in np.unique(lengths).tolist():
        at = np.flatnonzero(lengths == length)
        out[at] = _murmur_words(_words(data, starts[at], length), length)
    return out


def _words(data: np.ndarray, starts: np.ndarray, length: int) -> np.ndarray:
    """An (n, length / 4) matrix of the little-endian 4-byte words of *length* bytes at each
    start; rows evenly spaced (every row of a fixed-width key) are viewed, not gathered."""
    n = len(starts)
    if not length:
        return np.zeros((n, 0), "<u4")
    step = int(starts[1] - starts[0]) if n > 1 else length
    if n and step % 4 == 0 and length % 4 == 0 and (np.diff(starts) == step).all():
        first = int(starts[0])
        words = data[first:first + step * (n - 1) + length].view("<u4")
        return np.lib.stride_tricks.as_strided(words, (n, length // 4), (step, 4), writeable=False)
    return np.ascontiguousarray(data[starts[:, None] + np.arange(length)]).view("<u4").reshape(n, -1)


def key_groups_of_rows(rows: pa.Array, max_parallelism: int, skip: int = 0) -> np.ndarray:
    """The key group of each key row's bytes (after *skip* bytes, as :func:`row_hash_codes`), int32."""
    check_max_parallelism(max_parallelism)
    return murmur_hash_array(row_hash_codes(rows, skip)) % np.int32(max_parallelism)


def key_groups_at(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray, max_parallelism: int) -> np.ndarray:
    """The key group of the key row of *lengths* bytes at each of *starts* in *data*, int32."""
    check_max_parallelism(max_parallelism)
    return murmur_hash_array(hash_codes_at(data, starts, lengths)) % np.int32(max_parallelism)


def row_key_groups(keys, fields: tuple[SqlType, ...], max_parallelism: int, where: str = "key") -> np.ndarray:
    """The key group of every key row (a struct column of fields ``f0``...), int32."""
    check_max_parallelism(max_parallelism)
    return key_groups_of_rows(encode_rows(keys, fields, False, where, projected=True), max_parallelism)


def key_row_column(values, fields: tuple[SqlType, ...]) -> pa.Array:
    """A one-row struct column of Python *values* (a key filter's), one per field; a value
    the field's type cannot hold is one :class:`KeyTypeError`."""
    columns = [_python_value(v, t) for v, t in zip(values, fields)]
    return pa.StructArray.from_arrays(columns, names=[f"f{i}" for i in range(len(fields))]) if fields \
        else pa.array([{}], pa.struct([]))


def _python_value(v, t: SqlType) -> pa.Array:
    target = t.arrow()
    try:
        if v is not None and t.root in ("BINARY", "VARBINARY") and isinstance(v, str):
            v = bytes.fromhex(v)
        elif v is not None and t.root == "DECIMAL":
            v = decimal.Decimal(str(v))
        elif v is not None and t.root == "TIME_WITHOUT_TIME_ZONE" and isinstance(v, int):
            v = v * 1_000_000  # milliseconds of the day
        try:
            return pa.array([v], target)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError):
            return pa.array([v]).cast(target)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError, ValueError,
            decimal.InvalidOperation):
        raise KeyTypeError(f"{v!r} is not a value of {t.sql()}") from None


def encode_row(values, fields: tuple[SqlType, ...], kind: int = 0, projected: bool = False) -> bytes:
    """The `BinaryRowData` bytes of one row of Python *values* (None for null) with RowKind
    *kind*; *projected*: as a key projection writes it (`rowdata_write.py`)."""
    row = key_row_column(values, fields)
    if kind:
        row = pa.StructArray.from_arrays([row.field(i) for i in range(len(fields))] + [pa.array([ROW_KINDS[kind]])],
                                         names=[f"f{i}" for i in range(len(fields))] + [ROW_KIND_FIELD])
    try:
        return encode_rows(row, fields, True, "row", projected=projected).to_pylist()[0]
    except FlinkEncodeError as e:
        raise KeyTypeError(str(e)) from None


def row_key_group(values, fields: tuple[SqlType, ...], max_parallelism: int) -> int:
    """The key group Flink assigns a key row of Python *values* (a key filter's key)."""
    try:
        return int(row_key_groups(key_row_column(values, fields), fields, max_parallelism)[0])
    except FlinkEncodeError as e:
        raise KeyTypeError(str(e)) from None
