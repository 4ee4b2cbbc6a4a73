"""The savepoint's catalogue and the view names `statectl sql` registers.

Views: ``<uid>`` is an operator's keyed table, ``<uid>.timers`` its timers,
``<uid>.<state>`` an operator state and ``catalogue`` this catalogue. An operator
without a uid is named by its name in the job where that is unique (a Flink SQL
operator's ``GroupAggregate[40]``), else by its operator id. Unreadable parts
(an unknown serializer) have no view. A name already taken (names compare
case-insensitively, as Spark's do) gets ``#2``, ``#3``... appended; the
catalogue's ``view`` column always tells the name used.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from statectl.statefmt.model import Savepoint
from statectl.statefmt.types import map_of, type_str
from statectl.statefmt.vocabulary import OperatorStateKind

from .resolve import KEYED, OPERATOR_STATE, TIMERS, TableChoice

CATALOGUE_VIEW = "catalogue"

CATALOGUE_DDL = (
    "uid string, operator_id string, state string, scope string, kind string, type string, "
    "key string, namespace string, parallelism int, max_parallelism int, "
    "files int, `rows` bigint, bytes bigint, view string"
)


@dataclass(frozen=True)
class View:
    name: str
    choice: TableChoice | None  # None for the catalogue itself


def views(sp: Savepoint) -> list[View]:
    """Every view of the savepoint, named as the module docstring says."""
    taken: set[str] = set()

    def unique(name: str) -> str:
        candidate, n = name, 1
        while candidate.lower() in taken:
            n += 1
            candidate = f"{name}#{n}"
        taken.add(candidate.lower())
        return candidate

    names = Counter(op.name for op in sp.operators)
    out = []
    for op in sp.operators:
        label = op.label if op.uid is not None or not op.name or names[op.name] > 1 else op.name
        if op.keyed is not None:
            out.append(View(unique(label), TableChoice(op, KEYED)))
            out.append(View(unique(f"{label}.timers"), TableChoice(op, TIMERS)))
        for s in op.operator_states:
            out.append(View(unique(f"{label}.{s.name}"), TableChoice(op, OPERATOR_STATE, (s.name,))))
    out.append(View(unique(CATALOGUE_VIEW), None))
    return out


def _files(files) -> tuple[int, int | None, int]:
    """(files, rows, bytes); rows None when a file does not record them (Flink's)."""
    files = list(files)
    rows = None if any(f.rows is None for f in files) else sum(f.rows for f in files)
    return len(files), rows, sum(f.size for f in files)


def catalogue_rows(sp: Savepoint) -> list[tuple]:
    """One row per state: keyed states (sharing their table's files), timers, operator states.

    Keyed states' files, rows and bytes are those of the operator's keyed table,
    which holds all of them.
    """
    names = {(v.choice.operator.operator_id, v.choice.kind, v.choice.states): v.name
             for v in views(sp) if v.choice is not None}
    rows = []
    for op in sp.operators:
        head = (op.uid, op.operator_id)
        tail = (op.parallelism, op.max_parallelism)
        if op.keyed is not None:
            k = op.keyed
            key = ", ".join(f"{f.name}: {type_str(f.type)}" for f in k.key)
            ns = type_str(k.namespace_type) if k.namespace_type is not None else None
            table = _files(k.files)
            view = names[(op.operator_id, KEYED, ())]
            for s in k.states:
                rows.append(head + (s.name, "keyed", s.kind, type_str(s.column_type), key, ns)
                            + tail + table + (view,))
            rows.append(head + (None, "keyed", "timers", "timestamp: int64, domain: string", key, ns)
                        + tail + _files(k.timers) + (names[(op.operator_id, TIMERS, ())],))
        for s in op.operator_states:
            t = type_str(map_of(s.key_type, s.value_type) if s.kind == OperatorStateKind.BROADCAST else s.value_type)
            rows.append(head + (s.name, "operator", s.kind, t, None, None) + tail + _files(s.files)
                        + (names[(op.operator_id, OPERATOR_STATE, (s.name,))],))
    return rows


def catalogue_frame(spark, sp: Savepoint):
    """The catalogue as a DataFrame (built from `_metadata`, not from state data)."""
    return spark.createDataFrame(catalogue_rows(sp), CATALOGUE_DDL)


def catalogue_table(sp: Savepoint):
    """The catalogue as a ``pyarrow.Table``: the columns and types of :func:`catalogue_frame`."""
    import pyarrow as pa

    types = {"string": pa.string(), "int": pa.int32(), "bigint": pa.int64()}
    fields = [pa.field(name.strip("`"), types[kind])
              for name, kind in (column.split() for column in CATALOGUE_DDL.split(", "))]
    schema = pa.schema(fields)
    return pa.Table.from_pylist([dict(zip(schema.names, row)) for row in catalogue_rows(sp)], schema)
