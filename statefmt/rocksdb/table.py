"""One keyed state's entries in one RocksDB column family (docs/FORMAT.md §11, §12).

Raw byte keys ``key group ‖ key ‖ namespace`` (a map state appends the
encoded map key), values in the binary encoding of :mod:`.codec`. A list is
stored as its elements' encodings concatenated, so appending is a read and a
write of bytes, never a decode. The column family may be a live database's
(the RocksDB backend), a snapshot's (reading) or anything with ``put`` (an
SST file being built).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from ..model import KeyedStateDescriptor
from ..vocabulary import StateKind
from .codec import KeyLayout, ValueCodec, map_pairs
from .sstread import successor

if TYPE_CHECKING:
    from rocksdict import Rdict


_PREFIX_END = object()


def iter_prefix(cf: Rdict, prefix: bytes, stop=_PREFIX_END) -> Iterator[tuple[bytes, bytes]]:
    """Entries with keys in ``[prefix, stop)``; *stop* defaults to the end of *prefix*,
    None means no bound."""
    stop = successor(prefix) if stop is _PREFIX_END else stop
    it = cf.iter()
    it.seek(prefix)
    while it.valid():
        k = it.key()
        if stop is not None and k >= stop:
            break
        yield k, it.value()
        it.next()


class RocksTable:
    def __init__(self, cf: Rdict, descriptor: KeyedStateDescriptor, layout: KeyLayout):
        self.cf = cf
        self.descriptor = descriptor
        self.layout = layout
        kind = descriptor.kind
        self._codec = ValueCodec(descriptor.value_type, nullable=StateKind(kind).is_collection)
        if kind == StateKind.MAP:
            self._user_key = ValueCodec(descriptor.user_key_type)

    # value, reducing, aggregating and list
    def get(self, kns: bytes):
        raw = self.cf.get(kns)
        if raw is None:
            return None
        return self._decode_list(raw) if self.descriptor.kind == StateKind.LIST else self._codec.decode(raw)

    def _decode_list(self, raw: bytes) -> list:
        out, pos = [], 0
        while pos < len(raw):
            v, pos = self._codec.decode_at(raw, pos)
            out.append(v)
        return out

    def _encode(self, value) -> bytes:
        if self.descriptor.kind != StateKind.LIST:
            return self._codec.encode(value)
        out = bytearray()
        for v in value:
            self._codec.encode_into(v, out)
        return bytes(out)

    def put(self, kns: bytes, value) -> None:
        if self.descriptor.kind == StateKind.MAP:
            self.delete(kns)
            for k, v in map_pairs(value):
                self.map_put(kns, k, v)
            return
        self.cf.put(kns, self._encode(value))

    def delete(self, kns: bytes) -> None:
        if self.descriptor.kind == StateKind.MAP:
            self.cf.delete_range(kns, successor(kns))
        else:
            self.cf.delete(kns)

    def append(self, kns: bytes, values: list) -> None:
        raw = self.cf.get(kns) or b""
        self.cf.put(kns, raw + self._encode(values))

    # map state: one entry per map key
    def map_get(self, kns: bytes, user_key):
        raw = self.cf.get(kns + self._user_key.encode(user_key))
        return None if raw is None else self._codec.decode(raw)

    def map_contains(self, kns: bytes, user_key) -> bool:
        return self.cf.get(kns + self._user_key.encode(user_key)) is not None

    def map_put(self, kns: bytes, user_key, value) -> None:
        self.cf.put(kns + self._user_key.encode(user_key), self._codec.encode(value))

    def map_remove(self, kns: bytes, user_key) -> None:
        self.cf.delete(kns + self._user_key.encode(user_key))

    def map_items(self, kns: bytes) -> list[tuple]:
        n = len(kns)
        return [(self._user_key.decode(k[n:]), self._codec.decode(v))
                for k, v in iter_prefix(self.cf, kns)]

    def load(self, kns: bytes, value) -> None:
        if self.descriptor.kind == StateKind.MAP:
            for k, v in map_pairs(value):
                self.map_put(kns, k, v)
        else:
            self.cf.put(kns, self._encode(value))

    def scan(self, first_group: int = 0, last_group: int = 0xFFFF) -> Iterator[tuple[bytes, object]]:
        """(kns, value) in byte order; a map's value is its (key, value) pairs."""
        entries = iter_prefix(self.cf, first_group.to_bytes(2, "big"),
                              successor(last_group.to_bytes(2, "big")))
        if self.descriptor.kind != StateKind.MAP:
            decode = self._decode_list if self.descriptor.kind == StateKind.LIST else self._codec.decode
            for k, v in entries:
                yield k, decode(v)
            return
        current, pairs = None, []
        for k, v in entries:
            end = self.layout.split(k)[3]
            kns = k[:end]
            if kns != current:
                if pairs:
                    yield current, pairs
                current, pairs = kns, []
            pairs.append((self._user_key.decode(k[end:]), self._codec.decode(v)))
        if pairs:
            yield current, pairs
