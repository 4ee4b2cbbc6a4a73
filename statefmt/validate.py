"""`statectl validate`: every reference, size, checksum, file schema and structural
invariant, all problems listed.

Besides what `_metadata` decoding already enforces (limits, key-group ranges
inside ``0..max_parallelism-1`` and not overlapping, kinds and their types),
each data file is checked against its operator: a keyed or timer file's rows
carry the key group their key hashes to at the operator's max parallelism
(checked on a sample of rows spread over the file, so an edited max
parallelism is caught), and list and union entries belong to subtasks below
the parallelism. A new parallelism alone is a metadata-only rescale (keyed
files are indexed by key group), so keyed file ranges need not match the
subtasks' ranges.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow.compute as pc

from .canonical import check_parquet
from .errors import DataFileError, MissingFileError, StatectlError
from .formats import for_operator, formats_of, load
from .keygroups import key_group_for_key
from .fs import Location
from .integrity import verify_file
from .locations import file_location
from .model import KEY_GROUP_COLUMN, DataFile, Operator, Savepoint


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
    """(operator, data file, expected Arrow schema, as its format says) for every file of the
    savepoint."""
    for op in sp.operators:
        yield from ((op, f, schema) for f, schema in for_operator(op).file_schemas(op))
        for part in op.unreadable:  # not decodable, but its files are there to check
            for f in part.files:
                yield op, f, None


KEY_SAMPLES = 16  # rows per keyed file whose key group is recomputed from the key


def check_invariants(op: Operator, f: DataFile, loc: Location, pf) -> None:
    """Raise DataFileError if the rows of *f* contradict *op*'s parallelism or max parallelism."""
    if f.key_groups is not None and op.keyed is not None and pf.metadata.num_rows:
        names = op.keyed.key_names
        table = pf.read(columns=[KEY_GROUP_COLUMN, *names])
        n = table.num_rows
        picks = sorted({i * (n - 1) // max(1, KEY_SAMPLES - 1) for i in range(KEY_SAMPLES)})
        sample = table.take(picks).to_pylist()
        for row in sample:
            expected = key_group_for_key([row[c] for c in names], op.keyed.key_types,
                                         op.max_parallelism)
            if row[KEY_GROUP_COLUMN] != expected:
                raise DataFileError(
                    f"{loc}: a row of key group {row[KEY_GROUP_COLUMN]} holds a key of key group "
                    f"{expected} at max parallelism {op.max_parallelism} (was the max "
                    "parallelism changed without rescaling?)")
    if f.key_groups is None and "subtask" in pf.schema_arrow.names and pf.metadata.num_rows:
        top = pc.max(pf.read(columns=["subtask"]).column("subtask")).as_py()
        if top is not None and top >= op.parallelism:
            raise DataFileError(
                f"{loc}: holds entries of subtask {top}, but the operator runs at parallelism "
                f"{op.parallelism} (was the parallelism changed without rescaling?)")


def validate(location: str | Location, deep: bool = False) -> ValidationReport:
    """Every check of the module docstring; with *deep*, every stream and file decoded too
    (`deep.py`)."""
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
    failed: set = set()  # (operator id, file reference) of the files found bad
    for op, f, schema in files_with_schemas(sp):
        dep = deps.get(f.ref.savepoint) if f.ref.savepoint else None
        if dep is not None:
            dep.files += 1
        try:
            loc = file_location(sp, f.ref)
            verify_file(loc, f)
            if schema is not None:
                with loc.open_input_file() as source:
                    check_invariants(op, f, loc, check_parquet(loc, source, schema, f))
        except StatectlError as e:
            failed.add((op.operator_id, f.ref))
            if dep is not None and isinstance(e, MissingFileError):
                dep.missing_files += 1
            if dep is None or dep.present:  # a gone base is already one problem
                prefix = f"operator {op.label}: "
                report.problems.append(str(e) if str(e).startswith(prefix) else prefix + str(e))
            continue
        report.files_checked += 1
        report.bytes_checked += f.size
    for op in sp.operators:  # parts whose headers could not be read: damaged ones are problems
        for part in op.unreadable:
            if any((op.operator_id, f.ref) in failed for f in part.files):
                continue  # its bad file is already reported
            line = f"operator {op.label}: {part.part}: {part.reason}"
            (report.problems if part.damaged else report.notes).append(
                line if part.damaged else f"{line} (listed and checked, not decodable here)")
    report.dependencies = list(deps.values())
    if deep:
        from .deep import deep_check

        found = deep_check(sp, {(op_id, ref.path) for op_id, ref in failed})
        report.problems += [p for p in found.problems if p not in report.problems]
        report.notes.append(f"deep: {found.parts} split(s) and file(s) decoded, {found.rows} row(s)")
    for fmt in formats_of(sp):
        report.notes += fmt.validation_notes(sp, deep)
    return report
