"""What the explorer shows, without the terminal: a savepoint's operators and states as rows,
and a table of one of them browsed a page at a time (`statectl explore`, docs/EXPLORE.md).

Keyed tables and timers come a page at a time from :class:`readers.questions.StateQuestions`
(key groups in order, only the splits met decoded); a key is found through its key group
(the format's hash: only that key group is decoded); operator states are read whole by the
local engine (they are small). Nothing here writes, and nothing starts Spark.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from statectl.readers.local import row_filter, local_table
from statectl.readers.questions import Cursor, StateQuestions
from statectl.readers.resolve import KEYED, OPERATOR_STATE, TIMERS, TableChoice
from statectl.statefmt.model import KEY_GROUP_COLUMN, KEYED_PART, NAMESPACE_COLUMN, Operator, Savepoint
from statectl.statefmt.types import type_str

from ..output import human_bytes

PAGE_ROWS = 100
CHUNK_ROWS = 2000  # rows read at once and cut into pages
WHOLE_ROWS = 65536  # rows read at once when the whole table is saved
FILTER_SCAN_ROWS = 50_000  # rows a filtered page looks through before it shows what it found


@dataclass(frozen=True)
class StateEntry:
    """One line of an operator's states: a table to open (*table*: KEYED, TIMERS or an operator
    state's name; *state*: the keyed state whose columns it shows), or an unreadable part."""

    name: str
    scope: str  # "keyed", "timers", "operator" or "unreadable"
    kind: str
    type: str
    ttl: str
    size: str
    table: str | None
    state: str | None = None
    reason: str = ""


def operator_kind(op: Operator) -> str:
    """keyed, operator (state), both, or stateless; a keyed state that cannot be read counts."""
    keyed = op.keyed is not None or op.unreadable_part(KEYED_PART) is not None
    parts = (["keyed"] if keyed else []) + (["operator"] if op.operator_states else [])
    return " + ".join(parts) or "stateless"


def unreadable_text(op: Operator) -> str:
    """The parts of *op* that cannot be read, each with its reason."""
    return "; ".join(f"{u.part}: {u.reason}" for u in op.unreadable)


def operator_rows(sp: Savepoint) -> list[list[str]]:
    """One row per operator (:data:`OPERATOR_COLUMNS`); the id last, as it is the widest."""
    return [[op.uid or "", op.name or "", operator_kind(op), f"{op.parallelism}/{op.max_parallelism}",
             human_bytes(sum(f.size for f in op.data_files())),
             unreadable_text(op), op.operator_id] for op in sp.operators]


OPERATOR_COLUMNS = ["uid", "name", "kind", "parallelism", "size", "unreadable", "id"]


def state_entries(op: Operator) -> list[StateEntry]:
    """The keyed states, the timers and the operator states of *op*, and its unreadable parts."""
    out = []
    keyed_bad = op.unreadable_part(KEYED_PART)
    if op.keyed is not None and keyed_bad is None:
        files = human_bytes(sum(f.size for f in op.keyed.files))
        out.append(StateEntry("(keyed table)", "keyed", "every state", ", ".join(op.keyed.key_names) + " -> "
                              + ", ".join(s.name for s in op.keyed.states), "", files, KEYED))
        for s in op.keyed.states:
            out.append(StateEntry(s.name, "keyed", s.kind, type_str(s.column_type), "yes" if s.ttl else "",
                                  human_bytes(s.size) if s.size is not None else f"({files} table)", KEYED, s.name))
        timers = human_bytes(sum(f.size for f in op.keyed.timers)) if op.keyed.timers else ""
        out.append(StateEntry("(timers)", "timers", "timers", "timestamp, domain", "", timers, TIMERS))
    for s in op.operator_states:
        bad = op.unreadable_part(s.name)
        kind_type = type_str(s.value_type) if s.key_type is None else \
            f"{type_str(s.key_type)} -> {type_str(s.value_type)}"
        size = human_bytes(s.size if s.size is not None else sum(f.size for f in s.files))
        out.append(StateEntry(s.name, "operator", s.kind, kind_type, "", size, None if bad else s.name,
                              reason=bad.reason if bad else ""))
    for u in op.unreadable:
        if not any(e.name == u.part for e in out):
            out.append(StateEntry(u.part, "unreadable", "unreadable", "", "",
                                  human_bytes(sum(f.size for f in u.files)), None, reason=u.reason))
    return out


