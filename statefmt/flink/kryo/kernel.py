"""The walk over many Kryo values of one fixed layout, compiled with numba.

A *plan* (:mod:`.plan`) is a list of steps, one per thing Kryo writes for a value of a final
class whose fields are numbers, strings, UUIDs, enums or such classes again. The kernel runs
the plan over every value and fills, per step, a number (or a string's span) and whether it
is present. A value the plan cannot follow (a back reference, an unexpected class) is marked
for the per-value decoder; bytes that make no sense end the walk with an error code and the
offset.
"""

from __future__ import annotations

import numpy as np

from ...jit import njit

_njit = njit(__file__)

OK, ENDS_EARLY, BAD = 0, 1, 2

# Steps: (op, slot, skip). *slot* is where the step's output goes; *skip* how many steps a null
# object covers.
CLASS, OBJECT, INT, LONG, BOOL, BYTE, SHORT, CHAR, FLOAT, DOUBLE, STRING, UUID, ENUM, BOXED_INT, BOXED_LONG = \
    range(15)
BOXED_BOOL, BOXED_BYTE, BOXED_SHORT, BOXED_CHAR, BOXED_FLOAT, BOXED_DOUBLE = range(15, 21)
FIXED_WIDTH = {SHORT: 2, CHAR: 2, FLOAT: 4, DOUBLE: 8, BOXED_SHORT: 2, BOXED_CHAR: 2, BOXED_FLOAT: 4,
               BOXED_DOUBLE: 8}


@_njit
def _varint(data, pos, end):
    result = np.int64(0)
    shift = 0
    for _ in range(5):
        if pos >= end:
            return np.int64(0), np.int64(-1)
        b = np.int64(data[pos])
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result & 0xFFFFFFFF, pos
        shift += 7
    return result & 0xFFFFFFFF, pos


@_njit
def _varlong(data, pos, end):
    result = np.uint64(0)
    shift = np.uint64(0)
    for i in range(9):
        if pos >= end:
            return np.int64(0), np.int64(-1)
        b = np.uint64(data[pos])
        pos += 1
        if i == 8:
            result |= b << np.uint64(56)
            break
        result |= (b & np.uint64(0x7F)) << shift
        if b < np.uint64(0x80):
            break
        shift += np.uint64(7)
    return np.int64(result), pos


@_njit
def _zigzag32(v):
    return (v >> 1) ^ -(v & 1)


@_njit
def _zigzag64(v):
    u = np.uint64(v)
    return np.int64(u >> np.uint64(1)) ^ -np.int64(u & np.uint64(1))


@_njit
def _fixed(data, pos, width, little):
    v = np.int64(0)
    for i in range(width):
        b = np.int64(data[pos + (width - 1 - i if little else i)])
        v = (v << 8) | b
    return v


@_njit
def _string(data, pos, end, out_start, out_end, out_kind, row, slot):
    """One string: ASCII with its last byte flagged (kind 0), or a flagged char count then
    UTF-8 (kind 1; null 2, empty 3). Returns where it ends (-1: ends early)."""
    if pos >= end:
        return np.int64(-1)
    b = np.int64(data[pos])
    if b < 0x80:
        start = pos
        while pos < end and data[pos] < 0x80:
            pos += 1
        if pos >= end:
            return np.int64(-1)
        pos += 1
        out_start[row, slot], out_end[row, slot], out_kind[row, slot] = start, pos, 0
        return pos
    count = b & 0x3F
    pos += 1
    if b & 0x40:
        shift = 6
        for _ in range(4):
            if pos >= end:
                return np.int64(-1)
            c = np.int64(data[pos])
            pos += 1
            count |= (c & 0x7F) << shift
            if c < 0x80:
                break
            shift += 7
    if count == 0:
        out_kind[row, slot] = 2
        return pos
    if count == 1:
        out_start[row, slot], out_end[row, slot], out_kind[row, slot] = pos, pos, 3
        return pos
    start = pos
    for _ in range(count - 1):
        if pos >= end:
            return np.int64(-1)
        top = np.int64(data[pos]) >> 4
        pos += 3 if top == 14 else (2 if top >= 12 else 1)
    if pos > end:
        return np.int64(-1)
    out_start[row, slot], out_end[row, slot], out_kind[row, slot] = start, pos, 1
    return pos


@_njit
def walk(data, starts, limits, plan, little, numbers, present, s_start, s_end, s_kind, fallback):
    """Runs *plan* over each value; returns (code, row, offset) and each value's end in *limits*'
    place (overwritten). A row marked in *fallback* is left for the per-value decoder."""
    n = starts.shape[0]
    steps = plan.shape[0]
    for row in range(n):
        pos, end = starts[row], limits[row]
        i = 0
        while i < steps:
            op, slot, skip = plan[i, 0], plan[i, 1], plan[i, 2]
            if op == CLASS:
                cid, pos = _varint(data, pos, end)
                if pos < 0:
                    return ENDS_EARLY, row, starts[row]
                if cid == 0:  # the whole value is null
                    i = steps
                    break
                if cid == 1:  # a class named in full: only the plan's class can be here
                    nid, pos = _varint(data, pos, end)
                    if pos < 0:
                        return ENDS_EARLY, row, starts[row]
                    while pos < end and data[pos] < 0x80:
                        pos += 1
                    pos += 1
                elif plan[i, 2] >= 0 and cid - 2 != plan[i, 2]:
                    fallback[row] = True
                    break
                present[row, slot] = True
                i += 1
                continue
            if op == OBJECT or op == STRING or op == UUID or op == ENUM or op >= BOXED_INT:
                mark, pos = _varint(data, pos, end)  # null, not null, or a reference
                if pos < 0:
                    return ENDS_EARLY, row, starts[row]
                if mark == 0:
                    i += 1 + (skip if op == OBJECT else 0)
                    continue
                if mark != 1:  # a reference to an object read before
                    fallback[row] = True
                    break
            present[row, slot] = True
            if op == OBJECT:
                pass
            elif op == INT or op == BOXED_INT:
                v, pos = _varint(data, pos, end)
                numbers[row, slot] = _zigzag32(v)
            elif op == LONG or op == BOXED_LONG:
                v, pos = _varlong(data, pos, end)
                numbers[row, slot] = _zigzag64(v)
            elif op == BOOL or op == BYTE or op == BOXED_BOOL or op == BOXED_BYTE:
                if pos >= end:
                    return ENDS_EARLY, row, pos
                numbers[row, slot] = data[pos]
                pos += 1
            elif op == STRING:
                pos = _string(data, pos, end, s_start, s_end, s_kind, row, slot)
            elif op == UUID:
                if pos + 16 > end:
                    return ENDS_EARLY, row, pos
                numbers[row, slot] = _fixed(data, pos, 8, little)
                numbers[row, slot + 1] = _fixed(data, pos + 8, 8, little)
                pos += 16
            elif op == ENUM:
                v, pos = _varint(data, pos, end)
                numbers[row, slot] = v - 1
                if v == 0:
                    present[row, slot] = False
            else:
                width = 2 if (op == SHORT or op == CHAR or op == BOXED_SHORT or op == BOXED_CHAR) else \
                    (4 if op == FLOAT or op == BOXED_FLOAT else 8)
                if pos + width > end:
                    return ENDS_EARLY, row, pos
                numbers[row, slot] = _fixed(data, pos, width, little)
                pos += width
            if pos < 0:
                return ENDS_EARLY, row, starts[row]
            i += 1
        limits[row] = pos
    return OK, 0, 0
