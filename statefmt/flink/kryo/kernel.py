"""The walk over many Kryo values of one fixed layout, compiled with numba.

A *plan* (:mod:`.plan`) is a list of steps, one per thing Kryo writes for a value of a final
class whose fields are numbers, strings, UUIDs, enums or such classes again. The kernel runs
the plan over every value and fills, per step, a number (or a string's span) and whether it
is present. A value the plan cannot follow (a back reference, an unexpected class) is marked
for the per-value decoder; bytes that make no sense end the walk with an error code and the
offset.

The walk is one long function on purpose: numba counts references to every array handed to a
function it calls, and splitting the walk's steps into functions that take its output arrays
made it 3 to 8 times slower (measured on 1M values); the same holds for arrays a kernel returns.
"""

from __future__ import annotations

import numpy as np

from ...jit import njit

_njit = njit(__file__)
_inline = njit(__file__, inline="always")  # the small readers, compiled into their callers

OK, ENDS_EARLY, BAD, NEED_ROOM = 0, 1, 2, 3

# Steps: (op, slot, skip). *slot* is where the step's output goes; *skip* how many steps a null
# object covers.
CLASS, OBJECT, INT, LONG, BOOL, BYTE, SHORT, CHAR, FLOAT, DOUBLE, STRING, UUID, ENUM, BOXED_INT, BOXED_LONG = \
    range(15)
BOXED_BOOL, BOXED_BYTE, BOXED_SHORT, BOXED_CHAR, BOXED_FLOAT, BOXED_DOUBLE = range(15, 21)
LIST = 21  # a collection field; the step's *skip* names its elements' op (STRING, BOXED_INT, BOXED_LONG)
MAX_NAMES = 64  # class names one value may define before the walk leaves it to the per-value decoder
FIXED_WIDTH = {SHORT: 2, CHAR: 2, FLOAT: 4, DOUBLE: 8, BOXED_SHORT: 2, BOXED_CHAR: 2, BOXED_FLOAT: 4,
               BOXED_DOUBLE: 8}


@_inline
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


@_inline
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


@_inline
def _zigzag32(v):
    return (v >> 1) ^ -(v & 1)


@_inline
def _zigzag64(v):
    u = np.uint64(v)
    return np.int64(u >> np.uint64(1)) ^ -np.int64(u & np.uint64(1))


@_inline
def _fixed(data, pos, width, little):
    v = np.int64(0)
    for i in range(width):
        b = np.int64(data[pos + (width - 1 - i if little else i)])
        v = (v << 8) | b
    return v


@_inline
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


@_inline
def _list(data, pos, end, little, element_op, row, slot, numbers, present, s_start, fallback, list_ids,
          list_names, last_name, name_ok, names, e_start, e_end, e_kind, e_num, elements):
    """One collection field: its class, reference marker, count, elements. Returns (position,
    names defined, elements so far); position -1: ends early, -2: left for the per-value decoder."""
    cid, pos = _varint(data, pos, end)
    if pos < 0:
        return np.int64(-1), names, elements
    if cid == 0:
        return pos, names, elements  # a null list
    if cid == 1:
        nid, pos = _varint(data, pos, end)
        if pos < 0:
            return np.int64(-1), names, elements
        if nid == names and names < MAX_NAMES:  # named here first
            start = pos
            while pos < end and data[pos] < 0x80:
                pos += 1
            pos += 1
            name_ok[names] = _named(data, start, pos, list_names, last_name)
            names += 1
        elif nid > names:
            fallback[row] = True
            return np.int64(-2), names, elements
        if not name_ok[nid]:  # a class the walk does not read (a TreeSet writes its comparator first)
            fallback[row] = True
            return np.int64(-2), names, elements
    elif cid - 2 >= list_ids.shape[0] or not list_ids[cid - 2]:
        fallback[row] = True
        return np.int64(-2), names, elements
    mark, pos = _varint(data, pos, end)
    if pos < 0:
        return np.int64(-1), names, elements
    if mark != 1:
        fallback[row] = True
        return np.int64(-2), names, elements
    if little:  # Kryo 5: a flagged count (whether any element is null), plus one
        if pos >= end:
            return np.int64(-1), names, elements
        b = np.int64(data[pos])
        has_null = b >= 0x80
        count, pos = _flagged(data, pos, end)
        count -= 1
    else:
        has_null = True
        count, pos = _varint(data, pos, end)
    if pos < 0 or count < 0 or count > end - pos:
        return np.int64(-1), names, elements
    present[row, slot] = True
    numbers[row, slot] = count
    s_start[row, slot] = elements
    marked = element_op == STRING or has_null
    for k in range(count):
        at = elements + k
        if marked:
            mark, pos = _varint(data, pos, end)
            if pos < 0:
                return np.int64(-1), names, elements
            if mark == 0:
                e_kind[at, 0] = 2
                continue
            if mark != 1:
                fallback[row] = True
                return np.int64(-2), names, elements
        if element_op == STRING:
            pos = _string(data, pos, end, e_start, e_end, e_kind, at, 0)
        elif element_op == BOXED_INT:
            v, pos = _varint(data, pos, end)
            e_num[at], e_kind[at, 0] = _zigzag32(v), 0
        else:
            v, pos = _varlong(data, pos, end)
            e_num[at], e_kind[at, 0] = _zigzag64(v), 0
        if pos < 0:
            return np.int64(-1), names, elements
    return pos, names, elements + count


