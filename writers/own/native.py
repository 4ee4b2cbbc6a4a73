"""Writing keyed state in the native format: one RocksDB database per subtask.

Rows reach one task per subtask (``Chunks(max_p, p, 1)``) through the same
plan as the canonical writer (:func:`statectl.writers.own.keyed.plan_keyed`): value
and unordered list states are gathered per key in the task
(:mod:`statectl.writers.own.grouping`), other kinds by a Spark aggregate. The task
encodes whole Arrow batches at once (:mod:`statectl.statefmt.rocksdb.columnar`:
entry keys, values, list concatenations, timer keys, all as the format's own
tables and timer keys lay them out, `docs/FORMAT.md` §11), builds the database
from SST files (:mod:`statectl.statefmt.rocksdb.sst`) and uploads a checkpoint
of it exactly as the RocksDB backend's native snapshot does
(:func:`statectl.statefmt.rocksdb.files.upload_checkpoint`), into a folder
carrying the write's token so a failed write is cleaned up like any other.

SST files take keys in byte order, and Spark's order of a string is not its
encoding's (the encoding puts the length first): Spark is asked to sort the
rows by :func:`encoding_order` instead, so the entries come out in key order
and the task only checks it (and sorts, should some type's order differ).
Keyed rows and timers go through one shuffle: alone, or joined as two struct
columns when an operator has both.
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
from statectl.statefmt.rocksdb import columnar
from statectl.statefmt.rocksdb import files as native
from statectl.statefmt.rocksdb.codec import KeyLayout
from statectl.statefmt.rocksdb.database import TIMERS_CF, cf_options, db_options, state_cf
from statectl.statefmt.rocksdb.sst import SstFamily, build_checkpoint
from statectl.statefmt.scratch import new_scratch_dir
from statectl.statefmt.types import DataType
from statectl.statefmt.vocabulary import StateKind

from ..errors import WriteFailedError
from ..job import write_token
from ..partitioning import Chunks
from ..sql import q
from .grouping import Runs
from .keyed import KeyedPlan
from .sinks import HANDLE_DDL, FileTarget, Sink, guarded

KEYED, TIMERS = "_k", "_t"


def subtask_chunks(max_parallelism: int, parallelism: int) -> Chunks:
    """One chunk (and so one task, one database) per subtask."""
    return Chunks(max_parallelism, parallelism, 1)


def encoding_order(column: str, t: DataType) -> list[str]:
    """SQL sort keys of a key or namespace column (quoted name) that order its rows as their
    encoded bytes: a string or binary value by its length's varint bytes, then its bytes
    (LEB128 is little-endian, so the varint is spelled out); other key types sort as their
    values. A type whose order still differs (floats) is sorted again in the task."""
    if t not in ("string", "binary"):
        return [column]
    length = f"CAST(octet_length({column}) AS BIGINT)"
    terms = []
    for k in range(5):  # up to 5 varint bytes: lengths below 2^35
        byte = f"((shiftright({length}, {7 * k}) & 127) + " \
               f"CASE WHEN {length} >= {1 << 7 * (k + 1)} THEN 128 ELSE 0 END)"
        if k:
            byte = f"CASE WHEN {length} >= {1 << 7 * k} THEN {byte} ELSE 0 END"
        terms.append(f"{byte} * {256 ** (4 - k)}")
    return [f"({' + '.join(terms)})", column]


@dataclass(frozen=True)
class NativeTarget:
    """What a task needs to build its subtask's database (picklable)."""

    keyed: FileTarget  # out, operator id, write id; the keyed table's schema
    timers: FileTarget  # the timer table's schema
    section: KeyedSection
    ranges: tuple[tuple[int, int], ...]
    what: str


# --- the driver side ---------------------------------------------------------------------

def native_job(plan: KeyedPlan, target: NativeTarget, chunks: Chunks):
    """One job writing the keyed table and the timers of each subtask into its database.

    *plan* comes from ``plan_keyed(..., sort_key=encoding_order, place=False)``. With
    both keyed rows and timers, the two become struct columns of one DataFrame (so no
    user column name can clash), each with its sort keys beside it.
    """
    sides = [(name, df, order, grouping) for name, df, order, grouping in (
        (KEYED, plan.table, plan.order, plan.grouping),
        (TIMERS, plan.timers, plan.timer_order, plan.timer_grouping)) if df is not None]
    groupings = {name: grouping for name, _, _, grouping in sides}
    if len(sides) == 1:
        (name, df, order, _), = sides
        if not (name == KEYED and plan.table_placed):
            df = chunks.distribute(df, sort_by=[_expr(e) for e in order])
        return df.mapInArrow(partial(_write_task, target, groupings, name), HANDLE_DDL)
    union, sort_by = None, [KEY_GROUP_COLUMN]
    for name, df, order, _ in sides:
        side = _side(df, name, order)
        sort_by += [c for c in side.columns if c.startswith(f"{name}_o")]
        union = side if union is None else union.unionByName(side, allowMissingColumns=True)
    union = chunks.distribute(union, sort_by=sort_by)
    return union.mapInArrow(partial(_write_task, target, groupings, None), HANDLE_DDL)


