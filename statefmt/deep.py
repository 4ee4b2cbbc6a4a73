"""`validate --deep`: decode every stream and file, so a damaged byte that sizes (and, for
Flink, the absent checksums) cannot show is found before a read reaches it.

Each operator is decoded by its format (`formats.SavepointFormat.decode_all`), one after
another in this process: Flink's every keyed split (keyed table and timers) and operator
state split, statectl's canonical every Parquet page (their sha256 is already checked);
statectl's RocksDB files carry a sha256 of their own, which the shallow check verifies.
Each part that fails is one problem naming the operator and the place.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .formats import for_operator
from .model import Savepoint


@dataclass
class DeepReport:
    problems: list[str] = field(default_factory=list)
    rows: int = 0  # rows decoded
    parts: int = 0  # splits or files decoded


def deep_check(sp: Savepoint, skip: set[tuple[str, str]] = frozenset()) -> DeepReport:
    """Decode all of *sp*, each operator by its format; *skip* holds (operator id, file path)
    of files already found bad."""
    report = DeepReport()
    for op in sp.operators:
        found = for_operator(op).decode_all(sp, op, skip)
        report.rows += found.rows
        report.parts += found.parts
        report.problems += [p for p in found.problems if p not in report.problems]
    return report
