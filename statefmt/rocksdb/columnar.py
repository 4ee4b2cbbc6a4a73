"""The binary encoding of :mod:`.codec`, computed for whole Arrow arrays at once.

For an Arrow array of n values each function gives a ``large_binary`` array of
n encodings, byte for byte what :class:`.codec.ValueCodec`, :class:`.codec.KeyLayout`
and :func:`.codec.timer_key` give value by value (`docs/FORMAT.md` §11), null
where the value is null. Fixed-width integers and varints are built with
numpy; the parts of one encoding are joined with Arrow's
``binary_join_element_wise``; a list's or map's elements are encoded once,
flat, and each row's run of them is cut out of that one buffer by offsets.
Types with no vectorised encoding here (timestamps other than microseconds,
wide decimals) use the scalar codec, value by value.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import bytecolumns as B
from ..bytecolumns import flat_elements, join
from ..errors import UsageError
from ..types import DataType
from ..vocabulary import TimerDomain
from .codec import KeyLayout, ValueCodec

BIN = pa.large_binary()
# the shared builders, every column large_binary
binary, fixed, constant, varints, group_rows = (
    partial(f, large=True) for f in (B.binary, B.fixed, B.constant, B.varints, B.group_rows))
_EMPTY = pa.scalar(b"", BIN)
_INT_WIDTH = {"int8": 1, "int16": 2, "int32": 4, "int64": 8, "date32": 4}
_DOMAINS = tuple(TimerDomain)  # as codec.timer_key numbers them


def sortable_ints(values: np.ndarray, width: int, valid: np.ndarray | None = None) -> pa.Array:
    """Integers as *width* big-endian bytes with the sign bit flipped (codec.sortable_int)."""
    unsigned = np.asarray(values).astype(f"i{width}").view(f"u{width}")
    unsigned = unsigned ^ np.array(1 << (8 * width - 1), dtype=f"u{width}")
    return fixed(unsigned.astype(f">u{width}"), valid)


# --- values ------------------------------------------------------------------------------

def _valid(arr: pa.Array) -> np.ndarray | None:
    if arr.null_count == 0:
        return None
    return arr.is_valid().to_numpy(zero_copy_only=False)


def encode(arr: pa.Array, t: DataType) -> pa.Array:
    """Each value of *arr* (of logical type *t*) in its encoding; null stays null."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    valid = _valid(arr)
    if isinstance(t, str):
        if t in _INT_WIDTH:
            ints = arr.cast(pa.int32()) if t == "date32" else arr
            return sortable_ints(ints.fill_null(0).to_numpy(), _INT_WIDTH[t], valid)
        if t == "bool":
            return fixed(arr.fill_null(False).to_numpy(zero_copy_only=False).astype(np.uint8), valid)
        if t in ("float32", "float64"):
            return fixed(arr.fill_null(0).to_numpy().astype(">f4" if t == "float32" else ">f8"), valid)
        if t in ("string", "binary"):
            raw = arr.cast(BIN)
            return join(varints(pc.binary_length(raw).fill_null(0).to_numpy()), raw)
    else:
        (tag, arg), = t.items()
        if tag == "timestamp" and arr.type.unit == "us":
            return sortable_ints(arr.cast(pa.int64()).fill_null(0).to_numpy(), 8, valid)
        if tag == "decimal" and pa.types.is_decimal128(arr.type):
            return _decimal(arr, valid)
        if tag == "list":
            return _list(arr, arg, valid)
        if tag == "map":
            return _map(arr, arg["key"], arg["value"], valid)
        if tag == "struct":
            fields = [nullable(arr.field(i), f["type"]) for i, f in enumerate(arg)]
            return binary(*B.parts_of(join(*fields)), valid)
    return _scalar(arr, t)


def nullable(arr: pa.Array, t: DataType) -> pa.Array:
    """Each value as a *nullable T*: a presence byte, then the value if present."""
    valid = _valid(arr)
    present = np.ones(len(arr), dtype=np.uint8) if valid is None else valid.astype(np.uint8)
    return join(fixed(present), encode(arr, t).fill_null(_EMPTY))


