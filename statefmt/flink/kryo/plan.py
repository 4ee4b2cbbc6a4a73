"""Columns of Kryo values decoded all at once, for a final class with a fixed layout.

:func:`fixed_plan` turns a class's layout into the kernel's steps (None when some field's
shape is only known from the bytes: an interface, `Object`, a collection); :func:`columns`
runs :func:`.kernel.walk` over the values and builds each field's Arrow column from what it
filled, with numpy: no Python step per value. Values the walk leaves (a back reference) are
decoded one by one and put in their places.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from .classes import JavaType
from .decode import KryoDecoder
from .registry import KRYO5
from . import kernel as K

_PRIMITIVE_OPS = {"int": K.INT, "long": K.LONG, "boolean": K.BOOL, "byte": K.BYTE, "short": K.SHORT,
                  "char": K.CHAR, "float": K.FLOAT, "double": K.DOUBLE}
_BOXED_OPS = {"java.lang.Integer": K.BOXED_INT, "java.lang.Long": K.BOXED_LONG, "java.lang.Boolean": K.BOXED_BOOL,
              "java.lang.Byte": K.BOXED_BYTE, "java.lang.Short": K.BOXED_SHORT, "java.lang.Character": K.BOXED_CHAR,
              "java.lang.Float": K.BOXED_FLOAT, "java.lang.Double": K.BOXED_DOUBLE}
_HEX = np.frombuffer(b"".join(f"{i:02x}".encode() for i in range(256)), dtype=np.uint8).reshape(256, 2)


@dataclass
class Node:
    """One step's output: a field (or the value itself) and, for an object, its fields."""

    op: int
    slot: int
    name: str = ""
    children: list["Node"] | None = None
    enum: tuple[str, ...] = ()


@dataclass
class Plan:
    steps: np.ndarray  # (n, 3) int64: op, slot, skip (or the class id)
    root: Node
    slots: int


def fixed_plan(decoder: KryoDecoder, type_class: str) -> Plan | None:
    """The steps for values of *type_class*, when every field's encoding follows from the layout."""
    steps: list[list[int]] = []
    info = decoder.class_info(type_class)
    if info is None or not info.final or info.enum:
        return None
    class_id = next((i for i, r in decoder.config.ids.items() if r.name == type_class), -1)
    steps.append([K.CLASS, 0, class_id])
    root = _object(decoder, type_class, steps, (), "")
    if root is None:
        return None
    return Plan(np.array(steps, dtype=np.int64), root, max(s[1] for s in steps) + 2)


def _object(decoder: KryoDecoder, name: str, steps: list, seen: tuple[str, ...], field: str) -> Node | None:
    info = decoder.class_info(name)
    if info is None or not info.final or name in seen:
        return None
    at = len(steps)
    steps.append([K.OBJECT, _next_slot(steps), 0])
    children = []
    for f in decoder.fields_of(info):
        child = _field(decoder, f.type, steps, seen + (name,), f.name)
        if child is None:
            return None
        children.append(child)
    steps[at][2] = len(steps) - at - 1
    return Node(K.OBJECT, steps[at][1], field, children)


def _field(decoder: KryoDecoder, t: JavaType, steps: list, seen, name: str) -> Node | None:
    if t.dims:
        return None
    op = _PRIMITIVE_OPS.get(t.name) if t.primitive else _BOXED_OPS.get(t.name)
    if op is None and t.name == "java.lang.String":
        op = K.STRING
    if op is None and t.name == "java.util.UUID" and decoder.config.generation == KRYO5:
        op = K.UUID
    if op is not None:
        steps.append([op, _next_slot(steps), 0])
        return Node(op, steps[-1][1], name)
    info = decoder.class_info(t.name)
    if info is not None and info.enum:
        steps.append([K.ENUM, _next_slot(steps), 0])
        return Node(K.ENUM, steps[-1][1], name, enum=info.enum_constants)
    if info is not None and info.final:
        return _object(decoder, t.name, steps, seen, name)
    return None


def _next_slot(steps: list) -> int:
    """Slots are step positions, except that a UUID takes two."""
    last = steps[-1]
    return last[1] + (2 if last[0] == K.UUID else 1)


def columns(plan: Plan, decoder: KryoDecoder, arr: np.ndarray, starts: np.ndarray, limits: np.ndarray,
            arrow_type: pa.DataType):
    """The values at *starts* (each bounded by *limits*) as one Arrow array, where each ends,
    the rows left for the per-value decoder, and the walk's (code, row, offset)."""
    n = len(starts)
    ends = np.array(limits, dtype=np.int64, copy=True)
    numbers = np.zeros((n, plan.slots), dtype=np.int64)
    present = np.zeros((n, plan.slots), dtype=np.bool_)
    s_start = np.zeros((n, plan.slots), dtype=np.int64)
    s_end = np.zeros((n, plan.slots), dtype=np.int64)
    s_kind = np.full((n, plan.slots), 2, dtype=np.int8)
    fallback = np.zeros(n, dtype=np.bool_)
    little = decoder.config.generation == KRYO5
    status = K.walk(arr, np.asarray(starts, dtype=np.int64), ends, plan.steps, little, numbers, present,
                    s_start, s_end, s_kind, fallback)
    if status[0] != K.OK:
        return None, ends, fallback, status
    built = _Build(arr, numbers, present, s_start, s_end, s_kind, little)
    top = built.node(plan.root, arrow_type)
    valid = present[:, 0] & present[:, plan.root.slot]
    array = pa.StructArray.from_arrays(top.flatten() if isinstance(top, pa.StructArray) else [top],
                                       fields=list(arrow_type), mask=pa.array(~valid))
    return array, ends, fallback, status


