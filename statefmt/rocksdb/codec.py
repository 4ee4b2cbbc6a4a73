"""The binary encoding of typed values, and the key layouts built from it.

Every logical type (`statectl.statefmt.types`) has one compact, self-delimiting
encoding, so that concatenated values parse back without separators. No
pickle: decoding only ever builds the plain values Arrow's ``to_pylist``
yields (int, float, str, bytes, date, datetime, Decimal, list, dict, tuples).

Integers (and dates, timestamps) are fixed-width big-endian with the sign bit
flipped, so their bytes sort like their values; this is what makes timer keys
iterate in timestamp order. `docs/FORMAT.md` §11 specifies the encoding.
"""

from __future__ import annotations

import datetime as dt
import struct
from decimal import Context, Decimal
from typing import Any, Callable

from ..errors import DataFileError, UsageError
from ..keygroups import timestamp_micros
from ..types import DataType, type_str
from ..varint import VarintError, read_varint
from ..vocabulary import TimerDomain

_INT_WIDTH = {"int8": 1, "int16": 2, "int32": 4, "int64": 8, "date32": 4}
_EPOCH_DATE = dt.date(1970, 1, 1)
_EPOCH = dt.datetime(1970, 1, 1)
_UTC = dt.timezone.utc
_DECIMAL_CONTEXT = Context(prec=40)

Encoder = Callable[[Any, bytearray], None]
Decoder = Callable[[bytes, int], tuple[Any, int]]


# --- varints and fixed-width integers ------------------------------------------------

def put_varint(n: int, out: bytearray) -> None:
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def get_varint(buf: bytes, pos: int) -> tuple[int, int]:
    try:
        return read_varint(buf, pos)
    except VarintError:
        raise DataFileError("corrupt state entry: truncated or overlong length") from None


def sortable_int(value: int, width: int) -> bytes:
    """*value* as *width* big-endian bytes with the sign bit flipped (memcmp order)."""
    bias = 1 << (8 * width - 1)
    if not -bias <= value < bias:
        raise UsageError(f"integer {value} does not fit in {8 * width} bits")
    return (value + bias).to_bytes(width, "big")


def read_sortable_int(buf: bytes, pos: int, width: int) -> tuple[int, int]:
    end = pos + width
    if end > len(buf):
        raise DataFileError("corrupt state entry: truncated integer")
    return int.from_bytes(buf[pos:end], "big") - (1 << (8 * width - 1)), end


# --- per-type codecs ------------------------------------------------------------------

def _int_codec(width: int) -> tuple[Encoder, Decoder]:
    def enc(v, out):
        if isinstance(v, bool) or not isinstance(v, int):
            raise UsageError(f"expected an integer, got {v!r}")
        out += sortable_int(v, width)

    def dec(buf, pos):
        return read_sortable_int(buf, pos, width)
    return enc, dec


def _bool_codec() -> tuple[Encoder, Decoder]:
    def enc(v, out):
        if not isinstance(v, bool):
            raise UsageError(f"expected a bool, got {v!r}")
        out.append(1 if v else 0)

    def dec(buf, pos):
        if pos >= len(buf) or buf[pos] > 1:
            raise DataFileError("corrupt state entry: bad bool")
        return buf[pos] == 1, pos + 1
    return enc, dec


def _float_codec(fmt: str) -> tuple[Encoder, Decoder]:
    size = struct.calcsize(fmt)

    def enc(v, out):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise UsageError(f"expected a float, got {v!r}")
        out += struct.pack(fmt, v)

    def dec(buf, pos):
        if pos + size > len(buf):
            raise DataFileError("corrupt state entry: truncated float")
        return struct.unpack_from(fmt, buf, pos)[0], pos + size
    return enc, dec


def _bytes_codec(text: bool) -> tuple[Encoder, Decoder]:
    def enc(v, out):
        if text:
            if not isinstance(v, str):
                raise UsageError(f"expected a string, got {v!r}")
            v = v.encode("utf-8")
        elif not isinstance(v, (bytes, bytearray, memoryview)):
            raise UsageError(f"expected bytes, got {v!r}")
        put_varint(len(v), out)
        out += v

    def dec(buf, pos):
        n, pos = get_varint(buf, pos)
        end = pos + n
        if end > len(buf):
            raise DataFileError("corrupt state entry: truncated string")
        raw = bytes(buf[pos:end])
        if text:
            try:
                return raw.decode("utf-8"), end
            except UnicodeDecodeError:
                raise DataFileError("corrupt state entry: string is not UTF-8") from None
        return raw, end
    return enc, dec


def _date_codec() -> tuple[Encoder, Decoder]:
    def enc(v, out):
        days = v if isinstance(v, int) and not isinstance(v, bool) else None
        if days is None:
            if not isinstance(v, dt.date) or isinstance(v, dt.datetime):
                raise UsageError(f"expected a date, got {v!r}")
            days = (v - _EPOCH_DATE).days
        out += sortable_int(days, 4)

    def dec(buf, pos):
        days, pos = read_sortable_int(buf, pos, 4)
        return _EPOCH_DATE + dt.timedelta(days=days), pos
    return enc, dec


