"""RocksDB SST files (block-based table format) read directly, entries as columns.

An SST file ends with a footer (magic number, format version, checksum type,
and the handles -- offset, size -- of its metaindex and index blocks). The
metaindex names the meta blocks (the properties: column family, comparator,
index kind...; filters; range deletions); the index has one entry per data
block, a separator key and the block's handle. Every block is followed by a
5-byte trailer: its compression type and a checksum of block + type. A block
holds prefix-compressed entries (shared bytes, unshared bytes, value length,
key suffix, value) and ends with its restart offsets. Keys of data blocks are
*internal keys*: the user key, then 8 bytes (little-endian) of sequence number
<< 8 | value type.

:class:`SstFile` reads footer, properties and index (a few small reads), then
the data blocks of a key range at once: checksums checked, snappy blocks
decompressed, keys rebuilt by a compiled walk (:mod:`.sstkernels`). What the
files of Flink's RocksDB and ForSt snapshots contain is read (ForSt writes a
partitioned index: a top-level index of index partitions); anything else
(format version 6 and later, another compression, range deletions, hash
indexes, ingested files with a global sequence number, another comparator,
user timestamps) raises :class:`UnsupportedSstFeature`, which a caller may
answer by reading the database through RocksDB itself. A file that
contradicts its own structure raises :class:`SstFormatError`, naming the file.
"""

from __future__ import annotations

import bisect
import struct
from dataclasses import dataclass

import numpy as np

from ..errors import SstFormatError, UnsupportedSstFeature
from ..fs import Location
from ..varint import VarintError, read_varint

__all__ = ["SstFile", "Entries", "read_entries", "successor", "SstFormatError", "UnsupportedSstFeature"]

LEGACY_MAGIC = 0xDB4775248B80FB57
BLOCK_BASED_MAGIC = 0x88E241B785F4CFF7
LEGACY_FOOTER, FOOTER = 48, 53
TRAILER = 5
MAX_FORMAT_VERSION = 5
NO_COMPRESSION, SNAPPY = 0, 1
CHECKSUMS = {0: "none", 1: "crc32c", 2: "xxHash", 3: "xxHash64", 4: "XXH3"}
XXH3_LAST_BYTE_PRIME = 0x6B9083D9
BYTEWISE = b"leveldb.BytewiseComparator"
PROPERTIES = b"rocksdb.properties"
RANGE_DELETIONS = b"rocksdb.range_del"
INDEX_BINARY_SEARCH, INDEX_HASH_SEARCH, INDEX_TWO_LEVEL = 0, 1, 2


@dataclass
class Entries:
    """Internal entries as columns: user key *i* is ``keys[key_starts[i]:key_ends[i]]``,
    its value ``values[value_starts[i]:value_ends[i]]``."""
    keys: np.ndarray
    key_starts: np.ndarray
    key_ends: np.ndarray
    seqs: np.ndarray   # uint64
    kinds: np.ndarray  # uint8
    values: np.ndarray
    value_starts: np.ndarray
    value_ends: np.ndarray

    def __len__(self) -> int:
        return len(self.key_starts)


def successor(prefix: bytes) -> bytes | None:
    """The smallest key greater than every key starting with *prefix* (None: no bound)."""
    p = bytearray(prefix)
    while p and p[-1] == 0xFF:
        p.pop()
    if not p:
        return None
    p[-1] += 1
    return bytes(p)


def _handle(data: bytes, pos: int) -> tuple[int, int, int]:
    """(offset, size, next position) of a varint-encoded block handle."""
    try:
        offset, pos = read_varint(data, pos)
        size, pos = read_varint(data, pos)
    except VarintError:
        raise ValueError("block handle runs past its bytes") from None
    return offset, size, pos


def _varint_value(data: bytes) -> int:
    return _handle(data + b"\0", 0)[0]


