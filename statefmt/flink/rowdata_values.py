"""One SQL type's values (an Arrow column without nulls) as the binary formats hold them: the
8-byte word of a row's slot or an array's element, and the bytes a value puts in the
variable part (`rowdata_write.py` lays them out; `rowdata.py` reads them back).

A word is little-endian from the slot's start (a 1-, 2- or 4-byte element is its first bytes).
A variable value's word holds its length (a TIMESTAMP(4..9): the nano-of-millisecond); the
writer adds its offset. A column of another Arrow type is cast to the type's own, and a cast
that would change a value (a narrowing) is one :class:`FlinkEncodeError`.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..bytecolumns import flat, join_pieces, parts_of
from ..errors import FlinkEncodeError
from .sqltypes import SqlType

INLINE_MAX = 7  # BinaryFormat.MAX_FIX_PART_DATA_SIZE: strings and bytes up to this many inline
DECIMAL_BYTES = 16  # a DECIMAL(19..38) always takes 16 bytes of the variable part
_WIDTHS = {"BOOLEAN": 1, "TINYINT": 1, "SMALLINT": 2, "INTEGER": 4, "DATE": 4, "INTERVAL_YEAR_MONTH": 4,
           "FLOAT": 4, "BIGINT": 8, "DOUBLE": 8, "INTERVAL_DAY_TIME": 8}
_PER_MILLI = {"ms": 1, "us": 1_000, "ns": 1_000_000}
TEXT = ("CHAR", "VARCHAR", "BINARY", "VARBINARY")
TIMESTAMPS = ("TIMESTAMP_WITHOUT_TIME_ZONE", "TIMESTAMP_WITH_LOCAL_TIME_ZONE")


def conformed(t: SqlType, values: pa.Array, where: str) -> pa.Array:
    """*values* as *t*'s own Arrow type; a cast that loses or changes a value is refused."""
    values = flat(values)
    target = t.arrow()
    if values.type == target or t.root in ("ARRAY", "MAP", "MULTISET", "ROW", "STRUCTURED_TYPE"):
        return values
    if t.root == "RAW" and not (pa.types.is_binary(values.type) or pa.types.is_large_binary(values.type)):
        raise FlinkEncodeError(f"{where}: a {t.sql()} value is its serializer's bytes, passed through as "
                               f"they were read; a {values.type} column cannot give it new contents")
    try:
        if pa.types.is_timestamp(target) and pa.types.is_timestamp(values.type):
            same_zone = values.cast(pa.timestamp(target.unit, values.type.tz))
            return pa.Array.from_buffers(target, len(same_zone), same_zone.buffers(), same_zone.null_count,
                                         same_zone.offset)
        return values.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise FlinkEncodeError(f"{where}: {values.type} values do not fit {t.sql()} "
                               f"({str(e).splitlines()[0]})") from None


def fixed_words(t: SqlType, values: pa.Array, where: str) -> np.ndarray:
    """The slot words (uint64) of a fixed-width type's values (numbers, DATE, TIME, intervals,
    and the compact DECIMAL and TIMESTAMP)."""
    r = t.root
    if r == "TIME_WITHOUT_TIME_ZONE":
        nanos = values.cast(pa.int64()).to_numpy(zero_copy_only=False)
        return _exact(np.divmod(nanos, 1_000_000), t, where, "a TIME holds milliseconds").astype("<u4").astype("<u8")
    if r == "DECIMAL":
        return _decimal_words(values)[:, 0].view("<u8").copy()
    if r in TIMESTAMPS:
        return timestamp_parts(values)[0].view("<u8").copy()
    width = _WIDTHS[r]
    raw = values.cast(pa.uint8() if r == "BOOLEAN" else _storage(values.type)).to_numpy(zero_copy_only=False)
    return np.ascontiguousarray(raw).view(f"<u{width}").astype("<u8")


def _storage(t: pa.DataType) -> pa.DataType:
    """The integer or float type an Arrow type is stored as (date32: int32)."""
    return pa.int32() if pa.types.is_date32(t) else t


def _exact(quotient_rest, t: SqlType, where: str, why: str) -> np.ndarray:
    quotient, rest = quotient_rest
    if (rest != 0).any():
        raise FlinkEncodeError(f"{where}: a value does not fit {t.sql()} ({why})")
    return quotient


