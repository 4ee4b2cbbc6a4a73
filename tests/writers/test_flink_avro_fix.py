"""`bootstrap --base` fixes of Avro state: the Avro fixtures' keyed operator written again from its
own table (each state's values encoded in the writer schema the savepoint holds, the serializer
snapshots as Flink wrote them) is Flink's bytes, entry for entry; a changed field changes only
that field; a row the schema cannot hold is refused in one line, nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest

import statectl
from statectl.statefmt.flink.savepoint import open_flink_savepoint, raw_entries
from support.cli_runner import error_line, statectl as run

pytestmark = pytest.mark.slow  # Spark writes

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "flink-avro-dev"
UID = "dev-avro-proc"
FIX = """
operators:
  - uid: dev-avro-proc
    parallelism: 2
    keyed:
      key: key
      input: {sql: "SELECT key, %s AS profile FROM `dev-avro-proc`"}
      states:
        - {name: profile, kind: value, column: profile}
        - {name: history, kind: list, column: h, order_by: pos,
           input: {sql: "SELECT key, pos, h FROM `dev-avro-proc` LATERAL VIEW posexplode(history) t AS pos, h"}}
        - {name: by_kind, kind: map, key_column: k, value_column: v,
           input: {sql: "SELECT key, k, v FROM `dev-avro-proc` LATERAL VIEW explode(by_kind) t AS k, v"}}
"""


def fix(tmp_path: Path, base: Path, profile: str = "profile"):
    (tmp_path / "fix.yaml").write_text(FIX % profile)
    out = tmp_path / "out"
    return out, run("bootstrap", str(out), "--base", str(base), "--format", "flink", "--spec",
                    str(tmp_path / "fix.yaml"))


def entries(path: Path) -> dict[str, list[tuple[bytes, bytes]]]:
    """Every state's entries as stored: (key bytes, value bytes), sorted."""
    out: dict[str, list] = {}
    for split in open_flink_savepoint(str(path)).operator(UID).keyed_splits:
        for header, by_state in raw_entries(split):
            for sid, e in by_state.items():
                data = bytes(e.buf.data)
                out.setdefault(header.states[sid].name, []).extend(
                    (data[a:b], data[c:d]) for a, b, c, d in zip(e.key_starts, e.key_ends, e.value_starts, e.value_ends))
    return {name: sorted(v) for name, v in out.items()}


def rows(path: Path) -> dict[str, dict]:
    table = statectl.open_savepoint(str(path)).keyed(UID)
    return {r["key"]: {**r, "by_kind": dict(r["by_kind"])} for r in table.to_pylist()}  # a map's order is the backend's


def test_avro_states_written_again_are_flinks_bytes(tmp_path):
    base = FIXTURES / "avro-hashmap-canonical" / "savepoint"
    out, result = fix(tmp_path, base)
    assert result.returncode == 0, result.stderr
    assert entries(out) == entries(base)
    assert set(entries(out)) == {"profile", "history", "by_kind"}


def test_a_native_base_written_again_reads_the_same(tmp_path):
    base = FIXTURES / "avro-rocksdb-native" / "savepoint"
    out, result = fix(tmp_path, base)
    assert result.returncode == 0, result.stderr
    assert rows(out) == rows(base)


def profile_with(visits: str, tier: str) -> str:
    fields = ["id", "visits", "total_micros", "score", "active", "nickname", "tier", "tags", "counters", "address",
              "avatar_hash", "blob", "last_seen", "balance"]
    given = {"visits": visits, "tier": tier}
    return "named_struct(" + ", ".join(f"'{f}', {given.get(f, 'profile.' + f)}" for f in fields) + ")"


def test_a_changed_field_changes_only_that_field(tmp_path):
    base = FIXTURES / "avro-hashmap-canonical" / "savepoint"
    out, result = fix(tmp_path, base, profile_with("profile.visits + 1", "'GOLD'"))
    assert result.returncode == 0, result.stderr
    before, after = rows(base), rows(out)
    assert after == {k: {**r, "profile": {**r["profile"], "visits": r["profile"]["visits"] + 1, "tier": "GOLD"}}
                     for k, r in before.items()}
    assert {n: e for n, e in entries(out).items() if n != "profile"} == \
        {n: e for n, e in entries(base).items() if n != "profile"}


def test_a_symbol_the_schema_lacks_is_one_line(tmp_path):
    base = FIXTURES / "avro-hashmap-canonical" / "savepoint"
    out, result = fix(tmp_path, base, profile_with("profile.visits", "'DIAMOND'"))
    line = error_line(result, base)
    assert line.startswith("error: ") and "holds 'DIAMOND', not a symbol of Avro enum" in line, line
    assert not out.exists()
