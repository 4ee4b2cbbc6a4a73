"""How Flink's RocksDB state backends keep a list state's value: its elements, each serialized by
the element serializer, one after another with one ``,`` byte between two. RocksDB's string-append
merge operator, which a column family of list state names in its options, joins merged values so.
"""

from __future__ import annotations

LIST_DELIMITER = ord(",")
LIST_MERGE_OPERATORS = ("StringAppendTESTOperator", "stringappendtest")