@dataclass
class TableView:
    """A table of one operator browsed a page at a time: :meth:`first`, :meth:`next`,
    :meth:`previous`, :meth:`find_key`, :attr:`filter` (text the key must contain)."""

    savepoint: Savepoint
    operator: Operator
    entry: StateEntry
    size: int = PAGE_ROWS
    filter: str = ""
    rows: pa.Table | None = None
    cursor: Cursor | None = None
    following: Cursor | None = None
    history: list = field(default_factory=list)
    _whole: pa.Table | None = None  # an operator state, read whole
    _questions: StateQuestions | None = None
    _chunk: dict = field(default_factory=dict)  # pages cut from the last chunk read (see _page)

    @property
    def keyed(self) -> bool:
        return self.entry.table in (KEYED, TIMERS)

    @property
    def key_columns(self) -> list[str]:
        return self.operator.keyed.key_names if self.keyed else []

    @property
    def questions(self) -> StateQuestions:
        if self._questions is None:
            self._questions = StateQuestions(self.savepoint, self.operator)
        return self._questions

    def columns(self) -> list[str]:
        """The columns shown: the key group, the key, the namespace, the state's columns."""
        if not self.keyed:
            return self._operator_state().column_names
        every = self.questions.columns(self.entry.table)
        if self.entry.table == TIMERS or self.entry.state is None:
            return every
        state = self.operator.keyed.state(self.entry.state)
        head = [KEY_GROUP_COLUMN, *self.key_columns] + ([NAMESPACE_COLUMN] if NAMESPACE_COLUMN in every else [])
        return head + state.columns

    # --- pages -------------------------------------------------------------------------
    def first(self) -> pa.Table:
        self.history = []
        return self._load(Cursor())

    def next(self) -> pa.Table | None:
        """The next page (None after the last one)."""
        if self.following is None:
            return None
        here = self.cursor
        rows = self._load(self.following)  # a page that cannot be read leaves the history as it was
        self.history.append(here)
        return rows

    def previous(self) -> pa.Table | None:
        """The page shown before this one (None on the first)."""
        if not self.history:
            return None
        rows = self._load(self.history[-1])
        self.history.pop()
        return rows

    def set_filter(self, text: str) -> pa.Table:
        self.filter = text
        return self.first()

    def _load(self, cursor: Cursor) -> pa.Table:
        if not self.keyed:
            return self._load_slice(cursor)
        wanted = self.columns()
        if not self.filter:
            rows, following = self._page(cursor)
            return self._show(rows.select(wanted), cursor, following)
        found, scanned, at = [], 0, cursor
        while at is not None and scanned < FILTER_SCAN_ROWS and sum(t.num_rows for t in found) < self.size:
            page = self.questions.page(self.entry.table, at, max(self.size, 2000))
            scanned += page.rows.num_rows
            found.append(page.rows.filter(self._matches(page.rows)).select(wanted))
            at = page.next
        return self._show(pa.concat_tables(found), cursor, at)

    def _page(self, cursor: Cursor) -> tuple[pa.Table, Cursor | None]:
        """(rows, next cursor) of the page at *cursor*: cut from a chunk of :data:`CHUNK_ROWS`
        rows read once, so the next pages of a chunk decode nothing (a page's decoding starts
        at its key group, and grows with the rows before it there)."""
        key = (cursor, self.size)
        if key not in self._chunk:
            self._chunk = self._cut(self.questions.page(self.entry.table, cursor, CHUNK_ROWS))
        return self._chunk[key]

    def _cut(self, chunk) -> dict:
        """The pages of *chunk* (a :class:`Page`) by (cursor, page size)."""
        groups = chunk.rows.column(KEY_GROUP_COLUMN).to_numpy()
        first = chunk.cursor

        def cursor_at(i: int) -> Cursor:
            group = int(groups[i])
            before = i - int(np.searchsorted(groups, group))  # rows of its key group before row i
            return Cursor(group, before + (first.offset if group == first.key_group else 0))

        pages, total = {}, len(groups)
        for start in range(0, max(total, 1), self.size):
            end = min(start + self.size, total)
            at = first if start == 0 else cursor_at(start)
            pages[(at, self.size)] = (chunk.rows.slice(start, end - start), cursor_at(end) if end < total else chunk.next)
        return pages

    def whole(self) -> pa.Table:
        """Every row of the table, as the pages show them (their columns, the filter applied),
        read page after page in :data:`WHOLE_ROWS` rows at a time."""
        if not self.keyed:
            return self._filtered_operator_state()
        wanted, parts, at = self.columns(), [], Cursor()
        while at is not None:
            page = self.questions.page(self.entry.table, at, WHOLE_ROWS)
            rows = page.rows.filter(self._matches(page.rows)) if self.filter else page.rows
            parts.append(rows.select(wanted))
            at = page.next
        return pa.concat_tables(parts)

    def _filtered_operator_state(self) -> pa.Table:
        """An operator state's rows (read whole) whose columns, as text, contain the filter."""
        whole = self._operator_state()
        if self.filter:
            text = pc.binary_join_element_wise(*[_as_text(whole.column(c)) for c in whole.column_names], " ")
            whole = whole.filter(pc.match_substring(text, self.filter, ignore_case=True))
        return whole

    def _load_slice(self, cursor: Cursor) -> pa.Table:
        """A page of an operator state (read whole; a cursor's offset is its first row)."""
        whole = self._filtered_operator_state()
        end = cursor.offset + self.size
        return self._show(whole.slice(cursor.offset, self.size), cursor,
                          Cursor(0, end) if end < whole.num_rows else None)

    def _show(self, rows: pa.Table, cursor: Cursor, following: Cursor | None) -> pa.Table:
        self.rows, self.cursor, self.following = rows, cursor, following
        return rows

    def _operator_state(self) -> pa.Table:
        if self._whole is None:
            self._whole = local_table(self.savepoint, TableChoice(self.operator, OPERATOR_STATE, (self.entry.table,)))
        return self._whole

    def _matches(self, rows: pa.Table) -> pa.Array:
        """Whether each row's key (its columns as text, joined by a space) contains the filter."""
        parts = [_as_text(rows.column(c)) for c in self.key_columns]
        text = parts[0] if len(parts) == 1 else pc.binary_join_element_wise(*parts, " ")
        return pc.fill_null(pc.match_substring(text, self.filter, ignore_case=True), False)

    # --- a key ---------------------------------------------------------------------------
    def find_key(self, text: str) -> int | None:
        """Show the page starting at the key written as *text* (as `read --key` takes it) and
        return its row there (0), or None when no row has that key. Only its key group is
        decoded: the format's hash names it."""
        from statectl.readers.keys import KeyFilter, parse_key

        wanted = KeyFilter.of(self.questions.source, [parse_key(self.operator, text)])
        keep = row_filter(self.operator, list(wanted.keys), list(wanted.groups), ())
        group, at, seen = wanted.groups[0], Cursor(wanted.groups[0], 0), 0
        while at is not None and at.key_group == group:
            page = self.questions.page(self.entry.table, at, 4096)
            rows = page.rows.filter(pc.equal(page.rows[KEY_GROUP_COLUMN], group))
            if not rows.num_rows:
                break
            hits = pc.indices_nonzero(keep(rows)).to_pylist()
            if hits:
                if self.cursor is not None:
                    self.history.append(self.cursor)
                self.filter = ""
                self._load(Cursor(group, seen + hits[0]))
                return 0
            seen, at = seen + rows.num_rows, page.next
        return None

    def key_of(self, row: int) -> dict:
        return {c: self.rows.column(c)[row].as_py() for c in self.key_columns}

    def timers_of(self, row: int) -> pa.Table:
        """The timers of the key on *row* (only its key group decoded)."""
        from statectl.readers.keys import KeyFilter

        key = tuple(self.rows.column(c)[row].as_py() for c in self.key_columns)
        wanted = KeyFilter.of(self.questions.source, [key])
        return local_table(self.savepoint, TableChoice(self.operator, TIMERS, keys=wanted))

    def position(self) -> str:
        """Where the page is, for the status line."""
        if self.rows is None:
            return ""
        where = f"key group {self.cursor.key_group}+{self.cursor.offset}" if self.keyed \
            else f"rows {self.cursor.offset + 1}.."
        more = "more follow" if self.following is not None else "last page"
        filtered = f", key contains {self.filter!r}" if self.filter else ""
        return f"{self.rows.num_rows} row(s) from {where}; {more}{filtered}"


def _as_text(column) -> pa.Array:
    """A column as text: cast where Arrow can, else each value written as JSON."""
    try:
        return pc.cast(column, pa.string())
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid):
        from ..arrow_tables import cell_text

        return pa.array([cell_text(v, column.type) for v in column.to_pylist()], pa.string())
