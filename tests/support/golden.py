"""The golden savepoints of statectl's own formats, `tests/fixtures/golden/`: their input and
their generator.

Run ``python tests/support/golden.py`` to regenerate them. Regenerate ONLY for a deliberate
change of the format, together with a new ``format_version`` in `docs/FORMAT.md` (§2) and an
entry saying what changed: the goldens exist so that a change to both the encoder and the
decoder of a format cannot pass unnoticed, and regenerating them to make
`tests/statefmt/test_golden.py` pass again defeats them. (A new pyarrow or RocksDB release
that writes other bytes for the same content is not a format change: see the test module for
what is pinned exactly and what is compared by content.)

Two savepoints hold the same state (the input below, fixed values only):

* ``canonical``: every operator in the canonical Parquet format (FORMAT.md §8);
* ``rocksdb``: the keyed operators in the native RocksDB format (§11-12), one database per
  subtask, written by the job-side RocksDB backend (`statectl.backends`); operator states are
  canonical Parquet files, as §12 says.

Operators: ``proc`` keyed by (``user`` string, ``shard`` int32) with a window namespace, value,
list, map, reducing and aggregating state, a struct value covering int8, float32, binary,
date32, both timestamps and decimal, nulls at every level, event and processing timers,
parallelism 2 over 8 key groups; ``ids`` keyed by (``id`` int64, ``tag`` binary) without a
namespace, parallelism 1 over 4 key groups, with timers; ``src`` with an operator list state,
a union list state and a broadcast state at parallelism 2.

Beside each savepoint the generator writes, from the INPUT (never by reading the savepoint
back, which would pin the decoder's bugs):

* ``expected.json``: every table of every operator, its columns (Arrow types) and its rows
  (:func:`jsonable`), with ``_key_group`` computed by the key hash of FORMAT.md §6;
* ``files.json``: the SHA-256 of every file of the savepoint, ``_metadata`` included, and the
  pyarrow and rocksdict versions that wrote them;
* ``entries.json`` (``rocksdb`` only): every entry of every column family of every database,
  key and value bytes in hex, encoded from the input by §11's rules (and checked, before
  anything is written, against the entries RocksDB actually holds).

Ids and times are pinned: the savepoint ids and ``created_at`` below, and (in the generator
only) ``uuid.uuid4``, so that the random tokens in file names are the same on every run.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import itertools
import json
import shutil
import sys
import tempfile
import uuid
from decimal import Decimal
from pathlib import Path

import pyarrow as pa

if __name__ == "__main__":  # run as a script: `support` is this file's folder
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from statectl.statefmt.build import write_keyed_files, write_operator_state_file
from statectl.statefmt.fs import Location
from statectl.statefmt.ids import operator_id_for_uid
from statectl.statefmt.keygroups import key_group_for_key, key_group_range
from statectl.statefmt.model import (
    Field,
    KeyedSection,
    KeyedStateDescriptor,
    Operator,
    OperatorState,
    Savepoint,
)
from statectl.statefmt.formats import commit
from statectl.statefmt.types import from_arrow, to_arrow

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "golden"
NAMES = ("canonical", "rocksdb")

SAVEPOINT_IDS = {"canonical": "00000000-0000-4000-8000-00000000c001",
                 "rocksdb": "00000000-0000-4000-8000-00000000d001"}
CREATED_AT = "2024-05-01T12:00:00Z"

UTC = dt.timezone.utc
TS_UTC = {"timestamp": {"unit": "us", "tz": "UTC"}}
TS_LOCAL = {"timestamp": {"unit": "us", "tz": None}}
DECIMAL = {"decimal": {"precision": 10, "scale": 2}}
WINDOW = {"struct": [{"name": "start", "type": "int64"}, {"name": "end", "type": "int64"}]}
MISC = {"struct": [{"name": "small", "type": "int8"}, {"name": "ratio", "type": "float32"},
                   {"name": "blob", "type": "binary"}, {"name": "day", "type": "date32"},
                   {"name": "seen", "type": TS_UTC}, {"name": "local", "type": TS_LOCAL},
                   {"name": "price", "type": DECIMAL}]}
ACC = {"struct": [{"name": "sum", "type": "float64"}, {"name": "n", "type": "int64"}]}

# --- proc: keyed by (user, shard), window namespace, parallelism 2 of 8 key groups ---------

PROC_P, PROC_MAX_P = 2, 8
PROC_SECTION = KeyedSection(
    key=(Field("user", "string"), Field("shard", "int32")),
    states=(
        KeyedStateDescriptor("count", "value", "int64"),
        KeyedStateDescriptor("flag", "value", "bool"),
        KeyedStateDescriptor("misc", "value", MISC),
        KeyedStateDescriptor("events", "list", "string"),
        KeyedStateDescriptor("attrs", "map", "int64", user_key_type="string"),
        KeyedStateDescriptor("total", "reducing", "float64", function="sum"),
        KeyedStateDescriptor("mean", "aggregating", ACC, function="avg"),
    ),
    namespace_type=WINDOW,
)
T0 = dt.datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
LONG = "x" * 130  # a string longer than 127 bytes: a two-byte varint length (§11.1)


def _misc(small, ratio, blob, day, seen, local, price):
    return {"small": small, "ratio": ratio, "blob": blob, "day": day, "seen": seen,
            "local": local, "price": price}


# user, shard, namespace, count, flag, misc, events, attrs, total, mean.
# Every row has a value in some state and no empty list or map: in the RocksDB format an
# empty list or map is no entry (§11.3), and a (key, namespace) without entries is no row.
PROC_ROWS = [
    ("alice", 0, None, 3, True,
     _misc(-128, 0.5, b"\x00\xff", dt.date(1969, 12, 31), T0, dt.datetime(2024, 5, 1, 14, 0),
           Decimal("-1.50")),
     ["a", None, LONG], [("x", 1), ("y", None)], 1.5, {"sum": 3.0, "n": 2}),
    ("alice", 0, {"start": 0, "end": 10}, -5, None, None, ["w"], None, None, None),
    ("alice", 1, {"start": 10, "end": 20}, None, False,
     _misc(127, -0.25, b"", dt.date(2020, 2, 29), dt.datetime(1969, 12, 31, 23, 59, 59, 999999,
                                                               tzinfo=UTC), None, Decimal("0.00")),
     None, [("z", -7)], None, {"sum": -1.0, "n": 1}),
    ("bob", 7, None, 0, False, _misc(None, None, None, None, None, None, None),
     None, None, 0.0, None),
    ("zoë", -3, None, 9223372036854775807, True,
     _misc(0, 1.75, b"\x01", dt.date(2000, 1, 1), T0 + dt.timedelta(microseconds=1),
           dt.datetime(1970, 1, 1), Decimal("99999999.99")),
     ["é"], [("ü", 9223372036854775807)], -2.25, {"sum": 0.0, "n": 0}),
    ("carol", 2, {"start": -10, "end": 0}, -9223372036854775808, None, None, None, None,
     4.25, None),
    ("dave", 0, None, None, None, None, ["d1", "d2"], None, None, {"sum": 7.5, "n": 3}),
    ("erin", 1, {"start": 0, "end": 10}, 42, True, None, None, [("k", 0)], None, None),
]
# Canonical only: empty list and map, every other state null (a row the RocksDB format has not).
PROC_CANONICAL_ROWS = [
    ("frank", 5, None, None, None, None, [], [], None, None),
]
# user, shard, namespace, timestamp (ms), domain
PROC_TIMERS = [
    ("alice", 0, None, 1_000, "event"),
    ("alice", 0, {"start": 0, "end": 10}, 9, "event"),
    ("alice", 0, {"start": 0, "end": 10}, 1_714_564_800_000, "processing"),
    ("bob", 7, None, 0, "processing"),
    ("zoë", -3, None, -1, "event"),
    ("erin", 1, {"start": 0, "end": 10}, 9, "event"),
]

# --- ids: keyed by (id, tag), no namespace, parallelism 1 of 4 key groups -------------------

IDS_P, IDS_MAX_P = 1, 4
IDS_SECTION = KeyedSection(
    key=(Field("id", "int64"), Field("tag", "binary")),
    states=(KeyedStateDescriptor("name", "value", "string"),
            KeyedStateDescriptor("hits", "list", "int32")),
)
IDS_ROWS = [
    (1, b"a", "one", [1, None, -1]),
    (2, b"", None, [2147483647]),
    (-3, b"\x00\x01", "", None),
    (4, b"d", "four", [-2147483648, 0]),
]
IDS_TIMERS = [(1, b"a", 5, "processing"), (4, b"d", 5, "event"), (4, b"d", 6, "event")]

# --- src: operator list, union and broadcast state, parallelism 2 ---------------------------

SRC_P, SRC_MAX_P = 2, 128
RULE = {"struct": [{"name": "pattern", "type": "string"}, {"name": "weight", "type": "int32"}]}
OFFSETS = OperatorState("offsets", "list", "int64")
MEMBERS = OperatorState("members", "union", "string")
RULES = OperatorState("rules", "broadcast", RULE, key_type="string")
OFFSETS_ROWS = [(0, 10), (0, -11), (1, None), (1, 9_000_000_000)]  # (subtask, value)
MEMBERS_ROWS = [(0, "a"), (1, "b"), (1, None)]
RULES_ROWS = [("r1", {"pattern": "a*", "weight": 1}), ("r2", {"pattern": "b?", "weight": None}),
              ("r3", None)]


# --- the input as Arrow tables ----------------------------------------------------------------

def _names_types(section: KeyedSection, timers: bool) -> tuple[list, list]:
    names = section.key_names + (["namespace"] if section.namespace_type else [])
    types = section.key_types + ([section.namespace_type] if section.namespace_type else [])
    if timers:
        return names + ["timestamp", "domain"], types + ["int64", "string"]
    return (names + [s.name for s in section.states],
            types + [s.column_type for s in section.states])


def _table(names, types, rows) -> pa.Table:
    return pa.table({n: pa.array([r[i] for r in rows], to_arrow(t))
                     for i, (n, t) in enumerate(zip(names, types))})


def keyed_table(section: KeyedSection, rows, timers: bool = False) -> pa.Table:
    """The keyed (or timer) rows of *section* as the writer takes them (no ``_key_group``)."""
    return _table(*_names_types(section, timers), rows)


def operator_state_table(state: OperatorState, rows) -> pa.Table:
    if state.kind == "broadcast":
        return _table(["key", "value"], [state.key_type, state.value_type], rows)
    return _table(["subtask", "value"], ["int32", state.value_type], rows)


def proc_rows(name: str) -> list:
    return PROC_ROWS + (PROC_CANONICAL_ROWS if name == "canonical" else [])


# --- writing ------------------------------------------------------------------------------------

def _keyed(out: Location, uid: str, section: KeyedSection, rows, timers, p: int, max_p: int
           ) -> KeyedSection:
    op_id = operator_id_for_uid(uid)
    files = write_keyed_files(out, op_id, section, keyed_table(section, rows), max_p, p)
    timer_files = write_keyed_files(out, op_id, section, keyed_table(section, timers, True),
                                    max_p, p, timers=True)
    return KeyedSection(section.key, section.states, files, timer_files, section.namespace_type)


def _operator_state(out: Location, state: OperatorState, rows) -> OperatorState:
    f = write_operator_state_file(out, operator_id_for_uid("src"), state,
                                  operator_state_table(state, rows))
    return OperatorState(state.name, state.kind, state.value_type, (f,), state.key_type)


def _canonical_savepoint(path, name: str, savepoint_id: str, created_at: str,
                         with_src: bool = True) -> Savepoint:
    out = Location.of(str(path))
    operators = [
        Operator(operator_id_for_uid("proc"), "proc", PROC_P, PROC_MAX_P,
                 _keyed(out, "proc", PROC_SECTION, proc_rows(name), PROC_TIMERS, PROC_P, PROC_MAX_P)),
        Operator(operator_id_for_uid("ids"), "ids", IDS_P, IDS_MAX_P,
                 _keyed(out, "ids", IDS_SECTION, IDS_ROWS, IDS_TIMERS, IDS_P, IDS_MAX_P)),
    ]
    if with_src:
        operators.append(Operator(operator_id_for_uid("src"), "src", SRC_P, SRC_MAX_P, None, (
            _operator_state(out, OFFSETS, OFFSETS_ROWS),
            _operator_state(out, MEMBERS, MEMBERS_ROWS),
            _operator_state(out, RULES, RULES_ROWS))))
    return commit(Savepoint(savepoint_id, created_at, tuple(operators)), out)


def write_canonical(path, savepoint_id: str = SAVEPOINT_IDS["canonical"],
                    created_at: str = CREATED_AT) -> Savepoint:
    """The canonical golden savepoint, written at *path* by today's canonical writer."""
    return _canonical_savepoint(path, "canonical", savepoint_id, created_at)


