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
"""

from __future__ import annotations

from typing import ClassVar, Iterator

import pyarrow as pa

from statectl.statefmt.model import DataFile, Operator, OperatorState, Savepoint
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

    def decode(self, split, table: str, groups: list[int] | None = None) -> Iterator[pa.RecordBatch]:
        """The record batches of *table* in one *split* (a decoder may skip other key groups)."""
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
