"""The ``--classes`` option of the reading commands: the job's classes, for Kryo values."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

Classes = Annotated[Optional[list[str]], typer.Option(
    "--classes", help="The job's classes, to decode Kryo-serialized values field by field: a folder "
    "of .class files, a jar, or a JSON layout file (repeatable; docs/KRYO.md).")]


def use_classes(classes: list[str] | None) -> None:
    """Savepoints opened after this decode Kryo values with *classes*' layouts."""
    from statectl.statefmt.flink.kryo.context import use_job_classes

    use_job_classes(classes or [])
