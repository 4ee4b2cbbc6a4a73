"""Rows to Kryo values: the inverse of the compiled walk (:mod:`.plan`), column by column.

A value of a final class with a fixed layout (:func:`.plan.fixed_plan`) is written as Flink's
KryoSerializer writes it: the class (its registration id, or its name), the object's
reference mark, then each field in the layout's order: a primitive as its bytes, any other
field a null/not-null mark and then its bytes. Each field is one binary column built with
numpy; the columns are joined row by row. Only non-ASCII strings are encoded value by value.

Kryo would write an object met twice in one value as a back reference; rows carry no object
identity, so each is written in full (Flink reads both the same). Values of classes without a
fixed layout (collections, interfaces, `Object` fields) cannot be written.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...bytecolumns import binary, constant, fixed, join_rows, parts_of, slices, varints
from ...errors import FlinkEncodeError
from . import kernel as K
from .plan import Node, Plan
from .registry import KRYO5

# The longest string Kryo writes as flagged ASCII (a longer one, or one character, as UTF-8).
ASCII_MAX = {KRYO5: 32, 2: 63}
_WIDTHS = {K.SHORT: 2, K.CHAR: 2, K.FLOAT: 4, K.DOUBLE: 8, K.BOXED_SHORT: 2, K.BOXED_CHAR: 2,
           K.BOXED_FLOAT: 4, K.BOXED_DOUBLE: 8}
_INTS = {K.INT, K.BOXED_INT}
_LONGS = {K.LONG, K.BOXED_LONG}
_ONE_BYTE = {K.BOOL, K.BYTE, K.BOXED_BOOL, K.BOXED_BYTE}


def encode_fixed(plan: Plan, class_name: str, values: pa.Array, generation: int, where: str) -> pa.Array:
    """Each row of *values* (a struct column typed as the class's layout, null for a null
    value) as one Kryo value of *class_name*, as a binary column."""
    writer = _Writer(generation)
    valid = np.asarray(values.is_valid())
    class_id = int(plan.steps[0, 2])
    head = varints(np.full(len(values), class_id + 2)) if class_id >= 0 else \
        constant(b"\x01\x00" + writer.string_bytes(class_name), len(values))
    parts = [_pick(valid, head, constant(b"\x00", len(values)))]
    parts.append(writer.node(plan.root, values, valid, where))
    return join_rows(parts)


class _Writer:
    def __init__(self, generation: int):
        self.little = generation == KRYO5
        self.ascii_max = ASCII_MAX[KRYO5 if self.little else 2]

    def node(self, node: Node, column: pa.Array, rows: np.ndarray, where: str) -> pa.Array:
        """The bytes of *node* for the *rows* written (null elsewhere: no bytes)."""
        if node.op in (K.INT, K.LONG, K.BOOL, K.BYTE, K.SHORT, K.CHAR, K.FLOAT, K.DOUBLE):
            _no_nulls(column, rows, where)
            return _only(rows, self.body(node, column, rows, where))
        present = rows & np.asarray(column.is_valid())
        marks = fixed(present.astype(np.uint8))
        return _only(rows, join_rows([marks, _only(present, self.body(node, column, present, where))]))

    def body(self, node: Node, column: pa.Array, rows: np.ndarray, where: str) -> pa.Array:
        op = node.op
        if op == K.OBJECT:
            if not node.children:
                return constant(b"", len(column))
            names = [f.name for f in column.type]
            return join_rows([self.node(c, column.field(names.index(c.name)), rows, f"{where}.{c.name}")
                              for c in node.children])
        if op == K.STRING:
            return self.strings(column, rows)
        if op in _INTS:
            v = _numbers(column, pa.int32(), rows, where).astype(np.int64)
            return varints(((v << 1) ^ (v >> 31)) & 0xFFFFFFFF)
        if op in _LONGS:
            v = _numbers(column, pa.int64(), rows, where)
            return varlongs((v.astype(np.uint64) << np.uint64(1)) ^ (v >> 63).astype(np.uint64))
        if op in _ONE_BYTE:
            target = pa.bool_() if op in (K.BOOL, K.BOXED_BOOL) else pa.int8()
            return fixed(_numbers(column, target, rows, where).astype(np.int8).view(np.uint8))
        if op in (K.CHAR, K.BOXED_CHAR):
            return self.fixed_width(_char_units(column, rows, where), ">u2")
        if op in _WIDTHS:
            target = {2: pa.int16(), 4: pa.float32(), 8: pa.float64()}[_WIDTHS[op]]
            v = _numbers(column, target, rows, where)
            return self.fixed_width(v, {2: ">i2", 4: ">f4", 8: ">f8"}[_WIDTHS[op]])
        if op == K.ENUM:
            return varints(_enum_ordinals(node, column, rows, where) + 1)
        if op == K.UUID:
            return self.fixed_width(_uuid_halves(column, rows, where).reshape(-1), ">i8", per_row=2)
        raise FlinkEncodeError(f"{where}: a Kryo collection field cannot be written yet")

    def fixed_width(self, v: np.ndarray, dtype: str, per_row: int = 1) -> pa.Array:
        dtype = np.dtype(dtype).newbyteorder("<" if self.little else ">")
        raw = np.ascontiguousarray(v.astype(dtype)).view(np.uint8)
        return fixed(raw.reshape(len(v) // per_row, -1))

    def strings(self, column: pa.Array, rows: np.ndarray) -> pa.Array:
        """Kryo's `writeString` of each row (rows not written: empty)."""
        text = pc.fill_null(column.cast(pa.string()), "")
        text = pc.if_else(pa.array(rows), text, "")
        ascii_ = np.asarray(pc.string_is_ascii(text))
        units = np.asarray(pc.binary_length(text), dtype=np.int64)  # UTF-16 units, for ASCII rows
        flagged = ascii_ & (units > 1) & (units <= self.ascii_max)
        raw = text.cast(pa.binary())
        if flagged.any():
            raw = _flag_last_byte(raw, flagged)
        heads = _utf8_lengths(np.where(flagged, 0, units + 1))
        out = join_rows([_only(~flagged, heads), raw])
        if not ascii_.all():  # characters past ASCII: Kryo's modified UTF-8, value by value
            values = out.to_pylist()
            for i in np.flatnonzero(~ascii_).tolist():
                values[i] = self.string_bytes(text[i].as_py())
            out = pa.array(values, pa.binary())
        return out

    def string_bytes(self, s: str) -> bytes:
        """One string as Kryo's `writeString` writes it."""
        units = np.frombuffer(s.encode("utf-16-le", "surrogatepass"), dtype="<u2")
        if 1 < len(units) <= self.ascii_max and (units < 0x80).all():
            return s[:-1].encode("ascii") + bytes([ord(s[-1]) | 0x80])
        head = _utf8_lengths(np.array([len(units) + 1])).to_pylist()[0]
        return head + b"".join(_modified_utf8(int(u)) for u in units)