class SstFile:
    """One SST file: footer, properties and index read on opening."""

    def __init__(self, location: "Location | str", name: str | None = None):
        self.location = Location.of(location)
        self.name = name or str(self.location)
        self._file = self.location.open_input_file()
        try:
            self.size = self._file.size()
            self._read_footer()
            meta = self._small_block(self.metaindex_handle, "metaindex")
            if RANGE_DELETIONS in meta:
                raise UnsupportedSstFeature(f"{self.name}: range deletions")
            if PROPERTIES not in meta:
                raise self._error("no properties block")
            props = self._small_block(_handle(meta[PROPERTIES], 0)[:2], "properties")
            self.properties = props
            self._check_properties(props)
            self._read_index()
        except BaseException:
            self._file.close()
            raise

    # --- errors and small helpers ---
    def _error(self, problem: str) -> SstFormatError:
        return SstFormatError(f"{self.name}: not a readable RocksDB table: {problem}")

    def close(self) -> None:
        self._file.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _read(self, offset: int, size: int) -> bytes:
        if offset < 0 or size < 0 or offset + size > self.size:
            raise self._error(f"a block at offset {offset} ({size} bytes) runs past the end "
                              f"of the file ({self.size} bytes)")
        return self._file.read_at(size, offset)

    # --- footer ---
    def _read_footer(self) -> None:
        if self.size < LEGACY_FOOTER:
            raise self._error(f"{self.size} bytes, shorter than a footer")
        tail = self._read(max(0, self.size - FOOTER), min(FOOTER, self.size))
        magic = struct.unpack_from("<Q", tail, len(tail) - 8)[0]
        if magic == LEGACY_MAGIC:
            footer, self.format_version, self.checksum = tail[-LEGACY_FOOTER:], 0, 1
            pos = 0
        elif magic == BLOCK_BASED_MAGIC and len(tail) == FOOTER:
            footer = tail
            self.format_version = struct.unpack_from("<I", footer, FOOTER - 12)[0]
            if self.format_version > MAX_FORMAT_VERSION:
                raise UnsupportedSstFeature(f"{self.name}: table format version {self.format_version}")
            self.checksum = footer[0]
            pos = 1
        else:
            raise self._error(f"unknown magic number {magic:#018x}")
        if self.checksum not in CHECKSUMS:
            raise UnsupportedSstFeature(f"{self.name}: checksum type {self.checksum}")
        try:
            m_off, m_size, pos = _handle(footer, pos)
            i_off, i_size, _ = _handle(footer, pos)
        except ValueError as e:
            raise self._error(f"footer: {e}") from None
        self.metaindex_handle, self.index_handle = (m_off, m_size), (i_off, i_size)

    # --- blocks ---
    def _verify(self, block: memoryview, kind: int, stored: int, offset: int) -> None:
        if self.checksum == 0:
            return
        if self.checksum == 4:
            import xxhash
            got = (xxhash.xxh3_64_intdigest(block) & 0xFFFFFFFF) ^ ((kind * XXH3_LAST_BYTE_PRIME) & 0xFFFFFFFF)
        elif self.checksum == 1:
            import google_crc32c
            crc = google_crc32c.extend(google_crc32c.value(bytes(block)), bytes([kind]))
            got = ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF
        else:
            import xxhash
            h = xxhash.xxh32() if self.checksum == 2 else xxhash.xxh64()
            h.update(block)
            h.update(bytes([kind]))
            got = h.intdigest() & 0xFFFFFFFF
        if got != stored:
            raise SstFormatError(f"{self.name}: block at offset {offset}: {CHECKSUMS[self.checksum]} "
                                 f"checksum {stored:#010x} stored, {got:#010x} computed")

    def _block(self, handle: tuple[int, int], what: str) -> bytes:
        """The contents of one block (checked, decompressed)."""
        offset, size = handle
        raw = self._read(offset, size + TRAILER)
        view = memoryview(raw)
        kind = raw[size]
        self._verify(view[:size], kind, struct.unpack_from("<I", raw, size + 1)[0], offset)
        if kind == NO_COMPRESSION:
            return raw[:size]
        if kind == SNAPPY:
            return bytes(self._snappy(view[:size], offset))
        raise UnsupportedSstFeature(f"{self.name}: {what} block at offset {offset} has compression type {kind}")

    def _snappy(self, block, offset: int):
        import cramjam
        try:
            return cramjam.snappy.decompress_raw(block)
        except Exception as e:  # cramjam raises its own error types
            raise self._error(f"snappy block at offset {offset}: {e}") from None

    def _small_block(self, handle: tuple[int, int], what: str) -> dict[bytes, bytes]:
        """A metaindex or properties block as a dict (their keys are plain strings)."""
        from .sstwalk import walk_blocks

        content = self._block(handle, what)
        arr = np.frombuffer(content, dtype=np.uint8)
        found, error = walk_blocks(arr, np.array([[0, len(arr)]], dtype=np.int64))
        if error is not None:
            raise self._error(f"{what} block at offset {handle[0]}: broken entry at byte {error[2]}")
        keys, k_off, v_start, v_end = found[:4]
        kb = keys.tobytes()
        return {kb[k_off[i]:k_off[i + 1]]: content[v_start[i]:v_end[i]] for i in range(len(v_start))}

    def _check_properties(self, props: dict[bytes, bytes]) -> None:
        comparator = props.get(b"rocksdb.comparator", BYTEWISE)
        if comparator != BYTEWISE:
            raise UnsupportedSstFeature(f"{self.name}: comparator {comparator.decode(errors='replace')}")
        for unsupported in (b"rocksdb.external_sst_file.global_seqno", b"rocksdb.external_sst_file.version"):
            if unsupported in props:
                raise UnsupportedSstFeature(f"{self.name}: an ingested (external) file")
        if props.get(b"rocksdb.timestamp_size", b"\0") not in (b"\0", b""):
            raise UnsupportedSstFeature(f"{self.name}: user-defined timestamps")
        if _varint_value(props.get(b"rocksdb.num.range-deletions", b"\0")):
            raise UnsupportedSstFeature(f"{self.name}: range deletions")
        index_type = props.get(b"rocksdb.block.based.table.index.type")
        index_type = struct.unpack("<I", index_type)[0] if index_type is not None and len(index_type) == 4 else 0
        if index_type not in (INDEX_BINARY_SEARCH, INDEX_HASH_SEARCH, INDEX_TWO_LEVEL):
            raise UnsupportedSstFeature(f"{self.name}: index type {index_type}")
        self.index_type = index_type
        self.delta_index = bool(_varint_value(props.get(b"rocksdb.index.value.is.delta.encoded", b"\0")))
        # separators are user keys, or internal keys (a user key, then 8 bytes of sequence and type)
        self._separator_tag = 0 if _varint_value(props.get(b"rocksdb.index.key.is.user.key", b"\0")) else 8
        self.column_family = props.get(b"rocksdb.column.family.name", b"").decode("utf-8", "replace")
        self.merge_operator = props.get(b"rocksdb.merge.operator", b"").decode("utf-8", "replace")
        self.num_entries = _varint_value(props.get(b"rocksdb.num.entries", b"\0"))

    def _index_block(self, handle: tuple[int, int], what: str):
        """(separator key bytes, their offsets, block offsets, block sizes) of one index block."""
        from .sstwalk import walk_blocks

        content = self._block(handle, what)
        arr = np.frombuffer(content, dtype=np.uint8)
        found, error = walk_blocks(arr, np.array([[0, len(arr)]], dtype=np.int64), handles=True,
                                   delta=self.delta_index)
        if error is not None:
            raise self._error(f"{what} block at offset {handle[0]}: broken entry at byte {error[2]}")
        keys, k_off, _, _, offsets, sizes, _ = found
        return keys, k_off, offsets, sizes

    def _read_index(self) -> None:
        keys, k_off, offsets, sizes = self._index_block(self.index_handle, "index")
        if self.index_type == INDEX_TWO_LEVEL:
            # A partitioned index (kTwoLevelIndexSearch, ForSt's default): the top level names
            # the index partitions in key order, each an index block of the data blocks.
            if len(offsets) and (offsets.min() < 0 or int((offsets + sizes).max()) + TRAILER > self.size):
                raise self._error("the top-level index points past the end of the file")
            parts = [self._index_block((int(o), int(n)), "index partition")
                     for o, n in zip(offsets.tolist(), sizes.tolist())]
            keys = np.concatenate([k[:o[-1]] for k, o, _, _ in parts]) if parts else np.zeros(0, np.uint8)
            starts = np.cumsum([0] + [int(o[-1]) for _, o, _, _ in parts])
            k_off = np.concatenate([np.zeros(1, np.int64)] + [o[1:].astype(np.int64) + base
                                                              for (_, o, _, _), base in zip(parts, starts)])
            offsets = np.concatenate([p[2] for p in parts]) if parts else offsets[:0]
            sizes = np.concatenate([p[3] for p in parts]) if parts else sizes[:0]
        self._index_keys, self._index_key_offsets = keys, k_off
        self.block_offsets, self.block_sizes = offsets, sizes
        if len(offsets) and (offsets.min() < 0 or int((offsets + sizes).max()) + TRAILER > self.size):
            raise self._error("the index points past the end of the file")

    # --- data ---
    @property
    def first_index_key(self) -> bytes:
        """The index's first separator (at least the file's first key's block's last key)."""
        k = self._index_key_offsets
        return self._index_keys[k[0]:k[1]].tobytes() if len(k) > 1 else b""

    def blocks_in_range(self, start: bytes | None, stop: bytes | None) -> np.ndarray:
        """Indexes of the data blocks that can hold user keys in ``[start, stop)``. The index's
        separators part the blocks: every key of block *i* is at most its separator and above
        block *i-1*'s. Block *i* is out when its separator's user key is below *start*, or when
        block *i-1*'s is at least *stop*; compared whole, as the comparator orders user keys (a
        separator may be shortened below the bounds' length: ``"user-0279"`` parts
        ``"user-027950"`` from ``"user-028"``). Separators are sorted: the blocks kept are one
        run, found by two binary searches (a key's blocks in a table of thousands)."""
        n = len(self.block_offsets)
        keys, k_off, tag = self._index_keys, self._index_key_offsets, self._separator_tag

        def separator(i: int) -> bytes:
            return keys[k_off[i]:max(k_off[i], k_off[i + 1] - tag)].tobytes()

        first = bisect.bisect_left(range(n), start, key=separator) if start is not None else 0
        end = min(n, bisect.bisect_left(range(n), stop, key=separator) + 1) if stop is not None else n
        return np.arange(first, max(first, end))

    def read_blocks(self, chosen: np.ndarray) -> list:
        """The contents of the chosen data blocks, checked and decompressed (one read
        request for all of them)."""
        if not len(chosen):
            return []
        offsets, sizes = self.block_offsets[chosen], self.block_sizes[chosen]
        first, last = int(offsets[0]), int(offsets[-1] + sizes[-1]) + TRAILER
        raw = self._read(first, last - first)
        view = memoryview(raw)
        parts = []
        for off, size in zip((offsets - first).tolist(), sizes.tolist()):
            kind = raw[off + size]
            block = view[off:off + size]
            self._verify(block, kind, struct.unpack_from("<I", raw, off + size + 1)[0], first + off)
            if kind == SNAPPY:
                block = self._snappy(block, first + off)
            elif kind != NO_COMPRESSION:
                raise UnsupportedSstFeature(
                    f"{self.name}: data block at offset {first + off} has compression type {kind}")
            parts.append(block)
        return parts

    def entries(self, start: bytes | None = None, stop: bytes | None = None) -> Entries:
        """The internal entries of the data blocks that can hold user keys in ``[start, stop)``
        (whole blocks: the caller drops the keys outside)."""
        return read_entries([self], [(start, stop)])[0]


