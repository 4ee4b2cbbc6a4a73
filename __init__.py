"""statectl: read, bootstrap, modify, rescale and prune stream-processing savepoints.

The public Python API is this package's ``__all__``: import it from ``statectl`` only.

    from statectl import open_savepoint, SavepointWriter, OperatorData, KeyedData, ValueState

    sp = open_savepoint("savepoints/sp-42")                 # no Spark: pyarrow.Table results
    sp = open_savepoint("savepoints/sp-42", spark=spark)    # Spark DataFrames

The subpackages (``statectl.statefmt``, ``statectl.readers``, ``statectl.writers``,
``statectl.backends``, ``statectl.cli``) are internal: their modules and names may move.
Importing ``statectl`` imports none of them, nor Spark or pyarrow: each name below is
imported on first use (PEP 562).
"""

from importlib import import_module

__version__ = "0.1.0"

_ERRORS = (
    "StatectlError", "UsageError", "NotASavepointError", "MetadataError",
    "UnsupportedVersionError", "UnsafeReferenceError", "MissingFileError", "IntegrityError",
    "DataFileError", "LimitError", "UnknownOperatorError", "UnknownStateError",
    "UnreadableStateError", "KeyTypeError", "SavepointExistsError", "DuplicateKeyError",
    "FlinkFormatError", "UnsupportedFlinkFeature", "FlinkEncodeError",
)
_WRITING = (
    "SavepointWriter", "WriteReport", "OperatorReport", "OperatorData", "KeyedData",
    "KeyedFunction", "KeyContext", "StateDescriptor", "ValueState", "ListState", "MapState",
    "ReducingState", "AggregatingState", "Timers", "OperatorListState", "UnionListState",
    "BroadcastState", "SpecError", "InputError", "NullKeyError", "StateValueError",
    "WriteFailedError",
)

# Each public name and the module it is taken from (imported when the name is first used).
_EXPORTS = {
    **dict.fromkeys(("open_savepoint", "SavepointReader", "LocalSavepointReader", "SparkRequiredError",
                     "diff_savepoints", "SavepointDiff"), ".readers"),
    "OperatorRef": ".statefmt.ids",
    "use_job_classes": ".statefmt.flink.kryo.context",
    **dict.fromkeys(_ERRORS, ".statefmt.errors"),
    **dict.fromkeys(_WRITING, ".writers"),
    **dict.fromkeys(("rescale", "Rescale"), ".writers.rescale"),
    **dict.fromkeys(("prune", "Prune", "PruneReport"), ".writers.prune"),
    **dict.fromkeys(("check_upgrade", "UpgradeCheck"), ".statefmt.flink.upgrade"),
    "remap_savepoint": ".writers.flink.remap",
    **dict.fromkeys(("HeapBackend", "RocksDBBackend", "commit_snapshots"), ".backends"),
}

__all__ = [*_EXPORTS, "__version__"]


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'statectl' has no attribute {name!r}")
    value = getattr(import_module(_EXPORTS[name], __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
