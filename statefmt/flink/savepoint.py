"""A Flink savepoint or retained checkpoint, opened without a JVM, and its splits decoded.

:func:`open_flink_savepoint` parses `_metadata` and describes every operator
(`describe.py`); :func:`read_split` decodes one :class:`FlinkSplit` into Arrow
record batches (one Spark task per split, or in-process for small reads), in pieces of
about :data:`PIECE_BYTES`; :func:`keyed_table` and its siblings collect whole tables
for tests and small savepoints. Stream bytes are read through `streamio.py`.
"""

from __future__ import annotations

import contextlib
import shutil
import struct
from dataclasses import replace
from typing import Iterable, Iterator

import numpy as np
import pyarrow as pa

from ..errors import FlinkFormatError, NotASavepointError, StatectlError
from ..fs import Location
from ..model import KEYED_PART, cannot_read
from ..scratch import new_scratch_dir
from ..vocabulary import KeyedTable
from . import tables as TB
from . import coordinator
from .connectors import attach, is_candidate, table as connector_table
from .describe import (FlinkOperatorInfo, FlinkSavepoint, FlinkSplit, describe_operator, key_group_blocks,
                       key_group_ranges)
from .handles import IncrementalRocksDB, KeyGroupsStream, OperatorStream
from .kryo.context import KryoSetting, kryo_setting
from .headers import KeyedHeader, StateMeta, read_keyed_header, read_operator_header
from .lineage import check_present, flink_savepoint_id, lineage_roots, read_lineage
from .metadata import is_flink_metadata, parse_metadata
from .streamio import (METADATA, FlinkFolder, OpenStream, header_length, native_files, read_stream,
                       split_base, stream_name)
from .streams import (DamagedValueError, RawEntries, StateRows, decode_canonical_state, decode_heap_native,
                      decode_operator_state, prefix_bytes, raw_from_extents, scan_canonical)
from .types import Buf

BATCH_ROWS = 256 * 1024
PIECE_BYTES = 4 * 1024 * 1024  # a keyed split is decoded and handed to Spark in pieces of about this size


def is_flink_savepoint(location) -> bool:
    loc = Location.of(location)
    meta = loc.child(METADATA) if loc.is_dir() else loc
    if not meta.exists():
        return False
    with meta.open_input_file() as f:
        return is_flink_metadata(f.read(4))


def open_flink_savepoint(location, data: bytes | None = None) -> FlinkSavepoint:
    """The Flink savepoint or retained checkpoint at *location* (its folder or its `_metadata`),
    described; its lineage (a shallow copy's) read and checked. *data*: its `_metadata`'s
    bytes, when the caller has read them already."""
    loc = Location.of(location)
    if loc.name == METADATA and not loc.is_dir():
        loc = Location.of(loc.uri.rsplit("/", 1)[0])
    meta_loc = loc.child(METADATA)
    if data is None:
        if not meta_loc.exists():
            raise NotASavepointError(f"{loc}: not a savepoint (no {METADATA} file)")
        data = meta_loc.read_bytes()
    metadata = parse_metadata(data, str(meta_loc))
    savepoint_id = flink_savepoint_id(data)
    lineage = read_lineage(loc, savepoint_id)
    check_present(loc, lineage)
    folder = FlinkFolder(loc.uri, tuple(r.uri for _, r in lineage_roots(lineage)))
    with kryo_setting(KryoSetting.of(metadata.version)):
        operators = [describe_operator(folder, op) for op in metadata.operators]
    for info, op in zip(operators, metadata.operators):
        if any(is_candidate(name, meta) for name, meta in info.operator_states.items()):
            attach(info, raw_operator_elements)  # connector states: their layouts from their elements
        if op.coordinator is not None:
            coordinator.attach(info, op, folder)  # its split enumerator's checkpoint, as a state
    return FlinkSavepoint(folder, metadata, operators, savepoint_id, lineage)