def varlongs(u: np.ndarray) -> pa.Array:
    """Kryo's variable-length longs: seven bits a byte, and a ninth byte of the top eight bits."""
    u = np.asarray(u, dtype=np.uint64)
    nbytes = np.ones(len(u), dtype=np.int64)
    for k in range(1, 9):
        nbytes += u >= np.uint64(1 << (7 * k))
    groups = np.zeros((len(u), 9), dtype=np.uint8)
    for k in range(8):
        groups[:, k] = ((u >> np.uint64(7 * k)) & np.uint64(0x7F)).astype(np.uint8)
        groups[:, k] |= np.where(k < nbytes - 1, 0x80, 0).astype(np.uint8)
    groups[:, 8] = (u >> np.uint64(56)).astype(np.uint8)
    offsets = np.zeros(len(u) + 1, dtype=np.int64)
    np.cumsum(nbytes, out=offsets[1:])
    return binary(groups[np.arange(9)[None, :] < nbytes[:, None]], offsets)


def _utf8_lengths(values: np.ndarray) -> pa.Array:
    """Kryo's flagged varint (`writeUtf8Length`): six bits and the flag in the first byte, then
    seven bits a byte; a 0 writes nothing (the row's string is flagged ASCII)."""
    values = np.asarray(values, dtype=np.int64)
    more = values >= 64
    first = ((values & 0x3F) | 0x80 | np.where(more, 0x40, 0)).astype(np.uint8)
    rest = _only(more, varints(values >> 6))
    return _only(values > 0, join_rows([fixed(first), rest]))


def _modified_utf8(u: int) -> bytes:
    if u < 0x80:
        return bytes([u])
    if u < 0x800:
        return bytes([0xC0 | (u >> 6), 0x80 | (u & 0x3F)])
    return bytes([0xE0 | (u >> 12), 0x80 | ((u >> 6) & 0x3F), 0x80 | (u & 0x3F)])


