"""The walk over a canonical keyed stream's entries in plain Python, for a few key groups; and
the answer codes of both walks (:mod:`.kernels` compiles the other).

The compiled walk costs its start once per process: importing numba and loading its CPU target
take about 0.4 s before a cached kernel runs, the time of walking some hundred thousand entries
here (about a microsecond each). A key lookup (`read --key`, the explorer's pages) walks one key
group, so :func:`~.streams.scan_canonical` walks here while the process has not started numba
and has walked less than :data:`statectl.statefmt.jit.PLAIN_BUDGET` so;
the two walks give the same answers, errors included (tests/statefmt/flink/test_flink_walk.py).
"""

from __future__ import annotations

import numpy as np

OK, ENDS_EARLY, UNKNOWN_STATE, TRAILING = 0, 1, 2, 3


def walk_small(data: bytes, blocks: np.ndarray, n_states: int, prefix: int, last_mark: int, end_mark: int):
    """:func:`.kernels.walk_canonical`'s answer, walked in Python over *data* (bytes)."""
    found: list[list[list[int]]] = [[[], [], [], []] for _ in range(n_states)]
    for b, (key_group, pos, end) in enumerate(blocks.tolist()):
        end = min(end, len(data))
        if pos + 2 > end:
            return None, (ENDS_EARLY, b, pos, 0)
        sid = int.from_bytes(data[pos:pos + 2], "big")
        pos += 2
        while True:
            if sid >= n_states:
                return None, (UNKNOWN_STATE, b, pos - 2, sid)
            groups, key_starts, key_ends, value_ends = found[sid]
            while True:
                if pos + 4 > end:
                    return None, (ENDS_EARLY, b, pos, sid)
                key_len = int.from_bytes(data[pos:pos + 4], "big", signed=True)
                if key_len < prefix or pos + 8 + key_len > end:
                    return None, (ENDS_EARLY, b, pos, sid)
                value_at = pos + 4 + key_len
                value_len = int.from_bytes(data[value_at:value_at + 4], "big", signed=True)
                if value_len < 0 or pos + 8 + key_len + value_len > end:
                    return None, (ENDS_EARLY, b, pos, sid)
                groups.append(key_group)
                key_starts.append(pos + 4 + prefix)
                key_ends.append(value_at)
                value_ends.append(value_at + 4 + value_len)
                meta_follows = data[pos + 4] & last_mark
                pos = value_at + 4 + value_len
                if meta_follows:
                    break
            if pos + 2 > end:
                return None, (ENDS_EARLY, b, pos, sid)
            sid = int.from_bytes(data[pos:pos + 2], "big")
            pos += 2
            if sid == end_mark:
                if pos != end:
                    return None, (TRAILING, b, pos, 0)
                break
    out = {}
    for sid, (groups, key_starts, key_ends, value_ends) in enumerate(found):
        if groups:
            out[sid] = (np.array(groups, dtype=np.int32), np.array(key_starts, dtype=np.int64),
                        np.array(key_ends, dtype=np.int64), np.array(value_ends, dtype=np.int64))
    return out, None
