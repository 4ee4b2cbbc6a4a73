"""Committing a written savepoint: `_metadata` last, atomically, one call per format family,
then (with *overwrite*) the removal of the files of the savepoint it replaced."""

from __future__ import annotations

from statectl.statefmt.errors import StatectlError
from statectl.statefmt.flink.handles import RelativeFile
from statectl.statefmt.flink.lineage import flink_savepoint_id, lineage_file_name
from statectl.statefmt.flink.metadata import is_flink_metadata, parse_metadata
from statectl.statefmt.flink.savepoint import METADATA
from statectl.statefmt.flink.shallow import streams
from statectl.statefmt.fs import Location
from statectl.statefmt.refs import check_relative_path


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
