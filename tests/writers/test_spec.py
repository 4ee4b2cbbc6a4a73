"""The bootstrap spec, parsed once (no Spark) into the writer's frozen values, inputs as DataRefs."""

from __future__ import annotations

import dataclasses

import pytest

from support import REPO
from statectl.writers.definitions import (
    AggregatingState,
    BroadcastState,
    KeyedData,
    ListState,
    MapState,
    OperatorData,
    OperatorListState,
    ReducingState,
    Timers,
    UnionListState,
    ValueState,
)
from statectl.writers.errors import SpecError
from statectl.writers.spec import DataRef, Spec, load_spec

EXAMPLES = REPO / "examples"


def ref(name: str, fmt: str, options=()) -> DataRef:
    return DataRef(str(EXAMPLES / "data" / name), fmt, None, options)


def test_the_example_spec_parses_into_typed_values_with_lazy_inputs():
    spec = load_spec(str(EXAMPLES / "spec.yaml"))
    assert (spec.max_parallelism, spec.format) == (128, "canonical")
    events, amounts = ref("events.parquet", "parquet"), ref("amounts.parquet", "parquet")
    assert spec.operators == (
        OperatorData("proc", 2, None, KeyedData(
            ("user",),
            (ValueState("count", "n", ref("counts.csv", "csv")),
             ListState("events", "event", None, "ts"),
             MapState("attrs", "attr", "val", ref("attrs.jsonl", "json")),
             ReducingState("total", "amount", "sum", amounts),
             AggregatingState("mean", "amount", "avg", amounts)),
            events, (Timers("event", "ts", ref("timers.parquet", "parquet")),))),
        OperatorData("src", 2, None, None,
                     (OperatorListState("offsets", "offset", ref("offsets.csv", "csv")),)),
        OperatorData("union-op", 3, None, None,
                     (UnionListState("members", "member", ref("members.csv", "csv")),)),
        OperatorData("bcast", 2, None, None,
                     (BroadcastState("rules", "rule", "pattern", ref("rules.csv", "csv")),)),
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.operators[0].uid = "x"


def test_inputs_are_opened_only_when_asked_and_each_once(monkeypatch):
    spec = load_spec(str(EXAMPLES / "spec.yaml"))
    opened: list[DataRef] = []
    monkeypatch.setattr(DataRef, "open",  # stands in for Spark: records what is opened
                        lambda self, spark: opened.append(self) or f"df:{self.location.rsplit('/', 1)[-1]}")
    ops = spec.operator_data(spark=None)
    assert len(opened) == len(set(opened)) == 8
    keyed = ops[0].keyed
    assert keyed.data == "df:events.parquet"
    assert [s.data for s in keyed.states] == ["df:counts.csv", None, "df:attrs.jsonl",
                                              "df:amounts.parquet", "df:amounts.parquet"]
    assert keyed.timers[0].data == "df:timers.parquet"
    assert ops[3].operator_states[0].data == "df:rules.csv"
    assert isinstance(spec.operators[0].keyed.data, DataRef)  # the parsed spec is unchanged


def test_every_mistake_is_one_line_naming_its_place(tmp_path):
    (tmp_path / "in.csv").write_text("k,v\n1,2\n")
    doc = {"max_parallelism": 0, "operators": [
        {"uid": "a", "parallelism": 0, "keyed": {"key": "k", "input": "in.csv", "states": [
            {"kind": "nope"}, {"name": "x", "kind": "value"},
            {"name": "y", "kind": "value", "column": "v", "input": "gone.csv"},
            {"name": "ok", "kind": "value", "column": "v"}]}},
        {"uid": "b", "max_parallelism": 40000, "operator_state": [
            {"name": "o", "kind": "list", "column": "v", "input": {"path": "in.csv", "format": "xml"}}]},
        {"uid": "c", "broadcast_state": [{"name": "r", "key_column": "k", "value_column": "v",
                                          "input": "in.csv", "combine": "first"}]},
        {"uid": "d", "keyed": {"key": "k", "input": "in.csv", "states": [
            {"name": "s", "kind": "value", "column": "v"}, {"name": "s", "kind": "list", "column": "v"}]}},
        {"uid": "e", "operator_state": [{"name": "o", "kind": "list", "column": "v", "input": "in.csv"}]},
        {"uid": "e", "operator_state": [{"name": "o", "kind": "list", "column": "v", "input": "in.csv"}]},
    ]}
    with pytest.raises(SpecError) as e:
        Spec.parse(doc, str(tmp_path), "spec.yaml")
    assert e.value.lines == (
        "spec.yaml: max parallelism must be between 1 and 32768, got 0",
        "operator 'a': parallelism must be between 1 and the max parallelism 32768, got 0",
        "operator 'a'.keyed.states[0].kind must be one of value, list, map, reducing, aggregating, "
        "got 'nope'",
        "operator 'a'.keyed.states[1]: field 'column' is required",
        f"operator 'a'.keyed.states[2].input: input gone.csv not found (looked at {tmp_path}/gone.csv)",
        "operator 'b': max parallelism must be between 1 and 32768, got 40000",
        "operator 'b'.operator_state[0].input.format must be parquet, csv or json, got 'xml'",
        "operator 'c', state 'r': combine must be one of sum, min, max, any, got 'first'",
        "operator 'd': two states are named 's'",
        "spec.yaml: operator(s) 'e' given twice",
    )


@pytest.mark.parametrize("text, line", [
    ("[", "not valid YAML"),
    ("[" * 5000 + "]" * 5000, "nested too deeply"),
    ("operators: 3", "spec.yaml.operators must be a list, got an integer"),
    ("operators: []", "spec.yaml: operators is empty"),
    ("{}", "spec.yaml: field 'operators' is required"),
])
@pytest.mark.slow
def test_a_file_that_is_not_a_spec_is_one_line(tmp_path, text, line):
    path = tmp_path / "spec.yaml"
    path.write_text(text)
    with pytest.raises(SpecError) as e:
        load_spec(str(path))
    assert len(e.value.lines) == 1
    assert line in e.value.lines[0]


def test_the_cli_prints_each_mistake_as_one_error_line(tmp_path):
    from support.cli_runner import statectl

    spec = tmp_path / "spec.yaml"
    spec.write_text("operators:\n  - uid: a\n    paralelism: 2\n  - uid: b\n    parallelism: 0\n"
                    "    operator_state: [{name: o, kind: lst, column: v, input: x.csv}]\n")
    result = statectl("bootstrap", "--spec", str(spec), str(tmp_path / "o"))
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        "error: operators[0]: unknown field(s) paralelism; known: broadcast_state, flink, keyed, "
        "max_parallelism, operator_id, operator_state, parallelism, uid",
        "error: operator 'b': parallelism must be between 1 and the max parallelism 32768, got 0",
        "error: operator 'b'.operator_state[0].kind must be list, union or broadcast, got 'lst'",
    ]
    assert not (tmp_path / "o").exists()
