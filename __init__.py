"""statectl: read, bootstrap, modify and rescale stream-processing savepoints with Spark.

The packages live in this repository's top-level folders and install under one
import name: ``statectl.statefmt`` (the formats, no Spark), ``statectl.backends``
(job-side state backends), ``statectl.readers``
(savepoints as DataFrames), ``statectl.writers`` (DataFrames into savepoints)
and ``statectl.cli`` (the command). The public API is re-exported here; importing
``statectl`` does not start (or import) Spark.

    from statectl import open_savepoint, SavepointWriter, rescale, diff_savepoints
"""

__version__ = "0.1.0"


def __getattr__(name: str):
    # imported on first use, so `import statectl` (and so `import statectl.cli`) stays light
    if name == "StatectlError":
        from .statefmt.errors import StatectlError
        return StatectlError
    if name == "open_savepoint":
        from .readers import open_savepoint
        return open_savepoint
    if name == "SavepointWriter":
        from .writers import SavepointWriter
        return SavepointWriter
    if name == "diff_savepoints":
        from .readers.diff import diff_savepoints
        return diff_savepoints
    if name == "rescale":
        from .writers.rescale import rescale
        return rescale
    raise AttributeError(f"module 'statectl' has no attribute {name!r}")


__all__ = ["open_savepoint", "SavepointWriter", "rescale", "diff_savepoints", "StatectlError", "__version__"]
