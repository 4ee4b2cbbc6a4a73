"""`rescale` of DataStream operators whose states statectl cannot encode: their entries move as
their bytes (`statefmt/flink/regroup.py`), only each key decoded to place it.

The realworld fixtures' job (Flink 2.3, hashmap canonical and RocksDB native) holds Kryo values,
POJOs with Kryo fields, CEP's NFA and shared buffer, interval-join buffers and session windows.
Rescaled to max parallelism 256 and back to 128, each step keeps every keyed operator's header as
the base's (its serializer snapshots as Flink wrote them), every entry's key (without its
key-group prefix), namespace, user key and value bytes, and reads the same rows (Kryo states as
their bytes), each entry in the key group Flink's hash of its key gives at the new max parallelism.
A fix of another state of such an operator (`bootstrap --base`) never loses one it cannot write.
The suite's job with a Kryo-typed state (knob `states=composite,kryo`) rescaled to 256 restores in
Flink into both backends with exactly the job's state.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest

from statectl.statefmt.errors import FlinkFormatError
from statectl.statefmt.flink.keyhash import flink_key_groups
from statectl.statefmt.flink.model import java_key_type
from statectl.statefmt.flink.regroup import regrouped_entries
from statectl.statefmt.flink.savepoint import keyed_table, open_flink_savepoint, raw_entries, timers_table
from statectl.statefmt.flink.stream_write import KEY, KEY_GROUP, StreamState, row_schema, value_column
from statectl.statefmt.flink.types import Buf
from support import flink_job
from support.cli_runner import statectl
from support.savepoint_rows import digest

REALWORLD = Path(__file__).parents[1] / "fixtures" / "flink-realworld-dev"
FIXTURES = ("realworld-hashmap-canonical", "realworld-rocksdb-native")
OPAQUE_OPERATORS = ("kryo-proc", "cep", "interval-join", "session-win")
KRYO_JOB = dict(backend="rocksdb", format="canonical", key_type="string", states="composite,kryo")


def _ok(result) -> None:
    assert result.returncode == 0, result.stderr


def _schema(header) -> pa.Schema:
    return row_schema([StreamState(m.name, m.kind, m.name) for m in header.states])


@pytest.mark.parametrize("name", FIXTURES)
def test_entries_get_their_keys_flink_groups_and_keep_their_bytes(name):
    """No Spark: each entry row of a DataStream operator's split holds the entry's key and value
    bytes as they were, in the key group Flink's hash of its decoded key gives at 256."""
    sp = open_flink_savepoint(REALWORLD / name / "savepoint")
    for uid in OPAQUE_OPERATORS:
        op = sp.operator(uid)
        java, rows = java_key_type(op.keyed_header.key, uid), 0
        for split in op.keyed_splits:
            for header, raw in raw_entries(split):
                table = regrouped_entries(header, raw, _schema(header), 256)
                for state_id, e in raw.items():
                    mine = table.filter(table.column(value_column(state_id)).is_valid())
                    timers = header.states[state_id].kind == "timers"
                    keys, _ = header.key.column(e.buf, e.key_starts + (8 if timers else 0), e.key_ends)
                    assert mine.column(KEY_GROUP).to_pylist() == flink_key_groups(keys, java, 256).tolist()
                    assert mine.column(value_column(state_id)).to_pylist() == \
                        e.buf.slices(e.value_starts, e.value_ends).to_pylist()
                    if header.states[state_id].kind != "map":
                        assert mine.column(KEY).to_pylist() == e.buf.slices(e.key_starts, e.key_ends).to_pylist()
                rows += table.num_rows
        assert rows > 0


def test_a_key_running_past_its_entry_is_one_line():
    op = open_flink_savepoint(REALWORLD / FIXTURES[0] / "savepoint").operator("kryo-proc")
    header, raw = next(raw_entries(op.keyed_splits[0]))
    state_id, entries = next((i, r) for i, r in raw.items() if len(r.key_starts))
    data = bytearray(entries.buf.data)
    at = int(entries.key_starts[0])
    data[at] += 3  # the String key's length: three characters more, past its entry's key
    broken = dataclasses.replace(entries, buf=Buf(bytes(data), "stream", base=entries.buf.base))
    with pytest.raises(FlinkFormatError, match=r"^stream: the key at offset \d+ runs past its key$"):
        regrouped_entries(header, {state_id: broken}, _schema(header), 256)


@pytest.fixture(scope="module")
def realworld(tmp_path_factory):
    """{fixture: (base, [(max parallelism, rescaled savepoint), ...])}: 128 -> 256 -> 128."""
    out = {}
    for name in FIXTURES:
        base, work = REALWORLD / name / "savepoint", tmp_path_factory.mktemp(name)
        before = digest(base)
        _ok(statectl("rescale", str(base), str(work / "wide"), "--max-parallelism", "256"))
        _ok(statectl("rescale", str(work / "wide"), str(work / "back"), "--max-parallelism", "128"))
        assert digest(base) == before  # the base is never written
        out[name] = (base, [(256, work / "wide"), (128, work / "back")])
    return out


def _entries(op) -> Counter:
    """Every keyed entry of *op* as (state, key bytes after the key-group prefix, value bytes)."""
    found: Counter = Counter()
    for split in op.keyed_splits:
        for header, raw in raw_entries(split):
            for state_id, e in raw.items():
                data, name = e.buf.data, header.states[state_id].name
                found.update((name, data[ks:ke], data[vs:ve]) for ks, ke, vs, ve in
                             zip(e.key_starts.tolist(), e.key_ends.tolist(), e.value_starts.tolist(),
                                 e.value_ends.tolist()))
    return found


