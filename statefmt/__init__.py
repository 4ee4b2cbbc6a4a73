"""The savepoint formats: model, `_metadata` codec, key groups, and one home per physical format.

Internal: the public API is the ``statectl`` package (its ``__all__``); the modules and names
here may move.

- statectl's own family: :mod:`.canonical` (Parquet, the default) and
  :mod:`.rocksdb` (each subtask's RocksDB database), sharing :mod:`.model`,
  :mod:`.metadata`, :mod:`.savepoint` and :mod:`.keygroups`;
- Apache Flink's savepoints: `statectl.statefmt.flink`, a second family beside it;
- :mod:`.formats`, the seam: which format a savepoint is (sniffed once from its
  `_metadata`), its load, and the one commit; each family's :class:`~.seam.SavepointFormat`
  in its folder (:mod:`.own.format`, :mod:`.flink.format`).

Pure Python and pyarrow; never imports Spark, nor anything above it (the
job-side backends in `statectl.backends` are a client of these formats), so
`statectl info` and `validate` and the backends start without a JVM.
"""
