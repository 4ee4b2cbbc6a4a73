"""Questions about an operator's state that are not reads: where its rows and bytes lie, and
its keyed table a page at a time. The front `statectl stats` and an explorer call.

:class:`StateQuestions` names an operator's tables as a read does (:data:`KEYED`,
:data:`TIMERS`, an operator state's name), checks them, and asks the operator's table source
(`readers.tablesource`), which answers per format from what the format knows cheaply:

- :meth:`StateQuestions.split_sizes`: one row per split (a file, a subtask's database or
  stream, a key-group range of a stream) with its key-group range, rows and bytes
  (:data:`SPLIT_SIZES`);
- :meth:`StateQuestions.key_group_sizes`: one row per key group of the keyed table or the
  timers, rows and bytes (:data:`KEY_GROUP_SIZES`); rows are exact, bytes exact or
  apportioned as ``bytes_exact`` says (each table source's module says which);
- :meth:`StateQuestions.sizes_visiting`: both tables above for the keyed table or the timers,
  while every decoded batch is handed to a caller's function, each split decoded once: a
  question about the values (`readers.stats`) and the sizes share one decode;
- :meth:`StateQuestions.inline_bytes`: the operator's bytes held in `_metadata` itself;
- :meth:`StateQuestions.page`: rows of the keyed table or the timers in key-group order from
  a :class:`Cursor`, with the next one, decoding only the splits from the cursor's key group
  on, in this process (no Spark). Its columns are those a read with ``include_key_group``
  gives (``_key_group``, the key columns, ``namespace`` if any, then the states' or the
  timers' columns) with the types Spark shows; pages from the first cursor on, concatenated,
  are the rows of a full read ordered by key group.

Nothing here starts Spark; every figure is computed columnar (numpy, pyarrow).
"""

from __future__ import annotations

from typing import Callable, Iterator

import pyarrow as pa

from statectl.statefmt.errors import UsageError
from statectl.statefmt.ids import OperatorRef
from statectl.statefmt.model import KEY_GROUP_COLUMN, Operator, Savepoint

from .local import spark_types, table_columns
from .resolve import KEYED, TIMERS, TableChoice, check_keyed, check_operator_state, describe_states, find_operator
from .sources import table_source
from .tablesource import KEY_GROUP_SIZES, SPLIT_SIZES, Cursor, Page, key_group_table, keyed_part, split_table

__all__ = ["StateQuestions", "Cursor", "Page", "KEY_GROUP_SIZES", "SPLIT_SIZES"]


class StateQuestions:
    """The questions about one operator's tables, asked of its table source (kept, so a file a
    page has verified is not verified again by the next page)."""

    def __init__(self, savepoint: Savepoint, operator: Operator | OperatorRef | str):
        self.savepoint = savepoint
        self.operator = operator if isinstance(operator, Operator) else find_operator(savepoint, operator)
        self.source = table_source(savepoint, self.operator)

    def split_sizes(self, table: str = KEYED, span: tuple[int, int] | None = None) -> pa.Table:
        """Per split of *table* (those meeting the key groups of *span*): :data:`SPLIT_SIZES`."""
        self._check(table)
        return self.source.split_sizes(table, self._span(table, span))

    def key_group_sizes(self, table: str = KEYED, span: tuple[int, int] | None = None) -> pa.Table:
        """Per key group of the keyed table or the timers (within *span*): :data:`KEY_GROUP_SIZES`."""
        self._check_keyed(table)
        return self.source.key_group_sizes(table, self._span(table, span))

    def sizes_visiting(self, table: str, visit: Callable[[pa.RecordBatch], None]) -> tuple[pa.Table, pa.Table]:
        """(:data:`SPLIT_SIZES`, :data:`KEY_GROUP_SIZES`) of the keyed table or the timers, each
        split decoded once and every non-empty batch (``_key_group`` and the format's columns, as
        it decodes them) handed to *visit* first."""
        self._check_keyed(table)
        found = [self.source.measure_decoding(split, table, visit) for split in self.source.splits(table)]
        return split_table(found), key_group_table(found)

    def inline_bytes(self) -> int:
        """Bytes of the operator's state held in `_metadata` itself (Flink's small streams)."""
        return self.source.inline_bytes()

    def page(self, table: str = KEYED, cursor: Cursor | None = None, size: int = 1000) -> Page:
        """At most *size* rows of the keyed table or the timers from *cursor* (None: the first
        row) on, and the cursor of the next page (None after the last row)."""
        self._check_keyed(table)
        found = self.source.page(table, cursor, size)
        return Page(spark_types(self.source, found.rows.select(self.columns(table))), found.cursor, found.next)

    def pages(self, table: str = KEYED, size: int = 1000, cursor: Cursor | None = None) -> Iterator[Page]:
        """Every page of *table* from *cursor* on, one after another."""
        while True:
            found = self.page(table, cursor, size)
            yield found
            if found.next is None:
                return
            cursor = found.next

    def columns(self, table: str) -> list[str]:
        """The columns of a page of the keyed table or the timers: the key group, then those a
        read of the table shows."""
        return [KEY_GROUP_COLUMN, *table_columns(self.source, TableChoice(self.operator, table))]

    # --- checks -------------------------------------------------------------------------
    def _check(self, table: str) -> None:
        if keyed_part(table):
            self._check_keyed(table)
        elif isinstance(table, str):
            check_operator_state(self.operator, table)
        else:
            raise UsageError(f"a table is {KEYED!r}, {TIMERS!r} or an operator state's name, got {table!r}")

    def _check_keyed(self, table: str) -> None:
        op = self.operator
        if not keyed_part(table):
            raise UsageError(f"{table!r}: key groups and pages are of the keyed table ({KEYED!r}) "
                             f"or the timers ({TIMERS!r}); operator {op.label} has {describe_states(op)}")
        check_keyed(op)

    def _span(self, table: str, span) -> tuple[int, int] | None:
        if span is None:
            return None
        last = self.operator.max_parallelism - 1
        ok = isinstance(span, tuple) and len(span) == 2 and all(
            isinstance(v, int) and not isinstance(v, bool) for v in span)
        if not ok or not 0 <= span[0] <= span[1] or not keyed_part(table):
            raise UsageError(f"a span of key groups is (first, last) with 0 <= first <= last, of the keyed "
                             f"table or the timers; got {span!r} for {table!r}")
        return span[0], min(span[1], last)
