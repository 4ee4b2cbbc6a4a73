"""Pruning: a savepoint without its TTL entries expired at a time, or without the keyed rows a
condition selects (docs/PRUNE.md).

Each chosen keyed operator is a :class:`~.rebuild.Rebuild` at its own limits carrying a
:class:`PruneRule`; its family rewrites it as a rescale rewrites an operator, the rule
applied to the keyed table (and timers) it reads: statectl's own formats in
:mod:`.own.rescale`, Flink's in :mod:`.flink.rescale` (decoded and encoded again with the
base's serializers). Every other operator is a shallow copy. Expiry is Flink's rule
(:mod:`statectl.statefmt.expiry`), applied columnar by :mod:`.expired`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from statectl.statefmt.errors import UnknownStateError, UnreadableStateError, UsageError
from statectl.statefmt.expiry import Ttls, parse_time, parse_ttls
from statectl.statefmt.formats import load
from statectl.statefmt.ids import OperatorRef
from statectl.statefmt.model import KEYED_PART, NAMESPACE_COLUMN, Operator, Savepoint, cannot_read
from statectl.statefmt.vocabulary import StateKind

from .expired import MARK, ExpiryRule, TtlState, count_row, marked, prune_batch
from .rebuild import Rebuild
from .report import WriteReport
from .savepoint_writer import SavepointWriter


@dataclass(frozen=True)
class PruneRule:
    """What a prune removes from one keyed operator: the TTL entries *expiry* says are
    expired, or the rows of its keyed table *where* selects, with their timers.

    By expiry, the keyed table is decoded and pruned once: each task's batches pass through
    :func:`.expired.prune_batch`, each followed by one row counting what it removed, and the
    result is persisted, so the writer's several reads of the table (one per state) and the
    counts (:meth:`counts`) read it again without decoding; :meth:`release` drops it. An
    operator whose entries move as their bytes is pruned in them instead
    (:class:`.flink.regroup.RegroupedKeyed`), its tasks' rows and counts kept the same way
    (:meth:`kept`)."""

    key_columns: tuple[str, ...]  # the key columns, and namespace if any
    states: tuple[tuple[str, str], ...]  # (name, kind) of every keyed state
    expiry: ExpiryRule | None = None
    where: str | None = None
    persisted: list = field(default_factory=list, compare=False, hash=False)  # by expiry: the pruned tables

    def keyed(self, table):
        """The keyed table *table* without what the rule removes."""
        from pyspark.sql import types as T

        from statectl.readers.conditions import not_selected

        if self.where is not None:
            return not_selected(table, self.where)
        schema = T.StructType([T.StructField(f.name, f.dataType, True) for f in table.schema] +
                              [T.StructField(MARK, T.ArrayType(T.LongType()), True)])
        return self.kept(table.mapInArrow(ExpiryTask(self.expiry, self.count_names()), schema))

    def kept(self, marked):
        """The rows of *marked* (rows of state and, in :data:`~.expired.MARK`, the counts of
        what its tasks removed, in the order of :meth:`count_names`) that are state; *marked*
        is persisted for :meth:`counts`."""
        from pyspark import StorageLevel
        from pyspark.sql import functions as F

        marked = marked.persist(StorageLevel.MEMORY_AND_DISK)
        self.persisted.append(marked)
        return marked.where(F.col(MARK).isNull()).drop(MARK)

    def count_names(self) -> tuple[str, ...]:
        """What a count row of an expiry holds, in order: keyed rows removed, then per TTL state
        the values, list elements or map entries removed."""
        return ("rows", *(s.name for s in self.expiry.states))

    def timers(self, timers, table):
        """The timers without those of the (key, namespace) rows of *table* the condition
        removes; expiry keeps every timer (timers are not TTL state: Flink fires them)."""
        if self.where is None:
            return timers
        return timers.join(self._removed_keys(timers, table), on=self._timer_keys(timers), how="left_anti")

    def _timer_keys(self, timers) -> list[str]:
        return [c for c in self.key_columns if c in timers.columns]

    def _removed_keys(self, timers, table):
        from statectl.readers.conditions import selected

        return selected(table, self.where).select(*self._timer_keys(timers)).distinct()

    def counts(self, table, timers) -> dict[str, int]:
        """Entries the rule removes per state, ``rows`` (keyed rows gone) and ``timers``. By
        expiry, from the counting rows of the table the write pruned (none: it had no rows);
        for a condition, one Spark job over the base's keyed table (*table*; and *timers*)."""
        if self.where is None:
            from pyspark.sql import functions as F

            names, found = self.count_names(), dict.fromkeys(self.count_names(), 0)
            for frame in self.persisted:
                for row in frame.where(F.col(MARK).isNotNull()).select(MARK).collect():
                    for name, n in zip(names, row[0]):
                        found[name] += n
            return {**found, "timers": 0}
        return self._where_counts(table, timers)

    def release(self) -> None:
        """Drop the persisted pruned tables."""
        while self.persisted:
            self.persisted.pop().unpersist()

    def _where_counts(self, table, timers) -> dict[str, int]:
        from pyspark.sql import functions as F

        from statectl.readers.conditions import selected

        removed = selected(table, self.where)
        sizes = [F.count(F.lit(1)).alias("rows")]
        for i, (name, kind) in enumerate(self.states):
            col = F.col(f"`{name}`")
            one = F.size(col) if StateKind(kind).is_collection else F.lit(1)
            sizes.append(F.sum(F.when(col.isNotNull(), one).otherwise(0)).alias(f"s{i}"))
        row = removed.agg(*sizes).first()
        out = {"rows": int(row["rows"])}
        out.update({name: int(row[f"s{i}"] or 0) for i, (name, _) in enumerate(self.states)})
        out["timers"] = 0 if timers is None else \
            timers.join(self._removed_keys(timers, table), on=self._timer_keys(timers), how="left_semi").count()
        return out


