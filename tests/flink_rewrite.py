"""A Flink savepoint as a bootstrap spec: its tables as Parquet inputs and a `flink:` binding
per operator taken from its own serializers, so `bootstrap --format flink` writes it again.

Lists and maps are given as rows (one per element or entry, lists ordered by position),
REDUCING and AGGREGATING states as value columns with their Flink kind, timers per domain and
service, operator list state with its `subtask` column."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import yaml
from pyspark.sql import functions as F

from statectl.readers import open_savepoint
from statectl.statefmt.flink import types as T
from statectl.statefmt.flink.binding import type_text
from statectl.statefmt.flink.savepoint import open_flink_savepoint, read_split
from statectl.statefmt.flink.tables import key_fields, operator_list_schema, timer_service


def _plain(t: T.FlinkType) -> tuple[T.FlinkType, bool]:
    return (t.inner, True) if isinstance(t, T.Ttl) else (t, False)


def _binding(t: T.FlinkType, ttl: bool, kind: str | None = None, key: T.FlinkType | None = None) -> dict:
    out = {"type": type_text(t)}
    if ttl:
        out["ttl"] = True
    if kind in ("reducing", "aggregating"):
        out["kind"] = kind
    if key is not None:
        out["key"] = type_text(key)
    return out


def spec_from_flink_savepoint(spark, path, folder: Path) -> Path:
    """Write *path*'s tables under *folder* and the spec that bootstraps them again; its path."""
    folder.mkdir(parents=True, exist_ok=True)
    reader = open_savepoint(spark, str(path))
    fsp = open_flink_savepoint(str(path))
    operators = []

    def save(df, name: str) -> str:
        df.write.mode("overwrite").parquet(str(folder / name))
        return name

    for op in fsp.operators:
        entry = {"uid": op.uid, "parallelism": op.parallelism, "max_parallelism": op.max_parallelism}
        states_binding = {}
        header = op.keyed_header
        if header is not None:
            keys = [f.name for f in key_fields(header.key)]
            table = reader.keyed(op.uid)
            ns = ["namespace"] if "namespace" in table.columns else []
            entry["flink"] = {"key": type_text(header.key)}
            keyed = {"key": keys, "states": []}
            if ns:
                keyed["namespace"] = "namespace"
                entry["flink"]["namespace"] = type_text(header.states[0].namespace)
            value_cols = []
            for meta in header.states:
                if meta.kind == "timers":
                    continue
                if meta.kind == "list":
                    element, ttl = _plain(meta.value.element)
                    rows = table.select(*keys, *ns, F.posexplode(meta.name).alias("pos", "element"))
                    keyed["states"].append({"name": meta.name, "kind": "list", "column": "element",
                                            "order_by": "pos", "input": save(rows, f"{op.uid}--{meta.name}")})
                    states_binding[meta.name] = _binding(element, ttl)
                elif meta.kind == "map":
                    value, ttl = _plain(meta.value.value)
                    rows = table.select(*keys, *ns, F.explode(meta.name).alias("map_key", "map_value"))
                    keyed["states"].append({"name": meta.name, "kind": "map", "key_column": "map_key",
                                            "value_column": "map_value",
                                            "input": save(rows, f"{op.uid}--{meta.name}")})
                    states_binding[meta.name] = _binding(value, ttl, key=meta.value.key)
                else:
                    value, ttl = _plain(meta.value)
                    value_cols.append(meta.name)
                    keyed["states"].append({"name": meta.name, "kind": "value", "column": meta.name})
                    states_binding[meta.name] = _binding(value, ttl, meta.kind)
            if value_cols:
                keyed["input"] = save(table.select(*keys, *ns, *value_cols), f"{op.uid}--value-states")
            timers = reader.timers(op.uid) if op.timers_schema is not None else None
            services = {timer_service(m.name)[1] for m in header.states if m.kind == "timers"}
            if services:
                (service,) = services
                entry["flink"]["timer_service"] = service
                keyed["timers"] = []
                for domain in ("event", "processing"):
                    rows = timers.where(F.col("domain") == domain).select(*keys, *ns, "timestamp")
                    keyed["timers"].append({"domain": domain, "column": "timestamp",
                                            "input": save(rows, f"{op.uid}--timers-{domain}")})
            if not keyed["states"]:
                del keyed["states"]
            entry["keyed"] = keyed
        for name, meta in op.operator_states.items():
            if meta.kind == "broadcast":
                rows = reader.operator_state(op.uid, name)
            else:  # with the subtask that holds each value (the readers API gives values only)
                table = pa.Table.from_batches([b for split in op.operator_splits for b in read_split(split, name)],
                                              schema=operator_list_schema(meta))
                rows = spark.createDataFrame(table).coalesce(1)  # one file: the values keep their order
            where = "broadcast_state" if meta.kind == "broadcast" else "operator_state"
            if meta.kind == "broadcast":
                rows = rows.dropDuplicates(["key"])
                item = {"name": name, "key_column": "key", "value_column": "value"}
                states_binding[name] = _binding(meta.value, False, key=meta.user_key)
            else:
                item = {"name": name, "kind": meta.kind, "column": "value"}
                states_binding[name] = _binding(meta.value, False)
            item["input"] = save(rows, f"{op.uid}--{name}")
            entry.setdefault(where, []).append(item)
        if states_binding:
            entry.setdefault("flink", {})["states"] = states_binding
        if "keyed" in entry or "operator_state" in entry or "broadcast_state" in entry:
            operators.append(entry)
    spec = folder / "spec.yaml"
    spec.write_text(yaml.safe_dump({"format": "flink", "operators": operators}, sort_keys=False,
                                   allow_unicode=True))
    return spec