@_inline
def _flagged(data, pos, end):
    """Kryo 5's varint with a flag in the first byte's top bit (six value bits there; the
    byte's next bit says more groups follow, as in a plain varint)."""
    b = np.int64(data[pos])
    pos += 1
    result = b & 0x3F
    if b & 0x40:
        rest, pos = _varint(data, pos, end)
        if pos < 0:
            return np.int64(0), pos
        result |= rest << 6
    return result, pos


@_inline
def _named(data, start, end, list_names, last):
    """Whether the ASCII class name at [start, end) (its last byte flagged) is one of *list_names*
    (the names' bytes, each ending with a flagged byte too). *last* holds the span of the last
    name found to be one (most values name the same class): compared first."""
    if last[1] - last[0] == end - start:
        k = 0
        while k < end - start and data[start + k] == data[last[0] + k]:
            k += 1
        if k == end - start:
            return True
    if _listed(data, start, end, list_names):
        last[0], last[1] = start, end
        return True
    return False


@_inline
def _listed(data, start, end, list_names):
    at = 0
    while at < list_names.shape[0]:
        stop = at
        while list_names[stop] < 0x80:
            stop += 1
        stop += 1
        if stop - at == end - start:
            k = 0
            while k < end - start and data[start + k] == list_names[at + k]:
                k += 1
            if k == end - start:
                return True
        at = stop
    return False


@_njit
def string_offsets(starts, ends, valid, offsets):
    """Each string's offset in one buffer (its length where *valid*, else 0); returns the total."""
    total = 0
    offsets[0] = 0
    for i in range(starts.shape[0]):
        if valid[i]:
            total += ends[i] - starts[i]
        offsets[i + 1] = total
    return total


@_njit
def gather_strings(arr, starts, ends, kind, valid, offsets, out):
    """Strings' bytes from their spans into *out* at *offsets*; an ASCII run's (kind 0) last
    byte loses its flag."""
    for i in range(starts.shape[0]):
        if not valid[i]:
            continue
        at = offsets[i]
        for k in range(ends[i] - starts[i]):
            out[at + k] = arr[starts[i] + k]
        if kind[i] == 0 and ends[i] > starts[i]:
            out[offsets[i + 1] - 1] &= 0x7F


@_njit
def classes_at(data, starts, limits, ids, name_starts, name_ends):
    """Each value's class as `writeClassAndObject` begins it: a registered id (*ids*), or a
    name's ASCII span (id -1; -2: written in the UTF-8 form, left to the caller), or null (-3)."""
    for i in range(starts.shape[0]):
        pos, end = starts[i], limits[i]
        cid, pos = _varint(data, pos, end)
        if pos < 0:
            ids[i] = -4  # ends early
        elif cid == 0:
            ids[i] = -3
        elif cid != 1:
            ids[i] = cid - 2
        else:
            nid, pos = _varint(data, pos, end)
            if pos < 0 or pos >= end:
                ids[i] = -4
            elif data[pos] >= 0x80:
                ids[i] = -2
                name_starts[i] = pos
            else:
                ids[i] = -1
                name_starts[i] = pos
                while pos < end and data[pos] < 0x80:
                    pos += 1
                name_ends[i] = pos + 1


HEX_PAIRS = np.frombuffer(b"".join(f"{i:02x}".encode() for i in range(256)), dtype=np.uint8)
UUID_POSITIONS = np.array([0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34], dtype=np.int64)


