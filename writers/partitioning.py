"""How keyed rows are split over Spark tasks: contiguous key-group chunks.

Each subtask's key-group range is cut into a few chunks of nearly equal size;
every chunk becomes one file, so each file covers a range inside one subtask's
range (files never straddle two subtasks, and ranges never overlap). Rows are
sent to the task of their chunk by Spark's hash partitioning on a tag column
whose values are chosen so that tag *j* hashes to partition *j*: one shuffle,
no Python on the way, and every task gets exactly one chunk.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from functools import cached_property

import mmh3

from statectl.statefmt.keygroups import check_parallelism, key_group_range
from statectl.statefmt.model import KEY_GROUP_COLUMN
from statectl.statefmt.types import quote_identifier

SPARK_HASH_SEED = 42  # Spark's HashPartitioning: pmod(murmur3_32(value, 42), n)
PARTITION_TAG = "_part"  # the column :meth:`Chunks.distribute` partitions on


@dataclass(frozen=True)
class Chunks:
    """``parallelism`` subtask ranges of ``max_parallelism`` key groups, each cut in ``per_subtask``."""

    max_parallelism: int
    parallelism: int
    per_subtask: int

    @staticmethod
    def plan(max_parallelism: int, parallelism: int, target_tasks: int) -> "Chunks":
        """Chunks for about *target_tasks* tasks (never more chunks than key groups)."""
        check_parallelism(parallelism, max_parallelism)
        per = max(1, -(-target_tasks // parallelism))
        smallest = max_parallelism // parallelism  # key groups in the smallest subtask range
        return Chunks(max_parallelism, parallelism, max(1, min(per, smallest)))

    @property
    def count(self) -> int:
        return self.parallelism * self.per_subtask

    @cached_property
    def ranges(self) -> tuple[tuple[int, int], ...]:
        """The inclusive key-group range of every chunk, in key-group order."""
        out = []
        for subtask in range(self.parallelism):
            first, last = key_group_range(self.max_parallelism, self.parallelism, subtask)
            size = last - first + 1
            for piece in range(self.per_subtask):
                lo = first + piece * size // self.per_subtask
                hi = first + (piece + 1) * size // self.per_subtask - 1
                out.append((lo, hi))
        return tuple(out)

    def chunk_of(self, key_group: int) -> int:
        """The chunk holding *key_group* (the Python twin of :meth:`chunk_sql`)."""
        p, m, k = self.parallelism, self.max_parallelism, self.per_subtask
        subtask = key_group * p // m
        first = (subtask * m + p - 1) // p
        size = ((subtask + 1) * m + p - 1) // p - first
        return subtask * k + ((key_group - first + 1) * k - 1) // size

    def chunk_sql(self, key_group_column: str) -> str:
        """A Spark SQL expression of the chunk index of a row's key group."""
        g = quote_identifier(key_group_column)
        p, m, k = self.parallelism, self.max_parallelism, self.per_subtask
        subtask = f"(({g} * {p}) div {m})"
        first = f"(({subtask} * {m} + {p - 1}) div {p})"
        size = f"(((({subtask} + 1) * {m} + {p - 1}) div {p}) - {first})"
        return f"CAST({subtask} * {k} + ((({g} - {first} + 1) * {k} - 1) div {size}) AS INT)"

    def tag_sql(self, key_group_column: str) -> str:
        """The partitioning tag of a row: hash-partitions to the task of its chunk."""
        tags = ", ".join(str(t) for t in partition_tags(self.count))
        return f"element_at(array({tags}), {self.chunk_sql(key_group_column)} + 1)"

    def distribute(self, df, sort_by=(), keep_tag: bool = False):
        """*df* (with a ``_key_group`` column) sent to the tasks of its chunks: one shuffle,
        task *j* holding exactly chunk *j*'s rows, sorted within the task by *sort_by*.

        With *keep_tag* the :data:`PARTITION_TAG` column stays (unsorted), so a
        ``groupBy`` that includes it reuses this partitioning instead of shuffling again.
        """
        tagged = df.selectExpr("*", f"{self.tag_sql(KEY_GROUP_COLUMN)} AS {PARTITION_TAG}") \
            .repartition(self.count, PARTITION_TAG)
        if keep_tag:
            return tagged
        rows = tagged.drop(PARTITION_TAG)
        return rows.sortWithinPartitions(*sort_by) if sort_by else rows


def spark_partition_of(value: int, partitions: int) -> int:
    """The partition Spark's hash partitioning gives an int column *value*."""
    h = mmh3.hash(struct.pack("<i", value), SPARK_HASH_SEED, signed=True)
    return h % partitions


def partition_tags(partitions: int) -> list[int]:
    """For each partition *j*, the smallest int that Spark hash-partitions to *j*."""
    tags: list[int | None] = [None] * partitions
    missing, value = partitions, 0
    while missing:
        j = spark_partition_of(value, partitions)
        if tags[j] is None:
            tags[j] = value
            missing -= 1
        value += 1
    return tags  # type: ignore[return-value]
