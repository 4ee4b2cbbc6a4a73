"""The golden savepoints of statectl's own formats (`tests/fixtures/golden/`, written by
`tests/support/golden.py` from fixed input) pin both formats against today's code, so that a
change to an encoder and its decoder together cannot pass as a round trip does.

What is pinned, and how:

* **Rows.** Every table of every operator, read with the local engine and once through Spark,
  is exactly ``expected.json`` (written from the input, not read back), ``_key_group`` and the
  logical column types included; the canonical Parquet files read by pyarrow alone hold the
  same rows (``subtask`` and ``_key_group`` as stored), sorted and within their ranges.
* **Canonical bytes.** Today's writer given the same input writes a ``_metadata`` equal to the
  committed one but for the random token in file names, and data files with the committed
  SHA-256. pyarrow stamps its version in every Parquet footer (``created_by``) and compresses
  with the zstd it bundles, so the exact bytes are compared only under the pyarrow recorded in
  ``files.json``; under any pyarrow, :func:`test_writer_writes_the_committed_parquet` compares
  what does not depend on it: each file's Parquet schema, row groups, column types,
  compression, encodings and statistics, and its rows.
* **RocksDB entries.** A RocksDB database file is not reproducible (RocksDB writes the
  database's id, a session id and creation times into its SST properties, MANIFEST and
  OPTIONS files), so the native format is pinned by its entries: ``entries.json`` holds every
  key and value of every column family of every database, as FORMAT.md §11 encodes the input.
  The committed databases hold exactly those (read raw with rocksdict, no statectl decoding);
  today's backend writes exactly those; the row codec and the column-wise encoder of the Spark
  writer encode the input to exactly those; and a handful of entries spelled out byte by byte
  below from §11 are among them and decode to the input.
* **Integrity.** The committed files have the SHA-256 of ``files.json``, and ``statectl
  validate --deep`` passes on both savepoints.

The last tests show each check can fail: a flipped byte is refused on read and by validate,
and a changed value with consistent checksums is caught by the rows and the entries checks.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
import shutil
import tempfile
from importlib.metadata import version
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from support import golden
from support.cli_runner import statectl
from statectl import OperatorRef, open_savepoint
from statectl.statefmt.errors import IntegrityError
from statectl.statefmt.formats import load
from statectl.statefmt.keygroups import key_group_for_key, key_group_range
from statectl.statefmt.rocksdb import columnar
from statectl.statefmt.rocksdb.codec import KeyLayout, ValueCodec, split_timer, timer_key
from statectl.statefmt.validate import validate
from statectl.statefmt.vocabulary import StateKind

NAMES = golden.NAMES
KEYED_TABLES = ("keyed", "timers")


def _json(name: str, file: str):
    return json.loads((golden.GOLDEN / name / file).read_text(encoding="utf-8"))


def savepoint_dir(name: str) -> Path:
    return golden.GOLDEN / name / "savepoint"


def expected(name: str) -> dict:
    return _json(name, "expected.json")


def metadata(path: Path) -> dict:
    return json.loads((path / "_metadata").read_text(encoding="utf-8"))


def without_subtask(table: dict) -> dict:
    """An operator list or union table as a reader gives it: one copy of every entry, without
    the ``subtask`` column the files store (FORMAT.md §8.3)."""
    if table["columns"][0][0] != "subtask":
        return table
    rows = [{k: v for k, v in r.items() if k != "subtask"} for r in table["rows"]]
    return {"columns": table["columns"][1:],
            "rows": sorted(rows, key=lambda r: json.dumps(r, sort_keys=True))}


def read(reader, uid: str, table: str):
    ref = OperatorRef(uid=uid)
    if table == "keyed":
        return reader.keyed(ref, include_key_group=True)
    if table == "timers":
        return reader.timers(ref, include_key_group=True)
    return reader.operator_state(ref, table)


def assert_reads_as_committed(path: Path, name: str, to_arrow=lambda t: t, reader=None) -> int:
    """Every table of *path* (read with *reader*, by default the local engine) is the
    committed table of golden *name*; the number of rows compared."""
    reader = reader or open_savepoint(str(path))
    total = 0
    for uid, tables in expected(name).items():
        for table, want in tables.items():
            got = to_arrow(read(reader, uid, table))
            want = without_subtask(want)
            assert golden.columns(got) == want["columns"], (name, uid, table)
            assert golden.table_rows(got) == want["rows"], (name, uid, table)
            total += len(want["rows"])
    return total


# --- the committed files --------------------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
def test_committed_files_have_the_committed_digests(name):
    digests = golden.file_digests(savepoint_dir(name))
    assert digests == _json(name, "files.json")["files"]
    doc = metadata(savepoint_dir(name))
    assert doc["format"] == "statectl-savepoint" and doc["format_version"] == 1
    listed = {f["path"]: f["checksum"] for f in _data_files(doc)}
    assert len(listed) == len(digests) - 1  # every file but _metadata is a data file it lists
    assert {p: "sha256:" + digests[p] for p in listed} == listed


def _data_files(doc: dict) -> list[dict]:
    out = []
    for op in doc["operators"]:
        if op.get("keyed"):
            out += op["keyed"]["files"] + op["keyed"]["timers"]
        for s in op.get("operator_states") or ():
            out += s["files"]
    return out


def test_goldens_cover_what_they_claim():
    """Both formats, several subtasks and key groups, every kind of state, both timer domains,
    nulls and the canonical-only empty list and map: so a read that drops any is caught."""
    for name in NAMES:
        doc = metadata(savepoint_dir(name))
        ops = {op["uid"]: op for op in doc["operators"]}
        assert ops["proc"]["format"] == ops["ids"]["format"] == name
        assert ops["proc"]["parallelism"] == 2 and ops["src"]["parallelism"] == 2
        assert {tuple(f["key_groups"]) for f in ops["proc"]["keyed"]["files"]} == {(0, 3), (4, 7)}
        assert {s["kind"] for s in ops["proc"]["keyed"]["states"]} == set(StateKind)
        assert [s["kind"] for s in ops["src"]["operator_states"]] == ["list", "union", "broadcast"]
        tables = expected(name)
        assert {r["domain"] for r in tables["proc"]["timers"]["rows"]} == {"event", "processing"}
        assert len({r["_key_group"] for r in tables["proc"]["keyed"]["rows"]}) >= 4
        assert {r["subtask"] for r in tables["src"]["offsets"]["rows"]} == {0, 1}
    canonical = expected("canonical")["proc"]["keyed"]["rows"]
    assert any(r["events"] == [] and r["attrs"] == [] for r in canonical)


# --- reading ----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
def test_local_read_gives_the_committed_rows(name):
    assert assert_reads_as_committed(savepoint_dir(name), name) >= 30


def test_spark_read_gives_the_committed_rows(spark):
    for name in NAMES:
        reader = open_savepoint(str(savepoint_dir(name)), spark=spark)
        assert assert_reads_as_committed(savepoint_dir(name), name, lambda df: df.toArrow(),
                                         reader) >= 30


def test_canonical_files_hold_the_committed_rows():
    """The stored tables, read by pyarrow alone from the paths `_metadata` gives: ``subtask``
    and ``_key_group`` as stored, keyed and timer files sorted by key group and inside the
    subtask range they declare."""
    for name in NAMES:
        doc, root, want = metadata(savepoint_dir(name)), savepoint_dir(name), expected(name)
        for op in doc["operators"]:
            tables = {}
            if op["format"] == "canonical" and op.get("keyed"):
                tables = {"keyed": op["keyed"]["files"], "timers": op["keyed"]["timers"]}
            tables.update({s["name"]: s["files"] for s in op.get("operator_states") or ()})
            for table, files in tables.items():
                parts = []
                for f in files:
                    part = pq.read_table(root / f["path"])
                    assert part.num_rows == f["rows"]
                    if table in KEYED_TABLES:
                        groups = part.column("_key_group").to_pylist()
                        assert groups == sorted(groups)
                        assert f["key_groups"][0] <= groups[0] and groups[-1] <= f["key_groups"][1]
                    parts.append(part)
                got = pa.concat_tables(parts)
                assert golden.columns(got) == want[op["uid"]][table]["columns"]
                assert golden.table_rows(got) == want[op["uid"]][table]["rows"], (name, table)


@pytest.mark.parametrize("name", NAMES)
def test_validate_deep_passes(name):
    report = validate(str(savepoint_dir(name)), deep=True)
    assert report.valid, report.problems
    assert report.files_checked == len(_data_files(metadata(savepoint_dir(name))))
    done = statectl("validate", "--deep", str(savepoint_dir(name)))
    assert done.returncode == 0, done.stdout + done.stderr


# --- RocksDB entries ----------------------------------------------------------------------------

def test_committed_databases_hold_the_committed_entries():
    sp = load(str(savepoint_dir("rocksdb")))
    entries = _json("rocksdb", "entries.json")
    assert {uid: golden.database_entries(sp, uid) for uid in entries} == entries
    assert sum(len(v) for dbs in entries.values() for cfs in dbs.values()
               for v in cfs.values()) == 47


def test_row_codec_encodes_the_input_to_the_committed_entries():
    assert golden.expected_entries() == _json("rocksdb", "entries.json")


def test_column_encoder_encodes_the_input_to_the_committed_entries():
    """The Spark writer's encoding (`statefmt.rocksdb.columnar`, whole Arrow columns at once,
    as `writers/own/native.py` gives its SST files) of the input tables."""
    from statectl.writers.own.native import _entries

    tables = golden.expected_tables("rocksdb")
    got = {}
    for uid, section, p, max_p in (("proc", golden.PROC_SECTION, golden.PROC_P, golden.PROC_MAX_P),
                                   ("ids", golden.IDS_SECTION, golden.IDS_P, golden.IDS_MAX_P)):
        layout = KeyLayout(section.key_types, section.namespace_type)
        ranges = [key_group_range(max_p, p, i) for i in range(p)]
        dbs = {f"{lo}-{hi}": {} for lo, hi in ranges}

        def add(cf, keys, values, groups):
            values = [b""] * len(keys) if values is None else values.to_pylist()
            for k, v, g in zip(keys.to_pylist(), values, groups):
                lo, hi = next(r for r in ranges if r[0] <= g <= r[1])
                dbs[f"{lo}-{hi}"].setdefault(cf, []).append([k.hex(), v.hex()])

        for table in KEYED_TABLES:
            rows = tables[uid][table]
            groups = rows.column("_key_group").to_numpy()
            kns = columnar.key_ns(layout, [rows.column(n).combine_chunks() for n in section.key_names],
                                  rows.column("namespace").combine_chunks()
                                  if section.namespace_type else None)
            if table == "timers":
                add("timers", columnar.timer_keys(groups, rows.column("domain").combine_chunks(),
                                                  rows.column("timestamp").to_numpy(), kns),
                    None, groups)
                continue
            keys = columnar.join(columnar.key_group_prefixes(groups), kns)
            for state in section.states:
                k, v, g = _entries(state, keys, groups, rows.column(state.name).combine_chunks())
                add(f"state:{state.name}", k, v, g)
        got[uid] = {db: {cf: sorted(e) for cf, e in sorted(cfs.items())} for db, cfs in dbs.items()}
    assert got == _json("rocksdb", "entries.json")


def _h(*parts: str) -> bytes:
    return bytes.fromhex("".join(p.replace(" ", "") for p in parts))


ALICE = "05 616c696365 80000000"                       # "alice" (varint 5 + UTF-8), shard 0
WINDOW_0_10 = "01 01 8000000000000000 01 800000000000000a"  # present; start 0, end 10 (nullable)
# (operator, database, column family, entry key, entry value, decoded: key, namespace, value),
# spelled out from FORMAT.md §11 alone: integers big-endian with the sign bit flipped, floats
# IEEE big-endian, strings and bytes with a varint length, nullable values behind 0x00/0x01.
HAND_ENTRIES = [
    ("proc", "0-3", "state:misc", _h("0002", ALICE, "00"),
     _h("01 00",                              # small int8 -128
        "01 3f000000",                        # ratio float32 0.5
        "01 02 00ff",                         # blob b"\x00\xff"
        "01 7fffffff",                        # day 1969-12-31: -1 day
        "01 8006176339d93000",                # seen 2024-05-01T12:00Z, µs since the epoch
        "01 80061764e7007800",                # local 2024-05-01T14:00, µs
        "01 7fffffffffffffffffffffffffffff6a"),  # price -1.50: unscaled -150, 16 bytes
     (("alice", 0), None, golden.PROC_ROWS[0][5])),
    ("proc", "0-3", "state:events", _h("0002", ALICE, "00"),
     _h("01 01 61", "00", "01 8201", "78" * 130),  # "a", null, 130 x "x" (two-byte varint)
     (("alice", 0), None, ["a", None, golden.LONG])),
    ("proc", "0-3", "state:attrs", _h("0002", ALICE, "00", "01 79"),  # map key "y"
     _h("00"), (("alice", 0), None, None)),
    ("proc", "0-3", "state:count", _h("0000", "05 6361726f6c 80000002",
                                      "01 01 7ffffffffffffff6 01 8000000000000000"),
     _h("0000000000000000"), (("carol", 2), {"start": -10, "end": 0}, -2**63)),
    ("proc", "0-3", "state:mean", _h("0002", ALICE, "00"),
     _h("01 4008000000000000", "01 8000000000000002"), (("alice", 0), None, {"sum": 3.0, "n": 2})),
    ("ids", "0-3", "state:hits", _h("0002 8000000000000001 01 61 00"),
     _h("01 80000001", "00", "01 7fffffff"), ((1, b"a"), None, [1, None, -1])),
    ("ids", "0-3", "state:name", _h("0001 7ffffffffffffffd 02 0001 00"), _h("00"),
     ((-3, b"\x00\x01"), None, "")),
]
# (operator, database, timer key, decoded: key group, domain, timestamp, key, namespace)
HAND_TIMERS = [
    ("proc", "0-3", _h("0002 01 8000018f34069e00", ALICE, WINDOW_0_10),
     (2, "processing", 1_714_564_800_000, ("alice", 0), {"start": 0, "end": 10})),
    ("proc", "0-3", _h("0003 00 7fffffffffffffff 04 7a6fc3ab 7ffffffd 00"),
     (3, "event", -1, ("zoë", -3), None)),
    ("ids", "0-3", _h("0002 00 8000000000000005 8000000000000004 01 64 00"),
     (2, "event", 5, (4, b"d"), None)),
]


def _state(uid: str, cf: str):
    section = golden.PROC_SECTION if uid == "proc" else golden.IDS_SECTION
    return section, next(s for s in section.states if f"state:{s.name}" == cf)


@pytest.mark.parametrize("uid, db, cf, key, value, decoded", HAND_ENTRIES,
                         ids=[f"{e[0]}-{e[2]}" for e in HAND_ENTRIES])
def test_entries_spelled_out_from_the_format(uid, db, cf, key, value, decoded):
    assert [key.hex(), value.hex()] in _json("rocksdb", "entries.json")[uid][db][cf]
    section, state = _state(uid, cf)
    layout = KeyLayout(section.key_types, section.namespace_type)
    (want_key, want_ns, want_value) = decoded
    kg, got_key, got_ns, end = layout.split(key)
    first, last = map(int, db.split("-"))
    assert first <= kg <= last and kg == key_group_for_key(want_key, section.key_types,
                                                           golden.PROC_MAX_P if uid == "proc"
                                                           else golden.IDS_MAX_P)
    assert (got_key, got_ns) == (want_key, want_ns)
    assert key[:2] + layout.key_bytes(want_key) + layout.namespace_bytes(want_ns) == key[:end]
    if state.kind == "map":
        assert ValueCodec(state.value_type, True).decode(value) is want_value
        assert ValueCodec(state.user_key_type).decode(key[end:]) == "y"
    elif state.kind == "list":
        codec, items, pos = ValueCodec(state.value_type, True), [], 0
        while pos < len(value):
            item, pos = codec.decode_at(value, pos)
            items.append(item)
        assert items == want_value
        assert b"".join(codec.encode(v) for v in want_value) == value
    else:
        assert ValueCodec(state.value_type).decode(value) == want_value
        assert ValueCodec(state.value_type).encode(want_value) == value


@pytest.mark.parametrize("uid, db, key, decoded", HAND_TIMERS,
                         ids=[f"{t[0]}-{t[3][1]}" for t in HAND_TIMERS])
def test_timer_keys_spelled_out_from_the_format(uid, db, key, decoded):
    assert [key.hex(), ""] in _json("rocksdb", "entries.json")[uid][db]["timers"]
    section = golden.PROC_SECTION if uid == "proc" else golden.IDS_SECTION
    layout = KeyLayout(section.key_types, section.namespace_type)
    kg, domain, ts, key_values, ns = decoded
    assert split_timer(layout, key) == decoded
    assert timer_key(kg, domain, ts, layout.key_bytes(key_values) + layout.namespace_bytes(ns)) == key


# --- writing: today's writer, the same input ------------------------------------------------------

TOKEN = re.compile(r"-[0-9a-f]{12}(?=\.parquet$|/)")
ROCKSDB_FILE = re.compile(r"^(\d+\.sst|MANIFEST-\d+|OPTIONS-\d+)$")


def normalised(doc: dict, parquet_bytes: bool, rocksdb_sizes: bool) -> dict:
    """*doc* with what must differ between two writes of the same input replaced by
    placeholders: the random token in each file's path (a fresh name per write, so that a
    retried task never overwrites a file another attempt finished: FORMAT.md §10); the
    checksum of RocksDB's own files (SST, MANIFEST, OPTIONS: RocksDB writes the database's id,
    a session id and creation times into them); with *rocksdb_sizes* False (another RocksDB
    release), their sizes and numbered names; with *parquet_bytes* False (another pyarrow),
    the Parquet files' sizes and checksums."""
    doc = copy.deepcopy(doc)
    for f in _data_files(doc):
        f["path"] = TOKEN.sub("-<token>", f["path"])
        if ROCKSDB_FILE.match(f.get("name") or ""):
            f["checksum"] = "<rocksdb>"
            if not rocksdb_sizes:
                f["size"], f["name"] = "<rocksdb>", re.sub(r"\d+", "<n>", f["name"])
                f["path"] = re.sub(r"[^/]+$", f["name"], f["path"])
        elif f["path"].endswith(".parquet") and not parquet_bytes:
            f["size"] = f["checksum"] = "<pyarrow>"
    return doc