@dataclass
class _Build:
    arr: np.ndarray
    numbers: np.ndarray
    present: np.ndarray
    s_start: np.ndarray
    s_end: np.ndarray
    s_kind: np.ndarray
    little: bool

    def node(self, node: Node, t: pa.DataType) -> pa.Array:
        mask = pa.array(~self.present[:, node.slot])
        if node.op == K.OBJECT:
            kids = [self.node(c, t.field(i).type) for i, c in enumerate(node.children)]
            return pa.StructArray.from_arrays(kids, fields=list(t), mask=mask)
        v = self.numbers[:, node.slot]
        if node.op == K.STRING:
            return self.strings(node.slot)
        if node.op == K.UUID:
            return self.uuids(node.slot)
        if node.op == K.ENUM:
            idx = pa.array(np.clip(v, 0, max(len(node.enum) - 1, 0)).astype(np.int32), mask=~self.present[:, node.slot])
            return pa.DictionaryArray.from_arrays(idx, pa.array(node.enum, pa.string())).cast(pa.string())
        if node.op in (K.BOOL, K.BOXED_BOOL):
            return pa.array(v != 0, mask=~self.present[:, node.slot])
        if node.op in (K.CHAR, K.BOXED_CHAR):
            return _chars(v, self.present[:, node.slot])
        values = _numbers(node.op, v)
        return pa.array(values, type=t, mask=~self.present[:, node.slot])

    def strings(self, slot: int) -> pa.Array:
        kind = self.s_kind[:, slot]
        valid = self.present[:, slot] & (kind != 2)
        starts = np.where(valid, self.s_start[:, slot], 0)
        ends = np.where(valid, self.s_end[:, slot], 0)
        lengths = ends - starts
        offsets = np.zeros(len(starts) + 1, dtype=np.int32)
        np.cumsum(lengths, out=offsets[1:])
        total = int(offsets[-1])
        data = np.empty(total, dtype=np.uint8)
        if total:
            index = np.repeat(starts - offsets[:-1], lengths) + np.arange(total)
            data[:] = self.arr[index]
        ascii_rows = valid & (kind == 0) & (lengths > 0)
        data[offsets[1:][ascii_rows] - 1] &= 0x7F
        out = pa.StringArray.from_buffers(len(starts), pa.py_buffer(offsets), pa.py_buffer(data),
                                          pa.array(valid).buffers()[1], int((~valid).sum()))
        if (valid & (kind == 1)).any() and (data >= 0xED).any():
            out = _fix_surrogates(out)
        return out

    def uuids(self, slot: int) -> pa.Array:
        hi, lo = self.numbers[:, slot], self.numbers[:, slot + 1]
        raw = np.stack([hi, lo], axis=1).astype(">i8").view(np.uint8).reshape(-1, 16)
        hexed = _HEX[raw].reshape(-1, 32)
        text = np.full((len(hi), 36), ord("-"), dtype=np.uint8)
        for (a, b), at in zip(((0, 8), (8, 12), (12, 16), (16, 20), (20, 32)), (0, 9, 14, 19, 24)):
            text[:, at:at + b - a] = hexed[:, a:b]
        offsets = np.arange(0, 36 * len(hi) + 1, 36, dtype=np.int32)
        valid = self.present[:, slot]
        return pa.StringArray.from_buffers(len(hi), pa.py_buffer(offsets), pa.py_buffer(text.tobytes()),
                                           pa.array(valid).buffers()[1], int((~valid).sum()))


def _numbers(op: int, v: np.ndarray) -> np.ndarray:
    if op in (K.INT, K.BOXED_INT):
        return v.astype(np.int32)
    if op in (K.LONG, K.BOXED_LONG):
        return v
    if op in (K.BYTE, K.BOXED_BYTE):
        return v.astype(np.uint8).view(np.int8)
    if op in (K.SHORT, K.BOXED_SHORT):
        return v.astype(np.uint16).view(np.int16)
    if op in (K.FLOAT, K.BOXED_FLOAT):
        return v.astype(np.uint32).view(np.float32)
    return v.view(np.float64)


def _chars(units: np.ndarray, valid: np.ndarray) -> pa.Array:
    """UTF-16 code units as one-character strings (as UTF-8: one, two or three bytes each)."""
    u = units & 0xFFFF
    widths = np.where(u < 0x80, 1, np.where(u < 0x800, 2, 3))
    offsets = np.zeros(len(u) + 1, dtype=np.int32)
    np.cumsum(widths, out=offsets[1:])
    data = np.zeros(int(offsets[-1]), dtype=np.uint8)
    at = offsets[:-1]
    one, two, three = widths == 1, widths == 2, widths == 3
    data[at[one]] = u[one]
    data[at[two]], data[at[two] + 1] = 0xC0 | (u[two] >> 6), 0x80 | (u[two] & 0x3F)
    data[at[three]] = 0xE0 | (u[three] >> 12)
    data[at[three] + 1], data[at[three] + 2] = 0x80 | ((u[three] >> 6) & 0x3F), 0x80 | (u[three] & 0x3F)
    out = pa.StringArray.from_buffers(len(u), pa.py_buffer(offsets), pa.py_buffer(data),
                                      pa.array(valid).buffers()[1], int((~valid).sum()))
    return _fix_surrogates(out) if (three & ((u & 0xF800) == 0xD800)).any() else out


def _fix_surrogates(out: pa.StringArray) -> pa.Array:
    """Kryo writes a character outside the BMP as two 3-byte surrogates: join them (rare)."""
    values = []
    for b in out.cast(pa.binary()).to_pylist():
        values.append(None if b is None else b.decode("utf-8", "surrogatepass").encode("utf-16", "surrogatepass")
                      .decode("utf-16"))
    return pa.array(values, pa.string())