def _decimal(arr: pa.Array, valid) -> pa.Array:
    """decimal128's unscaled 16-byte little-endian two's complement, turned big-endian, sign flipped."""
    raw = np.frombuffer(arr.buffers()[1], dtype=np.uint8).reshape(-1, 16)
    raw = raw[arr.offset:arr.offset + len(arr), ::-1].copy()
    raw[:, 0] ^= 0x80
    return binary(raw.reshape(-1), np.arange(len(arr) + 1, dtype=np.int64) * 16, valid)


def _counted(runs_of_rows: pa.Array, offsets: np.ndarray) -> pa.Array:
    return join(varints(np.diff(offsets)), runs_of_rows)


def _list(arr, element: DataType, valid) -> pa.Array:
    (values,), offsets = flat_elements(arr, [arr.values])
    return _counted(group_rows(nullable(values, element), offsets, valid), offsets)


def _map(arr, key: DataType, value: DataType, valid) -> pa.Array:
    # Arrow maps have no null keys, so the scalar codec's check cannot fail here
    (keys, items), offsets = flat_elements(arr, [arr.keys, arr.items])
    entries = join(encode(keys, key), nullable(items, value))
    return _counted(group_rows(entries, offsets, valid), offsets)


def _scalar(arr: pa.Array, t: DataType) -> pa.Array:
    codec = ValueCodec(t)
    return pa.array([None if v is None else codec.encode(v) for v in arr.to_pylist()], BIN)


def list_entries(arr: pa.Array, element: DataType) -> pa.Array:
    """A list state's entry values: each list's elements as *nullable* elements, concatenated
    (no count, FORMAT.md §11.3); null for a null or empty list, which has no entry."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    (values,), offsets = flat_elements(arr, [arr.values])
    keep = np.diff(offsets) > 0
    if arr.null_count:
        keep &= arr.is_valid().to_numpy(zero_copy_only=False)
    return group_rows(nullable(values, element), offsets, keep)


def map_entries(arr: pa.Array, key: DataType, value: DataType
                ) -> tuple[np.ndarray, pa.Array, pa.Array]:
    """A map state's entries (FORMAT.md §11.3), one per map key of every non-null map: the
    row each comes from, the encoded map key (to follow the row's key), the *nullable* value."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    (keys, items), offsets = flat_elements(arr, [arr.keys, arr.items])
    row = np.repeat(np.arange(len(arr)), np.diff(offsets))
    user_keys, values = encode(keys, key), nullable(items, value)
    if arr.null_count:
        keep = pa.array(arr.is_valid().to_numpy(zero_copy_only=False)[row])
        row, user_keys, values = row[keep.to_numpy(zero_copy_only=False)], \
            user_keys.filter(keep), values.filter(keep)
    return row, user_keys, values


# --- keys --------------------------------------------------------------------------------

def key_group_prefixes(groups: np.ndarray) -> pa.Array:
    """The 2-byte big-endian key-group prefix of every row."""
    return fixed(np.asarray(groups).astype(">u2"))


def key_ns(layout: KeyLayout, keys: list[pa.Array], namespace: pa.Array | None) -> pa.Array:
    """``key ‖ namespace`` of every row (KeyLayout.key_bytes + namespace_bytes)."""
    n = len(keys[0])
    parts = []
    for arr, t in zip(keys, layout.key_types):
        if arr.null_count:
            raise UsageError("key columns may not be null")
        parts.append(encode(arr, t))
    if layout.namespace_type is None:
        if namespace is not None and namespace.null_count < len(namespace):
            raise UsageError("this operator's keyed state has no namespace type; use no namespace")
        parts.append(constant(b"\x00", n))
    else:
        parts.append(nullable(namespace, layout.namespace_type) if namespace is not None
                     else constant(b"\x00", n))
    return join(*parts)


def timer_keys(groups: np.ndarray, domains: pa.Array, timestamps: np.ndarray,
               kns: pa.Array) -> pa.Array:
    """``key group ‖ domain ‖ timestamp ‖ key ‖ namespace`` of every timer (codec.timer_key)."""
    names = domains.to_numpy(zero_copy_only=False)
    index = np.full(len(names), 255, dtype=np.uint8)
    for i, name in enumerate(_DOMAINS):
        index[names == name.value] = i
    if (index == 255).any():
        bad = names[index == 255][0]
        raise UsageError(f"unknown timer domain {bad!r}")
    return join(key_group_prefixes(groups), fixed(index), sortable_ints(timestamps, 8), kns)
