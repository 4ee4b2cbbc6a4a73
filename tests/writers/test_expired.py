"""`writers/expired.py`: TTL entries taken out of Arrow batches equal, for any values and
timestamps (nulls, negative, near the largest long), a plain-Python statement of Flink's rule
applied row by row; sliced batches included."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from statectl.writers.expired import ExpiryRule, TtlState, prune_batch

LONG_MAX = 2**63 - 1
SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string()), ("v_ttl_ts", pa.int64()),
                    ("l", pa.list_(pa.int32())), ("l_ttl_ts", pa.list_(pa.int64())),
                    ("m", pa.map_(pa.string(), pa.int64())), ("m_ttl_ts", pa.map_(pa.string(), pa.int64())),
                    ("plain", pa.int64())])
stamps = st.one_of(st.integers(-1000, 1000), st.integers(LONG_MAX - 2000, LONG_MAX), st.integers(-2**62, 2**62))


def expired(ts, ttl: int, now: int) -> bool:
    if ts is None:
        return False
    return ts + (min(ttl, LONG_MAX - ts) if ts > 0 else ttl) <= now


@st.composite
def rows(draw):
    out = []
    for k in range(draw(st.integers(0, 12))):
        value = draw(st.one_of(st.none(), st.tuples(st.text(max_size=3), stamps)))
        elements = draw(st.one_of(st.none(), st.lists(st.tuples(st.integers(-5, 5), stamps), max_size=4)))
        entries = draw(st.one_of(st.none(), st.dictionaries(st.sampled_from("abcd"), st.tuples(st.integers(-9, 9), stamps),
                                                            max_size=4)))
        out.append({"k": k, "v": value and value[0], "v_ttl_ts": value and value[1],
                    "l": None if elements is None else [e for e, _ in elements],
                    "l_ttl_ts": None if elements is None else [t for _, t in elements],
                    "m": None if entries is None else [(mk, v) for mk, (v, _) in entries.items()],
                    "m_ttl_ts": None if entries is None else [(mk, t) for mk, (_, t) in entries.items()],
                    "plain": draw(st.one_of(st.none(), st.integers(0, 9)))})
    return out


def oracle(table_rows: list[dict], ttl: int, now: int) -> tuple[list[dict], dict]:
    """The rows kept and the entries removed per state (``rows``: rows left without any state)."""
    states = ("v", "l", "m", "plain")
    kept, removed = [], {"v": 0, "l": 0, "m": 0, "rows": 0}
    for original in table_rows:
        row = dict(original)
        if row["v"] is not None and expired(row["v_ttl_ts"], ttl, now):
            row["v"] = row["v_ttl_ts"] = None
            removed["v"] += 1
        for name in ("l", "m"):
            if row[name] is None:
                continue
            pairs = list(zip(row[name], row[f"{name}_ttl_ts"]))
            live = [(e, t) for e, t in pairs if not expired(t if name == "l" else t[1], ttl, now)]
            removed[name] += len(pairs) - len(live)
            emptied = pairs and not live
            row[name] = None if emptied else [e for e, _ in live]
            row[f"{name}_ttl_ts"] = None if emptied else [t for _, t in live]
        if any(row[c] is not None for c in states):
            kept.append(row)
        elif any(original[c] is not None for c in states):
            removed["rows"] += 1
    return kept, removed


@settings(max_examples=100, deadline=None)
@given(rows(), st.integers(1, 2**40), st.one_of(st.integers(-2000, 2000), st.just(LONG_MAX), st.integers()),
       st.integers(0, 3))
def test_prune_batch_is_flinks_rule_row_by_row(table_rows, ttl, now, start):
    now = max(min(now, LONG_MAX), -2**63)
    rule = ExpiryRule((TtlState("v", "value", ttl), TtlState("l", "list", ttl), TtlState("m", "map", ttl)),
                      ("v", "l", "m", "plain"), now)
    batch = pa.RecordBatch.from_pylist(table_rows, schema=SCHEMA).slice(min(start, len(table_rows)))
    given_rows = batch.to_pylist()
    out, removed = prune_batch(batch, rule)
    want, want_removed = oracle(given_rows, ttl, now)
    assert out.to_pylist() == want
    assert removed == want_removed
    assert out.schema == SCHEMA
