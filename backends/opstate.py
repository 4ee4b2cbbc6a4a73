"""Operator list, union and broadcast state: held in memory by both backends.

As in Flink, operator state is small and lives on the heap whatever the keyed
backend; it is restored from and snapshotted to canonical files (§8.3, §8.4).
"""

from __future__ import annotations

import pyarrow as pa

from statectl.statefmt.build import write_operator_state_file
from statectl.statefmt.canonical import operator_state_schema, read_file
from statectl.statefmt.errors import UsageError
from statectl.statefmt.fs import Location
from statectl.statefmt.keygroups import even_split
from statectl.statefmt.model import OperatorState, Savepoint
from statectl.statefmt.locations import file_location
from statectl.statefmt.types import type_str, validate_type
from statectl.statefmt.vocabulary import OperatorStateKind


class OperatorListState:
    """A list per subtask (``list``: split evenly on restore; ``union``: every subtask gets all)."""

    def __init__(self, descriptor: OperatorState, values: list | None = None):
        self.descriptor = descriptor
        self._values = list(values or ())

    def get(self) -> list:
        return list(self._values)

    def __iter__(self):
        return iter(self.get())

    def add(self, value) -> None:
        self._values.append(value)

    def add_all(self, values) -> None:
        self._values.extend(values)

    def update(self, values) -> None:
        self._values = list(values)

    def clear(self) -> None:
        self._values = []


class BroadcastState:
    """A map identical on every subtask; only subtask 0 writes it into a snapshot."""

    def __init__(self, descriptor: OperatorState, entries: dict | None = None):
        self.descriptor = descriptor
        self._map = dict(entries or {})

    def get(self, key, default=None):
        return self._map.get(key, default)

    def put(self, key, value) -> None:
        self._map[key] = value

    def remove(self, key) -> None:
        self._map.pop(key, None)

    def contains(self, key) -> bool:
        return key in self._map

    __contains__ = contains

    def items(self) -> list[tuple]:
        return list(self._map.items())

    def clear(self) -> None:
        self._map.clear()


class OperatorStates:
    """The operator states of one subtask: restored, declared, snapshotted."""

    def __init__(self, subtask: int, parallelism: int):
        self.subtask = subtask
        self.parallelism = parallelism
        self._states: dict[str, OperatorListState | BroadcastState] = {}

    def restore(self, sp: Savepoint, states: tuple[OperatorState, ...]) -> None:
        for desc in states:
            table = _read_all(sp, desc)
            if desc.kind == OperatorStateKind.BROADCAST:
                pairs = zip(table.column("key").to_pylist(), table.column("value").to_pylist())
                self._states[desc.name] = BroadcastState(_bare(desc), dict(pairs))
                continue
            values = table.column("value").to_pylist()
            if desc.kind == OperatorStateKind.LIST:
                start, stop = even_split(len(values), self.parallelism, self.subtask)
                values = values[start:stop]
            self._states[desc.name] = OperatorListState(_bare(desc), values)

    def get(self, name: str, kind: str, value_type, key_type=None, taken=()):
        validate_type(value_type, f"state {name!r}")
        if key_type is not None:
            validate_type(key_type, f"state {name!r} key")
        wanted = OperatorState(name, kind, value_type, (), key_type)
        existing = self._states.get(name)
        if existing is None:
            if name in taken:
                raise UsageError(f"state name {name!r} is already used by a keyed state")
            existing = self._states[name] = (
                BroadcastState(wanted) if kind == OperatorStateKind.BROADCAST else OperatorListState(wanted)
            )
        elif existing.descriptor != wanted:
            d = existing.descriptor
            raise UsageError(
                f"operator state {name!r} is {d.kind} state of {type_str(d.value_type)}; "
                f"it cannot be used as {kind} state of {type_str(value_type)}"
            )
        return existing

    @property
    def names(self) -> list[str]:
        return list(self._states)

    def snapshot(self, out: Location, operator_id: str) -> tuple[OperatorState, ...]:
        """This subtask's files: its list entries; the broadcast map from subtask 0 only."""
        result = []
        for state in self._states.values():
            desc = state.descriptor
            schema = operator_state_schema(desc)
            if isinstance(state, BroadcastState):
                rows = state.items() if self.subtask == 0 else []
                table = pa.table({"key": pa.array([k for k, _ in rows], schema.field("key").type),
                                  "value": pa.array([v for _, v in rows], schema.field("value").type)})
            else:
                values = state.get()
                table = pa.table({
                    "subtask": pa.array([self.subtask] * len(values), pa.int32()),
                    "value": pa.array(values, schema.field("value").type),
                })
            files = (write_operator_state_file(out, operator_id, desc, table),) if table.num_rows else ()
            result.append(OperatorState(desc.name, desc.kind, desc.value_type, files, desc.key_type))
        return tuple(result)


def _bare(desc: OperatorState) -> OperatorState:
    return OperatorState(desc.name, desc.kind, desc.value_type, (), desc.key_type)


def _read_all(sp: Savepoint, desc: OperatorState) -> pa.Table:
    schema = operator_state_schema(desc)
    tables = [read_file(file_location(sp, f.ref), f, schema) for f in desc.files]
    return pa.concat_tables(tables) if tables else schema.empty_table()