def _flag_last_byte(raw: pa.Array, rows: np.ndarray) -> pa.Array:
    """*raw* with the top bit of each flagged row's last byte set (Kryo's ASCII end mark)."""
    raw = raw.cast(pa.large_binary())
    _, offsets, data = raw.buffers()
    offsets = np.frombuffer(offsets, dtype=np.int64)[raw.offset:raw.offset + len(raw) + 1]
    body = np.frombuffer(data, dtype=np.uint8)[offsets[0]:offsets[-1]].copy() if data is not None else \
        np.zeros(0, np.uint8)
    body[offsets[1:][rows] - offsets[0] - 1] |= 0x80
    return binary(body, offsets - offsets[0])


def _pick(rows: np.ndarray, yes: pa.Array, no: pa.Array) -> pa.Array:
    return pc.if_else(pa.array(rows), yes, no)


def _only(rows: np.ndarray, column: pa.Array) -> pa.Array:
    """*column* where *rows*, no bytes elsewhere."""
    if rows.all():
        return column
    data, offsets = parts_of(column)
    return slices(data, offsets[:-1], np.where(rows, offsets[1:], offsets[:-1]))


def _no_nulls(column: pa.Array, rows: np.ndarray, where: str) -> None:
    missing = rows & ~np.asarray(column.is_valid())
    if missing.any():
        raise FlinkEncodeError(f"{where}: row {int(np.flatnonzero(missing)[0])} is null, which a Java "
                               "primitive field cannot hold")


def _numbers(column: pa.Array, target: pa.DataType, rows: np.ndarray, where: str) -> np.ndarray:
    _no_nulls(column, rows, where)
    try:
        column = column.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise FlinkEncodeError(f"{where}: a {column.type} column does not fit a Java {target} "
                               f"({str(e).splitlines()[0]})") from None
    zero = pa.scalar(False if target == pa.bool_() else 0, target)
    return np.asarray(pc.fill_null(column, zero).to_numpy(zero_copy_only=False))


def _char_units(column: pa.Array, rows: np.ndarray, where: str) -> np.ndarray:
    text = pc.if_else(pa.array(rows), pc.fill_null(column.cast(pa.string()), "\0"), "\0")
    encoded = pc.utf8_length(text).to_numpy(zero_copy_only=False)
    joined = "".join(text.to_pylist()).encode("utf-16-be", "surrogatepass")
    units = np.frombuffer(joined, dtype=">u2")
    if (encoded != 1).any() or len(units) != len(text):
        bad = int(np.flatnonzero(encoded != 1)[0]) if (encoded != 1).any() else 0
        raise FlinkEncodeError(f"{where}: a Java char holds one UTF-16 unit; row {bad} does not")
    return units.astype(np.uint16)


def _enum_ordinals(node: Node, column: pa.Array, rows: np.ndarray, where: str) -> np.ndarray:
    text = pc.fill_null(column.cast(pa.string()), node.enum[0] if node.enum else "")
    ordinals = np.asarray(pc.index_in(text, pa.array(node.enum, pa.string())).fill_null(-1), dtype=np.int64)
    bad = rows & (ordinals < 0)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise FlinkEncodeError(f"{where}: row {row} holds {text[row].as_py()!r}, not a constant of the enum "
                               f"({', '.join(node.enum)})")
    return np.maximum(ordinals, 0)


def _uuid_halves(column: pa.Array, rows: np.ndarray, where: str) -> np.ndarray:
    """(n, 2) int64: each UUID's most and least significant halves."""
    text = pc.if_else(pa.array(rows), pc.fill_null(column.cast(pa.string()), "0" * 32), "0" * 32)
    digits = pc.replace_substring(pc.utf8_lower(text), "-", "")
    ok = np.asarray(pc.match_substring_regex(digits, "^[0-9a-f]{32}$"))
    if not ok.all():
        row = int(np.flatnonzero(~ok)[0])
        raise FlinkEncodeError(f"{where}: row {row} holds {text[row].as_py()!r}, not a UUID")
    hexes = parts_of(digits.cast(pa.binary()))[0].reshape(-1, 32)
    nibbles = np.where(hexes >= ord("a"), hexes - ord("a") + 10, hexes - ord("0")).astype(np.uint64)
    weights = np.uint64(16) ** np.arange(15, -1, -1, dtype=np.uint64)
    hi = (nibbles[:, :16] * weights).sum(axis=1, dtype=np.uint64)
    lo = (nibbles[:, 16:] * weights).sum(axis=1, dtype=np.uint64)
    return np.column_stack([hi, lo]).view(np.int64)