@dataclass(frozen=True)
class ExpiryTask:
    """mapInArrow: each batch without its expired entries, then one row (every column null but
    :data:`MARK`) with the entries it removed, in the order of *names* (picklable)."""

    rule: ExpiryRule
    names: tuple[str, ...]

    def __call__(self, batches):
        for batch in batches:
            pruned, removed = prune_batch(batch, self.rule)
            if pruned.num_rows:
                yield marked(pruned)
            yield count_row(batch.schema, [removed[n] for n in self.names])


# --- choosing ---------------------------------------------------------------------------------

def _ttl_states(op: Operator) -> list:
    return [s for s in op.keyed.states if s.ttl] if op.keyed is not None else []


def _rule(op: Operator, now: int | None, ttls: Ttls | None, where: str | None) -> PruneRule:
    section = op.keyed
    keys = (*section.key_names, *([NAMESPACE_COLUMN] if section.namespace_type is not None else ()))
    states = tuple((s.name, str(s.kind)) for s in section.states)
    if where is not None:
        return PruneRule(keys, states, where=where)
    chosen = []
    for s in _ttl_states(op):
        ttl = ttls.of(s.name)
        if ttl is None:
            raise UsageError(f"operator {op.label}, state {s.name!r} has a TTL, which a savepoint does not "
                             f"record: give it with --ttl {s.name}=DURATION (or --ttl DURATION for every TTL state)")
        kind = str(s.kind) if str(s.kind) in ("list", "map") else "value"
        chosen.append(TtlState(s.name, kind, ttl))
    return PruneRule(keys, states, ExpiryRule(tuple(chosen), tuple(s.name for s in section.states), now))


def choose_operators(sp: Savepoint, operators: list | None, now: int | None, ttls: Ttls | None,
                     where: str | None) -> list[Rebuild]:
    """The keyed operators to prune (by default every keyed one, for --expired-at every one with a
    TTL state), each a :class:`Rebuild` at its own limits with its :class:`PruneRule`."""
    if (now is None) == (where is None):
        raise UsageError("give either --expired-at TIME (with --ttl) or --where CONDITION")
    if where is not None and ttls is not None and (ttls.every is not None or ttls.per_state):
        raise UsageError("--ttl goes with --expired-at, not with --where")
    named = [sp.operator(ref) for ref in operators or []]
    for op in named:
        if op.keyed is None:
            raise UnknownStateError(f"operator {op.label} has no keyed state to prune")
        if where is None and not _ttl_states(op):
            raise UnknownStateError(f"operator {op.label} has no TTL state to prune")
    ops = [op for i, op in enumerate(named) if op.operator_id not in {o.operator_id for o in named[:i]}] if named else \
        [op for op in sp.operators if op.keyed is not None and (where is not None or _ttl_states(op))]
    if not ops:
        raise UnknownStateError(f"{sp.location} has no {'keyed' if where is not None else 'TTL'} state to prune")
    for op in ops:
        part = op.unreadable_part(KEYED_PART)
        if part is not None:
            raise UnreadableStateError(f"cannot prune: {cannot_read(op.label, KEYED_PART, part.reason)}")
    if where is None:
        known = {s.name for op in ops for s in _ttl_states(op)}
        unknown = sorted(set(ttls.per_state) - known)
        if unknown:
            raise UsageError(f"--ttl {unknown[0]}=...: no TTL state {unknown[0]!r} to prune; "
                             f"TTL states: {', '.join(sorted(known))}")
    return [Rebuild(op, op.max_parallelism, op.parallelism, "pruned", _rule(op, now, ttls, where)) for op in ops]