def _file_pairs(name: str, rewritten: Path) -> list[tuple[dict, dict]]:
    """(committed, rewritten) entry of each data file, in `_metadata` order (which
    :func:`test_writer_writes_the_committed_metadata` checks is the same)."""
    old, new = _data_files(metadata(savepoint_dir(name))), _data_files(metadata(rewritten / name))
    assert [TOKEN.sub("-<token>", f["path"]) for f in old] == \
        [TOKEN.sub("-<token>", f["path"]) for f in new]
    return list(zip(old, new))


def _same_pyarrow(name: str) -> bool:
    return _json(name, "files.json")["pyarrow"] == pa.__version__


def _same_rocksdict() -> bool:
    return _json("rocksdb", "files.json")["rocksdict"] == version("rocksdict")


@pytest.fixture(scope="module")
def rewritten(tmp_path_factory):
    """Both goldens written again by today's writers from the same input, with the committed
    savepoint ids and (where the API takes it) creation time."""
    base = tmp_path_factory.mktemp("golden-rewrite")
    golden.write_canonical(base / "canonical")
    golden.write_rocksdb(base / "rocksdb")
    return base


@pytest.mark.parametrize("name", NAMES)
def test_writer_writes_the_committed_metadata(rewritten, name):
    new, old = metadata(rewritten / name), metadata(savepoint_dir(name))
    if name == "rocksdb":  # commit_snapshots takes the commit's time from the clock
        assert new["created_at"] != old["created_at"]
        new["created_at"] = old["created_at"]
    same = _same_pyarrow(name)
    assert normalised(new, same, _same_rocksdict()) == normalised(old, same, _same_rocksdict())


