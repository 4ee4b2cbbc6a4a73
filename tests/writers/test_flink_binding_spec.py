"""The spec's `flink:` binding: parsed with the rest of the spec, each mistake one line."""

from __future__ import annotations

import pytest

from statectl.statefmt.flink.binding import parse_type
from statectl.writers.errors import SpecError
from statectl.writers.flink.binding import StateBinding, parse_binding
from statectl.writers.spec import Spec


def test_a_binding_parses_types_ttl_kinds_and_keys():
    b = parse_binding({"key": "Tuple2<String, Integer>", "namespace": "TimeWindow", "timer_service": "window-timers",
                       "states": {"n": "Long", "avg": {"type": "Tuple2<Long, Long>", "kind": "aggregating"},
                                  "seen": {"type": "Long", "ttl": True, "key": "String"},
                                  "p": {"pojo": "a.P", "fields": {"x": "Long"}}}}, "op.flink")
    assert b.key == parse_type("Tuple2<String, Integer>", "k")
    assert b.timer_service == "window-timers"
    assert b.state("avg") == StateBinding(parse_type("Tuple2<Long, Long>", "t"), False, "aggregating")
    assert b.state("seen") == StateBinding(parse_type("Long", "t"), True, None, parse_type("String", "t"))
    assert b.state("p").type.pojo_class == "a.P"
    assert b.state("other") == StateBinding()


def test_every_mistake_is_one_line(tmp_path):
    (tmp_path / "in.csv").write_text("k,n\na,1\n")
    keyed = {"key": "k", "input": "in.csv", "states": [{"name": "n", "kind": "value", "column": "n"}]}
    doc = {"format": "flink", "operators": [
        {"uid": "a", "flink": {"states": {"n": {"type": "Long", "kind": "folding"}}}, "keyed": keyed},
        {"uid": "b", "flink": {"keys": "Long"}, "keyed": keyed},
        {"uid": "c", "flink": {"states": {"n": {"type": "Lung"}}}, "keyed": keyed},
        {"uid": "d", "flink": "Long", "keyed": keyed},
    ]}
    with pytest.raises(SpecError) as e:
        Spec.parse(doc, str(tmp_path))
    lines = str(e.value).splitlines()
    assert lines[0] == ("operator 'a'.flink.states.n.kind must be reducing or aggregating (for a value column "
                        "holding the reduced value or the accumulator), got 'folding'")
    assert lines[1] == ("operator 'b'.flink: unknown field(s) keys; known: key, namespace, states, "
                        "timer_service")
    assert lines[2].startswith("operator 'c'.flink.states.n.type: unknown Flink type 'Lung' in 'Lung'; known: ")
    assert lines[3] == "operator 'd'.flink must be a mapping, got str"
    assert len(lines) == 4