def timestamp_parts(values: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(epoch millis, nano-of-millisecond) of timestamps of the type's own unit."""
    per = _PER_MILLI[values.type.unit]
    millis, rest = np.divmod(values.cast(pa.int64()).to_numpy(zero_copy_only=False).astype(np.int64), per)
    return millis.astype("<i8"), (rest * (1_000_000 // per)).astype(np.int64)


def _decimal_words(values: pa.Array) -> np.ndarray:
    """(n, 2) little-endian int64 words of decimal128 values' unscaled integers."""
    data = values.buffers()[1]
    words = np.frombuffer(data, dtype="<i8").reshape(-1, 2)
    return words[values.offset:values.offset + len(values)]


def big_decimal_blocks(values: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(n, 16) blocks of a DECIMAL(19..38)'s variable part and the bytes used: the unscaled value
    as Java's ``BigInteger.toByteArray`` gives it (big-endian, fewest bytes, sign bit kept), then zeros."""
    n = len(values)
    be = _decimal_words(values).view(np.uint8).reshape(n, 16)[:, ::-1]
    sign = be[:, :1] >> 7
    fill = np.where(sign == 1, 0xFF, 0x00).astype(np.uint8)
    redundant = (be[:, :-1] == fill) & ((be[:, 1:] >> 7) == sign)
    drop = np.cumprod(redundant, axis=1).sum(axis=1)
    index = drop[:, None] + np.arange(16)
    blocks = np.where(index < 16, np.take_along_axis(be, np.minimum(index, 15), axis=1), 0).astype(np.uint8)
    return blocks, (16 - drop).astype(np.int64)


def text_bytes(t: SqlType, values: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(data, offsets) of strings' UTF-8 bytes, or of bytes."""
    if t.root in ("CHAR", "VARCHAR"):
        values = values.cast(pa.large_string()).cast(pa.large_binary())
    return parts_of(values)


def inline_words(data: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """The slot words of values of at most seven bytes held in the slot: the bytes from the
    slot's start, and in its last byte the top bit and the length (0 for longer values)."""
    lengths = np.diff(offsets)
    words = np.zeros(len(lengths), "<u8")
    short = np.flatnonzero(lengths <= INLINE_MAX)
    if not len(short):
        return words
    padded = np.concatenate([data, np.zeros(8, np.uint8)])
    column = np.arange(8)
    m = padded[offsets[short][:, None] + column]
    m[column[None, :] >= lengths[short][:, None]] = 0
    m[:, 7] = 0x80 | lengths[short]
    words[short] = np.ascontiguousarray(m).view("<u8").ravel()
    return words


class VarPart:
    """The bytes each of n values puts in the variable part, as pieces not yet copied (each a
    byte array and every value's ``[start, end)`` in it): a value's bytes are its pieces'
    joined, so a row is copied once, whole (:func:`join_pieces`)."""

    __slots__ = ("n", "pieces", "lengths")

    def __init__(self, n: int, pieces: list[tuple[np.ndarray, np.ndarray, np.ndarray]]):
        self.n, self.pieces = n, pieces
        self.lengths = sum((e - s for _, s, e in pieces), np.zeros(n, np.int64))

    @classmethod
    def of(cls, column: pa.Array) -> "VarPart":
        data, offsets = parts_of(column)
        return cls(len(column), [(data, offsets[:-1], offsets[1:])])

    def column(self) -> pa.Array:
        return join_pieces(self.pieces, self.n)

    def spread(self, present: np.ndarray, reserve: int = 0) -> "VarPart":
        """These values at the rows where *present* is true; the others hold *reserve* zero bytes."""
        pieces = []
        for data, s, e in self.pieces:
            starts, ends = np.zeros(len(present), np.int64), np.zeros(len(present), np.int64)
            starts[present], ends[present] = s, e
            pieces.append((data, starts, ends))
        if reserve:
            pieces.append((np.zeros(reserve, np.uint8), np.zeros(len(present), np.int64),
                           np.where(present, 0, reserve)))
        return VarPart(len(present), pieces)


def padded(data: np.ndarray, offsets: np.ndarray, keep: np.ndarray | None = None) -> VarPart:
    """Each value's bytes followed by zeros to a multiple of 8 bytes (the variable part's word
    alignment); none where *keep* is false."""
    starts, lengths = offsets[:-1], np.diff(offsets)
    if keep is not None:
        lengths = np.where(keep, lengths, 0)
    pad = -lengths % 8
    return VarPart(len(lengths), [(data, starts, starts + lengths), (np.zeros(8, np.uint8), np.zeros_like(pad), pad)])


def blocks(matrix: np.ndarray) -> VarPart:
    """Each row of a byte matrix as one value's bytes."""
    n, width = matrix.shape
    at = np.arange(n, dtype=np.int64) * width
    return VarPart(n, [(np.ascontiguousarray(matrix).reshape(-1), at, at + width)])


def row_kinds(kinds: pa.Array | None, n: int, names: tuple[str, ...], where: str) -> np.ndarray:
    """The RowKind byte of each row from its ``_rowkind`` labels (null: INSERT)."""
    if kinds is None:
        return np.zeros(n, np.uint8)
    index = pc.index_in(kinds.cast(pa.string()), pa.array(names, pa.string()))
    unknown = pc.and_(kinds.is_valid(), index.is_null())
    if pc.any(unknown).as_py():
        bad = kinds[int(np.argmax(unknown.to_numpy(zero_copy_only=False)))].as_py()
        raise FlinkEncodeError(f"{where}: {bad!r} is not a RowKind (one of {', '.join(names)})")
    return pc.fill_null(index, 0).to_numpy(zero_copy_only=False).astype(np.uint8)
