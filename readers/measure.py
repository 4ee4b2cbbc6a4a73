"""How large each decoded value is, and how many elements it holds, computed over columns.

A value's *bytes* are the bytes of its data as decoded, whatever its format stored: a fixed-width
value its width (a boolean one byte), a string or binary value its length, a list, map or struct
the sum of its elements' (a map entry: its key and its value), a null nothing. Validity bits
and offsets are not counted, so a figure does not depend on how Arrow lays a batch out.

A value's *elements*: a list's elements, a map's entries, one for any other value (none for a null).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from statectl.statefmt.errors import StatectlError


def value_bytes(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """The bytes of each value of *values* (int64, one per row)."""
    if isinstance(values, pa.ChunkedArray):
        parts = [value_bytes(c) for c in values.chunks]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
    t = values.type
    if pa.types.is_dictionary(t):
        return value_bytes(values.dictionary_decode())
    if pa.types.is_null(t):
        return np.zeros(len(values), dtype=np.int64)
    if pa.types.is_boolean(t):
        return valid_mask(values).astype(np.int64)
    if pa.types.is_binary(t) or pa.types.is_string(t) or pa.types.is_large_binary(t) \
            or pa.types.is_large_string(t):
        return np.asarray(pc.binary_length(values).fill_null(0), dtype=np.int64)
    if pa.types.is_fixed_size_binary(t) or _fixed_width(t):
        return valid_mask(values) * np.int64(t.byte_width)
    if pa.types.is_map(t) or pa.types.is_list(t) or pa.types.is_large_list(t):
        values = as_list(values)
        parents = np.asarray(pc.list_parent_indices(values), dtype=np.int64)
        return np.bincount(parents, value_bytes(pc.list_flatten(values)), len(values)).astype(np.int64)
    if pa.types.is_struct(t):
        out = np.zeros(len(values), dtype=np.int64)
        for child in values.flatten():  # each field as its rows see it (the struct's nulls null)
            out += value_bytes(child)
        return out
    raise StatectlError(f"no size is known for values of type {t}")


def value_elements(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """The elements of each value of *values*: a list's or map's length, else 1 (0 for a null)."""
    t = values.type
    if pa.types.is_map(t) or pa.types.is_list(t) or pa.types.is_large_list(t):
        return np.asarray(pc.list_value_length(as_list(values)).fill_null(0), dtype=np.int64)
    return valid_mask(values).astype(np.int64)


def as_list(values: pa.Array) -> pa.Array:
    """A map column as the list of its entries (structs of key and value); a list as it is."""
    t = values.type
    if not pa.types.is_map(t):
        return values
    entry = pa.struct([pa.field("key", t.key_type, False), pa.field("value", t.item_type)])
    return values.cast(pa.list_(pa.field("entries", entry, False)))


def entries_of(values: pa.Array) -> pa.Array:
    """The elements of a list column or the entries (key, value structs) of a map column,
    flattened in row order."""
    return pc.list_flatten(as_list(values))


def valid_mask(values) -> np.ndarray:
    """Whether each value of *values* is not null."""
    if values.null_count == 0:
        return np.ones(len(values), dtype=bool)
    return np.asarray(values.is_valid(), dtype=bool)


def _fixed_width(t: pa.DataType) -> bool:
    try:
        return t.bit_width % 8 == 0 and t.bit_width > 0
    except ValueError:
        return False