@_njit
def uuid_text(hi, lo, out, pairs, positions):
    """Each (hi, lo) pair as a UUID's 36 characters (lower-case hex, dashes after 8, 12, 16, 20):
    byte j of the 16 (big-endian) at *positions[j]*, as its two digits from *pairs*."""
    for i in range(hi.shape[0]):
        at = i * 36
        out[at + 8] = out[at + 13] = out[at + 18] = out[at + 23] = 45  # '-'
        for j in range(16):
            v = (hi[i] if j < 8 else lo[i]) >> (8 * (7 - (j & 7)))
            b = v & 0xFF
            out[at + positions[j]] = pairs[2 * b]
            out[at + positions[j] + 1] = pairs[2 * b + 1]


@_njit
def walk(data, starts, limits, plan, little, numbers, present, s_start, s_end, s_kind, fallback,
         list_ids, list_names, e_start, e_end, e_kind, e_num, first_row, elements):
    """Runs *plan* over each value from *first_row*; returns (code, row, offset, elements) and
    each value's end in *limits*' place (overwritten). A row marked in *fallback* is left for
    the per-value decoder.

    A list's class is a class id (*list_ids* says which ids are collections it can read) or a
    name (*list_names*, Kryo's ASCII form one after another, those it can read); its elements go
    to the ``e_`` arrays from *elements* on, the first's index in *s_start*, their number in
    *numbers*. When they are full the walk stops with NEED_ROOM at the row that needs more and
    the elements before it: the caller grows them and walks on from that row. (The arrays are
    the caller's: a kernel that makes or returns arrays pays reference counting on every use.)"""
    n = starts.shape[0]
    steps = plan.shape[0]
    capacity = e_num.shape[0]
    name_ok = np.zeros(MAX_NAMES, dtype=np.bool_)  # whether each class named in a value is a list the walk reads
    last_name = np.zeros(2, dtype=np.int64)
    for row in range(first_row, n):
        pos, end = starts[row], limits[row]
        row_elements = elements
        names = 0
        i = 0
        while i < steps:
            op, slot, skip = plan[i, 0], plan[i, 1], plan[i, 2]
            if op == CLASS:
                cid, pos = _varint(data, pos, end)
                if pos < 0:
                    return ENDS_EARLY, row, starts[row], 0
                if cid == 0:  # the whole value is null
                    i = steps
                    break
                if cid == 1:  # a class named in full: only the plan's class can be here
                    nid, pos = _varint(data, pos, end)
                    if pos < 0:
                        return ENDS_EARLY, row, starts[row], 0
                    if nid != names or names >= MAX_NAMES:
                        fallback[row] = True
                        break
                    while pos < end and data[pos] < 0x80:
                        pos += 1
                    pos += 1
                    name_ok[names] = False
                    names += 1
                elif plan[i, 2] >= 0 and cid - 2 != plan[i, 2]:
                    fallback[row] = True
                    break
                present[row, slot] = True
                i += 1
                continue
            if op == LIST:
                if elements + (end - pos) > capacity:  # room for as many elements as bytes are left
                    return NEED_ROOM, row, end - pos, row_elements
                pos, names, elements = _list(data, pos, end, little, skip, row, slot, numbers, present, s_start,
                                             fallback, list_ids, list_names, last_name, name_ok, names,
                                             e_start, e_end, e_kind, e_num, elements)
                if pos == -1:
                    return ENDS_EARLY, row, starts[row], 0
                if pos == -2:
                    break
                i += 1
                continue
            if op == OBJECT or op == STRING or op == UUID or op == ENUM or op >= BOXED_INT:
                mark, pos = _varint(data, pos, end)  # null, not null, or a reference
                if pos < 0:
                    return ENDS_EARLY, row, starts[row], 0
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
                    return ENDS_EARLY, row, pos, 0
                numbers[row, slot] = data[pos]
                pos += 1
            elif op == STRING:
                pos = _string(data, pos, end, s_start, s_end, s_kind, row, slot)
            elif op == UUID:
                if pos + 16 > end:
                    return ENDS_EARLY, row, pos, 0
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
                    return ENDS_EARLY, row, pos, 0
                numbers[row, slot] = _fixed(data, pos, width, little)
                pos += width
            if pos < 0:
                return ENDS_EARLY, row, starts[row], 0
            i += 1
        limits[row] = pos
    return OK, 0, 0, elements
