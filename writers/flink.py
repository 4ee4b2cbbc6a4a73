"""Writing a canonical Apache Flink savepoint (``bootstrap --format flink``).

Each input of the keyed states (the operator's data, or a state's own) is encoded
in Spark tasks, in one pass, into *entry rows*
(:func:`~statectl.statefmt.flink.stream_write.row_schema`): per row the key
group (Flink's hash of the key) and the key bytes (key and namespace; a timer's
timestamp first) once, and the entry columns of every state read from that
input (value bytes, a map's user key bytes, a list's element order), all as the
job's serializers write them (:mod:`statectl.statefmt.flink.encode`). The rows
of all inputs are unioned, sent to the task of their subtask and sorted by (key
group, key) there; each task writes its subtask's keyed stream file
(:class:`KeyedStreamBuilder`, which puts the entries in stream order) and
returns its handle.
Operator states are encoded in tasks too and assembled on the driver (they are
small), one stream per subtask. `_metadata` comes last, atomically; a failed
write removes every file it began, as for statectl's own formats.

What the key and state types are comes from the operator's ``flink:`` binding
(:mod:`.flink_binding`), or from the columns' Arrow types where that is the only
choice (:func:`~statectl.statefmt.flink.binding.derive_type`).
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from statectl.statefmt.bytecolumns import big_endian, binary, fixed, join_rows, scattered
from statectl.statefmt.errors import FlinkEncodeError, StatectlError, UsageError
from statectl.statefmt.flink import types as T
from statectl.statefmt.flink.binding import (LIST_SERIALIZER, MAP_SERIALIZER, NAMED, VOID, check_written_type,
                                             derive_type, key_java_type)
from statectl.statefmt.flink.encode import encode, null_flagged
from statectl.statefmt.flink.headers import StateMeta
from statectl.statefmt.flink.keyhash import flink_key_groups
from statectl.statefmt.flink.lineage import commit_metadata
from statectl.statefmt.flink.savepoint_write import (KeyedStreamFile, OperatorStreamFile, flink_operator,
                                                     metadata_bytes)
from statectl.statefmt.flink.snapshot_write import keyed_header, operator_header
from statectl.statefmt.flink.stream_write import (KEY, KEY_GROUP, KeyedStreamBuilder, OperatorStreamPart,
                                                  StreamState, operator_stream, order_column, row_ddl,
                                                  row_schema, user_key_column, value_column)
from statectl.statefmt.fs import Location
from statectl.statefmt.ids import operator_id_for_uid
from statectl.statefmt.model import TTL_SUFFIX
from statectl.statefmt.keygroups import check_parallelism, default_max_parallelism, key_group_range
from statectl.statefmt.savepoint import check_output

from .definitions import (AggregatingState, BroadcastState, KeyedData, ListState, MapState, OperatorData,
                          OperatorListState, ReducingState, ValueState)
from .errors import SpecError, task_error_text
from .flink_binding import FlinkBinding
from .job import WriteSession
from .partitioning import Chunks
from .sql import q

TIMER_STATE = "_timer_state/{domain}_{service}"
STREAM_HANDLE_DDL = "subtask int, start int, offsets array<bigint>, file string, size bigint, entries bigint"
OP_ENTRY_DDL = "_state int, _subtask int, _k binary, _v binary"
OP_ENTRY_SCHEMA = pa.schema([("_state", pa.int32()), ("_subtask", pa.int32()), ("_k", pa.binary()),
                             ("_v", pa.binary())])
SUBTASK_COLUMN = "subtask"  # an operator list state's input column placing each value on a subtask


def _arrow_type(df, column: str) -> pa.DataType:
    from pyspark.sql.pandas.types import to_arrow_type

    return to_arrow_type(df.schema[column].dataType, timezone="UTC")


def _missing(df, columns, where: str) -> None:
    absent = [c for c in columns if c not in df.columns]
    if absent:
        raise SpecError(f"{where}: missing column(s) {', '.join(map(repr, absent))}; "
                        f"the input has {', '.join(map(repr, df.columns))}")


def _derive(t: T.FlinkType | None, df, column: str, where: str) -> T.FlinkType:
    """The Flink type *column* is written as: *t* (declared; the column must widen to it) or
    the one its Arrow type implies."""
    try:
        if t is not None:
            check_written_type(_arrow_type(df, column), t, f"{where}, column {column!r}")
            return t
        return derive_type(_arrow_type(df, column), f"{where}, column {column!r}")
    except FlinkEncodeError as e:
        raise SpecError(str(e)) from None


def _ttl(t: T.FlinkType, ttl: bool) -> T.FlinkType:
    return T.Ttl(t, "org.apache.flink.runtime.state.ttl.TtlStateFactory$TtlSerializer") if ttl else t


# --- the task side ---------------------------------------------------------------------------

class _BatchEncoder:
    """A task's mapInArrow function: each non-empty batch through ``encode``; a StatectlError
    travels to the driver as its one-line text."""

    def __call__(self, batches):
        try:
            for batch in batches:
                if batch.num_rows:
                    yield self.encode(batch)
        except StatectlError as e:
            raise RuntimeError(task_error_text(e)) from None


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
    key_java: object
    key_columns: int
    namespace: T.FlinkType
    has_namespace: bool
    max_parallelism: int
    where: str

    def _key(self, batch: pa.RecordBatch) -> pa.Array:
        cols = [batch.column(f"_k{i}") for i in range(self.key_columns)]
        for c in cols:
            if c.null_count:
                raise FlinkEncodeError(f"{self.where}: a row has a null key; Flink keys cannot be null")
        if isinstance(self.key, T.Tuple):
            return pa.StructArray.from_arrays(cols, names=[f"f{i}" for i in range(len(cols))])
        return cols[0]

    def encode(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        n = batch.num_rows
        key = self._key(batch)
        groups = flink_key_groups(key, self.key_java, self.max_parallelism).astype(np.int32)
        parts = [encode(self.key, key, f"{self.where}, key")]
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
            if s.kind == "timers":
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


def _ttl_input(state, value_column: str, ttl: bool, df, state_id: int, columns: dict, where: str) -> bool:
    """Whether the input gives a TTL state's last-access timestamps: its ``ttl_column``, else a
    column named ``<value column>_ttl_ts`` (as the reader names them) when there is one. Adds it
    to *columns* as ``_ttl<state id>``."""
    column = state.ttl_column or f"{value_column}{TTL_SUFFIX}"
    if column not in df.columns:
        if state.ttl_column:
            _missing(df, [column], where)
        return False
    if not ttl:
        if state.ttl_column:
            raise SpecError(f"{where}: ttl_column {column!r} is given, but the state has no TTL "
                            "(flink: {ttl: true} in its binding)")
        return False
    columns[f"_ttl{state_id}"] = q(column)
    return True


def _millis(values: pa.Array) -> np.ndarray:
    if pa.types.is_timestamp(values.type):
        values = values.cast(pa.timestamp("ms")).cast(pa.int64())
    return values.cast(pa.int64()).to_numpy(zero_copy_only=False)


@dataclass(frozen=True)
class KeyedStreamTask:
    """Writes one subtask's keyed stream file from its sorted entry rows (picklable)."""

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
        try:
            yield self.write(subtask, batches)
        except StatectlError as e:
            raise RuntimeError(task_error_text(e)) from None

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

    def encode(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        n = batch.num_rows
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


# --- the driver side ---------------------------------------------------------------------------

@dataclass
class FlinkOperatorReport:
    uid: str
    operator_id: str
    action: str
    files: int
    rows: int
    bytes: int
    states: list[str]


class FlinkOperatorPlan:
    """One operator of a Flink savepoint: its header, the keyed job, its operator states."""

    def __init__(self, data: OperatorData, max_parallelism: int, session: WriteSession, now_ms: int):
        check_parallelism(data.parallelism, max_parallelism)
        self.data = data
        self.uid = data.uid
        self.where = f"operator {data.uid!r}"
        self.max_parallelism = max_parallelism
        self.session = session
        self.binding: FlinkBinding = data.flink or FlinkBinding()
        self.now_ms = now_ms
        self.keyed_job = None
        self.keyed_header: bytes | None = None
        self.operator_states: list[StateMeta] = []
        self.operator_job = None
        if data.keyed is not None:
            self._plan_keyed()
        if data.operator_states:
            self._plan_operator_states()

    # --- keyed state ---------------------------------------------------------------------------
    def _plan_keyed(self) -> None:
        keyed = self.data.keyed
        if not isinstance(keyed, KeyedData):
            raise SpecError(f"{self.where}: a Flink savepoint's keyed state is written from columns "
                            "(states and timers), not from a per-key function")
        first = keyed.data if keyed.data is not None else next(
            (s.data for s in [*keyed.states, *keyed.timers] if s.data is not None), None)
        if first is None:
            raise SpecError(f"{self.where}: no input data")
        _missing(first, keyed.key, f"{self.where}, input")
        key = self.binding.key
        if key is None:
            fields = tuple(_derive(None, first, k, self.where) for k in keyed.key)
            key = fields[0] if len(fields) == 1 else T.Tuple(
                f"org.apache.flink.api.java.tuple.Tuple{len(fields)}", fields,
                "org.apache.flink.api.java.typeutils.runtime.TupleSerializer")
        elif len(keyed.key) > 1 and not (isinstance(key, T.Tuple) and len(key.fields) == len(keyed.key)):
            raise SpecError(f"{self.where}: {len(keyed.key)} key columns need a Tuple{len(keyed.key)} key type")
        else:
            for column, t in zip(keyed.key, key.fields if len(keyed.key) > 1 else (key,)):
                _derive(t, first, column, f"{self.where}, key")
        try:
            key_java = key_java_type(key, self.where)
        except FlinkEncodeError as e:
            raise SpecError(str(e)) from None
        ns = self.binding.namespace
        if ns is None:
            ns = NAMED["TimeWindow"] if keyed.namespace else VOID
        if keyed.namespace and isinstance(ns, T.VoidNamespace):
            raise SpecError(f"{self.where}: a namespace column needs flink namespace TimeWindow")
        if not keyed.namespace and not isinstance(ns, T.VoidNamespace):
            raise SpecError(f"{self.where}: flink namespace {ns.describe()} needs keyed.namespace, "
                            "the column giving each row's window")
        metas, inputs = [], []  # inputs: (DataFrame, its states' encodings, their columns' SQL)
        for state in keyed.states:
            meta, encoding, df, columns = self._keyed_state(state, len(metas), keyed, ns)
            metas.append(meta)
            shared = next((i for i in inputs if i[0] is df), None)
            if shared is None:
                inputs.append((df, [encoding], columns))
            else:
                shared[1].append(encoding)
                shared[2].update(columns)
        service = self.binding.timer_service
        timer_ids = {}
        for domain in ("event", "processing"):
            timer_ids[domain] = len(metas)
            metas.append(StateMeta(TIMER_STATE.format(domain=domain, service=service), "timers",
                                   T.Timer(key, ns, "org.apache.flink.streaming.api.operators.TimerSerializer"), ns))
        for t in keyed.timers:
            where = f"{self.where}, {t.domain}-time timers"
            df = t.data if t.data is not None else keyed.data
            _missing(df, [*keyed.key, t.column] + ([keyed.namespace] if keyed.namespace else []), where)
            state_id = timer_ids[t.domain]
            inputs.append((df, [StateEncoding(state_id, "timers", None, None, None, False, where)],
                           {f"_ts{state_id}": q(t.column)}))
        names = [m.name for m in metas]
        unknown = sorted(set(self.binding.states) - set(names) - {s.name for s in self.data.operator_states})
        if unknown:
            raise SpecError(f"{self.where}.flink.states: no state named {', '.join(map(repr, unknown))}")
        self.keyed_header = keyed_header(key, metas)
        ordered = {e.state_id for _, encodings, _ in inputs for e in encodings if e.ordered}
        self.stream_states = tuple(StreamState(m.name, m.kind, f"{self.where}, {m.kind} state {m.name!r}",
                                               i in ordered) for i, m in enumerate(metas))
        schema = row_schema(self.stream_states)
        common = dict(schema=schema, key=key, key_java=key_java, key_columns=len(keyed.key), namespace=ns,
                      has_namespace=bool(keyed.namespace), max_parallelism=self.max_parallelism)
        frames = []
        for df, encodings, columns in inputs:
            where = encodings[0].where if len(encodings) == 1 else \
                f"{self.where}, the input of states {', '.join(repr(names[e.state_id]) for e in encodings)}"
            encoder = EntryEncoder(tuple(encodings), where=where, **common)
            frames.append(self._entries(df, keyed, encoder, columns, row_ddl(schema)))
        union = frames[0]
        for df in frames[1:]:
            union = union.unionByName(df)
        chunks = Chunks(self.max_parallelism, self.data.parallelism, 1)
        rows = chunks.distribute(union, sort_by=(KEY_GROUP, KEY))
        self.key = key
        task = KeyedStreamTask(self.session.out.uri, self.session.token, self.keyed_header, self.stream_states,
                               key, self.max_parallelism, self.data.parallelism)
        self.keyed_job = rows.mapInArrow(task, STREAM_HANDLE_DDL)

    def _keyed_state(self, state, state_id: int, keyed: KeyedData, ns):
        """A keyed state's header entry, its encoding, its input and its columns' SQL."""
        where = f"{self.where}, state {state.name!r}"
        sb = self.binding.state(state.name)
        df = state.data if state.data is not None else keyed.data
        if isinstance(state, (ReducingState, AggregatingState)):
            raise SpecError(f"{where}: in a Flink savepoint give the stored value itself: a value state "
                            "whose column holds the reduced value or the accumulator, with flink kind: "
                            f"{'reducing' if isinstance(state, ReducingState) else 'aggregating'}")
        if getattr(state, "combine", None):
            raise SpecError(f"{where}: combine is not supported in a Flink savepoint; one row per key")
        if sb.kind is not None and not isinstance(state, ValueState):
            raise SpecError(f"{where}: flink kind {sb.kind} is for value states")
        ttl_ms = self.now_ms if sb.ttl else None
        key_cols = [*keyed.key] + ([keyed.namespace] if keyed.namespace else [])
        if isinstance(state, MapState):
            _missing(df, key_cols + [state.key_column, state.value_column], where)
            user_key = _derive(sb.key, df, state.key_column, where)
            value = _derive(sb.type, df, state.value_column, where)
            meta = StateMeta(state.name, "map", T.Map(user_key, _ttl(value, sb.ttl), MAP_SERIALIZER), ns, user_key)
            columns = {f"_uk{state_id}": q(state.key_column), f"_val{state_id}": q(state.value_column)}
            ttl_input = _ttl_input(state, state.value_column, sb.ttl, df, state_id, columns, where)
            encoding = StateEncoding(state_id, "map", _ttl(value, sb.ttl), user_key, ttl_ms, False, where, ttl_input)
            return meta, encoding, df, columns
        _missing(df, key_cols + [state.column], where)
        value = _derive(sb.type, df, state.column, where)
        columns = {f"_val{state_id}": q(state.column)}
        if isinstance(state, ListState):
            meta = StateMeta(state.name, "list", T.List(_ttl(value, sb.ttl), LIST_SERIALIZER), ns)
            kind = "list"
            if state.order_by:
                _missing(df, [state.order_by], where)
                columns[f"_ord{state_id}"] = _order_sql(df, state.order_by, where)
        else:
            meta = StateMeta(state.name, sb.kind or "value", _ttl(value, sb.ttl), ns)
            kind = "value"
        ttl_input = _ttl_input(state, state.column, sb.ttl, df, state_id, columns, where)
        encoding = StateEncoding(state_id, kind, _ttl(value, sb.ttl), None, ttl_ms,
                                 f"_ord{state_id}" in columns, where, ttl_input)
        return meta, encoding, df, columns

    def _entries(self, df, keyed: KeyedData, encoder: EntryEncoder, columns: dict[str, str], ddl: str):
        """*df*'s entry rows: its key, namespace and the states' *columns*, encoded by *encoder*."""
        exprs = [f"{q(k)} AS _k{i}" for i, k in enumerate(keyed.key)]
        if keyed.namespace:
            exprs.append(f"{q(keyed.namespace)} AS _ns")
        exprs += [f"{sql} AS {name}" for name, sql in columns.items()]
        return df.selectExpr(*exprs).mapInArrow(encoder, ddl)

    # --- operator state ----------------------------------------------------------------------
    def _plan_operator_states(self) -> None:
        frames = []
        for i, state in enumerate(self.data.operator_states):
            where = f"{self.where}, operator state {state.name!r}"
            sb = self.binding.state(state.name)
            df = state.data
            if isinstance(state, BroadcastState):
                if state.combine:
                    raise SpecError(f"{where}: combine is not supported in a Flink savepoint")
                _missing(df, [state.key_column, state.value_column], where)
                key = _derive(sb.key, df, state.key_column, where)
                value = _derive(sb.type, df, state.value_column, where)
                self.operator_states.append(StateMeta(state.name, "broadcast", value, None, key))
                exprs = [f"{q(state.key_column)} AS _key", f"{q(state.value_column)} AS _val"]
            else:
                _missing(df, [state.column], where)
                value = _derive(sb.type, df, state.column, where)
                kind = "list" if isinstance(state, OperatorListState) else "union"
                self.operator_states.append(StateMeta(state.name, kind, value))
                key = None
                exprs = [f"{q(state.column)} AS _val"]
                if SUBTASK_COLUMN in df.columns:
                    exprs.append(f"{q(SUBTASK_COLUMN)} AS _sub")
            frames.append(df.selectExpr(*exprs).mapInArrow(OperatorEntryEncoder(i, value, key, where),
                                                           OP_ENTRY_DDL))
        union = frames[0]
        for df in frames[1:]:
            union = union.unionByName(df)
        self.operator_job = union

    # --- running -------------------------------------------------------------------------------
    def run(self):
        keyed_files = []
        if self.keyed_job is not None:
            rows = self.session.collect(self.keyed_job, f"keyed state of {self.uid} (Flink)")
            keyed_files = [KeyedStreamFile(r["subtask"], r["start"], tuple(r["offsets"]), r["file"], r["size"],
                                           r["entries"]) for r in rows]
            done = {f.subtask for f in keyed_files}
            if len(done) != len(keyed_files):
                raise StatectlError(f"{self.where}: two tasks wrote one subtask's keyed stream")
            for subtask in range(self.data.parallelism):  # subtasks no task wrote: no keyed entries
                if subtask not in done:
                    task = KeyedStreamTask(self.session.out.uri, self.session.token, self.keyed_header,
                                           self.stream_states, self.key, self.max_parallelism,
                                           self.data.parallelism)
                    row = task.write(subtask, iter(())).to_pylist()[0]
                    keyed_files.append(KeyedStreamFile(subtask, row["start"], tuple(row["offsets"]),
                                                       row["file"], row["size"]))
        op_files = self._operator_streams() if self.operator_job is not None else []
        op = flink_operator(self.uid, self.data.parallelism, self.max_parallelism, keyed_files, op_files)
        files = [*keyed_files, *op_files]
        keyed_names = [s.name for s in self.data.keyed.states] if isinstance(self.data.keyed, KeyedData) else []
        report = FlinkOperatorReport(self.uid, operator_id_for_uid(self.uid), "written", len(files),
                                     sum(f.entries for f in files),
                                     sum(f.size for f in files),
                                     keyed_names + [s.name for s in self.data.operator_states])
        return op, report

    def _operator_streams(self) -> list[OperatorStreamFile]:
        rows = self.session.collect(self.operator_job, f"operator state of {self.uid} (Flink)")
        p = self.data.parallelism
        per_state: dict[int, list] = {i: [] for i in range(len(self.operator_states))}
        for r in rows:
            per_state[r["_state"]].append(r)
        parts_of_subtask: list[list[OperatorStreamPart]] = [[] for _ in range(p)]
        for i, meta in enumerate(self.operator_states):
            where = f"{self.where}, operator state {meta.name!r}"
            rs = per_state[i]
            if meta.kind == "broadcast":
                keys = [r["_k"] for r in rs]
                if len(set(keys)) != len(keys):
                    raise FlinkEncodeError(f"{where}: a key appears in more than one row")
                entries = pa.array([r["_k"] + r["_v"] for r in rs], pa.binary())
                for s in range(p):
                    parts_of_subtask[s].append(OperatorStreamPart(meta.name, "BROADCAST", entries))
                continue
            mode = "UNION" if meta.kind == "union" else "SPLIT_DISTRIBUTE"
            placed: list[list[bytes]] = [[] for _ in range(p)]
            for j, r in enumerate(rs):
                s = r["_subtask"] if r["_subtask"] is not None else j % p
                if not 0 <= s < p:
                    raise FlinkEncodeError(f"{where}: subtask {s} is outside 0..{p - 1}")
                placed[s].append(r["_v"])
            for s in range(p):
                parts_of_subtask[s].append(OperatorStreamPart(meta.name, mode, pa.array(placed[s], pa.binary())))
        header = operator_header(self.operator_states)
        out = []
        for s in range(p):
            data, infos = operator_stream(header, parts_of_subtask[s])
            name = stream_file_name(self.session.token)
            with self.session.out.child(name).open_output_stream() as f:
                f.write(data)
            out.append(OperatorStreamFile(s, tuple(infos), name, len(data),
                                          sum(len(p.elements) for p in parts_of_subtask[s])))
        return out


def _order_sql(df, column: str, where: str) -> str:
    from pyspark.sql import types as st

    t = df.schema[column].dataType
    c = q(column)
    if isinstance(t, (st.ByteType, st.ShortType, st.IntegerType, st.LongType)):
        return f"CAST({c} AS BIGINT)"
    if isinstance(t, (st.TimestampType, st.TimestampNTZType)):
        return f"unix_micros({c})"
    if isinstance(t, st.DateType):
        return f"CAST(unix_date({c}) AS BIGINT)"
    raise SpecError(f"{where}: order_by needs an integer, date or timestamp column in a Flink savepoint; "
                    f"{column!r} is {t.simpleString()}")


def write_flink(operators, output: str, spark, max_parallelism: int | None = None, on_job=None,
                overwrite: bool = False, base=None, kept: tuple[str, ...] = (),
                kept_max_parallelism: int | None = None, self_contained_copy: bool = False):
    """Write *operators* (:class:`OperatorData`) as a new canonical Flink savepoint at *output*.

    *base* (a Flink savepoint's model, only read) gives the operators *kept* (their ids) as
    shallow pointer copies, with their lineage beside `_metadata` (with *self_contained_copy*,
    their files are copied into *output* instead); a written operator takes the place of the
    base operator with its id; *kept_max_parallelism* is recorded for the kept operators without
    keyed state (their state has no key groups) that can run at it. With *overwrite*, the
    savepoint already at *output* stays whole until the new `_metadata` replaces it; then its
    files the new one does not name go. Returns the savepoint's
    model, a :class:`FlinkOperatorReport` per written operator, the number of files of earlier,
    killed writes into *output* it removed, and the files and bytes copied.
    """
    from statectl.statefmt.flink.model import flink_savepoint, load_flink

    from statectl.statefmt.formats import previous_files
    from statectl.statefmt.locations import remove_replaced

    from .flink_modify import keep_operators

    out = check_output(output, [base] if base is not None else [], overwrite=overwrite)
    if spark is None:
        raise UsageError("writing operators from data needs a Spark session")
    fsp = flink_savepoint(base) if base is not None else None
    kept_ops = [op for op in fsp.metadata.operators if op.operator_id in kept] if fsp is not None else []
    session = WriteSession(spark, out, on_job)
    now_ms = int(time.time() * 1000)
    plans = []
    for data in operators:
        max_p = data.max_parallelism or max_parallelism or default_max_parallelism(data.parallelism)
        plans.append(FlinkOperatorPlan(data, max_p, session, now_ms))
    session.start()
    try:
        shared, copies, copied_bytes, lineage = keep_operators(fsp, kept_ops, out, session.token,
                                                               self_contained_copy)
        shared = [_retagged(op, kept_max_parallelism) for op in shared]
        results = [p.run() for p in plans]
        written = {op.operator_id: op for op, _ in results}
        order = [op.operator_id for op in fsp.metadata.operators] if fsp is not None else []
        by_id = {**{op.operator_id: op for op in shared}, **written}
        ops = [by_id[i] for i in order if i in by_id] + [op for i, op in written.items() if i not in order]
        previous = previous_files(out) if overwrite else set()
        lineage_name = commit_metadata(out, metadata_bytes(ops), lineage)
    except BaseException:
        session.fail()
        raise
    referenced = {f for op, _ in results for f in _files_of(op)} | {c.name for c in copies} \
        | ({lineage_name} if lineage_name else set())
    remove_replaced(out, previous, referenced)  # the old savepoint's files, once the new one is in
    session.finish(referenced)
    return (load_flink(out), [r for _, r in results], session.removed_leftovers, len(copies), copied_bytes)


def _retagged(op, max_parallelism: int | None):
    """*op* with *max_parallelism* when it holds no keyed state and can run at it."""
    import dataclasses

    if max_parallelism is None or op.parallelism > max_parallelism or \
            any(s.managed_keyed is not None or s.raw_keyed is not None for s in op.subtasks):
        return op
    return dataclasses.replace(op, max_parallelism=max_parallelism)


def _files_of(op) -> list[str]:
    names = []
    for s in op.subtasks:
        if s.managed_keyed is not None:
            names.append(s.managed_keyed.stream.relative_path)
        names += [h.stream.relative_path for h in s.managed_operator]
    return names
