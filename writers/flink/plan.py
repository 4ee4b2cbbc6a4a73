"""One operator of a Flink savepoint written from data: its keyed state header and the Spark
job writing its keyed stream files, its operator states, and running them (:class:`FlinkOperatorPlan`).

The entry rows of all inputs are unioned, sent to the task of their subtask and sorted by
(key group, key) there; each task writes its subtask's keyed stream file and returns its
handle. Operator states are small: assembled on the driver, one stream per subtask. What
the key and state types are comes from the operator's ``flink:`` binding (:mod:`.binding`),
or from the columns' Arrow types where that is the only choice.
"""

from __future__ import annotations

import pyarrow as pa

from statectl.statefmt.errors import FlinkEncodeError, StatectlError
from statectl.statefmt.flink import types as T
from statectl.statefmt.flink.binding import LIST_SERIALIZER, MAP_SERIALIZER, NAMED, VOID, key_java_type
from statectl.statefmt.flink.headers import StateMeta, read_keyed_header
from statectl.statefmt.flink.rowdata import RowData
from statectl.statefmt.flink.savepoint_write import KeyedNativeFiles, OperatorStreamFile, flink_operator
from statectl.statefmt.flink.snapshot_write import copied_keyed_header, keyed_header, operator_header
from statectl.statefmt.flink.stream_write import (KEY, KEY_GROUP, OperatorStreamPart, StreamState,
                                                  operator_stream, row_ddl, row_schema)
from statectl.statefmt.keygroups import check_parallelism
from statectl.statefmt.vocabulary import KeyedTable, TimerDomain

from ..definitions import (AggregatingState, BroadcastState, KeyedData, ListState, MapState, OperatorData,
                           OperatorListState, ReducingState, ValueState)
from ..errors import SpecError
from ..job import WriteSession
from ..partitioning import Chunks
from ..report import OperatorReport
from ..sql import q
from .binding import FlinkBinding
from .columns import check_columns, connector_layout, order_sql, ttl_input, ttl_wrapped, written_type
from .encoding import (OP_ENTRY_DDL, EntryEncoder, KeyedStreamTask, OperatorEntryEncoder,
                       StateEncoding, stream_file_name)
from .native import NativeKeyedTask
from .regroup import RegroupedKeyed

TIMER_STATE = "_timer_state/{domain}_{service}"
SUBTASK_COLUMN = "subtask"  # an operator list state's input column placing each value on a subtask


