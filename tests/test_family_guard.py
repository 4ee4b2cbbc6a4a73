"""No family test above the format seam: readers, writers and the CLI never ask "is it Flink?".

A format family's behaviour is chosen once, by a registry: `readers/sources.py` (a table source
per format) and `writers/kinds.py` (a write family per format family); each family's own code
lives in its folder (`writers/flink/`, `writers/own/`, `statefmt/flink/`) or, for the Flink
table source, `readers/flink.py`. Everywhere else a test of the family (``is_flink``,
``Format.FLINK``, a comparison with the word ``"flink"``) is a decision that belongs to a
registry, and this test names where it is.
"""

from __future__ import annotations

import ast
from pathlib import Path

from support import REPO

LAYERS = ("readers", "writers", "cli")
REGISTRIES = {"readers/sources.py", "writers/kinds.py"}


def _allowed(relative: Path) -> bool:
    return str(relative) in REGISTRIES or "flink" in relative.parts[:-1] or relative.stem == "flink"


def family_tests(source: str) -> list[tuple[int, str]]:
    """The lines of *source* that test a format family, with what they test."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name) and node.id == "is_flink":
            found.append((node.lineno, "is_flink"))
        elif isinstance(node, ast.Attribute) and node.attr == "is_flink":
            found.append((node.lineno, "is_flink"))
        elif isinstance(node, ast.Attribute) and node.attr == "FLINK" and \
                isinstance(node.value, ast.Name) and node.value.id == "Format":
            found.append((node.lineno, "Format.FLINK"))
        elif isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(isinstance(o, ast.Constant) and o.value == "flink" for o in operands):
                found.append((node.lineno, 'a comparison with "flink"'))
    return found


def test_the_detector_finds_each_kind_of_family_test():
    source = ("if is_flink(base): pass\n"
              "x = op.format == Format.FLINK\n"
              "y = fmt != 'flink'\n"
              "z = sp.is_flink\n"
              "w = Format.CANONICAL\n")
    assert sorted(family_tests(source)) == [(1, "is_flink"), (2, "Format.FLINK"),
                                            (3, 'a comparison with "flink"'), (4, "is_flink")]


def test_no_family_test_outside_the_registries_and_the_family_folders():
    offending = []
    for layer in LAYERS:
        for path in sorted((REPO / layer).rglob("*.py")):
            relative = path.relative_to(REPO)
            if _allowed(relative):
                continue
            offending += [f"{relative}:{line}: {what}" for line, what in family_tests(path.read_text())]
    assert offending == [], "family decisions outside a registry:\n" + "\n".join(offending)


def test_the_registries_name_every_family_the_formats_know():
    from statectl.statefmt.formats import FORMATS
    from statectl.writers.kinds import FAMILIES, write_family

    assert {f.family for f in FORMATS.values()} == set(FAMILIES)
    for name in FAMILIES:
        assert write_family(name).name == name
