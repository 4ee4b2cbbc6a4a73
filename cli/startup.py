"""Keeping a command's start light: imports the CLI never uses stay out of its process.

None of these is statectl's dependency, yet each would load in a command:

- pyarrow imports **pandas** (0.15-0.2 s) the first time it converts a Python value, only to
  recognise pandas' null markers;
- numba imports **SciPy**'s BLAS (0.1-0.25 s) when its compiler loads, only to offer ``np.dot``
  in compiled code, which no statectl kernel uses;
- PySpark imports **IPython** (0.15-0.3 s) to word errors and size progress bars for notebooks.

A command that starts no Spark holds no pandas object and compiles no linear algebra, so pandas
and SciPy are refused until ``pyspark`` is imported (PySpark needs pandas; pyarrow is then told
that pandas is there); a command is never an IPython shell, so IPython is refused throughout.
pyarrow, numba and PySpark take a refused import as "not installed". Only the CLI's process does
this; the Python API leaves imports to the user's program.
"""

from __future__ import annotations

import importlib.abc
import sys

UNTIL_SPARK = ("pandas", "scipy")
NEVER = ("IPython",)


class _Refusing(importlib.abc.MetaPathFinder):
    """A meta path finder refusing `UNTIL_SPARK` until ``pyspark`` is imported, and `NEVER`."""

    def __init__(self):
        self.refused = (*UNTIL_SPARK, *NEVER)

    def find_spec(self, name, path=None, target=None):
        top = name.partition(".")[0]
        if top == "pyspark" and self.refused != NEVER:
            self.refused = NEVER
            _pyarrow_looks_for_pandas_again()
        elif top in self.refused:
            raise ModuleNotFoundError(f"No module named {name!r} (not loaded by statectl's CLI)", name=name)
        return None


_finder = _Refusing()


def refuse() -> None:
    """Refuse those imports in this process (a process that already has one is left alone)."""
    if not any(m in sys.modules for m in (*UNTIL_SPARK, *NEVER, "pyspark")) and _finder not in sys.meta_path:
        _finder.refused = (*UNTIL_SPARK, *NEVER)
        sys.meta_path.insert(0, _finder)


def lift() -> None:
    """Let every import happen again (the test runner's in-process commands end with it)."""
    if _finder in sys.meta_path:
        sys.meta_path.remove(_finder)
        _pyarrow_looks_for_pandas_again()


def _pyarrow_looks_for_pandas_again() -> None:
    """pyarrow remembers a failed import of pandas; asking it for pandas makes it try again."""
    pyarrow_lib = sys.modules.get("pyarrow.lib")
    if pyarrow_lib is not None:
        try:
            pyarrow_lib._pandas_api.pd  # noqa: B018
        except ImportError:
            pass
