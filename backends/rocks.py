"""The RocksDB backend on rocksdict (as Flink's EmbeddedRocksDBStateBackend).

The database is statectl's RocksDB format (`statectl.statefmt.rocksdb`): one
column family per keyed state, one for timers, entries as its tables encode
them; a native snapshot is a checkpoint of it, uploaded as that format's files.
"""

from __future__ import annotations

import dataclasses
import heapq
import os
import shutil
import uuid
import weakref

from rocksdict import Checkpoint, Rdict, WriteOptions

from statectl.statefmt.errors import StatectlError, UsageError
from statectl.statefmt.fs import Location
from statectl.statefmt.ids import OperatorRef
from statectl.statefmt.model import KeyedStateDescriptor, Operator, Savepoint
from statectl.statefmt.rocksdb import files as native
from statectl.statefmt.rocksdb.codec import KEY_GROUP_BYTES, read_sortable_int, \
    split_timer, timer_key, timer_prefix
from statectl.statefmt.rocksdb.database import TIMER_HEAD, TIMERS_CF, cf_options, db_options, state_cf
from statectl.statefmt.rocksdb.table import RocksTable, iter_prefix
from statectl.statefmt.scratch import new_scratch_dir, remove_scratch_dir
from statectl.statefmt.vocabulary import Format, TimerDomain

from .base import KeyedStateBackend


