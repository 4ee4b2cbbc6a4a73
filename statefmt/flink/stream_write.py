"""Canonical keyed streams and operator state streams, assembled from encoded entries.

A keyed stream is written by one task for one subtask: the header
(:func:`snapshot_write.keyed_header`), then per non-empty key group its entries
state by state (``short state id``, entries ``int len, key, int len, value``, the
0x80 META_FOLLOWS bit on the first key byte of a state's last entry, ``0xFFFF``
after the key group's last entry). The offset of every key group is kept for the
handle.

The task is fed *entry rows* (:func:`row_schema`), sorted by key group and key:
one row per input row, holding the key group, the key bytes (key and namespace;
a timer's timestamp first) and, per state, its value bytes (null where the row
has no entry for that state), a map state's user key bytes and a list state's
element order. A row carries every state read from the same input, so the
shuffle moves and sorts each key once, not once per state. A key group is
assembled at once, with numpy: its rows become the entries of each state in
stream order (:meth:`KeyedStreamBuilder._entries`), then the stream bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..bytecolumns import big_endian, binary, delimited, fixed, join_rows, parts_of
from ..errors import FlinkEncodeError
from ..vocabulary import KeyedTable, StateKind
from . import types as T
from .binary import Reader
from .binary_write import Writer
from .list_layout import LIST_DELIMITER
from .streams import END_OF_KEY_GROUP, META_FOLLOWS, prefix_bytes

KEY_GROUP, KEY = "_key_group", "_k"
_SPARK_TYPES = {pa.int32(): "int", pa.int64(): "bigint", pa.binary(): "binary"}


@dataclass(frozen=True)
class StreamState:
    """What the assembler needs of one header state: how its rows become entries."""
    name: str
    kind: str  # value | list | map | reducing | aggregating | timers
    what: str  # how errors name it ("operator 'proc', value state 'count'")
    ordered: bool = False  # a list state whose elements carry their order (its order column)


def value_column(state_id: int) -> str:
    return f"_v{state_id}"


def user_key_column(state_id: int) -> str:
    return f"_u{state_id}"


def order_column(state_id: int) -> str:
    return f"_o{state_id}"


def row_schema(states: list[StreamState] | tuple[StreamState, ...]) -> pa.Schema:
    """The entry rows of an operator with *states* (see the module doc)."""
    fields = [(KEY_GROUP, pa.int32()), (KEY, pa.binary())]
    for i, state in enumerate(states):
        fields.append((value_column(i), pa.binary()))
        if state.kind == StateKind.MAP:
            fields.append((user_key_column(i), pa.binary()))
        if state.ordered:
            fields.append((order_column(i), pa.int64()))
    return pa.schema(fields)


def row_ddl(schema: pa.Schema) -> str:
    """*schema* (:func:`row_schema`) as a Spark DDL string."""
    return ", ".join(f"{f.name} {_SPARK_TYPES[f.type]}" for f in schema)


@dataclass(frozen=True)
class Entries:
    """Assembled entries, one per (state, key): a list's elements joined. In stream order (key
    group, state id, key); *keys* are without the key-group prefix."""
    key_groups: np.ndarray
    state_ids: np.ndarray
    keys: pa.Array
    values: pa.Array

    def __len__(self) -> int:
        return len(self.key_groups)


class EntryAssembler:
    """Sorted entry rows in, :class:`Entries` out, whole key groups at a time: the last key group
    of a batch is held back until the next batch (or :meth:`finish`) completes it. Both layouts
    are fed from it: the canonical stream (:class:`KeyedStreamBuilder`) and the native
    snapshot (`native_write.NativeSnapshotBuilder`)."""

    def __init__(self, states: list[StreamState], key: T.FlinkType, key_groups: tuple[int, int]):
        self.states = states
        self.key = key
        self.first, self.last = key_groups
        self._carry: pa.Table | None = None
        self._previous = -1

    def add(self, table: pa.Table) -> Entries | None:
        """The entries of the complete key groups in *table* (None: none complete yet)."""
        if self._carry is not None:
            table = pa.concat_tables([self._carry, table])
        if not table.num_rows:
            return None
        groups = table.column(KEY_GROUP).to_numpy()
        cut = int(np.searchsorted(groups, groups[-1], side="left"))
        self._carry = table.slice(cut)
        return self._assembled(table.slice(0, cut))

    def finish(self) -> Entries | None:
        carry, self._carry = self._carry, None
        return self._assembled(carry) if carry is not None else None

    def _assembled(self, rows: pa.Table) -> Entries | None:
        if not rows.num_rows:
            return None
        rows = rows.combine_chunks()
        kg = rows.column(KEY_GROUP).to_numpy().astype(np.int64)
        if kg.min() < self.first or kg.max() > self.last:
            bad = int(kg[(kg < self.first) | (kg > self.last)][0])
            raise FlinkEncodeError(f"key group {bad} reached the writer of key groups {self.first}-{self.last}")
        if kg[0] <= self._previous or (np.diff(kg) < 0).any():
            raise FlinkEncodeError("entries reached the Flink stream writer out of key-group order")
        self._previous = int(kg[-1])
        kg, sid, keys, values = self._entries(kg, rows)
        n = len(kg)
        if not n:
            return None
        same = np.zeros(n, dtype=bool)
        if n > 1:
            same[1:] = (kg[1:] == kg[:-1]) & (sid[1:] == sid[:-1]) & \
                pc.equal(keys.slice(1), keys.slice(0, n - 1)).to_numpy(zero_copy_only=False)
        heads = np.flatnonzero(~same)
        kinds = np.array([self.states[i].kind for i in sid[heads]])
        repeated = np.diff(np.append(heads, n)) > 1
        single = repeated & (kinds != StateKind.LIST) & (kinds != KeyedTable.TIMERS)
        if single.any():
            self._repeated(int(heads[np.flatnonzero(single)[0]]), sid, keys, kg)
        # one entry per run: a list's elements joined, anything else its one value
        joined = values.take(pa.array(heads))  # a repeated timer is kept once
        is_list = kinds == StateKind.LIST
        if is_list.any():
            lists = delimited(values, np.append(heads, n), LIST_DELIMITER)
            joined = pc.if_else(pa.array(is_list), lists, joined)
        return Entries(kg[heads], sid[heads], keys.take(pa.array(heads)), joined)

    def _entries(self, kg: np.ndarray, rows: pa.Table):
        """The entries of *rows* (sorted by key group and key) in stream order: by key group,
        state and key (a map's key then user key), a list's elements in their order.
        Returns (key groups, state ids, keys, values)."""
        keys = rows.column(KEY).chunk(0)
        parts = []
        for i, state in enumerate(self.states):
            values = rows.column(value_column(i)).chunk(0)
            if values.null_count == len(values):
                continue
            pick = None if not values.null_count else np.flatnonzero(values.is_valid().to_numpy(zero_copy_only=False))
            g, k, v = (kg, keys, values) if pick is None else (kg[pick], keys.take(pick), values.take(pick))
            order = None
            if state.kind == StateKind.MAP:
                user_keys = rows.column(user_key_column(i)).chunk(0)
                k = join_rows([k, user_keys if pick is None else user_keys.take(pick)])
                order = pc.sort_indices(pa.table({"g": g, "k": k}), [("g", "ascending"), ("k", "ascending")])
            elif state.ordered:
                o = rows.column(order_column(i)).chunk(0)
                o = (o if pick is None else o.take(pick)).fill_null(T.LONG_MIN).to_numpy()
                order = np.lexsort((o, run_ids(g, k)))
            if order is not None:
                g, k, v = g[np.asarray(order)], k.take(order), v.take(order)
            parts.append((g, np.full(len(g), i, dtype=np.int64), k, v))
        if not parts:
            return kg[:0], kg[:0], keys[:0], keys[:0]
        if len(parts) == 1:
            return parts[0]
        g = np.concatenate([p[0] for p in parts])
        sid = np.concatenate([p[1] for p in parts])
        in_stream = np.lexsort((sid, g))  # stable: each state keeps its key order
        k = pa.concat_arrays([p[2] for p in parts]).take(in_stream)
        v = pa.concat_arrays([p[3] for p in parts]).take(in_stream)
        return g[in_stream], sid[in_stream], k, v

    def _repeated(self, row: int, sid: np.ndarray, keys: pa.Array, kg: np.ndarray) -> None:
        state = self.states[int(sid[row])]
        raw = keys[row].as_py()
        try:
            shown = repr(self.key.read(Reader(raw, "key")))
        except Exception:
            shown = raw.hex()
        what = "a map key appears twice for key" if state.kind == StateKind.MAP else "two rows for key"
        raise FlinkEncodeError(f"{state.what}: {what} {shown} (key group {int(kg[row])}); "
                               f"a {state.kind} state holds one value per key")


class KeyedStreamBuilder:
    """One subtask's canonical keyed stream, fed sorted entry rows (see the module doc)."""

    def __init__(self, header: bytes, states: list[StreamState], key: T.FlinkType,
                 max_parallelism: int, key_groups: tuple[int, int]):
        self.header = header
        self.assembler = EntryAssembler(states, key, key_groups)
        self.prefix = prefix_bytes(max_parallelism)
        self.first, last = key_groups
        self.offsets = np.zeros(last - self.first + 1, dtype=np.int64)
        self.size = len(header)
        self.entries = 0  # entries written (a list state's elements count as one)

    def start(self) -> bytes:
        return self.header

    def add(self, table: pa.Table) -> bytes:
        """The stream bytes of the complete key groups in *table* (the last is held back)."""
        return self._framed(self.assembler.add(table))

    def finish(self) -> bytes:
        return self._framed(self.assembler.finish())

    def key_group_offsets(self) -> tuple[int, ...]:
        return tuple(int(o) for o in self.offsets)

    def _framed(self, entries: Entries | None) -> bytes:
        """*entries* as stream bytes: state ids, length-prefixed keys (with their key-group
        prefix) and values, the end marks; the offset of each key group noted."""
        if entries is None:
            return b""
        entry_kg, entry_sid, entry_keys, joined = entries.key_groups, entries.state_ids, entries.keys, entries.values
        m = len(entries)
        last_of_state = np.ones(m, dtype=bool)
        last_of_state[:-1] = (entry_kg[1:] != entry_kg[:-1]) | (entry_sid[1:] != entry_sid[:-1])
        first_of_state = np.ones(m, dtype=bool)
        first_of_state[1:] = last_of_state[:-1]
        last_of_group = np.ones(m, dtype=bool)
        last_of_group[:-1] = entry_kg[1:] != entry_kg[:-1]
        prefix = key_group_prefixes(entry_kg, self.prefix)
        prefix[last_of_state, 0] |= META_FOLLOWS
        key_data, key_offsets = parts_of(entry_keys)
        value_data, value_offsets = parts_of(joined)
        key_lens = np.diff(key_offsets) + self.prefix
        value_lens = np.diff(value_offsets)
        ids = binary(big_endian(entry_sid[first_of_state], ">i2").ravel(),
                     np.concatenate([[0], np.cumsum(first_of_state * 2)]))
        ends = binary(big_endian(np.full(int(last_of_group.sum()), END_OF_KEY_GROUP), ">u2").ravel(),
                      np.concatenate([[0], np.cumsum(last_of_group * 2)]))
        body = join_rows([ids, fixed(big_endian(key_lens, ">i4")), fixed(prefix), entry_keys,
                          fixed(big_endian(value_lens, ">i4")), joined, ends])
        data, offsets = parts_of(body)
        group_heads = np.flatnonzero(np.concatenate([[True], entry_kg[1:] != entry_kg[:-1]]))
        self.offsets[entry_kg[group_heads] - self.first] = self.size + offsets[group_heads]
        self.size += int(offsets[-1])
        self.entries += m
        return data.tobytes()


def key_group_prefixes(key_groups: np.ndarray, width: int) -> np.ndarray:
    """Each key group as Flink's big-endian key prefix of *width* bytes (one row each, writable)."""
    if width == 2:
        return big_endian(key_groups, ">i2").copy()
    return key_groups.astype(np.uint8).reshape(-1, 1).copy()


def run_ids(groups: np.ndarray, keys: pa.Array) -> np.ndarray:
    """For rows sorted by key group and key, the index of each row's (key group, key) run."""
    same = np.zeros(len(groups), dtype=bool)
    if len(groups) > 1:
        same[1:] = (groups[1:] == groups[:-1]) & \
            pc.equal(keys.slice(1), keys.slice(0, len(keys) - 1)).to_numpy(zero_copy_only=False)
    return np.cumsum(~same) - 1


# --- operator state -------------------------------------------------------------------------

@dataclass(frozen=True)
class OperatorStreamPart:
    """One operator state's elements on one subtask: list/union elements, or a broadcast map."""
    name: str
    mode: str  # SPLIT_DISTRIBUTE | UNION | BROADCAST
    elements: pa.Array  # encoded elements; broadcast: encoded (key, value) entries


def operator_stream(header: bytes, parts: list[OperatorStreamPart]) -> tuple[bytes, list[tuple[str, str, tuple[int, ...]]]]:
    """An operator state stream and, per state, (name, mode, offsets) for its handle.

    List and union states: one offset per element. Broadcast: one offset, at
    ``int n`` then the n entries.
    """
    w = Writer()
    w.bytes(header)
    infos = []
    for part in parts:
        data, offsets = parts_of(part.elements)
        at = len(w.buf)
        if part.mode == "BROADCAST":
            infos.append((part.name, part.mode, (at,)))
            w.int(len(part.elements))
        else:
            infos.append((part.name, part.mode, tuple(int(o) + at for o in offsets[:-1])))
        w.bytes(data.tobytes())
    return w.getvalue(), infos
