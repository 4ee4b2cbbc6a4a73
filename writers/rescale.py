"""Rescaling: keyed state for a new max parallelism, state for a new parallelism.

For each chosen keyed operator:

* a new **max parallelism** changes every key's group, so the keyed table and
  the timers are read by Spark, given the group the new max parallelism
  assigns, shuffled to the task of their new key-group chunk and written again.
  Nothing reaches the driver.
* a new **parallelism** alone changes no key's group: statectl's own keyed files
  are kept where they lie (shallow copies), since files are indexed by key group.
* when the parallelism changes, operator **list** state is dealt out again by
  Flink's even split and **union** state spread the same way (one copy kept);
  **broadcast** state, identical everywhere, is kept as it is.

Every other operator is a shallow copy. :class:`Rescale` loads the savepoint and chooses its
operators once (no Spark), each a :class:`~.rebuild.Rebuild` that `SavepointWriter.with_rebuilt`
takes; the base's write family (`writers.kinds`) plans them: statectl's own formats in
:mod:`.own.rescale`, Flink's in :mod:`.flink.rescale` (Flink's key hash, the base's
serializers, the Flink writer).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from statectl.statefmt.errors import UnknownStateError, UnreadableStateError, UsageError
from statectl.statefmt.formats import load
from statectl.statefmt.ids import OperatorRef
from statectl.statefmt.keygroups import check_max_parallelism, check_parallelism
from statectl.statefmt.model import KEYED_PART, Savepoint, cannot_read

from .rebuild import Rebuild
from .report import WriteReport
from .savepoint_writer import SavepointWriter

RescaleChoice = Rebuild  # one operator to rescale, with its new limits


def choose_operators(sp: Savepoint, max_parallelism: int, parallelism: int | None,
                     operators: list[str | OperatorRef] | None) -> list[Rebuild]:
    """The keyed operators to rescale (all of them when *operators* is empty: each a uid, or an
    :class:`OperatorRef` naming it by uid, operator id or name), limits checked."""
    check_max_parallelism(max_parallelism)
    for op in sp.operators if not operators else [sp.operator(ref) for ref in operators]:
        part = op.unreadable_part(KEYED_PART)
        if part is not None:  # its key groups cannot be moved, nor left at the old max parallelism
            raise UnreadableStateError(f"cannot rescale: {cannot_read(op.label, KEYED_PART, part.reason)}")
    if operators:
        ops = []
        for ref in operators:
            op = sp.operator(ref)
            if op.keyed is None:
                raise UnknownStateError(
                    f"operator {op.label} has no keyed state to rescale; "
                    f"keyed operators: {_keyed_labels(sp)}")
            if op not in ops:
                ops.append(op)
    else:
        ops = [op for op in sp.operators if op.keyed is not None]
        if not ops:
            raise UnknownStateError(f"{sp.location} has no keyed operator to rescale")
    choices = []
    for op in ops:
        p = parallelism if parallelism is not None else op.parallelism
        if parallelism is None and p > max_parallelism:
            raise UsageError(
                f"operator {op.label} runs at parallelism {p}, more than the new max parallelism "
                f"{max_parallelism}; give a new parallelism too")
        check_parallelism(p, max_parallelism)
        choices.append(Rebuild(op, max_parallelism, p))
    return choices


def _keyed_labels(sp: Savepoint) -> str:
    labels = [op.label for op in sp.operators if op.keyed is not None]
    return ", ".join(labels) if labels else "(none)"


@dataclass(frozen=True)
class Rescale:
    """A savepoint to rescale, loaded and its operators chosen once (no Spark needed), with the
    writer that writes it (its output checked once, by :meth:`check` or by :meth:`write`)."""

    base: Savepoint
    choices: tuple[Rebuild, ...]
    writer: SavepointWriter = field(compare=False, repr=False)

    @classmethod
    def of(cls, source: "str | Savepoint", max_parallelism: int, parallelism: int | None = None,
           operators: list[str | OperatorRef] | None = None, layout: str | None = None) -> "Rescale":
        """Load *source* and choose its *operators* (see :func:`choose_operators`); bad limits
        or unknown operators fail here. *layout*: as `SavepointWriter`'s (default: the base's)."""
        base = source if isinstance(source, Savepoint) else load(source)
        choices = tuple(choose_operators(base, max_parallelism, parallelism, operators))
        return cls(base, choices, SavepointWriter.rebuilding(base, choices, layout))

    def check(self, output: str, overwrite: bool = False) -> None:
        """Check, before Spark starts, that *output* can take the rescaled savepoint."""
        self.writer.check(output, overwrite)

    def write(self, spark, output: str, self_contained: bool = False, on_job=None,
              overwrite: bool = False) -> WriteReport:
        """Write the rescaled savepoint to *output*; the base is only read."""
        return self.writer.write(output, spark=spark, self_contained=self_contained, on_job=on_job,
                                 overwrite=overwrite)


def rescale(spark, source: str, output: str, max_parallelism: int,
            parallelism: int | None = None, operators: list[str | OperatorRef] | None = None,
            self_contained: bool = False, on_job=None, overwrite: bool = False,
            layout: str | None = None) -> WriteReport:
    """Write *source* rescaled to *output*; see the module doc. *source* is only read."""
    return Rescale.of(source, max_parallelism, parallelism, operators, layout).write(
        spark, output, self_contained, on_job, overwrite)


__all__ = ["rescale", "Rescale", "Rebuild", "RescaleChoice", "choose_operators"]
