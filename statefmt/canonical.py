"""Canonical data files: Parquet written and read with pyarrow.

Four file kinds, each with a fixed schema derived from `_metadata`:

* keyed   ``_key_group``, key columns, [``namespace``], one column per keyed state
* timers  ``_key_group``, key columns, [``namespace``], ``timestamp``, ``domain``
* list    ``subtask``, ``value``  (operator list and union state)
* broadcast ``key``, ``value``

Keyed and timer rows are sorted by ``_key_group``; the Parquet row-group
statistics of that column are the index that lets one key-group range be read
alone. Spark reads these files with its own Parquet reader.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from .errors import DataFileError, UsageError
from .fs import Location
from .integrity import checksum_file, read_verified
from .keygroups import key_groups_for_columns
from .locations import file_location
from .model import (
    KEY_GROUP_COLUMN,
    NAMESPACE_COLUMN,
    TIMER_TIME_COLUMN,
    DataFile,
    FileRef,
    KeyedSection,
    Operator,
    OperatorState,
    Savepoint,
)
from .types import to_arrow
from .vocabulary import OperatorStateKind

if TYPE_CHECKING:
    import pyarrow.parquet as pq

ROW_GROUP_ROWS = 128 * 1024
# Dictionary encoding only where values repeat by design: on keys and state values
# it made files larger and Spark's reads of them about a third slower.
DICTIONARY_COLUMNS = frozenset({"domain"})
SUBTASK_COLUMN = "subtask"


# --- schemas -----------------------------------------------------------------

def _key_fields(section: KeyedSection) -> list[pa.Field]:
    fields = [pa.field(KEY_GROUP_COLUMN, pa.int32(), nullable=False)]
    fields += [pa.field(f.name, to_arrow(f.type), nullable=False) for f in section.key]
    if section.namespace_type is not None:
        fields.append(pa.field(NAMESPACE_COLUMN, to_arrow(section.namespace_type)))
    return fields


def keyed_schema(section: KeyedSection) -> pa.Schema:
    states = [pa.field(s.name, to_arrow(s.column_type)) for s in section.states]
    return pa.schema(_key_fields(section) + states)


def timers_schema(section: KeyedSection) -> pa.Schema:
    return pa.schema(_key_fields(section) + [
        pa.field(TIMER_TIME_COLUMN, pa.int64(), nullable=False),
        pa.field("domain", pa.string(), nullable=False),
    ])


def operator_state_schema(state: OperatorState) -> pa.Schema:
    if state.kind == OperatorStateKind.BROADCAST:
        return pa.schema([
            pa.field("key", to_arrow(state.key_type), nullable=False),
            pa.field("value", to_arrow(state.value_type)),
        ])
    return pa.schema([
        pa.field(SUBTASK_COLUMN, pa.int32(), nullable=False),
        pa.field("value", to_arrow(state.value_type)),
    ])


# --- writing -------------------------------------------------------------------

def conform(table: pa.Table, schema: pa.Schema, what: str) -> pa.Table:
    """*table* with exactly *schema*'s columns and types, or a UsageError saying why not."""
    missing = [n for n in schema.names if n not in table.column_names]
    if missing:
        raise UsageError(f"{what}: missing column(s) {', '.join(missing)}")
    table = table.select(schema.names)
    for field in schema:
        if not field.nullable and table.column(field.name).null_count:
            raise UsageError(f"{what}: column {field.name!r} may not hold nulls")
    try:
        return table.cast(schema)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise UsageError(f"{what}: columns do not fit the state's types: {e}") from None


def with_key_groups(table: pa.Table, section: KeyedSection, max_parallelism: int) -> pa.Table:
    """*table* with a ``_key_group`` column computed in Python (Spark computes it itself)."""
    columns = [table.column(n).to_pylist() for n in section.key_names]
    groups = key_groups_for_columns(columns, section.key_types, max_parallelism)
    if KEY_GROUP_COLUMN in table.column_names:
        table = table.drop_columns([KEY_GROUP_COLUMN])
    return table.add_column(0, KEY_GROUP_COLUMN, pa.array(groups, pa.int32()))


