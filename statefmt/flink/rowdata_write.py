"""The table runtime's binary formats written as Flink writes them, by column: a struct column
in, one `BinaryRowData` (or `BinaryArrayData`, `BinaryMapData`) per row out, as a binary column.
The layout is `rowdata.py`'s; what a value's slot and variable part hold, `rowdata_values.py`.

As `BinaryRowWriter` and `BinaryArrayWriter` do: a null's slot is zero (an array's null
element too); strings and bytes of at most seven bytes live in their slot, longer ones and
every array, map, row and RAW value in the variable part, each padded to whole 8-byte words
in field order; a DECIMAL(19..38) takes 16 bytes there, a TIMESTAMP(4..9) 8. A key's row is
written by the planner's generated key projection, which reserves those 16 or 8 bytes for a
null too (*projected*). An array's fixed part (its size, null bits in 4-byte words and the
elements) is padded to whole words before its variable part; a map is the size of its key
array, the key array and the value array.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..bytecolumns import (binary, fixed, flat, flat_elements, group_rows, join_pieces, join_rows, parts_of,
                           struct_fields)
from ..errors import FlinkEncodeError
from . import rowdata_values as V
from .rowdata import ROW_KIND_FIELD, ROW_KINDS, null_bits_bytes
from .sqltypes import FIXED_WIDTH, SqlType

_RESERVED = {"DECIMAL": V.DECIMAL_BYTES, "TIMESTAMP_WITHOUT_TIME_ZONE": 8, "TIMESTAMP_WITH_LOCAL_TIME_ZONE": 8}


class Slots:
    """One field's (or an array's elements') values as the writer places them: each value's
    8-byte word, whether it is null, and the bytes it puts in the variable part (none for most)."""

    __slots__ = ("words", "null", "var")

    def __init__(self, words: np.ndarray, null: np.ndarray, var: V.VarPart):
        self.words, self.null, self.var = words, null, var

    def placed(self, cursor: np.ndarray) -> np.ndarray:
        """The words with each variable-part value's offset (*cursor*, per value) in the high half."""
        return self.words | np.where(self.var.lengths > 0, cursor.astype(np.uint64) << np.uint64(32),
                                     np.uint64(0))


def encode_rows(values, fields: tuple[SqlType, ...], with_kind: bool, where: str, projected: bool = False,
                framed: bool = False) -> pa.Array:
    """Each struct of *values* (fields ``f0``... or the type's names, and ``_rowkind`` when
    *with_kind*) as a `BinaryRowData`; *framed*: after its length as a big-endian int, as
    `RowDataSerializer` writes it. *values* has no nulls."""
    return _rows(flat(values), fields, [f"f{i}" for i in range(len(fields))], with_kind, where, projected, framed)


def _rows(values: pa.Array, fields, names: list[str], with_kind: bool, where: str, projected: bool,
          framed: bool = False) -> pa.Array:
    n, arity = len(values), len(fields)
    head = null_bits_bytes(arity)
    frame = 4 if framed else 0
    columns = dict(zip(names, struct_fields(values, names, "row", where)))
    kinds = None
    if with_kind and ROW_KIND_FIELD in values.type.names:
        kinds = struct_fields(values, [ROW_KIND_FIELD], "row", where)[0]
    full = np.zeros((n, frame + head + 8 * arity), np.uint8)
    matrix = full[:, frame:]
    matrix[:, 0] = V.row_kinds(kinds, n, ROW_KINDS, where)
    cursor = np.full(n, head + 8 * arity, np.int64)
    variable = []
    for i, (t, name) in enumerate(zip(fields, names)):
        slots = field_slots(t, columns[name], f"{where}.{name}", projected)
        matrix[:, (i + 8) >> 3] |= (slots.null.astype(np.uint8) << np.uint8((i + 8) & 7))
        matrix[:, head + 8 * i:head + 8 * i + 8] = slots.placed(cursor).astype("<u8").view(np.uint8).reshape(n, 8)
        if slots.var.lengths.any():
            cursor += slots.var.lengths
            variable += slots.var.pieces
    if framed:
        full[:, :4] = cursor.astype(">i4").view(np.uint8).reshape(n, 4)
    return join_pieces(V.blocks(full).pieces + variable, n)


def field_slots(t: SqlType, values: pa.Array, where: str, projected: bool = False) -> Slots:
    """The slots of a column of *t*'s values, nulls included."""
    values = flat(values)
    n = len(values)
    null = values.is_null().to_numpy(zero_copy_only=False) if values.null_count else np.zeros(n, bool)
    if null.any() and not t.nullable:
        raise FlinkEncodeError(f"{where}: row {int(np.argmax(null))} is null, which {t.sql()} cannot hold")
    if t.root == "NULL" or null.all():
        return _null_slots(t, null, projected)
    present = values.filter(pa.array(~null)) if null.any() else values
    words, var = _present_slots(t, V.conformed(t, present, where), where)
    if not null.any():
        return Slots(words, null, var)
    out = np.zeros(n, np.uint64)
    out[~null] = words
    return Slots(out, null, var.spread(~null, _reserved(t, projected)))