def parquet_layout(path: Path) -> dict:
    """What a Parquet file's footer says, but for what the writing library's version may
    change: its name (``created_by``), and the byte offsets and sizes of compressed data."""
    meta = pq.ParquetFile(path).metadata.to_dict()
    meta.pop("created_by")
    meta.pop("serialized_size")
    for rg in meta["row_groups"]:
        rg.pop("total_byte_size")
        for col in rg["columns"]:
            for key in [k for k in col if k.endswith("_offset") or k.startswith("total_")]:
                col.pop(key)
    return {"meta": meta, "arrow_schema": pq.read_schema(path).to_string(show_schema_metadata=False),
            "rows": golden.table_rows(pq.read_table(path))}


@pytest.mark.parametrize("name", NAMES)
def test_writer_writes_the_committed_parquet(rewritten, name):
    """Every Parquet file again with the committed layout and rows; under the pyarrow that wrote
    the goldens, with the committed bytes too (pyarrow stamps its version in the footer and
    compresses with the zstd it bundles, so other bytes are expected under another release)."""
    pairs = [(old, new) for old, new in _file_pairs(name, rewritten)
             if old["path"].endswith(".parquet")]
    assert len(pairs) == (9 if name == "canonical" else 5)
    same_pyarrow = _json(name, "files.json")["pyarrow"] == pa.__version__
    for old, new in pairs:
        layout = parquet_layout(savepoint_dir(name) / old["path"])
        assert layout["meta"]["row_groups"][0]["columns"][0]["compression"] == "ZSTD"
        assert parquet_layout(rewritten / name / new["path"]) == layout, old["path"]
        if same_pyarrow:
            digest = hashlib.sha256((rewritten / name / new["path"]).read_bytes()).hexdigest()
            assert digest == _json(name, "files.json")["files"][old["path"]], old["path"]


