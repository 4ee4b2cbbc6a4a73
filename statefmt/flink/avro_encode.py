"""Arrow columns to flink-avro's value bytes: the inverse of the decoders in
:mod:`.types.avro` and :mod:`.types.avro_composite`, in the writer schema the savepoint holds.

Each Avro type encodes a whole column: fixed-width numbers as big-endian byte matrices,
strings and bytes as a 4-byte length and their bytes, records field by field, a union's index
and then each branch over the rows that took it, arrays and maps as one block of items (an
unsigned varint count, the items, a count of 0; an empty one is its 0 alone), as flink-avro's
`DataOutputEncoder` writes them, with no step per value.

A null where the schema has no null branch is one :class:`FlinkEncodeError` naming the place.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..bytecolumns import (big_endian, binary, constant, fixed, flat, flat_elements, group_rows, join_rows, slices,
                           spread, struct_fields, varints)
from ..errors import FlinkEncodeError
from . import types as T
from .types.avro import AvroDecimal, AvroEnum, AvroFixed, AvroLogical, AvroNull, AvroString
from .types.avro_composite import Avro, AvroArray, AvroMap, AvroRecord, AvroUnion

_NUMBERS = {"int": (pa.int32(), ">i4"), "long": (pa.int64(), ">i8"), "float": (pa.float32(), ">f4"),
            "double": (pa.float64(), ">f8")}


def encode_avro(t: Avro, values, where: str = "value") -> pa.Array:
    """Each row of *values* as flink-avro's AvroSerializer writes it in *t*'s writer schema."""
    return _encode(t.root, flat(values), where)


def _encode(t: T.FlinkType, values: pa.Array, where: str) -> pa.Array:
    encoder = _ENCODERS.get(type(t))
    if encoder is None:
        raise FlinkEncodeError(f"{where}: Avro {t.describe()} values cannot be written")
    return encoder(t, values, where)


def _no_nulls(values: pa.Array, t: T.FlinkType, where: str) -> None:
    if values.null_count:
        row = int(np.flatnonzero(np.asarray(values.is_null()))[0])
        raise FlinkEncodeError(f"{where}: row {row} is null, which the Avro schema's {t.describe()} cannot hold "
                               "(it has no null branch there)")


def _cast(values: pa.Array, target: pa.DataType, t: T.FlinkType, where: str) -> pa.Array:
    if values.type == target:
        return values
    try:
        return values.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise FlinkEncodeError(f"{where}: a {values.type} column does not fit Avro {t.describe()} "
                               f"({str(e).splitlines()[0]})") from None


def _scalar(t: T.Scalar, values, where):
    _no_nulls(values, t, where)
    if t.kind == "boolean":
        return fixed(np.asarray(_cast(values, pa.bool_(), t, where)).astype(np.uint8))
    target, dtype = _NUMBERS[t.kind]
    return fixed(big_endian(_cast(values, target, t, where).to_numpy(zero_copy_only=False), dtype))


def _null(t, values, where):
    return constant(b"", len(values))


def _string(t: AvroString, values, where):
    _no_nulls(values, t, where)
    raw = _cast(values, pa.binary() if t.binary else pa.string(), t, where).cast(pa.binary())
    lengths = np.asarray(pc.binary_length(raw), dtype=np.int64)
    return join_rows([fixed(big_endian(lengths, ">i4")), raw])


def _fixed(t: AvroFixed, values, where):
    _no_nulls(values, t, where)
    raw = _cast(values, pa.binary(), t, where)
    lengths = np.asarray(pc.binary_length(raw), dtype=np.int64)
    if (lengths != t.size).any():
        row = int(np.flatnonzero(lengths != t.size)[0])
        raise FlinkEncodeError(f"{where}: row {row} holds {int(lengths[row])} bytes, Avro {t.describe()} "
                               f"holds {t.size}")
    return raw


def _enum(t: AvroEnum, values, where):
    _no_nulls(values, t, where)
    text = _cast(values, pa.string(), t, where)
    index = np.asarray(pc.index_in(text, pa.array(t.symbols, pa.string())).fill_null(-1), dtype=np.int64)
    if (index < 0).any():
        row = int(np.flatnonzero(index < 0)[0])
        raise FlinkEncodeError(f"{where}: row {row} holds {text[row].as_py()!r}, not a symbol of Avro "
                               f"{t.describe()} ({', '.join(t.symbols)})")
    return fixed(big_endian(index, ">i4"))


def _logical(t: AvroLogical, values, where):
    """Dates, times and timestamps: the number in the logical type's own unit."""
    _no_nulls(values, t, where)
    as_logical = _cast(values, t.to, t, where)
    return _encode(t.inner, as_logical.cast(pa.int32() if t.inner.kind == "int" else pa.int64()), where)


