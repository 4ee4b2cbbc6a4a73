"""`rescale` of a Flink savepoint: keyed operators written again for a new max parallelism.

Each chosen operator is read into its tables and written by the Flink writer as
:func:`.source.operator_data` states it: every key's group is Flink's hash for the new max
parallelism, and every state's serializer is the one the base's snapshot names (a state or
key the writer cannot bind is refused before Spark starts; a SQL operator's header, its RowData
serializer snapshots included, is copied from the base and its key rows placed by their bytes'
hash; held as key/value pairs, its entries move as their bytes, undecoded: :mod:`.regroup`). The other operators are shallow
pointer copies of the base's, their lineage recorded beside `_metadata`; the base is only
read. When every keyed operator is rescaled, the others (operator state only, or none) are
given the new max parallelism too, in `_metadata` alone (:mod:`.write`): Flink checks every
stateful operator's max parallelism against the job's, and operator state has no key groups.
A prune (`writers/prune.py`) is a rebuild at the operator's own limits: by expiry, of an operator
whose entries move as their bytes, its expired TTL entries are left out of them
(:mod:`statectl.statefmt.flink.ttl_bytes`); by a condition, or of any other operator, its rule is
applied to the decoded tables (:func:`.source.operator_data`). An operator is written under the operator id it has in the base (its uid's, or, without a uid,
the id Flink 1.x `_metadata` and SQL jobs name it by), in the base's metadata version.
"""

from __future__ import annotations

from statectl.statefmt.errors import UsageError
from statectl.statefmt.flink.model import flink_savepoint
from statectl.statefmt.model import Savepoint

from ..definitions import OperatorData
from ..rebuild import Rebuild
from .regroup import RegroupedKeyed, regroupable
from .source import operator_binding, operator_data


def check_flink_rescale(base: Savepoint, rebuilds) -> None:
    """Refuse, in one line each and without Spark, what a Flink rescale cannot write."""
    fsp = flink_savepoint(base)
    for rebuild in rebuilds:
        op = fsp.operator(rebuild.operator.operator_id)
        try:
            operator_binding(op, keyed_bytes=_from_bytes(op, rebuild))
        except UsageError as e:
            raise UsageError(f"cannot {rebuild.verb}: {e}") from None


def _from_bytes(op, rebuild: Rebuild) -> bool:
    """Whether *op*'s keyed entries move as their bytes: a rescale or a prune by expiry (which
    reads only TTL timestamps) of a regroupable operator; a condition needs the decoded table."""
    return (rebuild.prune is None or rebuild.prune.where is None) and regroupable(op)


def rescaled_operators(spark, base: Savepoint, rebuilds: list[Rebuild]) -> list[tuple[OperatorData | None, str]]:
    """Each rebuilt operator of the Flink savepoint *base* (its loaded model) over its tables,
    at its new limits, with the rebuild's action (None: it holds no state); a SQL operator's
    keyed state in canonical streams as its entries' bytes (:mod:`.regroup`). One reader of
    *base* serves them all."""
    from statectl.readers import open_savepoint

    if not rebuilds:
        return []
    fsp, reader = flink_savepoint(base), open_savepoint(spark, base)
    out = []
    for rebuild in rebuilds:
        op = fsp.operator(rebuild.operator.operator_id)
        keyed = RegroupedKeyed.of(op, rebuild.prune) if _from_bytes(op, rebuild) else None
        data = operator_data(reader, op, rebuild.parallelism, rebuild.max_parallelism, keyed, rebuild.prune)
        out.append((data, rebuild.action))
    return out
