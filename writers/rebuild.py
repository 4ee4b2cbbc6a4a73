"""What a write rebuilds: an operator of its base written again at new limits (a rescale) or
without some of its keyed entries (a prune),
the files it does not rewrite kept as shallow copies. One shape for every family: each
family's write kind plans it (`writers/own/rescale.py`, `writers/flink/rescale.py`)."""

from __future__ import annotations

from dataclasses import dataclass

from statectl.statefmt.model import Operator


@dataclass(frozen=True)
class Rebuild:
    """One operator of the base, to be written at *max_parallelism* and *parallelism*."""

    operator: Operator
    max_parallelism: int
    parallelism: int
    action: str = "rescaled"  # what the report calls it
    prune: object | None = None  # a prune's `writers.prune.PruneRule`: what the rewrite leaves out

    @property
    def verb(self) -> str:
        """How a refusal names the rebuild ("rescale", "prune")."""
        return "prune" if self.prune is not None else "rescale"

    @property
    def rekeys(self) -> bool:
        """Whether every key moves to a new key group (a new max parallelism)."""
        return self.max_parallelism != self.operator.max_parallelism

    @property
    def redistributes(self) -> bool:
        """Whether the operator's state is dealt out to a new number of subtasks."""
        return self.parallelism != self.operator.parallelism