def write_rocksdb(path, savepoint_id: str = SAVEPOINT_IDS["rocksdb"]) -> Savepoint:
    """The rocksdb golden savepoint, written at *path* by today's RocksDB backend: each keyed
    subtask restores its key groups from a canonical savepoint of the input (a scratch copy,
    removed afterwards) and snapshots natively; ``src``'s subtasks add their operator states.
    ``created_at`` is the commit's clock (the generator pins it)."""
    from statectl.backends import RocksDBBackend, commit_snapshots

    snapshots, backends = [], []
    with tempfile.TemporaryDirectory(prefix="golden-source-") as tmp:
        source = _canonical_savepoint(Path(tmp) / "source", "rocksdb", "source", CREATED_AT,
                                      with_src=False)
        try:
            for uid, p in (("proc", PROC_P), ("ids", IDS_P)):
                for i in range(p):
                    b = RocksDBBackend.restore(source, uid, subtask=i, parallelism=p)
                    backends.append(b)
                    snapshots.append(b.snapshot(str(path), format="rocksdb"))
            for i in range(SRC_P):
                b = RocksDBBackend.create("src", subtask=i, parallelism=SRC_P,
                                          max_parallelism=SRC_MAX_P)
                backends.append(b)
                offsets = b.operator_list_state("offsets", OFFSETS.value_type)
                offsets.update([v for s, v in OFFSETS_ROWS if s == i])
                members = b.union_list_state("members", MEMBERS.value_type)
                members.update([v for s, v in MEMBERS_ROWS if s == i])
                rules = b.broadcast_state("rules", RULES.key_type, RULES.value_type)
                for k, v in RULES_ROWS:
                    rules.put(k, v)
                snapshots.append(b.snapshot(str(path)))
        finally:
            for b in backends:
                b.close()
    return commit_snapshots(str(path), snapshots, savepoint_id=savepoint_id)


