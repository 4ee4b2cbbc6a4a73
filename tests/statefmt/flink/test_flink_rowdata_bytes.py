"""SQL state written again byte for byte: every entry of every keyed state of the suite's SQL
savepoints (Flink 1.20 and 2.3, the four shapes; ForSt native) and of the probes is decoded to Arrow, encoded
again from those columns (`encode`, with the table runtime's serializers of
`rowdata_encode.py`), and compared with the bytes Flink wrote: the key (with its namespace and
a map's user key, or a timer's timestamp), the value (a map's null flag and value, a list's
elements and delimiters), and each key's key group is the one stored with it; keys and values
encode the same from the types Spark gives them back as. Canonical streams
(heap and RocksDB), native RocksDB and ForSt SST files and heap-native streams (whose values are
written by the whole state's serializer: a map state's whole map) are read entry by entry.
TTL-wrapped state (the SQL job with `table.exec.state.ttl`, heap and RocksDB) encodes with its
last-access times.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from support import flink_job
from support.flink_sql_entries import sql_keyed_splits, sql_savepoints
from statectl.statefmt.bytecolumns import delimited, join_rows
from statectl.statefmt.flink import types as T
from statectl.statefmt.flink.describe import key_group_blocks
from statectl.statefmt.flink.encode import encode, null_flagged
from statectl.statefmt.flink.handles import IncrementalRocksDB
from statectl.statefmt.flink.headers import read_keyed_header
from statectl.statefmt.flink.list_layout import LIST_DELIMITER
from statectl.statefmt.flink.model import spark_arrow_type
from statectl.statefmt.flink.rowdata_keys import row_key_groups
from statectl.statefmt.flink.savepoint import _native_entries
from statectl.statefmt.flink.streamio import header_length, native_files, read_range, read_stream, split_base
from statectl.statefmt.flink.streams import (RawEntries, _delimited, _heap_entry_starts,
                                              prefix_bytes, raw_from_extents, scan_canonical)
from statectl.statefmt.flink.types import Buf
from statectl.statefmt.scratch import new_scratch_dir
from statectl.statefmt.vocabulary import StateKind

SHAPES = ("hashmap-canonical", "rocksdb-canonical", "rocksdb-native",
          "hashmap-canonical-ttl", "rocksdb-canonical-ttl")


def _savepoints():
    forst = flink_job.make_sql_snapshot("2.3.0", backend="forst", format="native")
    return [p for s in SHAPES for p in sql_savepoints(s)] + [pytest.param(forst.path, id="2.3.0-forst-native")]


def _stream_entries(split, header):
    """Per state id, the raw entries of a canonical keyed stream."""
    base = split_base(split)
    handle = split.handle
    blocks = key_group_blocks(handle, handle.stream.size, split.key_groups)
    assert not header.compressed
    data = read_range(base, handle.stream, 0, handle.stream.size)
    raw = scan_canonical(Buf(data, "stream"), header, blocks, prefix_bytes(split.max_parallelism))
    return {header.states[i].name: r for i, r in raw.items()}


def _rocksdb_entries(split, header):
    base, handle = split_base(split), split.handle
    tmp = new_scratch_dir("flink")
    try:
        files = native_files(base, handle, tmp)
        (entries,) = _native_entries(files, tmp, {m.name for m in header.states}, split, [None])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {name: raw_from_extents(*e, prefix_bytes(split.max_parallelism), name) for name, e in entries.items()}


def _bytes(buf: Buf, starts, ends) -> list[bytes]:
    return buf.slices(starts, ends).to_pylist()


def _check_state(meta, key: T.FlinkType, raw: RawEntries, max_parallelism: int) -> int:
    """Encodes one state's decoded entries again; asserts the bytes and the keys' key groups."""
    buf = raw.buf
    at = raw.key_starts + (8 if meta.kind == "timers" else 0)
    keys, ends = key.column(buf, at)
    parts = [encode(key, keys, "key")]
    assert encode(key, keys.cast(spark_arrow_type(keys.type))).equals(parts[0])
    assert (row_key_groups(keys, key.fields, max_parallelism) == raw.key_groups).all()
    ns, ends = meta.namespace.column(buf, ends)
    parts.append(encode(meta.namespace, ns, "namespace"))
    if meta.kind == StateKind.MAP:
        user_keys, ends = meta.value.key.column(buf, ends)
        parts.append(encode(meta.value.key, user_keys, "user key"))
    assert (ends == raw.key_ends).all()
    assert join_rows(parts).to_pylist() == _bytes(buf, at, raw.key_ends)
    if meta.kind == "timers":
        return len(at)
    if meta.kind == StateKind.MAP:
        values, _ = T.null_flagged(meta.value.value, buf, raw.value_starts, raw.value_ends)
        again = null_flagged(meta.value.value, values, "value")
    elif meta.kind == StateKind.LIST:
        lists = _delimited(meta.value.element, buf, raw.value_starts, raw.value_ends)
        elements = encode(meta.value.element, lists.values, "element")
        again = delimited(elements, np.asarray(lists.offsets), LIST_DELIMITER)
    else:
        values, _ = meta.value.column(buf, raw.value_starts, raw.value_ends)
        again = encode(meta.value, values, "value")
        assert encode(meta.value, values.cast(spark_arrow_type(values.type))).equals(again)  # as Spark gives it
    assert again.to_pylist() == _bytes(buf, raw.value_starts, raw.value_ends)
    return len(at)


def _heap_native_checked(split, header) -> int:
    """A heap-native stream's entries (namespace, key, value as the whole state's serializer
    writes it; a timer's timestamp, key, namespace), each part encoded again from its decoded
    column and compared with Flink's bytes."""
    base, handle = split_base(split), split.handle
    data = read_range(base, handle.stream, 0, handle.stream.size)
    buf = Buf(data, "stream")
    blocks = key_group_blocks(handle, handle.stream.size, split.key_groups)
    checked = 0
    for sid, (groups, first, second, third) in _heap_entry_starts(buf, header, blocks).items():
        meta = header.states[sid]
        a, b, c = (np.asarray(x, np.int64) for x in (first, second, third))
        timer = meta.kind == "timers"
        key_at, key_end, ns_at, ns_end = (a + 8, b, b, c) if timer else (b, c, a, b)
        for t, at, end in [(header.key, key_at, key_end), (meta.namespace, ns_at, ns_end)]:
            values, ends = t.column(buf, at)
            assert (ends == end).all()
            assert encode(t, values).to_pylist() == _bytes(buf, at, end), meta.name
            if t is header.key:
                stored = np.repeat(*map(np.asarray, zip(*groups)))
                assert (row_key_groups(values, t.fields, split.max_parallelism) == stored).all()
        if not timer:
            values, ends = meta.value.column(buf, c)
            assert encode(meta.value, values).to_pylist() == _bytes(buf, c, ends), meta.name
        checked += len(a)
    return checked


