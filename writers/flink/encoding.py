"""The task side of writing a Flink savepoint: Arrow batches into Flink's bytes.

Each input of the keyed states (the operator's data, or a state's own) is encoded
in Spark tasks, in one pass, into *entry rows*
(:func:`~statectl.statefmt.flink.stream_write.row_schema`): per row the key
group (Flink's hash of the key) and the key bytes (key and namespace; a timer's
timestamp first) once, and the entry columns of every state read from that
input (value bytes, a map's user key bytes, a list's element order), all as the
job's serializers write them (:mod:`statectl.statefmt.flink.encode`). Each task of
a subtask writes that subtask's keyed stream file (:class:`KeyedStreamTask`).
Operator states are encoded in tasks too (:class:`OperatorEntryEncoder`).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from statectl.statefmt.bytecolumns import big_endian, binary, fixed, join_rows, scattered
from statectl.statefmt.errors import FlinkEncodeError
from statectl.statefmt.flink import types as T
from statectl.statefmt.flink.encode import encode, null_flagged
from statectl.statefmt.flink.keyhash import flink_key_groups
from statectl.statefmt.flink.rowdata import RowData
from statectl.statefmt.flink.rowdata_keys import key_groups_of_rows
from statectl.statefmt.flink.savepoint_write import KeyedStreamFile
from statectl.statefmt.flink.stream_write import (KEY, KEY_GROUP, KeyedStreamBuilder, StreamState,
                                                  order_column, user_key_column, value_column)
from statectl.statefmt.fs import Location
from statectl.statefmt.keygroups import key_group_range
from statectl.statefmt.vocabulary import KeyedTable

from ..errors import task_errors

STREAM_HANDLE_DDL = "subtask int, start int, offsets array<bigint>, file string, size bigint, entries bigint"
OP_ENTRY_DDL = "_state int, _subtask int, _k binary, _v binary"
OP_ENTRY_SCHEMA = pa.schema([("_state", pa.int32()), ("_subtask", pa.int32()), ("_k", pa.binary()),
                             ("_v", pa.binary())])


# --- the task side ---------------------------------------------------------------------------

def connector_elements(batch: pa.RecordBatch, layout: str, where: str) -> pa.RecordBatch:
    """*batch* with its ``_val`` structs (a connector state's rows) as the byte arrays Flink keeps."""
    from statectl.statefmt.flink.connector_encode import element

    try:
        values = pa.array([element(layout, row) for row in batch.column("_val").to_pylist()], pa.binary())
    except FlinkEncodeError as e:
        raise FlinkEncodeError(f"{where}: {e}") from None
    i = batch.schema.get_field_index("_val")
    return batch.set_column(i, "_val", values)


class _BatchEncoder:
    """A task's mapInArrow function: each non-empty batch through ``encode``; a StatectlError
    travels to the driver as its one-line text."""

    def __call__(self, batches):
        with task_errors():
            for batch in batches:
                if batch.num_rows:
                    yield self.encode(batch)


@dataclass(frozen=True)
class StateEncoding:
    """How one state's input columns (``_val<i>``, ``_uk<i>``, ``_ord<i>``, ``_ts<i>`` for state
    id *i*) become its entry columns."""

    state_id: int
    kind: str  # value | list | map | timers
    value: T.FlinkType | None  # value, list element or map value (TTL-wrapped when ttl_ms is set)
    user_key: T.FlinkType | None
    ttl_ms: int | None  # the write's time: the TTL timestamp of a value the input gives none for
    ordered: bool
    where: str
    ttl_from_input: bool = False  # the input carries last-access timestamps (``_ttl<i>``)


@dataclass(frozen=True)
class EntryEncoder(_BatchEncoder):
    """Encodes the rows of one input into entry rows (:func:`row_schema`), in the tasks (picklable):
    the key group and key bytes once per row, and the entry columns of every state read from
    that input. A timers input is encoded alone (its key bytes start with the timestamp)."""

    states: tuple[StateEncoding, ...]
    schema: pa.Schema  # the operator's entry rows
    key: T.FlinkType
    key_java: object  # None for a SQL operator's key row (RowData), placed by its bytes' hash
    key_columns: int
    namespace: T.FlinkType
    has_namespace: bool
    max_parallelism: int
    where: str

    def _key(self, batch: pa.RecordBatch) -> pa.Array:
        cols = [batch.column(f"_k{i}") for i in range(self.key_columns)]
        if isinstance(self.key, RowData):  # a SQL operator's key row, whose fields may be null
            return pa.StructArray.from_arrays(cols, names=self.key.names)
        for c in cols:
            if c.null_count:
                raise FlinkEncodeError(f"{self.where}: a row has a null key; Flink keys cannot be null")
        if isinstance(self.key, T.Tuple):
            return pa.StructArray.from_arrays(cols, names=[f"f{i}" for i in range(len(cols))])
        return cols[0]

    def encode(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        n = batch.num_rows
        key = self._key(batch)
        key_bytes = encode(self.key, key, f"{self.where}, key")
        if isinstance(self.key, RowData):  # placed by the hash of the row's bytes (after their length)
            groups = key_groups_of_rows(key_bytes, self.max_parallelism, skip=4)
        else:
            groups = flink_key_groups(key, self.key_java, self.max_parallelism).astype(np.int32)
        parts = [key_bytes]
        if self.has_namespace:
            ns = batch.column("_ns")
            if ns.null_count:
                raise FlinkEncodeError(f"{self.where}: a row has a null namespace")
            parts.append(encode(self.namespace, ns, f"{self.where}, namespace"))
        else:
            parts.append(fixed(np.zeros((n, 1), dtype=np.uint8)))  # VoidNamespace
        columns: dict[str, pa.Array] = {}
        present = np.zeros(n, dtype=bool)
        for s in self.states:
            i = s.state_id
            if s.kind == KeyedTable.TIMERS:
                ts = batch.column(f"_ts{i}")
                if ts.null_count:
                    raise FlinkEncodeError(f"{s.where}: a row has a null timer timestamp")
                parts.insert(0, fixed(big_endian(_millis(ts) ^ np.int64(T.LONG_MIN), ">i8")))
                columns[value_column(i)] = binary(b"", np.zeros(n + 1, dtype=np.int64))
                present[:] = True
            elif s.kind == "map":
                user_keys = batch.column(f"_uk{i}")
                if user_keys.null_count:
                    raise FlinkEncodeError(f"{s.where}: a row has a null map key")
                columns[user_key_column(i)] = encode(s.user_key, user_keys, f"{s.where}, map key")
                columns[value_column(i)] = null_flagged(s.value, _with_ttl(s, batch.column(f"_val{i}"), batch),
                                                        f"{s.where}, value")
                present[:] = True
            else:  # a null value or list element is no entry
                values = batch.column(f"_val{i}")
                valid = values.is_valid().to_numpy(zero_copy_only=False)
                kept = batch.filter(pa.array(valid)) if values.null_count else batch
                encoded = encode(s.value, _with_ttl(s, kept.column(f"_val{i}"), kept), f"{s.where}, value")
                columns[value_column(i)] = scattered(encoded, valid)
                if s.ordered:
                    columns[order_column(i)] = batch.column(f"_ord{i}").cast(pa.int64())
                present |= valid
        columns[KEY_GROUP] = pa.array(groups)
        columns[KEY] = join_rows(parts)
        out = pa.RecordBatch.from_arrays(
            [columns[f.name].cast(f.type) if f.name in columns else pa.nulls(n, f.type) for f in self.schema],
            schema=self.schema)
        return out if present.all() else out.filter(pa.array(present))


def _with_ttl(s: StateEncoding, values: pa.Array, batch: pa.RecordBatch) -> pa.Array:
    """A TTL state's values with their last-access timestamps: the input's where it gives one
    (state carried over, e.g. by a rescale, keeps its own), the write's time elsewhere."""
    if s.ttl_ms is None:
        return values
    if s.kind == "map" and values.null_count:
        raise FlinkEncodeError(f"{s.where}: a TTL map state cannot hold a null value")
    ts = pa.array(np.full(len(values), s.ttl_ms, dtype=np.int64))
    if s.ttl_from_input:
        given = batch.column(f"_ttl{s.state_id}")
        if pa.types.is_timestamp(given.type):
            given = given.cast(pa.timestamp("ms")).cast(pa.int64())
        ts = pc.fill_null(given.cast(pa.int64()), ts)
    return pa.StructArray.from_arrays([ts, values], names=[T.TTL_FIELD, "value"])



def _millis(values: pa.Array) -> np.ndarray:
    if pa.types.is_timestamp(values.type):
        values = values.cast(pa.timestamp("ms")).cast(pa.int64())
    return values.cast(pa.int64()).to_numpy(zero_copy_only=False)


@dataclass(frozen=True)
class KeyedSubtaskTask:
    """Writes one subtask's keyed state from its sorted entry rows (picklable): the Spark task
    of its partition calls :meth:`write`, which each layout gives (:class:`KeyedStreamTask`,
    `native.NativeKeyedTask`), with the DDL of the row it returns (:attr:`ddl`) and how that
    row is read back on the driver (:meth:`written`)."""

    ddl = ""

    out: str
    token: str
    header: bytes
    states: tuple[StreamState, ...]
    key: T.FlinkType
    max_parallelism: int
    parallelism: int

    def __call__(self, batches):
        from pyspark import TaskContext

        subtask = TaskContext.get().partitionId()
        with task_errors():
            yield self.write(subtask, batches)

    def write(self, subtask: int, batches) -> pa.RecordBatch:
        raise NotImplementedError

    @staticmethod
    def written(row):
        """The subtask's files, from the row :meth:`write` returned (as a dict)."""
        raise NotImplementedError


class KeyedStreamTask(KeyedSubtaskTask):
    """Writes one subtask's canonical keyed stream file."""

    ddl = STREAM_HANDLE_DDL

    @staticmethod
    def written(row) -> KeyedStreamFile:
        return KeyedStreamFile(row["subtask"], row["start"], tuple(row["offsets"]), row["file"], row["size"],
                               row["entries"])

    def write(self, subtask: int, batches) -> pa.RecordBatch:
        first, last = key_group_range(self.max_parallelism, self.parallelism, subtask)
        builder = KeyedStreamBuilder(self.header, list(self.states), self.key, self.max_parallelism,
                                     (first, last))
        name = stream_file_name(self.token)
        target = Location(self.out).child(name)
        try:
            with target.open_output_stream() as f:
                f.write(builder.start())
                for batch in batches:
                    f.write(builder.add(pa.Table.from_batches([batch])))
                f.write(builder.finish())
        except BaseException:
            target.delete_file()
            raise
        return stream_handle_batch(KeyedStreamFile(subtask, first, builder.key_group_offsets(), name,
                                                   builder.size, builder.entries))


def stream_file_name(token: str) -> str:
    """A stream file's name: a UUID as Flink names them, and the write's token."""
    return f"{uuid.uuid4()}-{token}"


def stream_handle_batch(f: KeyedStreamFile) -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist(
        [{"subtask": f.subtask, "start": f.start, "offsets": list(f.offsets), "file": f.file, "size": f.size,
          "entries": f.entries}],
        schema=pa.schema([("subtask", pa.int32()), ("start", pa.int32()), ("offsets", pa.list_(pa.int64())),
                          ("file", pa.string()), ("size", pa.int64()), ("entries", pa.int64())]))


@dataclass(frozen=True)
class OperatorEntryEncoder(_BatchEncoder):
    """Encodes an operator state's rows (list/union values, or broadcast key and value) in tasks."""

    state_id: int
    value: T.FlinkType
    key: T.FlinkType | None  # broadcast only
    where: str
    layout: str | None = None  # a connector state's struct rows, framed into its byte arrays

    def encode(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        n = batch.num_rows
        if self.layout is not None:
            batch = connector_elements(batch, self.layout, self.where)
        if self.key is not None:
            if batch.column("_key").null_count:
                raise FlinkEncodeError(f"{self.where}: a row has a null key")
            k = encode(self.key, batch.column("_key"), f"{self.where}, key")
        else:
            k = binary(b"", np.zeros(n + 1, dtype=np.int64))
        v = encode(self.value, batch.column("_val"), f"{self.where}, value")
        sub = batch.column("_sub").cast(pa.int32()) if "_sub" in batch.schema.names else pa.nulls(n, pa.int32())
        return pa.RecordBatch.from_arrays(
            [pa.array(np.full(n, self.state_id, dtype=np.int32)), sub, k.cast(pa.binary()), v.cast(pa.binary())],
            schema=OP_ENTRY_SCHEMA)
