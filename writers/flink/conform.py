"""Decoded state values (Arrow columns of OLD's serializers) conformed to NEW's Arrow types.

What `statefmt.flink.compat` calls convertible by rewriting values, as columns: a number or
DECIMAL widened (a safe cast: a value that would not fit is an error, not a loss), a struct's
fields by name (a SQL row's ``f0``, ``f1``... by position, a Tuple's by position, a Row's or
POJO's by name) with the fields NEW adds null or their *initial* value (an aggregate's
accumulator added to a SQL row: ``partly compatible``), and TTL switched on (each value stamped
with the time of the conversion) or off (the timestamp dropped). Lists and maps conform their
elements. The result is encoded by NEW's serializer (`statefmt.flink.encode`).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from statectl.statefmt.errors import FlinkEncodeError
from statectl.statefmt.flink.types import TTL_FIELD


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _is_ttl(t: pa.DataType) -> bool:
    return pa.types.is_struct(t) and [t.field(i).name for i in range(t.num_fields)] == [TTL_FIELD, "value"]


def conform(values: pa.Array, target: pa.DataType, initial: dict[str, object] | None = None, path: str = "",
            now_ms: int = 0) -> pa.Array:
    """*values* as *target*; *initial*: {field path (as check's reasons name it): value} for
    fields *target* adds (else null); *now_ms*: the TTL timestamp of values TTL is switched on for."""
    if values.type == target:
        return values
    if _is_ttl(target) and not _is_ttl(values.type):
        inner = conform(values, target.field("value").type, initial, path, now_ms)
        stamps = pa.array(np.full(len(values), now_ms, dtype=np.int64))
        return pa.StructArray.from_arrays([stamps, inner], fields=list(target), mask=values.is_null())
    if _is_ttl(values.type) and not _is_ttl(target):
        return conform(pc.struct_field(values, [1]), target, initial, path, now_ms)
    if pa.types.is_struct(target) and pa.types.is_struct(values.type):
        return _struct(values, target, initial or {}, path, now_ms)
    if pa.types.is_map(target) and pa.types.is_map(values.type):
        keys = conform(values.keys, target.key_type, initial, _join(path, "key"), now_ms)
        items = conform(values.items, target.item_type, initial, _join(path, "value"), now_ms)
        return pa.MapArray.from_arrays(values.offsets, keys, items, type=target, mask=values.is_null())
    if _listlike(target) and _listlike(values.type):
        elements = conform(values.values, target.value_type, initial, path, now_ms)
        return type(values).from_arrays(values.offsets, elements, type=target, mask=values.is_null())
    try:
        return pc.cast(values, target, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise FlinkEncodeError(f"{path or 'value'}: {values.type} does not convert to {target}: {e}") from None


def _listlike(t: pa.DataType) -> bool:
    return pa.types.is_list(t) or pa.types.is_large_list(t)


def _struct(values: pa.StructArray, target: pa.StructType, initial: dict, path: str, now_ms: int) -> pa.Array:
    have = {values.type.field(i).name: i for i in range(values.type.num_fields)}
    children = []
    for field in target:
        where = _join(path, field.name)
        if field.name in have:
            child = pc.struct_field(values, [have[field.name]])
            children.append(conform(child, field.type, initial, where, now_ms))
        else:
            children.append(_filled(initial.get(where), field.type, len(values), where))
    mask = values.is_null() if values.null_count else None
    return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)


def _filled(value, t: pa.DataType, n: int, where: str) -> pa.Array:
    """*n* times *value* (None: null) as *t*: an added field's value in every restored row."""
    if value is None:
        return pa.nulls(n, t)
    try:
        return pa.array([value] * n, t)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError) as e:
        raise FlinkEncodeError(f"{where}: the initial value {value!r} is no {t}: {e}") from None
