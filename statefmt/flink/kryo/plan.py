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
from .decode import LIST_DECLARED, KryoDecoder
from .registry import KRYO5
from .stream import KryoDataError
from . import kernel as K

_PRIMITIVE_OPS = {"int": K.INT, "long": K.LONG, "boolean": K.BOOL, "byte": K.BYTE, "short": K.SHORT,
                  "char": K.CHAR, "float": K.FLOAT, "double": K.DOUBLE}
_BOXED_OPS = {"java.lang.Integer": K.BOXED_INT, "java.lang.Long": K.BOXED_LONG, "java.lang.Boolean": K.BOXED_BOOL,
              "java.lang.Byte": K.BOXED_BYTE, "java.lang.Short": K.BOXED_SHORT, "java.lang.Character": K.BOXED_CHAR,
              "java.lang.Float": K.BOXED_FLOAT, "java.lang.Double": K.BOXED_DOUBLE}
_LIST_ELEMENTS = {"java.lang.String": K.STRING, "java.lang.Integer": K.BOXED_INT, "java.lang.Long": K.BOXED_LONG}
# Declared collection types, and the classes a walk reads as Kryo's CollectionSerializer writes them.
LIST_CLASSES = {"java.util.ArrayList", "java.util.LinkedList", "java.util.HashSet", "java.util.LinkedHashSet",
                "java.util.Vector", "java.util.concurrent.CopyOnWriteArrayList"}
# LIST_CLASSES as Kryo writes a class name: ASCII, the last byte's top bit set.
_LIST_NAMES = np.frombuffer(b"".join(n[:-1].encode() + bytes([ord(n[-1]) | 0x80]) for n in sorted(LIST_CLASSES)),
                            dtype=np.uint8)


@dataclass
class Node:
    """One step's output: a field (or the value itself) and, for an object, its fields."""

    op: int
    slot: int
    name: str = ""
    children: list["Node"] | None = None
    enum: tuple[str, ...] = ()
    element: int = 0  # a list's elements' op


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
    if t.name in LIST_DECLARED and len(t.args) == 1 and not t.args[0].dims and t.args[0].name in _LIST_ELEMENTS:
        element = _LIST_ELEMENTS[t.args[0].name]
        steps.append([K.LIST, _next_slot(steps), element])
        return Node(K.LIST, steps[-1][1], name, element=element)
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
    starts = np.asarray(starts, dtype=np.int64)
    n = len(starts)
    list_ids = _list_ids(decoder)
    walked = _Walk(n, plan.slots, 4 * n + 16 if (plan.steps[:, 0] == K.LIST).any() else 1)
    ends = np.array(limits, dtype=np.int64, copy=True)
    row, elements = 0, 0
    while True:
        code, row, at, elements = K.walk(arr, starts, ends, plan.steps, decoder.little, walked.numbers,
                                         walked.present, walked.s_start, walked.s_end, walked.s_kind,
                                         walked.fallback, list_ids, _LIST_NAMES, walked.e_start, walked.e_end,
                                         walked.e_kind, walked.e_num, row, elements)
        if code != K.NEED_ROOM:
            break
        walked.grow(2 * len(walked.e_num) + int(at))
    if code != K.OK:
        return None, ends, walked.fallback, (code, row, at)
    built = _Build(arr, walked, decoder.little)
    top = built.node(plan.root, arrow_type)
    valid = walked.present[:, 0] & walked.present[:, plan.root.slot]
    array = pa.StructArray.from_arrays(top.flatten(), fields=list(arrow_type), mask=pa.array(~valid))
    return array, ends, walked.fallback, (K.OK, 0, 0)


def _list_ids(decoder: KryoDecoder) -> np.ndarray:
    """Which class ids name a collection the walk reads (Kryo 5 writes `Arrays.asList` as one too)."""
    ids = decoder.config.ids
    out = np.zeros(max(ids) + 1 if ids else 1, dtype=np.bool_)
    for i, reg in ids.items():
        out[i] = not reg.serializer and (reg.name in LIST_CLASSES or
                                         (reg.name == "java.util.Arrays$ArrayList" and decoder.little))
    return out


class _Walk:
    """What the walk fills: per value and step, a number or span and whether present; lists' elements."""

    def __init__(self, n: int, slots: int, capacity: int):
        self.numbers = np.zeros((n, slots), dtype=np.int64)
        self.present = np.zeros((n, slots), dtype=np.bool_)
        self.s_start = np.zeros((n, slots), dtype=np.int64)
        self.s_end = np.zeros((n, slots), dtype=np.int64)
        self.s_kind = np.full((n, slots), 2, dtype=np.int8)
        self.fallback = np.zeros(n, dtype=np.bool_)
        self.e_start = np.zeros((capacity, 1), dtype=np.int64)  # lists' elements: spans, kinds, numbers
        self.e_end = np.zeros((capacity, 1), dtype=np.int64)
        self.e_kind = np.full((capacity, 1), 2, dtype=np.int8)
        self.e_num = np.zeros(capacity, dtype=np.int64)

    def grow(self, capacity: int) -> None:
        """Room for *capacity* elements, those found so far kept."""
        for name in ("e_start", "e_end", "e_kind", "e_num"):
            old = getattr(self, name)
            new = np.zeros((capacity,) + old.shape[1:], dtype=old.dtype) if name != "e_kind" else \
                np.full((capacity, 1), 2, dtype=np.int8)
            new[:len(old)] = old
            setattr(self, name, new)


