"""numba's compiler with its on-disk cache wherever one can be written.

The compiled kernels (`statefmt.flink.kernels`, `statefmt.flink.stringkernels`, `statefmt.slicekernel`,
`statefmt.rocksdb.sstkernels`)
are cached (``cache=True``) so that each Python worker compiles them once, not
per task. numba keeps that cache beside the module (``__pycache__``), else in
the user's cache folder (``~/.cache/numba``), else under ``NUMBA_CACHE_DIR``;
when none of them is writable (a read-only install and a read-only or missing
HOME, as in some containers) a cached kernel fails at import. :func:`njit`
then points numba at a folder under statectl's scratch space, and compiles
without a cache if even that cannot be written. Importing this module imports
numba: only code that decodes data imports it.
"""

from __future__ import annotations

import os
import sys
import tempfile

from .scratch import PREFIX, spark_local_dir

SCRATCH_CACHE = f"{PREFIX}numba-cache"

# Bytes a process walks in plain Python before it starts numba: about what numba's start costs
# (its import and CPU target, some 0.4 s, are a microsecond-per-entry walk of some MiB; a key
# lookup of a 1M-key RocksDB snapshot spends about 7 MiB of it).
PLAIN_BUDGET = 8 << 20
_plain_spent = 0


def walk_plainly(cost: int) -> bool:
    """Whether to do *cost* bytes of walking in plain Python rather than by a compiled kernel:
    while numba is not loaded and this process has walked less than :data:`PLAIN_BUDGET` bytes
    so (these included). A key lookup then never starts numba; a larger read starts it after a
    bounded detour. The plain walks give the compiled ones' answers (their tests say so)."""
    global _plain_spent
    if numba_started() or _plain_spent + cost > PLAIN_BUDGET:
        return False
    _plain_spent += cost
    return True


def numba_started() -> bool:
    """Whether this process has imported numba (its start is paid: compiled code costs no more)."""
    return "numba" in sys.modules


def walk_compiled() -> None:
    """From now on this process walks compiled: what it reads is known to be large (a whole
    table, a savepoint's figures, a Spark task), so a plain detour would only add to numba's start."""
    global _plain_spent
    _plain_spent = PLAIN_BUDGET + 1


def writable(folder: str) -> bool:
    """Whether files can be created in *folder* (made if missing), as numba will try."""
    try:
        os.makedirs(folder, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            return True
    except OSError:
        return False


def user_cache_folder() -> str:
    """numba's user-wide cache folder (``$XDG_CACHE_HOME/numba``, else ``~/.cache/numba``)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "numba")


def choose_cache_dir(module_folder: str, user_folder: str, scratch_root: str) -> str | None:
    """Where numba's cache of kernels defined in *module_folder* goes: ``""`` where numba
    finds a writable place itself (``NUMBA_CACHE_DIR`` set, beside the module, or the
    user's cache folder), a folder under *scratch_root* otherwise, None for no cache."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return ""
    if writable(os.path.join(module_folder, "__pycache__")) or writable(user_folder):
        return ""
    scratch = os.path.join(scratch_root, SCRATCH_CACHE)
    return scratch if writable(scratch) else None


_choice: dict[str, str | None] = {}


def cache_enabled(module_file: str) -> bool:
    """Decide (once per folder) where kernels of *module_file* are cached; False: no cache."""
    folder = os.path.dirname(os.path.abspath(module_file))
    if folder not in _choice:
        choice = choose_cache_dir(folder, user_cache_folder(), spark_local_dir() or tempfile.gettempdir())
        if choice:
            import numba

            os.environ["NUMBA_CACHE_DIR"] = choice
            numba.config.CACHE_DIR = choice  # numba read the environment when it was imported
        _choice[folder] = choice
    return _choice[folder] is not None


def njit(module_file: str, **options):
    """``numba.njit(cache=..., nogil=True, **options)`` with the cache decided as above."""
    import numba

    return numba.njit(cache=cache_enabled(module_file), nogil=True, **options)
