"""A small encoder of RocksDB block-based tables for the tests, written from the documented
format (footer, metaindex, properties, index, data blocks with shared-prefix keys and restart
points, block trailers with compression type and checksum), independent of the reader."""

from __future__ import annotations

import struct

import cramjam
import google_crc32c
import xxhash

MAGIC = 0x88E241B785F4CFF7
CRC32C, XXH3 = 1, 4


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def zigzag(n: int) -> int:
    return (n << 1) ^ (n >> 63)


def block(entries: list[tuple[bytes, bytes]], restart_interval: int = 16) -> bytes:
    """A block of (key, value) entries: shared, unshared and value lengths, key suffix, value;
    then the restart offsets and their count."""
    out, restarts, prev = bytearray(), [], b""
    for i, (key, value) in enumerate(entries):
        if i % restart_interval == 0:
            restarts.append(len(out))
            shared = 0
        else:
            shared = 0
            while shared < min(len(prev), len(key)) and prev[shared] == key[shared]:
                shared += 1
        out += varint(shared) + varint(len(key) - shared) + varint(len(value)) + key[shared:] + value
        prev = key
    for r in restarts or [0]:
        out += struct.pack("<I", r)
    return bytes(out + struct.pack("<I", len(restarts or [0])))


def index_block(entries: list[tuple[bytes, tuple[int, int]]], restart_interval: int = 1) -> bytes:
    """An index block with delta-encoded values: a full handle at restart points, else the
    size's zigzag delta (the offset follows the previous block and its 5-byte trailer)."""
    out, restarts, prev, prev_size = bytearray(), [], b"", 0
    for i, (key, (offset, size)) in enumerate(entries):
        if i % restart_interval == 0:
            restarts.append(len(out))
            shared, value = 0, varint(offset) + varint(size)
        else:
            shared = 0
            while shared < min(len(prev), len(key)) and prev[shared] == key[shared]:
                shared += 1
            value = varint(zigzag(size - prev_size))
        out += varint(shared) + varint(len(key) - shared) + key[shared:] + value
        prev, prev_size = key, size
    for r in restarts or [0]:
        out += struct.pack("<I", r)
    return bytes(out + struct.pack("<I", len(restarts or [0])))


def checksum(kind: int, data: bytes, compression: int) -> int:
    if kind == XXH3:
        return ((xxhash.xxh3_64_intdigest(data) & 0xFFFFFFFF) ^ ((compression * 0x6B9083D9) & 0xFFFFFFFF))
    crc = google_crc32c.value(data + bytes([compression]))
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def internal_key(user_key: bytes, seq: int, kind: int) -> bytes:
    return user_key + struct.pack("<Q", (seq << 8) | kind)


def table(entries: list[tuple[bytes, int, int, bytes]], *, column_family: str = "cf",
          block_entries: int = 4, restart_interval: int = 2, snappy: bool = True,
          checksum_type: int = XXH3, extra_meta: dict[bytes, bytes] | None = None,
          properties: dict[bytes, bytes] | None = None, compression: int | None = None,
          partition_entries: int | None = None, separators: list[bytes] | None = None) -> bytes:
    """A whole SST file of internal entries ``(user key, seq, kind, value)`` in order.
    *separators*: the index's key of each data block (else its last internal key), as RocksDB
    shortens them.
    *partition_entries*: a partitioned index (kTwoLevelIndexSearch, as ForSt writes them) of
    that many data blocks per partition, the partitions before the metaindex and a top-level
    index of (last key, partition handle)."""
    out = bytearray()

    def put(content: bytes, compress: bool) -> tuple[int, int]:
        kind = compression if compression is not None and compress else (1 if compress and snappy else 0)
        data = bytes(cramjam.snappy.compress_raw(content)) if kind == 1 else content
        handle = (len(out), len(data))
        out.extend(data + bytes([kind]) + struct.pack("<I", checksum(checksum_type, data, kind)))
        return handle

    index = []
    for i in range(0, len(entries), block_entries):
        part = [(internal_key(k, s, t), v) for k, s, t, v in entries[i:i + block_entries]]
        separator = part[-1][0] if separators is None else separators[i // block_entries]
        index.append((separator, put(block(part, restart_interval), True)))
    partitions = []
    if partition_entries is not None:
        for i in range(0, len(index), partition_entries):
            part = index[i:i + partition_entries]
            partitions.append((part[-1][0], put(index_block(part), False)))
        properties = {b"rocksdb.block.based.table.index.type": struct.pack("<I", 2),
                      b"rocksdb.index.partitions": varint(len(partitions)), **(properties or {})}
    props = {b"rocksdb.column.family.name": column_family.encode(),
             b"rocksdb.comparator": b"leveldb.BytewiseComparator",
             b"rocksdb.index.value.is.delta.encoded": varint(1),
             b"rocksdb.merge.operator": b"StringAppendTESTOperator",
             b"rocksdb.num.entries": varint(len(entries)), **(properties or {})}
    p_handle = put(block(sorted(props.items()), 1), False)
    meta = {b"rocksdb.properties": varint(p_handle[0]) + varint(p_handle[1]), **(extra_meta or {})}
    m_handle = put(block(sorted(meta.items()), 1), False)
    i_handle = put(index_block(partitions if partition_entries is not None else index), False)
    footer = bytes([checksum_type]) + varint(m_handle[0]) + varint(m_handle[1]) \
        + varint(i_handle[0]) + varint(i_handle[1])
    footer = footer.ljust(41, b"\0") + struct.pack("<I", 5) + struct.pack("<Q", MAGIC)
    return bytes(out + footer)