@pytest.mark.parametrize("path", sql_savepoints("hashmap-native"))
def test_heap_native_sql_state_encodes_to_the_bytes_flink_wrote(path):
    checked = 0
    for _, split in sql_keyed_splits(path):
        header = read_keyed_header(read_range(split_base(split), split.handle.stream, 0,
                                              header_length(split.handle)), "header")
        checked += _heap_native_checked(split, header)
    assert checked > 1000


@pytest.mark.parametrize("path", _savepoints())
def test_sql_state_encodes_to_the_bytes_flink_wrote(path):
    checked = {}
    for op, split in sql_keyed_splits(path):
        if isinstance(split.handle, IncrementalRocksDB):
            header = read_keyed_header(read_stream(split_base(split), split.handle.meta), "meta")
            entries = _rocksdb_entries(split, header)
        else:
            header = read_keyed_header(read_range(split_base(split), split.handle.stream, 0,
                                                  header_length(split.handle)), "header")
            entries = _stream_entries(split, header)
        for meta in header.states:
            if meta.name in entries:
                n = _check_state(meta, header.key, entries[meta.name], op.max_parallelism)
                checked[(op.name, meta.name)] = checked.get((op.name, meta.name), 0) + n
    assert sum(checked.values()) > 1000 and len(checked) >= 7, checked