class RocksDBBackend(KeyedStateBackend):
    """Keyed state in a local RocksDB database below *workdir* (by default a scratch folder
    ``statectl-rocksdb-*``, removed on close, and at the latest when the backend is dropped
    unclosed or the interpreter exits)."""

    def _open(self, workdir: str | os.PathLike | None = None, **options) -> None:
        super()._open(**options)
        self._shared: native.SharedFiles | None = None
        self.db = None
        if workdir is None:
            self.workdir = new_scratch_dir("rocksdb")
            self._remove_workdir = weakref.finalize(self, remove_scratch_dir, self.workdir)
        else:
            self.workdir = str(workdir)
        os.makedirs(self.workdir, exist_ok=True)
        self.db_path = os.path.join(self.workdir, "db")
        if os.path.exists(self.db_path):
            raise UsageError(f"{self.db_path} already exists; give the backend an empty workdir")
        self._open_db()

    def _open_db(self) -> None:
        try:
            self.db = Rdict(self.db_path, db_options(), column_families=self._existing_cfs())
        except Exception as e:  # rocksdict raises plain exceptions
            raise StatectlError(f"cannot open RocksDB at {self.db_path}: {e}") from None
        wo = WriteOptions()
        wo.disable_wal = True  # durability comes from checkpoints, not the WAL
        self.db.set_write_options(wo)
        self._timers = self._cf(TIMERS_CF)
        self._heads: dict[tuple[str, int], int] = {}
        self._head_heap: dict[str, list] = {d: [] for d in TimerDomain}

    def _existing_cfs(self) -> dict:
        """Column families to open (or create) at once: one manifest write, not one each."""
        names = {TIMERS_CF} | {state_cf(d.name) for d in self._initial_states}
        if os.path.exists(os.path.join(self.db_path, "CURRENT")):
            names |= set(Rdict.list_cf(self.db_path, cf_options())) - {"default"}
        return {name: cf_options() for name in sorted(names)}

    def _cf(self, name: str) -> Rdict:
        try:
            return self.db.get_column_family(name)
        except Exception:
            return self.db.create_column_family(name, cf_options())

    def _new_table(self, descriptor: KeyedStateDescriptor) -> RocksTable:
        return RocksTable(self._cf(state_cf(descriptor.name)), descriptor, self.layout)

    # --- native restore and snapshot ------------------------------------------------

    def _restore_keyed(self, sp: Savepoint, op: Operator) -> None:
        if op.format != Format.ROCKSDB:
            return super()._restore_keyed(sp, op)
        mine = native.subtask_databases(op).get((self.first_group, self.last_group))
        if mine is None:  # another parallelism: copy our range out of the overlapping databases
            return super()._restore_keyed(sp, op)
        self._close_db()
        shutil.rmtree(self.db_path, ignore_errors=True)
        native.download(sp, mine, self.db_path)
        self._open_db()
        for name, desc in self._descriptors.items():
            self._tables[name] = self._new_table(desc)
        self._rebuild_heads()
        self._shared = native.SharedFiles.of(sp, mine)

    def snapshot(self, out, format: str = Format.CANONICAL, incremental: bool = True):
        """Snapshot as canonical files, or (``format="rocksdb"``) as this database's own
        files; incremental snapshots reuse the SST files of the last committed one
        (see :meth:`notify_committed`)."""
        if format == Format.CANONICAL or self.layout is None:
            return super().snapshot(out)
        if format != Format.ROCKSDB:
            raise UsageError(f"unknown snapshot format {format!r}; use {Format.CANONICAL} or {Format.ROCKSDB}")
        out = Location.of(out)
        for name in self._tables:
            self._tables[name].cf.flush()
        self._timers.flush()
        tmp = os.path.join(self.workdir, f"checkpoint-{uuid.uuid4().hex[:12]}")
        try:
            Checkpoint(self.db).create_checkpoint(tmp)
            entries = {f["name"].lstrip("/"): f["num_entries"] for f in self.db.live_files()}
            files, lineage = native.upload_checkpoint(
                tmp, out, self.subtask.operator_id, (self.first_group, self.last_group), entries,
                self._shared if incremental else None)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        snap = self._snapshot_of(out, self.section(files), lineage)
        return dataclasses.replace(snap, format=Format.ROCKSDB)

    def notify_committed(self, sp: Savepoint) -> None:
        """Tell the backend its snapshot was committed in *sp*: the next incremental
        snapshot may then reference that snapshot's SST files."""
        op = sp.operator(OperatorRef(operator_id=self.subtask.operator_id))
        if op.format == Format.ROCKSDB:
            mine = native.subtask_databases(op).get((self.first_group, self.last_group), [])
            self._shared = native.SharedFiles.of(sp, mine)

    def _close_db(self) -> None:
        self._tables.clear()
        self._timers = None
        if self.db is not None:
            self.db.close()
            self.db = None

    def close(self) -> None:
        db = getattr(self, "db", None)
        if db is not None:
            # drop the column-family handles before the database, and all before the files
            self._tables.clear()
            self._handles.clear()
            self._timers = None
            db.close()
            self.db = None
            del db
        remove = getattr(self, "_remove_workdir", None)
        if remove is not None:
            remove()

    # --- timers: entries in the timers column family, plus the earliest timestamp of each
    # (domain, key group) in memory, so firing is one seek per timer ---------------------

    def _refresh_head(self, domain: str, kg: int) -> None:
        prefix = timer_prefix(kg, domain)
        first = next(iter_prefix(self._timers, prefix), None)
        if first is None:
            self._heads.pop((domain, kg), None)
            return
        ts = read_sortable_int(first[0], KEY_GROUP_BYTES + 1, 8)[0]
        if self._heads.get((domain, kg)) != ts:
            self._heads[(domain, kg)] = ts
            heapq.heappush(self._head_heap[domain], (ts, kg))

    def _rebuild_heads(self) -> None:
        self._heads.clear()
        for d in TimerDomain:
            self._head_heap[d] = []
            for kg in range(self.first_group, self.last_group + 1):
                self._refresh_head(d, kg)

    def _timer_add(self, domain: str, kg: int, ts: int, key_ns: bytes) -> None:
        self._timers.put(timer_key(kg, domain, ts, key_ns), b"")
        head = self._heads.get((domain, kg))
        if head is None or ts < head:
            self._heads[(domain, kg)] = ts
            heapq.heappush(self._head_heap[domain], (ts, kg))

    def _timer_remove(self, domain: str, kg: int, ts: int, key_ns: bytes) -> None:
        self._timers.delete(timer_key(kg, domain, ts, key_ns))
        if self._heads.get((domain, kg)) == ts:
            self._refresh_head(domain, kg)

    def _timer_pop_due(self, domain: str, up_to: int):
        heap = self._head_heap[domain]
        while heap:
            ts, kg = heap[0]
            if self._heads.get((domain, kg)) != ts:
                heapq.heappop(heap)  # stale
                continue
            if ts > up_to:
                return None
            key, _ = next(iter_prefix(self._timers, timer_prefix(kg, domain)))
            self._timers.delete(key)
            heapq.heappop(heap)
            self._heads.pop((domain, kg))
            self._refresh_head(domain, kg)
            return ts, kg, key[TIMER_HEAD:]
        return None

    def _timer_scan(self):
        for k, _ in iter_prefix(self._timers, b"", None):
            kg, domain, ts, _, _ = split_timer(self.layout, k)
            yield kg, domain, ts, k[TIMER_HEAD:]
