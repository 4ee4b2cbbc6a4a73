"""`statectl info`'s body: what a savepoint holds, printed as tables or one JSON object.

Run by the typer command (`cli.app`) and by the entry point's fast path (`cli.main`), which
answers ``info SAVEPOINT [--json]`` without building the typer app.
"""

from __future__ import annotations


def show_info(savepoint: str, json_: bool = False, checkpoint: int | None = None) -> None:
    from statectl.statefmt.formats import load

    from .output import output_for
    from .snapshots import opened
    from .summary import savepoint_summary

    output_for(json_).savepoint_info(savepoint_summary(load(opened(savepoint, checkpoint))))
