"""Builds the savepoints `check` and `remap` are timed on (with farm-bench, whole processes):

- OLD: a Flink 2.3 savepoint of N operators (default 1,000), copies of the keyed and
  operator-state operators of a real savepoint of the suite's job (bench_info.build_flink);
- NEW-SAME: OLD's `_metadata` again (every operator restored as is);
- NEW-RENAMED: every uid changed, names kept (every operator matched by name).

    python bench/bench_upgrade.py DIR [--operators 1000]
    farm-bench -- statectl check DIR/old --against DIR/new-renamed

`remap` with only ids changed against `modify --rename` (both write shallow copies), on the 1M-key
Flink savepoint (`bench_flink_read.flink_savepoints`) and NEW = :func:`renamed` of it with "v2-":

    farm-bench --vs "statectl modify OLD M --rename proc=v2-proc --rename src=v2-src --overwrite" \
        -- statectl remap OLD R --against NEW --overwrite
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))

from bench_info import build_flink  # noqa: E402
from statectl.statefmt.flink.metadata import parse_metadata  # noqa: E402
from statectl.statefmt.flink.metadata_write import encode_metadata  # noqa: E402
from statectl.statefmt.ids import operator_id_for_uid  # noqa: E402


def renamed(old: Path, new: Path, prefix: str | None) -> None:
    """*old*'s operators again at *new* (over the same stream files), each uid prefixed."""
    meta = parse_metadata((old / "_metadata").read_bytes())
    ops = meta.operators if prefix is None else tuple(
        dataclasses.replace(op, uid=prefix + op.uid, operator_id=operator_id_for_uid(prefix + op.uid))
        for op in meta.operators)
    shutil.copytree(old, new, ignore=shutil.ignore_patterns("_metadata"))
    (new / "_metadata").write_bytes(encode_metadata(dataclasses.replace(meta, operators=ops)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir", type=Path)
    parser.add_argument("--operators", type=int, default=1000)
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    build_flink(args.dir / "old", args.operators)
    renamed(args.dir / "old", args.dir / "new-same", None)
    renamed(args.dir / "old", args.dir / "new-renamed", "v2-")
    print(f"built {args.dir}/old, new-same, new-renamed ({args.operators} operators)")


if __name__ == "__main__":
    main()