def _pieces(split: FlinkSplit) -> list[FlinkSplit]:
    """A keyed split as key-group ranges of about :data:`PIECE_BYTES` (of stream, or of SST
    files), decoded and handed to Spark one after another: Spark's JVM converts one piece's
    rows while the Python worker decodes the next, and a worker holds one piece at a time."""
    handle = split.handle
    if isinstance(handle, IncrementalRocksDB):
        ranges = _native_ranges(handle, split.key_groups, PIECE_BYTES)
    elif isinstance(handle, KeyGroupsStream) and handle.layout == "canonical":
        ranges = key_group_ranges(key_group_blocks(handle, handle.stream.size, split.key_groups), PIECE_BYTES)
    else:
        return [split]
    return [replace(split, key_groups=r) for r in ranges] or [split]


def _native_ranges(handle: IncrementalRocksDB, key_groups: tuple[int, int], size_limit: int
                   ) -> list[tuple[int, int]]:
    """*key_groups* cut into equal ranges of about *size_limit* bytes of the snapshot's SST
    files (keys are spread evenly over key groups by Flink's hash)."""
    lo, hi = key_groups
    width = hi - lo + 1
    sst = sum(stream.size for local, stream in handle.files if local.endswith(".sst"))
    share = sst * width // max(handle.count, 1)
    n = max(1, min(width, -(-share // size_limit)))
    return [(lo + i * width // n, lo + (i + 1) * width // n - 1) for i in range(n)]


def decode_keyed_split(split: FlinkSplit, key_groups: Iterable[int] | None = None, timers: bool | None = None,
                       prefixes: tuple[bytes, ...] = ()) -> Iterator[tuple[KeyedHeader, dict[str, StateRows]]]:
    """Every keyed state's rows in a split (or only in *key_groups*, a key filter's groups),
    piece by piece (:func:`_pieces`).

    *timers*: True for the timer states only, False for the others, None for all
    (heap-native streams are walked whole either way: they have no entry lengths).
    *prefixes*: a key filter's keys as their entries' keys begin (:func:`key_prefix.entry_prefixes`),
    to which a native RocksDB snapshot's non-timer entries are narrowed: only the SST blocks
    that can hold them are read (rows of other keys may still come).
    """
    wanted = None if key_groups is None else set(key_groups)
    pieces = _pieces(split)
    try:
        if isinstance(split.handle, IncrementalRocksDB):
            yield from _decode_rocksdb(split, [p.key_groups for p in pieces], wanted, timers,
                                       prefixes if timers is False else ())
            return
        opened = _open_keyed(split)
        for piece in pieces:
            yield _decode_stream(piece, wanted, timers, opened)
    except DamagedValueError as e:
        raise FlinkFormatError(f"{e.source}: operator {split.operator_id} subtask {split.subtask}, "
                               f"{e.detail}") from None


def _decode_stream(split: FlinkSplit, wanted: set[int] | None, timers: bool | None,
                   opened: tuple[OpenStream, KeyedHeader]) -> tuple[KeyedHeader, dict[str, StateRows]]:
    """The rows of a keyed stream's split (a canonical or heap-native stream)."""
    header, buf, blocks = _stream_bytes(split, wanted, opened)
    if split.handle.layout == "native":
        by_id = decode_heap_native(buf, header, blocks)
        return header, {header.states[i].name: rows for i, rows in by_id.items()}
    raw = scan_canonical(buf, header, blocks, prefix_bytes(split.max_parallelism))
    return header, {header.states[i].name: decode_canonical_state(header.states[i], header.key, r)
                    for i, r in raw.items() if _wanted(header.states[i], timers)}


def raw_entries(split: FlinkSplit) -> Iterator[tuple[KeyedHeader, dict[int, RawEntries]]]:
    """Every state's entries of a keyed split held as key/value pairs (:func:`has_raw_entries`),
    undecoded (by state id: each entry's key group and the extents of its key and value bytes),
    piece by piece (:func:`_pieces`): what moves entries to new key groups without decoding
    their values needs."""
    with _decoding(split):
        if isinstance(split.handle, IncrementalRocksDB):
            yield from _rocksdb_entries(split, [p.key_groups for p in _pieces(split)], lambda meta: True)
            return
        opened = _open_keyed(split)
        for piece in _pieces(split):
            header, buf, blocks = _stream_bytes(piece, None, opened)
            yield header, scan_canonical(buf, header, blocks, prefix_bytes(split.max_parallelism))


def has_raw_entries(split: FlinkSplit) -> bool:
    """Whether *split* holds its entries as key/value pairs: a key-group range of a canonical
    keyed stream, or of a native RocksDB (or ForSt) snapshot; not a heap-native stream."""
    handle = split.handle
    return isinstance(handle, IncrementalRocksDB) or \
        (isinstance(handle, KeyGroupsStream) and handle.layout == "canonical")


def _open_keyed(split: FlinkSplit) -> tuple[OpenStream, KeyedHeader]:
    """The keyed stream of *split* with its file checked, and its header: once per split, for
    all of its pieces."""
    stream = OpenStream(split_base(split), split.handle.stream)
    return stream, read_keyed_header(stream.read(0, header_length(split.handle)), stream.name)


def _stream_bytes(split: FlinkSplit, wanted: set[int] | None, opened: tuple[OpenStream, KeyedHeader]
                  ) -> tuple[KeyedHeader, Buf, list]:
    """The header of a keyed stream's split (*opened*: its stream and header) and the bytes of
    its key groups (those in *wanted*), decompressed, with their blocks ``(key group, start,
    end)`` in those bytes."""
    stream, header = opened
    source = stream.name
    handle = split.handle
    blocks = key_group_blocks(handle, handle.stream.size, split.key_groups)
    if wanted is not None:
        blocks = [b for b in blocks if b[0] in wanted]
    start = blocks[0][1] if blocks else 0
    data = stream.read(start, blocks[-1][2] if blocks else 0)  # only this split's key groups
    blocks = [(kg, s - start, e - start) for kg, s, e in blocks]
    if header.compressed:
        data, blocks = _decompress_blocks(data, blocks, source, start)
        start = 0
    return header, Buf(data, source, base=start), blocks


def _wanted(meta: StateMeta, timers: bool | None) -> bool:
    return timers is None or (meta.kind == KeyedTable.TIMERS) == timers


def _decompress_blocks(data: bytes, blocks, source: str, base: int):
    """Each key group of a compressed stream is its own framed-snappy stream."""
    from . import snappy
    out, new_blocks, at = [], [], 0
    for kg, start, end in blocks:
        plain = snappy.decompress_framed(data, start=start, end=end, name=f"{source} key group {kg}",
                                         base_offset=base)
        out.append(plain)
        new_blocks.append((kg, at, at + len(plain)))
        at += len(plain)
    return b"".join(out), new_blocks


def _decode_rocksdb(split: FlinkSplit, ranges: list[tuple[int, int]], wanted: set[int] | None,
                    timers: bool | None, prefixes: tuple[bytes, ...]
                    ) -> Iterator[tuple[KeyedHeader, dict[str, StateRows]]]:
    """The rows of a native RocksDB snapshot's split, one key-group range of *ranges* after
    another, its files opened once."""
    chosen = [_narrowed(r, wanted) for r in ranges]
    for header, entries in _rocksdb_entries(split, chosen, lambda meta: _wanted(meta, timers), prefixes):
        out = {}
        for i, raw in entries.items():
            if wanted is not None:
                keep = np.isin(raw.key_groups, list(wanted))
                raw = type(raw)(raw.buf, *(a[keep] for a in (raw.key_groups, raw.key_starts, raw.key_ends,
                                                              raw.value_starts, raw.value_ends)))
            out[header.states[i].name] = decode_canonical_state(header.states[i], header.key, raw)
        yield header, out


def _rocksdb_entries(split: FlinkSplit, ranges: list[tuple[int, int] | None], chosen,
                     prefixes: tuple[bytes, ...] = ()) -> Iterator[tuple[KeyedHeader, dict[int, RawEntries]]]:
    """Per key-group range of *ranges*, the entries of the states *chosen* (a predicate on a
    header state) of a native RocksDB snapshot's split, undecoded, by state id (narrowed to
    *prefixes* where the direct reader reads); its files opened once."""
    base = split_base(split)
    handle: IncrementalRocksDB = split.handle
    source = stream_name(base, handle.meta)
    header = read_keyed_header(read_stream(base, handle.meta), source)
    prefix = prefix_bytes(split.max_parallelism)
    names = {m.name for m in header.states if chosen(m)}
    tmp = new_scratch_dir("flink")
    try:
        files = native_files(base, handle, tmp)
        for entries in _native_entries(files, tmp, names, split, ranges, prefixes):
            yield header, {i: raw_from_extents(*entries[m.name], prefix, f"{source} column family {m.name}")
                           for i, m in enumerate(header.states) if m.name in entries}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _narrowed(key_groups: tuple[int, int] | None, wanted: set[int] | None) -> tuple[int, int] | None:
    """The key-group range to read: the split's, cut down to the span of a key filter's
    groups (an empty range, first > last, when they do not meet)."""
    if not wanted:
        return key_groups
    lo, hi = min(wanted), max(wanted)
    return (lo, hi) if key_groups is None else (max(lo, key_groups[0]), min(hi, key_groups[1]))


def _native_entries(files, workdir: str, names: set[str], split: FlinkSplit,
                    ranges: list[tuple[int, int] | None], prefixes: tuple[bytes, ...] = ()
                    ) -> Iterator[dict[str, tuple]]:
    """Per inclusive key-group range of *ranges* (None: all), the entries of the column
    families *names* of one native RocksDB snapshot, as ``(data, key starts, key ends,
    value starts, value ends)``: read from the SST files directly (`native_sst`), or through
    rocksdict, for the ranges not yet read, once a file uses a table feature the direct
    reader does not decode."""
    from .native_sst import SstSnapshot, UnsupportedSstFeature
    from .rocksdb_native import open_rocksdb_snapshot

    ranges = [r for r in ranges if r is None or r[0] <= r[1]]
    done = 0
    try:
        with SstSnapshot(files, f"of operator {split.operator_id} subtask {split.subtask}") as db:
            for r in ranges:
                kw = dict(key_groups=r, max_parallelism=split.max_parallelism)
                found = _narrowed_entries(db, [cf for cf in db.column_families if cf in names], kw,
                                          _prefixes_in(prefixes, r, split.max_parallelism))
                yield {cf: (e.data, e.key_starts, e.key_ends, e.value_starts, e.value_ends)
                       for cf, e in found.items() if e is not None}
                done += 1
        return
    except UnsupportedSstFeature:
        pass
    rest = ranges[done:]
    if not rest:
        return
    kw = dict(key_groups=None if rest[0] is None else (rest[0][0], rest[-1][1]),
              max_parallelism=split.max_parallelism)
    out = {}
    with open_rocksdb_snapshot(files, workdir=workdir) as db:
        for cf in db.column_families:
            chunks = list(db.interleaved(cf, **kw)) if cf in names else []
            if chunks:
                lengths = np.concatenate([n for _, n in chunks])
                offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
                np.cumsum(lengths, out=offsets[1:])
                out[cf] = (b"".join(d for d, _ in chunks), offsets[0:-1:2], offsets[1::2], offsets[1::2],
                           offsets[2::2])
    yield out


def _prefixes_in(prefixes: tuple[bytes, ...], key_groups: tuple[int, int] | None,
                 max_parallelism: int) -> tuple[bytes, ...]:
    """The *prefixes* whose key group (their first bytes) lies in *key_groups*."""
    if not prefixes or key_groups is None:
        return prefixes
    width = prefix_bytes(max_parallelism)
    return tuple(p for p in prefixes if key_groups[0] <= int.from_bytes(p[:width], "big") <= key_groups[1])


def _narrowed_entries(db, families: list[str], kw: dict, prefixes: tuple[bytes, ...]) -> dict:
    """Each column family's live entries, narrowed to *prefixes* if some; when none starts with
    them, the key groups' entries: a key written in bytes other than ours is then still found."""
    if prefixes:
        found = {cf: db.live_entries(cf, prefixes=prefixes, **kw) for cf in families}
        if any(e is not None for e in found.values()):
            return found
    return {cf: db.live_entries(cf, **kw) for cf in families}


def read_split(split: FlinkSplit, table: str = KeyedTable.KEYED, key_groups: Iterable[int] | None = None,
               batch_rows: int = BATCH_ROWS, prefixes: tuple[bytes, ...] = ()) -> Iterator[pa.RecordBatch]:
    """The record batches of *table* in one split.

    *table*: ``keyed`` or ``timers`` for keyed splits; an operator state's name
    for operator splits. Keyed splits are bounded by key-group ranges of about
    :data:`SPLIT_BYTES` of stream. *key_groups* and *prefixes* (:func:`decode_keyed_split`)
    narrow a key filter's read; the caller keeps its keys' rows.
    """
    with _decoding(split):
        yield from _read_split(split, table, key_groups, batch_rows, prefixes)


DATA_ERRORS = (ValueError, OverflowError, IndexError, KeyError, struct.error, MemoryError, pa.ArrowException)


@contextlib.contextmanager
def _decoding(split: FlinkSplit):
    """Bytes that break a decoder's assumptions in a way its checks did not name end in one
    FlinkFormatError naming the split, never in a Python exception (from a Spark task too)."""
    try:
        with kryo_setting(split.kryo):
            yield
    except DATA_ERRORS as e:
        where = f"{split.savepoint}: operator {split.operator_id} subtask {split.subtask}"
        if split.key_groups is not None:
            where += f" key groups {split.key_groups[0]}-{split.key_groups[1]}"
        raise FlinkFormatError(f"{where}: the state cannot be decoded ({type(e).__name__}: "
                               f"{str(e).splitlines()[0] if str(e) else 'no detail'})") from None


def _read_split(split: FlinkSplit, table: str, key_groups, batch_rows: int,
                prefixes: tuple[bytes, ...]) -> Iterator[pa.RecordBatch]:
    if split.kind == "coordinator":
        yield from coordinator.table(split, batch_rows)
        return
    if split.kind == "operator":
        yield from _operator_batches(split, table, batch_rows)
        return
    if table not in KeyedTable.words():
        raise StatectlError(f"unknown keyed table {table!r} ({' or '.join(KeyedTable.words())})")
    base = split_base(split)
    source = f"{base} operator {split.operator_id} subtask {split.subtask}"
    for header, rows in decode_keyed_split(split, key_groups, timers=table == KeyedTable.TIMERS, prefixes=prefixes):
        if table == KeyedTable.KEYED:
            schema = TB.keyed_schema(header.key, header.states)
            t = TB.keyed_table(header.key, header.states, rows, schema, source)
        else:
            schema = TB.timers_schema(header.key, header.states)
            t = TB.timers_table(header.key, header.states, rows, schema)
        yield from t.to_batches(max_chunksize=batch_rows)


def _operator_batches(split: FlinkSplit, state: str, batch_rows: int) -> Iterator[pa.RecordBatch]:
    base = split_base(split)
    handle: OperatorStream = split.handle
    info = next((s for s in handle.states if s.name == state), None)
    if info is None:
        return
    data = read_stream(base, handle.stream)
    source = stream_name(base, handle.stream)
    header = read_operator_header(data, source)
    meta = next((s for s in header.states if s.name == state), None)
    if meta is None and header.failure:
        raise cannot_read(split.operator_id, state, str(header.failure))
    if meta is None:
        raise FlinkFormatError(f"{source}: state {state!r} is in _metadata but not in the stream's header")
    offsets = info.offsets
    if header.compressed:
        data, offsets = _decompress_elements(data, offsets, source)
    keys, values = decode_operator_state(meta, Buf(data, source), offsets)
    layout = dict(split.layouts).get(state)
    if layout is not None:  # a connector's state (`connectors.py`): typed rows, or (version, bytes)
        where = f"{source}: operator {split.operator_id} subtask {split.subtask}: state {state!r}"
        yield from connector_table(layout, split.subtask, values.to_pylist(), where).to_batches(batch_rows)
        return
    if keys is not None:
        t = pa.Table.from_arrays([keys, values], schema=TB.broadcast_schema(meta))
    else:
        subtask = pa.array(np.full(len(values), split.subtask, dtype=np.int32))
        t = pa.Table.from_arrays([subtask, values], schema=TB.operator_list_schema(meta))
    yield from t.to_batches(max_chunksize=batch_rows)


def raw_operator_elements(split: FlinkSplit, state: str) -> list[bytes]:
    """The elements of a byte-array operator list state in one split, as stored (connector
    state: `connectors.py` chooses their layout from them)."""
    with _decoding(split):
        plain = replace(split, layouts=())
        return [v for b in _operator_batches(plain, state, BATCH_ROWS) for v in b.column(1).to_pylist()]


def _decompress_elements(data: bytes, offsets: tuple[int, ...], source: str) -> tuple[bytes, tuple[int, ...]]:
    """Compressed operator state: each offset starts the snappy chunks of one element."""
    from . import snappy
    out, new_offsets, at = [], [], 0
    ends = list(offsets[1:]) + [len(data)]
    for start, end in zip(offsets, ends):
        plain = snappy.decompress_framed(data, start=start, end=end, identifier=False, name=source)
        out.append(plain)
        new_offsets.append(at)
        at += len(plain)
    return b"".join(out), tuple(new_offsets)


def decode_operator(op: FlinkOperatorInfo) -> tuple[int, int, tuple[str, ...]]:
    """`validate --deep` of a Flink operator: every keyed split (keyed table and timers) and
    every operator state split decoded, one after another: rows, splits, and one problem line
    per failure (each named once, with the operator)."""
    work = [(split, table) for split in op.keyed_splits for table in KeyedTable
            if table == KeyedTable.KEYED or op.timers_schema is not None]
    work += [(split, name) for name in op.operator_states for split in op.operator_splits]
    work += [(op.coordinator.split, op.coordinator.name)] if op.coordinator is not None else []
    rows, parts, problems = 0, 0, []
    for split, table in work:
        try:
            rows += sum(b.num_rows for b in read_split(split, table))
            parts += 1
        except StatectlError as e:
            text = str(e)
            line = text if text.startswith(f"operator {op.label}") else f"operator {op.label}: {text}"
            if line not in problems:
                problems.append(line)
    return rows, parts, tuple(problems)


# --- whole tables (for tests and small savepoints) --------------------------------------

def keyed_table(op: FlinkOperatorInfo, key_groups=None) -> pa.Table:
    _check_readable(op, KEYED_PART)
    return _collect(op.keyed_splits, KeyedTable.KEYED, op.keyed_schema, key_groups)


def timers_table(op: FlinkOperatorInfo, key_groups=None) -> pa.Table:
    _check_readable(op, KEYED_PART)
    return _collect(op.keyed_splits, KeyedTable.TIMERS, op.timers_schema, key_groups)


def _check_readable(op: FlinkOperatorInfo, part: str) -> None:
    if part in op.unreadable:
        raise cannot_read(op.label, part, op.unreadable[part].reason)


def operator_state_table(op: FlinkOperatorInfo, state: str) -> pa.Table:
    _check_readable(op, state)
    meta = op.operator_states[state]
    if meta.kind == "broadcast":
        splits = op.operator_splits[:1]  # identical on every subtask: one copy
        schema = TB.broadcast_schema(meta)
    else:
        splits = op.operator_splits
        schema = TB.operator_list_schema(meta)
    batches = [b for s in splits for b in read_split(s, state)]
    return pa.Table.from_batches(batches, schema=schema)


def _collect(splits, table, schema, key_groups) -> pa.Table:
    if schema is None:
        raise StatectlError(f"no {table} state")
    batches = [b for s in splits for b in read_split(s, table, key_groups)]
    out = [pa.Table.from_batches([b]).cast(schema) if b.schema != schema else pa.Table.from_batches([b])
           for b in batches]
    return pa.concat_tables(out) if out else schema.empty_table()
