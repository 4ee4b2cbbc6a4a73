"""Task-side file writing of statectl's own format: what runs inside Spark executors.

A task receives Arrow batches already sorted by key group and writes them as
data files; it yields only small *handles* (path, size, checksum, rows, key
groups, a native file's name) back to Spark, which the driver collects
(:func:`run_job`). A task that fails deletes every file it began, and turns a
:class:`StatectlError` into marked text the driver can turn back into the same error.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator

import numpy as np
import pyarrow as pa

from statectl.statefmt.canonical import ROW_GROUP_ROWS, FileWriter, conform
from statectl.statefmt.errors import StatectlError
from statectl.statefmt.fs import Location
from statectl.statefmt.model import KEY_GROUP_COLUMN, DataFile, FileRef
from statectl.statefmt.savepoint import data_file_path

from ..errors import task_errors
from ..job import WriteSession, write_token

HANDLE_DDL = (
    "kind string, state string, path string, size bigint, checksum string, rows bigint, "
    "kg_first int, kg_last int, name string"
)
HANDLE_SCHEMA = pa.schema([
    ("kind", pa.string()), ("state", pa.string()), ("path", pa.string()), ("size", pa.int64()),
    ("checksum", pa.string()), ("rows", pa.int64()), ("kg_first", pa.int32()),
    ("kg_last", pa.int32()), ("name", pa.string()),
])


@dataclass(frozen=True)
class FileTarget:
    """Where and how one kind of file is written (picklable: sent to every task)."""

    out: str  # URI of the savepoint directory
    operator_id: str
    kind: str  # keyed | timers | list | union | broadcast
    schema: pa.Schema
    write_id: str
    state: str | None = None  # operator states: the state's name

    def new_file(self, suffix: str, key_groups: tuple[int, int] | None = None) -> FileWriter:
        tail = f"{suffix}-{write_token(self.write_id)}" if suffix else write_token(self.write_id)
        name = f"{self.kind}-state" if self.state is not None else self.kind
        path = data_file_path(self.operator_id, name, tail)
        return FileWriter(Location(self.out), path, self.schema, key_groups)


@dataclass(frozen=True)
class OperatorOutput:
    """Where one operator's new files of one write go (picklable); names each kind's target."""

    out: str  # URI of the savepoint directory
    operator_id: str
    write_id: str

    def file_target(self, kind: str, schema: pa.Schema, state: str | None = None) -> FileTarget:
        return FileTarget(self.out, self.operator_id, kind, schema, self.write_id, state)


class BufferedFile:
    """A FileWriter fed batch by batch, written in row groups of ROW_GROUP_ROWS rows."""

    def __init__(self, writer: FileWriter):
        self.writer = writer
        self._pending: list[pa.RecordBatch] = []
        self._rows = 0

    def add(self, batch: pa.RecordBatch) -> None:
        if batch.num_rows:
            self._pending.append(batch)
            self._rows += batch.num_rows
            if self._rows >= ROW_GROUP_ROWS:
                self.flush()

    def flush(self) -> None:
        if self._pending:
            self.writer.write(pa.Table.from_batches(self._pending).combine_chunks())
            self._pending, self._rows = [], 0

    def close(self) -> DataFile:
        self.flush()
        return self.writer.close()


class Sink:
    """What a writing task feeds: rows in, then the files written (``close``) or none (``abort``)."""

    target: FileTarget  # whose handles ``close``'s files become
    what: str  # how errors name what is written

    def write(self, batch: pa.RecordBatch | pa.Table) -> None:
        raise NotImplementedError

    def write_all(self, batches) -> None:
        for batch in batches:
            self.write(batch)

    def close(self) -> list[DataFile]:
        raise NotImplementedError

    def abort(self) -> None:
        raise NotImplementedError


class FileSink(Sink):
    """Rows conformed to the target's schema, written into canonical data files."""

    def __init__(self, target: FileTarget, what: str):
        self.target = target
        self.what = what
        self.done: list[DataFile] = []
        self._file: BufferedFile | None = None

    def write(self, batch: pa.RecordBatch | pa.Table) -> None:
        if batch.num_rows:
            self._route(conform(_as_table(batch), self.target.schema, self.what))

    def _route(self, table: pa.Table) -> None:
        """Add *table*'s rows to the file(s) they belong in."""
        raise NotImplementedError

    def _add(self, table: pa.Table) -> None:
        for piece in table.to_batches():
            self._file.add(piece)

    def _close_current(self) -> None:
        if self._file is not None:
            current, self._file = self._file, None
            self.done.append(current.close())

    def close(self) -> list[DataFile]:
        self._close_current()
        return self.done

    def abort(self) -> None:
        if self._file is not None:
            self._file.writer.abort()
            self._file = None
        delete_files(self.target.out, self.done)
        self.done = []


