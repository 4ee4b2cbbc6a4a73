"""One row of a table as a tree of labelled nodes, for the explorer's value view: structs,
lists and maps opened up, a RowData's row kind named (+I, -U, ...), TTL last-access
timestamps (``<state>_ttl_ts``) as times; and a row as the JSON `read --format jsonl` writes."""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass, field

import pyarrow as pa

from statectl.statefmt.model import TIMER_TIME_COLUMN, TTL_SUFFIX

from ..arrow_tables import cell_text, json_value

ROW_KIND = "_rowkind"
SHOWN_CHILDREN = 500  # a longer list or map shows its first entries and says how many more


@dataclass
class Node:
    label: str
    children: list["Node"] = field(default_factory=list)


def row_tree(row: dict, schema: pa.Schema) -> list[Node]:
    """A node per column of *row* (as ``Table.to_pylist`` gives it)."""
    return [value_node(f.name, row[f.name], f.type, ttl=f.name.endswith(TTL_SUFFIX)) for f in schema]


def value_node(name: str, value, t: pa.DataType, ttl: bool = False) -> Node:
    if value is None:
        return Node(f"{name}: null")
    if pa.types.is_struct(t):
        kind = value.get(ROW_KIND) if ROW_KIND in t.names else None
        head = f"{name}: row" + (f" ({kind})" if kind else "") if ROW_KIND in t.names else f"{name}: struct"
        return Node(head, [value_node(f.name, value[f.name], f.type, ttl) for f in t if f.name != ROW_KIND])
    if pa.types.is_map(t):
        entries = [_entry(k, v, t.key_type, t.item_type, ttl) for k, v in value[:SHOWN_CHILDREN]]
        return Node(f"{name}: map of {len(value)}", entries + _more(len(value)))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        items = [value_node(f"[{i}]", v, t.value_type, ttl) for i, v in enumerate(value[:SHOWN_CHILDREN])]
        return Node(f"{name}: list of {len(value)}", items + _more(len(value)))
    return Node(f"{name}: {_scalar(value, t, ttl)}")


def _entry(key, value, key_type, value_type, ttl) -> Node:
    simple = not (pa.types.is_nested(key_type))
    label = _scalar(key, key_type, False) if simple else json.dumps(json_value(key, key_type), ensure_ascii=False, separators=(",", ":"))
    node = value_node(label, value, value_type, ttl)
    if not simple:  # a RowData key: its fields under it too
        node.children.insert(0, value_node("key", key, key_type))
    return node


def _more(count: int) -> list[Node]:
    return [Node(f"... {count - SHOWN_CHILDREN} more")] if count > SHOWN_CHILDREN else []


def epoch_text(millis: int) -> str:
    """Epoch milliseconds as a UTC time, to the millisecond (``2026-11-28T01:02:03.456+00:00``)."""
    try:
        when = datetime.datetime.fromtimestamp(millis / 1000, datetime.timezone.utc)
    except (OverflowError, OSError, ValueError):  # beyond what datetime holds: the number itself
        return str(millis)
    return when.isoformat(timespec="milliseconds")


def time_columns(schema: pa.Schema, timers: bool) -> set[str]:
    """The columns of a table the explorer shows as times: a TTL state's last-access times and,
    in a timers table, each timer's time (both int64 epoch milliseconds)."""
    return {f.name for f in schema if pa.types.is_int64(f.type)
            and (f.name.endswith(TTL_SUFFIX) or (timers and f.name == TIMER_TIME_COLUMN))}


def _scalar(value, t: pa.DataType, ttl: bool) -> str:
    if ttl and isinstance(value, int) and not isinstance(value, bool):  # epoch milliseconds
        return f"{epoch_text(value)} ({value})"
    if isinstance(value, datetime.datetime):
        return json_value(value, t) + ("Z" if value.tzinfo is None and ttl else "")
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return cell_text(value, t)


def row_json(row: dict, schema: pa.Schema, columns: list[str] | None = None) -> str:
    """The columns *columns* (all: None) of *row* as one JSON object, as `read --format jsonl`."""
    names = columns if columns is not None else schema.names
    return json.dumps({n: json_value(row[n], schema.field(n).type) for n in names},
                      ensure_ascii=False, separators=(",", ":"))


def cell(value, t: pa.DataType, width: int = 40, time: bool = False) -> str:
    """A value as one short cell of a table (the text `read` prints, cut at *width*); *time*:
    epoch milliseconds, shown as a UTC time."""
    if value is None:
        return "null"
    text = epoch_text(value) if time else cell_text(value, t).replace("\n", " ")
    return text if len(text) <= width else text[:width - 1] + "…"