def _timestamp_codec(tz) -> tuple[Encoder, Decoder]:
    def enc(v, out):
        if isinstance(v, bool) or not isinstance(v, (int, dt.datetime)):
            raise UsageError(f"expected a timestamp, got {v!r}")
        out += sortable_int(timestamp_micros(v), 8)

    def dec(buf, pos):
        micros, pos = read_sortable_int(buf, pos, 8)
        value = _EPOCH + dt.timedelta(microseconds=micros)
        return (value.replace(tzinfo=_UTC) if tz else value), pos
    return enc, dec


def _decimal_codec(precision: int, scale: int) -> tuple[Encoder, Decoder]:
    def enc(v, out):
        if not isinstance(v, (Decimal, int)) or isinstance(v, bool):
            raise UsageError(f"expected a Decimal, got {v!r}")
        scaled = Decimal(v).scaleb(scale, _DECIMAL_CONTEXT)
        unscaled = int(scaled)
        if scaled != unscaled or len(str(abs(unscaled))) > precision:
            raise UsageError(f"{v} does not fit decimal({precision}, {scale})")
        out += sortable_int(unscaled, 16)

    def dec(buf, pos):
        unscaled, pos = read_sortable_int(buf, pos, 16)
        return Decimal(unscaled).scaleb(-scale, _DECIMAL_CONTEXT), pos
    return enc, dec


def _nullable(enc: Encoder, dec: Decoder) -> tuple[Encoder, Decoder]:
    """One presence byte (0 null, 1 present) before the value."""
    def nenc(v, out):
        if v is None:
            out.append(0)
        else:
            out.append(1)
            enc(v, out)

    def ndec(buf, pos):
        if pos >= len(buf) or buf[pos] > 1:
            raise DataFileError("corrupt state entry: bad presence byte")
        if buf[pos] == 0:
            return None, pos + 1
        return dec(buf, pos + 1)
    return nenc, ndec


def _counted_codec(item_enc: Encoder, item_dec: Decoder, items_of: Callable[[Any], list]
                   ) -> tuple[Encoder, Decoder]:
    """A varint count, then each item (a list's elements, a map's entries)."""
    def enc(v, out):
        items = items_of(v)
        put_varint(len(items), out)
        for item in items:
            item_enc(item, out)

    def dec(buf, pos):
        n, pos = get_varint(buf, pos)
        items = []
        for _ in range(n):
            item, pos = item_dec(buf, pos)
            items.append(item)
        return items, pos
    return enc, dec


def _list_items(v) -> list | tuple:
    if not isinstance(v, (list, tuple)):
        raise UsageError(f"expected a list, got {v!r}")
    return v


def _list_codec(element: DataType) -> tuple[Encoder, Decoder]:
    return _counted_codec(*_nullable(*codec_for(element)), _list_items)


def map_pairs(v) -> list:
    """A map value as (key, value) pairs; accepts a dict or Arrow's list of pairs."""
    if isinstance(v, dict):
        return list(v.items())
    if isinstance(v, (list, tuple)):
        return [tuple(p) for p in v]
    raise UsageError(f"expected a map (dict or list of pairs), got {v!r}")


def _map_codec(key: DataType, value: DataType) -> tuple[Encoder, Decoder]:
    kenc, kdec = codec_for(key)
    venc, vdec = _nullable(*codec_for(value))

    def enc_entry(pair, out):
        k, x = pair
        if k is None:
            raise UsageError("map keys may not be null")
        kenc(k, out)
        venc(x, out)

    def dec_entry(buf, pos):
        k, pos = kdec(buf, pos)
        x, pos = vdec(buf, pos)
        return (k, x), pos
    return _counted_codec(enc_entry, dec_entry, map_pairs)


def _struct_codec(fields: list) -> tuple[Encoder, Decoder]:
    parts = [(f["name"], *_nullable(*codec_for(f["type"]))) for f in fields]

    def enc(v, out):
        if not isinstance(v, dict):
            raise UsageError(f"expected a struct (dict), got {v!r}")
        unknown = set(v) - {name for name, _, _ in parts}
        if unknown:
            raise UsageError(f"struct has no field(s) {', '.join(sorted(map(str, unknown)))}")
        for name, fenc, _ in parts:
            fenc(v.get(name), out)

    def dec(buf, pos):
        value = {}
        for name, _, fdec in parts:
            value[name], pos = fdec(buf, pos)
        return value, pos
    return enc, dec


def codec_for(t: DataType) -> tuple[Encoder, Decoder]:
    """The (encoder, decoder) pair of a non-null value of type *t*."""
    if isinstance(t, str):
        if t == "bool":
            return _bool_codec()
        if t == "date32":
            return _date_codec()
        if t in _INT_WIDTH:
            return _int_codec(_INT_WIDTH[t])
        if t == "float32":
            return _float_codec(">f")
        if t == "float64":
            return _float_codec(">d")
        if t in ("string", "binary"):
            return _bytes_codec(text=t == "string")
    else:
        (tag, arg), = t.items()
        if tag == "list":
            return _list_codec(arg)
        if tag == "map":
            return _map_codec(arg["key"], arg["value"])
        if tag == "struct":
            return _struct_codec(arg)
        if tag == "timestamp":
            return _timestamp_codec(arg["tz"])
        if tag == "decimal":
            return _decimal_codec(arg["precision"], arg["scale"])
    raise UsageError(f"no binary encoding for type {type_str(t)}")


