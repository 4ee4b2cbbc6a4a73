"""`BinaryRowData` bytes of a row of values, as the table runtime writes them, and the key
group Flink gives a SQL operator's key row.

A SQL operator's key is a `BinaryRowData`; its hash code is MurmurHash3 (32-bit, seed 42)
over the row's bytes in 4-byte words, and its key group Flink's usual
``murmurHash(hashCode) % maxParallelism`` (checked against every key of the suite's SQL
savepoints). Layout: `rowdata.py`.
"""

from __future__ import annotations

import datetime
import decimal
import struct

import mmh3

from ..errors import KeyTypeError
from .rowdata import null_bits_bytes
from .sqltypes import SqlType

ROW_HASH_SEED = 42

_FIXED = {"BOOLEAN": "<?", "TINYINT": "<b", "SMALLINT": "<h", "INTEGER": "<i", "BIGINT": "<q",
          "FLOAT": "<f", "DOUBLE": "<d", "INTERVAL_YEAR_MONTH": "<i", "INTERVAL_DAY_TIME": "<q"}
_EPOCH = datetime.date(1970, 1, 1)


def encode_row(values, fields: tuple[SqlType, ...], kind: int = 0) -> bytes:
    """The `BinaryRowData` bytes of *values* (one per field; None for null), RowKind *kind*."""
    arity = len(fields)
    head = null_bits_bytes(arity)
    fixed = bytearray(head + 8 * arity)
    fixed[0] = kind
    variable = bytearray()
    for i, (t, v) in enumerate(zip(fields, values)):
        slot = head + 8 * i
        if v is None:
            fixed[(i + 8) >> 3] |= 1 << ((i + 8) & 7)
            continue
        data = _fixed_bytes(t, v)
        if data is not None:
            fixed[slot:slot + len(data)] = data
            continue
        raw = _variable_bytes(t, v)
        if len(raw) <= 7:
            fixed[slot:slot + len(raw)] = raw
            fixed[slot + 7] = 0x80 | len(raw)
        else:
            offset = len(fixed) + len(variable)
            struct.pack_into("<Q", fixed, slot, (offset << 32) | len(raw))
            variable += raw + bytes(-len(raw) % 8)
    return bytes(fixed + variable)


def _fixed_bytes(t: SqlType, v) -> bytes | None:
    r = t.root
    try:
        if r in _FIXED:
            return struct.pack(_FIXED[r], v)
        if r == "DATE":
            return struct.pack("<i", (v - _EPOCH).days if isinstance(v, datetime.date) else int(v))
        if r == "TIME_WITHOUT_TIME_ZONE":
            return struct.pack("<i", int(v))
        if r == "DECIMAL" and t.compact:
            unscaled = decimal.Decimal(str(v)).scaleb(t.scale)
            if unscaled != unscaled.to_integral_value():
                raise KeyTypeError(f"{v!r} has more than {t.scale} decimal places for {t.sql()}")
            return struct.pack("<q", int(unscaled))
        if r in ("TIMESTAMP_WITHOUT_TIME_ZONE", "TIMESTAMP_WITH_LOCAL_TIME_ZONE") and t.compact:
            return struct.pack("<q", int(v))
    except (struct.error, TypeError, ValueError, decimal.InvalidOperation) as e:
        raise KeyTypeError(f"{v!r} is not a value of {t.sql()}: {e}") from None
    if r in ("CHAR", "VARCHAR", "BINARY", "VARBINARY"):
        return None
    raise KeyTypeError(f"a key field of type {t.sql()} cannot be encoded here; filter with --where instead")


def _variable_bytes(t: SqlType, v) -> bytes:
    if t.root in ("CHAR", "VARCHAR"):
        if not isinstance(v, str):
            raise KeyTypeError(f"{v!r} is not a value of {t.sql()}")
        return v.encode("utf-8")
    if isinstance(v, str):
        return bytes.fromhex(v)
    return bytes(v)


def row_hash_code(row: bytes) -> int:
    """`BinaryRowData.hashCode()`: MurmurHash3 x86 32-bit, seed 42, over the row's 4-byte words."""
    return mmh3.hash(row, ROW_HASH_SEED, signed=True)


def row_key_group(values, fields: tuple[SqlType, ...], max_parallelism: int) -> int:
    """The key group Flink assigns a key row of *values* (a SQL operator's key)."""
    from .keyhash import murmur_hash

    return murmur_hash(row_hash_code(encode_row(values, fields))) % max_parallelism
