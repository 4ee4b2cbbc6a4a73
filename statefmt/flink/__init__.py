"""Apache Flink savepoints and retained checkpoints, read without a JVM.

`binary` reads Java's big-endian encodings; `metadata` parses `_metadata` into
handles; `serializers` turns serializer snapshots into `types` that decode
columns; `headers` parses the state meta info at the start of each stream;
`streams` finds every entry of a stream; `tables` turns them into Arrow;
`streamio` reads a stream's bytes through the one reference check; `describe`
describes operators, states and splits; `savepoint` ties it together behind
:func:`open_flink_savepoint` and decodes splits (:func:`read_split`); `model` presents
it as statectl's `Savepoint`, which carries the description; `lineage`, `shallow`
and `commit` are a shallow copy's lineage file, pointer copies and replaced files. `keyhash`
is Flink's key-group hash; `native_sst` reads native RocksDB snapshots from their SST
files, `rocksdb_native` through rocksdict.
`docs/FLINK.md` describes what is supported. No Spark here.
"""