# --- the expected content, from the input -------------------------------------------------------

def jsonable(value, t: pa.DataType):
    """*value* (as Arrow's ``to_pylist`` gives it) of Arrow type *t* as plain JSON, the same for
    the input and for a table read back: bytes, decimals, dates and times tagged as strings."""
    if value is None:
        return None
    if pa.types.is_struct(t):
        return {t.field(i).name: jsonable(value[t.field(i).name], t.field(i).type)
                for i in range(t.num_fields)}
    if pa.types.is_map(t):
        return [[jsonable(k, t.key_type), jsonable(v, t.item_type)] for k, v in value]
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return [jsonable(v, t.value_type) for v in value]
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return "bytes:" + bytes(value).hex()
    if pa.types.is_decimal(t):
        return f"decimal:{value}"
    if pa.types.is_date(t):
        return f"date:{value.isoformat()}"
    if pa.types.is_timestamp(t):
        if t.tz is None:
            return f"timestamp_ntz:{value.isoformat()}"
        return f"timestamp:{value.astimezone(UTC).isoformat()}"
    if pa.types.is_floating(t):
        return float(value)
    return value


def table_rows(table: pa.Table) -> list:
    """The rows of *table* as :func:`jsonable` dicts, sorted by their JSON text (row order is not
    part of the format: ties within a key group may come in any order)."""
    rows = [{n: jsonable(v, table.schema.field(n).type) for n, v in row.items()}
            for row in table.to_pylist()]
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True))