class ValueCodec:
    """A whole value of one type <-> bytes (the value of a state entry)."""

    def __init__(self, t: DataType, nullable: bool = False):
        self.type = t
        self._enc, self._dec = _nullable(*codec_for(t)) if nullable else codec_for(t)

    def encode(self, value) -> bytes:
        out = bytearray()
        self._enc(value, out)
        return bytes(out)

    def encode_into(self, value, out: bytearray) -> None:
        self._enc(value, out)

    def decode(self, data: bytes):
        value, end = self._dec(data, 0)
        if end != len(data):
            raise DataFileError("corrupt state entry: trailing bytes")
        return value

    def decode_at(self, data: bytes, pos: int):
        return self._dec(data, pos)


# --- key layouts ----------------------------------------------------------------------

KEY_GROUP_BYTES = 2  # max parallelism <= 32768 fits an unsigned 16-bit prefix


def key_group_prefix(key_group: int) -> bytes:
    return key_group.to_bytes(KEY_GROUP_BYTES, "big")


def key_group_of(entry_key: bytes) -> int:
    return int.from_bytes(entry_key[:KEY_GROUP_BYTES], "big")


class KeyLayout:
    """Entry keys of keyed state: key group, key columns, then the namespace.

    ``kg(2 bytes, big-endian) ‖ key column 1 ‖ … ‖ key column n ‖ namespace``,
    the namespace with a presence byte (absent = the default namespace). The
    layout is prefix-free, so a map state's entries (this key followed by the
    encoded map key) of one (key, namespace) are exactly those under its prefix.
    """

    def __init__(self, key_types: list[DataType], namespace_type: DataType | None):
        self.key_types = list(key_types)
        self._keys = [codec_for(t) for t in self.key_types]
        self.namespace_type = namespace_type
        ns = codec_for(namespace_type) if namespace_type is not None else _no_namespace()
        self._ns = _nullable(*ns)

    def key_bytes(self, key: tuple) -> bytes:
        """The encoded key columns (no key group, no namespace)."""
        out = bytearray()
        for (enc, _), v in zip(self._keys, key):
            if v is None:
                raise UsageError("key columns may not be null")
            enc(v, out)
        return bytes(out)

    def namespace_bytes(self, namespace) -> bytes:
        out = bytearray()
        self._ns[0](namespace, out)
        return bytes(out)

    def decode_key(self, buf: bytes, pos: int) -> tuple[tuple, int]:
        values = []
        for _, dec in self._keys:
            v, pos = dec(buf, pos)
            values.append(v)
        return tuple(values), pos

    def decode_namespace(self, buf: bytes, pos: int):
        return self._ns[1](buf, pos)

    def split(self, entry_key: bytes) -> tuple[int, tuple, Any, int]:
        """(key group, key, namespace, end of the (key, namespace) part)."""
        key, pos = self.decode_key(entry_key, KEY_GROUP_BYTES)
        ns, pos = self.decode_namespace(entry_key, pos)
        return key_group_of(entry_key), key, ns, pos


def _no_namespace() -> tuple[Encoder, Decoder]:
    def enc(v, out):
        raise UsageError("this operator's keyed state has no namespace type; use no namespace")

    def dec(buf, pos):
        raise DataFileError("corrupt state entry: a namespace where none is declared")
    return enc, dec


# Timers: kg ‖ domain ‖ timestamp (sortable int64) ‖ key ‖ namespace; no value.
_DOMAINS = tuple(TimerDomain)  # a timer key's domain byte is the index


def timer_prefix(key_group: int, domain: str) -> bytes:
    return key_group_prefix(key_group) + bytes([_DOMAINS.index(domain)])


def timer_key(key_group: int, domain: str, timestamp: int, key_ns: bytes) -> bytes:
    """*key_ns* is ``key_bytes ‖ namespace_bytes`` of :class:`KeyLayout`."""
    return timer_prefix(key_group, domain) + sortable_int(timestamp, 8) + key_ns


def split_timer(layout: KeyLayout, entry: bytes) -> tuple[int, str, int, tuple, Any]:
    """(key group, domain, timestamp, key, namespace) of a timer entry key."""
    kg = key_group_of(entry)
    d = entry[KEY_GROUP_BYTES]
    if d >= len(_DOMAINS):
        raise DataFileError("corrupt timer entry: unknown domain")
    ts, pos = read_sortable_int(entry, KEY_GROUP_BYTES + 1, 8)
    key, pos = layout.decode_key(entry, pos)
    ns, pos = layout.decode_namespace(entry, pos)
    if pos != len(entry):
        raise DataFileError("corrupt timer entry: trailing bytes")
    return kg, _DOMAINS[d], ts, key, ns
