"""The bootstrap spec: a YAML or JSON file naming, per operator, where its state comes from.

Parsing checks every field (unknown fields too) without Spark, so a wrong
spec fails at once; :meth:`Spec.operators` then reads the inputs with Spark
and returns the :class:`OperatorData` values the writer takes. The shape is
documented in ``docs/BOOTSTRAP.md``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from dataclasses import dataclass
from typing import Any

import yaml

from statectl.statefmt.errors import StatectlError, first_line
from statectl.statefmt.fs import Location
from statectl.statefmt.vocabulary import Format, OperatorStateKind, StateKind

from .definitions import (
    AggregatingState,
    BroadcastState,
    KeyedData,
    KeyedFunction,
    ListState,
    MapState,
    OperatorData,
    OperatorListState,
    ReducingState,
    StateDescriptor,
    Timers,
    UnionListState,
    ValueState,
)
from .errors import SpecError

FORMATS_BY_EXTENSION = {
    ".parquet": "parquet", ".pq": "parquet", ".csv": "csv",
    ".json": "json", ".jsonl": "json", ".ndjson": "json",
}
INPUT_FIELDS = {"path", "format", "schema", "options"}


# --- reading the file ----------------------------------------------------------------------

def load_spec(path: str) -> "Spec":
    """Parse and check the spec at *path* (YAML, or JSON, which is YAML too)."""
    loc = Location.of(path)
    if not loc.exists():
        raise SpecError(f"{path}: no such spec file")
    text = loc.read_bytes()
    try:
        doc = json.loads(text) if path.endswith(".json") else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError, UnicodeDecodeError) as e:
        raise SpecError(f"{path}: not valid {'JSON' if path.endswith('.json') else 'YAML'}: "
                        f"{' '.join(str(e).split())}") from None
    except RecursionError:
        raise SpecError(f"{path}: nested too deeply") from None
    base = loc.uri.rsplit("/", 1)[0]
    return Spec.parse(doc, base, path)


@dataclass(frozen=True)
class Input:
    """An input file or folder, read by Spark."""

    location: str
    format: str
    schema: str | None = None
    options: tuple[tuple[str, str], ...] = ()

    def read(self, spark):
        reader = spark.read.format(self.format)
        options = dict(self.options)
        if self.format == "csv":
            options.setdefault("header", "true")
            if self.schema is None:
                options.setdefault("inferSchema", "true")
        if self.schema is not None:
            reader = reader.schema(self.schema)
        try:
            return reader.options(**options).load(self.location)
        except Exception as e:
            raise SpecError(f"cannot read input {self.location} as {self.format}: "
                            f"{first_line(e)}") from None


class _Fields:
    """A mapping of the spec, read field by field; leftovers are reported as unknown."""

    def __init__(self, value: Any, where: str, allowed: set[str]):
        if not isinstance(value, dict):
            raise SpecError(f"{where} must be a mapping, got {_kind(value)}")
        unknown = sorted(set(map(str, value)) - allowed)
        if unknown:
            raise SpecError(f"{where}: unknown field(s) {', '.join(unknown)}; "
                            f"known: {', '.join(sorted(allowed))}")
        self.value, self.where = value, where

    def get(self, name: str, kind, required: bool = False, default=None):
        if name not in self.value or self.value[name] is None:
            if required:
                raise SpecError(f"{self.where}: field {name!r} is required")
            return default
        v = self.value[name]
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if not isinstance(v, kinds) or (isinstance(v, bool) and bool not in kinds):
            names = " or ".join(_type_name(k) for k in kinds)
            raise SpecError(f"{self.where}.{name} must be {names}, got {_kind(v)}")
        return v

    def has(self, name: str) -> bool:
        return self.value.get(name) is not None


def _type_name(k) -> str:
    return {str: "a string", int: "an integer", list: "a list", dict: "a mapping",
            bool: "true or false"}.get(k, k.__name__)


def _kind(v) -> str:
    return {dict: "a mapping", list: "a list", str: "a string", int: "an integer",
            bool: "a boolean", float: "a number", type(None): "nothing"}.get(type(v), type(v).__name__)


# --- the parsed spec -------------------------------------------------------------------------

@dataclass(frozen=True)
class Spec:
    source: str
    max_parallelism: int | None
    format: str
    operators: tuple[dict, ...]  # checked raw operator entries, inputs resolved
    base_dir: str

    @staticmethod
    def parse(doc: Any, base_dir: str, source: str = "spec") -> "Spec":
        top = _Fields(doc, source, {"max_parallelism", "format", "operators"})
        fmt = top.get("format", str, default=Format.CANONICAL)
        max_p = _limit(top.get("max_parallelism", int), None, source)
        ops = top.get("operators", list, required=True)
        if not ops:
            raise SpecError(f"{source}: operators is empty")
        parser = _Parser(base_dir)
        checked = tuple(parser.operator(o, f"operators[{i}]") for i, o in enumerate(ops))
        for o in checked:
            _limit(o["max_parallelism"] or max_p, o["parallelism"], f"operator {o['uid']!r}")
        uids = [o["uid"] for o in checked]
        dupes = sorted({u for u in uids if uids.count(u) > 1})
        if dupes:
            raise SpecError(f"{source}: operator uid(s) {', '.join(map(repr, dupes))} given twice")
        for o in checked:  # names, functions and combine rules, before any data is read
            _build(o, lambda _input: None).check()
        return Spec(source, max_p, fmt, checked, base_dir)

    def operator_data(self, spark) -> list[OperatorData]:
        """Read the inputs with Spark and build the writer's operator values."""
        cache: dict[Input, Any] = {}

        def read(inp: Input | None):
            if inp is None:
                return None
            if inp not in cache:
                cache[inp] = inp.read(spark)
            return cache[inp]

        return [_build(o, read) for o in self.operators]