def _ttls(ttl) -> Ttls:
    if ttl is None or isinstance(ttl, Ttls):
        return ttl or Ttls()
    if isinstance(ttl, dict):
        return parse_ttls([f"{k}={v}" for k, v in ttl.items()])
    return parse_ttls([str(ttl)] if isinstance(ttl, (str, int)) else [str(t) for t in ttl])


# --- the report -------------------------------------------------------------------------------

@dataclass
class PrunedState:
    name: str
    entries_removed: int  # values (value, reducing, aggregating state), elements (list), entries (map)


@dataclass
class PrunedOperator:
    uid: str | None
    operator_id: str
    rows_removed: int  # keyed rows (key, namespace) gone: none of their states kept a value
    timers_removed: int
    keyed_bytes_before: int  # the operator's keyed files (keyed table and timers)
    keyed_bytes_after: int
    states: list[PrunedState] = field(default_factory=list)


@dataclass
class PruneReport:
    write: WriteReport
    operators: list[PrunedOperator]


def _keyed_bytes(op: Operator) -> int:
    return sum(f.size for f in (*op.keyed.files, *op.keyed.timers)) if op.keyed is not None else 0


def _pruned(before: Operator, after: Operator, counts: dict[str, int]) -> PrunedOperator:
    states = [PrunedState(s.name, counts.get(s.name, 0)) for s in before.keyed.states]
    return PrunedOperator(before.uid, before.operator_id, counts["rows"], counts["timers"],
                          _keyed_bytes(before), _keyed_bytes(after), states)


# --- the command ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Prune:
    """A savepoint to prune, loaded and its operators and rules chosen once (no Spark needed)."""

    base: Savepoint
    choices: tuple[Rebuild, ...]
    writer: SavepointWriter = field(compare=False, repr=False)

    @classmethod
    def of(cls, source: "str | Savepoint", operators: list | None = None, expired_at: "int | str | None" = None,
           ttl=None, where: str | None = None) -> "Prune":
        """Load *source* and choose what to prune: with *expired_at* (epoch ms or ISO 8601) the
        TTL entries expired then, *ttl* each TTL state's time to live (a duration such as
        ``"7d"``, ``["7d", "seen=1h"]`` or ``{"seen": "1h"}``); or with *where* (a Spark SQL
        condition over the keyed table) the rows it selects. Bad input fails here."""
        base = source if isinstance(source, Savepoint) else load(source)
        now = None if expired_at is None else \
            (expired_at if isinstance(expired_at, int) else parse_time(str(expired_at), "--expired-at"))
        choices = tuple(choose_operators(base, operators, now, _ttls(ttl), where))
        return cls(base, choices, SavepointWriter.rebuilding(base, choices))

    def check(self, output: str, overwrite: bool = False) -> None:
        """Check, before Spark starts, that *output* can take the pruned savepoint."""
        self.writer.check(output, overwrite)

    def write(self, spark, output: str, self_contained: bool = False, on_job=None,
              overwrite: bool = False) -> PruneReport:
        """Write the pruned savepoint to *output* and count what went (a condition's before the
        write, expiry's from the tables it pruned); the base is only read."""
        from statectl.readers import open_savepoint

        self.writer.check(output, overwrite)
        reader = open_savepoint(spark, self.base)
        counts = {}
        try:
            for choice in self.choices:  # a condition: counted first (one that does not resolve fails here)
                if choice.prune.where is not None:
                    ref = OperatorRef(operator_id=choice.operator.operator_id)
                    counts[choice.operator.operator_id] = choice.prune.counts(reader.keyed(ref), reader.timers(ref))
            written = self.writer.write(output, spark=spark, self_contained=self_contained, on_job=on_job,
                                        overwrite=overwrite)
            for choice in self.choices:
                if choice.prune.where is None:
                    counts[choice.operator.operator_id] = choice.prune.counts(None, None)
        finally:
            for choice in self.choices:
                choice.prune.release()
        after = {op.operator_id: op for op in written.savepoint.operators}
        return PruneReport(written, [_pruned(c.operator, after[c.operator.operator_id], counts[c.operator.operator_id])
                                     for c in self.choices])


def prune(spark, source: str, output: str, operators: list | None = None, expired_at=None, ttl=None,
          where: str | None = None, self_contained: bool = False, on_job=None,
          overwrite: bool = False) -> PruneReport:
    """Write *source* pruned to *output*; see :meth:`Prune.of`. *source* is only read."""
    return Prune.of(source, operators, expired_at, ttl, where).write(spark, output, self_contained, on_job, overwrite)


__all__ = ["prune", "Prune", "PruneReport", "PrunedOperator", "PrunedState", "PruneRule", "choose_operators"]
