"""The `_metadata` codec: :class:`Savepoint` <-> JSON, with every rule checked on decode.

Decoding never trusts the input: each field is type-checked, the version is
checked first, and a violation is a :class:`MetadataError` naming the field.
"""

from __future__ import annotations

import json
import re
from typing import Any

from .errors import MetadataError, StatectlError, UnsupportedVersionError
from .ids import is_operator_id, operator_id_for_uid
from .keygroups import check_key_type, check_parallelism
from .model import (
    FORMAT_NAME,
    FORMAT_VERSION,
    RESERVED_COLUMNS,
    DataFile,
    Field,
    FileRef,
    KeyedSection,
    KeyedStateDescriptor,
    LineageEntry,
    Operator,
    OperatorState,
    Savepoint,
)
from .refs import check_relative_path, split_options
from .types import validate_type
from .vocabulary import Format, OperatorStateKind, StateKind

_CHECKSUM = re.compile(r"^sha256:[0-9a-f]{64}$")
MAX_METADATA_BYTES = 256 * 1024 * 1024
# Far deeper than any real file (types nest at most 64 levels), below the C decoder's own limit;
# checked before parsing, so the limit does not depend on Python's recursion limit.
MAX_JSON_DEPTH = 900
_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[{]}")


# --- encode ----------------------------------------------------------------

def encode(sp: Savepoint) -> bytes:
    """The `_metadata` bytes of *sp* (UTF-8 JSON, one operator per block)."""
    doc = {
        "format": FORMAT_NAME,
        "format_version": sp.format_version,
        "savepoint_id": sp.savepoint_id,
        "created_at": sp.created_at,
        "lineage": [{"savepoint_id": e.savepoint_id, "location": split_options(e.location)[0]}
                    for e in sp.lineage],  # the user's filesystem options are not the file's
        "operators": [_encode_operator(op) for op in sp.operators],
    }
    return (json.dumps(doc, indent=1, ensure_ascii=False) + "\n").encode("utf-8")


def _encode_operator(op: Operator) -> dict:
    out: dict[str, Any] = {
        "operator_id": op.operator_id,
        "uid": op.uid,
        "parallelism": op.parallelism,
        "max_parallelism": op.max_parallelism,
        "format": op.format,
    }
    if op.keyed is not None:
        k = op.keyed
        out["keyed"] = {
            "key": [{"name": f.name, "type": f.type} for f in k.key],
            "namespace_type": k.namespace_type,
            "states": [_drop_none({
                "name": s.name,
                "kind": s.kind,
                "value_type": s.value_type,
                "user_key_type": s.user_key_type,
                "function": s.function,
            }) for s in k.states],
            "files": [_encode_file(f) for f in k.files],
            "timers": [_encode_file(f) for f in k.timers],
        }
    out["operator_states"] = [_drop_none({
        "name": s.name,
        "kind": s.kind,
        "key_type": s.key_type,
        "value_type": s.value_type,
        "files": [_encode_file(f) for f in s.files],
    }) for s in op.operator_states]
    return out


def _encode_file(f: DataFile) -> dict:
    out: dict[str, Any] = {"path": f.ref.path}
    if f.ref.savepoint is not None:
        out["savepoint"] = f.ref.savepoint
    out.update(size=f.size, checksum=f.checksum, rows=f.rows)
    if f.key_groups is not None:
        out["key_groups"] = list(f.key_groups)
    if f.name is not None:
        out["name"] = f.name
    return out


def _drop_none(d: dict) -> dict:
    return {k: v for k, v in d.items() if v is not None}


# --- decode ----------------------------------------------------------------

def _json_depth(data: bytes) -> int:
    """The deepest nesting of arrays and objects in JSON *data* (strings skipped)."""
    if b"\\" not in data and data.count(b'"') % 2 == 0:
        # no escapes: a string is what lies between two quotes; splitting there is many times
        # faster than the regex on a large file (1,000 operators: most of `info`'s parse)
        outside = b"".join(data.split(b'"')[::2])
    else:
        outside = _JSON_STRING.sub(b"", data)
    depth = deepest = 0
    for code in outside.translate(None, _NOT_BRACKETS):
        if code in b"[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


def decode(data: bytes, source: str = "_metadata") -> Savepoint:
    """Parse and check `_metadata` bytes; *source* names the file in errors."""
    if len(data) > MAX_METADATA_BYTES:
        raise MetadataError(f"{source}: larger than {MAX_METADATA_BYTES} bytes")
    if _json_depth(data) > MAX_JSON_DEPTH:
        raise MetadataError(f"{source}: JSON nested too deeply")
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise MetadataError(f"{source}: not a statectl _metadata file (invalid JSON: {e})") from None
    except RecursionError:  # the C decoder bounds its own depth; far deeper than any real file
        raise MetadataError(f"{source}: JSON nested too deeply") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT_NAME:
        raise MetadataError(f"{source}: not a statectl _metadata file (no \"format\": \"{FORMAT_NAME}\")")
    version = doc.get("format_version")
    if type(version) is not int or version != FORMAT_VERSION:  # true == 1 in Python
        raise UnsupportedVersionError(
            f"{source}: format version {version!r} is not supported; "
            f"this statectl reads version {FORMAT_VERSION}"
        )
    try:
        return _decode_savepoint(doc)
    except MetadataError as e:
        raise MetadataError(f"{source}: {e}") from None
    except StatectlError as e:  # e.g. an unsafe reference or a bad limit
        raise type(e)(f"{source}: {e}") from None


