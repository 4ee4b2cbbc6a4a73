"""The RocksDB backend on rocksdict (as Flink's EmbeddedRocksDBStateBackend).

One column family per keyed state (``state:<name>``) and one for timers
(``timers``); raw byte keys ``key group ‖ key ‖ namespace`` (a map state
appends the encoded map key), values in the binary encoding of
:mod:`.codec`. A list is stored as its elements' encodings concatenated, so
appending is a read and a write of bytes, never a decode.
"""

from __future__ import annotations

import dataclasses
import heapq
import os
import shutil
import tempfile
from typing import Iterator

import uuid

from rocksdict import Checkpoint, Options, Rdict, WriteOptions

from .. import native
from ..errors import StatectlError, UsageError
from ..fs import Location
from ..model import CANONICAL, ROCKSDB, KeyedStateDescriptor, Operator, Savepoint
from .base import KeyedStateBackend
from .codec import (
    KEY_GROUP_BYTES,
    TIMER_DOMAINS,
    KeyLayout,
    ValueCodec,
    map_pairs,
    read_sortable_int,
    split_timer,
    timer_key,
    timer_prefix,
)

STATE_CF_PREFIX = "state:"
TIMERS_CF = "timers"
TIMER_HEAD = KEY_GROUP_BYTES + 1 + 8  # kg ‖ domain ‖ timestamp


def cf_options() -> Options:
    return Options(raw_mode=True)


def db_options() -> Options:
    opts = Options(raw_mode=True)
    opts.create_if_missing(True)
    opts.create_missing_column_families(True)
    return opts


def successor(prefix: bytes) -> bytes | None:
    """The smallest key greater than every key starting with *prefix* (None: no bound)."""
    p = bytearray(prefix)
    while p and p[-1] == 0xFF:
        p.pop()
    if not p:
        return None
    p[-1] += 1
    return bytes(p)


_PREFIX_END = object()


def iter_prefix(cf: Rdict, prefix: bytes, stop=_PREFIX_END) -> Iterator[tuple[bytes, bytes]]:
    """Entries with keys in ``[prefix, stop)``; *stop* defaults to the end of *prefix*,
    None means no bound."""
    stop = successor(prefix) if stop is _PREFIX_END else stop
    it = cf.iter()
    it.seek(prefix)
    while it.valid():
        k = it.key()
        if stop is not None and k >= stop:
            break
        yield k, it.value()
        it.next()


class RocksTable:
    def __init__(self, cf: Rdict, descriptor: KeyedStateDescriptor, layout: KeyLayout):
        self.cf = cf
        self.descriptor = descriptor
        self.layout = layout
        kind = descriptor.kind
        self._codec = ValueCodec(descriptor.value_type, nullable=kind in ("list", "map"))
        if kind == "map":
            self._user_key = ValueCodec(descriptor.user_key_type)

    # value, reducing, aggregating and list
    def get(self, kns: bytes):
        raw = self.cf.get(kns)
        if raw is None:
            return None
        return self._decode_list(raw) if self.descriptor.kind == "list" else self._codec.decode(raw)

    def _decode_list(self, raw: bytes) -> list:
        out, pos = [], 0
        while pos < len(raw):
            v, pos = self._codec.decode_at(raw, pos)
            out.append(v)
        return out

    def _encode(self, value) -> bytes:
        if self.descriptor.kind != "list":
            return self._codec.encode(value)
        out = bytearray()
        for v in value:
            self._codec.encode_into(v, out)
        return bytes(out)

    def put(self, kns: bytes, value) -> None:
        if self.descriptor.kind == "map":
            self.delete(kns)
            for k, v in map_pairs(value):
                self.map_put(kns, k, v)
            return
        self.cf.put(kns, self._encode(value))

    def delete(self, kns: bytes) -> None:
        if self.descriptor.kind == "map":
            self.cf.delete_range(kns, successor(kns))
        else:
            self.cf.delete(kns)

    def append(self, kns: bytes, values: list) -> None:
        raw = self.cf.get(kns) or b""
        self.cf.put(kns, raw + self._encode(values))

    # map state: one entry per map key
    def map_get(self, kns: bytes, user_key):
        raw = self.cf.get(kns + self._user_key.encode(user_key))
        return None if raw is None else self._codec.decode(raw)

    def map_contains(self, kns: bytes, user_key) -> bool:
        return self.cf.get(kns + self._user_key.encode(user_key)) is not None

    def map_put(self, kns: bytes, user_key, value) -> None:
        self.cf.put(kns + self._user_key.encode(user_key), self._codec.encode(value))

    def map_remove(self, kns: bytes, user_key) -> None:
        self.cf.delete(kns + self._user_key.encode(user_key))

    def map_items(self, kns: bytes) -> list[tuple]:
        n = len(kns)
        return [(self._user_key.decode(k[n:]), self._codec.decode(v))
                for k, v in iter_prefix(self.cf, kns)]

    def load(self, kns: bytes, value) -> None:
        if self.descriptor.kind == "map":
            for k, v in map_pairs(value):
                self.map_put(kns, k, v)
        else:
            self.cf.put(kns, self._encode(value))

    def scan(self, first_group: int = 0, last_group: int = 0xFFFF) -> Iterator[tuple[bytes, object]]:
        """(kns, value) in byte order; a map's value is its (key, value) pairs."""
        entries = iter_prefix(self.cf, first_group.to_bytes(2, "big"),
                              successor(last_group.to_bytes(2, "big")))
        if self.descriptor.kind != "map":
            decode = self._decode_list if self.descriptor.kind == "list" else self._codec.decode
            for k, v in entries:
                yield k, decode(v)
            return
        current, pairs = None, []
        for k, v in entries:
            end = self.layout.split(k)[3]
            kns = k[:end]
            if kns != current:
                if pairs:
                    yield current, pairs
                current, pairs = kns, []
            pairs.append((self._user_key.decode(k[end:]), self._codec.decode(v)))
        if pairs:
            yield current, pairs


