"""A command does each thing once: the loaded savepoint travels as an object, never re-opened by
its path, and what a command checks or computes before Spark starts is not done again.

Counted in the driver's process (the command runs in this process on the suite's Spark session;
Spark's Python workers open what their tasks read, which is not counted here)."""

from __future__ import annotations

import json
import shutil

import pytest

from support.cli_runner import statectl
from support.flink_job import FIXTURES
from statectl.readers.flink import FlinkSource
from statectl.statefmt.flink import model as flink_model
from statectl.statefmt.formats import load
from statectl.writers import savepoint_writer

FLINK = FIXTURES / "long-hashmap-canonical" / "savepoint"  # two keyed operators: lk-proc, lk-win


def _counting(monkeypatch, owner, name: str) -> list:
    """Count the calls of *owner*'s *name* (passed on to the real one)."""
    calls, real = [], getattr(owner, name)

    def counted(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return calls


@pytest.mark.slow
def test_a_flink_rescale_loads_its_base_once_and_checks_its_output_once(monkeypatch, tmp_path):
    keyed = [op.label for op in load(FLINK).operators if op.keyed is not None]
    assert len(keyed) == 2
    base = tmp_path / "base"
    shutil.copytree(FLINK, base)
    opened = _counting(monkeypatch, flink_model, "open_flink_savepoint")
    checked = _counting(monkeypatch, savepoint_writer, "check_output")
    out = tmp_path / "out"
    result = statectl("rescale", str(base), str(out), "--max-parallelism", "512")
    assert result.returncode == 0, result.stderr
    # the base: the command's one load, for both rescaled operators; the output: once, by the commit
    assert [str(args[0]) for args in opened] == [str(base), str(out)]
    assert len(checked) == 1
    assert {op.max_parallelism for op in load(out).operators if op.keyed is not None} == {512}


def test_read_key_hashes_its_keys_once(monkeypatch):
    hashed = _counting(monkeypatch, FlinkSource, "key_groups")
    keys = ["9007199254740993", "-23000012506"]
    result = statectl("read", str(FLINK), "--uid", "lk-proc", "--key", keys[0], "--key", keys[1], "--format", "jsonl")
    assert result.returncode == 0, result.stderr
    assert len(hashed) == 1 and [list(k) for k in hashed[0][1]] == [[int(k)] for k in keys]
    assert sorted(json.loads(line)["key"] for line in result.stdout.splitlines()) == sorted(map(int, keys))
