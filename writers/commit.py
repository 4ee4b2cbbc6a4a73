"""Committing a written savepoint: `_metadata` last, atomically, one call per format family,
then (with *overwrite*) the removal of the files of the savepoint it replaced."""

from __future__ import annotations

from dataclasses import dataclass

from statectl.statefmt.errors import StatectlError
from statectl.statefmt.flink.handles import RelativeFile
from statectl.statefmt.flink.lineage import commit_metadata, flink_savepoint_id, lineage_file_name
from statectl.statefmt.flink.metadata import is_flink_metadata, parse_metadata
from statectl.statefmt.flink.model import load_flink
from statectl.statefmt.flink.savepoint import METADATA
from statectl.statefmt.flink.shallow import streams
from statectl.statefmt.fs import Location
from statectl.statefmt.model import Savepoint
from statectl.statefmt.refs import check_relative_path
from statectl.statefmt.savepoint import commit


@dataclass(frozen=True)
class Staged:
    """A written savepoint before its `_metadata`: every file of it in place."""

    savepoint: Savepoint | None = None  # statectl's own family: the model its `_metadata` encodes
    flink_metadata: bytes | None = None  # the Flink family: its `_metadata`
    lineage: tuple = ()  # the Flink family: the lineage recorded beside `_metadata`
    files: frozenset[str] = frozenset()  # the Flink family: the output's files `_metadata` names


def commit_staged(staged: Staged, out: Location, overwrite: bool) -> tuple[Savepoint, set[str]]:
    """Write *staged*'s `_metadata` at *out* (with *overwrite*, then remove the files of the
    savepoint it replaced); the savepoint committed and the files of *out* it references."""
    if staged.savepoint is not None:
        sp = commit(staged.savepoint, out, overwrite=overwrite)
        return sp, {f.ref.path for _, f in sp.data_files() if not f.ref.is_shared}
    previous = previous_files(out) if overwrite else set()
    lineage_name = commit_metadata(out, staged.flink_metadata, staged.lineage)
    referenced = set(staged.files) | ({lineage_name} if lineage_name else set())
    remove_replaced(out, previous, referenced)  # the old savepoint's files, once the new one is in
    return load_flink(out), referenced


def remove_replaced(out: Location, previous: set[str], referenced: set[str]) -> None:
    """After the commit of an overwrite: the files of the old savepoint at *out* (*previous*)
    the new one does not reference."""
    for path in previous - referenced - {METADATA}:
        try:
            check_relative_path(path)
        except StatectlError:
            continue  # not a file of the old savepoint's folder: never touched
        out.child(path).delete_file()


def previous_files(out: Location) -> set[str]:
    """The files of the savepoint already at *out* (removed after the commit when not used)."""
    meta = out.child(METADATA)
    if not meta.exists():
        return set()
    data = meta.read_bytes()
    if not is_flink_metadata(data[:4]):
        from statectl.statefmt.metadata import decode

        try:
            old = decode(data, source=str(meta))
        except StatectlError:
            return set()
        return {f.ref.path for _, f in old.data_files() if not f.ref.is_shared}
    try:
        old_meta = parse_metadata(data, str(meta))
    except StatectlError:
        return set()
    files = {s.relative_path for op in old_meta.operators for s in streams(op) if isinstance(s, RelativeFile)}
    return files | {lineage_file_name(flink_savepoint_id(data))}
