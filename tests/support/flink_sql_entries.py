"""The SQL savepoints the RowData writing tests read (the probe's and the suite's SQL job's, by
shape) and their SQL operators' keyed splits; and a SQL operator's keyed stream written again by
the Flink writer's task side, without Spark:
the split's tables as statectl reads them, given to the writer's encoders (`EntryEncoder`) as a
write's inputs (``_k<i>``, ``_ns``, ``_val<id>``, ``_uk<id>``, ``_ts<id>``, ``_ttl<id>``), sorted by key group
and key as the write's shuffle sorts them, and assembled by the stream builder under the header
copied from the base (`tests/writers/test_flink_sql_entries.py`, `bench/bench_flink_sql_write.py`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from support import flink_job

from statectl.statefmt.flink import types as T
from statectl.statefmt.flink.handles import IncrementalRocksDB
from statectl.statefmt.flink.headers import read_keyed_header
from statectl.statefmt.flink.rowdata import RowData
from statectl.statefmt.flink.savepoint import open_flink_savepoint, read_split
from statectl.statefmt.flink.stream_write import KEY, KEY_GROUP, KeyedStreamBuilder, StreamState, row_schema
from statectl.statefmt.flink.streamio import header_length, read_range, read_stream, split_base
from statectl.statefmt.flink.tables import timer_service
from statectl.statefmt.keygroups import key_group_range
from statectl.statefmt.model import TTL_SUFFIX
from statectl.statefmt.vocabulary import StateKind
from statectl.writers.flink.encoding import EntryEncoder, StateEncoding


PROBE = Path(__file__).resolve().parents[1] / "fixtures" / "flink-sql-probe"


def sql_savepoints(shape: str) -> list:
    """pytest params of the probe's savepoint of *shape* (``rocksdb-canonical``...; the probe has no
    TTL shapes) and the SQL job's of each release (made once by the real job, then cached)."""
    out = [pytest.param(PROBE / shape, id=f"probe-{shape}")] if (PROBE / shape).is_dir() else []
    for version in flink_job.SQL_VERSIONS:
        snap = dict(zip(flink_job.SQL_SHAPES, flink_job.make_sql_snapshots(version)))[shape]
        out.append(pytest.param(snap.path, id=f"{version}-{shape}"))
    return out


def sql_keyed_splits(path):
    """(operator, split) of every keyed split of the savepoint's SQL operators (RowData keys)."""
    for op in open_flink_savepoint(path).operators:
        if op.keyed_header is not None and isinstance(op.key_type, RowData):
            for split in op.keyed_splits:
                yield op, split


class SplitRewrite:
    """One keyed split of a SQL operator (a canonical stream, or a native RocksDB snapshot's
    key-group range): its header as stored, its tables."""

    def __init__(self, op, split):
        self.op, self.split = op, split
        base, handle = split_base(split), split.handle
        self.header_bytes = read_stream(base, handle.meta) if isinstance(handle, IncrementalRocksDB) else \
            read_range(base, handle.stream, 0, header_length(handle))
        self.header = read_keyed_header(self.header_bytes, "header")
        self.states = [StreamState(m.name, m.kind, m.name) for m in self.header.states]

    def stored(self) -> bytes:
        handle = self.split.handle
        return read_range(split_base(self.split), handle.stream, 0, handle.stream.size)

    def tables(self) -> tuple[pa.Table | None, pa.Table | None]:
        """The split's keyed and timers tables, as statectl reads them."""
        return _table(self.split, "keyed"), _table(self.split, "timers")

    def entries(self, keyed: pa.Table | None, timers: pa.Table | None) -> pa.Table:
        """The entry rows the writer's encoders make of the tables."""
        schema = row_schema(self.states)
        batches = [self._encoder(i, meta, schema).encode(batch) for i, meta, batch in self._inputs(keyed, timers)]
        return pa.Table.from_batches(batches, schema)

    def stream(self, entries: pa.Table) -> tuple[bytes, tuple[int, ...]]:
        """The keyed stream the builder writes of *entries* (sorted first, as the write's shuffle
        sorts them), and its key groups' offsets."""
        entries = entries.sort_by([(KEY_GROUP, "ascending"), (KEY, "ascending")])
        op = self.op
        span = key_group_range(op.max_parallelism, op.parallelism, self.split.subtask)
        builder = KeyedStreamBuilder(self.header_bytes, self.states, self.header.key, op.max_parallelism, span)
        return builder.start() + builder.add(entries) + builder.finish(), builder.key_group_offsets()

    def _inputs(self, keyed, timers):
        """(state id, its header entry, its input batch) per state with rows."""
        key_names = [f"f{i}" for i in range(len(self.header.key.fields))]
        for i, meta in enumerate(self.header.states):
            t = timers if meta.kind == "timers" else keyed
            if t is None:
                continue
            if meta.kind == "timers":
                domain, service = timer_service(meta.name)
                t = t.filter(pc.and_(pc.equal(t["domain"], domain), pc.equal(t["service"], service)))
            else:
                t = t.filter(pc.is_valid(t[meta.name]))
            t = t.combine_chunks()
            if t.num_rows:
                yield i, meta, pa.RecordBatch.from_pydict(_columns(i, meta, t, key_names))

    def _encoder(self, i: int, meta, schema) -> EntryEncoder:
        kind = "timers" if meta.kind == "timers" else ("map" if meta.kind == StateKind.MAP else "value")
        value = meta.value.value if kind == "map" else (None if kind == "timers" else meta.value)
        ttl = isinstance(value, T.Ttl)  # the input gives every last-access time (``_ttl<i>``)
        state = StateEncoding(i, kind, value, meta.value.key if kind == "map" else None, 0 if ttl else None, False,
                              f"state {meta.name!r}", ttl)
        key = self.header.key
        return EntryEncoder((state,), schema, key, None, len(key.fields), meta.namespace,
                            not isinstance(meta.namespace, T.VoidNamespace), self.op.max_parallelism,
                            f"state {meta.name!r}")


def _table(split, name: str) -> pa.Table | None:
    batches = list(read_split(split, name))
    return pa.Table.from_batches(batches) if batches else None


def _columns(i: int, meta, t: pa.Table, key_names: list[str]) -> dict[str, pa.Array]:
    cols = {f"_k{j}": t[n].chunk(0) for j, n in enumerate(key_names)}
    if "namespace" in t.column_names:
        cols["_ns"] = t["namespace"].chunk(0)
    ttl = f"{meta.name}{TTL_SUFFIX}" if f"{meta.name}{TTL_SUFFIX}" in t.column_names else None
    if meta.kind == "timers":
        cols[f"_ts{i}"] = t["timestamp"].chunk(0)
    elif meta.kind == StateKind.MAP:
        maps = t[meta.name].chunk(0)
        rows = pa.array(np.repeat(np.arange(len(maps)), np.diff(maps.offsets.to_numpy())))
        cols = {k: v.take(rows) for k, v in cols.items()} | {f"_uk{i}": maps.keys, f"_val{i}": maps.items}
        if ttl:
            cols[f"_ttl{i}"] = t[ttl].chunk(0).items
    else:
        assert meta.kind != StateKind.LIST  # the SQL job has none
        cols[f"_val{i}"] = t[meta.name].chunk(0)
        if ttl:
            cols[f"_ttl{i}"] = t[ttl].chunk(0)
    return cols