def _get(obj: dict, key: str, where: str, kinds, required: bool = True, default=None):
    if key not in obj or obj[key] is None:
        if required:
            raise MetadataError(f"{where}.{key} is missing")
        return default
    value = obj[key]
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in _as_tuple(kinds)):
        raise MetadataError(f"{where}.{key} has the wrong type ({type(value).__name__})")
    return value


def _as_tuple(kinds) -> tuple:
    return kinds if isinstance(kinds, tuple) else (kinds,)


def _obj(value, where: str) -> dict:
    if not isinstance(value, dict):
        raise MetadataError(f"{where} must be an object")
    return value


def _decode_savepoint(doc: dict) -> Savepoint:
    lineage = []
    for i, raw in enumerate(_get(doc, "lineage", "lineage", list, required=False, default=[])):
        e = _obj(raw, f"lineage[{i}]")
        lineage.append(LineageEntry(
            savepoint_id=_get(e, "savepoint_id", f"lineage[{i}]", str),
            location=_get(e, "location", f"lineage[{i}]", str),
        ))
    lineage_ids = {e.savepoint_id for e in lineage}
    if len(lineage_ids) != len(lineage):
        raise MetadataError("lineage names a savepoint twice")
    sp_id = _get(doc, "savepoint_id", "savepoint", str)
    if sp_id in lineage_ids:
        raise MetadataError("lineage names the savepoint itself")
    operators = []
    for i, raw in enumerate(_get(doc, "operators", "savepoint", list)):
        operators.append(_decode_operator(_obj(raw, f"operators[{i}]"), f"operators[{i}]", lineage_ids))
    ids = [op.operator_id for op in operators]
    if len(set(ids)) != len(ids):
        raise MetadataError("two operators have the same operator id")
    return Savepoint(
        savepoint_id=sp_id,
        created_at=_get(doc, "created_at", "savepoint", str),
        operators=tuple(operators),
        lineage=tuple(lineage),
    )


def _decode_operator(o: dict, where: str, lineage_ids: set[str]) -> Operator:
    op_id = _get(o, "operator_id", where, str)
    if not is_operator_id(op_id):
        raise MetadataError(f"{where}.operator_id must be 32 lowercase hex digits")
    uid = _get(o, "uid", where, str, required=False)
    if uid is not None and operator_id_for_uid(uid) != op_id:
        raise MetadataError(f"{where}: operator_id does not match uid {uid!r}")
    where = f"operator {uid or op_id}"
    max_p = _get(o, "max_parallelism", where, int)
    p = _get(o, "parallelism", where, int)
    check_parallelism(p, max_p)
    fmt = _get(o, "format", where, str)
    if fmt not in Format.stored():
        raise MetadataError(
            f"{where}: physical format {fmt!r} is not supported; known: {', '.join(Format.stored())}"
        )
    keyed = None
    if o.get("keyed") is not None:
        keyed = _decode_keyed(_obj(o["keyed"], f"{where}.keyed"), f"{where}.keyed", max_p, lineage_ids,
                              native=fmt == Format.ROCKSDB)
    op_states = []
    for i, raw in enumerate(_get(o, "operator_states", where, list, required=False, default=[])):
        op_states.append(_decode_operator_state(_obj(raw, f"{where}.operator_states[{i}]"),
                                                f"{where}.operator_states[{i}]", lineage_ids))
    op = Operator(op_id, uid, p, max_p, keyed, tuple(op_states), fmt)
    names = op.state_names
    if len(set(names)) != len(names):
        raise MetadataError(f"{where}: two states have the same name")
    return op


