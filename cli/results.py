"""What `statectl read` and `statectl sql` print or write, whichever engine read the rows:
the formats, the output check made before any work, and the pieces both writers share (lines to
standard output or a file, a directory output renamed in whole, CSV lines, the row count
under a terminal table)."""

from __future__ import annotations

import contextlib
import os
import sys

FRAME_FORMATS = ("table", "jsonl", "csv", "parquet")
TABLE_ROWS = 100


def check_frame_output(fmt: str, output: str | None, involved=(), overwrite: bool = False) -> None:
    """Refuse impossible format/output combinations, and outputs that would overwrite
    something (a savepoint of *involved*, an existing file without *overwrite*),
    before any Spark work starts."""
    from statectl.statefmt.errors import UsageError
    from statectl.statefmt.outputs import check_output

    if fmt not in FRAME_FORMATS:
        raise UsageError(f"unknown format {fmt!r}; formats: {', '.join(FRAME_FORMATS)}")
    if fmt == "parquet" and not output:
        raise UsageError("--format parquet writes a directory: give it with --output PATH")
    if fmt == "table" and output:
        raise UsageError("--output needs --format jsonl, csv or parquet")
    if output:
        check_output(output, involved, overwrite=overwrite,
                     kind="directory" if fmt == "parquet" else "file")


def csv_lines(rows):
    """Each row (the header first) as one CSV line; nulls as empty cells."""
    import csv
    import io

    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    for values in rows:
        buf.seek(0)
        buf.truncate()
        writer.writerow(["" if v is None else v for v in values])
        yield buf.getvalue()


def write_lines(lines, output: str | None) -> None:
    """*lines* on standard output (a reader that stops early ends it quietly), or into the file
    *output*, which appears whole (written aside, then renamed in)."""
    if output is None:
        try:
            for text in lines:
                sys.stdout.write(text)
            sys.stdout.flush()
        except BrokenPipeError:  # e.g. `| head`: the reader has what it wanted
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return
    import uuid

    from statectl.statefmt.fs import Location

    loc = Location.of(output)
    target = Location(f"{loc.uri}.tmp-{uuid.uuid4().hex}") if loc.is_local else loc
    try:
        with target.open_output_stream() as out:
            for text in lines:
                out.write(text.encode("utf-8"))
        if target != loc:
            os.replace(target.path, loc.path)
    finally:
        if target != loc:
            target.delete_file()


@contextlib.contextmanager
def directory_renamed_in(output: str):
    """The Location to write a directory output into: locally a folder aside, renamed in
    (over an old one) when the write succeeded, so a failed write leaves nothing."""
    import shutil
    import uuid

    from statectl.statefmt.fs import Location

    loc = Location.of(output)
    target = Location(f"{loc.uri}.tmp-{uuid.uuid4().hex}") if loc.is_local else loc
    try:
        yield target
        if target != loc:
            old = f"{loc.path}.old-{uuid.uuid4().hex}"
            if os.path.exists(loc.path):
                os.rename(loc.path, old)
            os.rename(target.path, loc.path)
            shutil.rmtree(old, ignore_errors=True)
    finally:
        if target != loc and os.path.exists(target.path):
            shutil.rmtree(target.path, ignore_errors=True)


def row_count_line(shown: int, more: bool) -> str:
    if more:
        return f"[dim]first {shown} rows shown; --limit N shows more, --format jsonl|csv prints every row[/dim]"
    return f"[dim]{shown} row(s)[/dim]"
