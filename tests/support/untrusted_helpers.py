"""Helpers for the untrusted-input tests: savepoints to damage, and the shape of a clean failure."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from support.builders import build_full_savepoint
from support.cli_runner import statectl


def snapshot(*roots) -> dict[str, str]:
    """path -> sha256 of every file below *roots* (to prove they stay byte-identical)."""
    out = {}
    for root in roots:
        root = Path(root)
        if not root.exists():
            continue
        for p in sorted(root.rglob("*")):
            if p.is_file() or p.is_symlink():
                data = os.readlink(p).encode() if p.is_symlink() else p.read_bytes()
                out[str(p)] = hashlib.sha256(data).hexdigest()
    return out


def base_and_derived(tmp_path) -> tuple[Path, Path]:
    """A savepoint and a shallow copy of it (every file shared), both built without Spark."""
    base, derived = tmp_path / "base", tmp_path / "derived"
    build_full_savepoint(base)
    result = statectl("modify", str(base), str(derived), "--json")
    assert result.returncode == 0, result.stderr
    return base, derived


def edit_metadata(sp: Path, change) -> None:
    """Rewrite `_metadata` of *sp* after ``change(doc)`` edits the parsed JSON in place."""
    meta = sp / "_metadata"
    doc = json.loads(meta.read_text())
    change(doc)
    meta.write_text(json.dumps(doc))


def assert_one_error_line(result, *fragments: str) -> str:
    """Exit code != 0, exactly one stderr line starting with 'error:', no traceback; the line."""
    assert result.returncode != 0, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr + result.stdout, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error:")]
    assert len(errors) == 1 and len(lines) == 1, result.stderr
    for fragment in fragments:
        assert fragment in errors[0], errors[0]
    return errors[0]
