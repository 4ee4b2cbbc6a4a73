"""TTL entries expired at a time, found in their bytes (statefmt/flink/ttl_bytes.py), against a
plain-Python statement of Flink's rule: values built as Flink's TtlSerializer writes them (8-byte
big-endian last access, then the value), map entries behind their null flag, list elements
joined with ','; every kept entry's bytes and every removed count exact."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from statectl.statefmt.errors import FlinkFormatError
from statectl.statefmt.flink import types as T
from statectl.statefmt.flink.headers import StateMeta
from statectl.statefmt.flink.streams import RawEntries
from statectl.statefmt.flink.ttl_bytes import live_entries
from statectl.statefmt.flink.types import Buf

LONG_MAX = 2**63 - 1
LONG = T.Scalar("long")
TTL_LONG = T.Ttl(LONG)
METAS = {"value": StateMeta("v", "value", TTL_LONG), "map": StateMeta("m", "map", T.Map(T.String(), TTL_LONG)),
         "list": StateMeta("l", "list", T.List(TTL_LONG))}
stamps = st.one_of(st.integers(-2**63, 2**63 - 1), st.integers(0, 1000))


def expired(ts: int, ttl: int, now: int) -> bool:
    """Flink's TtlUtils.expired, in Python ints."""
    return ts + (min(ttl, LONG_MAX - ts) if ts > 0 else ttl) <= now


def ttl_value(ts: int, value: int) -> bytes:
    return struct.pack(">qq", ts, value)


def raw(values: list[bytes]) -> RawEntries:
    """Entries with the given value bytes (keys are one byte each, unused here)."""
    data, starts, ends = b"", [], []
    for v in values:
        data += b"k"
        starts.append(len(data))
        data += v
        ends.append(len(data))
    n = len(values)
    at = np.array(starts, dtype=np.int64)
    return RawEntries(Buf(data, "s/stream"), np.zeros(n, np.int32), at - 1, at, at, np.array(ends, dtype=np.int64))


def encode(kind: str, entry) -> bytes:
    if kind == "value":
        return ttl_value(*entry)
    if kind == "map":
        return b"\x01" if entry is None else b"\x00" + ttl_value(*entry)
    return b",".join(ttl_value(*e) for e in entry)


def oracle(kind: str, entries: list, ttl: int, now: int) -> tuple[list[bytes], int]:
    """The value bytes of the entries kept, and how many values, map entries or elements went."""
    kept, removed = [], 0
    for entry in entries:
        if kind == "list":
            alive = [e for e in entry if not expired(e[0], ttl, now)]
            removed += len(entry) - len(alive)
            if alive or not entry:
                kept.append(encode(kind, alive))
        elif entry is not None and expired(entry[0], ttl, now):
            removed += 1
        else:
            kept.append(encode(kind, entry))
    return kept, removed


pairs = st.tuples(stamps, st.integers(-5, 5))
ENTRIES = {"value": st.lists(pairs, max_size=12), "map": st.lists(st.one_of(st.none(), pairs), max_size=12),
           "list": st.lists(st.lists(pairs, max_size=4), max_size=12)}


@pytest.mark.parametrize("kind", sorted(METAS))
@settings(max_examples=60, deadline=None)
@given(data=st.data(), ttl=st.integers(0, 2**62), now=st.one_of(st.integers(-2**63, 2**63 - 1), st.integers(0, 2000)))
def test_kept_bytes_and_counts_are_flinks_rule(kind, data, ttl, now):
    entries = data.draw(ENTRIES[kind])
    entries_raw = raw([encode(kind, e) for e in entries])
    live = live_entries(METAS[kind], entries_raw, ttl, now)
    kept_values, removed = oracle(kind, entries, ttl, now)
    if live.values is not None:
        got = live.values.to_pylist()
    else:
        buf = entries_raw.buf.data
        got = [buf[s:e] for s, e, k in zip(entries_raw.value_starts, entries_raw.value_ends, live.keep) if k]
    assert got == kept_values
    assert live.removed == removed
    assert int(live.keep.sum()) == len(kept_values)


@pytest.mark.parametrize("kind, value, message", [
    ("value", b"\x00" * 7, "a TTL value at offset 1 is shorter than its 8-byte timestamp"),
    ("map", b"", "a TTL value at offset 1 is shorter than its 1-byte null flag"),
    ("map", b"\x00" + b"\x00" * 5, "a TTL value at offset 2 is shorter than its 8-byte timestamp"),
])
def test_a_value_too_short_for_its_timestamp_is_one_line(kind, value, message):
    with pytest.raises(FlinkFormatError, match=f"^s/stream: {message}$"):
        live_entries(METAS[kind], raw([value]), 10, 0)
