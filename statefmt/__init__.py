"""The statectl savepoint format: model, `_metadata` codec, key groups and data files.

Pure Python and pyarrow; never imports Spark, so `statectl info` and
`validate` and the job-side state backends start without a JVM.
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
