"""Where a savepoint's bytes are: the figures `statectl stats` shows, as plain data.

:func:`savepoint_stats` asks each operator's table source (through `readers.questions`) what
its splits hold: a keyed table's splits are decoded once each, in this process, their rows
looked at batch by batch (`readers.tally`: entries, bytes and largest keys per state, TTL
last-access times, timers) while the format says their bytes per key group (key-group offsets
of Flink streams, Parquet footers, RocksDB files). Subtask loads come from the key-group sizes
alone, today's parallelism's and a rescale's (`statefmt.keygroups`). A part of an operator that
cannot be read is listed with its reason; the rest is measured. `docs/STATS.md` describes each
figure (and its JSON field, :meth:`SavepointStats.to_json`).
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

import numpy as np

from statectl.statefmt.errors import StatectlError, UsageError
from statectl.statefmt.expiry import Ttls
from statectl.statefmt.jit import walk_compiled
from statectl.statefmt.keygroups import key_group_range, subtask_for_key_group
from statectl.statefmt.locations import METADATA_FILE
from statectl.statefmt.model import KEYED_PART, Operator, Savepoint

from .questions import StateQuestions
from .resolve import KEYED, TIMERS, find_operator
from .tally import Bucket, KeyFigure, StateTally, TimerTally, buckets

DEFAULT_TOP = 5


@dataclass(frozen=True)
class TtlFigures:
    """A TTL state's last-access times and, with a time to live, what is expired at *now*."""

    ttl_ms: int | None
    entries: int
    expired_entries: int | None
    expired_bytes: int | None
    first_access: int | None
    last_access: int | None
    last_access_buckets: list[Bucket]


@dataclass(frozen=True)
class StateFigures:
    name: str
    kind: str
    rows: int
    elements: int
    bytes: int
    largest: list[KeyFigure]
    most_elements: list[KeyFigure] | None
    ttl: TtlFigures | None


@dataclass(frozen=True)
class KeyGroupFigure:
    key_group: int
    rows: int
    bytes: int


@dataclass(frozen=True)
class SubtaskFigure:
    subtask: int
    first_key_group: int
    last_key_group: int
    rows: int
    bytes: int


@dataclass(frozen=True)
class Spread:
    """The keyed table's rows and bytes per subtask at *parallelism*, and its *skew*: the
    largest subtask's bytes over the mean (1.0: even; None when no bytes)."""

    parallelism: int
    subtasks: list[SubtaskFigure]
    skew: float | None


@dataclass(frozen=True)
class TimerFigures:
    """The timers of one domain (``event``, ``processing``): how many, their first and last
    times (epoch ms) and how many fall in each time bucket."""

    domain: str
    count: int
    first: int
    last: int
    buckets: list[Bucket]


@dataclass(frozen=True)
class KeyedFigures:
    rows: int
    bytes: int
    bytes_exact: bool
    states: list[StateFigures]
    key_groups: list[KeyGroupFigure]
    subtasks: Spread
    rescaled: Spread | None
    timers: list[TimerFigures]


@dataclass(frozen=True)
class OperatorStateFigure:
    name: str
    kind: str
    rows: int
    bytes: int


@dataclass(frozen=True)
class UnreadableFigure:
    part: str
    reason: str


@dataclass(frozen=True)
class OperatorFigures:
    uid: str | None
    operator_id: str
    name: str | None
    format: str
    parallelism: int
    max_parallelism: int
    bytes: int
    inline_bytes: int
    keyed: KeyedFigures | None
    operator_states: list[OperatorStateFigure]
    unreadable: list[UnreadableFigure]

    @property
    def label(self) -> str:
        return self.uid if self.uid is not None else self.operator_id


@dataclass(frozen=True)
class SavepointStats:
    location: str
    now: int
    top: int
    parallelism: int | None
    metadata_bytes: int
    inline_bytes: int
    bytes: int
    operators: list[OperatorFigures]

    def to_json(self) -> dict:
        """The figures as JSON values (`docs/STATS.md` describes every field)."""
        return dataclasses.asdict(self)