class _Parser:
    def __init__(self, base_dir: str):
        self.base_dir = base_dir

    def input(self, value, where: str) -> Input | None:
        if value is None:
            return None
        if isinstance(value, str):
            value = {"path": value}
        f = _Fields(value, where, INPUT_FIELDS)
        path = f.get("path", str, required=True)
        loc = Location.of(path) if ("://" in path or os.path.isabs(path)) \
            else Location(self.base_dir).child(_clean_relative(path, where))
        try:
            exists = loc.exists()
        except StatectlError as e:
            raise SpecError(f"{where}: {e}") from None
        if not exists:
            raise SpecError(f"{where}: input {path} not found (looked at {loc})")
        fmt = f.get("format", str) or _format_of(loc, where)
        if fmt not in ("parquet", "csv", "json"):
            raise SpecError(f"{where}.format must be parquet, csv or json, got {fmt!r}")
        options = f.get("options", dict, default={})
        return Input(loc.uri, fmt, f.get("schema", str),
                     tuple(sorted((str(k), _option(v)) for k, v in options.items())))

    def operator(self, value, where: str) -> dict:
        f = _Fields(value, where, {"uid", "parallelism", "max_parallelism", "keyed",
                                   "operator_state", "broadcast_state"})
        uid = f.get("uid", str, required=True)
        where = f"operator {uid!r}"
        out = {
            "uid": uid,
            "parallelism": f.get("parallelism", int, default=1),
            "max_parallelism": _limit(f.get("max_parallelism", int), None, where),
            "keyed": self.keyed(f.value["keyed"], f"{where}.keyed") if f.has("keyed") else None,
            "operator_state": [self.operator_state(s, f"{where}.operator_state[{i}]")
                               for i, s in enumerate(f.get("operator_state", list, default=[]))],
        }
        out["operator_state"] += [
            self.broadcast(s, f"{where}.broadcast_state[{i}]")
            for i, s in enumerate(f.get("broadcast_state", list, default=[]))
        ]
        if out["keyed"] is None and not out["operator_state"]:
            raise SpecError(f"{where}: no state given (keyed, operator_state or broadcast_state)")
        return out

    def keyed(self, value, where: str) -> dict:
        f = _Fields(value, where, {"key", "input", "namespace", "states", "timers", "function",
                                   "order_by"})
        key = f.get("key", (list, str), required=True)
        key = [key] if isinstance(key, str) else key
        if not key or not all(isinstance(k, str) for k in key):
            raise SpecError(f"{where}.key must be a column name or a list of them")
        function = f.get("function", str)
        out = {
            "key": key, "input": self.input(f.value.get("input"), f"{where}.input"),
            "namespace": f.get("namespace", str), "function": function,
            "order_by": f.get("order_by", (list, str), default=[]),
        }
        if isinstance(out["order_by"], str):
            out["order_by"] = [out["order_by"]]
        states = f.get("states", list, default=[])
        if function is not None:
            out["function"] = self.function(function, f"{where}.function")
            out["states"] = [self.declared_state(s, f"{where}.states[{i}]")
                             for i, s in enumerate(states)]
            out["timers"] = []
            if f.has("timers") or f.has("namespace"):
                raise SpecError(f"{where}: with a function, the function sets timers and namespaces")
            if out["input"] is None:
                raise SpecError(f"{where}: a function needs the keyed input")
            return out
        if out["order_by"]:
            raise SpecError(f"{where}.order_by is for functions; list states take their own order_by")
        out["states"] = [self.state(s, f"{where}.states[{i}]") for i, s in enumerate(states)]
        out["timers"] = [self.timers(t, f"{where}.timers[{i}]")
                         for i, t in enumerate(f.get("timers", list, default=[]))]
        if not out["states"] and not out["timers"]:
            raise SpecError(f"{where}: no states or timers given")
        if out["input"] is None and any(s["input"] is None for s in out["states"] + out["timers"]):
            raise SpecError(f"{where}: a state has no input and there is no default keyed input")
        return out

    _STATE_FIELDS = {
        StateKind.VALUE: ({"column"}, {"combine"}),
        StateKind.LIST: ({"column"}, {"order_by"}),
        StateKind.MAP: ({"key_column", "value_column"}, {"combine"}),
        StateKind.REDUCING: ({"column", "function"}, set()),
        StateKind.AGGREGATING: ({"column", "function"}, set()),
    }

    def state(self, value, where: str) -> dict:
        kind = value.get("kind") if isinstance(value, dict) else None
        if kind not in self._STATE_FIELDS:
            raise SpecError(f"{where}.kind must be one of {', '.join(self._STATE_FIELDS)}, "
                            f"got {kind!r}")
        required, optional = self._STATE_FIELDS[kind]
        f = _Fields(value, where, {"name", "kind", "input"} | required | optional)
        out = {"name": f.get("name", str, required=True), "kind": kind,
               "input": self.input(f.value.get("input"), f"{where}.input")}
        for name in sorted(required):
            out[name] = f.get(name, str, required=True)
        for name in sorted(optional):
            out[name] = f.get(name, str)
        return out

    def declared_state(self, value, where: str) -> dict:
        f = _Fields(value, where, {"name", "kind", "type", "key_type", "function"})
        return {"name": f.get("name", str, required=True), "kind": f.get("kind", str, required=True),
                "type": f.get("type", (str, dict), required=True),
                "key_type": f.get("key_type", (str, dict)), "function": f.get("function", str)}

    def timers(self, value, where: str) -> dict:
        f = _Fields(value, where, {"domain", "column", "input"})
        return {"domain": f.get("domain", str, required=True),
                "column": f.get("column", str, required=True),
                "input": self.input(f.value.get("input"), f"{where}.input")}

    def operator_state(self, value, where: str) -> dict:
        kind = value.get("kind") if isinstance(value, dict) else None
        if kind == OperatorStateKind.BROADCAST:
            return self.broadcast({k: v for k, v in value.items() if k != "kind"}, where)
        f = _Fields(value, where, {"name", "kind", "column", "input"})
        if kind not in (OperatorStateKind.LIST, OperatorStateKind.UNION):
            raise SpecError(f"{where}.kind must be list, union or broadcast, got {kind!r}")
        inp = self.input(f.value.get("input"), f"{where}.input")
        if inp is None:
            raise SpecError(f"{where}: field 'input' is required")
        return {"name": f.get("name", str, required=True), "kind": kind,
                "column": f.get("column", str, required=True), "input": inp}

    def broadcast(self, value, where: str) -> dict:
        f = _Fields(value, where, {"name", "key_column", "value_column", "input", "combine"})
        inp = self.input(f.value.get("input"), f"{where}.input")
        if inp is None:
            raise SpecError(f"{where}: field 'input' is required")
        return {"name": f.get("name", str, required=True), "kind": OperatorStateKind.BROADCAST,
                "key_column": f.get("key_column", str, required=True),
                "value_column": f.get("value_column", str, required=True),
                "combine": f.get("combine", str), "input": inp}

    def function(self, text: str, where: str):
        """``file.py:name`` (relative to the spec) or ``module:name``: the per-key function."""
        target, sep, name = text.rpartition(":")
        if not sep or not target or not name:
            raise SpecError(f"{where} must be 'file.py:function' or 'module:function', got {text!r}")
        if target.endswith(".py"):
            module = _module_from_file(Location(self.base_dir).child(_clean_relative(target, where))
                                       if not os.path.isabs(target) else Location.of(target), where)
        else:
            try:
                module = importlib.import_module(target)
            except ImportError as e:
                raise SpecError(f"{where}: cannot import {target}: {e}") from None
        fn = getattr(module, name, None)
        if not callable(fn):
            raise SpecError(f"{where}: {target} has no function {name!r}")
        return fn