def columns(table: pa.Table) -> list:
    """The columns of *table* with their logical types (FORMAT.md §4): Arrow's names for a
    list's or map's inner fields are no part of the format."""
    return [[f.name, from_arrow(f.type)] for f in table.schema]


def _with_key_groups(section: KeyedSection, table: pa.Table, max_p: int) -> pa.Table:
    keys = zip(*(table.column(n).to_pylist() for n in section.key_names))
    groups = [key_group_for_key(k, section.key_types, max_p) for k in keys]
    return table.add_column(0, pa.field("_key_group", pa.int32(), nullable=False),
                            pa.array(groups, pa.int32()))


def expected_tables(name: str) -> dict[str, dict[str, pa.Table]]:
    """Every table of every operator of golden *name*, built from the input alone."""
    def keyed(section, rows, timers, max_p):
        return {"keyed": _with_key_groups(section, keyed_table(section, rows), max_p),
                "timers": _with_key_groups(section, keyed_table(section, timers, True), max_p)}

    return {
        "proc": keyed(PROC_SECTION, proc_rows(name), PROC_TIMERS, PROC_MAX_P),
        "ids": keyed(IDS_SECTION, IDS_ROWS, IDS_TIMERS, IDS_MAX_P),
        "src": {s.name: operator_state_table(s, rows) for s, rows in
                ((OFFSETS, OFFSETS_ROWS), (MEMBERS, MEMBERS_ROWS), (RULES, RULES_ROWS))},
    }


