"""A corpus of bad inputs through the CLI: metadata, data files, specs, arguments, output paths.

Each case is data: the command's arguments, an optional setup that damages a
fresh copy of two savepoints (``base`` and ``derived``, a shallow copy of it)
or writes a spec, and a fragment of the one error line expected. One loop runs
them all and asserts, for each: exit code != 0, exactly one line, starting with
``error:``, no traceback, and every pre-existing file byte-identical.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

from support.builders import build_full_savepoint
from support import REPO
from support.cli_runner import statectl
from support.untrusted_helpers import assert_one_error_line, snapshot


@dataclass(frozen=True)
class Case:
    name: str
    args: tuple[str, ...]  # placeholders: {base} {derived} {tmp} {repo} {spec}
    expect: str  # a fragment of the error line (same placeholders)
    setup: Callable[[Path], None] | None = None


# --- setups ----------------------------------------------------------------------------------

def meta(change, sp="base"):
    """A setup editing the parsed `_metadata` of *sp* in place."""
    def setup(root: Path) -> None:
        path = root / sp / "_metadata"
        doc = json.loads(path.read_text())
        change(doc)
        path.write_text(json.dumps(doc))
    return setup


def raw(text: bytes | str, sp="base"):
    def setup(root: Path) -> None:
        data = text.encode() if isinstance(text, str) else text
        (root / sp / "_metadata").write_bytes(data)
    return setup


def spec(text: str):
    def setup(root: Path) -> None:
        (root / "spec.yaml").write_text(text.replace("{repo}", str(REPO)))
    return setup


def files(action):
    """A setup acting on the first data file of operator src in base: action(path, root)."""
    def setup(root: Path) -> None:
        doc = json.loads((root / "base" / "_metadata").read_text())
        path = root / "base" / doc["operators"][1]["operator_states"][0]["files"][0]["path"]
        action(path, root)
    return setup


def both(*setups):
    def setup(root: Path) -> None:
        for s in setups:
            s(root)
    return setup


def op(i, **changes):
    return meta(lambda d: d["operators"][i].update(changes))


def keyed(**changes):
    return meta(lambda d: d["operators"][0]["keyed"].update(changes))


def state0(**changes):
    return meta(lambda d: d["operators"][0]["keyed"]["states"][0].update(changes))


def file0(**changes):
    return meta(lambda d: d["operators"][1]["operator_states"][0]["files"][0].update(changes))


def kfile0(**changes):
    return meta(lambda d: d["operators"][0]["keyed"]["files"][0].update(changes))


def lineage(**changes):
    return meta(lambda d: d["lineage"][0].update(changes), sp="derived")


def set_key(key, value):
    return meta(lambda d: d.__setitem__(key, value))


def drop_key(key):
    return meta(lambda d: d.pop(key))


def truncate(path, root):
    path.write_bytes(path.read_bytes()[:-10])


def flip(path, root):
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def symlink_out(path, root):
    outside = root / "outside.parquet"
    shutil.copy(path, outside)
    path.unlink()
    os.symlink(outside, path)


INFO = ("info", "{base}")
SELF_CONTAINED = ("modify", "{derived}", "{tmp}/out", "--self-contained")
SPEC_OK_OP = ("  - uid: src\n    operator_state:\n      - {name: o, kind: list, column: offset, "
              "input: {path: {repo}/examples/data/offsets.csv}}\n")
BOOT = ("bootstrap", "--spec", "{spec}", "{tmp}/out")
READ = ("read", "{base}", "--uid", "src", "--state", "offsets")

CASES = [
    # --- _metadata: not a statectl document ---
    Case("metadata empty", INFO, "_metadata: not a statectl _metadata file (invalid JSON", raw("")),
    Case("metadata garbage", INFO, "invalid JSON", raw(b"\xff\xfe\x00garbage")),
    Case("metadata truncated", INFO, "invalid JSON", raw('{"format": "statectl-savepoint", ')),
    Case("metadata array", INFO, 'no "format": "statectl-savepoint"', raw("[]")),
    Case("metadata string", INFO, 'no "format"', raw('"x"')),
    Case("format missing", INFO, 'no "format"', drop_key("format")),
    Case("format other", INFO, 'no "format"', set_key("format", "flink")),
    Case("version 2", INFO, "format version 2 is not supported", set_key("format_version", 2)),
    Case("version string", INFO, "format version '1' is not supported", set_key("format_version", "1")),
    Case("version true", INFO, "format version True is not supported", set_key("format_version", True)),
    Case("version float", INFO, "format version 1.0 is not supported", set_key("format_version", 1.0)),
    Case("version missing", INFO, "format version None is not supported", drop_key("format_version")),
    Case("deep JSON", INFO, "JSON nested too deeply",
         raw('{"format": "statectl-savepoint", "format_version": 1, "x": ' + "[" * 50000 + "]" * 50000 + "}")),
    # --- _metadata: fields ---
    Case("savepoint_id missing", INFO, "savepoint.savepoint_id is missing", drop_key("savepoint_id")),
    Case("savepoint_id number", INFO, "savepoint.savepoint_id has the wrong type (int)", set_key("savepoint_id", 7)),
    Case("created_at missing", INFO, "savepoint.created_at is missing", drop_key("created_at")),
    Case("operators missing", INFO, "savepoint.operators is missing", drop_key("operators")),
    Case("operators object", INFO, "savepoint.operators has the wrong type (dict)", set_key("operators", {})),
    Case("operator not object", INFO, "operators[0] must be an object", set_key("operators", [1])),
    Case("lineage object", INFO, "lineage.lineage has the wrong type (dict)", set_key("lineage", {})),
    Case("operator id short", INFO, "operators[0].operator_id must be 32 lowercase hex digits", op(0, operator_id="abc")),
    Case("operator id upper", INFO, "must be 32 lowercase hex digits", op(0, operator_id="576DD1D1F766474368806DEB544DED87")),
    Case("uid mismatch", INFO, "operators[0]: operator_id does not match uid 'other'", op(0, uid="other")),
    Case("uid number", INFO, "uid has the wrong type (int)", op(0, uid=5)),
    Case("duplicate operators", INFO, "two operators have the same operator id",
         meta(lambda d: d["operators"].append(d["operators"][1]))),
    Case("parallelism 0", INFO, "parallelism must be between 1 and the max parallelism 16, got 0", op(0, parallelism=0)),
    Case("parallelism over max", INFO, "parallelism must be between 1 and the max parallelism 16, got 17", op(0, parallelism=17)),
    Case("parallelism string", INFO, "operator proc.parallelism has the wrong type (str)", op(0, parallelism="3")),
    Case("parallelism bool", INFO, "operator proc.parallelism has the wrong type (bool)", op(0, parallelism=True)),
    Case("max parallelism 0", INFO, "max parallelism must be between 1 and 32768, got 0", op(0, max_parallelism=0)),
    Case("max parallelism huge", INFO, "max parallelism must be between 1 and 32768, got 40000", op(0, max_parallelism=40000)),
    Case("max parallelism float", INFO, "max_parallelism has the wrong type (float)", op(0, max_parallelism=16.0)),
    Case("physical format unknown", INFO, "physical format 'orc' is not supported", op(0, format="orc")),
    Case("keyed not object", INFO, "operator proc.keyed must be an object", op(0, keyed=[])),
    Case("key empty", INFO, "operator proc.keyed.key needs at least one column", keyed(key=[])),
    Case("key type float", INFO, "key column 'user' has type float64, which cannot be a key", keyed(key=[{"name": "user", "type": "float64"}])),
    Case("key type unknown", INFO, "unknown type 'uuid'", keyed(key=[{"name": "user", "type": "uuid"}])),
    Case("type not a type", INFO, "a type is a name or a one-key object", state0(value_type={"list": "int64", "x": 1})),
    Case("deep type", INFO, "type nested deeper than 64 levels",
         state0(value_type=json.loads('{"list": ' * 100 + '"int64"' + "}" * 100))),
    Case("decimal precision", INFO, "need 1 <= precision <= 38", state0(value_type={"decimal": {"precision": 50, "scale": 2}})),
    Case("timestamp unit", INFO, "unit must be one of", state0(value_type={"timestamp": {"unit": "ns", "tz": None}})),
    Case("state kind unknown", INFO, "kind must be one of value, list, map, reducing, aggregating", state0(kind="set")),
    Case("value with user key", INFO, "user_key_type is required for map state and only there", state0(user_key_type="string")),
    Case("map without user key", INFO, "user_key_type is required for map state and only there", state0(kind="map")),
    Case("duplicate state names", INFO, "two states have the same name",
         meta(lambda d: d["operators"][1]["operator_states"][1].update(name="offsets"))),
    Case("reserved column", INFO, "_key_group is a reserved column name", state0(name="_key_group")),
    Case("key and state same name", INFO, "key columns and keyed states need distinct names", state0(name="user")),
    Case("broadcast without key type", INFO, "key_type is required for broadcast state and only there",
         meta(lambda d: d["operators"][1]["operator_states"][2].pop("key_type"))),
    Case("list with key type", INFO, "key_type is required for broadcast state and only there",
         meta(lambda d: d["operators"][1]["operator_states"][0].update(key_type="string"))),
    Case("operator state kind", INFO, "kind must be one of list, union, broadcast",
         meta(lambda d: d["operators"][1]["operator_states"][0].update(kind="queue"))),
    # --- _metadata: file references ---
    Case("path absolute", INFO, "'/etc/passwd' is not a plain relative path", file0(path="/etc/passwd")),
    Case("path dotdot", INFO, "'../../etc/passwd' may not contain empty, '.' or '..' components", file0(path="../../etc/passwd")),
    Case("path inner dotdot", INFO, "may not contain empty, '.' or '..' components", file0(path="a/../../b")),
    Case("path scheme", INFO, "'s3://bucket/x' is not a plain relative path", file0(path="s3://bucket/x")),
    Case("path backslash", INFO, "is not a plain relative path", file0(path="a\\..\\b")),
    Case("path NUL", INFO, "is not a plain relative path", file0(path="a\x00b")),
    Case("path empty", INFO, "empty path", file0(path="")),
    Case("path double slash", INFO, "may not contain empty", file0(path="a//b")),
    Case("path too long", INFO, "path longer than 1024 characters", file0(path="a" * 2000)),
    Case("path number", INFO, "path has the wrong type (int)", file0(path=3)),
    Case("size negative", INFO, "size and rows cannot be negative", file0(size=-1)),
    Case("rows negative", INFO, "size and rows cannot be negative", file0(rows=-5)),
    Case("checksum md5", INFO, "checksum must be 'sha256:' and 64 lowercase hex digits", file0(checksum="md5:abc")),
    Case("key_groups missing", INFO, "key_groups is missing", meta(lambda d: d["operators"][0]["keyed"]["files"][0].pop("key_groups"))),
    Case("key_groups outside", INFO, "key_groups must be [first, last] within 0..15", kfile0(key_groups=[0, 16])),
    Case("key_groups reversed", INFO, "key_groups must be [first, last] within 0..15", kfile0(key_groups=[5, 2])),
    Case("key_groups bools", INFO, "key_groups must be [first, last] within 0..15", kfile0(key_groups=[False, True])),
    Case("key_groups overlap", INFO, "key-group ranges of two files overlap",
         meta(lambda d: d["operators"][0]["keyed"]["files"][1].update(
             key_groups=d["operators"][0]["keyed"]["files"][0]["key_groups"]))),
    Case("shared file without lineage", INFO, "savepoint nope is not in the lineage", file0(savepoint="nope")),
    # --- _metadata: lineage ---
    Case("lineage twice", ("info", "{derived}"), "lineage names a savepoint twice",
         meta(lambda d: d["lineage"].append(d["lineage"][0]), sp="derived")),
    Case("lineage names itself", ("info", "{derived}"), "lineage names the savepoint itself",
         meta(lambda d: d.update(savepoint_id=d["lineage"][0]["savepoint_id"]), sp="derived")),
    Case("lineage /etc", ("info", "{derived}"), "lineage location '/etc' does not hold savepoint", lineage(location="/etc")),
    Case("lineage relative", ("info", "{derived}"), "lineage location '../../../../etc' is not absolute", lineage(location="../../../../etc")),
    Case("lineage dotdot", ("info", "{derived}"), "may not contain '.', '..' or empty components", lineage(location="/tmp/../etc")),
    Case("lineage s3 endpoint", ("info", "{derived}"), "is not on the savepoint's own filesystem (local)",
         lineage(location="s3://bucket/sp?endpoint_override=127.0.0.1:9&scheme=http")),
    Case("lineage hdfs", ("info", "{derived}"), "is not on the savepoint's own filesystem", lineage(location="hdfs://nn/sp")),
    Case("lineage another savepoint", ("info", "{derived}"), "does not hold savepoint",
         lineage(location="{tmp}/derived")),
    Case("lineage location number", ("info", "{derived}"), "lineage[0].location has the wrong type (int)", lineage(location=5)),
    Case("lineage modify self-contained", SELF_CONTAINED, "lineage location '/etc' does not hold savepoint", lineage(location="/etc")),
    # --- data files (copied and checked by modify --self-contained) ---
    Case("file truncated", SELF_CONTAINED, "size is", files(truncate)),
    Case("file altered", SELF_CONTAINED, "checksum mismatch (file altered or corrupt)", files(flip)),
    Case("file missing", SELF_CONTAINED, "file is missing", files(lambda p, r: p.unlink())),
    Case("file is a directory", SELF_CONTAINED, ".parquet: not a file", files(lambda p, r: (p.unlink(), p.mkdir()))),
    Case("file symlinked out", SELF_CONTAINED, "leads out of the savepoint (a symlink)", files(symlink_out)),
    Case("file symlink to passwd", SELF_CONTAINED, "leads out of the savepoint (a symlink)",
         files(lambda p, r: (p.unlink(), os.symlink("/etc/passwd", p)))),
    Case("base gone", SELF_CONTAINED, "file is missing", lambda root: shutil.rmtree(root / "base")),
    # --- specs (all refused before Spark starts) ---
    Case("spec missing", ("bootstrap", "--spec", "{tmp}/nope.yaml", "{tmp}/out"), "nope.yaml: no such spec file"),
    Case("spec not YAML", BOOT, "not valid YAML", spec("operators: [\n")),
    Case("spec deep", BOOT, "nested too deeply", spec("operators: " + "[" * 5000 + "]" * 5000)),
    Case("spec a list", BOOT, "must be a mapping, got a list", spec("- a\n- b\n")),
    Case("spec empty", BOOT, "must be a mapping, got nothing", spec("")),
    Case("spec unknown field", BOOT, "unknown field(s) colour", spec("colour: red\noperators: []\n")),
    Case("spec no operators", BOOT, "field 'operators' is required", spec("max_parallelism: 8\n")),
    Case("spec operators empty", BOOT, "operators is empty", spec("operators: []\n")),
    Case("spec max parallelism 0", BOOT, "max parallelism must be between 1 and 32768, got 0",
         spec("max_parallelism: 0\noperators:\n" + SPEC_OK_OP)),
    Case("spec max parallelism huge", BOOT, "max parallelism must be between 1 and 32768, got 99999",
         spec("max_parallelism: 99999\noperators:\n" + SPEC_OK_OP)),
    Case("spec max parallelism text", BOOT, "max_parallelism must be an integer, got a string",
         spec("max_parallelism: lots\noperators:\n" + SPEC_OK_OP)),
    Case("spec parallelism 0", BOOT, "operator 'src': parallelism must be between 1",
         spec("operators:\n" + SPEC_OK_OP + "    parallelism: 0\n")),
    Case("spec parallelism over max", BOOT, "parallelism must be between 1 and the max parallelism 2, got 3",
         spec("operators:\n" + SPEC_OK_OP + "    parallelism: 3\n    max_parallelism: 2\n")),
    Case("spec operator max 0", BOOT, "operator 'src': max parallelism must be between 1 and 32768, got 0",
         spec("operators:\n" + SPEC_OK_OP + "    max_parallelism: 0\n")),
    Case("spec uid missing", BOOT, "field 'uid' is required", spec("operators:\n  - parallelism: 1\n")),
    Case("spec uid number", BOOT, "uid must be a string, got an integer", spec("operators:\n  - uid: 5\n")),
    Case("spec uid twice", BOOT, "operator(s) 'src' given twice", spec("operators:\n" + SPEC_OK_OP + SPEC_OK_OP)),
    Case("spec no state", BOOT, "operator 'x': no state given", spec("operators:\n  - uid: x\n")),
    Case("spec input missing", BOOT, "input nope.csv not found",
         spec("operators:\n  - uid: x\n    operator_state:\n      - {name: o, kind: list, column: c, input: {path: nope.csv}}\n")),
    Case("spec input extension", BOOT, "cannot tell the format of",
         spec("operators:\n  - uid: x\n    operator_state:\n      - {name: o, kind: list, column: c, input: {path: {repo}/README.md}}\n")),
    Case("spec input format", BOOT, "format must be parquet, csv or json, got 'xml'",
         spec("operators:\n  - uid: x\n    operator_state:\n      - {name: o, kind: list, column: c, input: {path: {repo}/README.md, format: xml}}\n")),
    Case("spec state kind", BOOT, "kind must be list, union or broadcast, got 'queue'",
         spec("operators:\n  - uid: x\n    operator_state:\n      - {name: o, kind: queue, column: c}\n")),
    Case("spec keyed kind", BOOT, "kind must be one of value, list, map, reducing, aggregating, got 'set'",
         spec("operators:\n  - uid: x\n    keyed:\n      key: k\n      states:\n        - {name: s, kind: set}\n")),
    Case("spec keyed no key", BOOT, "field 'key' is required",
         spec("operators:\n  - uid: x\n    keyed:\n      states: []\n")),
    Case("spec function malformed", BOOT, "must be 'file.py:function' or 'module:function', got 'nocolon'",
         spec("operators:\n  - uid: x\n    keyed:\n      key: k\n      function: nocolon\n")),
    Case("spec function module", BOOT, "cannot import no_such_module_xyz",
         spec("operators:\n  - uid: x\n    keyed:\n      key: k\n      function: no_such_module_xyz:f\n")),
    Case("spec is a directory", ("bootstrap", "--spec", "{tmp}", "{tmp}/out"), "is a directory"),
    # --- command-line arguments ---
    Case("no such savepoint", ("info", "{tmp}/nope"), "no such savepoint directory"),
    Case("savepoint is a file", ("info", "{tmp}/base/_metadata"), "_metadata: no such savepoint directory"),
    Case("directory without metadata", ("info", "{tmp}/d"), "no _metadata file, so not a savepoint",
         lambda root: ((root / "d" / "chk-3").mkdir(parents=True), (root / "d" / "chk-3" / "a").write_text("x"))),
    Case("checkpoint not under a folder", ("info", "{tmp}", "--checkpoint", "3"), "no complete checkpoint chk-3 under it"),
    Case("checkpoint of one savepoint", ("info", "{base}", "--checkpoint", "3"), "is one snapshot: --checkpoint chooses"),
    Case("missing argument", ("read",), "Missing argument 'savepoint'"),
    Case("unknown option", ("info", "{base}", "--colour"), "No such option: --colour"),
    Case("unknown command", ("frobnicate",), "No such command 'frobnicate'"),
    Case("limit negative", READ + ("--limit", "-1"), "Invalid value for '--limit'"),
    Case("limit text", READ + ("--limit", "ten"), "Invalid value for '--limit'"),
    Case("read format unknown", READ + ("--format", "xml"), "unknown format 'xml'"),
    Case("read parquet no output", READ + ("--format", "parquet"), "--format parquet writes a directory"),
    Case("read table with output", READ + ("--output", "{tmp}/x"), "--output needs --format jsonl, csv or parquet"),
    Case("read no operator", ("read", "{base}"), "name the operator with exactly one of --uid, --operator-id or --name"),
    Case("read both operator names", ("read", "{base}", "--uid", "src", "--operator-id", "0" * 32), "exactly one of"),
    Case("read unknown uid", ("read", "{base}", "--uid", "nope"), "no operator with uid 'nope'"),
    Case("read unknown state", ("read", "{base}", "--uid", "src", "--state", "nope"),
         "operator src has no keyed state; it has operator states: offsets (list), members (union), rules (broadcast)"),
    Case("read timers of operator state", ("read", "{base}", "--uid", "src", "--timers"), "src"),
    Case("sql insert", ("sql", "{base}", "INSERT OVERWRITE DIRECTORY '{base}/x' SELECT 1"), "statectl sql runs queries only"),
    Case("sql with insert", ("sql", "{base}", "WITH a AS (SELECT 1) INSERT INTO t SELECT * FROM a"), "INSERT changes data"),
    Case("sql from insert", ("sql", "{base}", "FROM proc INSERT OVERWRITE TABLE t SELECT *"), "INSERT changes data"),
    Case("sql create", ("sql", "{base}", "CREATE TABLE t AS SELECT 1"), "the statement begins with CREATE"),
    Case("sql set", ("sql", "{base}", "SET spark.sql.warehouse.dir=/tmp"), "the statement begins with SET"),
    Case("sql two statements", ("sql", "{base}", "SELECT 1; SELECT 2"), "runs one query"),
    Case("sql unterminated", ("sql", "{base}", "SELECT 'a"), "unterminated quote or comment"),
    Case("sql empty", ("sql", "{base}", "  "), "the statement begins with nothing"),
    Case("rescale max 0", ("rescale", "{base}", "{tmp}/out", "--max-parallelism", "0"), "max parallelism must be between 1 and 32768, got 0"),
    Case("rescale max huge", ("rescale", "{base}", "{tmp}/out", "--max-parallelism", "40000"), "got 40000"),
    Case("rescale below parallelism", ("rescale", "{base}", "{tmp}/out", "--max-parallelism", "2"),
         "operator proc runs at parallelism 3, more than the new max parallelism 2"),
    Case("rescale parallelism over", ("rescale", "{base}", "{tmp}/out", "--max-parallelism", "8", "--parallelism", "9"),
         "parallelism must be between 1 and the max parallelism 8, got 9"),
    Case("rescale operator state only", ("rescale", "{base}", "{tmp}/out", "--max-parallelism", "8", "--uid", "src"),
         "operator src has no keyed state to rescale"),
    Case("modify remove unknown", ("modify", "{base}", "{tmp}/out", "--remove", "nope"), "no operator with uid 'nope'"),
    Case("modify remove twice", ("modify", "{base}", "{tmp}/out", "--remove", "src", "--remove", "src"), "operator src is removed twice"),
    Case("modify rename malformed", ("modify", "{base}", "{tmp}/out", "--rename", "src"), "--rename takes OLD=NEW, got 'src'"),
    Case("modify rename clash", ("modify", "{base}", "{tmp}/out", "--rename", "src=proc"), "two operators of the output would have uid 'proc'"),
    Case("bootstrap format unknown", ("bootstrap", "--spec", "{repo}/examples/spec.yaml", "{tmp}/out", "--format", "orc"), "unknown format 'orc'"),
    # --- output paths ---
    Case("modify into base", ("modify", "{base}", "{base}/inside"), "output {base}/inside is inside the savepoint {base}"),
    Case("modify onto base", ("modify", "{base}", "{base}"), "output {base} is the savepoint {base}"),
    Case("modify around base", ("modify", "{base}", "{tmp}"), "output {tmp} contains the savepoint {base}"),
    Case("modify into lineage", ("modify", "{derived}", "{base}/x"), "output {base}/x is inside the savepoint {base}"),
    Case("modify onto savepoint", ("modify", "{base}", "{derived}"), "already holds a savepoint; choose a new output or pass --overwrite"),
    Case("modify to a file", ("modify", "{base}", "{tmp}/f"), "output {tmp}/f is a file; give a directory",
         lambda root: (root / "f").write_text("x")),
    Case("modify below a file", ("modify", "{base}", "{tmp}/f/g/h"), "lies below {tmp}/f, which is a file",
         lambda root: (root / "f").write_text("x")),
    Case("modify to non-empty", ("modify", "{base}", "{tmp}/full"), "is a directory that is not empty",
         lambda root: ((root / "full").mkdir(), (root / "full" / "a").write_text("x"))),
    Case("bootstrap into base", ("bootstrap", "--spec", "{repo}/examples/spec.yaml", "--base", "{base}", "{base}/v2"),
         "output {base}/v2 is inside the savepoint {base}"),
    Case("bootstrap to a file", ("bootstrap", "--spec", "{repo}/examples/spec.yaml", "{tmp}/f"), "is a file",
         lambda root: (root / "f").write_text("x")),
    Case("rescale into source", ("rescale", "{base}", "{base}/r", "--max-parallelism", "8"), "is inside the savepoint {base}"),
    Case("rescale into lineage", ("rescale", "{derived}", "{base}/r", "--max-parallelism", "8"), "is inside the savepoint {base}"),
    Case("read output metadata", READ + ("--format", "jsonl", "--output", "{base}/_metadata"), "is inside the savepoint {base}"),
    Case("read output data dir", READ + ("--format", "parquet", "--output", "{base}/f362c87ffabe89c8a91fa7d0a523ba6c"), "is inside the savepoint"),
    Case("read output into lineage", ("read", "{derived}", "--uid", "src", "--state", "offsets", "--format", "csv",
                                      "--output", "{base}/x.csv"), "is inside the savepoint {base}"),
    Case("read output exists", READ + ("--format", "csv", "--output", "{tmp}/f"), "already exists; choose a new output or pass --overwrite",
         lambda root: (root / "f").write_text("x")),
    Case("read output is a directory", READ + ("--format", "csv", "--output", "{tmp}/d"), "is a directory; give a file name",
         lambda root: (root / "d").mkdir()),
    Case("read output below a file", READ + ("--format", "csv", "--output", "{tmp}/f/x.csv"), "which is a file",
         lambda root: (root / "f").write_text("x")),
    Case("read parquet output non-empty", READ + ("--format", "parquet", "--output", "{tmp}/full"), "is a directory that is not empty",
         lambda root: ((root / "full").mkdir(), (root / "full" / "a").write_text("x"))),
    Case("sql output into savepoint", ("sql", "{base}", "SELECT 1", "--format", "jsonl", "--output", "{base}/x"), "is inside the savepoint"),
]


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    """A savepoint and a shallow copy of it, built once; each case works on copies."""
    root = tmp_path_factory.mktemp("pristine")
    build_full_savepoint(root / "base")
    result = statectl("modify", str(root / "base"), str(root / "derived"), "--json")
    assert result.returncode == 0, result.stderr
    return root


def _copy(pristine: Path, root: Path) -> None:
    shutil.copytree(pristine / "base", root / "base", symlinks=True)
    shutil.copytree(pristine / "derived", root / "derived", symlinks=True)
    meta = root / "derived" / "_metadata"
    doc = json.loads(meta.read_text())
    doc["lineage"][0]["location"] = str(root / "base")
    meta.write_text(json.dumps(doc))


def test_the_corpus_has_at_least_100_distinct_cases():
    names = [c.name for c in CASES]
    assert len(names) == len(set(names)) and len(CASES) >= 100


@pytest.mark.slow
def test_every_bad_input_ends_in_one_error_line_and_changes_nothing(pristine, tmp_path):
    started, failures = time.monotonic(), []
    for i, case in enumerate(CASES):
        root = tmp_path / f"case{i}"
        root.mkdir()
        _copy(pristine, root)
        fill = {"base": str(root / "base"), "derived": str(root / "derived"), "tmp": str(root),
                "repo": str(REPO), "spec": str(root / "spec.yaml")}
        if case.setup is not None:
            _resolve_setup(case.setup, fill)(root)
        before = snapshot(root)
        result = statectl(*(a.format(**fill) if "{" in a and not a.startswith("{\"") else a
                            for a in case.args), cwd=str(REPO))
        try:
            assert_one_error_line(result, case.expect.format(**fill))
            assert snapshot(root) == before, "a file changed"
        except AssertionError as e:
            failures.append(f"{case.name}: {str(e).splitlines()[0]} | {result.stderr.strip()[:300]}")
    elapsed = time.monotonic() - started
    print(f"\n{len(CASES)} bad inputs in {elapsed:.0f} s ({elapsed / len(CASES):.2f} s each)")
    assert not failures, "\n".join(failures)


def _resolve_setup(setup, fill):
    """Setups written with placeholders ({tmp}) in edited values get them filled."""
    def run(root: Path) -> None:
        setup(root)
        meta = root / "derived" / "_metadata"
        text = meta.read_text()
        if "{tmp}" in text:
            meta.write_text(text.replace("{tmp}", fill["tmp"]))
    return run
