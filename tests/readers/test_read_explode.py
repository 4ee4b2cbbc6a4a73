"""`read --explode`: one row per list element (with `index`) or map entry (with `map_key`),
TTL timestamps alongside, the same rows from both engines, for statectl's own format and
Flink savepoints; mistakes are one line before any work."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.readers_savepoints import build_base
from statectl.readers import SavepointReader
from statectl.statefmt.errors import UsageError
from statectl.statefmt.formats import load

FLINK = Path(__file__).parents[1] / "fixtures" / "flink-dev" / "pojo-rocksdb-canonical" / "savepoint"


@pytest.fixture(scope="module")
def own(tmp_path_factory):
    return build_base(tmp_path_factory.mktemp("explode") / "base").location


def lines(result) -> list[dict]:
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def expected(spark, path, uid, state, key_names) -> list[dict]:
    """The state's collections read whole, flattened here."""
    out = []
    table = SavepointReader(spark, load(path)).keyed(uid, state).toArrow().to_pylist()
    for row in table:
        keys = {k: row[k] for k in key_names}
        ttl = row.get(f"{state}_ttl_ts")
        values = row[state] or []
        if values and isinstance(values[0], tuple):  # a map
            stamps = dict(ttl or [])
            for k, v in values:
                out.append({**keys, "map_key": k, state: v, **({f"{state}_ttl_ts": stamps[k]} if ttl else {})})
        else:
            for i, v in enumerate(values):
                out.append({**keys, "index": i, state: v, **({f"{state}_ttl_ts": ttl[i]} if ttl else {})})
    return sorted(out, key=lambda r: json.dumps(r, sort_keys=True, default=str))


@pytest.mark.parametrize("which,uid,state,keys", [
    ("own", "proc", "events", ["user"]), ("own", "proc", "attrs", ["user"]),
    ("flink", "pj-proc", "events", ["key"]), ("flink", "pj-proc", "ttl_seen", ["key"]),
])
def test_both_engines_flatten_alike(cli, spark, own, which, uid, state, keys):
    path = own if which == "own" else str(FLINK)
    want = expected(spark, path, uid, state, keys)
    assert len(want) >= 4  # own base: nulls among the elements; the fixtures: dozens
    for engine in ("local", "spark"):
        got = lines(cli("read", path, "--uid", uid, "--state", state, "--explode", "-f", "jsonl",
                        "--engine", engine))
        assert sorted(got, key=lambda r: json.dumps(r, sort_keys=True)) == \
            json.loads(json.dumps(want, default=str)), engine


def test_mistakes_are_one_line(cli, own):
    cases = [
        (["--uid", "proc", "--explode"], "error: --explode flattens one list or map state: choose it with "
                                         "--state (operator proc has events, attrs)"),
        (["--uid", "proc", "--state", "count", "--explode"],
         "error: --explode flattens a list or map state; 'count' is a value state"),
        (["--uid", "proc", "--timers", "--explode"],
         "error: --explode flattens a keyed list or map state; timers and operator state are rows already"),
    ]
    for args, line in cases:
        result = cli("read", own, *args)
        assert result.returncode == 1 and result.stderr.strip() == line, result.stderr


def test_the_python_api_flattens_as_the_cli_does(cli, spark, own):
    """`SavepointReader.keyed(..., explode=True)`: the CLI's rows, the state named or the only one."""
    reader = SavepointReader(spark, load(str(FLINK)))
    for state in ("events", "ttl_seen"):
        got = [json.loads(r) for r in reader.keyed("pj-proc", state, explode=True).toJSON().collect()]
        want = lines(cli("read", str(FLINK), "--uid", "pj-proc", "--state", state, "--explode", "-f", "jsonl"))
        assert sorted(got, key=lambda r: json.dumps(r, sort_keys=True)) == \
            sorted(want, key=lambda r: json.dumps(r, sort_keys=True)) and len(got) >= 4
    own_reader = SavepointReader(spark, load(own))
    with pytest.raises(UsageError, match=r"^--explode flattens one list or map state: choose it with --state "
                                         r"\(operator proc has events, attrs\)$"):
        own_reader.keyed("proc", explode=True)
    with pytest.raises(UsageError, match=r"^--explode flattens a list or map state; 'count' is a value state$"):
        own_reader.keyed("proc", "count", explode=True)
