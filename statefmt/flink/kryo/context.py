"""What decoding Kryo needs beyond a serializer snapshot: which Kryo wrote it, and the job's classes.

Both are properties of the savepoint being read (its `_metadata` version names the generation:
Flink 2.x writes versions 5 and later, with Kryo 5) and of the reader (`--classes`), not of one
stream; a reader sets them around its header reads and every split carries them to the
process that decodes it.
"""

from __future__ import annotations

import contextlib
from contextvars import ContextVar
from dataclasses import dataclass, field

from .classes import ClassPath, load_classpath
from .registry import KRYO2, KRYO5

FIRST_KRYO5_METADATA = 5


@dataclass(frozen=True)
class KryoSetting:
    """*generation* None: not known (Kryo values stay bytes rather than risk a wrong decoding)."""

    generation: int | None = None
    classpath: ClassPath = field(default_factory=ClassPath, compare=False)

    @classmethod
    def of(cls, metadata_version: int) -> "KryoSetting":
        generation = KRYO5 if metadata_version >= FIRST_KRYO5_METADATA else KRYO2
        return cls(generation, _job_classes)


_job_classes = ClassPath()


def use_job_classes(paths) -> ClassPath:
    """The job's classes (folders, jars, `.class` or JSON layout files) for the savepoints opened
    after this call; none given: no classes."""
    global _job_classes
    _job_classes = load_classpath(paths)
    return _job_classes


_CURRENT: ContextVar[KryoSetting] = ContextVar("kryo_setting", default=KryoSetting())


def current() -> KryoSetting:
    return _CURRENT.get()


@contextlib.contextmanager
def kryo_setting(setting: KryoSetting | None):
    """Serializer snapshots read inside take their Kryo generation and classes from *setting*."""
    if setting is None:
        yield
        return
    token = _CURRENT.set(setting)
    try:
        yield
    finally:
        _CURRENT.reset(token)
