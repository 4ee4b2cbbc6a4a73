"""Where a key's entries begin in a native RocksDB snapshot: its key group (one or two bytes),
then the key as the job's key serializer writes it. A key lookup reads only the SST blocks that
can hold those bytes (`native_sst.SstSnapshot.live_entries`), not its whole key group.

Only keys whose bytes are known exactly and are prefix-free (no key's bytes begin another's)
are narrowed so: scalars, strings, chars, tuples of them, and SQL key rows (a length, then the
row). A Kryo, Avro or POJO key may carry a class tag or a registration of the job's: its key
group is read whole, as before.
"""

from __future__ import annotations

import pyarrow as pa

from ..errors import StatectlError
from . import types as T
from .rowdata import RowData
from .streams import prefix_bytes


def entry_prefixes(key_type: T.FlinkType, keys: list[tuple], groups: list[int],
                   max_parallelism: int) -> tuple[bytes, ...]:
    """The first bytes of the entries of each of *keys* (tuples of key-column values, in key
    groups *groups*), or () when they are not known (the caller reads whole key groups)."""
    if not _exact(key_type):
        return ()
    from .encode import encode

    width = prefix_bytes(max_parallelism)
    try:
        column = pa.concat_arrays([_key_column(key_type, k) for k in keys])
        encoded = encode(key_type, column, "key").to_pylist()
    except (StatectlError, pa.ArrowException, TypeError, ValueError, OverflowError):
        return ()  # a key the type cannot hold: the key-group read says what it finds
    return tuple(g.to_bytes(width, "big") + b for g, b in zip(groups, encoded))


def _exact(t: T.FlinkType) -> bool:
    if isinstance(t, T.Tuple):
        return all(_exact(f) for f in t.fields)
    return isinstance(t, (T.Scalar, T.Char, T.String, RowData))


def _key_column(key_type: T.FlinkType, key: tuple) -> pa.Array:
    """One key as a one-row column of the type's Arrow form."""
    if isinstance(key_type, RowData):
        from .rowdata_keys import key_row_column

        return key_row_column(key, key_type.fields)
    if isinstance(key_type, T.Tuple):
        return pa.array([dict(zip((f"f{i}" for i in range(len(key))), key))], key_type.arrow())
    return pa.array([key[0]], key_type.arrow())
