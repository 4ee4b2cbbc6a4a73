"""A statectl RocksDB database: its column families, and the entries of a snapshot read back.

One column family per keyed state (``state:<name>``) and one for timers
(``timers``, keys ``kg ‖ domain ‖ timestamp ‖ key ‖ namespace``, no value);
`docs/FORMAT.md` §12 specifies it. A snapshot is read from a private copy:
:func:`opened_snapshot` fetches (and verifies) its files, opens them and
removes the copy afterwards.
"""

from __future__ import annotations

import contextlib
from typing import Iterable, Iterator

from rocksdict import Options, Rdict

from ..scratch import scratch_dir
from ..model import DataFile, KeyedStateDescriptor, Operator, Savepoint
from .codec import KEY_GROUP_BYTES, KeyLayout, split_timer
from .files import download, subtask_databases
from .sstread import successor
from .table import RocksTable, iter_prefix

STATE_CF_PREFIX = "state:"
TIMERS_CF = "timers"
TIMER_HEAD = KEY_GROUP_BYTES + 1 + 8  # kg ‖ domain ‖ timestamp


def state_cf(name: str) -> str:
    """The column family of keyed state *name*."""
    return STATE_CF_PREFIX + name


def cf_options() -> Options:
    return Options(raw_mode=True)


def db_options() -> Options:
    opts = Options(raw_mode=True)
    opts.create_if_missing(True)
    opts.create_missing_column_families(True)
    return opts


def open_snapshot_db(path: str) -> Rdict:
    """Open a downloaded snapshot (a private copy) with all its column families."""
    cfs = {n: cf_options() for n in Rdict.list_cf(path, cf_options()) if n != "default"}
    return Rdict(path, db_options(), column_families=cfs)


@contextlib.contextmanager
def opened_snapshot(sp: Savepoint, files: Iterable[DataFile]) -> Iterator[Rdict]:
    """One subtask's database of *sp*, fetched (verified) into a temporary copy and opened."""
    with scratch_dir("rocksdb-copy") as tmp:
        download(sp, files, tmp)
        db = open_snapshot_db(tmp)
        try:
            yield db
        finally:
            db.close()
            del db


def read_entries(db: Rdict, states: Iterable[KeyedStateDescriptor], layout: KeyLayout,
                 first: int, last: int, timers: bool = True) -> Iterator[tuple]:
    """Decoded entries of key groups ``first..last`` of an open database: those of
    *states*, ``("state", name, kns, value)``, one state after another in key order;
    then (with *timers*) ``("timer", domain, kg, ts, key_ns)``."""
    present = set(Rdict.list_cf(db.path(), cf_options()))
    lo, hi = first.to_bytes(2, "big"), successor(last.to_bytes(2, "big"))
    for desc in states:
        name = state_cf(desc.name)
        if name in present:
            for kns, value in RocksTable(db.get_column_family(name), desc, layout).scan(first, last):
                yield "state", desc.name, kns, value
    if timers and TIMERS_CF in present:
        for k, _ in iter_prefix(db.get_column_family(TIMERS_CF), lo, hi):
            kg, domain, ts, _, _ = split_timer(layout, k)
            yield "timer", domain, kg, ts, k[TIMER_HEAD:]


def range_entries(sp: Savepoint, op: Operator, states: Iterable[KeyedStateDescriptor],
                  layout: KeyLayout, first: int, last: int) -> Iterator[tuple]:
    """The entries of key groups ``first..last`` from every database of *op* holding some
    (a restore at another parallelism), as :func:`read_entries` gives them."""
    states = tuple(states)
    for (lo, hi), files in sorted(subtask_databases(op).items()):
        if hi < first or lo > last:
            continue
        with opened_snapshot(sp, files) as db:
            yield from read_entries(db, states, layout, first, last)
