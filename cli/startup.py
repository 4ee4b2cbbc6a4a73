"""Keeping a command's start light: pandas and SciPy stay out of the process until Spark comes in.

Neither is statectl's dependency, yet both would load in a command that reads locally:
pyarrow imports pandas (0.15-0.2 s) the first time it converts a Python value, only to
recognise pandas' null markers, and numba imports SciPy's BLAS (0.1-0.25 s) when its compiler
loads, only to offer ``np.dot`` in compiled code, which no statectl kernel uses. A command that
starts no Spark holds no pandas object and compiles no linear algebra, so both imports are
refused for it; pyarrow and numba take a refused import as "not installed". The first import of
``pyspark`` lifts the refusal (PySpark needs pandas) and tells pyarrow that pandas is there.
Only the CLI's process does this; the Python API leaves imports to the user's program.
"""

from __future__ import annotations

import importlib.abc
import sys

_REFUSED = ("pandas", "scipy")


class _UntilSpark(importlib.abc.MetaPathFinder):
    """A meta path finder refusing `_REFUSED` until ``pyspark`` is imported."""

    def find_spec(self, name, path=None, target=None):
        top = name.partition(".")[0]
        if top == "pyspark":
            lift()
        elif top in _REFUSED:
            raise ModuleNotFoundError(f"No module named {name!r} (not loaded by statectl's CLI)", name=name)
        return None


_finder = _UntilSpark()


def refuse_until_spark() -> None:
    """Refuse pandas and SciPy in this process until ``pyspark`` is imported (or `lift`)."""
    if not any(m in sys.modules for m in (*_REFUSED, "pyspark")) and _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)


def lift() -> None:
    """Let pandas and SciPy import again; a pyarrow that found no pandas while refused looks again."""
    if _finder in sys.meta_path:
        sys.meta_path.remove(_finder)
        pyarrow_lib = sys.modules.get("pyarrow.lib")
        if pyarrow_lib is not None:
            try:  # pyarrow remembers a failed import of pandas; asking for it makes it try again
                pyarrow_lib._pandas_api.pd  # noqa: B018
            except ImportError:
                pass