def _reserved(t: SqlType, projected: bool) -> int:
    """The variable-part bytes a null of *t* takes: a key projection's non-compact DECIMAL or TIMESTAMP."""
    return _RESERVED[t.root] if projected and t.root in _RESERVED and not t.compact else 0


def _null_slots(t: SqlType, null: np.ndarray, projected: bool) -> Slots:
    n = len(null)
    var = V.VarPart(n, []).spread(np.zeros(n, bool), _reserved(t, projected))
    return Slots(np.zeros(n, np.uint64), np.ones(n, bool) if t.root == "NULL" else null, var)


def _present_slots(t: SqlType, values: pa.Array, where: str) -> tuple[np.ndarray, V.VarPart]:
    """(words, variable-part bytes) of non-null values of *t*, already of its Arrow type."""
    r, n = t.root, len(values)
    none = V.VarPart(n, [])
    if r in FIXED_WIDTH or (r in _RESERVED and t.compact):
        return V.fixed_words(t, values, where), none
    if r in V.TEXT:
        data, offsets = V.text_bytes(t, values)
        lengths = np.diff(offsets)
        inline = lengths <= V.INLINE_MAX
        words = np.where(inline, V.inline_words(data, offsets), lengths.astype(np.uint64))
        return words, V.padded(data, offsets, ~inline)
    if r == "DECIMAL":
        blocks, used = V.big_decimal_blocks(values)
        return used.astype(np.uint64), V.blocks(blocks)
    if r in _RESERVED:  # a TIMESTAMP(4..9): the millis in the variable part, the nanos in the slot
        millis, nanos = V.timestamp_parts(values)
        return nanos.astype(np.uint64), V.blocks(millis.view(np.uint8).reshape(n, 8))
    payload = encode_value(t, values, where)
    data, offsets = parts_of(payload)
    return np.diff(offsets).astype(np.uint64), V.padded(data, offsets)


def encode_value(t: SqlType, values: pa.Array, where: str) -> pa.Array:
    """The bytes of non-null values held in the variable part: an array, a map, a nested row,
    a RAW value's bytes, a string's."""
    r = t.root
    if r == "ARRAY":
        return encode_arrays(t.children[0], values, where)
    if r in ("MAP", "MULTISET"):
        return encode_maps(t, values, where)
    if r in ("ROW", "STRUCTURED_TYPE"):
        return _rows(values, t.children, list(t.names), False, where, False)
    if r in V.TEXT or r == "RAW":
        return binary(*V.text_bytes(t, V.conformed(t, values, where)))
    raise FlinkEncodeError(f"{where}: no binary layout for SQL type {t.sql()}")


def encode_arrays(element: SqlType, values: pa.Array, where: str) -> pa.Array:
    """Each list of *values* (no nulls) as a `BinaryArrayData` of *element*s."""
    (items,), offsets = flat_elements(values, [values.values])
    return _arrays(element, items, offsets, f"{where}[]")


def _arrays(element: SqlType, items: pa.Array, offsets: np.ndarray, where: str) -> pa.Array:
    """One `BinaryArrayData` per list of *items* (*offsets*, n + 1): the fixed parts written
    into one zeroed buffer at once, each followed by its elements' variable parts."""
    counts = np.diff(offsets)
    owner = np.repeat(np.arange(len(counts)), counts)
    index = np.arange(len(items)) - offsets[owner]
    width = FIXED_WIDTH.get(element.root, 8)
    header = 4 + ((counts + 31) // 32) * 4
    size = (header + width * counts + 7) // 8 * 8
    starts = np.zeros(len(counts) + 1, np.int64)
    np.cumsum(size, out=starts[1:])
    buf = np.zeros(int(starts[-1]), np.uint8)
    buf[starts[:-1, None] + np.arange(4)] = counts.astype("<i4").view(np.uint8).reshape(-1, 4)
    slots = field_slots(element, items, where)
    null_at = starts[owner] + 4 + (index >> 3)
    np.bitwise_or.at(buf, null_at[slots.null], (1 << (index[slots.null] & 7)).astype(np.uint8))
    var_lengths = slots.var.lengths
    before = np.cumsum(var_lengths) - var_lengths
    cursor = size[owner] + before - (before[offsets[owner]] if len(items) else 0)
    words = slots.placed(cursor).astype("<u8").view(np.uint8).reshape(-1, 8)[:, :width]
    buf[(starts[owner] + header[owner] + index * width)[:, None] + np.arange(width)] = words
    return join_rows([binary(buf, starts), group_rows(slots.var.column(), offsets)])


def encode_maps(t: SqlType, values: pa.Array, where: str) -> pa.Array:
    """Each map of *values* (no nulls) as a `BinaryMapData`: its key array's size, its key
    array, its value array (a MULTISET's values are its counts)."""
    value_type = t.children[1] if t.root == "MAP" else SqlType("INTEGER", False)
    (keys, items), offsets = flat_elements(values, [values.keys, values.items])
    key_arrays = _arrays(t.children[0], keys, offsets, f"{where}.key")
    value_arrays = _arrays(value_type, items, offsets, f"{where}.value")
    sizes = np.diff(parts_of(key_arrays)[1]).astype("<i4")
    return join_rows([fixed(sizes.view(np.uint8).reshape(-1, 4)), key_arrays, value_arrays])