class _Build:
    """Arrow columns from what the walk filled."""

    def __init__(self, arr: np.ndarray, walked: _Walk, little: bool):
        self.arr, self.w, self.little = arr, walked, little
        self.present = walked.present & ~walked.fallback[:, None]
        self.numbers = walked.numbers

    def node(self, node: Node, t: pa.DataType) -> pa.Array:
        absent = ~self.present[:, node.slot]
        if node.op == K.OBJECT:
            kids = [self.node(c, t.field(i).type) for i, c in enumerate(node.children)]
            return pa.StructArray.from_arrays(kids, fields=list(t), mask=pa.array(absent))
        v = self.numbers[:, node.slot]
        if node.op == K.STRING:
            w = self.w
            return _spans(self.arr, w.s_start[:, node.slot], w.s_end[:, node.slot], w.s_kind[:, node.slot], ~absent)
        if node.op == K.LIST:
            return self.list(node, t)
        if node.op == K.UUID:
            return _uuids(v, self.numbers[:, node.slot + 1], ~absent)
        if node.op == K.ENUM:
            idx = pa.array(np.clip(v, 0, max(len(node.enum) - 1, 0)).astype(np.int32), mask=absent)
            return pa.DictionaryArray.from_arrays(idx, pa.array(node.enum, pa.string())).cast(pa.string())
        if node.op in (K.BOOL, K.BOXED_BOOL):
            return pa.array(v != 0, mask=absent)
        if node.op in (K.CHAR, K.BOXED_CHAR):
            return _chars(v, ~absent)
        return pa.array(_numbers(node.op, v), type=t, mask=absent)

    def list(self, node: Node, t: pa.DataType) -> pa.Array:
        valid = self.present[:, node.slot]
        counts = np.where(valid, self.numbers[:, node.slot], 0)
        offsets = np.zeros(len(counts) + 1, dtype=np.int32)
        np.cumsum(counts, out=offsets[1:])
        total = int(offsets[-1])
        firsts = self.w.s_start[:, node.slot]
        if (firsts[valid] == offsets[:-1][valid]).all():  # the elements lie in row order, one list each
            idx = slice(0, total)
        else:
            idx = np.repeat(firsts - offsets[:-1], counts) + np.arange(total)
        w = self.w
        kind = w.e_kind[idx, 0]
        if node.element == K.STRING:
            values = _spans(self.arr, w.e_start[idx, 0], w.e_end[idx, 0], kind, kind != 2)
        else:
            values = pa.array(_numbers(node.element, w.e_num[idx]), type=t.value_type, mask=kind == 2)
        return pa.ListArray.from_arrays(pa.array(offsets), values, mask=None if valid.all() else pa.array(~valid))


def _spans(arr: np.ndarray, starts: np.ndarray, ends: np.ndarray, kind: np.ndarray, valid: np.ndarray) -> pa.Array:
    """Kryo strings from their spans: ASCII (kind 0, the last byte flagged), UTF-8 (1), empty (3)."""
    valid = np.ascontiguousarray(valid, dtype=np.bool_)
    kind = np.ascontiguousarray(kind)
    offsets = np.empty(len(valid) + 1, dtype=np.int32)
    total = K.string_offsets(np.ascontiguousarray(starts), np.ascontiguousarray(ends), valid, offsets)
    data = np.empty(total, dtype=np.uint8)
    K.gather_strings(arr, np.ascontiguousarray(starts), np.ascontiguousarray(ends), kind, valid, offsets, data)
    nulls = len(valid) - int(np.count_nonzero(valid))
    bitmap = pa.array(valid).buffers()[1] if nulls else None
    out = pa.StringArray.from_buffers(len(valid), pa.py_buffer(offsets), pa.py_buffer(data), bitmap, nulls)
    if (kind == 1).any() and (data >= 0xED).any():
        out = _fix_surrogates(out)
    return out


def _uuids(hi: np.ndarray, lo: np.ndarray, valid: np.ndarray) -> pa.Array:
    text = np.empty(36 * len(hi), dtype=np.uint8)
    K.uuid_text(np.ascontiguousarray(hi), np.ascontiguousarray(lo), text, K.HEX_PAIRS, K.UUID_POSITIONS)
    offsets = np.arange(0, 36 * len(hi) + 1, 36, dtype=np.int32)
    return pa.StringArray.from_buffers(len(hi), pa.py_buffer(offsets), pa.py_buffer(text),
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
    """Kryo writes a character outside the BMP as two 3-byte surrogates: join them (rare). Bytes
    that are no such text (a damaged value) are one error."""
    values = []
    for b in out.cast(pa.binary()).to_pylist():
        try:
            values.append(None if b is None else b.decode("utf-8", "surrogatepass")
                          .encode("utf-16", "surrogatepass").decode("utf-16"))
        except UnicodeError:
            raise KryoDataError(f"a string's characters are not Kryo's UTF-8 ({b[:16].hex()}...)") from None
    return pa.array(values, pa.string())
