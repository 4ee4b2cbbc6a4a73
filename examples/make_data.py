"""Regenerate the example historical data set in examples/data (deterministic).

    python examples/make_data.py
"""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

DATA = Path(__file__).resolve().parent / "data"
USERS = [f"user-{i:02d}" for i in range(20)]
KINDS = ["view", "click", "cart", "buy"]
START = 1_700_000_000_000  # epoch millis


def main() -> None:
    rng = random.Random(7)
    DATA.mkdir(exist_ok=True)
    events = [(u, START + i * 60_000, rng.choice(KINDS)) for i in range(200)
              for u in [rng.choice(USERS)]]
    pq.write_table(pa.table({
        "user": [e[0] for e in events], "ts": [e[1] for e in events],
        "event": [e[2] for e in events],
    }), DATA / "events.parquet")
    with open(DATA / "counts.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["user", "n"])
        for u in USERS:
            w.writerow([u, sum(1 for e in events if e[0] == u)])
    with open(DATA / "attrs.jsonl", "w") as f:
        for u in USERS[:12]:
            for attr in ("country", "tier"):
                val = rng.choice(["de", "fr", "us"]) if attr == "country" else rng.choice(["free", "pro"])
                f.write(json.dumps({"user": u, "attr": attr, "val": val}) + "\n")
    amounts = [(rng.choice(USERS), round(rng.uniform(1, 100), 2)) for _ in range(120)]
    pq.write_table(pa.table({"user": [a[0] for a in amounts], "amount": [a[1] for a in amounts]}),
                   DATA / "amounts.parquet")
    with open(DATA / "amount-totals.jsonl", "w") as f:  # reduced per user, as a Flink savepoint stores it
        for u in sorted({a[0] for a in amounts}):
            mine = [a[1] for a in amounts if a[0] == u]
            total = round(sum(mine), 2)
            f.write(json.dumps({"user": u, "total": total, "acc": {"f0": total, "f1": len(mine)}}) + "\n")
    pq.write_table(pa.table({"user": USERS[:8], "ts": [START + 86_400_000 + i for i in range(8)]}),
                   DATA / "timers.parquet")
    _csv("offsets.csv", ["partition", "offset"], [[p, 1000 + 17 * p] for p in range(6)])
    _csv("members.csv", ["member"], [[f"node-{i}"] for i in range(4)])
    _csv("rules.csv", ["rule", "pattern"], [["fraud", "buy{3,}"], ["churn", "view+"],
                                            ["upsell", "cart buy"]])


def _csv(name: str, header: list[str], rows: list[list]) -> None:
    with open(DATA / name, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)


if __name__ == "__main__":
    main()
