"""Apache Flink savepoints and checkpoints, read without a JVM.

The byte-level formats of Flink's `_metadata`, state streams, serializer
snapshots and RocksDB snapshots, and Flink's key-group hash. `docs/FLINK.md`
describes what is supported. No Spark here.
"""
