"""Questions about state (`readers/questions.py`): rows and bytes per split and key group, and
keyed tables read a page at a time, for statectl's canonical and RocksDB formats and Flink's
(canonical and heap-native streams, native RocksDB snapshots, SQL jobs). Every figure is
checked against a full read by the local engine and against the sizes of the files."""

from __future__ import annotations

import shutil
from itertools import islice
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from support.readers_savepoints import build_own_family
from statectl.readers.local import local_table
from statectl.readers.questions import Cursor, KEY_GROUP_SIZES, SPLIT_SIZES, StateQuestions
from statectl.readers.resolve import KEYED, OPERATOR_STATE, TIMERS, TableChoice
from statectl.readers.tablesource import apportion
from statectl.statefmt.errors import IntegrityError, StatectlError, UsageError
from statectl.statefmt.flink.handles import KeyGroupsStream
from statectl.statefmt.flink.model import flink_savepoint
from statectl.statefmt.formats import load
from statectl.statefmt.vocabulary import Format

FIXTURES = Path(__file__).parents[1] / "fixtures"
FLINK = (sorted(FIXTURES.glob("flink-dev/*/savepoint"))
         + sorted(p for p in FIXTURES.glob("flink-sql-probe/*") if p.is_dir())
         + [Path(__file__).parents[2] / "examples" / "flink" / "savepoint"])


@pytest.fixture(scope="module")
def own(tmp_path_factory):
    """statectl's own savepoints: two canonical ones and a RocksDB native one."""
    own = build_own_family(tmp_path_factory.mktemp("own"))
    return [own[name].location for name in ("canonical", "source", "native")]


def keyed_operators(sp):
    return [op for op in sp.operators if op.keyed is not None and not op.unreadable]


def full_read(sp, op, table):
    """The full read, ordered by key group (rows of a key group kept in their order)."""
    rows = local_table(sp, TableChoice(op, table), include_key_group=True)
    return rows.take(pc.sort_indices(rows, [("_key_group", "ascending")]))


def flink_stream_bytes(sp, op) -> int:
    """The bytes of the streams and files the keyed splits of a Flink operator are read from."""
    handles = {id(s.handle): s.handle for s in flink_savepoint(sp).operator(op.operator_id).keyed_splits}
    return sum(h.stream.size if isinstance(h, KeyGroupsStream) else h.meta.size + sum(s.size for _, s in h.files)
               for h in handles.values())


def assert_key_group_sizes(sp, op, table):
    q = StateQuestions(sp, op)
    sizes, splits = q.key_group_sizes(table), q.split_sizes(table)
    assert sizes.schema == KEY_GROUP_SIZES and splits.schema == SPLIT_SIZES
    full = full_read(sp, op, table)
    counted = full.group_by("_key_group").aggregate([("_key_group", "count")]).sort_by("_key_group")
    holding = sizes.filter(pc.greater(sizes["rows"], 0))
    where = f"{op.label} {table}"
    assert holding["key_group"].to_pylist() == counted["_key_group"].to_pylist(), where
    assert holding["rows"].to_pylist() == counted["_key_group_count"].to_pylist(), where
    assert sum(sizes["rows"].to_pylist()) == full.num_rows, where
    assert sum(splits["rows"].to_pylist()) == full.num_rows, where
    groups = sizes["key_group"].to_numpy()
    assert (np.diff(groups) > 0).all() and (groups < op.max_parallelism).all()
    for split in splits.to_pylist():  # a split's rows are those of its key groups
        inside = sizes.filter(pc.and_(pc.greater_equal(sizes["key_group"], split["first_key_group"]),
                                      pc.less_equal(sizes["key_group"], split["last_key_group"])))
        assert sum(inside["rows"].to_pylist()) == split["rows"], where
    return sizes, splits


def test_apportion_sums_exactly_in_proportion():
    assert apportion(10, np.array([1, 1, 1])).tolist() == [4, 3, 3]
    assert apportion(100, np.array([3, 1, 0])).tolist() == [75, 25, 0]
    assert apportion(7, np.array([0, 0])).tolist() == [4, 3]
    assert apportion(5, np.array([])).tolist() == []


def test_sizes_of_statectl_canonical_and_rocksdb(own):
    seen = set()
    for path in own:
        sp = load(path)
        for op in keyed_operators(sp):
            for table in (KEYED, TIMERS):
                sizes, splits = assert_key_group_sizes(sp, op, table)
                files = op.keyed.timers if table == TIMERS and op.format == Format.CANONICAL else op.keyed.files
                assert sum(splits["bytes"].to_pylist()) == sum(f.size for f in files)
                assert all(splits["bytes_exact"].to_pylist())
                if sizes.num_rows and any(r for r in sizes["rows"].to_pylist()):
                    # bytes apportioned: every split's bytes go to its key groups
                    assert sum(sizes["bytes"].to_pylist()) == sum(
                        s["bytes"] for s in splits.to_pylist() if s["rows"])
                seen.add((op.format, table))
    assert seen == {(f, t) for f in (Format.CANONICAL, Format.ROCKSDB) for t in (KEYED, TIMERS)}