def test_rocksdb_writer_writes_the_committed_entries(rewritten):
    sp = load(str(rewritten / "rocksdb"))
    entries = _json("rocksdb", "entries.json")
    assert {uid: golden.database_entries(sp, uid) for uid in entries} == entries


# --- each check can fail --------------------------------------------------------------------------

def _copy(name: str, tmp_path: Path) -> Path:
    out = tmp_path / name
    shutil.copytree(savepoint_dir(name), out)
    return out


def _flip(path: Path, at: int | None = None) -> None:
    data = bytearray(path.read_bytes())
    at = len(data) // 2 if at is None else at
    data[at] ^= 0x01
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("name, suffix", [("canonical", ".parquet"), ("rocksdb", ".sst")])
def test_a_flipped_byte_is_caught(tmp_path, name, suffix):
    path = _copy(name, tmp_path)
    doc = metadata(path)
    target = next(f for f in doc["operators"][0]["keyed"]["files"] if f["path"].endswith(suffix))
    _flip(path / target["path"])
    assert golden.file_digests(path) != _json(name, "files.json")["files"]
    with pytest.raises(IntegrityError, match="checksum mismatch"):
        open_savepoint(str(path)).keyed(OperatorRef(uid=doc["operators"][0]["uid"]))
    report = validate(str(path), deep=True)
    assert not report.valid and any("checksum" in p for p in report.problems), report.problems


