"""The savepoint formats: model, `_metadata` codec, key groups, and one home per physical format.

Internal: the public API is the ``statectl`` package (its ``__all__``); the modules and names
here may move.

- statectl's own family: :mod:`.canonical` (Parquet, the default) and
  :mod:`.rocksdb` (each subtask's RocksDB database), sharing :mod:`.model`,
  :mod:`.metadata`, :mod:`.savepoint` and :mod:`.keygroups`;
- Apache Flink's savepoints: `statectl.statefmt.flink`, a second family beside it;
- :mod:`.formats`, the seam: which format a savepoint is (sniffed once from its
  `_metadata`), and each format's load, commit and operator copies.

Pure Python and pyarrow; never imports Spark, nor anything above it (the
job-side backends in `statectl.backends` are a client of these formats), so
`statectl info` and `validate` and the backends start without a JVM.
"""

from importlib import import_module

# Names re-exported here, loaded on first use (PEP 562), so `statectl --version` and the
# commands that need little import little (pyarrow only where a format is touched).
_EXPORTS = {
    "StatectlError": ".errors", "OperatorRef": ".ids", "operator_id_for_uid": ".ids",
    **{name: ".keygroups" for name in ("MAX_MAX_PARALLELISM", "default_max_parallelism", "hash_key",
                                       "key_group_for_key", "key_group_range", "key_group_sql",
                                       "subtask_for_key_group")},
    **{name: ".model" for name in ("DataFile", "Field", "FileRef", "KeyedSection", "KeyedStateDescriptor",
                                   "LineageEntry", "Operator", "OperatorState", "Savepoint")},
    "commit": ".formats", "file_location": ".locations", "load": ".formats",
}

__all__ = [*_EXPORTS]


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(_EXPORTS[name], __name__), name)
    globals()[name] = value
    return value
