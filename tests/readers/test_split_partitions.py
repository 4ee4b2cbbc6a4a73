"""The Data Source's partitions (readers/datasource.group_splits): a table's splits in no more
partitions than Spark runs tasks at once, their order kept, their bytes shared evenly."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from statectl.readers.datasource import group_splits

weights_lists = st.lists(st.integers(min_value=0, max_value=10**9), max_size=40)


@given(weights_lists, st.integers(min_value=1, max_value=50))
def test_every_split_once_in_order_in_at_most_parts_runs(weights, parts):
    splits = list(range(len(weights)))
    runs = group_splits(splits, weights, parts)
    assert [s for run in runs for s in run] == splits  # consecutive runs: rows keep their order
    assert all(runs) and len(runs) <= parts


@given(weights_lists, st.integers(min_value=1, max_value=50))
def test_no_run_holds_more_than_its_share_and_a_split(weights, parts):
    runs = group_splits(list(range(len(weights))), weights, parts)
    total = sum(weights)
    if total:
        assert max(sum(weights[i] for i in run) for run in runs) <= total / parts + max(weights)


def test_the_ten_million_key_savepoint_in_two_tasks():
    """Its twelve streams (62 MiB, the sixth and twelfth 50 MiB) on two cores: six each."""
    weights = [62] * 5 + [50] + [62] * 5 + [50]
    assert group_splits(list(range(12)), weights, 2) == [list(range(6)), list(range(6, 12))]
    assert group_splits(list(range(12)), weights, 12) == [[i] for i in range(12)]
    assert group_splits([], [], 2) == []
    assert group_splits([0, 1, 2, 3], [1, 1, 1, 100], 3) == [[0, 1, 2], [3]]  # the big one alone
