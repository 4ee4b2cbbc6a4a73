"""The bootstrap spec: a YAML or JSON file naming, per operator, where its state comes from.

The file is parsed once, without Spark, into the writer's own frozen values
(:class:`OperatorData` and the states, timers and functions under it), with
inputs as :class:`DataRef` values (a location, a format, options) opened only
when the write runs (:meth:`Spec.operator_data`). Parsing checks every field
(unknown fields too) in one pass and reports every mistake found, one line
each: the path into the spec, then what is wrong. The shape is documented in
``docs/BOOTSTRAP.md``.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import sys
from dataclasses import dataclass
from typing import Any, Callable

import yaml

from statectl.statefmt.errors import LimitError, StatectlError, UsageError, first_line
from statectl.statefmt.fs import Location
from statectl.statefmt.ids import check_operator_id
from statectl.statefmt.keygroups import MAX_MAX_PARALLELISM, check_max_parallelism, check_parallelism
from statectl.statefmt.vocabulary import Format, OperatorStateKind

from .definitions import (COLUMN_STATES, BroadcastState, KeyedData, KeyedFunction, OperatorData, OperatorListState,
                          StateDescriptor, Timers, UnionListState)
from .errors import SpecError
from .flink.binding import parse_binding

FORMATS_BY_EXTENSION = {
    ".parquet": "parquet", ".pq": "parquet", ".csv": "csv",
    ".json": "json", ".jsonl": "json", ".ndjson": "json",
}
INPUT_FIELDS = {"path", "format", "schema", "options"}  # or {sql: query}: see SqlRef


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
class DataRef:
    """An input file or folder of the spec; opened (read by Spark) only when the write runs."""

    location: str
    format: str
    schema: str | None = None
    options: tuple[tuple[str, str], ...] = ()

    def open(self, spark):
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


@dataclass(frozen=True)
class SqlRef:
    """An input that is a Spark SQL query over the base savepoint's tables (the views
    `statectl sql` registers); run only when the write runs, with the base at hand."""

    query: str
    where: str

    def open(self, reader):
        from statectl.statefmt.errors import UsageError

        try:
            return reader.sql(self.query)
        except UsageError as e:
            raise SpecError(f"{self.where}: {e}") from None


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


def _identity(f: _Fields) -> tuple[str | None, str | None]:
    """An operator's uid, or its operator id (a Flink base's operator that has no uid)."""
    uid, operator_id = f.get("uid", str), f.get("operator_id", str)
    if (uid is None) == (operator_id is None):
        raise SpecError(f"{f.where}: field 'uid' is required" if uid is None else
                        f"{f.where}: give the operator's uid or its operator_id, not both")
    if operator_id is not None:
        try:
            operator_id = check_operator_id(operator_id)
        except UsageError as e:
            raise SpecError(f"{f.where}.operator_id: {e}") from None
    return uid, operator_id


def _type_name(k) -> str:
    return {str: "a string", int: "an integer", list: "a list", dict: "a mapping",
            bool: "true or false"}.get(k, k.__name__)


def _kind(v) -> str:
    return {dict: "a mapping", list: "a list", str: "a string", int: "an integer",
            bool: "a boolean", float: "a number", type(None): "nothing"}.get(type(v), type(v).__name__)


# --- the parsed spec -------------------------------------------------------------------------

@dataclass(frozen=True)
class Spec:
    """A checked spec: its options and its operators, whose inputs are :class:`DataRef` values."""

    source: str
    max_parallelism: int | None
    format: str
    operators: tuple[OperatorData, ...]
    base_dir: str

    @staticmethod
    def parse(doc: Any, base_dir: str, source: str = "spec") -> "Spec":
        """Check *doc* in one pass; a :class:`SpecError` lists every mistake, one line each."""
        parser = _Parser(base_dir)
        spec = parser.spec(doc, source)
        if parser.errors:
            raise SpecError(*dict.fromkeys(parser.errors))
        return spec

    def sql_inputs(self) -> list[SqlRef]:
        """Every ``{sql: ...}`` input of the spec."""
        found: list = []
        _opened(tuple(self.operators), lambda ref: found.append(ref) or ref)
        return [ref for ref in found if isinstance(ref, SqlRef)]

    def check_base(self, base) -> None:
        """An ``{sql: ...}`` input reads the base savepoint: one line when there is none."""
        refs = self.sql_inputs()
        if refs and base is None:
            raise SpecError(f"{refs[0].where}: an sql input is a query over the base savepoint's tables; "
                            "give the base with --base")

    def operator_data(self, spark, base=None) -> list[OperatorData]:
        """The operators with their inputs opened by Spark (each input once); ``{sql: ...}``
        inputs are queries over the savepoint *base* (a loaded :class:`Savepoint`)."""
        self.check_base(base)
        opened: dict = {}
        reader = []

        def open_(ref):
            if ref not in opened:
                if isinstance(ref, SqlRef):
                    if not reader:
                        from statectl.readers import open_savepoint
                        reader.append(open_savepoint(spark, base))
                    opened[ref] = ref.open(reader[0])
                else:
                    opened[ref] = ref.open(spark)
            return opened[ref]

        return [_opened(op, open_) for op in self.operators]


_INPUT_HOLDERS = ("data", "keyed", "states", "timers", "operator_states")


def _opened(value, open_: Callable[[DataRef], Any]):
    """*value* with every :class:`DataRef` and :class:`SqlRef` in it replaced by what *open_* gives
    (which also visits every input, in order)."""
    if isinstance(value, (DataRef, SqlRef)):
        return open_(value)
    if isinstance(value, tuple):
        return tuple(_opened(v, open_) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {f.name: _opened(getattr(value, f.name), open_) for f in dataclasses.fields(value)
                   if f.name in _INPUT_HOLDERS}
        return dataclasses.replace(value, **changes)
    return value


class _Parser:
    """One pass over the document; each mistake is kept as one line in :attr:`errors`."""

    def __init__(self, base_dir: str):
        self.base_dir = base_dir
        self.errors: list[str] = []

    def _each(self, items: list, parse: Callable[[Any, str], Any], where: str) -> tuple:
        """Parse every item; one that is wrong (or None) adds its line(s) and is left out."""
        out = []
        for i, item in enumerate(items):
            try:
                parsed = parse(item, f"{where}[{i}]")
            except SpecError as e:
                self.errors.append(str(e))
                continue
            if parsed is not None:
                out.append(parsed)
        return tuple(out)

    def _quiet(self, parse: Callable, *args, on_error=None):
        """``parse(*args)``; when wrong, its line is kept and *on_error* stands in for it."""
        try:
            return parse(*args)
        except SpecError as e:
            self.errors.append(str(e))
            return on_error

    def spec(self, doc, source: str) -> Spec | None:
        try:
            top = _Fields(doc, source, {"max_parallelism", "format", "operators"})
        except SpecError as e:
            self.errors.append(str(e))
            return None
        fmt = self._quiet(top.get, "format", str, False, Format.CANONICAL, on_error=Format.CANONICAL)
        max_p = self._quiet(lambda: _limit(top.get("max_parallelism", int), None, source))
        ops = self._quiet(top.get, "operators", list, True, on_error=[])
        if not ops and "operators" in top.value and isinstance(top.value["operators"], list):
            self.errors.append(f"{source}: operators is empty")
        operators = self._each(ops, lambda o, w: self.operator(o, w, max_p), "operators")
        ids = [o.resolved_id for o in operators]
        dupes = sorted({o.label for o in operators if ids.count(o.resolved_id) > 1})
        if dupes:
            self.errors.append(f"{source}: operator(s) {', '.join(map(repr, dupes))} given twice")
        return Spec(source, max_p, fmt, operators, self.base_dir)

    def input(self, value, where: str) -> DataRef | SqlRef | None:
        if value is None:
            return None
        if isinstance(value, str):
            value = {"path": value}
        if isinstance(value, dict) and "sql" in value:
            return self.sql_input(value, where)
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
        return DataRef(loc.uri, fmt, f.get("schema", str),
                       tuple(sorted((str(k), _option(v)) for k, v in options.items())))

    def sql_input(self, value: dict, where: str) -> SqlRef:
        from statectl.readers.statements import check_read_only
        from statectl.statefmt.errors import UsageError

        f = _Fields(value, where, {"sql"})
        query = f.get("sql", str, required=True)
        try:
            check_read_only(query)
        except UsageError as e:
            raise SpecError(f"{where}.sql: {e}") from None
        return SqlRef(query, where)

    def operator(self, value, where: str, default_max_p: int | None) -> OperatorData | None:
        """The operator, or None when a part of it is wrong (its lines are in :attr:`errors`)."""
        f = _Fields(value, where, {"uid", "operator_id", "parallelism", "max_parallelism", "keyed",
                                   "operator_state", "broadcast_state", "flink"})
        uid, operator_id = _identity(f)
        where = f"operator {uid or operator_id!r}"
        before = len(self.errors)
        parallelism = self._quiet(f.get, "parallelism", int, False, 1, on_error=1)
        max_p = self._quiet(lambda: _limit(f.get("max_parallelism", int), None, where))
        self._quiet(_limit, max_p or default_max_p, parallelism, where)
        keyed = self._quiet(self.keyed, f.value["keyed"], f"{where}.keyed") if f.has("keyed") else None
        states = self._each(self._quiet(f.get, "operator_state", list, False, [], on_error=[]),
                            self.operator_state, f"{where}.operator_state")
        states += self._each(self._quiet(f.get, "broadcast_state", list, False, [], on_error=[]),
                             self.broadcast, f"{where}.broadcast_state")
        flink = self._quiet(parse_binding, f.value["flink"], f"{where}.flink") if f.has("flink") else None
        if len(self.errors) > before:  # incomplete: its own checks would mislead
            return None
        if keyed is None and not states:
            raise SpecError(f"{where}: no state given (keyed, operator_state or broadcast_state)")
        op = OperatorData(uid, parallelism, max_p, keyed, states, flink, operator_id)
        op.check()  # names, functions and combine rules, before any data is read
        return op

    def keyed(self, value, where: str) -> KeyedData | KeyedFunction:
        f = _Fields(value, where, {"key", "input", "namespace", "states", "timers", "function",
                                   "order_by"})
        key = f.get("key", (list, str), required=True)
        key = (key,) if isinstance(key, str) else tuple(key)
        if not key or not all(isinstance(k, str) for k in key):
            raise SpecError(f"{where}.key must be a column name or a list of them")
        data = self.input(f.value.get("input"), f"{where}.input")
        namespace = f.get("namespace", str)
        function = f.get("function", str)
        order_by = f.get("order_by", (list, str), default=())
        order_by = (order_by,) if isinstance(order_by, str) else tuple(order_by)
        states = f.get("states", list, default=[])
        if function is not None:
            function = self.function(function, f"{where}.function")
            declared = self._each(states, self.declared_state, f"{where}.states")
            if f.has("timers") or f.has("namespace"):
                raise SpecError(f"{where}: with a function, the function sets timers and namespaces")
            if data is None:
                raise SpecError(f"{where}: a function needs the keyed input")
            return KeyedFunction(key, data, function, declared, order_by=order_by)
        if order_by:
            raise SpecError(f"{where}.order_by is for functions; list states take their own order_by")
        column_states = self._each(states, self.state, f"{where}.states")
        raw_timers = f.get("timers", list, default=[])
        timers = self._each(raw_timers, self.timers, f"{where}.timers")
        if not states and not raw_timers:
            raise SpecError(f"{where}: no states or timers given")
        if data is None and any(s.data is None for s in column_states + timers):
            raise SpecError(f"{where}: a state has no input and there is no default keyed input")
        return KeyedData(key, column_states, data, timers, namespace)

    def state(self, value, where: str):
        kind = value.get("kind") if isinstance(value, dict) else None
        if kind not in COLUMN_STATES:
            raise SpecError(f"{where}.kind must be one of {', '.join(COLUMN_STATES)}, "
                            f"got {kind!r}")
        required, optional, make = COLUMN_STATES[kind]
        f = _Fields(value, where, {"name", "kind", "input", *required, *optional})
        args = {"name": f.get("name", str, required=True),
                "data": self.input(f.value.get("input"), f"{where}.input")}
        for name in sorted(required):
            args[name] = f.get(name, str, required=True)
        for name in sorted(optional):
            args[name] = f.get(name, str)
        return make(**args)

    def declared_state(self, value, where: str) -> StateDescriptor:
        f = _Fields(value, where, {"name", "kind", "type", "key_type", "function"})
        return StateDescriptor(f.get("name", str, required=True), f.get("kind", str, required=True),
                               f.get("type", (str, dict), required=True),
                               f.get("key_type", (str, dict)), f.get("function", str))

    def timers(self, value, where: str) -> Timers:
        f = _Fields(value, where, {"domain", "column", "input"})
        return Timers(f.get("domain", str, required=True), f.get("column", str, required=True),
                      self.input(f.value.get("input"), f"{where}.input"))

    def operator_state(self, value, where: str):
        kind = value.get("kind") if isinstance(value, dict) else None
        if kind == OperatorStateKind.BROADCAST:
            return self.broadcast({k: v for k, v in value.items() if k != "kind"}, where)
        f = _Fields(value, where, {"name", "kind", "column", "input"})
        if kind not in (OperatorStateKind.LIST, OperatorStateKind.UNION):
            raise SpecError(f"{where}.kind must be list, union or broadcast, got {kind!r}")
        data = self.input(f.value.get("input"), f"{where}.input")
        if data is None:
            raise SpecError(f"{where}: field 'input' is required")
        make = OperatorListState if kind == OperatorStateKind.LIST else UnionListState
        return make(f.get("name", str, required=True), f.get("column", str, required=True), data)

    def broadcast(self, value, where: str) -> BroadcastState:
        f = _Fields(value, where, {"name", "key_column", "value_column", "input", "combine"})
        data = self.input(f.value.get("input"), f"{where}.input")
        if data is None:
            raise SpecError(f"{where}: field 'input' is required")
        return BroadcastState(f.get("name", str, required=True),
                              f.get("key_column", str, required=True),
                              f.get("value_column", str, required=True), data, f.get("combine", str))

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
