"""`validate --deep`: decode every stream and file, so a damaged byte that sizes (and, for
Flink, the absent checksums) cannot show is found before a read reaches it.

Flink operators: every keyed split (keyed table and timers) and every operator state split
is decoded by the format layer, one after another in this process; each split that fails
is one problem naming the operator and the place. statectl's canonical files: every Parquet
page is decoded (their sha256 is already checked). statectl's RocksDB files carry a sha256
of their own, which the shallow check verifies.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .errors import StatectlError
from .model import Operator, Savepoint
from .vocabulary import Format


@dataclass
class DeepReport:
    problems: list[str] = field(default_factory=list)
    rows: int = 0  # rows decoded
    parts: int = 0  # splits or files decoded


def deep_check(sp: Savepoint, skip: set[tuple[str, str]] = frozenset()) -> DeepReport:
    """Decode all of *sp*; *skip* holds (operator id, file path) of files already found bad."""
    report = DeepReport()
    for op in sp.operators:
        if op.format == Format.FLINK:
            _flink(sp, op, report)
        elif op.format == Format.CANONICAL:
            _parquet(sp, op, report, skip)
    return report


def _flink(sp: Savepoint, op: Operator, report: DeepReport) -> None:
    from .flink.model import flink_savepoint
    from .flink.savepoint import read_split

    info = flink_savepoint(sp).operator(op.operator_id)
    work = [(split, table) for split in info.keyed_splits for table in ("keyed", "timers")
            if table == "keyed" or info.timers_schema is not None]
    work += [(split, name) for name in info.operator_states for split in info.operator_splits]
    for split, table in work:
        try:
            report.rows += sum(b.num_rows for b in read_split(split, table))
            report.parts += 1
        except StatectlError as e:
            text = str(e)
            line = text if text.startswith(f"operator {op.label}") else f"operator {op.label}: {text}"
            if line not in report.problems:
                report.problems.append(line)


def _parquet(sp: Savepoint, op: Operator, report: DeepReport, skip) -> None:
    import pyarrow.parquet as pq

    from .locations import file_location

    for f in op.data_files():
        if (op.operator_id, f.ref.path) in skip:
            continue
        loc = file_location(sp, f.ref)
        try:
            with loc.open_input_file() as source:
                pf = pq.ParquetFile(source)
                for i in range(pf.num_row_groups):
                    report.rows += pf.read_row_group(i).num_rows
            report.parts += 1
        except (OSError, ValueError) as e:
            report.problems.append(f"operator {op.label}: {loc}: a page does not decode ({e})")
