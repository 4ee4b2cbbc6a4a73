"""What a write did: one report per operator and one for the write, for the summary at its end."""

from __future__ import annotations

from dataclasses import dataclass, field

from statectl.statefmt.model import Operator, Savepoint


@dataclass
class OperatorReport:
    uid: str | None
    operator_id: str
    action: str  # written | shallow copy | renamed
    files: int = 0
    rows: int | None = 0  # None: not recorded (Flink files)
    bytes: int = 0
    states: list[str] = field(default_factory=list)


@dataclass
class WriteReport:
    """What a write did, for the summary at its end."""

    savepoint: Savepoint
    operators: list[OperatorReport]
    removed: list[str]
    copied_files: int = 0
    copied_bytes: int = 0
    removed_leftovers: int = 0


def operator_report(op: Operator, action: str) -> OperatorReport:
    files = list(op.data_files())
    rows = None if any(f.rows is None for f in files) else sum(f.rows for f in files)  # Flink: unknown
    return OperatorReport(op.uid, op.operator_id, action, len(files), rows,
                          sum(f.size for f in files), op.state_names)
