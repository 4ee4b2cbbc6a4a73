"""`statectl validate`: every reference, size, checksum and file schema, all problems listed."""

from __future__ import annotations

from dataclasses import dataclass, field

from .canonical import check_parquet, keyed_schema, operator_state_schema, timers_schema
from .errors import MissingFileError, StatectlError
from .fs import Location
from .integrity import verify_file
from .model import FLINK, ROCKSDB, Savepoint
from .savepoint import file_location, load


@dataclass
class Dependency:
    """A savepoint whose files this one references."""

    savepoint_id: str
    location: str
    files: int = 0
    missing_files: int = 0
    present: bool = True


@dataclass
class ValidationReport:
    location: str
    savepoint: Savepoint | None = None
    problems: list[str] = field(default_factory=list)
    dependencies: list[Dependency] = field(default_factory=list)
    files_checked: int = 0
    bytes_checked: int = 0
    notes: list[str] = field(default_factory=list)  # what was not checked, and why

    @property
    def valid(self) -> bool:
        return not self.problems


def files_with_schemas(sp: Savepoint):
    """(operator, data file, expected Arrow schema) for every file of the savepoint."""
    for op in sp.operators:
        if op.keyed is not None:
            ks, ts = keyed_schema(op.keyed), timers_schema(op.keyed)
            if op.format in (ROCKSDB, FLINK):
                ks = None  # RocksDB files: size and checksum only; Flink files: size only
            for f in op.keyed.files:
                yield op, f, ks
            for f in op.keyed.timers:
                yield op, f, ts
        for state in op.operator_states:
            schema = operator_state_schema(state) if op.format != FLINK else None
            for f in state.files:
                yield op, f, schema


def validate(location: str | Location) -> ValidationReport:
    report = ValidationReport(str(location))
    try:
        sp = load(location)
    except StatectlError as e:
        report.problems.append(str(e))
        return report
    report.savepoint = sp
    report.location = sp.location
    deps = {e.savepoint_id: Dependency(e.savepoint_id, e.location) for e in sp.lineage}
    for dep in deps.values():
        dep.present = Location(dep.location).is_dir()
        if not dep.present:
            report.problems.append(
                f"savepoint {dep.savepoint_id} at {dep.location}, which this one references, is gone"
            )
    for op, f, schema in files_with_schemas(sp):
        dep = deps.get(f.ref.savepoint) if f.ref.savepoint else None
        if dep is not None:
            dep.files += 1
        loc = file_location(sp, f.ref)
        try:
            verify_file(loc, f)
            if schema is not None:
                with loc.open_input_file() as source:
                    check_parquet(loc, source, schema, f)
        except StatectlError as e:
            if dep is not None and isinstance(e, MissingFileError):
                dep.missing_files += 1
            if dep is None or dep.present:  # a gone base is already one problem
                report.problems.append(f"operator {op.label}: {e}")
            continue
        report.files_checked += 1
        report.bytes_checked += f.size
    report.dependencies = list(deps.values())
    if any(op.format == FLINK for op in sp.operators):
        report.notes.append("Flink savepoint: its files have no checksums, so only their presence "
                            "and sizes were checked")
        report.notes += [f"operator {op.label}: absolute file reference {f.ref.path}"
                         for op, f in sp.data_files() if f.ref.location is not None]
    return report
