"""statectl's RocksDB format: each subtask's keyed state as the files of its RocksDB database.

- :mod:`.codec`: the binary encoding of values, entry keys and timer keys (§11);
- :mod:`.table`: one keyed state's entries in a column family;
- :mod:`.database`: the column families, and a snapshot's entries read back;
- :mod:`.files`: a database's checkpoint files in a savepoint (upload, fetch, share);
- :mod:`.rows`: entries as the rows of the canonical keyed and timer tables;
- :mod:`.sst`: a database built from sorted entries (the Spark writers' tasks);
- :mod:`.sstread`, :mod:`.sstkernels`: SST files (RocksDB's block-based tables) read
  directly, entries as columns (Flink's native RocksDB snapshots).

Nothing here imports Spark or the job-side backends (`statectl.backends`), which are
clients of this format. Submodules are imported on use: `statectl info` never loads RocksDB.
"""
