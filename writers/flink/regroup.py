"""A keyed operator rescaled from its entries' bytes: only the keys decoded, nothing encoded.

`rescale` gives a keyed operator whose keyed state is held as key/value pairs (canonical
streams, native RocksDB and ForSt snapshots) and whose key Flink's hash is known for (a SQL
key row, String, numbers, tuples of these) a :class:`RegroupedKeyed` instead of its tables: one
Spark task per split scans its entries and hands them on as entry rows, each in the key group
its key hashes to at the new max parallelism (:mod:`statectl.statefmt.flink.regroup`); the
Flink writer sorts and assembles them under the base's keyed header, copied, as it does
encoded rows (:class:`~.plan.FlinkOperatorPlan`). Values are never decoded, so states statectl
cannot encode (Kryo, POJOs with Kryo fields, Avro, CEP's NFA and shared buffer, interval-join
buffers, opaque serializers) move as they are. Reading the tables and encoding them again
costs a decode and an encode of every entry, two Python steps per task with Arrow to Spark
rows and back between them, and separate scans for the timers (docs/RESCALING.md has the
figures).
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from statectl.statefmt.flink.describe import FlinkOperatorInfo, FlinkSplit
from statectl.statefmt.errors import KeyTypeError
from statectl.statefmt.flink.regroup import key_placement, pruned_entries, regrouped_entries
from statectl.statefmt.flink.savepoint import has_raw_entries, raw_entries
from statectl.statefmt.flink.tables import keyed_states

from ..errors import task_errors
from ..expired import MARK_DDL, count_row, marked


def regroupable(op: FlinkOperatorInfo) -> bool:
    """Whether *op*'s keyed state can be rescaled from its bytes: every split holds key/value
    pairs (a heap-native stream's is decoded instead) and its key is placed from its bytes (a
    SQL key row, or a key whose Java hashCode :mod:`~statectl.statefmt.flink.keyhash` knows)."""
    header = op.keyed_header
    if header is None or not all(map(has_raw_entries, op.keyed_splits)):
        return False
    try:
        key_placement(header.key, repr(op.label))
    except KeyTypeError:
        return False
    return True


@dataclass(frozen=True)
class RegroupedKeyed:
    """A keyed operator's state as its entries' bytes, for :class:`~.plan.FlinkOperatorPlan`
    (whose binding holds the base's header, copied); with *prune* (a prune's rule by expiry),
    without its TTL entries expired then."""

    splits: tuple[FlinkSplit, ...]
    states: tuple[str, ...]  # the keyed states' names (timers aside), for the report
    prune: object = None  # a PruneRule by expiry (writers/prune.py)

    @classmethod
    def of(cls, op: FlinkOperatorInfo, prune=None) -> "RegroupedKeyed":
        return cls(tuple(op.keyed_splits), tuple(m.name for m in keyed_states(op.keyed_header.states)), prune)

    def entries(self, spark, schema: pa.Schema, ddl: str, max_parallelism: int):
        """The entry rows (*schema*, Spark's *ddl*) of every split, one task per split."""
        n = len(self.splits)
        ids = spark.range(n, numPartitions=max(n, 1))
        if self.prune is None:
            return ids.mapInArrow(RegroupTask(self.splits, schema, max_parallelism), ddl)
        expiry = self.prune.expiry
        task = RegroupTask(self.splits, schema, max_parallelism, {s.name: s.ttl for s in expiry.states},
                           expiry.now, self.prune.count_names())
        return self.prune.kept(ids.mapInArrow(task, f"{ddl}, {MARK_DDL}"))


@dataclass(frozen=True)
class RegroupTask:
    """A task's mapInArrow function: the splits its ids name, as entry rows (picklable); with
    *ttls* (a TTL state's name: its time to live), without the entries expired at *now*, each
    piece's rows followed by a row counting what went (in the order of *counts*)."""

    splits: tuple[FlinkSplit, ...]
    schema: pa.Schema
    max_parallelism: int
    ttls: dict | None = None
    now: int = 0
    counts: tuple[str, ...] = ()

    def __call__(self, batches):
        with task_errors():
            for batch in batches:
                for i in batch.column(0).to_numpy().tolist():
                    for header, raw in raw_entries(self.splits[i]):
                        if self.ttls is None:
                            yield from regrouped_entries(header, raw, self.schema, self.max_parallelism).to_batches()
                            continue
                        pruned = pruned_entries(header, raw, self.schema, self.max_parallelism, self.ttls, self.now)
                        yield from map(marked, pruned.table.to_batches())
                        removed = {"rows": pruned.rows_removed, **pruned.removed}
                        yield count_row(self.schema, [removed.get(name, 0) for name in self.counts])