class ChunkedSink(FileSink):
    """Writes rows sorted by key group into one file per key-group chunk they fall in."""

    def __init__(self, target: FileTarget, ranges: tuple[tuple[int, int], ...], what: str):
        super().__init__(target, what)
        self.ranges = ranges
        self.starts = np.array([r[0] for r in ranges], dtype=np.int64)
        self._chunk: int | None = None

    def _route(self, table: pa.Table) -> None:
        groups = table.column(KEY_GROUP_COLUMN).to_numpy()
        chunks = np.searchsorted(self.starts, groups, side="right") - 1
        cuts = [0, *(np.flatnonzero(np.diff(chunks)) + 1).tolist(), len(chunks)]
        for lo, hi in zip(cuts, cuts[1:]):
            self._switch(int(chunks[lo]))
            self._add(table.slice(lo, hi - lo))

    def _switch(self, chunk: int) -> None:
        if chunk == self._chunk:
            return
        if self._chunk is not None and chunk < self._chunk:
            raise StatectlError(f"{self.what}: rows reached the writer out of key-group order")
        self._close_current()
        first, last = self.ranges[chunk]
        self._file = BufferedFile(self.target.new_file(f"{first}-{last}", (first, last)))
        self._chunk = chunk


class SingleFileSink(FileSink):
    """Writes every row of a task into one file (operator state)."""

    def __init__(self, target: FileTarget, what: str, suffix: str = ""):
        super().__init__(target, what)
        self.suffix = suffix

    def _route(self, table: pa.Table) -> None:
        if self._file is None:
            self._file = BufferedFile(self.target.new_file(self.suffix))
        self._add(table)


def _as_table(batch) -> pa.Table:
    return batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch])


def delete_files(out: str, files: list[DataFile]) -> None:
    for f in files:
        Location(out).child(f.ref.path).delete_file()


def handles_batch(target: FileTarget, files: list[DataFile]) -> pa.RecordBatch:
    """The handles of *files* as one Arrow batch of :data:`HANDLE_SCHEMA`."""
    return pa.RecordBatch.from_pylist([
        {"kind": target.kind, "state": target.state, "path": f.ref.path, "size": f.size,
         "checksum": f.checksum, "rows": f.rows,
         "kg_first": f.key_groups[0] if f.key_groups else None,
         "kg_last": f.key_groups[1] if f.key_groups else None, "name": f.name}
        for f in files
    ], schema=HANDLE_SCHEMA)


def data_file_from_handle(row) -> DataFile:
    """A handle row (collected on the driver) as a DataFile of this savepoint."""
    groups = (row["kg_first"], row["kg_last"]) if row["kg_first"] is not None else None
    return DataFile(FileRef(row["path"]), row["size"], row["checksum"], row["rows"], groups,
                    row.get("name"))


def guarded(sinks: list[Sink], body: Callable[[], None]) -> Iterator[pa.RecordBatch]:
    """The one task wrapper: run *body* (which feeds *sinks*), then close the sinks and
    yield their handles.

    On any failure every file the sinks began is deleted, and a StatectlError
    leaves the task as marked text (see :mod:`statectl.writers.errors`).
    """
    with task_errors():
        try:
            body()
            closed = [(sink.target, sink.close()) for sink in sinks]
        except BaseException:
            for sink in sinks:
                try:
                    sink.abort()
                except Exception:
                    pass
            raise
    for target, files in closed:
        if files:
            yield handles_batch(target, files)


def output_of(session: WriteSession, operator_id: str) -> OperatorOutput:
    """Where *session*'s write puts *operator_id*'s new files."""
    return OperatorOutput(session.out.uri, operator_id, session.write_id)


def run_job(session: WriteSession, df, description: str) -> list[tuple[dict, DataFile]]:
    """Run *session*'s job writing *df*'s files; the (handle, DataFile) of each file written."""
    return [(r, data_file_from_handle(r)) for r in session.collect(df, description)]