def savepoint_stats(sp: Savepoint, uids: list[str] | None = None, *, now: int | None = None,
                    ttls: Ttls = Ttls(), parallelism: int | None = None, top: int = DEFAULT_TOP) -> SavepointStats:
    """The figures of *sp*'s operators (those of *uids*, else all) at *now* (epoch ms; default:
    this moment), TTL states expired by *ttls*, with each keyed operator's load after a rescale
    to *parallelism* if given and the *top* largest keys per state."""
    if not isinstance(top, int) or isinstance(top, bool) or top < 0:
        raise UsageError(f"--top must be a whole number of keys, 0 or more; got {top!r}")
    operators = [find_operator(sp, u) for u in dict.fromkeys(uids)] if uids else list(sp.operators)
    if parallelism is not None:
        _check_rescale(operators, parallelism)
    _check_ttls(operators, ttls)
    walk_compiled()  # every entry is measured
    now = int(time.time() * 1000) if now is None else now
    found = [operator_stats(sp, op, now, ttls, parallelism, top) for op in operators]
    return SavepointStats(str(sp.location), now, top, parallelism, _metadata_bytes(sp),
                          sum(o.inline_bytes for o in found), sum(o.bytes for o in found), found)


def operator_stats(sp: Savepoint, op: Operator, now: int, ttls: Ttls, parallelism: int | None,
                   top: int) -> OperatorFigures:
    """One operator's figures; a part that cannot be read is listed in ``unreadable``."""
    questions = StateQuestions(sp, op)
    unreadable = [UnreadableFigure(u.part, u.reason) for u in op.unreadable]
    keyed = None
    if op.keyed is not None and op.unreadable_part(KEYED_PART) is None:
        try:
            keyed = keyed_stats(questions, now, ttls, parallelism, top)
        except StatectlError as e:
            unreadable.append(UnreadableFigure(KEYED_PART, str(e)))
    states = []
    for state in op.operator_states:
        if op.unreadable_part(state.name) is not None:
            continue
        try:
            sizes = questions.split_sizes(state.name)
            states.append(OperatorStateFigure(state.name, str(state.kind), sum(sizes["rows"].to_pylist()),
                                              sum(sizes["bytes"].to_pylist())))
        except StatectlError as e:
            unreadable.append(UnreadableFigure(state.name, str(e)))
    size = (keyed.bytes if keyed else 0) + sum(s.bytes for s in states)
    return OperatorFigures(op.uid, op.operator_id, op.name, str(op.format), op.parallelism, op.max_parallelism,
                           size, questions.inline_bytes(), keyed, states, unreadable)


def keyed_stats(questions: StateQuestions, now: int, ttls: Ttls, parallelism: int | None,
                top: int) -> KeyedFigures:
    """The keyed table's figures (each split decoded once) and the timers'."""
    op = questions.operator
    tallies, splits, sizes = _tallied(questions, top)
    groups = [KeyGroupFigure(g, r, b) for g, r, b in zip(
        sizes["key_group"].to_pylist(), sizes["rows"].to_pylist(), sizes["bytes"].to_pylist())]
    timers = TimerTally()
    questions.sizes_visiting(TIMERS, timers.add)
    return KeyedFigures(
        sum(splits["rows"].to_pylist()), sum(splits["bytes"].to_pylist()), all(splits["bytes_exact"].to_pylist()),
        [_state_figures(t, ttls, now) for t in tallies], groups,
        spread(groups, op.max_parallelism, op.parallelism),
        None if parallelism is None else spread(groups, op.max_parallelism, parallelism),
        [TimerFigures(d, len(t), int(t.min()), int(t.max()), buckets(t)) for d, t in timers.domain_times().items()])