def _side(df, name: str, order) -> object:
    fields = ", ".join(q(c) for c in df.columns)
    keys = [f"{e} AS {name}_o{i}" for i, e in enumerate(order[1:])]  # order[0]: the key group
    return df.selectExpr(q(KEY_GROUP_COLUMN), *keys, f"struct({fields}) AS {name}")


def _expr(text: str):
    from pyspark.sql import functions as F

    return F.expr(text)


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

def _write_task(target: NativeTarget, groupings: dict, single: str | None, batches):
    """*batches* hold one stream (*single*) or both as struct columns; a stream with a
    grouping gets its runs of equal keys gathered first."""
    sink = NativeSink(target)
    streams = {KEYED: sink.keyed, TIMERS: sink.timers}
    runs = {name: Runs(g) for name, g in groupings.items() if g is not None}

    def feed(name: str, rows) -> None:
        if name in runs:
            rows = runs[name].push(rows)
        if rows is not None:
            streams[name].write(rows)

    def body():
        for batch in batches:
            if single is not None:
                feed(single, batch)
                continue
            for name in groupings:
                rows = batch.column(name)
                rows = rows.filter(pc.is_valid(rows))
                if len(rows):
                    feed(name, pa.RecordBatch.from_struct_array(rows))
        for name, r in runs.items():
            rest = r.end()
            if rest is not None:
                streams[name].write(rest)

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
        self.sink.enter(int(groups.min()))
        self.sink.enter(int(groups.max()))
        if (self.group is not None and groups[0] < self.group) or (np.diff(groups) < 0).any():
            raise StatectlError(f"{self.sink.what}: rows reached the writer out of "
                                "key-group order")
        self.sink.add(self, groups, table)
        self.group = int(groups[-1])
        for family in self.families:  # every key group before the last one is complete
            family.flush(self.sink.what, before=self.group)

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
        self.state_families = [SstFamily(state_cf(s.name), os.path.join(self.tmp, f"s{i}.sst"), cf_options())
                               for i, s in enumerate(section.states)]
        self.timer_family = SstFamily(TIMERS_CF, os.path.join(self.tmp, "timers.sst"), cf_options())
        self.keyed = _Stream(self, target.keyed, self.state_families)
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

    def add(self, stream: _Stream, groups: np.ndarray, rows: pa.Table) -> None:
        """The entries of *rows* (of key groups *groups*) into their column families."""
        section = self.spec.section
        kns = columnar.key_ns(self.layout, [rows.column(n) for n in section.key_names],
                              rows.column(NAMESPACE_COLUMN) if section.namespace_type else None)
        if stream is self.timers:
            keys = columnar.timer_keys(groups, rows.column("domain"),
                                       rows.column("timestamp").to_numpy(), kns)
            self.timer_family.add(keys, None, groups)
            return
        keys = columnar.join(columnar.key_group_prefixes(groups), kns)
        for family, state in zip(self.state_families, section.states):
            family.add(*_entries(state, keys, groups, rows.column(state.name)))

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
        checkpoint, entries = build_checkpoint([*self.state_families, self.timer_family],
                                               self.tmp, db_options(), cf_options())
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


def _entries(state, keys: pa.Array, groups: np.ndarray, column
             ) -> tuple[pa.Array, pa.Array, np.ndarray]:
    """One state's entries of a batch: (entry keys, values, key groups); a null value, an
    empty list and an empty map have none (FORMAT.md §11.3)."""
    kind = StateKind(state.kind)
    if kind == StateKind.MAP:
        row, user_keys, values = columnar.map_entries(column, state.user_key_type, state.value_type)
        return columnar.join(keys.take(pa.array(row)), user_keys), values, groups[row]
    values = columnar.list_entries(column, state.value_type) if kind == StateKind.LIST \
        else columnar.encode(column, state.value_type)
    if not values.null_count:
        return keys, values, groups
    present = values.is_valid()
    return keys.filter(present), values.filter(present), \
        groups[present.to_numpy(zero_copy_only=False)]
