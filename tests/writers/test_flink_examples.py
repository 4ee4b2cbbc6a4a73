"""The example data (examples/) bootstrapped as a Flink savepoint with `statectl bootstrap
--format flink` from examples/spec-flink.yaml restores in Flink 2.3, into both backends, in a
job declaring those states (declared mode), with exactly the state statectl reads from the
written savepoint: every key's value, list, map, reducing and aggregating state, the event-time
timers (pending at restore, all fired by the final watermark), operator list state per subtask,
union state on every subtask and broadcast state."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from statectl.readers import open_savepoint
from statectl.statefmt.flink.savepoint import open_flink_savepoint, read_split
from support.cli_runner import statectl

sys.path.insert(0, str(Path(__file__).parents[1]))
from support import flink_job  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
VERSION = "2.3.0"

# The states examples/spec-flink.yaml writes, as a job restoring them declares them.
DESCRIPTION = {"operators": [
    {"uid": "proc", "parallelism": 2, "max_parallelism": 128, "key_type": "String",
     "keyed_state": [
         {"name": "count", "kind": "VALUE", "type": "Long"},
         {"name": "events", "kind": "LIST", "element_type": "String"},
         {"name": "attrs", "kind": "MAP", "user_key_type": "String", "user_value_type": "String"},
         {"name": "total", "kind": "REDUCING", "type": "Double"},
         {"name": "mean", "kind": "AGGREGATING", "accumulator_type": "Tuple2<Double, Long>"},
     ],
     "timers": {"service": "user-timers", "namespace": "VoidNamespace"}},
    {"uid": "src", "parallelism": 2, "max_parallelism": 128,
     "operator_state": [{"name": "offsets", "distribution": "SPLIT_DISTRIBUTE", "element_type": "Long"}]},
    {"uid": "union-op", "parallelism": 3, "max_parallelism": 128,
     "operator_state": [{"name": "members", "distribution": "UNION", "element_type": "String"}]},
    {"uid": "bcast", "parallelism": 2, "max_parallelism": 128,
     "broadcast_state": [{"name": "rules", "key_type": "String", "value_type": "String"}]},
]}


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("examples") / "savepoint"
    result = statectl("bootstrap", "--spec", str(EXAMPLES / "spec-flink.yaml"), str(out))
    assert result.returncode == 0, result.stderr
    return out


def _json(value):
    """A value as the declared job dumps it: tuples as lists, maps as objects."""
    if hasattr(value, "asDict"):
        return [_json(v) for v in value]
    if isinstance(value, dict):
        return {k: _json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json(v) for v in value]
    return value


def _statectl_state(spark, path: Path) -> dict:
    """What statectl reads from *path*, in the declared dump's layout."""
    reader = open_savepoint(spark, str(path))
    rows = reader.keyed("proc").collect()
    keyed = {name: {r["key"]: _json(r[name]) for r in rows if r[name] not in (None, [], {})}
             for name in ("count", "events", "attrs", "total", "mean")}
    timers = {}
    for r in reader.timers("proc").where("domain = 'event'").collect():
        timers.setdefault(r["key"], []).append(r["timestamp"])
    offsets = {}
    for split in open_flink_savepoint(path).operator("src").operator_splits:
        for row in (e for b in read_split(split, "offsets") for e in b.to_pylist()):
            offsets.setdefault(str(row["subtask"]), []).append(row["value"])
    members = sorted(r["value"] for r in reader.operator_state("union-op", "members").collect())
    rules = {r["key"]: r["value"] for r in reader.operator_state("bcast", "rules").collect()}
    return {"keyed": keyed, "timers": {k: sorted(v) for k, v in timers.items()}, "offsets": offsets,
            "members": {str(s): members for s in range(3)}, "rules": {str(s): rules for s in range(2)}}


def _restored(dump: dict) -> dict:
    ops = dump["operators"]
    proc = ops["proc"]
    event = proc["timers"]["event_time"]
    assert event["values"] == event["fired"]  # the final watermark fires every pending timer
    return {"keyed": {name: s["values"] for name, s in proc["keyed_state"].items()},
            "timers": event["values"],
            "offsets": ops["src"]["operator_state"]["offsets"]["subtasks"],
            "members": {s: sorted(v) for s, v in ops["union-op"]["operator_state"]["members"]["subtasks"].items()},
            "rules": ops["bcast"]["broadcast_state"]["rules"]["subtasks"]}


def test_statectl_reads_the_example_data_back(spark, written):
    state = _statectl_state(spark, written)
    assert len(state["keyed"]["count"]) == 20 and state["keyed"]["count"]["user-00"] == 5
    assert state["keyed"]["attrs"]["user-00"] == {"country": "de", "tier": "free"}
    assert (state["keyed"]["total"]["user-00"], state["keyed"]["mean"]["user-00"]) == (361.83, [361.83, 7])
    assert state["timers"]["user-00"] == [1700086400000] and len(state["timers"]) == 8
    assert state["offsets"] == {"0": [1000, 1034, 1068], "1": [1017, 1051, 1085]}
    assert state["rules"]["0"] == {"fraud": "buy{3,}", "churn": "view+", "upsell": "cart buy"}


@pytest.mark.slow
def test_example_savepoint_restores_in_a_job_declaring_its_states(spark, written):
    want = _statectl_state(spark, written)
    dumps = flink_job.restore_declared_many(VERSION, [(written, DESCRIPTION, b) for b in ("hashmap", "rocksdb")])
    for backend, dump in zip(("hashmap", "rocksdb"), dumps):
        got = _restored(dump)
        assert json.dumps(got, sort_keys=True) == json.dumps(want, sort_keys=True), backend
