"""The public Python API is `statectl`'s `__all__`: exactly these names, each resolving, listed by
`dir`, none importing Spark or pyarrow until used; and every example a user reads (README,
docs/*.md, examples/*.py, the readers' and writers' package docstrings) imports from `statectl` only."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys

import pytest

import statectl
from support import REPO

PUBLIC = [
    # reading
    "open_savepoint", "SavepointReader", "LocalSavepointReader", "SparkRequiredError",
    "diff_savepoints", "SavepointDiff", "OperatorRef", "use_job_classes",
    # errors
    "StatectlError", "UsageError", "NotASavepointError", "MetadataError", "UnsupportedVersionError",
    "UnsafeReferenceError", "MissingFileError", "IntegrityError", "DataFileError", "LimitError",
    "UnknownOperatorError", "UnknownStateError", "UnreadableStateError", "KeyTypeError",
    "SavepointExistsError", "DuplicateKeyError", "FlinkFormatError", "UnsupportedFlinkFeature",
    "FlinkEncodeError",
    # writing
    "SavepointWriter", "WriteReport", "OperatorReport", "OperatorData", "KeyedData", "KeyedFunction",
    "KeyContext", "StateDescriptor", "ValueState", "ListState", "MapState", "ReducingState",
    "AggregatingState", "Timers", "OperatorListState", "UnionListState", "BroadcastState",
    "SpecError", "InputError", "NullKeyError", "StateValueError", "WriteFailedError",
    "rescale", "Rescale", "prune", "Prune", "PruneReport",
    # job upgrades
    "check_upgrade", "UpgradeCheck", "remap_savepoint",
    # job-side state backends
    "HeapBackend", "RocksDBBackend", "commit_snapshots",
    "__version__",
]


def test_all_is_the_api():
    assert sorted(statectl.__all__) == sorted(PUBLIC)
    assert len(set(statectl.__all__)) == len(statectl.__all__)


@pytest.mark.parametrize("name", PUBLIC)
def test_every_name_resolves_and_is_listed(name):
    value = getattr(statectl, name)
    assert value is not None and name in dir(statectl)
    if name != "__version__":
        assert value.__module__.startswith("statectl.")  # statectl's own, not a re-exported library's
        assert value.__name__ == name


def test_errors_users_catch_are_statectl_errors():
    errors = [n for n in PUBLIC if n.endswith(("Error", "Feature"))]
    assert all(issubclass(getattr(statectl, n), statectl.StatectlError) for n in errors)
    assert issubclass(statectl.SparkRequiredError, statectl.UsageError)


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="module 'statectl' has no attribute 'open_savepiont'"):
        statectl.open_savepiont  # noqa: B018


def test_importing_statectl_imports_no_spark_pyarrow_or_subpackage():
    probe = ("import json, sys, statectl; "
             "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
             "('pyspark', 'py4j', 'pyarrow', 'pandas', 'numpy') or m.startswith('statectl.'))))")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == []


def test_every_name_resolves_without_importing_spark():
    probe = ("import json, sys, statectl; [getattr(statectl, n) for n in statectl.__all__]; "
             "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules} & {'pyspark', 'py4j'})))")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == []


# --- examples import from statectl only ---------------------------------------------------------

DEEP_IMPORT = re.compile(r"^\s*(?:>>>\s*)?(?:from\s+statectl\.\w|import\s+statectl\.\w)", re.M)
CODE_BLOCK = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.M | re.S)
DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def python_blocks(text: str) -> list[tuple[int, str]]:
    """(line, code) of each Python code block of a Markdown text."""
    return [(text[:m.start()].count("\n") + 1, m.group(2)) for m in CODE_BLOCK.finditer(text)
            if m.group(1).lower() in ("python", "py", "pycon", "python3")]


def deep_imports(code: str) -> list[str]:
    return [line.strip() for line in code.splitlines() if DEEP_IMPORT.match(line)]


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: p.name)
def test_documented_examples_import_from_statectl_only(path):
    found = [f"{path.name}:{line}: {imp}" for line, code in python_blocks(path.read_text())
             for imp in deep_imports(code)]
    assert found == []


def test_the_documents_show_python():
    blocks = sum(len(python_blocks(p.read_text())) for p in DOCUMENTS)
    assert blocks >= 8


@pytest.mark.parametrize("path", sorted((REPO / "examples").glob("*.py")), ids=lambda p: p.name)
def test_example_programs_import_from_statectl_only(path):
    tree = ast.parse(path.read_text())
    modules = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module]
    modules += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert [m for m in modules if m.startswith("statectl.")] == []


@pytest.mark.parametrize("package", ["readers", "writers"])
def test_the_packages_docstrings_import_from_statectl_only(package):
    import importlib

    assert deep_imports(importlib.import_module(f"statectl.{package}").__doc__) == []


def test_the_scan_finds_a_deep_import():
    text = "x\n```python\nimport os\nfrom statectl.readers import open_savepoint\n```\n"
    assert [deep_imports(code) for _, code in python_blocks(text)] == [
        ["from statectl.readers import open_savepoint"]]
    assert deep_imports(">>> import statectl.writers.rescale\nfrom statectl import rescale\n") == [
        ">>> import statectl.writers.rescale"]
