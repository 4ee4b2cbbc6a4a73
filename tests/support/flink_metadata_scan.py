"""A small walk over a Flink `_metadata` file's operator records, counting the state-handle type
bytes it meets (for tests/flink/README.md and the Flink job's tests; not statectl's reader).

Layout: ../shared/notes/flink-format.md §2 (MetadataV2V3SerializerBase; V5+ adds name and uid)."""

from __future__ import annotations

import struct
import sys
from collections import Counter
from pathlib import Path

NAMES = {0: "null", 1: "inline", 2: "absolute file", 3: "key groups (legacy)", 4: "operator stream",
         5: "incremental v1", 6: "relative file", 7: "key groups savepoint", 11: "incremental v2",
         12: "key groups v2"}


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def skip(self, n: int) -> None:
        self.pos += n

    def take(self, fmt: str):
        vals = struct.unpack_from(">" + fmt, self.data, self.pos)
        self.pos += struct.calcsize(">" + fmt)
        return vals[0] if len(vals) == 1 else vals

    def utf(self) -> str:
        n = self.take("H")
        self.pos += n
        return self.data[self.pos - n:self.pos].decode("utf-8", "replace")


def scan(path: Path) -> dict:
    """{'version': int, 'operators': n, 'handles': Counter of type bytes, 'files': [(kind, name, size)]}."""
    r = _Reader(Path(path).read_bytes())
    magic, version, _checkpoint_id = r.take("IIq")
    assert magic == 0x4960672D, "not a Flink _metadata"
    for _ in range(r.take("i")):  # master states
        _magic, length = r.take("ii")
        r.pos += length
    counts: Counter = Counter()
    files: list[tuple[str, str, int]] = []

    def handle() -> None:
        t = r.take("b")
        counts[t] += 1
        if t == 0:
            return
        if t == 1:
            r.utf()
            r.skip(r.take("i"))
        elif t == 2:
            size = r.take("q")
            files.append(("absolute", r.utf(), size))
        elif t == 6:
            name = r.utf()
            files.append(("relative", name, r.take("q")))
        elif t in (3, 7, 12):
            r.take("i")
            r.skip(8 * r.take("i"))
            handle()
            if t == 12:
                r.utf()
        elif t == 4:
            for _ in range(r.take("i")):
                r.utf()
                r.take("b")
                r.skip(8 * r.take("i"))
            handle()
        elif t in (5, 11):
            r.take("q")
            r.utf()
            r.take("ii")
            if t == 11:
                r.take("q")
            handle()
            for _ in range(2):  # shared, then private files
                for _ in range(r.take("i")):
                    r.utf()
                    handle()
            if t == 11:
                r.utf()
        else:
            raise ValueError(f"handle type {t} at offset {r.pos - 1} of {path}")

    n_ops = r.take("i")
    for _ in range(n_ops):
        if version >= 5:
            r.utf(), r.utf()
        r.pos += 16  # OperatorID
        r.take("ii")  # parallelism, max parallelism
        handle()  # coordinator state
        n_sub = r.take("i")
        for _ in range(max(n_sub, 0)):
            if r.take("i") < 0:  # finished subtask
                continue
            for _ in range(2):  # managed, raw operator state
                for _ in range(r.take("i")):
                    handle()
            handle()  # managed keyed
            handle()  # raw keyed
            for _ in range(2):  # input channel, result subpartition state
                if r.take("i"):
                    raise ValueError("unaligned-checkpoint channel state is not expected here")
    return {"version": version, "operators": n_ops, "handles": counts, "files": files}


if __name__ == "__main__":
    for p in sys.argv[1:]:
        s = scan(Path(p))
        hs = ", ".join(f"{t} ({NAMES.get(t, '?')}) x{n}" for t, n in sorted(s["handles"].items()) if t)
        print(f"{p}: v{s['version']}, {s['operators']} operators; {hs}")