class FlinkOperatorPlan:
    """One operator of a Flink savepoint: its header, the keyed job, its operator states."""

    def __init__(self, data: OperatorData, max_parallelism: int, session: WriteSession, now_ms: int):
        check_parallelism(data.parallelism, max_parallelism)
        self.data = data
        self.label = data.label
        self.where = f"operator {data.label!r}"
        self.max_parallelism = max_parallelism
        self.session = session
        self.binding: FlinkBinding = data.flink or FlinkBinding()
        self.now_ms = now_ms
        self.keyed_job = None
        self.keyed_task = None  # the keyed job's task (its layout's)
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
        if isinstance(keyed, RegroupedKeyed):
            self._plan_regrouped(keyed)
            return
        if not isinstance(keyed, KeyedData):
            raise SpecError(f"{self.where}: a Flink savepoint's keyed state is written from columns "
                            "(states and timers), not from a per-key function")
        first = keyed.data if keyed.data is not None else next(
            (s.data for s in [*keyed.states, *keyed.timers] if s.data is not None), None)
        if first is None:
            raise SpecError(f"{self.where}: no input data")
        check_columns(first, keyed.key, f"{self.where}, input")
        key, key_java = self._key_type(keyed, first)
        ns = self._namespace_type(keyed)
        metas, inputs = self._keyed_inputs(keyed, key, ns)
        names = [m.name for m in metas]
        unknown = sorted(set(self.binding.states) - set(names) - {s.name for s in self.data.operator_states})
        if unknown:
            raise SpecError(f"{self.where}.flink.states: no state named {', '.join(map(repr, unknown))}")
        self.keyed_header = keyed_header(key, metas) if self.binding.header is None else \
            copied_keyed_header(self.binding.header)
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
        self._keyed_job(union, key)

    def _plan_regrouped(self, keyed: RegroupedKeyed) -> None:
        """A keyed operator's entries moved by their bytes (a rescale): its base's header copied."""
        header = read_keyed_header(self.binding.header, f"{self.where}, the base's header")
        self.keyed_header = copied_keyed_header(self.binding.header)
        self.stream_states = tuple(StreamState(m.name, m.kind, f"{self.where}, {m.kind} state {m.name!r}")
                                   for m in header.states)
        schema = row_schema(self.stream_states)
        self._keyed_job(keyed.entries(self.session.spark, schema, row_ddl(schema), self.max_parallelism),
                        header.key)

    def _keyed_job(self, entry_rows, key: T.FlinkType) -> None:
        """The job writing every subtask's keyed stream from *entry_rows*: sent to the task of
        their subtask and sorted by key group and key there."""
        chunks = Chunks(self.max_parallelism, self.data.parallelism, 1)
        rows = chunks.distribute(entry_rows, sort_by=(KEY_GROUP, KEY))
        layout = NativeKeyedTask if self.binding.native else KeyedStreamTask  # a snapshot, or a stream
        self.keyed_task = layout(self.session.out.uri, self.session.token, self.keyed_header, self.stream_states,
                                 key, self.max_parallelism, self.data.parallelism)
        self.keyed_job = rows.mapInArrow(self.keyed_task, self.keyed_task.ddl)

    def _keyed_files(self, rows) -> list:
        """The subtasks' keyed files, from the tasks' *rows*; an empty one for each subtask no
        task wrote (it holds no keyed entries)."""
        task = self.keyed_task
        files = [task.written(r) for r in rows]
        done = {f.subtask for f in files}
        if len(done) != len(files):
            raise StatectlError(f"{self.where}: two tasks wrote one subtask's keyed state")
        for subtask in sorted(set(range(self.data.parallelism)) - done):
            files.append(task.written(task.write(subtask, iter(())).to_pylist()[0]))
        return files

    def _key_type(self, keyed: KeyedData, first) -> tuple:
        """The key's Flink type (the binding's, or its columns') and its Java type."""
        key = self.binding.key
        if key is None:
            fields = tuple(written_type(None, first, k, self.where) for k in keyed.key)
            key = fields[0] if len(fields) == 1 else T.Tuple(
                f"org.apache.flink.api.java.tuple.Tuple{len(fields)}", fields,
                "org.apache.flink.api.java.typeutils.runtime.TupleSerializer")
        elif isinstance(key, RowData):
            if len(keyed.key) != len(key.fields):
                raise SpecError(f"{self.where}: the key row has {len(key.fields)} field(s) "
                                f"({', '.join(key.names)}), {len(keyed.key)} key column(s) are given")
        elif len(keyed.key) > 1 and not (isinstance(key, T.Tuple) and len(key.fields) == len(keyed.key)):
            raise SpecError(f"{self.where}: {len(keyed.key)} key columns need a Tuple{len(keyed.key)} key type")
        else:
            for column, t in zip(keyed.key, key.fields if len(keyed.key) > 1 else (key,)):
                written_type(t, first, column, f"{self.where}, key")
        try:
            return key, key_java_type(key, self.where)
        except FlinkEncodeError as e:
            raise SpecError(str(e)) from None

    def _namespace_type(self, keyed: KeyedData) -> T.FlinkType:
        ns = self.binding.namespace
        if ns is None:
            ns = NAMED["TimeWindow"] if keyed.namespace else VOID
        if keyed.namespace and isinstance(ns, T.VoidNamespace):
            raise SpecError(f"{self.where}: a namespace column needs flink namespace TimeWindow")
        if not keyed.namespace and not isinstance(ns, T.VoidNamespace):
            raise SpecError(f"{self.where}: flink namespace {ns.describe()} needs keyed.namespace, "
                            "the column giving each row's window")
        return ns

    def _keyed_inputs(self, keyed: KeyedData, key: T.FlinkType, ns: T.FlinkType) -> tuple[list, list]:
        """The keyed states' and timers' header entries, and the inputs they are read from:
        (DataFrame, its states' encodings, their columns' SQL); states of one input share it."""
        copied = self._copied_states()
        metas, inputs = list(copied or ()), []
        for state in keyed.states:
            state_id = len(metas) if copied is None else self._copied_id(copied, state.name, f"state {state.name!r}")
            meta, encoding, df, columns = self._keyed_state(state, state_id, keyed, ns)
            if copied is None:
                metas.append(meta)
            elif copied[state_id].kind != meta.kind:
                raise SpecError(f"{self.where}, state {state.name!r}: the base's state is a {copied[state_id].kind} "
                                f"state, given as a {meta.kind} state")
            shared = next((i for i in inputs if i[0] is df), None)
            if shared is None:
                inputs.append((df, [encoding], columns))
            else:
                shared[1].append(encoding)
                shared[2].update(columns)
        service = self.binding.timer_service
        timer_ids = {}
        for domain in TimerDomain.words() if copied is None else ():
            timer_ids[domain] = len(metas)
            metas.append(StateMeta(TIMER_STATE.format(domain=domain, service=service), KeyedTable.TIMERS,
                                   T.Timer(key, ns, "org.apache.flink.streaming.api.operators.TimerSerializer"), ns))
        for t in keyed.timers:
            where = f"{self.where}, {t.domain}-time timers"
            if copied is not None:
                timer_ids[t.domain] = self._copied_id(copied, TIMER_STATE.format(domain=t.domain, service=service),
                                                      f"{t.domain}-time timers")
            df = t.data if t.data is not None else keyed.data
            check_columns(df, [*keyed.key, t.column] + ([keyed.namespace] if keyed.namespace else []), where)
            state_id = timer_ids[t.domain]
            inputs.append((df, [StateEncoding(state_id, KeyedTable.TIMERS, None, None, None, False, where)],
                           {f"_ts{state_id}": q(t.column)}))
        return metas, inputs

    def _copied_states(self) -> tuple[StateMeta, ...] | None:
        """The states of the base's header the write copies (a SQL operator's), else None."""
        if self.binding.header is None:
            return None
        return read_keyed_header(self.binding.header, f"{self.where}, the base's header").states

    def _copied_id(self, copied: tuple[StateMeta, ...], name: str, what: str) -> int:
        """A state's id in the copied header: its position there."""
        for i, meta in enumerate(copied):
            if meta.name == name:
                return i
        known = ", ".join(repr(m.name) for m in copied if m.kind != KeyedTable.TIMERS)
        raise SpecError(f"{self.where}: {what} is not in the base's SQL operator, whose states are {known}")

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
            check_columns(df, key_cols + [state.key_column, state.value_column], where)
            user_key = written_type(sb.key, df, state.key_column, where)
            value = written_type(sb.type, df, state.value_column, where)
            stored = ttl_wrapped(value, sb.ttl)
            meta = StateMeta(state.name, "map", T.Map(user_key, stored, MAP_SERIALIZER), ns, user_key)
            columns = {f"_uk{state_id}": q(state.key_column), f"_val{state_id}": q(state.value_column)}
            ttl_given = ttl_input(state, state.value_column, sb.ttl, df, state_id, columns, where)
            encoding = StateEncoding(state_id, "map", stored, user_key, ttl_ms, False, where, ttl_given)
            return meta, encoding, df, columns
        check_columns(df, key_cols + [state.column], where)
        value = written_type(sb.type, df, state.column, where)
        columns = {f"_val{state_id}": q(state.column)}
        if isinstance(state, ListState):
            meta = StateMeta(state.name, "list", T.List(ttl_wrapped(value, sb.ttl), LIST_SERIALIZER), ns)
            kind = "list"
            if state.order_by:
                check_columns(df, [state.order_by], where)
                columns[f"_ord{state_id}"] = order_sql(df, state.order_by, where)
        else:
            meta = StateMeta(state.name, sb.kind or "value", ttl_wrapped(value, sb.ttl), ns)
            kind = "value"
        ttl_given = ttl_input(state, state.column, sb.ttl, df, state_id, columns, where)
        encoding = StateEncoding(state_id, kind, ttl_wrapped(value, sb.ttl), None, ttl_ms,
                                 f"_ord{state_id}" in columns, where, ttl_given)
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
                check_columns(df, [state.key_column, state.value_column], where)
                key = written_type(sb.key, df, state.key_column, where)
                value = written_type(sb.type, df, state.value_column, where)
                self.operator_states.append(StateMeta(state.name, "broadcast", value, None, key))
                exprs = [f"{q(state.key_column)} AS _key", f"{q(state.value_column)} AS _val"]
            else:
                check_columns(df, [state.column], where)
                layout = connector_layout(sb.type, df, state.column)
                value = sb.type if layout is not None else written_type(sb.type, df, state.column, where)
                kind = "list" if isinstance(state, OperatorListState) else "union"
                self.operator_states.append(StateMeta(state.name, kind, value))
                key = None
                exprs = [f"{q(state.column)} AS _val"]
                if SUBTASK_COLUMN in df.columns:
                    exprs.append(f"{q(SUBTASK_COLUMN)} AS _sub")
            encoder = OperatorEntryEncoder(i, value, key, where, layout if key is None else None)
            frames.append(df.selectExpr(*exprs).mapInArrow(encoder, OP_ENTRY_DDL))
        union = frames[0]
        for df in frames[1:]:
            union = union.unionByName(df)
        self.operator_job = union

    # --- running -------------------------------------------------------------------------------
    def run(self, action: str = "written") -> tuple:
        """Run the jobs: the operator written and its report."""
        keyed_files = []
        if self.keyed_job is not None:
            rows = self.session.collect(self.keyed_job, f"keyed state of {self.label} (Flink"
                                        f"{', native' if self.binding.native else ''})")
            keyed_files = self._keyed_files(rows)
        op_files = self._operator_streams() if self.operator_job is not None else []
        op = flink_operator(self.data.uid, self.data.parallelism, self.max_parallelism, keyed_files, op_files,
                            self.data.resolved_id)
        files = [*keyed_files, *op_files]
        keyed = self.data.keyed
        keyed_names = [s.name for s in keyed.states] if isinstance(keyed, KeyedData) else \
            list(keyed.states) if isinstance(keyed, RegroupedKeyed) else []
        count = sum(1 + len(f.files) if isinstance(f, KeyedNativeFiles) else 1 for f in files)
        report = OperatorReport(self.data.uid, self.data.resolved_id, action, count,
                                     sum(f.entries for f in files),
                                     sum(f.size for f in files),
                                     keyed_names + [s.name for s in self.data.operator_states])
        return op, report

    def _operator_streams(self) -> list[OperatorStreamFile]:
        rows = self.session.collect(self.operator_job, f"operator state of {self.label} (Flink)")
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
