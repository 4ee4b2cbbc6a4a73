"""Writing savepoints from Spark DataFrames: bootstrap new ones, derive modified ones.

Internal: the public API is the ``statectl`` package (its ``__all__``); the modules and names
here may move.

    from statectl import SavepointWriter, OperatorData, KeyedData, ValueState, ListState

    writer = SavepointWriter.new(max_parallelism=128)
    writer.with_operator(OperatorData("proc", parallelism=2, keyed=KeyedData(
        key=["user"], data=events, states=[ValueState("count", column="n"),
                                           ListState("events", column="event")])))
    writer.write("out/savepoint", spark=spark)

    SavepointWriter.from_existing("sp1").remove_operator("old").write("sp2")

Operators of a base left untouched are shallow copies referencing its files;
``write(..., self_contained=True)`` copies them instead. Data files are written
by Spark tasks, `_metadata` last by the driver.
"""

from .definitions import (
    AggregatingState,
    BroadcastState,
    KeyedData,
    KeyedFunction,
    ListState,
    MapState,
    OperatorData,
    OperatorListState,
    ReducingState,
    StateDescriptor,
    Timers,
    UnionListState,
    ValueState,
)
from .errors import (
    DuplicateKeyError,
    InputError,
    NullKeyError,
    SpecError,
    StateValueError,
    WriteFailedError,
)
from .own.function import KeyContext
from .report import OperatorReport, WriteReport
from .savepoint_writer import SavepointWriter

__all__ = [
    "SavepointWriter", "WriteReport", "OperatorReport", "OperatorData", "KeyedData",
    "KeyedFunction", "StateDescriptor", "KeyContext", "ValueState", "ListState", "MapState",
    "ReducingState", "AggregatingState", "Timers", "OperatorListState", "UnionListState",
    "BroadcastState", "SpecError", "InputError", "DuplicateKeyError", "NullKeyError",
    "StateValueError", "WriteFailedError",
]
