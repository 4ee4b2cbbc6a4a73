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
An operator is written under the operator id it has in the base (its uid's, or, without a uid,
the id Flink 1.x `_metadata` and SQL jobs name it by), in the base's metadata version.
"""

from __future__ import annotations

from dataclasses import dataclass

from statectl.statefmt.errors import UsageError
from statectl.statefmt.flink.model import flink_savepoint
from statectl.statefmt.model import Operator, Savepoint
from statectl.statefmt.vocabulary import Format

from ..definitions import OperatorData
from .regroup import RegroupedKeyed, regroupable
from .source import operator_binding, operator_data


def check_flink_rescale(base: Savepoint, choices) -> None:
    """Refuse, in one line each and without Spark, what a Flink rescale cannot write."""
    fsp = flink_savepoint(base)
    for choice in choices:
        op = fsp.operator(choice.operator.operator_id)
        try:
            operator_binding(op)
        except UsageError as e:
            raise UsageError(f"cannot rescale: {e}") from None


@dataclass(frozen=True)
class FlinkRescaledOperator:
    """One operator of a Flink base rescaled: a rebuild for `SavepointWriter.with_rebuilt`,
    written again from its own tables."""

    spark: object
    choice: object  # a writers.rescale.RescaleChoice
    action = "rescaled"
    format = Format.FLINK

    @property
    def operator(self) -> Operator:
        return self.choice.operator

    @property
    def max_parallelism(self) -> int:
        return self.choice.max_parallelism

    def data(self, fsp) -> OperatorData | None:
        """The operator over its tables, at the new limits (None: it holds no state); a SQL
        operator's keyed state in canonical streams as its entries' bytes (:mod:`.regroup`)."""
        op = fsp.operator(self.choice.operator.operator_id)
        keyed = RegroupedKeyed.of(op) if regroupable(op) else None
        return operator_data(self.spark, fsp, op, self.choice.parallelism, self.choice.max_parallelism, keyed)