def read_entries(files: list[SstFile], ranges: list[tuple[bytes | None, bytes | None]] = ((None, None),)
                 ) -> tuple[Entries, np.ndarray]:
    """The internal entries of the data blocks of *files* that can hold user keys in one of
    *ranges* ``[start, stop)``, file after file, in one buffer and one compiled walk; and where
    each file's entries begin (``runs[f]`` to ``runs[f+1]``)."""
    from .sstwalk import BAD_SHARED, HASH_INDEX, walk_blocks

    chosen = [np.unique(np.concatenate([f.blocks_in_range(a, b) for a, b in ranges])) for f in files]
    parts = [p for f, c in zip(files, chosen) for p in f.read_blocks(c)]
    lengths = np.fromiter(map(len, parts), np.int64, len(parts))
    ends = np.cumsum(lengths)
    bounds = np.column_stack((ends - lengths, ends))
    data = np.frombuffer(b"".join(parts), dtype=np.uint8)
    found, error = walk_blocks(data, bounds)
    if error is not None:
        code, b, _ = error
        owner = int(np.searchsorted(np.cumsum([len(c) for c in chosen]), b, side="right"))
        f, local = files[owner], b - sum(len(c) for c in chosen[:owner])
        offset = int(f.block_offsets[chosen[owner][local]])
        if code == HASH_INDEX:
            raise UnsupportedSstFeature(f"{f.name}: data block at offset {offset} has a hash index")
        problem = "shares more bytes than its previous key" if code == BAD_SHARED else "runs past its block"
        raise f._error(f"data block at offset {offset}: an entry {problem}")
    keys, k_off, v_start, v_end, _, _, block_firsts = found
    runs = block_firsts[np.cumsum([0] + [len(c) for c in chosen])]
    key_starts, key_ends = k_off[:-1], k_off[1:] - 8
    if len(key_starts) and (key_ends < key_starts).any():
        bad = int(np.searchsorted(runs, int(np.argmax(key_ends < key_starts)), side="right")) - 1
        raise files[bad]._error("a key shorter than its 8-byte sequence number and type")
    tags = np.lib.stride_tricks.sliding_window_view(keys, 8)[key_ends].copy().view("<u8").ravel() \
        if len(key_ends) else np.empty(0, np.uint64)
    entries = Entries(keys, key_starts, key_ends, tags >> np.uint64(8), (tags & np.uint64(0xFF)).astype(np.uint8),
                      data, v_start, v_end)
    return entries, runs
