"""The snapshot shapes of the suite's Flink job that the release tests make in every release
(flink_job/test_flink_job.py, test_flink_releases.py) and that the reading, writing and
restoring tests reuse, so each is made once and cached (flink_job.make_snapshots)."""

# _metadata version each release writes (observed: MetadataV4Serializer up to 1.20, V6 in 2.x).
METADATA_VERSION = {"1.17.2": 4, "1.20.3": 4, "2.3.0": 6}

# Savepoint shapes made for every release, in one JVM per release; each is restored with the
# other backend when canonical, the same backend when native (Flink restores native only so).
SHAPES = {
    "rocksdb-canonical": dict(backend="rocksdb", format="canonical", key_type="string",
                              max_parallelism=256, parallelism=3, inline_threshold=0, seed=90210,
                              keys=25, events=420),
    "hashmap-native": dict(backend="hashmap", format="native", key_type="tuple", seed=4242,
                           keys=24, events=360, partitions=4),
    "rocksdb-native": dict(backend="rocksdb", format="native", key_type="int", states="scalars",
                           seed=31337, keys=16, events=300, partitions=4, inline_threshold=0),
}
# Every release: an incremental RocksDB retained checkpoint and a snappy-compressed savepoint.
INCREMENTAL = dict(checkpoint="incremental", backend="rocksdb", key_type="long", max_parallelism=256,
                      parallelism=3, inline_threshold=0)
COMPRESSED = dict(compression=True, backend="hashmap", format="canonical", inline_threshold=0,
                     key_type="string", seed=77)
# Canonical from the heap backend (SHAPES has it from RocksDB): Long keys, every state group,
# the default inline threshold (small streams inline in _metadata).
HASHMAP_CANONICAL = dict(backend="hashmap", format="canonical", key_type="long", seed=2718, keys=20,
                         events=300)
