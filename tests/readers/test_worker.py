"""statectl's tasks in Spark's Python workers: what was alive when a task started is out of the
full garbage collection Spark runs after each task (`readers.worker`), what the task makes is not;
memory a task frees is kept for its next piece."""

from __future__ import annotations

import gc
import sys
import weakref

from pyspark import cloudpickle

from statectl.readers.worker import task_started
from statectl.writers import KeyedFunction, OperatorData, SavepointWriter, StateDescriptor
from support.savepoint_rows import keyed_rows


class _Node:
    pass


def test_what_was_alive_is_out_of_the_walk_and_what_the_task_makes_is_collected():
    kept, dropped = _Node(), _Node()
    kept.me = kept
    dropped_ref = weakref.ref(dropped)
    gc.collect()
    gc.disable()  # no automatic collection (another thread's garbage) between the count and the freeze
    tracked = len(gc.get_objects())
    try:
        task_started()
        gc.enable()
        # a test process holds many; another thread (Spark's, py4j's) may free a few meanwhile
        assert gc.get_freeze_count() > tracked - 1_000 and tracked > 10_000
        assert len(gc.get_objects()) < 1_000
        made = _Node()
        made.me = made  # a cycle: only the collection frees it
        made_ref = weakref.ref(made)
        del made, dropped
        gc.collect()
        assert made_ref() is None
        assert dropped_ref() is None  # alive at the start, freed when nothing refers to it
    finally:
        gc.enable()
        gc.unfreeze()
    assert kept.me is kept


# runs in Spark's Python workers, which cannot import this module
cloudpickle.register_pickle_by_value(sys.modules[__name__])


def _record_the_walk(key, rows, ctx):
    ctx.value("frozen").update(gc.get_freeze_count())
    ctx.value("walked").update(len(gc.get_objects()))


def test_a_writer_task_in_a_spark_worker_runs_with_the_workers_objects_frozen(spark, tmp_path):
    """The per-key function runs inside the task: it sees the worker's modules frozen, and few
    objects left for the collection after the task to walk."""
    users = spark.createDataFrame([(u,) for u in "abcdef"], "user string")
    fn = KeyedFunction(key=["user"], data=users, function=_record_the_walk,
                       states=[StateDescriptor("frozen", "value", "int64"),
                               StateDescriptor("walked", "value", "int64")])
    SavepointWriter.new(128).with_operator(OperatorData("probe", 2, keyed=fn)).write(str(tmp_path / "sp"), spark)
    rows = keyed_rows(str(tmp_path / "sp"), "probe")
    assert len(rows) == 6
    for r in rows:  # pyarrow, numpy and statectl's modules alone are some 80,000 objects
        assert r["frozen"] > 50_000 and r["walked"] < r["frozen"] / 5, r


FAULTS_OF_FREED_ARRAYS = """
import resource, sys
import numpy as np
from statectl.readers.worker import task_started
if sys.argv[1] == "task":
    task_started()
for i in range(6):  # what a task's pieces do: arrays of some MiB made, filled and freed
    if i == 1:
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    piece = np.empty(20 << 20, dtype=np.uint8)
    piece[:] = 1
    del piece
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def test_a_task_keeps_freed_memory_for_its_next_piece_instead_of_faulting_it_in_again():
    """In a process of its own (malloc's settings are the process's): after `task_started`, an
    array freed and made again takes its pages from the heap, not from the kernel."""
    import subprocess

    def faults(mode: str) -> int:
        run = subprocess.run([sys.executable, "-c", FAULTS_OF_FREED_ARRAYS, mode], capture_output=True,
                             text=True, check=True)
        return int(run.stdout)

    assert faults("task") < 20
    assert faults("plain") > 100  # the same process without it: the pages come back from the kernel
