"""Write a replayable events file: ``timestamp,user,kind`` lines, deterministic for a seed."""

from __future__ import annotations

import random
import sys


def make_events(path: str, n: int = 2000, users: int = 25, seed: int = 7) -> None:
    rnd = random.Random(seed)
    ts = 1_700_000_000_000
    with open(path, "w") as f:
        for _ in range(n):
            ts += rnd.randint(0, 1500)
            f.write(f"{ts},user-{rnd.randrange(users)},{rnd.choice(['view', 'click', 'buy', 'scroll'])}\n")


if __name__ == "__main__":
    make_events(sys.argv[1], *(int(a) for a in sys.argv[2:]))