def _decode_keyed(k: dict, where: str, max_p: int, lineage_ids: set[str],
                  native: bool = False) -> KeyedSection:
    key = []
    for i, raw in enumerate(_get(k, "key", where, list)):
        f = _obj(raw, f"{where}.key[{i}]")
        name = _get(f, "name", f"{where}.key[{i}]", str)
        t = validate_type(_get(f, "type", f"{where}.key[{i}]", (str, dict)), f"{where}.key.{name}")
        check_key_type(t, name)
        key.append(Field(name, t))
    if not key:
        raise MetadataError(f"{where}.key needs at least one column")
    ns = k.get("namespace_type")
    if ns is not None:
        validate_type(ns, f"{where}.namespace_type")
    states = []
    for i, raw in enumerate(_get(k, "states", where, list)):
        s = _obj(raw, f"{where}.states[{i}]")
        w = f"{where}.states[{i}]"
        kind = _kind(s, w, StateKind, "user_key_type", StateKind.MAP)
        user_key = s.get("user_key_type")
        states.append(KeyedStateDescriptor(
            name=_get(s, "name", w, str),
            kind=kind,
            value_type=validate_type(_get(s, "value_type", w, (str, dict)), f"{w}.value_type"),
            user_key_type=validate_type(user_key, f"{w}.user_key_type") if user_key is not None else None,
            function=_get(s, "function", w, str, required=False),
        ))
    columns = [f.name for f in key] + [s.name for s in states]
    if len(set(columns)) != len(columns):
        raise MetadataError(f"{where}: key columns and keyed states need distinct names")
    reserved = sorted(set(columns) & set(RESERVED_COLUMNS))
    if reserved:
        raise MetadataError(f"{where}: {', '.join(reserved)} is a reserved column name")
    files = _decode_files(k, "files", where, lineage_ids, keyed_max_p=max_p, native=native)
    timers = _decode_files(k, "timers", where, lineage_ids, keyed_max_p=max_p)
    if native and timers:
        raise MetadataError(f"{where}.timers: a rocksdb operator keeps its timers in its RocksDB files")
    return KeyedSection(tuple(key), tuple(states), files, timers, ns)


def _kind(s: dict, where: str, kinds, key_field: str, keyed_kind: str) -> str:
    """A state's kind, one of *kinds*; *key_field* is given for *keyed_kind* and only there."""
    kind = _get(s, "kind", where, str)
    if kind not in kinds.words():
        raise MetadataError(f"{where}.kind must be one of {', '.join(kinds.words())}")
    if (kind == keyed_kind) != (s.get(key_field) is not None):
        raise MetadataError(f"{where}: {key_field} is required for {keyed_kind} state and only there")
    return kind


def _decode_operator_state(s: dict, where: str, lineage_ids: set[str]) -> OperatorState:
    kind = _kind(s, where, OperatorStateKind, "key_type", OperatorStateKind.BROADCAST)
    key_type = s.get("key_type")
    return OperatorState(
        name=_get(s, "name", where, str),
        kind=kind,
        value_type=validate_type(_get(s, "value_type", where, (str, dict)), f"{where}.value_type"),
        files=_decode_files(s, "files", where, lineage_ids),
        key_type=validate_type(key_type, f"{where}.key_type") if key_type is not None else None,
    )


def _decode_files(parent: dict, key: str, where: str, lineage_ids: set[str],
                  keyed_max_p: int | None = None, native: bool = False) -> tuple[DataFile, ...]:
    files = []
    for i, raw in enumerate(_get(parent, key, where, list, required=False, default=[])):
        w = f"{where}.{key}[{i}]"
        f = _obj(raw, w)
        path = check_relative_path(_get(f, "path", w, str), w)
        sp = _get(f, "savepoint", w, str, required=False)
        if sp is not None and sp not in lineage_ids:
            raise MetadataError(f"{w}: savepoint {sp} is not in the lineage")
        size = _get(f, "size", w, int)
        rows = _get(f, "rows", w, int)
        if size < 0 or rows < 0:
            raise MetadataError(f"{w}: size and rows cannot be negative")
        checksum = _get(f, "checksum", w, str)
        if not _CHECKSUM.match(checksum):
            raise MetadataError(f"{w}.checksum must be 'sha256:' and 64 lowercase hex digits")
        groups = None
        if keyed_max_p is not None:
            g = _get(f, "key_groups", w, list)
            if len(g) != 2 or not all(isinstance(x, int) and not isinstance(x, bool) for x in g) \
                    or not 0 <= g[0] <= g[1] < keyed_max_p:
                raise MetadataError(f"{w}.key_groups must be [first, last] within 0..{keyed_max_p - 1}")
            groups = (g[0], g[1])
        name = None
        if native:
            name = check_relative_path(_get(f, "name", w, str), f"{w}.name")
            if "/" in name:
                raise MetadataError(f"{w}.name must be a plain file name")
        files.append(DataFile(FileRef(path, sp), size, checksum, rows, groups, name))
    if native:
        by_range: dict = {}
        for f in files:
            names = by_range.setdefault(f.key_groups, set())
            if f.name in names:
                raise MetadataError(f"{where}.{key}: two files of key groups {f.key_groups} are named {f.name}")
            names.add(f.name)
        ranges = sorted(by_range)
    elif keyed_max_p is not None:
        ranges = sorted(f.key_groups for f in files)
    if keyed_max_p is not None:
        for (_, last), (first, _) in zip(ranges, ranges[1:]):
            if first <= last:
                raise MetadataError(f"{where}.{key}: key-group ranges of two files overlap")
    return tuple(files)
