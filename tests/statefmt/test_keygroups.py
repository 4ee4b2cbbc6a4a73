"""Key-group math and operator ids, against Flink's formulas and known vectors."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from statectl.statefmt.errors import LimitError, UsageError
from statectl.statefmt.ids import OperatorRef, check_operator_id, operator_id_for_uid
from statectl.statefmt.keygroups import (
    MAX_MAX_PARALLELISM,
    check_parallelism,
    default_max_parallelism,
    key_group_range,
    subtask_for_key_group,
)

max_parallelisms = st.integers(1, MAX_MAX_PARALLELISM)


@st.composite
def max_and_parallelism(draw):
    max_p = draw(max_parallelisms)
    return max_p, draw(st.integers(1, max_p))


@pytest.mark.parametrize("uid, expected", [
    ("src", "f362c87ffabe89c8a91fa7d0a523ba6c"),
    ("proc", "576dd1d1f766474368806deb544ded87"),
    ("c", "d7741f4a6cdf388e747557749a0f0d21"),
])
def test_operator_id_matches_flink(uid, expected):
    assert operator_id_for_uid(uid) == expected
    assert OperatorRef(uid=uid).resolved_id == expected


def test_operator_ref_by_id_normalises_and_rejects_garbage():
    assert OperatorRef(operator_id="F362C87FFABE89C8A91FA7D0A523BA6C").resolved_id == \
        "f362c87ffabe89c8a91fa7d0a523ba6c"
    with pytest.raises(UsageError, match="32 hexadecimal digits"):
        check_operator_id("xyz")
    with pytest.raises(UsageError, match="exactly one"):
        OperatorRef()


@settings(max_examples=300)
@given(max_and_parallelism())
def test_ranges_are_contiguous_and_cover_every_group_once(mp):
    max_p, p = mp
    expected_first = 0
    for subtask in range(p):
        first, last = key_group_range(max_p, p, subtask)
        assert first == expected_first and first <= last
        assert first == math.ceil(subtask * max_p / p)
        assert last == math.ceil((subtask + 1) * max_p / p) - 1
        expected_first = last + 1
    assert expected_first == max_p


@settings(max_examples=300)
@given(max_and_parallelism(), st.data())
def test_every_group_belongs_to_exactly_the_subtask_whose_range_holds_it(mp, data):
    max_p, p = mp
    group = data.draw(st.integers(0, max_p - 1))
    owner = subtask_for_key_group(group, max_p, p)
    owners = [s for s in range(p) if key_group_range(max_p, p, s)[0] <= group <= key_group_range(max_p, p, s)[1]]
    assert owners == [owner]


def test_every_group_exhaustively_for_small_max_parallelisms():
    for max_p in range(1, 70):
        for p in range(1, max_p + 1):
            for g in range(max_p):
                first, last = key_group_range(max_p, p, subtask_for_key_group(g, max_p, p))
                assert first <= g <= last


@pytest.mark.parametrize("p, expected", [
    (1, 128), (2, 128), (85, 128), (86, 256), (100, 256), (1000, 2048), (20000, 32768),
    (32768, 32768),
])
def test_default_max_parallelism(p, expected):
    assert default_max_parallelism(p) == expected


def test_limits_are_enforced_with_clear_messages():
    with pytest.raises(LimitError, match="max parallelism must be between 1 and 32768, got 32769"):
        check_parallelism(1, 32769)
    with pytest.raises(LimitError, match="max parallelism must be between 1 and 32768, got 0"):
        check_parallelism(1, 0)
    with pytest.raises(LimitError, match="parallelism must be between 1 and the max parallelism 128, got 129"):
        check_parallelism(129, 128)
    with pytest.raises(LimitError, match="got 0"):
        check_parallelism(0, 128)
    with pytest.raises(LimitError, match="subtask index"):
        key_group_range(128, 4, 4)


@settings(max_examples=300)
@given(st.integers(0, 5000), st.integers(1, 300))
def test_even_split_hands_out_every_entry_once_in_order(n, p):
    from statectl.statefmt.keygroups import even_split

    slices = [even_split(n, p, i) for i in range(p)]
    assert slices[0][0] == 0 and slices[-1][1] == n
    assert all(a[1] == b[0] for a, b in zip(slices, slices[1:]))
    sizes = [stop - start for start, stop in slices]
    assert max(sizes) - min(sizes) <= 1 and sizes == sorted(sizes, reverse=True)