class RocksDBBackend(KeyedStateBackend):
    """Keyed state in a local RocksDB database below *workdir* (a temporary directory
    by default, removed on close)."""

    def _open(self, workdir: str | os.PathLike | None = None, **options) -> None:
        super()._open(**options)
        self._own_workdir = workdir is None
        self._shared: native.SharedFiles | None = None
        self.db = None
        self.workdir = str(workdir) if workdir is not None else tempfile.mkdtemp(prefix="statectl-rocksdb-")
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
        self._head_heap: dict[str, list] = {d: [] for d in TIMER_DOMAINS}

    def _existing_cfs(self) -> dict:
        """Column families to open (or create) at once: one manifest write, not one each."""
        names = {TIMERS_CF} | {STATE_CF_PREFIX + d.name for d in self._initial_states}
        if os.path.exists(os.path.join(self.db_path, "CURRENT")):
            names |= set(Rdict.list_cf(self.db_path, cf_options())) - {"default"}
        return {name: cf_options() for name in sorted(names)}

    def _cf(self, name: str) -> Rdict:
        try:
            return self.db.get_column_family(name)
        except Exception:
            return self.db.create_column_family(name, cf_options())

    def _new_table(self, descriptor: KeyedStateDescriptor) -> RocksTable:
        return RocksTable(self._cf(STATE_CF_PREFIX + descriptor.name), descriptor, self.layout)

    # --- native restore and snapshot ------------------------------------------------

    def _restore_keyed(self, sp: Savepoint, op: Operator) -> None:
        if op.format != ROCKSDB:
            return super()._restore_keyed(sp, op)
        mine = native.subtask_databases(op).get((self.first_group, self.last_group))
        if mine is None:  # another parallelism: copy our range out of the overlapping databases
            return load_native_range(self, sp, op)
        self._close_db()
        shutil.rmtree(self.db_path, ignore_errors=True)
        native.download(sp, mine, self.db_path)
        self._open_db()
        for name, desc in self._descriptors.items():
            self._tables[name] = self._new_table(desc)
        self._rebuild_heads()
        self._shared = native.SharedFiles.of(sp, mine)

    def snapshot(self, out, format: str = CANONICAL, incremental: bool = True):
        """Snapshot as canonical files, or (``format="rocksdb"``) as this database's own
        files; incremental snapshots reuse the SST files of the last committed one
        (see :meth:`notify_committed`)."""
        if format == CANONICAL or self.layout is None:
            return super().snapshot(out)
        if format != ROCKSDB:
            raise UsageError(f"unknown snapshot format {format!r}; use {CANONICAL} or {ROCKSDB}")
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
        return dataclasses.replace(snap, format=ROCKSDB)

    def notify_committed(self, sp: Savepoint) -> None:
        """Tell the backend its snapshot was committed in *sp*: the next incremental
        snapshot may then reference that snapshot's SST files."""
        op = sp.operator(_ref(self))
        if op.format == ROCKSDB:
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
        if getattr(self, "_own_workdir", False):
            shutil.rmtree(self.workdir, ignore_errors=True)

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
        for d in TIMER_DOMAINS:
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


def _ref(backend):
    from ..ids import OperatorRef
    return OperatorRef(operator_id=backend.subtask.operator_id)


def open_snapshot_db(path: str) -> Rdict:
    """Open a downloaded native snapshot (a private copy) with all its column families."""
    cfs = {n: cf_options() for n in Rdict.list_cf(path, cf_options()) if n != "default"}
    return Rdict(path, db_options(), column_families=cfs)


def load_native_range(backend: KeyedStateBackend, sp: Savepoint, op: Operator) -> None:
    """Load the key groups *backend* owns from every native database that holds some
    (a restore at another parallelism), decoding entries into the backend's tables."""
    first, last = backend.first_group, backend.last_group
    for (lo, hi), files in sorted(native.subtask_databases(op).items()):
        if hi < first or lo > last:
            continue
        tmp = tempfile.mkdtemp(prefix="statectl-native-")
        try:
            native.download(sp, files, tmp)
            db = open_snapshot_db(tmp)
            try:
                for entry in read_native_range(db, backend.keyed_states, backend.layout, first, last):
                    kind, *rest = entry
                    if kind == "timer":
                        backend._timer_add(*rest)
                    else:
                        backend._tables[rest[0]].load(rest[1], rest[2])
            finally:
                db.close()
                del db
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


def read_native_range(db: Rdict, states, layout: KeyLayout, first: int, last: int):
    """Decoded entries of key groups ``first..last`` of an open native database:
    ``("state", name, kns, value)`` and ``("timer", domain, kg, ts, key_ns)``."""
    present = set(Rdict.list_cf(db.path(), cf_options()))
    lo, hi = first.to_bytes(2, "big"), successor(last.to_bytes(2, "big"))
    for desc in states:
        name = STATE_CF_PREFIX + desc.name
        if name in present:
            for kns, value in RocksTable(db.get_column_family(name), desc, layout).scan(first, last):
                yield "state", desc.name, kns, value
    if TIMERS_CF in present:
        for k, _ in iter_prefix(db.get_column_family(TIMERS_CF), lo, hi):
            kg, domain, ts, _, _ = split_timer(layout, k)
            yield "timer", domain, kg, ts, k[TIMER_HEAD:]
