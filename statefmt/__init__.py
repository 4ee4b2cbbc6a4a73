"""The savepoint formats: model, `_metadata` codec, key groups, and one home per physical format.

- statectl's own family: :mod:`.canonical` (Parquet, the default) and
  :mod:`.rocksdb` (each subtask's RocksDB database), sharing :mod:`.model`,
  :mod:`.metadata`, :mod:`.savepoint` and :mod:`.keygroups`;
- Apache Flink's savepoints: `statectl.statefmt.flink`, a second family beside it.

Pure Python and pyarrow; never imports Spark, nor anything above it (the
job-side backends in `statectl.backends` are a client of these formats), so
`statectl info` and `validate` and the backends start without a JVM.
"""

from .. import __version__
from .errors import StatectlError
from .ids import OperatorRef, operator_id_for_uid
from .keygroups import (
    MAX_MAX_PARALLELISM,
    default_max_parallelism,
    hash_key,
    key_group_for_key,
    key_group_range,
    key_group_sql,
    subtask_for_key_group,
)
from .model import (
    DataFile,
    Field,
    FileRef,
    KeyedSection,
    KeyedStateDescriptor,
    LineageEntry,
    Operator,
    OperatorState,
    Savepoint,
)
from .savepoint import commit, file_location, load

__all__ = [
    "StatectlError", "OperatorRef", "operator_id_for_uid", "MAX_MAX_PARALLELISM",
    "default_max_parallelism", "hash_key", "key_group_for_key", "key_group_range",
    "key_group_sql", "subtask_for_key_group", "DataFile", "Field", "FileRef", "KeyedSection",
    "KeyedStateDescriptor", "LineageEntry", "Operator", "OperatorState", "Savepoint", "commit",
    "file_location", "load", "__version__",
]
