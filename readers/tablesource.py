"""The table source protocol: how the tables of one operator are read in one physical format.

A read names a table (:data:`KEYED`, :data:`TIMERS` or an operator state's name) and, for
keyed state and timers, may narrow it to a key filter's key *groups* (sorted) or a *span*
``(first, last)`` of key groups. A table source answers the table's Arrow schema, the
splits of such a read and the record batches of one split. Splits are picklable units of
work: the Spark Data Source (`readers.datasource`) makes one partition of each and decodes
it in a task, the local engine (`readers.local`) decodes them one after another in this
process. Both call the same :meth:`TableSource.decode`, so both give the same rows.

One implementation per format family (`readers.canonical`, `readers.native`,
`readers.flink`), chosen once from the operator's format by `readers.sources`.

Beyond reading, a source answers the questions about a table's shape that `stats` and an
explorer ask (`readers.questions` is their front): what each split holds (:meth:`measure`:
its key groups, rows and bytes; :meth:`split_sizes`, :meth:`key_group_sizes`) and a keyed
table read a page at a time in key-group order (:meth:`page`). A keyed split's rows come out
of :meth:`decode` in key-group order (each format stores them so), which paging relies on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, ClassVar, Iterator

import numpy as np
import pyarrow as pa

from statectl.statefmt.errors import UsageError
from statectl.statefmt.model import KEY_GROUP_COLUMN, NAMESPACE_COLUMN, DataFile, Operator, OperatorState, Savepoint
from statectl.statefmt.vocabulary import Format

from .files import Split
from .resolve import KEYED, TIMERS


def keyed_part(table: str) -> bool:
    """Whether *table* is the keyed table or the timers (else it is an operator state)."""
    return table in (KEYED, TIMERS)


def load_operator(location: str, operator_id: str) -> tuple[Savepoint, Operator]:
    """The savepoint at *location* and its operator *operator_id*, loaded."""
    from statectl.statefmt.ids import OperatorRef
    from statectl.statefmt.formats import load

    sp = load(location)
    return sp, sp.operator(OperatorRef(operator_id=operator_id))


KEY_GROUP_SIZES = pa.schema([
    pa.field("key_group", pa.int32(), False),
    pa.field("rows", pa.int64(), False),
    pa.field("bytes", pa.int64(), False),
    pa.field("bytes_exact", pa.bool_(), False),
])
"""Columns of :meth:`TableSource.key_group_sizes`: one row per key group holding rows of the
table or bytes of the files it is read from, ascending. ``rows``: the table's rows in the key
group (exact). ``bytes``: the key group's bytes in those files; ``bytes_exact`` says whether
the format delimits key groups in its files (else the split's bytes apportioned, an estimate)."""

SPLIT_SIZES = pa.schema([
    pa.field("split", pa.int32(), False),
    pa.field("subtask", pa.int32()),
    pa.field("first_key_group", pa.int32()),
    pa.field("last_key_group", pa.int32()),
    pa.field("rows", pa.int64(), False),
    pa.field("bytes", pa.int64(), False),
    pa.field("bytes_exact", pa.bool_(), False),
])
"""Columns of :meth:`TableSource.split_sizes`: one row per split, in the order of
:meth:`TableSource.splits`. ``split``: its position there; ``subtask``: the subtask that wrote
it where the format records it (else null); ``first_key_group``, ``last_key_group``: its
inclusive key-group range (null for an operator state); ``rows``: the table's rows in it
(exact); ``bytes``: the bytes of its files (``bytes_exact``: measured, not estimated)."""


@dataclass(frozen=True)
class Measure:
    """What one split of a table holds. *groups* (ascending, without repeats), *group_rows*
    and *group_bytes* are numpy arrays of the same length, empty for an operator state."""

    key_groups: tuple[int, int] | None
    subtask: int | None
    rows: int
    bytes: int
    bytes_exact: bool
    groups: np.ndarray
    group_rows: np.ndarray
    group_bytes: np.ndarray
    group_bytes_exact: bool


@dataclass(frozen=True)
class Cursor:
    """Where a page of a keyed table (or timers) starts: the first row of key group
    *key_group* after its first *offset* rows (rows of one key group come in the order the
    format decodes them, the same on every read). A key group past the operator's last
    starts an empty page; an offset past its key group's rows starts at the next group."""

    key_group: int = 0
    offset: int = 0


@dataclass(frozen=True)
class Page:
    """Rows of a table from *cursor* on, in key-group order, and the cursor of the row after
    them (*next*: None when no row follows)."""

    rows: pa.Table
    cursor: Cursor
    next: Cursor | None


def check_page(cursor, size) -> Cursor:
    """*cursor* (None: the first row) checked, with a page *size* of at least one row."""
    cursor = Cursor() if cursor is None else cursor
    if not isinstance(cursor, Cursor) or not all(
            isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in (cursor.key_group, cursor.offset)):
        raise UsageError(f"a page cursor is a Cursor(key_group, offset) of integers >= 0, got {cursor!r}")
    if not isinstance(size, int) or isinstance(size, bool) or size < 1:
        raise UsageError(f"a page holds at least one row: page size {size!r}")
    return cursor


def apportion(total: int, weights: np.ndarray) -> np.ndarray:
    """*total* split into integers in proportion to *weights* (largest remainders): they
    sum to *total* exactly; equal shares where every weight is zero."""
    w = np.asarray(weights, dtype=np.float64)
    if len(w) == 0:
        return np.zeros(0, dtype=np.int64)
    if w.sum() <= 0:
        w = np.ones(len(w))
    share = total * w / w.sum()
    out = np.floor(share).astype(np.int64)
    rest = int(total - out.sum())
    out[np.argsort(out - share, kind="stable")[:rest]] += 1
    return out


def count_groups(batches, max_parallelism: int) -> tuple[np.ndarray, np.ndarray]:
    """(key groups, rows in each) of the ``_key_group`` column of *batches*, counted columnar."""
    counts = np.zeros(max_parallelism, dtype=np.int64)
    for batch in batches:
        if batch.num_rows:
            groups = batch.column(KEY_GROUP_COLUMN).to_numpy(zero_copy_only=False)
            counts += np.bincount(groups, minlength=max_parallelism)[:max_parallelism]
    present = np.flatnonzero(counts)
    return present, counts[present]


def span_mask(batch: pa.RecordBatch, span: tuple[int, int]) -> pa.Array:
    """Whether each row of *batch* has its key group in *span* ``(first, last)``."""
    import pyarrow.compute as pc

    groups = batch.column(KEY_GROUP_COLUMN)
    return pc.and_(pc.greater_equal(groups, span[0]), pc.less_equal(groups, span[1]))


def in_span(batch: pa.RecordBatch, span: tuple[int, int]) -> pa.RecordBatch:
    """The rows of *batch* whose key group lies in *span*."""
    return batch.filter(span_mask(batch, span))


def split_table(measures: list[Measure]) -> pa.Table:
    """:data:`SPLIT_SIZES` of the splits *measures*, in their order."""
    ranges = [m.key_groups or (None, None) for m in measures]
    return pa.Table.from_pydict({
        "split": list(range(len(measures))), "subtask": [m.subtask for m in measures],
        "first_key_group": [r[0] for r in ranges], "last_key_group": [r[1] for r in ranges],
        "rows": [m.rows for m in measures], "bytes": [m.bytes for m in measures],
        "bytes_exact": [m.bytes_exact for m in measures]}, schema=SPLIT_SIZES)


def key_group_table(measures: list[Measure], span: tuple[int, int] | None = None) -> pa.Table:
    """:data:`KEY_GROUP_SIZES` of the splits *measures* (within *span*): a key group held by
    several splits (files) summed, exact only if every split's figure is."""
    found = [m for m in measures if len(m.groups)]
    if not found:
        return KEY_GROUP_SIZES.empty_table()
    groups = np.concatenate([m.groups for m in found])
    rows = np.concatenate([m.group_rows for m in found])
    size = np.concatenate([m.group_bytes for m in found])
    exact = np.concatenate([np.full(len(m.groups), m.group_bytes_exact) for m in found])
    keep = (groups >= span[0]) & (groups <= span[1]) if span is not None else np.ones(len(groups), bool)
    keys, where = np.unique(groups[keep], return_inverse=True)
    return pa.Table.from_arrays([
        pa.array(keys.astype(np.int32)),
        pa.array(np.bincount(where, rows[keep], len(keys)).astype(np.int64)),
        pa.array(np.bincount(where, size[keep], len(keys)).astype(np.int64)),
        pa.array(np.bincount(where, (~exact[keep]).astype(np.float64), len(keys)) == 0)],
        schema=KEY_GROUP_SIZES)


class TableSource:
    """The tables of one operator, named by its savepoint's location and its id.

    The driver and the local engine build it on a loaded model (:meth:`of`); a Spark task
    builds it from the location alone, and the model is loaded only if its decoder needs it.
    """

    format: ClassVar[Format]
    timer_columns: ClassVar[tuple[str, ...]] = ("timestamp", "domain")

    def __init__(self, location: str, operator_id: str,
                 loaded: tuple[Savepoint, Operator] | None = None):
        self.location = location
        self.operator_id = operator_id
        self._model = loaded
        self._verified: set[str] = set()  # files verified by this source's pages (by URI)

    @classmethod
    def of(cls, sp: Savepoint, op: Operator) -> "TableSource":
        return cls(sp.location, op.operator_id, (sp, op))

    def _loaded(self) -> tuple[Savepoint, Operator]:
        if self._model is None:
            self._model = load_operator(self.location, self.operator_id)
        return self._model

    @property
    def savepoint(self) -> Savepoint:
        return self._loaded()[0]

    @property
    def operator(self) -> Operator:
        return self._loaded()[1]

    def timer_namespace(self) -> list[str]:
        """The namespace column of the timers table, if it has one (the keyed states' by default)."""
        return [NAMESPACE_COLUMN] if self.operator.keyed.namespace_type is not None else []

    def operator_state(self, name: str) -> OperatorState:
        return next(s for s in self.operator.operator_states if s.name == name)

    # --- what every format answers ----------------------------------------------
    def schema(self, table: str) -> pa.Schema:
        """The Arrow schema of *table*'s batches, as the format decodes them."""
        raise NotImplementedError

    def table_files(self, table: str) -> list[DataFile]:
        """The files `_metadata` lists for *table*."""
        raise NotImplementedError

    def splits(self, table: str, groups: list[int] | None = None,
               span: tuple[int, int] | None = None) -> list:
        """The splits a read of *table* decodes: those that can hold *groups* or meet *span*."""
        raise NotImplementedError

    def decode(self, split, table: str, groups: list[int] | None = None,
               keys: list[tuple] | None = None) -> Iterator[pa.RecordBatch]:
        """The record batches of *table* in one *split* (a decoder may skip other key groups, and
        with a key filter's *keys* other keys' rows: the caller keeps the keys' rows exactly)."""
        raise NotImplementedError

    def checked_files(self, table: str, span: tuple[int, int] | None = None) -> list[Split]:
        """The files checked (size, checksum, footer) before Spark reads *table*."""
        raise NotImplementedError

    def key_groups(self, keys: list[tuple]) -> list[int]:
        """The key groups of *keys* (tuples of key-column values) by the format's hash."""
        raise NotImplementedError

    def parquet_read(self, table: str) -> bool:
        """Whether Spark reads *table*'s splits with its own Parquet reader (else: the Data Source)."""
        return False

    def spark_types(self, schema: pa.Schema) -> pa.Schema:
        """*schema* with the types Spark shows (the format's own types where Spark has them)."""
        return schema

    # --- the shape of a table: sizes per split and key group, pages ------------------
    def inline_bytes(self) -> int:
        """Bytes of the operator's state held in `_metadata` itself (none by default: the
        format keeps every value in files)."""
        return 0

    def split_key_groups(self, split) -> tuple[int, int] | None:
        """The inclusive key-group range of a keyed *split* (None for an operator state's)."""
        raise NotImplementedError

    def split_subtask(self, split) -> int | None:
        """The subtask that wrote *split*, where the format records it."""
        return None

    def split_bytes(self, split, table: str) -> tuple[int, bool]:
        """(bytes of *split*'s files, whether the figure is exact)."""
        raise NotImplementedError

    def measure(self, split, table: str, counted: tuple[np.ndarray, np.ndarray] | None = None) -> Measure:
        """What *split* of *table* holds. Shared default: rows per key group counted from the
        decoded ``_key_group`` column (exact; *counted*: ``(key groups, rows)`` a caller has
        already counted from its own decode of the split, so it is not decoded again); the
        split's bytes apportioned to its key groups by rows (an estimate). A format that
        knows more overrides it."""
        rng, (size, exact) = self.split_key_groups(split), self.split_bytes(split, table)
        if rng is None:  # an operator state: rows counted, no key groups
            rows = sum(b.num_rows for b in self.decode(split, table))
            empty = np.zeros(0, dtype=np.int64)
            return Measure(None, self.split_subtask(split), rows, size, exact, empty, empty, empty, False)
        groups, rows = counted or count_groups(self.decode(split, table), self.operator.max_parallelism)
        return Measure(rng, self.split_subtask(split), int(rows.sum()), size, exact, groups, rows,
                       apportion(size, rows), False)

    def measure_decoding(self, split, table: str, visit: Callable[[pa.RecordBatch], None]) -> Measure:
        """:meth:`measure` of a keyed *split* while every batch of its one decode is handed to
        *visit*: a question that looks at the rows (`readers.stats`) and the sizes share it."""
        counts = np.zeros(self.operator.max_parallelism, dtype=np.int64)
        for batch in self.decode(split, table):
            if batch.num_rows:
                visit(batch)
                groups = batch.column(KEY_GROUP_COLUMN).to_numpy(zero_copy_only=False)
                counts += np.bincount(groups, minlength=len(counts))[:len(counts)]
        present = np.flatnonzero(counts)
        return self.measure(split, table, (present, counts[present]))

    def measures(self, table: str, span: tuple[int, int] | None = None) -> list[Measure]:
        """:meth:`measure` of every split of *table* (those meeting *span*)."""
        return [self.measure(split, table) for split in self.splits(table, span=span)]

    def split_sizes(self, table: str, span: tuple[int, int] | None = None) -> pa.Table:
        """One row per split of *table* (those meeting *span*): columns :data:`SPLIT_SIZES`."""
        return split_table(self.measures(table, span))

    def key_group_sizes(self, table: str, span: tuple[int, int] | None = None) -> pa.Table:
        """One row per key group of a keyed *table* (or timers) holding rows or bytes, within
        *span* if given: columns :data:`KEY_GROUP_SIZES`. A key group held by several splits
        (files) is summed; it is exact only if every split's figure is."""
        return key_group_table(self.measures(table, span), span)

    def decode_span(self, split, table: str, span: tuple[int, int]) -> Iterator[pa.RecordBatch]:
        """The batches of *split* whose rows lie in the key groups of *span*, in key-group
        order. Shared default: :meth:`decode` told the span's groups, rows outside dropped."""
        lo, hi = span
        first, last = self.split_key_groups(split)
        groups = list(range(max(lo, first), min(hi, last) + 1))
        for batch in self.decode(split, table, groups):
            batch = in_span(batch, span)
            if batch.num_rows:
                yield batch

    def page(self, table: str, cursor: Cursor | None = None, size: int = 1000) -> Page:
        """At most *size* rows of a keyed *table* (or timers) from *cursor* on, in key-group
        order, with the cursor of the row after them: only the splits meeting the key groups
        from the cursor's on are decoded, and decoding stops once the page (and one row more,
        to tell whether another follows) is found. Columns: the decoded schema's."""
        cursor = check_page(cursor, size)
        last = self.operator.max_parallelism - 1
        schema = self.schema(table)
        if cursor.key_group > last:
            return Page(schema.empty_table(), cursor, None)
        span, need, parts, got = (cursor.key_group, last), cursor.offset + size + 1, [], 0
        for split in self.splits(table, span=span):
            for batch in self.decode_span(split, table, span):
                parts.append(batch)
                got += batch.num_rows
                if got >= need:
                    break
            if got >= need:
                break
        rows = pa.Table.from_batches(parts, schema=parts[0].schema) if parts else schema.empty_table()
        groups = rows.column(KEY_GROUP_COLUMN).to_numpy()
        skip = min(cursor.offset, int(np.searchsorted(groups, cursor.key_group, side="right")))
        rows = rows.slice(skip, size + 1)
        if rows.num_rows <= size:
            return Page(rows, cursor, None)
        groups = groups[skip:skip + size + 1]
        following = int(groups[size])
        offset = size - int(np.searchsorted(groups, following))  # rows of its group in the page
        if following == cursor.key_group:
            offset += skip
        return Page(rows.slice(0, size), cursor, Cursor(following, offset))
