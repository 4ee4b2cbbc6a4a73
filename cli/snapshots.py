"""A folder of snapshots as the input of a reading command.

A reading command given a folder without `_metadata` (a job's checkpoint folder, a folder of
savepoints) opens the newest complete snapshot under it, or ``--checkpoint N``, and says
which on standard error.
"""

from __future__ import annotations


def opened(savepoint: str, checkpoint: int | None = None) -> str:
    """The snapshot a reading command opens for *savepoint* (see module doc); a note says
    which when it was chosen from a folder."""
    from statectl.statefmt.discovery import choose_snapshot

    from .output import make_console, plain

    chosen, note = choose_snapshot(savepoint, checkpoint)
    if note:
        make_console(stderr=True).print(plain(note), soft_wrap=True)
    return chosen
