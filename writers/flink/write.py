"""Writing a canonical Apache Flink savepoint (``bootstrap --format flink``): the operators
planned by :mod:`.plan`, the base's others kept (:mod:`.keep`), `_metadata` last, atomically;
a failed write removes every file it began, as for statectl's own formats."""

from __future__ import annotations

import time

from statectl.statefmt.errors import UsageError
from statectl.statefmt.flink.lineage import commit_metadata
from statectl.statefmt.flink.savepoint_write import metadata_bytes
from statectl.statefmt.keygroups import default_max_parallelism
from statectl.statefmt.savepoint import check_output

from ..commit import previous_files, remove_replaced
from ..job import WriteSession
from .keep import keep_operators
from .plan import FlinkOperatorPlan

def write_flink(operators, output: str, spark, max_parallelism: int | None = None, on_job=None,
                overwrite: bool = False, base=None, kept: tuple[str, ...] = (),
                kept_max_parallelism: int | None = None, self_contained_copy: bool = False):
    """Write *operators* (:class:`OperatorData`) as a new canonical Flink savepoint at *output*.

    *base* (a Flink savepoint's model, only read) gives the operators *kept* (their ids) as
    shallow pointer copies, with their lineage beside `_metadata` (with *self_contained_copy*,
    their files are copied into *output* instead); a written operator takes the place of the
    base operator with its id; *kept_max_parallelism* is recorded for the kept operators without
    keyed state (their state has no key groups) that can run at it. With *overwrite*, the
    savepoint already at *output* stays whole until the new `_metadata` replaces it; then its
    files the new one does not name go. Returns the savepoint's
    model, a :class:`FlinkOperatorReport` per written operator, the number of files of earlier,
    killed writes into *output* it removed, and the files and bytes copied.
    """
    from statectl.statefmt.flink.model import flink_savepoint, load_flink


    out = check_output(output, [base] if base is not None else [], overwrite=overwrite)
    if spark is None:
        raise UsageError("writing operators from data needs a Spark session")
    fsp = flink_savepoint(base.location) if base is not None else None
    kept_ops = [op for op in fsp.metadata.operators if op.operator_id in kept] if fsp is not None else []
    session = WriteSession(spark, out, on_job)
    now_ms = int(time.time() * 1000)
    plans = []
    for data in operators:
        max_p = data.max_parallelism or max_parallelism or default_max_parallelism(data.parallelism)
        plans.append(FlinkOperatorPlan(data, max_p, session, now_ms))
    session.start()
    try:
        shared, copies, copied_bytes, lineage = keep_operators(fsp, kept_ops, out, session.token,
                                                               self_contained_copy)
        shared = [_retagged(op, kept_max_parallelism) for op in shared]
        results = [p.run() for p in plans]
        written = {op.operator_id: op for op, _ in results}
        order = [op.operator_id for op in fsp.metadata.operators] if fsp is not None else []
        by_id = {**{op.operator_id: op for op in shared}, **written}
        ops = [by_id[i] for i in order if i in by_id] + [op for i, op in written.items() if i not in order]
        previous = previous_files(out) if overwrite else set()
        lineage_name = commit_metadata(out, metadata_bytes(ops), lineage)
    except BaseException:
        session.fail()
        raise
    referenced = {f for op, _ in results for f in _files_of(op)} | {c.name for c in copies} \
        | ({lineage_name} if lineage_name else set())
    remove_replaced(out, previous, referenced)  # the old savepoint's files, once the new one is in
    session.finish(referenced)
    return (load_flink(out), [r for _, r in results], session.removed_leftovers, len(copies), copied_bytes)


def _retagged(op, max_parallelism: int | None):
    """*op* with *max_parallelism* when it holds no keyed state and can run at it."""
    import dataclasses

    if max_parallelism is None or op.parallelism > max_parallelism or \
            any(s.managed_keyed is not None or s.raw_keyed is not None for s in op.subtasks):
        return op
    return dataclasses.replace(op, max_parallelism=max_parallelism)


def _files_of(op) -> list[str]:
    names = []
    for s in op.subtasks:
        if s.managed_keyed is not None:
            names.append(s.managed_keyed.stream.relative_path)
        names += [h.stream.relative_path for h in s.managed_operator]
    return names