def test_sizes_of_statectl_operator_states(own):
    sp = load(own[0])
    for op in sp.operators:
        for state in op.operator_states:
            splits = StateQuestions(sp, op).split_sizes(state.name)
            rows = local_table(sp, TableChoice(op, OPERATOR_STATE, (state.name,))).num_rows
            assert sum(splits["rows"].to_pylist()) == rows > 0
            assert splits["bytes"].to_pylist() == [f.size for f in state.files]
            assert splits["first_key_group"].null_count == splits.num_rows


@pytest.mark.parametrize("path", FLINK, ids=lambda p: p.parent.name if p.name == "savepoint" else p.name)
def test_sizes_of_flink_savepoints(path):
    sp = load(path)
    for op in keyed_operators(sp):
        info = flink_savepoint(sp).operator(op.operator_id)
        streams = all(isinstance(s.handle, KeyGroupsStream) for s in info.keyed_splits)
        for table in (KEYED, TIMERS):
            sizes, splits = assert_key_group_sizes(sp, op, table)
            if not splits.num_rows:
                continue
            assert sum(splits["bytes"].to_pylist()) == flink_stream_bytes(sp, op)
            if streams:  # key groups delimited by the handles' offsets: exact, and only headers left out
                assert all(sizes["bytes_exact"].to_pylist())
                headers = {id(s.handle): min(o for o in s.handle.offsets if o > 0) for s in info.keyed_splits}
                assert sum(sizes["bytes"].to_pylist()) == flink_stream_bytes(sp, op) - sum(headers.values())
                assert pc.all(pc.greater(sizes["bytes"], 0)).as_py()
    for op in sp.operators:
        for state in op.operator_states:
            if op.unreadable_part(state.name) is None:
                splits = StateQuestions(sp, op).split_sizes(state.name)
                rows = local_table(sp, TableChoice(op, OPERATOR_STATE, (state.name,))).num_rows
                assert sum(splits["rows"].to_pylist()) == rows
                assert splits["subtask"].null_count == 0


def test_sizes_within_a_span(own):
    sp = load(own[1])
    op = keyed_operators(sp)[0]
    q = StateQuestions(sp, op)
    whole = q.key_group_sizes(KEYED)
    span = (5, 9)
    part = q.key_group_sizes(KEYED, span)
    keep = pc.and_(pc.greater_equal(whole["key_group"], 5), pc.less_equal(whole["key_group"], 9))
    assert part["key_group"].to_pylist() == whole.filter(keep)["key_group"].to_pylist()
    assert part["rows"].to_pylist() == whole.filter(keep)["rows"].to_pylist()
    for split in q.split_sizes(KEYED, span).to_pylist():
        assert split["first_key_group"] <= 9 and split["last_key_group"] >= 5
    assert q.split_sizes(KEYED, span).num_rows < q.split_sizes(KEYED).num_rows


