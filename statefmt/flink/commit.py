"""What a committed Flink `_metadata` names in its own folder: the files an overwrite replaces.

A Flink savepoint names its own files by relative handles, and a shallow copy statectl
wrote has its lineage file beside `_metadata` (`lineage.py`); both go when another
savepoint replaces it and does not name them (:func:`statectl.statefmt.formats.commit`).
"""

from __future__ import annotations

from ..errors import StatectlError
from .handles import RelativeFile
from .lineage import flink_savepoint_id, lineage_file_name
from .metadata import parse_metadata
from .shallow import streams


def named_files(data: bytes, source: str) -> set[str]:
    """The relative files and the lineage file of the Flink `_metadata` *data* (none when
    it cannot be parsed: nothing of it is removed)."""
    try:
        meta = parse_metadata(data, source)
    except StatectlError:
        return set()
    files = {s.relative_path for op in meta.operators for s in streams(op) if isinstance(s, RelativeFile)}
    return files | {lineage_file_name(flink_savepoint_id(data))}
