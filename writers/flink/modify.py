"""`modify` on a Flink savepoint: remove operators, change uids, by metadata alone.

The output gets a new `_metadata` whose untouched state is a shallow pointer copy
(`statefmt/flink/shallow.py`): the base's files are named where they lie, the lineage is
recorded beside `_metadata` (`statefmt/flink/lineage.py`), and the base is only read. With
*self_contained* the files are copied next to the new `_metadata` instead.

The write follows statectl's own: files of this write carry its token (removed if it
fails), the lineage file is in place before the new `_metadata` is renamed in (its name is
derived from that `_metadata`, so the old savepoint never sees it), and with *overwrite*
the old savepoint's files go only after the rename.
"""

from __future__ import annotations

import dataclasses

from statectl.statefmt.errors import UsageError
from statectl.statefmt.flink.lineage import commit_metadata
from statectl.statefmt.flink.metadata import FlinkMetadata, FlinkOperator
from statectl.statefmt.flink.metadata_write import encode_metadata
from statectl.statefmt.flink.model import flink_savepoint, load_flink
from statectl.statefmt.ids import operator_id_for_uid
from statectl.statefmt.model import Operator, Savepoint
from statectl.statefmt.savepoint import check_output

from ..commit import previous_files, remove_replaced
from ..job import WriteSession
from .keep import keep_operators


@dataclasses.dataclass
class FlinkModification:
    """What :func:`write_flink_modification` wrote (`SavepointWriter` reports it)."""
    savepoint: Savepoint
    operators: list[tuple[Operator, str]]  # each operator written, with what was done to it
    removed: list[str]
    copied_files: int
    copied_bytes: int
    removed_leftovers: int


def write_flink_modification(base: Savepoint, removed: list[str], renamed: dict[str, str], output: str,
                             self_contained_copy: bool = False, overwrite: bool = False) -> FlinkModification:
    """Write the Flink savepoint *base* without the operators *removed* (ids) and with the
    uids *renamed* ({operator id: new uid}) to *output*."""
    out = check_output(output, [base], overwrite=overwrite)
    fsp = flink_savepoint(base.location)
    kept, actions = _derive(fsp.metadata, removed, renamed)
    session = WriteSession(None, out)
    session.start()
    try:
        ops, copies, copied_bytes, lineage = keep_operators(fsp, kept, out, session.token, self_contained_copy)
        meta = dataclasses.replace(fsp.metadata, operators=tuple(ops))
        data = encode_metadata(meta)
        previous = previous_files(out) if overwrite else set()
        lineage_name = commit_metadata(out, data, lineage)
    except BaseException:
        session.fail()
        raise
    referenced = {c.name for c in copies} | ({lineage_name} if lineage_name else set())
    remove_replaced(out, previous, referenced)
    session.finish(referenced)
    sp = load_flink(out)
    labels = {op.operator_id: op.label for op in fsp.metadata.operators}
    return FlinkModification(sp, [(op, actions[op.operator_id]) for op in sp.operators],
                             [labels[i] for i in removed], len(copies), copied_bytes, session.removed_leftovers)


def _derive(meta: FlinkMetadata, removed: list[str], renamed: dict[str, str]
            ) -> tuple[list[FlinkOperator], dict[str, str]]:
    """The operators that stay (renamed ones with their new uid and id), and what was done to each."""
    kept, actions, seen = [], {}, set()
    for op in meta.operators:
        if op.operator_id in removed:
            continue
        action = "shallow copy"
        if op.operator_id in renamed:
            uid = renamed[op.operator_id]
            op = dataclasses.replace(op, uid=uid if meta.version >= 5 else None,
                                     operator_id=operator_id_for_uid(uid))
            action = "renamed"
        if op.operator_id in seen:
            raise UsageError(f"two operators of the output would have the operator id {op.operator_id} "
                             f"(uid {op.label!r})")
        seen.add(op.operator_id)
        actions[op.operator_id] = action
        kept.append(op)
    return kept, actions
