"""Committing a written savepoint: the one place writers hand a savepoint to its format family's
commit (`statefmt/formats.py`): lineage, then `_metadata`, atomically, then (with *overwrite*)
the removal of the files of the savepoint it replaced."""

from __future__ import annotations

from dataclasses import dataclass

from statectl.statefmt.formats import FORMATS, FlinkCommit, SavepointFormat
from statectl.statefmt.fs import Location
from statectl.statefmt.model import Savepoint
from statectl.statefmt.vocabulary import Format


@dataclass(frozen=True)
class Staged:
    """A written savepoint before its `_metadata` (every file of it in place): the document its
    format family commits."""

    format: SavepointFormat
    document: Savepoint | FlinkCommit

    @classmethod
    def own(cls, sp: Savepoint) -> "Staged":
        """statectl's own family: one `_metadata` document for both physical formats."""
        return cls(FORMATS[Format.CANONICAL], sp)

    @classmethod
    def flink(cls, metadata: bytes, lineage: tuple, files: set[str]) -> "Staged":
        """A Flink savepoint: its `_metadata`, its lineage and the files of this write it names."""
        return cls(FORMATS[Format.FLINK], FlinkCommit(metadata, tuple(lineage), frozenset(files)))


def commit_staged(staged: Staged, out: Location, overwrite: bool) -> tuple[Savepoint, set[str]]:
    """Commit *staged* at *out*; the savepoint committed and the files of *out* it references."""
    sp = staged.format.commit(out, staged.document, overwrite=overwrite)
    if isinstance(staged.document, FlinkCommit):
        return sp, set(staged.document.files)
    return sp, {f.ref.path for _, f in sp.data_files() if not f.ref.is_shared}
