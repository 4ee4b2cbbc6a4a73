"""`statectl ls`, and the ``--checkpoint N`` option of the reading commands (see `cli.snapshots`)."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Optional

import typer

Checkpoint = Annotated[Optional[int], typer.Option(
    "--checkpoint", min=0, help="Given a folder of snapshots (a job's checkpoint folder): read its "
    "retained checkpoint chk-N. Default: the newest complete snapshot under the folder.")]


def register(app: typer.Typer) -> None:
    app.command("ls")(ls)


def ls(
    folder: str = typer.Argument(..., help="A folder (path or URI) holding savepoints or retained "
                                 "checkpoints, e.g. a job's checkpoint folder."),
    json_: bool = typer.Option(False, "--json", help="Print one JSON object instead of a table."),
) -> None:
    """List the savepoints and retained checkpoints under a folder, newest first."""
    from statectl.statefmt.discovery import find_snapshots
    from statectl.statefmt.fs import Location

    from .output import RichOutput, human_bytes, plain, print_json

    found, unreadable = find_snapshots(folder)
    if json_:
        print_json({"location": folder, "snapshots": [dataclasses.asdict(s) for s in found],
                    "unreadable": [dataclasses.asdict(u) for u in unreadable]})
        return
    out = RichOutput()
    root = Location.of(folder).uri.rstrip("/") + "/"
    rows = [[s.location.removeprefix(root) or ".", s.kind + (f" {s.checkpoint}" if s.checkpoint is not None else ""),
             "incremental" if s.incremental else "full", s.family, ", ".join(s.formats), s.created_at,
             human_bytes(s.bytes), str(s.operators), s.savepoint_id] for s in found]
    out.table(f"{len(found)} snapshot(s) under {folder}, newest first",
              ["snapshot", "kind", "files", "family", "format", "time", "size", "operators", "id"],
              rows, right={6, 7})
    for u in unreadable:
        out.console.print(plain(f"not a readable snapshot: {u.location}: {u.reason}"), soft_wrap=True)
