"""`statectl explore`: browse a savepoint in a full-screen terminal app (docs/EXPLORE.md).

Textual is imported only when the command runs: other commands do not pay for it.
"""

from __future__ import annotations

import typer

from ..classes import Classes, use_classes
from ..listing import Checkpoint


def register(app: typer.Typer) -> None:
    app.command("explore")(explore)


def explore(
    savepoint: str = typer.Argument(..., help="Savepoint directory (a path or URI), or a folder of "
                                    "snapshots (the newest is opened)."),
    checkpoint: Checkpoint = None,
    classes: Classes = None,
) -> None:
    """Browse a savepoint interactively: operators, states, keys and values (read only)."""
    from statectl.statefmt.formats import load

    from ..snapshots import opened
    from .app import ExploreApp

    use_classes(classes)
    ExploreApp(load(opened(savepoint, checkpoint))).run()
