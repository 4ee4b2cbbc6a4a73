"""`rescale` of a Flink savepoint: keyed operators written again for a new max parallelism.

Each chosen operator is read into its tables and written by the Flink writer
(:mod:`.flink`) as :mod:`.flink_source` states it: every key's group is Flink's hash for the
new max parallelism, and every state's serializer is the one the base's snapshot names (a
state or key the writer cannot bind is refused before Spark starts). The other operators are
shallow pointer copies of the base's, their lineage recorded beside `_metadata`; the base is
only read. When every keyed operator is rescaled, the others (operator state only, or none)
are given the new max parallelism too, in `_metadata` alone: Flink checks every stateful
operator's max parallelism against the job's, and operator state has no key groups.
"""

from __future__ import annotations

from statectl.statefmt.errors import UsageError
from statectl.statefmt.flink.model import flink_savepoint
from statectl.statefmt.model import Savepoint

from .flink_source import operator_binding, operator_data, operator_spec


def check_flink_rescale(base: Savepoint, choices) -> None:
    """Refuse, in one line each and without Spark, what a Flink rescale cannot write."""
    fsp = flink_savepoint(base)
    for choice in choices:
        op = fsp.operator(choice.operator.operator_id)
        if op.uid is None:
            raise UsageError(f"operator {op.label} is known only by its operator id (a Flink 1.x _metadata holds "
                             "no uids); statectl rewrites only operators with a uid: restore the savepoint "
                             "in a Flink 2.x job with uids and take a new one")
        try:
            operator_binding(op)
        except UsageError as e:
            raise UsageError(f"cannot rescale: {e}") from None


def write_flink_rescale(spark, base: Savepoint, choices, output: str, self_contained: bool = False,
                        on_job=None, overwrite: bool = False):
    """Write *base* with the chosen operators rescaled to *output*; what :func:`write_flink` returns."""
    from .flink import write_flink

    fsp = flink_savepoint(base)
    chosen = {c.operator.operator_id for c in choices}
    operators = []
    for choice in choices:
        op = fsp.operator(choice.operator.operator_id)
        entry, frames = operator_spec(spark, fsp, op, choice.parallelism, choice.max_parallelism)
        operators.append(operator_data(entry, frames))
    kept = tuple(op.operator_id for op in fsp.metadata.operators if op.operator_id not in chosen)
    keyed = {op.operator_id for op in fsp.operators if op.keyed_header is not None}
    retag = {choice.max_parallelism for choice in choices} if keyed <= chosen else set()
    return write_flink(operators, output, spark, on_job=on_job, overwrite=overwrite, base=base, kept=kept,
                       self_contained_copy=self_contained,
                       kept_max_parallelism=retag.pop() if len(retag) == 1 else None)
