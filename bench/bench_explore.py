"""`statectl explore` on the 1M-key Flink savepoints, driven headless, whole processes.

    python bench/bench_explore.py [--keys 1000000] [--repeat 3] [--pages 10]

Takes the Flink 2.3 canonical and RocksDB-native savepoints of ``bench_flink_read.py`` (the
suite's job in size mode: 1M String keys ``user-%07d`` of operator ``proc``; made once, then
cached). Each run is a fresh Python process that runs the explorer under Textual's test pilot
at 80x24 and reports, from the moment the process was started: the operators screen shown;
then, timed from the key press, the first page of the keyed table (its operator and the
keyed table opened: after ``--think`` seconds on the operators screen, as a user reads it
while the explorer warms its decoders up, and pressed at once), each further page (Next),
and a key found through its key group (a key of the middle key group). Baselines in the same run, as whole processes: `statectl info`
(the first screen's read of `_metadata`) and `statectl read --key` (the local engine's
lookup of the same key). Prints medians with the load average before and after.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "tests"))

from bench_flink_read import UID, flink_savepoints  # noqa: E402
from common import load_average  # noqa: E402

CHILD = r"""
import asyncio, json, sys, time
started = float(sys.argv[1])
from statectl.statefmt.formats import load
from statectl.cli.explore.app import ExploreApp
from statectl.cli.explore.screens import OperatorsScreen, TableScreen

path, uid, key, pages, think = sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), float(sys.argv[6])
out = {}

async def main():
    app = ExploreApp(load(path))
    async with app.run_test(size=(80, 24)) as pilot:
        while not isinstance(app.screen, OperatorsScreen) or not app.screen.table.row_count:
            await pilot.pause()
        out["first screen"] = time.time() - started
        await pilot.pause(think)  # the user reads the operators
        row = [op.uid for op in app.savepoint.operators].index(uid)
        t = time.perf_counter()
        app.screen.table.move_cursor(row=row)
        await pilot.press("enter")   # the operator's states
        await pilot.press("enter")   # the keyed table: its first page
        await pilot.pause()
        assert isinstance(app.screen, TableScreen) and app.screen.view.rows.num_rows == 100
        out["first page"] = time.perf_counter() - t
        times = []
        for _ in range(pages):
            t = time.perf_counter()
            await pilot.press("n")
            await pilot.pause()
            times.append(time.perf_counter() - t)
        out["next page"] = sorted(times)[len(times) // 2]
        t = time.perf_counter()
        app.screen.jump(key)
        await pilot.pause()
        assert app.screen.view.key_of(app.screen.table.cursor_row) == {"key": key}, app.screen.view.position()
        out["key found"] = time.perf_counter() - t

asyncio.run(main())
print(json.dumps(out))
"""


def explore_run(path: Path, key: str, pages: int, think: float) -> dict:
    started = time.time()
    proc = subprocess.run([sys.executable, "-c", CHILD, repr(started), str(path), UID, key, str(pages), str(think)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"explore run failed:\n{proc.stdout}{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def timed(cmd: list[str]) -> float:
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stdout}{proc.stderr}")
    return time.perf_counter() - t


def middle_key(path: Path) -> str:
    """A key of the operator's middle key group (its first row there)."""
    from statectl.readers.questions import Cursor, StateQuestions
    from statectl.statefmt.formats import load

    sp = load(str(path))
    op = sp.operator(UID)
    page = StateQuestions(sp, op).page("keyed", Cursor(op.max_parallelism // 2, 0), 1)
    return page.rows["key"][0].as_py()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keys", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--pages", type=int, default=10)
    ap.add_argument("--think", type=float, default=2.0,
                    help="seconds on the operators screen before the first page (the warm-up's time)")
    args = ap.parse_args()
    paths = flink_savepoints(args.keys)
    statectl = [sys.executable, "-m", "statectl.cli.main"]
    print(f"load average {load_average()} before")
    for name, path in paths.items():
        key = middle_key(path)
        runs, info, lookup = [], [], []
        for i in range(args.repeat + 1):  # the first round warms the page cache and is not counted
            runs.append(explore_run(path, key, args.pages, 0.0))
            runs[-1]["first page, pressed at once"] = runs[-1].pop("first page")
            runs[-1]["first page"] = explore_run(path, key, 1, args.think)["first page"]
            info.append(timed([*statectl, "info", str(path)]))
            lookup.append(timed([*statectl, "read", str(path), "--uid", UID, "--key", key]))
        runs, info, lookup = runs[1:], info[1:], lookup[1:]
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        print(f"{name}, {args.keys:,} keys, median of {args.repeat} processes (key {key}):")
        for k, target in (("first screen", 1.0), ("first page", 1.5), ("first page, pressed at once", 1.5),
                          ("next page", 0.1), ("key found", 0.5)):
            print(f"  {k:27s} {med[k]:7.3f} s  (target <= {target} s; runs: "
                  f"{', '.join(f'{r[k]:.3f}' for r in runs)})")
        print(f"  baseline `statectl info` process:           {statistics.median(info):.3f} s; "
              f"first screen / info = {med['first screen'] / statistics.median(info):.2f}")
        print(f"  baseline `statectl read --key` process:     {statistics.median(lookup):.3f} s")
    print(f"load average {load_average()} after")


if __name__ == "__main__":
    main()
