"""Key groups: key -> key group -> subtask, and the limits of parallelism.

The subtask formulas are Flink's KeyGroupRangeAssignment. The key hash is
Spark's ``xxhash64`` (seed 42) over the key columns, so Spark computes it in
the JVM with no Python UDF, and :func:`hash_key` computes the same number in
pure Python. A key's group is ``pmod(hash, max_parallelism)``.
"""

from __future__ import annotations

import datetime as _dt
import struct
from typing import Iterable, Sequence

import xxhash

from .errors import KeyTypeError, LimitError
from .types import DataType, quote_identifier, type_str

MIN_MAX_PARALLELISM = 1
MAX_MAX_PARALLELISM = 32768  # 2**15, as in Flink
DEFAULT_LOWER_MAX_PARALLELISM = 128
HASH_SEED = 42

# Types a key column may have, and how each value is turned into hash input.
_INT_TYPES = ("bool", "int8", "int16", "int32", "date32")  # hashed as 4 bytes
_LONG_TYPES = ("int64",)  # hashed as 8 bytes; timestamps too
_EPOCH_DATE = _dt.date(1970, 1, 1)
_EPOCH_NAIVE = _dt.datetime(1970, 1, 1)
_EPOCH_UTC = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


def check_max_parallelism(max_parallelism: int) -> int:
    if not isinstance(max_parallelism, int) or isinstance(max_parallelism, bool) or not (
        MIN_MAX_PARALLELISM <= max_parallelism <= MAX_MAX_PARALLELISM
    ):
        raise LimitError(
            f"max parallelism must be between {MIN_MAX_PARALLELISM} and "
            f"{MAX_MAX_PARALLELISM}, got {max_parallelism!r}"
        )
    return max_parallelism


def check_parallelism(parallelism: int, max_parallelism: int) -> int:
    check_max_parallelism(max_parallelism)
    if not isinstance(parallelism, int) or isinstance(parallelism, bool) or not (
        1 <= parallelism <= max_parallelism
    ):
        raise LimitError(
            f"parallelism must be between 1 and the max parallelism {max_parallelism}, "
            f"got {parallelism!r}"
        )
    return parallelism


def round_up_to_power_of_two(x: int) -> int:
    return 1 if x <= 1 else 1 << (x - 1).bit_length()


def default_max_parallelism(parallelism: int) -> int:
    """Flink's default: ``min(max(roundUpToPowerOfTwo(p + p/2), 128), 32768)``."""
    if parallelism < 1:
        raise LimitError(f"parallelism must be at least 1, got {parallelism}")
    return min(
        max(round_up_to_power_of_two(parallelism + parallelism // 2), DEFAULT_LOWER_MAX_PARALLELISM),
        MAX_MAX_PARALLELISM,
    )


def key_group_range(max_parallelism: int, parallelism: int, subtask: int) -> tuple[int, int]:
    """The inclusive key-group range ``(first, last)`` owned by *subtask* of *parallelism*."""
    check_parallelism(parallelism, max_parallelism)
    if not 0 <= subtask < parallelism:
        raise LimitError(f"subtask index must be between 0 and {parallelism - 1}, got {subtask}")
    first = (subtask * max_parallelism + parallelism - 1) // parallelism
    last = ((subtask + 1) * max_parallelism + parallelism - 1) // parallelism - 1
    return first, last


def subtask_for_key_group(key_group: int, max_parallelism: int, parallelism: int) -> int:
    """The subtask of *parallelism* that owns *key_group*: ``g * p // maxP``."""
    return key_group * parallelism // max_parallelism


def check_key_type(t: DataType, column: str = "key") -> None:
    if isinstance(t, dict) and "timestamp" in t:
        return
    if t in _INT_TYPES or t in _LONG_TYPES or t in ("string", "binary"):
        return
    raise KeyTypeError(
        f"key column {column!r} has type {type_str(t)}, which cannot be a key; "
        "keys are integers, booleans, strings, binary, dates or timestamps"
    )


def _hash_input(value, t: DataType) -> bytes:
    """The bytes Spark's xxhash64 feeds to XXH64 for one value of type *t*."""
    if t == "string":
        return value.encode("utf-8")
    if t == "binary":
        return bytes(value)
    if t == "bool":
        return struct.pack("<i", 1 if value else 0)
    if t == "date32":
        days = value if isinstance(value, int) else (value - _EPOCH_DATE).days
        return struct.pack("<i", days)
    if t in _INT_TYPES:
        return struct.pack("<i", value)
    if t in _LONG_TYPES:
        return struct.pack("<q", value)
    if isinstance(t, dict) and "timestamp" in t:
        return struct.pack("<q", timestamp_micros(value))
    raise KeyTypeError(f"type {type_str(t)} cannot be a key")


def timestamp_micros(value) -> int:
    """Microseconds since the epoch of an int or datetime (naive means UTC)."""
    if isinstance(value, int):
        return value
    epoch = _EPOCH_UTC if value.tzinfo is not None else _EPOCH_NAIVE
    delta = value - epoch
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def hash_key(values: Sequence, types: Sequence[DataType]) -> int:
    """Spark's ``xxhash64(col1, col2, ...)`` of one key, as a signed 64-bit integer."""
    if len(values) != len(types):
        raise KeyTypeError(f"key has {len(values)} values but {len(types)} key columns")
    seed = HASH_SEED
    for value, t in zip(values, types):
        if value is None:
            continue  # as in Spark; writers reject null keys before hashing
        seed = xxhash.xxh64_intdigest(_hash_input(value, t), seed)
    return seed - (1 << 64) if seed >= 1 << 63 else seed


def key_group_for_key(values: Sequence, types: Sequence[DataType], max_parallelism: int) -> int:
    """The key group of a key: ``pmod(hash_key(key), max_parallelism)``."""
    return hash_key(values, types) % max_parallelism


def key_groups_for_columns(
    columns: Sequence[Iterable], types: Sequence[DataType], max_parallelism: int
) -> list[int]:
    """Key groups of many keys given column-wise (as Python lists)."""
    return [key_group_for_key(key, types, max_parallelism) for key in zip(*columns)]


def key_group_sql(key_columns: Sequence[str], max_parallelism: int) -> str:
    """A Spark SQL expression giving the key group of the row's key."""
    check_max_parallelism(max_parallelism)
    cols = ", ".join(quote_identifier(c) for c in key_columns)
    return f"CAST(pmod(xxhash64({cols}), {max_parallelism}) AS INT)"


def even_split(entries: int, parallelism: int, subtask: int) -> tuple[int, int]:
    """The ``[start, stop)`` slice of *entries* list-state entries that *subtask* receives.

    Flink's even split: the first ``entries % parallelism`` subtasks get one more.
    """
    if not 0 <= subtask < parallelism:
        raise LimitError(f"subtask index must be between 0 and {parallelism - 1}, got {subtask}")
    base, rest = divmod(entries, parallelism)
    start = subtask * base + min(subtask, rest)
    return start, start + base + (1 if subtask < rest else 0)