def sort_by_key_group(table: pa.Table, key_names: list[str]) -> pa.Table:
    return table.sort_by([(KEY_GROUP_COLUMN, "ascending")] + [(n, "ascending") for n in key_names])


class FileWriter:
    """Writes one data file batch by batch and describes it as a :class:`DataFile`.

    Batches must already be in file order (sorted by key group for keyed and
    timer files). ``key_groups`` is the range the file covers; for keyed and
    timer files it defaults to the groups seen.
    """

    def __init__(self, savepoint_dir: Location, relative_path: str, schema: pa.Schema,
                 key_groups: tuple[int, int] | None = None, row_group_rows: int = ROW_GROUP_ROWS):
        self.location = savepoint_dir.child(relative_path)
        self.relative_path = relative_path
        self.schema = schema
        self.keyed = KEY_GROUP_COLUMN in schema.names
        self.key_groups = key_groups
        self.row_group_rows = row_group_rows
        self.rows = 0
        self._seen: tuple[int, int] | None = None
        import pyarrow.parquet as pq  # here: a Flink savepoint's read needs no Parquet

        self._stream = self.location.open_output_stream()
        self._writer = pq.ParquetWriter(self._stream, schema, compression="zstd",
                                        use_dictionary=sorted(DICTIONARY_COLUMNS & set(schema.names)),
                                        write_statistics=True)

    def write(self, batch: pa.RecordBatch | pa.Table) -> None:
        if batch.num_rows == 0:
            return
        if self.keyed:
            groups = batch.column(KEY_GROUP_COLUMN)
            lo, hi = pc.min(groups).as_py(), pc.max(groups).as_py()
            if self._seen is not None and lo < self._seen[1]:
                raise DataFileError(f"{self.location}: rows are not sorted by key group")
            self._seen = (lo, hi) if self._seen is None else (self._seen[0], hi)
        table = batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch])
        self._writer.write_table(table, row_group_size=self.row_group_rows)
        self.rows += batch.num_rows

    def close(self) -> DataFile:
        self._writer.close()
        self._stream.close()
        groups = None
        if self.keyed:
            groups = self.key_groups or self._seen or (0, 0)
            if self._seen and not (groups[0] <= self._seen[0] and self._seen[1] <= groups[1]):
                raise DataFileError(
                    f"{self.location}: holds key groups {self._seen}, outside its range {groups}"
                )
        return DataFile(
            ref=FileRef(self.relative_path),
            size=self.location.size(),
            checksum=checksum_file(self.location),
            rows=self.rows,
            key_groups=groups,
        )

    def abort(self) -> None:
        try:
            self._writer.close()
            self._stream.close()
        finally:
            self.location.delete_file()


def write_file(savepoint_dir: Location, relative_path: str, table: pa.Table, schema: pa.Schema,
               key_groups: tuple[int, int] | None = None,
               row_group_rows: int = ROW_GROUP_ROWS) -> DataFile:
    """Write a whole table (already conformed and sorted) as one data file."""
    writer = FileWriter(savepoint_dir, relative_path, schema, key_groups, row_group_rows)
    try:
        writer.write(table)
        return writer.close()
    except BaseException:
        writer.abort()
        raise


# --- reading -------------------------------------------------------------------

def _open_parquet(source, location: Location) -> "pq.ParquetFile":
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(io.BytesIO(source) if isinstance(source, bytes) else source)
    except (pa.ArrowInvalid, OSError) as e:
        raise DataFileError(f"{location}: not a readable Parquet file ({e})") from None


