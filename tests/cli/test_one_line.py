"""Bad input ends in one `error:` line, never a traceback: nesting is bounded when decoding,
every user- or file-supplied string is escaped before rich renders it, usage errors are one line."""

from __future__ import annotations

import contextlib
import io
import json

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from statectl.cli.output import RichOutput, print_error, printable

from support.builders import build_full_savepoint
from support import REPO
from support.cli_runner import statectl
from support.untrusted_helpers import assert_one_error_line, edit_metadata, snapshot


def _metadata(tmp_path):
    sp = tmp_path / "sp"
    build_full_savepoint(sp)
    return sp


def test_deeply_nested_json_in_metadata(tmp_path):
    sp = _metadata(tmp_path)
    (sp / "_metadata").write_text('{"format": "statectl-savepoint", "x": ' + "[" * 100_000 + "]" * 100_000 + "}")
    assert_one_error_line(statectl("info", str(sp)), f"{sp}/_metadata: JSON nested too deeply")


def _deep_type(sp, depth: int) -> None:
    edit_metadata(sp, lambda d: d["operators"][1]["operator_states"][0].update(value_type="DEEP"))
    meta = sp / "_metadata"
    meta.write_text(meta.read_text().replace('"DEEP"', '{"list": ' * depth + '"int64"' + "}" * depth))


def test_a_2000_deep_type(tmp_path):
    sp = _metadata(tmp_path)
    _deep_type(sp, 64)
    assert statectl("info", str(sp)).returncode == 0
    _deep_type(sp, 500)
    assert_one_error_line(statectl("info", str(sp)), "operator src.operator_states[0].value_type: "
                                                     "type nested deeper than 64 levels")
    _deep_type(sp, 2000)
    assert_one_error_line(statectl("info", str(sp)), f"{sp}/_metadata: JSON nested too deeply")


def test_format_version_true_is_not_version_1(tmp_path):
    sp = _metadata(tmp_path)
    edit_metadata(sp, lambda d: d.update(format_version=True))
    assert_one_error_line(statectl("info", str(sp)), "format version True is not supported")


@pytest.mark.slow
def test_deeply_nested_yaml_spec(tmp_path):
    spec = tmp_path / "deep.yaml"
    spec.write_text("operators: " + "[" * 5000 + "]" * 5000 + "\n")
    assert_one_error_line(statectl("bootstrap", "--spec", str(spec), str(tmp_path / "out")),
                          f"{spec}: nested too deeply")


def test_spec_limits_are_the_cli_limits(tmp_path):
    for top, op, message in [
        ("max_parallelism: 0", "", "max parallelism must be between 1 and 32768, got 0"),
        ("max_parallelism: 40000", "", "max parallelism must be between 1 and 32768, got 40000"),
        ("", "max_parallelism: 0", "operator 'src': max parallelism must be between 1 and 32768, got 0"),
        ("", "parallelism: 0", "operator 'src': parallelism must be between 1 and the max"),
        ("max_parallelism: 4", "parallelism: 5", "operator 'src': parallelism must be between 1 and the max parallelism 4, got 5"),
    ]:
        spec = tmp_path / "spec.yaml"
        spec.write_text(f"{top}\noperators:\n  - uid: src\n    {op}\n    operator_state:\n"
                        f"      - {{name: o, kind: list, column: offset, input: {{path: "
                        f"{REPO}/examples/data/offsets.csv}}}}\n")
        result = statectl("bootstrap", "--spec", str(spec), str(tmp_path / "out"))
        assert_one_error_line(result, message)
        assert not (tmp_path / "out").exists()


def test_markup_characters_in_ids_and_paths_print_as_themselves(tmp_path):
    odd = tmp_path / "sp[red]x[/]"
    build_full_savepoint(odd)
    edit_metadata(odd, lambda d: d.update(savepoint_id="[bold]id[/] :warning: \x1b[31m"))
    info = statectl("info", str(odd))
    assert info.returncode == 0, info.stderr
    assert f"Savepoint {odd}\n  id [bold]id[/] :warning: \\x1b[31m, created" in info.stdout
    result = statectl("modify", str(odd), str(tmp_path / "out[") + "/sp[red]x")
    assert result.returncode == 0, result.stderr
    assert f"to {tmp_path}/out[/sp[red]x\n" in result.stdout
    assert "shares files of savepoint [bold]id[/] :warning: \\x1b[31m at" in result.stdout
    assert_one_error_line(statectl("info", "a["), "a[: no such savepoint directory")
    assert_one_error_line(statectl("info", "[/x]"), "[/x]: no such savepoint directory")


def test_usage_errors_are_one_line_with_exit_code_2(tmp_path):
    for args, message in [
        (["read"], "error: Missing argument 'savepoint'. (see statectl read --help)"),
        (["info", "--bogus", "x"], "error: No such option: --bogus (see statectl info --help)"),
        (["frobnicate"], "error: No such command 'frobnicate'. (see statectl --help)"),
        (["rescale", "a", "b", "--max-parallelism", "x"], "error: Invalid value for '--max-parallelism'"),
    ]:
        result = statectl(*args)
        assert result.returncode == 2
        assert assert_one_error_line(result).startswith(message)


def _render(call) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        call()
    return out.getvalue()


text = st.text(min_size=1, max_size=30)


@settings(max_examples=150)
@example(s="\x1f\x1f\u20280")  # a line separator once broke a table cell
@given(s=text)
def test_every_renderer_prints_any_string_as_itself(s):
    """Any string from a user or a file, through every rich renderer, prints literally."""
    shown = printable(s)
    op = {"uid": s, "operator_id": "0" * 32, "parallelism": 1, "max_parallelism": 1,
          "format": "canonical", "files": 0, "bytes": 0, "shared_files": 0, "shared_bytes": 0,
          "states": [{"name": s, "kind": "list", "scope": "operator", "type": s}]}
    info = {"location": s, "savepoint_id": s, "created_at": s, "format_version": 1,
            "operators": [op], "files": 0, "bytes": 0, "lineage": [{"savepoint_id": s, "location": s}],
            "shared_files": [{"operator": s, "location": s, "bytes": 1}]}
    rendered = _render(lambda: RichOutput().savepoint_info(info))
    assert rendered.count(shown) >= 6, (s, rendered)
    report = {"location": s, "valid": False, "problems": [s], "files_checked": 0, "bytes_checked": 0,
              "dependencies": [{"savepoint_id": s, "location": s, "present": False, "files": 0}],
              "notes": [s]}
    assert _render(lambda: RichOutput().validation(report)).count(shown) >= 5
    written = {"location": s, "savepoint_id": s, "removed": [s], "copied_files": 0,
               "copied_bytes": 0, "removed_leftover_files": 0,
               "lineage": [{"savepoint_id": s, "location": s}],
               "operators": [{"uid": s, "operator_id": s, "action": s, "states": [s], "files": 0,
                              "rows": 0, "bytes": 0}]}
    assert _render(lambda: RichOutput().written(written)).count(shown) >= 5
    rows = [[s, "end"]] * 201  # the plain table, used for many rows
    assert _render(lambda: RichOutput().table("t", ["a", "b"], rows)).count(shown) >= 201
    error = _render(lambda: print_error(s))
    assert error == f"error: {printable(s.strip())}\n"
