"""Writing keyed state in the native format: one RocksDB database per subtask.

Rows reach one task per subtask (``Chunks(max_p, p, 1)``). The task encodes
them with the format's own tables and timer keys (`statectl.statefmt.rocksdb`,
`docs/FORMAT.md` §11), builds the database from SST files
(:mod:`statectl.statefmt.rocksdb.sst`) and uploads a checkpoint of it exactly as
the RocksDB backend's native snapshot does
(:func:`statectl.statefmt.rocksdb.files.upload_checkpoint`), into a folder carrying
the write's token so a failed write is cleaned up like any other.

Spark's sort order is not the encoding's (a string sorts by its bytes, its
encoding by length first), so the entries of one key group are encoded, then
sorted, then written: memory holds one key group of one subtask at a time.
"""

from __future__ import annotations

import bisect
import os
import shutil
from dataclasses import dataclass
from functools import partial

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from statectl.statefmt.canonical import conform
from statectl.statefmt.errors import StatectlError
from statectl.statefmt.fs import Location
from statectl.statefmt.model import KEY_GROUP_COLUMN, NAMESPACE_COLUMN, DataFile, KeyedSection
from statectl.statefmt.rocksdb import files as native
from statectl.statefmt.rocksdb.codec import KeyLayout, key_group_prefix, timer_key
from statectl.statefmt.rocksdb.database import TIMERS_CF, state_cf
from statectl.statefmt.rocksdb.sst import SstFamily, build_checkpoint
from statectl.statefmt.rocksdb.table import RocksTable
from statectl.statefmt.scratch import new_scratch_dir
from statectl.statefmt.vocabulary import StateKind

from .errors import WriteFailedError
from .partitioning import Chunks
from .sql import q
from .tasks import HANDLE_DDL, FileTarget, Sink, guarded, write_token

KEYED, TIMERS = "_k", "_t"


def subtask_chunks(max_parallelism: int, parallelism: int) -> Chunks:
    """One chunk (and so one task, one database) per subtask."""
    return Chunks(max_parallelism, parallelism, 1)


@dataclass(frozen=True)
class NativeTarget:
    """What a task needs to build its subtask's database (picklable)."""

    keyed: FileTarget  # out, operator id, write id; the keyed table's schema
    timers: FileTarget  # the timer table's schema
    section: KeyedSection
    ranges: tuple[tuple[int, int], ...]
    what: str


# --- the driver side ---------------------------------------------------------------------

def native_job(table, timers, target: NativeTarget, chunks: Chunks):
    """One job writing the keyed table and the timers of each subtask into its database.

    Both tables become struct columns of one DataFrame (so no user column name
    can clash), repartitioned so each task holds one subtask's rows of both.
    """
    sides = []
    if table is not None:
        sides.append(_side(table, KEYED))
    if timers is not None:
        sides.append(_side(timers, TIMERS))
    union = sides[0]
    for other in sides[1:]:
        union = union.unionByName(other, allowMissingColumns=True)
    union = chunks.distribute(union, sort_by=(KEY_GROUP_COLUMN,))
    return union.mapInArrow(partial(_write_task, target), HANDLE_DDL)


def _side(df, name: str):
    fields = ", ".join(q(c) for c in df.columns)
    return df.selectExpr(q(KEY_GROUP_COLUMN), f"struct({fields}) AS {name}")


def check_databases(files: list[DataFile], what: str) -> None:
    """Every database of the operator is one subtask's: one CURRENT per key-group range."""
    seen: dict[tuple[int, int], int] = {}
    for f in files:
        if f.name == "CURRENT":
            seen[f.key_groups] = seen.get(f.key_groups, 0) + 1
    twice = sorted(r for r, n in seen.items() if n > 1)
    if twice:
        raise WriteFailedError(f"{what}: two tasks wrote the database of key groups "
                               f"{twice[0][0]}-{twice[0][1]}; nothing was written")


# --- the task side -------------------------------------------------------------------------

def _write_task(target: NativeTarget, batches):
    sink = NativeSink(target)

    def body():
        for batch in batches:
            for column, stream in ((KEYED, sink.keyed), (TIMERS, sink.timers)):
                if column in batch.schema.names:
                    rows = batch.column(column)
                    rows = rows.filter(pc.is_valid(rows))
                    if len(rows):
                        stream.write(pa.RecordBatch.from_struct_array(rows))

    yield from guarded([sink], body)


