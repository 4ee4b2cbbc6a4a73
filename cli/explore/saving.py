"""Saving the rows the explorer shows, by `read`'s own writers (same text forms), never into the
savepoint browsed and never over an existing file."""

from __future__ import annotations

import pyarrow as pa

from statectl.statefmt.errors import UsageError
from statectl.statefmt.model import Savepoint

FORMATS = {".csv": "csv", ".jsonl": "jsonl", ".json": "jsonl", ".parquet": "parquet"}


def save_rows(rows: pa.Table, path: str, savepoint: Savepoint) -> None:
    """*rows* written to *path* in the format its extension names (a Parquet directory as
    `read --format parquet` writes one)."""
    from ..arrow_tables import write_table
    from ..results import check_frame_output

    ext = next((e for e in FORMATS if path.lower().endswith(e)), None)
    if ext is None:
        raise UsageError(f"{path}: name a .csv, .jsonl or .parquet file")
    check_frame_output(FORMATS[ext], path, [savepoint])
    write_table(rows, FORMATS[ext], path)