def expected_json(name: str) -> dict:
    return {uid: {table: {"columns": columns(t), "rows": table_rows(t)}
                  for table, t in tables.items()}
            for uid, tables in expected_tables(name).items()}


# --- the RocksDB entries (§11), from the input -------------------------------------------------

def expected_entries() -> dict:
    """``{uid: {"first-last": {column family: [[key hex, value hex], ...]}}}``: the entries of
    each subtask's database, encoded from the input by §11.3's rules, sorted by key."""
    from statectl.statefmt.rocksdb.codec import KeyLayout, ValueCodec, key_group_prefix, timer_key

    out = {}
    for uid, section, rows, timers, p, max_p in (
            ("proc", PROC_SECTION, PROC_ROWS, PROC_TIMERS, PROC_P, PROC_MAX_P),
            ("ids", IDS_SECTION, IDS_ROWS, IDS_TIMERS, IDS_P, IDS_MAX_P)):
        layout = KeyLayout(section.key_types, section.namespace_type)
        n_key = len(section.key) + (1 if section.namespace_type else 0)
        dbs = {key_group_range(max_p, p, i): {} for i in range(p)}

        def family(kg, cf):
            rng = next(r for r in dbs if r[0] <= kg <= r[1])
            return dbs[rng].setdefault(cf, [])

        def kns(row):
            key = tuple(row[:len(section.key)])
            ns = row[len(section.key)] if section.namespace_type else None
            kg = key_group_for_key(key, section.key_types, max_p)
            return kg, layout.key_bytes(key) + layout.namespace_bytes(ns)

        for row in rows:
            kg, key_ns = kns(row)
            entry_key = key_group_prefix(kg) + key_ns
            for s, value in zip(section.states, row[n_key:]):
                cf = f"state:{s.name}"
                if value is None:
                    continue
                if s.kind == "map":
                    k_codec, v_codec = ValueCodec(s.user_key_type), ValueCodec(s.value_type, True)
                    for k, v in value:
                        family(kg, cf).append((entry_key + k_codec.encode(k), v_codec.encode(v)))
                elif s.kind == "list":
                    codec = ValueCodec(s.value_type, True)
                    family(kg, cf).append((entry_key, b"".join(codec.encode(v) for v in value)))
                else:
                    family(kg, cf).append((entry_key, ValueCodec(s.value_type).encode(value)))
        for row in timers:
            kg, key_ns = kns(row)
            ts, domain = row[-2], row[-1]
            family(kg, "timers").append((timer_key(kg, domain, ts, key_ns), b""))
        out[uid] = {f"{lo}-{hi}": {cf: [[k.hex(), v.hex()] for k, v in sorted(entries)]
                                   for cf, entries in sorted(cfs.items())}
                    for (lo, hi), cfs in dbs.items()}
    return out


