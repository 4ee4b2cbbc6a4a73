"""The table runtime's serializers' bytes from Arrow columns, as :mod:`encode` writes every
other serializer's: `RowDataSerializer` (keys and values), `ArrayDataSerializer`,
`MapDataSerializer` and `StringDataSerializer` write an int length (big-endian) and the binary
form (`rowdata_write.py`); a RAW value or a `BinaryRowDataSerializer` row read as bytes
(:class:`SizedBytes`) is written back as those bytes; `NullSerializer` writes nothing.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..bytecolumns import big_endian, binary, fixed, join_rows, parts_of
from ..errors import FlinkEncodeError
from .rowdata import NullValue, RowData, SizedBytes, SqlValue
from .rowdata_write import encode_rows, encode_value


def _no_nulls(values: pa.Array, what: str, where: str) -> None:
    if values.null_count:
        row = int(np.flatnonzero(values.is_null().to_numpy(zero_copy_only=False))[0])
        raise FlinkEncodeError(f"{where}: row {row} is null, which a {what} cannot hold here")


def length_framed(payload: pa.Array) -> pa.Array:
    """Each value's bytes after their length as a big-endian int."""
    lengths = np.diff(parts_of(payload)[1])
    return join_rows([fixed(big_endian(lengths, ">i4")), payload])


def row_data(t: RowData, values: pa.Array, where: str) -> pa.Array:
    """A key's row (no RowKind) is written as the planner's key projection writes it."""
    _no_nulls(values, t.describe(), where)
    return encode_rows(values, t.fields, t.with_kind, where, projected=not t.with_kind, framed=True)


def sql_value(t: SqlValue, values: pa.Array, where: str) -> pa.Array:
    _no_nulls(values, t.describe(), where)
    return length_framed(encode_value(t.type, values, where))


def sized_bytes(t: SizedBytes, values: pa.Array, where: str) -> pa.Array:
    _no_nulls(values, t.describe(), where)
    if not (pa.types.is_binary(values.type) or pa.types.is_large_binary(values.type)):
        raise FlinkEncodeError(f"{where}: a value of {t.describe()} is its serializer's bytes, passed through "
                               f"as they were read; a {values.type} column cannot give it new contents")
    return length_framed(values)


def null_value(t: NullValue, values: pa.Array, where: str) -> pa.Array:
    return binary(b"", np.zeros(len(values) + 1, np.int64))


ENCODERS = {RowData: row_data, SqlValue: sql_value, SizedBytes: sized_bytes, NullValue: null_value}