def _module_from_file(loc: Location, where: str):
    if not loc.is_local or not loc.exists():
        raise SpecError(f"{where}: no such Python file {loc}")
    module_name = f"statectl_spec_{abs(hash(loc.uri)):x}"
    spec = importlib.util.spec_from_file_location(module_name, loc.path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as e:
        raise SpecError(f"{where}: {loc} failed to load: {type(e).__name__}: {e}") from None
    from pyspark import cloudpickle  # ship the function's code to the executors

    cloudpickle.register_pickle_by_value(module)
    return module


def _limit(max_parallelism: int | None, parallelism: int | None, where: str) -> int | None:
    """The limits of the CLI and the API (1..32768, parallelism <= max parallelism), for a spec."""
    from statectl.statefmt.errors import LimitError
    from statectl.statefmt.keygroups import (
        MAX_MAX_PARALLELISM,
        check_max_parallelism,
        check_parallelism,
    )

    try:
        if parallelism is not None:
            check_parallelism(parallelism, max_parallelism or MAX_MAX_PARALLELISM)
        if max_parallelism is not None:
            check_max_parallelism(max_parallelism)
    except LimitError as e:
        raise SpecError(f"{where}: {e}") from None
    return max_parallelism


def _clean_relative(path: str, where: str) -> str:
    parts = [p for p in path.replace("\\", "/").split("/") if p not in ("", ".")]
    if not parts:
        raise SpecError(f"{where}: empty path")
    # '..' stays allowed: the spec is the user's own file, not savepoint content
    return "/".join(parts)


def _format_of(loc: Location, where: str) -> str:
    name = loc.uri.rstrip("/")
    if loc.is_dir():
        names = [p for p in loc.list_files()
                 if not p.rsplit("/", 1)[-1].startswith(("_", ".")) and not p.endswith(".crc")]
        exts = {os.path.splitext(p)[1].lower() for p in names}
        formats = {FORMATS_BY_EXTENSION.get(e) for e in exts}
        if len(formats) == 1 and None not in formats:
            return formats.pop()
        raise SpecError(f"{where}: cannot tell the format of folder {name}; give format: "
                        "parquet, csv or json")
    ext = os.path.splitext(name)[1].lower()
    if ext not in FORMATS_BY_EXTENSION:
        raise SpecError(f"{where}: cannot tell the format of {name} from its extension; "
                        "give format: parquet, csv or json")
    return FORMATS_BY_EXTENSION[ext]


def _option(v) -> str:
    return str(v).lower() if isinstance(v, bool) else str(v)


# --- spec entries -> writer values ---------------------------------------------------------

def _build(o: dict, read) -> OperatorData:
    keyed = None
    k = o["keyed"]
    if k is not None and k["function"] is not None:
        keyed = KeyedFunction(
            key=k["key"], data=read(k["input"]), function=k["function"],
            states=[StateDescriptor(s["name"], s["kind"], s["type"], s["key_type"], s["function"])
                    for s in k["states"]],
            order_by=k["order_by"])
    elif k is not None:
        keyed = KeyedData(
            key=k["key"], data=read(k["input"]), namespace=k["namespace"],
            states=[_column_state(s, read(s["input"])) for s in k["states"]],
            timers=[Timers(t["domain"], t["column"], read(t["input"])) for t in k["timers"]])
    states = []
    for s in o["operator_state"]:
        data = read(s["input"])
        if s["kind"] == OperatorStateKind.LIST:
            states.append(OperatorListState(s["name"], s["column"], data))
        elif s["kind"] == OperatorStateKind.UNION:
            states.append(UnionListState(s["name"], s["column"], data))
        else:
            states.append(BroadcastState(s["name"], s["key_column"], s["value_column"], data,
                                         s["combine"]))
    return OperatorData(o["uid"], o["parallelism"], o["max_parallelism"], keyed, tuple(states))


def _column_state(s: dict, data):
    kind = s["kind"]
    if kind == StateKind.VALUE:
        return ValueState(s["name"], s["column"], data, s["combine"])
    if kind == StateKind.LIST:
        return ListState(s["name"], s["column"], data, s["order_by"])
    if kind == StateKind.MAP:
        return MapState(s["name"], s["key_column"], s["value_column"], data, s["combine"])
    if kind == StateKind.REDUCING:
        return ReducingState(s["name"], s["column"], s["function"], data)
    return AggregatingState(s["name"], s["column"], s["function"], data)
