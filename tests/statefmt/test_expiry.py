"""Flink's TTL rule (last access + TTL, clamped at the largest long, at most now), and the times
and durations a user gives."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from statectl.statefmt.errors import UsageError
from statectl.statefmt.expiry import LONG_MAX, Ttls, expiration, expired, parse_duration, parse_time, parse_ttls

longs = st.integers(-(2**63), 2**63 - 1)


def flink_expired(ts: int, ttl: int, now: int) -> bool:
    """TtlUtils.expired, in Java's wrapping long arithmetic."""
    room = min(LONG_MAX - ts, ttl) if ts > 0 else ttl
    total = (ts + room + 2**63) % 2**64 - 2**63
    return total <= now


@given(st.lists(longs, min_size=1, max_size=50), st.integers(1, 2**63 - 1), longs)
def test_expired_is_flinks_rule_for_every_long(stamps, ttl, now):
    assert expired(np.array(stamps, dtype=np.int64), ttl, now).tolist() == [flink_expired(t, ttl, now) for t in stamps]


def test_an_entry_expires_exactly_at_last_access_plus_ttl():
    assert expired(pa.array([1000, 1001, None], pa.int64()), 500, 1500).tolist() == [True, False, False]
    assert expiration(np.array([LONG_MAX - 1]), 10).tolist() == [LONG_MAX]


@pytest.mark.parametrize("text, millis", [
    ("0", 0), ("1795773600000", 1795773600000), ("-5", -5),
    ("2026-11-27T10:00:00Z", 1795773600000), ("2026-11-27T10:00:00", 1795773600000),
    ("2026-11-27T11:00:00+01:00", 1795773600000), ("2026-11-27T10:00:00.250Z", 1795773600250),
    ("2026-11-27", 1795737600000),
])
def test_times_as_epoch_millis_or_iso_8601(text, millis):
    assert parse_time(text) == millis


def test_a_time_that_is_neither_is_one_clear_error():
    with pytest.raises(UsageError, match=r"^--expired-at 'yesterday': give epoch milliseconds or an ISO 8601 time"):
        parse_time("yesterday", "--expired-at")


@pytest.mark.parametrize("text, millis", [
    ("500ms", 500), ("500", 500), ("30s", 30_000), ("30 sec", 30_000), ("15min", 900_000), ("15m", 900_000),
    ("12h", 43_200_000), ("7d", 604_800_000), ("7 D", 604_800_000), ("P7D", 604_800_000),
    ("PT12H30M", 45_000_000), ("PT1.5S", 1500), ("P1DT1H", 90_000_000),
])
def test_durations(text, millis):
    assert parse_duration(text) == millis


@pytest.mark.parametrize("text", ["", "7 days", "P", "PT", "-1d", "1.5h", "P1W"])
def test_a_malformed_duration_is_one_clear_error(text):
    with pytest.raises(UsageError, match=r"^--ttl .*: give a duration such as 7d"):
        parse_duration(text)


def test_ttls_for_every_state_and_per_state():
    ttls = parse_ttls(["1d", "seen=2h"])
    assert ttls == Ttls(86_400_000, {"seen": 7_200_000})
    assert (ttls.of("seen"), ttls.of("other")) == (7_200_000, 86_400_000)
    assert parse_ttls([]).of("seen") is None


@pytest.mark.parametrize("specs, message", [
    (["1d", "2d"], "--ttl is given twice for every state; name a state: STATE=DURATION"),
    (["a=1d", "a=2d"], "--ttl is given twice for state 'a'"),
    (["=1d"], "--ttl '=1d': name the state before '=' (STATE=DURATION)"),
    (["a=0"], "--ttl 'a=0': a time to live is longer than 0"),
])
def test_bad_ttl_specs(specs, message):
    with pytest.raises(UsageError) as e:
        parse_ttls(specs)
    assert str(e.value) == message
