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
import functools
from concurrent.futures import ThreadPoolExecutor

import pyarrow.fs as pafs

from statectl.statefmt.errors import StatectlError, UsageError
from statectl.statefmt.flink.lineage import commit_metadata
from statectl.statefmt.flink.metadata import FlinkMetadata, FlinkOperator
from statectl.statefmt.flink.metadata_write import encode_metadata
from statectl.statefmt.flink.model import flink_savepoint, load_flink
from statectl.statefmt.flink.shallow import lineage_needed, pointer_copy, self_contained
from statectl.statefmt.formats import previous_files
from statectl.statefmt.fs import Location
from statectl.statefmt.locations import FileCopy, remove_replaced
from statectl.statefmt.ids import operator_id_for_uid
from statectl.statefmt.model import Operator, Savepoint
from statectl.statefmt.savepoint import check_output

from .copying import THREADS, copy_name
from .job import WriteSession


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
    fsp = flink_savepoint(base)
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


def keep_operators(fsp, kept: list[FlinkOperator], out: Location, token: str, self_contained_copy: bool
                   ) -> tuple[list[FlinkOperator], list[FileCopy], int, tuple]:
    """The operators *kept* of the Flink savepoint *fsp* as a new savepoint at *out* holds them:
    pointer copies (absolute handles) and the lineage entries their files lie in, or, with
    *self_contained_copy*, with their files copied into *out* (no lineage).
    Returns (operators, copies, bytes copied, lineage)."""
    if self_contained_copy and kept:
        ops, copies = self_contained(fsp.location, kept, functools.partial(copy_name_for, token=token))
        return ops, copies, copy_into(out, copies), ()
    ops = [pointer_copy(fsp.location, op) for op in kept]
    return ops, [], 0, lineage_needed(fsp.location, fsp.savepoint_id, fsp.lineage, kept) if kept else ()


def copy_name_for(name: str, taken: set[str], token: str) -> str:
    """A copy's name for the file *name*: marked with the write's *token*, none of *taken*."""
    new, n = copy_name(name, token), 1
    while new in taken:
        new, n = copy_name(f"{name}.{n}", token), n + 1
    return new


def copy_into(out: Location, copies: list[FileCopy]) -> int:
    """Copy every file (or segment) into *out*; the bytes copied. Sizes are checked."""
    def one(c: FileCopy) -> int:
        target = out.child(c.name)
        size = c.source.size()  # a missing source: MissingFileError naming it
        if size < c.start + c.size or (c.whole and size != c.size):
            raise StatectlError(f"{c.source}: {size} bytes, _metadata says {c.size}")
        if not c.whole:  # a segment of a merged file becomes a file of its own
            with c.source.open_input_file() as f:
                f.seek(c.start)
                target.write_bytes_atomically(f.read(c.size))
            return c.size
        try:
            pafs.copy_files(c.source.path, target.path, source_filesystem=c.source.fs,
                            destination_filesystem=target.fs)
        except OSError as e:
            raise StatectlError(f"cannot copy {c.source} to {target}: {e}") from None
        return c.size

    with ThreadPoolExecutor(THREADS) as pool:
        return sum(pool.map(one, copies))
