"""A SQL operator's state written again by the Flink writer's task side, unchanged, is the
stream Flink wrote, byte for byte: each keyed SQL operator of the suite's RocksDB canonical SQL
savepoints (Flink 1.20 and 2.3) and of the probe is read into its tables by statectl, its
rows given to the writer's encoders as the write's inputs (`EntryEncoder`: key rows placed
by their bytes' hash, values, map entries, timers), sorted by key group and key as the
write's shuffle sorts them, and assembled by the stream builder under the header copied from
the base (its serializer snapshots as Flink wrote them). No Spark: the tasks' code itself.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import flink_job
from statectl.statefmt.flink import types as T
from statectl.statefmt.flink.headers import read_keyed_header
from statectl.statefmt.flink.rowdata import RowData
from statectl.statefmt.flink.savepoint import open_flink_savepoint, read_split
from statectl.statefmt.flink.stream_write import KEY, KEY_GROUP, KeyedStreamBuilder, StreamState, row_schema
from statectl.statefmt.flink.streamio import header_length, read_range, split_base
from statectl.statefmt.flink.tables import timer_service
from statectl.statefmt.keygroups import key_group_range
from statectl.statefmt.vocabulary import StateKind
from statectl.writers.flink.encoding import EntryEncoder, StateEncoding

PROBE = Path(__file__).parents[1] / "fixtures" / "flink-sql-probe"


def _savepoints():
    out = [pytest.param(PROBE / "rocksdb-canonical", id="probe")]
    for version in flink_job.SQL_VERSIONS:
        snap = dict(zip(flink_job.SQL_SHAPES, flink_job.make_sql_snapshots(version)))["rocksdb-canonical"]
        out.append(pytest.param(snap.path, id=version))
    return out


def _table(split, name: str) -> pa.Table:
    batches = list(read_split(split, name))
    return pa.Table.from_batches(batches) if batches else None


def _inputs(header, keyed: pa.Table, timers: pa.Table):
    """(state id, its header entry, its input batch) per state: the write's input columns
    (``_k<i>``, ``_ns``, ``_val<id>``, ``_uk<id>``, ``_ts<id>``) from the tables."""
    key_names = [f"f{i}" for i in range(len(header.key.fields))]
    for i, meta in enumerate(header.states):
        if (timers if meta.kind == "timers" else keyed) is None:
            continue
        if meta.kind == "timers":
            domain, service = timer_service(meta.name)
            t = timers.filter(pc.and_(pc.equal(timers["domain"], domain), pc.equal(timers["service"], service)))
        else:
            t = keyed.filter(pc.is_valid(keyed[meta.name]))
        t = t.combine_chunks()
        if not t.num_rows:
            continue
        cols = {f"_k{j}": t[n].chunk(0) for j, n in enumerate(key_names)}
        if "namespace" in t.column_names:
            cols["_ns"] = t["namespace"].chunk(0)
        if meta.kind == "timers":
            cols[f"_ts{i}"] = t["timestamp"].chunk(0)
        elif meta.kind == StateKind.MAP:
            maps = t[meta.name].chunk(0)
            rows = pa.array(np.repeat(np.arange(len(maps)), np.diff(maps.offsets.to_numpy())))
            cols = {k: v.take(rows) for k, v in cols.items()} | {f"_uk{i}": maps.keys, f"_val{i}": maps.items}
        else:
            assert meta.kind != StateKind.LIST  # the SQL job has none
            cols[f"_val{i}"] = t[meta.name].chunk(0)
        yield i, meta, pa.RecordBatch.from_pydict(cols)


def _encoder(header, i, meta, schema, max_parallelism, has_namespace):
    kind = "timers" if meta.kind == "timers" else ("map" if meta.kind == StateKind.MAP else "value")
    value = meta.value.value if kind == "map" else (None if kind == "timers" else meta.value)
    user_key = meta.value.key if kind == "map" else None
    state = StateEncoding(i, kind, value, user_key, None, False, f"state {meta.name!r}")
    namespace = meta.namespace if meta.namespace is not None else T.VoidNamespace()
    return EntryEncoder((state,), schema, header.key, None, len(header.key.fields), namespace,
                        has_namespace, max_parallelism, f"state {meta.name!r}")


@pytest.mark.parametrize("path", _savepoints())
def test_sql_operators_written_again_are_flinks_streams(path):
    streams = 0
    for op in open_flink_savepoint(path).operators:
        if op.keyed_header is None or not isinstance(op.key_type, RowData):
            continue
        for split in op.keyed_splits:
            base, handle = split_base(split), split.handle
            header_bytes = read_range(base, handle.stream, 0, header_length(handle))
            header = read_keyed_header(header_bytes, "header")
            states = [StreamState(m.name, m.kind, m.name) for m in header.states]
            schema = row_schema(states)
            keyed, timers = _table(split, "keyed"), _table(split, "timers")
            entries = []
            for i, meta, batch in _inputs(header, keyed, timers):
                ns = not isinstance(meta.namespace, T.VoidNamespace)
                entries.append(_encoder(header, i, meta, schema, op.max_parallelism, ns).encode(batch))
            rows = pa.Table.from_batches(entries)
            rows = rows.sort_by([(KEY_GROUP, "ascending"), (KEY, "ascending")])
            span = key_group_range(op.max_parallelism, op.parallelism, split.subtask)
            builder = KeyedStreamBuilder(header_bytes, states, header.key, op.max_parallelism, span)
            written = builder.start() + builder.add(rows) + builder.finish()
            assert written == read_range(base, handle.stream, 0, handle.stream.size), (op.name, split.subtask)
            assert builder.key_group_offsets() == tuple(handle.offsets)
            streams += 1
    assert streams >= 4