def _check_schema(pf: "pq.ParquetFile", schema: pa.Schema, location: Location) -> None:
    actual = pf.schema_arrow
    if actual.names != schema.names or any(
        not a.type.equals(e.type) for a, e in zip(actual, schema)
    ):
        raise DataFileError(
            f"{location}: columns are {_describe(actual)}, _metadata says {_describe(schema)}"
        )


def _describe(schema: pa.Schema) -> str:
    return "(" + ", ".join(f"{f.name}: {f.type}" for f in schema) + ")"


def check_parquet(location: Location, source, schema: pa.Schema,
                  expected: DataFile) -> "pq.ParquetFile":
    """Open verified bytes (or a file) as Parquet; check schema, rows and key-group bounds."""
    pf = _open_parquet(source, location)
    _check_schema(pf, schema, location)
    if pf.metadata.num_rows != expected.rows:
        raise DataFileError(
            f"{location}: holds {pf.metadata.num_rows} rows, _metadata records {expected.rows}"
        )
    if expected.key_groups is not None:
        for lo, hi in _row_group_key_groups(pf):
            if lo < expected.key_groups[0] or hi > expected.key_groups[1]:
                raise DataFileError(
                    f"{location}: holds key groups {lo}..{hi}, outside its range "
                    f"{expected.key_groups[0]}..{expected.key_groups[1]}"
                )
    return pf


def _row_group_key_groups(pf: "pq.ParquetFile") -> list[tuple[int, int]]:
    """(min, max) of ``_key_group`` per row group; the key-group index of the file."""
    column = pf.schema_arrow.get_field_index(KEY_GROUP_COLUMN)
    out = []
    for i in range(pf.metadata.num_row_groups):
        stats = pf.metadata.row_group(i).column(column).statistics
        if stats is None or not stats.has_min_max:
            raise DataFileError("a keyed file lacks key-group statistics")
        out.append((stats.min, stats.max))
    return out


def read_file(location: Location, expected: DataFile, schema: pa.Schema) -> pa.Table:
    """A whole data file, verified against *expected* and *schema*."""
    pf = check_parquet(location, read_verified(location, expected), schema, expected)
    return pf.read()


def read_key_group_range(location: Location, expected: DataFile, schema: pa.Schema,
                         first: int, last: int) -> pa.Table:
    """The rows of key groups ``first..last`` of a keyed or timer file.

    Only the row groups whose key-group statistics meet the range are decoded.
    """
    pf = check_parquet(location, read_verified(location, expected), schema, expected)
    wanted = [i for i, (lo, hi) in enumerate(_row_group_key_groups(pf)) if lo <= last and hi >= first]
    if not wanted:
        return schema.empty_table()
    table = pf.read_row_groups(wanted)
    groups = table.column(KEY_GROUP_COLUMN)
    mask = pc.and_(pc.greater_equal(groups, first), pc.less_equal(groups, last))
    return table.filter(mask)


def decode_pages(sp: Savepoint, op: Operator, skip: set[tuple[str, str]]) -> tuple[int, int, tuple[str, ...]]:
    """`validate --deep` of a canonical operator: every Parquet page of its files decoded
    (but those in *skip*, (operator id, file path) already found bad): rows, files, problems."""
    import pyarrow.parquet as pq

    rows, parts, problems = 0, 0, []
    for f in op.data_files():
        if (op.operator_id, f.ref.path) in skip:
            continue
        loc = file_location(sp, f.ref)
        try:
            with loc.open_input_file() as source:
                pf = pq.ParquetFile(source)
                for i in range(pf.num_row_groups):
                    rows += pf.read_row_group(i).num_rows
            parts += 1
        except (OSError, ValueError) as e:
            problems.append(f"operator {op.label}: {loc}: a page does not decode ({e})")
    return rows, parts, tuple(problems)


def files_for_range(files, first: int, last: int) -> list[DataFile]:
    """The keyed or timer files whose key-group range meets ``first..last``."""
    return [f for f in files if f.key_groups[0] <= last and f.key_groups[1] >= first]
