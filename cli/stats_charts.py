"""`statectl stats`' figures as charts: sections of notes and bar charts, plain data that the
terminal (`cli.stats`) and the HTML report (`cli.stats_html`) each draw, so both show the same."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from statectl.readers.stats import Bucket, KeyedFigures, OperatorFigures, SavepointStats, Spread, StateFigures

from .output import human_bytes

KEY_GROUP_BARS = 16  # key groups are shown in at most this many ranges
TOP_KEY_GROUPS = 5


@dataclass(frozen=True)
class Bar:
    label: str
    value: int  # what the bar's length shows
    text: str  # the figure printed beside it


@dataclass(frozen=True)
class Chart:
    title: str
    bars: list[Bar]


@dataclass
class Section:
    heading: str
    notes: list[str] = field(default_factory=list)
    charts: list[Chart] = field(default_factory=list)


def when(millis: int) -> str:
    """Epoch milliseconds as an ISO 8601 UTC time (milliseconds shown if any), or the number
    if it is out of the calendar's range."""
    try:
        moment = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(milliseconds=millis)
    except OverflowError:
        return str(millis)
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    return f"{text}.{millis % 1000:03d}Z" if millis % 1000 else text + "Z"


def sections(stats: SavepointStats) -> list[Section]:
    """The report: the savepoint's totals, then one section per operator."""
    head = Section(f"Savepoint {stats.location}", [
        f"_metadata {human_bytes(stats.metadata_bytes)}, of it inline state {human_bytes(stats.inline_bytes)}",
        f"state {human_bytes(stats.bytes)} in {len(stats.operators)} operator(s); now {when(stats.now)}"])
    with_state = [o for o in stats.operators if o.bytes or o.unreadable]
    if with_state:
        head.charts.append(Chart("Bytes per operator", [Bar(o.label, o.bytes, human_bytes(o.bytes))
                                                         for o in with_state]))
    return [head] + [operator_section(o, stats) for o in stats.operators if o.bytes or o.unreadable or o.keyed]


def operator_section(op: OperatorFigures, stats: SavepointStats) -> Section:
    out = Section(f"Operator {op.label}", [
        f"{op.format}, parallelism {op.parallelism}, max parallelism {op.max_parallelism}: "
        f"{human_bytes(op.bytes)}" + (f", {human_bytes(op.inline_bytes)} inline" if op.inline_bytes else "")])
    for part in op.unreadable:
        out.notes.append(f"unreadable: {part.part}: {part.reason}")
    if op.operator_states:
        out.charts.append(Chart("Operator states (bytes)", [
            Bar(f"{s.name} ({s.kind})", s.bytes, f"{human_bytes(s.bytes)}, {s.rows:,} entries")
            for s in op.operator_states]))
    if op.keyed is not None:
        _keyed(out, op.keyed, stats)
    return out


def _keyed(out: Section, keyed: KeyedFigures, stats: SavepointStats) -> None:
    exact = "" if keyed.bytes_exact else " (estimated per key group)"
    out.notes.append(f"keyed: {keyed.rows:,} rows, {human_bytes(keyed.bytes)} stored{exact}")
    out.charts.append(Chart("Keyed states (bytes of values)", [
        Bar(s.name, s.bytes, f"{human_bytes(s.bytes)}, {s.rows:,} keys" +
            (f", {s.elements:,} elements" if s.most_elements is not None else "")) for s in keyed.states]))
    for state in keyed.states:
        _state(out, state, stats)
    _spread(out, keyed.subtasks, "Bytes per subtask")
    if keyed.rescaled is not None:
        _spread(out, keyed.rescaled, f"Bytes per subtask after a rescale to {keyed.rescaled.parallelism}")
    _key_groups(out, keyed)
    for timers in keyed.timers:
        out.charts.append(Chart(f"{timers.domain} timers ({timers.count:,}) by time", _time_bars(timers.buckets)))


def _state(out: Section, state: StateFigures, stats: SavepointStats) -> None:
    if state.largest:
        out.charts.append(Chart(f"Largest keys of {state.name}", [_key_bar(k, k.bytes, human_bytes(k.bytes))
                                                                   for k in state.largest]))
    if state.most_elements:
        out.charts.append(Chart(f"Most elements of {state.name}", [_key_bar(k, k.elements, f"{k.elements:,}")
                                                                   for k in state.most_elements]))
    ttl = state.ttl
    if ttl is None:
        return
    if ttl.ttl_ms is None:
        out.notes.append(f"TTL {state.name}: {ttl.entries:,} entries; give --ttl {state.name}=DURATION "
                         "to count those expired (a savepoint does not record the time to live)")
    else:
        out.notes.append(f"TTL {state.name} ({ttl.ttl_ms:,} ms): {ttl.expired_entries:,} of {ttl.entries:,} "
                         f"entries expired at {when(stats.now)}, {human_bytes(ttl.expired_bytes)}")
    if ttl.last_access_buckets:
        out.charts.append(Chart(f"Last access of {state.name}", _time_bars(ttl.last_access_buckets)))


def _key_bar(key, value: int, text: str) -> Bar:
    label = key.key if key.namespace is None else f"{key.key} @ {key.namespace}"
    return Bar(label, value, text)


def _spread(out: Section, spread: Spread, title: str) -> None:
    skew = "no bytes" if spread.skew is None else f"skew {spread.skew:.2f}"
    out.charts.append(Chart(f"{title} ({skew})", [
        Bar(f"{s.subtask} [{s.first_key_group}-{s.last_key_group}]", s.bytes,
            f"{human_bytes(s.bytes)}, {s.rows:,} rows") for s in spread.subtasks]))


def _key_groups(out: Section, keyed: KeyedFigures) -> None:
    groups = keyed.key_groups
    if not groups:
        return
    last = max(max(s.last_key_group for s in keyed.subtasks.subtasks), groups[-1].key_group)
    width = -(-(last + 1) // KEY_GROUP_BARS)
    sums = [0] * (-(-(last + 1) // width))
    for g in groups:
        sums[g.key_group // width] += g.bytes
    out.charts.append(Chart("Bytes per key-group range", [
        Bar(f"{i * width}-{min((i + 1) * width, last + 1) - 1}", n, human_bytes(n)) for i, n in enumerate(sums)]))
    top = sorted(groups, key=lambda g: (-g.bytes, g.key_group))[:TOP_KEY_GROUPS]
    out.charts.append(Chart("Largest key groups", [Bar(f"key group {g.key_group}", g.bytes,
                                                      f"{human_bytes(g.bytes)}, {g.rows:,} rows") for g in top]))


def _time_bars(found: list[Bucket]) -> list[Bar]:
    return [Bar(when(b.start), b.count, f"{b.count:,}") for b in found]