def database_entries(sp: Savepoint, uid: str) -> dict:
    """The raw entries RocksDB holds in each database of operator *uid* of *sp* (rocksdict
    iterating bytes: no statectl decoding), as :func:`expected_entries` gives them."""
    from rocksdict import Options, Rdict

    from statectl.statefmt.rocksdb.files import download, subtask_databases

    out = {}
    for (lo, hi), files in sorted(subtask_databases(sp.operator(uid)).items()):
        with tempfile.TemporaryDirectory(prefix="golden-db-") as tmp:
            download(sp, files, tmp)
            names = [n for n in Rdict.list_cf(tmp, Options(raw_mode=True)) if n != "default"]
            db = Rdict(tmp, Options(raw_mode=True),
                       column_families={n: Options(raw_mode=True) for n in names})
            try:
                found = {}
                for n in sorted(names):
                    cf = db.get_column_family(n)
                    items = [[k.hex(), v.hex()] for k, v in cf.items()]
                    del cf
                    if items:
                        found[n] = items
                out[f"{lo}-{hi}"] = found
            finally:
                db.close()
                del db
    return out


# --- files --------------------------------------------------------------------------------------

def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def file_digests(savepoint_dir: Path) -> dict[str, str]:
    """``{relative path: sha256}`` of every file below *savepoint_dir*."""
    return {p.relative_to(savepoint_dir).as_posix(): sha256(p)
            for p in sorted(savepoint_dir.rglob("*")) if p.is_file()}


@contextlib.contextmanager
def pinned_ids():
    """``uuid.uuid4`` counting from 1 and the commit's clock at :data:`CREATED_AT`, for the
    generator only: file-name tokens and times are then the same on every run."""
    import statectl.backends.snapshot as snapshot_module

    counter = itertools.count(1)
    saved_uuid4, saved_now = uuid.uuid4, snapshot_module.now_iso
    # the counter in the top 48 bits: file names take the first 12 hex digits
    uuid.uuid4 = lambda: uuid.UUID(int=next(counter) << 80, version=4)
    snapshot_module.now_iso = lambda: CREATED_AT
    try:
        yield
    finally:
        uuid.uuid4, snapshot_module.now_iso = saved_uuid4, saved_now


def _dump(path: Path, doc) -> None:
    path.write_text(json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False) + "\n",
                    encoding="utf-8")


def generate(root: Path = GOLDEN) -> None:
    from importlib.metadata import version

    for name in NAMES:
        shutil.rmtree(root / name, ignore_errors=True)
        (root / name).mkdir(parents=True)
        target = root / name / "savepoint"
        with pinned_ids():
            sp = write_canonical(target) if name == "canonical" else write_rocksdb(target)
        if name == "rocksdb":
            entries = expected_entries()
            written = {uid: database_entries(sp, uid) for uid in entries}
            if written != entries:
                raise SystemExit("the RocksDB backend wrote other entries than §11 gives for the "
                                 "input: a format bug; nothing is committed")
            _dump(root / name / "entries.json", entries)
        _dump(root / name / "expected.json", expected_json(name))
        _dump(root / name / "files.json", {"pyarrow": pa.__version__,
                                           "rocksdict": version("rocksdict"),
                                           "files": file_digests(target)})


if __name__ == "__main__":
    generate()
    print(f"wrote {', '.join(NAMES)} below {GOLDEN}")