def assert_pages(sp, op, table, size):
    q = StateQuestions(sp, op)
    full = full_read(sp, op, table)
    pages = list(islice(q.pages(table, size=size), full.num_rows // size + 2))  # a cursor that stalls ends
    got = pa.concat_tables([p.rows for p in pages])
    assert got.column_names == full.column_names
    assert got.equals(full), f"{op.label} {table} pages of {size}"
    assert all(p.rows.num_rows == size for p in pages[:-1]) and pages[-1].rows.num_rows <= size
    assert [p.next for p in pages[:-1]] == [p.cursor for p in pages[1:]] and pages[-1].next is None
    return full.num_rows


def test_pages_of_statectl_formats_equal_the_full_read(own):
    total = 0
    for path in own:
        sp = load(path)
        for op in keyed_operators(sp):
            for table in (KEYED, TIMERS):
                for size in (1, 3, 10_000):
                    total += assert_pages(sp, op, table, size)
    assert total > 100


@pytest.mark.parametrize("path", FLINK, ids=lambda p: p.parent.name if p.name == "savepoint" else p.name)
def test_pages_of_flink_savepoints_equal_the_full_read(path):
    sp = load(path)
    total = sum(assert_pages(sp, op, table, size) for op in keyed_operators(sp)
                for table in (KEYED, TIMERS) for size in (7, 400))
    assert total > 0


def test_a_cursor_in_the_middle_of_a_key_group(own):
    sp = load(own[1])
    op = keyed_operators(sp)[0]
    full = full_read(sp, op, KEYED)
    groups = full["_key_group"].to_pylist()
    crowded = max(set(groups), key=groups.count)
    first = groups.index(crowded)
    assert groups.count(crowded) >= 2
    page = StateQuestions(sp, op).page(KEYED, Cursor(crowded, 1), size=2)
    assert page.rows.equals(full.slice(first + 1, 2))
    past = StateQuestions(sp, op).page(KEYED, Cursor(crowded, 10**6), size=1)  # on to the next group
    after = [g for g in groups if g > crowded]
    assert past.rows["_key_group"].to_pylist() == after[:1]


def test_a_cursor_past_the_end_gives_no_rows(own):
    for path in own:
        sp = load(path)
        for op in keyed_operators(sp):
            q = StateQuestions(sp, op)
            for cursor in (Cursor(op.max_parallelism, 0), Cursor(10**6, 5)):
                page = q.page(KEYED, cursor, 10)
                assert page.rows.num_rows == 0 and page.next is None
                assert page.rows.column_names == q.columns(KEYED)
            groups = full_read(sp, op, KEYED)["_key_group"].to_pylist()
            if groups:
                last = q.page(KEYED, Cursor(groups[-1], groups.count(groups[-1])), 10)
                assert last.rows.num_rows == 0 and last.next is None


@pytest.mark.parametrize("cursor, size", [
    (Cursor(-1, 0), 10), (Cursor(0, -1), 10), (Cursor("3", 0), 10), (Cursor(0, 1.5), 10),
    ((0, 0), 10), (Cursor(True, 0), 10), (None, 0), (None, -5), (None, 2.0), (None, True),
])
def test_bad_cursors_and_page_sizes_are_one_clear_error(own, cursor, size):
    sp = load(own[1])
    q = StateQuestions(sp, keyed_operators(sp)[0])
    with pytest.raises(UsageError) as e:
        q.page(KEYED, cursor, size)
    assert ("cursor" in str(e.value)) or ("page size" in str(e.value))


def test_questions_name_their_tables_clearly(own):
    sp = load(own[0])
    src = next(op for op in sp.operators if op.keyed is None)
    with pytest.raises(StatectlError, match="no keyed state"):
        StateQuestions(sp, src).key_group_sizes(KEYED)
    with pytest.raises(UsageError, match="keyed table"):
        StateQuestions(sp, src).page(src.operator_states[0].name)
    with pytest.raises(StatectlError, match="no operator state 'nope'"):
        StateQuestions(sp, src).split_sizes("nope")
    keyed = keyed_operators(sp)[0]
    for span in ((3, 1), (-1, 2), (1.0, 2), [0, 1]):
        with pytest.raises(UsageError, match="span"):
            StateQuestions(sp, keyed).key_group_sizes(KEYED, span)


def test_a_page_decodes_only_the_splits_it_meets(own, tmp_path):
    """A damaged file of the first key groups stops a page that starts there, and no other."""
    copy = tmp_path / "copy"
    shutil.copytree(own[1], copy)
    sp = load(str(copy))
    op = keyed_operators(sp)[0]
    files = sorted(op.keyed.files, key=lambda f: f.key_groups)
    assert len(files) >= 2
    damaged = copy / files[0].ref.path
    damaged.write_bytes(damaged.read_bytes()[:-10])
    q = StateQuestions(sp, op)
    later = q.page(KEYED, Cursor(files[1].key_groups[0], 0), size=1000)
    expected = full_read(load(own[1]), op, KEYED)
    keep = pc.greater_equal(expected["_key_group"], files[1].key_groups[0])
    assert later.rows.equals(expected.filter(keep))
    with pytest.raises(IntegrityError, match=files[0].ref.path.rsplit("/", 1)[-1]):
        q.page(KEYED, Cursor(0, 0), size=1000)


def test_sizes_visiting_sees_every_row_once_and_gives_the_sizes(own):
    """One decode serves a question about the rows and the sizes: the batches handed over are
    the full read's rows, and the tables those of `split_sizes` and `key_group_sizes`."""
    for path in own + [FLINK[0]]:
        sp = load(str(path))
        for op in keyed_operators(sp):
            for table in (KEYED, TIMERS):
                seen = []
                q = StateQuestions(sp, op)
                splits, sizes = q.sizes_visiting(table, seen.append)
                assert splits.equals(q.split_sizes(table)) and sizes.equals(q.key_group_sizes(table))
                rows = full_read(sp, op, table)
                got = sorted(pa.Table.from_batches(seen).column("_key_group").to_pylist()) if seen else []
                assert got == rows["_key_group"].to_pylist()
                assert all(b.num_rows for b in seen)