def _relist(path: Path, doc: dict, changed: dict[str, dict]) -> None:
    """Write *doc* to `_metadata` with the files of *changed* (path -> new entry) replaced."""
    op = next(op for op in doc["operators"] if op.get("keyed")
              and any(f["path"] in changed for f in op["keyed"]["files"]))
    op["keyed"]["files"] = [f for f in op["keyed"]["files"] if f["path"] not in changed] \
        + [v for v in changed.values() if v is not None]
    (path / "_metadata").write_text(json.dumps(doc, indent=1), encoding="utf-8")


def test_a_changed_value_with_consistent_checksums_fails_the_rows_check(tmp_path):
    """A canonical file rewritten with one value changed and its size and checksum updated in
    `_metadata` reads and validates, but not as the committed rows."""
    path = _copy("canonical", tmp_path)
    doc = metadata(path)
    entry = next(f for f in doc["operators"][0]["keyed"]["files"])
    file = path / entry["path"]
    table = pq.read_table(file)
    counts = table.column("count").to_pylist()
    i = next(i for i, c in enumerate(counts) if c is not None and c < 2**62)
    counts[i] += 1
    table = table.set_column(table.schema.get_field_index("count"), table.schema.field("count"),
                             pa.array(counts, pa.int64()))
    pq.write_table(table, file, compression="zstd")
    data = file.read_bytes()
    _relist(path, doc, {entry["path"]: {**entry, "size": len(data),
                                        "checksum": "sha256:" + hashlib.sha256(data).hexdigest()}})
    assert validate(str(path), deep=True).valid
    with pytest.raises(AssertionError):
        assert_reads_as_committed(path, "canonical")
    assert golden.file_digests(path) != _json("canonical", "files.json")["files"]