def _decimal(t: AvroDecimal, values, where):
    """The unscaled value, big-endian two's complement: in as few bytes as Java's
    `BigInteger.toByteArray` (on `bytes`), or sign-extended to the fixed size."""
    _no_nulls(values, t, where)
    decimals = _cast(values, pa.decimal128(t.precision, t.scale), t, where)
    n = len(decimals)
    little = np.frombuffer(decimals.buffers()[1], dtype=np.uint8)[decimals.offset * 16:(decimals.offset + n) * 16]
    big = np.ascontiguousarray(little.reshape(n, 16)[:, ::-1])
    sign = np.where(big[:, 0] >= 0x80, 0xFF, 0x00).astype(np.uint8)
    # a leading byte is redundant when it is all sign and the next byte's top bit is the sign's
    redundant = (big[:, :15] == sign[:, None]) & ((big[:, 1:] & 0x80) == (sign[:, None] & 0x80))
    fewest = 16 - np.cumprod(redundant, axis=1).sum(axis=1)
    if isinstance(t.inner, AvroFixed):
        too_long = fewest > t.inner.size
        if too_long.any():
            row = int(np.flatnonzero(too_long)[0])
            raise FlinkEncodeError(f"{where}: row {row} holds {decimals[row].as_py()}, which does not fit "
                                   f"Avro {t.inner.describe()} of {t.inner.size} bytes")
        lengths = np.full(n, t.inner.size)
    else:
        lengths = fewest
    rows = np.arange(n, dtype=np.int64) * 16
    return _encode(t.inner, slices(big.reshape(-1), rows + 16 - lengths, rows + 16), where)


def _record(t: AvroRecord, values, where):
    _no_nulls(values, t, where)
    if not t.fields:
        return constant(b"", len(values))
    names = [n for n, _ in t.fields]
    columns = struct_fields(values, names, t.describe(), where)
    return join_rows([_encode(f, c, f"{where}.{n}") for (n, f), c in zip(t.fields, columns)])


def _union(t: AvroUnion, values, where):
    """The branch index of each row, then its value: a null takes the null branch; a nullable
    union's other rows its one other branch; a struct of branches the one field set."""
    n = len(values)
    null = np.asarray(values.is_null())
    nulls = [i for i, (_, b) in enumerate(t.branches) if isinstance(b, AvroNull)]
    if null.any() and not nulls:
        _no_nulls(values, t, where)
    index = np.full(n, nulls[0] if nulls else -1, dtype=np.int64)
    others = [i for i, (_, b) in enumerate(t.branches) if not isinstance(b, AvroNull)]
    if t.nullable:
        chosen = [(others[0], ~null, values)]
    else:
        columns = struct_fields(values, [t.branches[i][0] for i in others], t.describe(), where)
        set_ = np.column_stack([np.asarray(c.is_valid()) for c in columns]) if columns else np.zeros((n, 0), bool)
        wrong = ~null & (set_.sum(axis=1) != 1)
        if wrong.any():
            row = int(np.flatnonzero(wrong)[0])
            raise FlinkEncodeError(f"{where}: row {row} sets {int(set_[row].sum())} branches of Avro "
                                   f"{t.describe()}; exactly one is written")
        chosen = [(b, set_[:, k] & ~null, c) for k, (b, c) in enumerate(zip(others, columns))]
    parts = []
    for branch, rows, column in chosen:
        index[rows] = branch
        name, bt = t.branches[branch]
        encoded = _encode(bt, column.filter(pa.array(rows)), f"{where}[{name}]")
        parts.append(binary(*spread(encoded, rows)))
    return join_rows([fixed(big_endian(index, ">i4")), *parts])


def _blocks(counts: np.ndarray, items: pa.Array, offsets: np.ndarray) -> pa.Array:
    """Per row one block of its items (the count, the items) and the closing count of 0."""
    some = counts > 0
    heads = binary(*spread(varints(counts[some]), some))
    return join_rows([heads, group_rows(items, offsets), constant(b"\x00", len(counts))])


def _array(t: AvroArray, values, where):
    _no_nulls(values, t, where)
    (items,), offsets = flat_elements(values, [values.values])
    return _blocks(np.diff(offsets), _encode(t.items, items, f"{where}[]"), offsets)


def _map(t: AvroMap, values, where):
    _no_nulls(values, t, where)
    (keys, items), offsets = flat_elements(values, [values.keys, values.items])
    entries = join_rows([_string(AvroString(), keys, f"{where} key"), _encode(t.values, items, f"{where} value")])
    return _blocks(np.diff(offsets), entries, offsets)


_ENCODERS = {
    T.Scalar: _scalar, AvroNull: _null, AvroString: _string, AvroFixed: _fixed, AvroEnum: _enum,
    AvroLogical: _logical, AvroDecimal: _decimal, AvroRecord: _record, AvroUnion: _union, AvroArray: _array,
    AvroMap: _map,
}