class _Stream:
    """The keyed rows or the timer rows of the task, in key-group order."""

    def __init__(self, sink: "NativeSink", target: FileTarget, families: list[SstFamily]):
        self.sink, self.target, self.families = sink, target, families
        self.group: int | None = None

    def write(self, batch) -> None:
        table = batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch])
        if table.num_rows == 0:
            return
        table = conform(table, self.target.schema, self.sink.what)
        groups = table.column(KEY_GROUP_COLUMN).to_numpy()
        cuts = [0, *(np.flatnonzero(np.diff(groups)) + 1).tolist(), len(groups)]
        key_ns = self.sink.key_ns(table)
        for lo, hi in zip(cuts, cuts[1:]):
            group = int(groups[lo])
            if group != self.group:
                self.sink.enter(group)
                if self.group is not None and group < self.group:
                    raise StatectlError(f"{self.sink.what}: rows reached the writer out of "
                                        "key-group order")
                self.flush()
                self.group = group
            self.sink.add(self, group, key_ns[lo:hi], table.slice(lo, hi - lo))

    def flush(self) -> None:
        for family in self.families:
            family.flush(self.sink.what)


class NativeSink(Sink):
    """Builds one subtask's RocksDB database and uploads its checkpoint (see the module doc).

    ``keyed`` and ``timers`` take the rows of the canonical keyed and timer
    tables; ``close`` returns the database's files; ``abort`` removes them.
    """

    def __init__(self, target: NativeTarget):
        self.target = target.keyed  # what the handles say: keyed files of the operator
        self.spec, self.what = target, target.what
        section = target.section
        self.layout = KeyLayout(list(section.key_types), section.namespace_type)
        self.tmp = new_scratch_dir("native-write")
        states = [SstFamily(state_cf(s.name), os.path.join(self.tmp, f"s{i}.sst"))
                  for i, s in enumerate(section.states)]
        self.tables = [RocksTable(f.entries, s, self.layout) for f, s in zip(states, section.states)]
        self.timer_family = SstFamily(TIMERS_CF, os.path.join(self.tmp, "timers.sst"))
        self.keyed = _Stream(self, target.keyed, states)
        self.timers = _Stream(self, target.timers, [self.timer_family])
        self.range: tuple[int, int] | None = None
        self.folder: str | None = None

    def enter(self, group: int) -> None:
        """Check *group* lies in this task's one subtask range (set by the first row)."""
        if self.range is None:
            starts = [r[0] for r in self.spec.ranges]
            self.range = self.spec.ranges[bisect.bisect_right(starts, group) - 1]
        if not self.range[0] <= group <= self.range[1]:
            raise StatectlError(f"{self.what}: rows of two subtasks reached one writing task")

    def key_ns(self, table: pa.Table) -> list[bytes]:
        """``key ‖ namespace`` bytes of every row of *table*."""
        layout = self.layout
        keys = zip(*[table.column(n).to_pylist() for n in self.spec.section.key_names])
        if self.spec.section.namespace_type is None:
            default = layout.namespace_bytes(None)
            return [layout.key_bytes(k) + default for k in keys]
        spaces = table.column(NAMESPACE_COLUMN).to_pylist()
        return [layout.key_bytes(k) + layout.namespace_bytes(n) for k, n in zip(keys, spaces)]

    def add(self, stream: _Stream, group: int, key_ns: list[bytes], rows: pa.Table) -> None:
        """The entries of *rows*, all of key group *group*."""
        if stream is self.timers:
            put = self.timer_family.entries.put
            for kn, domain, ts in zip(key_ns, rows.column("domain").to_pylist(),
                                      rows.column("timestamp").to_pylist()):
                put(timer_key(group, domain, ts, kn), b"")
            return
        prefix = key_group_prefix(group)
        kns = [prefix + kn for kn in key_ns]
        for table in self.tables:
            collection = StateKind(table.descriptor.kind).is_collection
            for k, value in zip(kns, rows.column(table.descriptor.name).to_pylist()):
                if value is None or (collection and not value):
                    continue  # an empty list or map is no entry (FORMAT.md §11.3)
                table.load(k, value)

    def close(self) -> list[DataFile]:
        try:
            self.keyed.flush()
            self.timers.flush()
            if self.range is None:
                return []
            return self._snapshot()
        finally:
            shutil.rmtree(self.tmp, ignore_errors=True)

    def _snapshot(self) -> list[DataFile]:
        checkpoint, entries = build_checkpoint([*self.keyed.families, self.timer_family], self.tmp)
        out = self.target
        self.folder = native.checkpoint_folder(out.operator_id, self.range, write_token(out.write_id))
        files, _ = native.upload_checkpoint(checkpoint, Location(out.out), out.operator_id,
                                            self.range, entries, folder=self.folder)
        return list(files)

    def abort(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)
        if self.folder is not None:
            folder = Location(self.target.out).child(self.folder)
            for path in folder.list_files():
                folder.child(path).delete_file()
            folder.delete_dir()