def test_a_changed_entry_with_consistent_checksums_fails_the_entries_and_rows_checks(tmp_path):
    """A RocksDB database of the golden with one entry's value changed (through RocksDB, a new
    checkpoint uploaded and listed in `_metadata`) reads and validates, but holds other entries
    and other rows than the committed ones."""
    from rocksdict import Checkpoint, Options, Rdict

    from statectl.statefmt.fs import Location
    from statectl.statefmt.rocksdb.files import download, subtask_databases, upload_checkpoint

    path = _copy("rocksdb", tmp_path)
    sp = load(str(path))
    proc = sp.operator("proc")
    files = subtask_databases(proc)[(0, 3)]
    key = _h("0002", ALICE, "00")
    with tempfile.TemporaryDirectory() as tmp:
        download(sp, files, f"{tmp}/db")
        names = [n for n in Rdict.list_cf(f"{tmp}/db", Options(raw_mode=True)) if n != "default"]
        db = Rdict(f"{tmp}/db", Options(raw_mode=True),
                   column_families={n: Options(raw_mode=True) for n in names})
        cf = db.get_column_family("state:count")
        assert cf[key] == _h("8000000000000003")
        cf[key] = _h("8000000000000004")  # 3 -> 4
        del cf
        Checkpoint(db).create_checkpoint(f"{tmp}/checkpoint")
        db.close()
        del db
        new, _ = upload_checkpoint(f"{tmp}/checkpoint", Location.of(str(path)), proc.operator_id,
                                   (0, 3), {}, folder=f"{proc.operator_id}/rocksdb-0-3-changed")
    changed = {f.ref.path: None for f in files}
    changed.update({f.ref.path: {"path": f.ref.path, "size": f.size, "checksum": f.checksum,
                                 "rows": f.rows, "key_groups": list(f.key_groups), "name": f.name}
                    for f in new})
    _relist(path, metadata(path), changed)
    assert validate(str(path), deep=True).valid
    found = golden.database_entries(load(str(path)), "proc")
    assert found != _json("rocksdb", "entries.json")["proc"]
    with pytest.raises(AssertionError):
        assert_reads_as_committed(path, "rocksdb")
