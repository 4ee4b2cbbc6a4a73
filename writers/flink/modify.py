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
from statectl.statefmt.flink.metadata import FlinkMetadata, FlinkOperator
from statectl.statefmt.flink.metadata_write import encode_metadata
from statectl.statefmt.ids import operator_id_for_uid
from statectl.statefmt.model import Savepoint

from ..job import WriteSession
from ..report import OperatorReport, operator_report
from .write import FlinkWrite


class FlinkModification(FlinkWrite):
    """The Flink savepoint *fsp* without the operators *removed* (ids) and with the uids
    *renamed* ({operator id: new uid}): a Flink write of no operators from data, whose
    `_metadata` keeps the base's version."""

    def __init__(self, fsp, removed: list[str], renamed: dict[str, str]):
        labels = {op.operator_id: op.label for op in fsp.metadata.operators}
        super().__init__(fsp, [], [], [labels[i] for i in removed])
        self.removed_ids, self.renamed = removed, renamed
        self.actions: dict[str, str] = {}

    def plan(self, session: WriteSession) -> None:
        self.source, self.actions = _derive(self.fsp.metadata, self.removed_ids, self.renamed)

    def _operators(self, kept: list[FlinkOperator]) -> list[FlinkOperator]:
        return kept  # in the base's order, renamed ones with their new id

    def metadata(self, operators: list[FlinkOperator]) -> bytes:
        return encode_metadata(dataclasses.replace(self.fsp.metadata, operators=tuple(operators)))

    def reports(self, sp: Savepoint) -> list[OperatorReport]:
        return [operator_report(op, self.actions[op.operator_id]) for op in sp.operators]


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