def largest_keys(questions: StateQuestions, top: int) -> list[StateFigures]:
    """Each keyed state's figures with its *top* largest keys, without the timers' and key
    groups' figures (what the explorer's sizes screen asks)."""
    tallies, _, _ = _tallied(questions, top)
    return [_state_figures(t, Ttls(), 0) for t in tallies]


def _tallied(questions: StateQuestions, top: int) -> tuple[list[StateTally], object, object]:
    """Every keyed state's tally (each split decoded once) and the splits' and key groups' sizes."""
    keyed = questions.operator.keyed
    tallies = [StateTally(s, keyed.key_names, keyed.namespace_type is not None, top) for s in keyed.states]

    def visit(batch):
        for tally in tallies:
            tally.add(batch)
    splits, sizes = questions.sizes_visiting(KEYED, visit)
    return tallies, splits, sizes


def _state_figures(tally: StateTally, ttls: Ttls, now: int) -> StateFigures:
    state, ttl = tally.state, None
    if state.ttl:
        times, _ = tally.last_access()
        duration = ttls.of(state.name)
        gone = tally.expired(duration, now) if duration is not None else (None, None)
        ttl = TtlFigures(duration, len(times), gone[0], gone[1],
                         int(times.min()) if len(times) else None, int(times.max()) if len(times) else None,
                         buckets(times))
    return StateFigures(state.name, str(state.kind), tally.rows, tally.elements, tally.bytes,
                        tally.largest.figures(), tally.most.figures() if tally.most else None, ttl)


def spread(groups: list[KeyGroupFigure], max_parallelism: int, parallelism: int) -> Spread:
    """Rows and bytes per subtask of *parallelism* from the key groups' (the key-group ranges
    of `statefmt.keygroups`)."""
    owner = subtask_for_key_group(np.array([g.key_group for g in groups], dtype=np.int64), max_parallelism,
                                  parallelism)
    rows = np.bincount(owner, [g.rows for g in groups], parallelism).astype(np.int64)
    size = np.bincount(owner, [g.bytes for g in groups], parallelism).astype(np.int64)
    subtasks = [SubtaskFigure(i, *key_group_range(max_parallelism, parallelism, i), int(rows[i]), int(size[i]))
                for i in range(parallelism)]
    total = int(size.sum())
    return Spread(parallelism, subtasks, round(float(size.max()) * parallelism / total, 4) if total else None)


def _check_rescale(operators: list[Operator], parallelism: int) -> None:
    if not isinstance(parallelism, int) or isinstance(parallelism, bool) or parallelism < 1:
        raise UsageError(f"--parallelism must be at least 1, got {parallelism!r}")
    for op in operators:
        if op.keyed is not None and parallelism > op.max_parallelism:
            raise UsageError(f"--parallelism {parallelism} exceeds the max parallelism {op.max_parallelism} "
                             f"of operator {op.label}")


def _check_ttls(operators: list[Operator], ttls: Ttls) -> None:
    """Every state named by ``--ttl STATE=DURATION`` is a TTL state of an operator measured."""
    named = sorted({s.name for op in operators if op.keyed is not None for s in op.keyed.states if s.ttl})
    for state in ttls.per_state:
        if state not in named:
            raise UsageError(f"--ttl {state}=...: no TTL state {state!r} in the operators measured; "
                             f"TTL states: {', '.join(named) if named else 'none'}")


def _metadata_bytes(sp: Savepoint) -> int:
    from statectl.statefmt.fs import Location

    return Location.of(sp.location).child(METADATA_FILE).size()


__all__ = ["savepoint_stats", "SavepointStats", "OperatorFigures", "KeyedFigures", "StateFigures",
           "TtlFigures", "Spread", "SubtaskFigure", "KeyGroupFigure", "TimerFigures", "OperatorStateFigure",
           "UnreadableFigure", "KeyFigure", "Bucket", "DEFAULT_TOP"]
