"""What the walks over RocksDB tables answer (:mod:`.sstkernels` compiled, :mod:`.sstwalk` plain
Python), and RocksDB's value types of internal keys, known to both."""

OK, BAD_ENTRY, HASH_INDEX, BAD_SHARED = 0, 1, 2, 3
# value types of internal keys (RocksDB's ValueType)
DELETION, VALUE, MERGE, SINGLE_DELETION = 0x0, 0x1, 0x2, 0x7