def _rows(table: pa.Table) -> list[str]:
    """Every row but its key group, as JSON: map columns' entries sorted (a map has no order),
    binary as hex."""
    if "_key_group" in table.column_names:
        table = table.drop_columns(["_key_group"])
    maps = {f.name for f in table.schema if pa.types.is_map(f.type)}
    out = []
    for row in table.to_pylist():
        row = {k: sorted(v, key=repr) if k in maps and v is not None else v for k, v in row.items()}
        out.append(json.dumps(row, sort_keys=True, default=lambda b: b.hex() if isinstance(b, bytes) else repr(b)))
    return sorted(out)


def _key_groups_as_flinks(op) -> int:
    """Checks every entry of *op* sits in the key group Flink's hash gives its key; the entries."""
    key, java = op.keyed_header.key, java_key_type(op.keyed_header.key, op.label)
    checked = 0
    for split in op.keyed_splits:
        for header, raw in raw_entries(split):
            for state_id, e in raw.items():
                starts = e.key_starts + (8 if header.states[state_id].kind == "timers" else 0)
                keys, _ = key.column(e.buf, starts, e.key_ends)
                assert e.key_groups.tolist() == flink_key_groups(keys, java, op.max_parallelism).tolist()
                checked += len(starts)
    return checked


@pytest.mark.slow  # statectl rescale runs Spark
@pytest.mark.parametrize("name", FIXTURES)
def test_opaque_states_rescale_byte_for_byte(realworld, name):
    base, steps = realworld[name]
    source = open_flink_savepoint(base)
    for max_p, path in steps:
        mine = open_flink_savepoint(path)
        for uid in OPAQUE_OPERATORS:
            before, after = source.operator(uid), mine.operator(uid)
            assert (after.max_parallelism, after.parallelism) == (max_p, before.parallelism)
            assert after.keyed_header.raw == before.keyed_header.raw, uid  # the snapshots Flink wrote
            assert _entries(after) == _entries(before), uid
            assert _key_groups_as_flinks(after) == sum(_entries(before).values()) > 0
            for table in (keyed_table, timers_table):
                assert _rows(table(after)) == _rows(table(before)), (uid, table.__name__)
        kryo = keyed_table(mine.operator("kryo-proc"))
        assert pa.types.is_binary(kryo.schema.field("profile").type) and kryo.num_rows == 18


FIX = """operators:
  - uid: kryo-proc
    parallelism: 2
    keyed:
      key: key
      input: {sql: "SELECT key, %s logins + 1 AS logins FROM `kryo-proc`"}
      states: [{name: logins, kind: value, column: logins}%s]
"""


@pytest.mark.slow  # bootstrap runs Spark
@pytest.mark.parametrize("spec, how", [
    (FIX % ("", ""), "leaves it out"),
    (FIX % ("profile, device,", ", {name: profile, kind: value, column: profile}, "
                                "{name: device, kind: value, column: device}"), "gives it without its flink: type")])
def test_a_fix_never_loses_a_state_the_writer_cannot_write(tmp_path, spec, how):
    """bootstrap --base replacing kryo-proc to fix `logins` would drop `profile` (a POJO with Kryo
    fields), or write its bytes under byte[]'s serializer: one line, nothing written."""
    base = REALWORLD / FIXTURES[0] / "savepoint"
    before = digest(base)
    (tmp_path / "fix.yaml").write_text(spec)
    result = statectl("bootstrap", str(tmp_path / "out"), "--base", str(base), "--format", "flink",
                      "--spec", str(tmp_path / "fix.yaml"))
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        "error: operator 'kryo-proc', state 'profile': its values (opaque "
        "org.apache.flink.api.java.typeutils.runtime.PojoSerializer) cannot be written again (POJO "
        "flinkfixtures.RealWorldJob$UserProfile has fields without a known serializer (field attribution: Kryo, type "
        "flinkfixtures.RealWorldJob$Attribution: no layout for flinkfixtures.RealWorldJob$Attribution (decodes with "
        "--classes))), and the spec, "
        f"which replaces the operator, {how}: they would be lost; leave the operator out of the spec to keep "
        "it as it is"]
    assert not (tmp_path / "out").exists() and digest(base) == before


@pytest.fixture(scope="module")
def kryo_job():
    try:
        return flink_job.make_snapshots("2.3.0", [KRYO_JOB])[0]
    except flink_job.FlinkSetupError as e:
        pytest.fail(str(e), pytrace=False)


@pytest.mark.slow  # Flink makes and restores the job's savepoint; statectl runs Spark
def test_a_kryo_state_of_the_suites_job_rescaled_restores_in_flink(kryo_job, tmp_path):
    base = kryo_job.path
    proc = open_flink_savepoint(base).operator("proc")
    assert any(m.name == "kryo" and "KryoSerializer" in m.value.serializer for m in proc.keyed_header.states)
    _ok(statectl("rescale", str(base), str(tmp_path / "wide"), "--max-parallelism", "256"))
    wide = open_flink_savepoint(tmp_path / "wide").operator("proc")
    assert _entries(wide) == _entries(proc)
    expected = json.loads(json.dumps(kryo_job.expected))
    expected["scenario"]["knobs"]["max-parallelism"] = "256"
    items = [(flink_job.Snapshot(tmp_path / "wide", expected, tmp_path / f"restore-{b}"), b)
             for b in ("hashmap", "rocksdb")]
    for (snap, backend), dump in zip(items, flink_job.restore_snapshots("2.3.0", items)):
        assert flink_job.restore_mismatches(snap.expected, dump) == [], backend
        assert len(dump["operators"]["proc"]["keyed_state"]["kryo"]["values"]) == 30
