"""Writing connector state back: a source split's row (as `connectors.py` decodes it) into the
bytes the connector's serializer writes, framed as `SimpleVersionedSerialization` does.

The inverse of the split layouts of `connector_layouts.py` (FileSource split v1) and
`kafka_layouts.py` (KafkaSource split v0), byte for byte: what `bootstrap --base` fixes need to
rewrite a source's position (a FileSource reader position, a Kafka split's starting offset).
A FileSource split's `path` is its URI text as decoded (`Path.toString`); it is split back
into Flink's `Path` fields as `new Path(String)` splits it (scheme, user info, host, port, and
the rest, `?` and `#` included, as the path: no query, no fragment), and the encoding is
checked to decode to the same text, else refused in one line. A `Path` made from a
`java.net.URI` with a query or fragment (rare) reads the same but re-encodes with them in its
path.
"""

from __future__ import annotations

import re
import struct

from ..errors import FlinkEncodeError
from .binary import Reader
from .binary_write import Writer
from . import connectors as C
from .connector_layouts import FILE_SPLIT_VERSION, flink_path
from .kafka_layouts import KAFKA_SPLIT_VERSION

_URI = re.compile(r"(?:(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*):)?(?://(?P<authority>[^/]*))?(?P<path>.*)", re.S)
_AUTHORITY = re.compile(r"(?:(?P<user>.*)@)?(?P<host>\[[^\]]*\]|[^:]*)(?::(?P<port>\d+))?", re.S)


def frame(version: int, payload: bytes) -> bytes:
    """`SimpleVersionedSerialization.writeVersionAndSerialize`: int version, int length, bytes."""
    return struct.pack(">ii", version, len(payload)) + payload


def _string_value(w: Writer, text: str) -> None:
    """Flink's `StringValue.writeString`: varint(UTF-16 units + 1), then a varint per unit."""
    units = struct.unpack(f"<{len(text.encode('utf-16-le')) // 2}H", text.encode("utf-16-le"))
    for n in (len(units) + 1, *units):
        while n >= 0x80:
            w.ubyte((n & 0x7F) | 0x80)
            n >>= 7
        w.ubyte(n)


def _nullable(w: Writer, text: str | None) -> None:
    w.bool(text is not None)
    if text is not None:
        _string_value(w, text)


def path_bytes(text: str | None) -> bytes:
    """Flink's `Path.serializeToDataOutputView` of the path whose `Path.toString` is *text*."""
    w = Writer()
    w.bool(text is not None)
    if text is not None:
        m = _URI.fullmatch(text)
        user = host = None
        port = -1
        if m.group("authority") is not None:
            a = _AUTHORITY.fullmatch(m.group("authority"))
            if a is None:
                raise FlinkEncodeError(f"path {text!r}: {m.group('authority')!r} is not a host and port")
            user, host = a.group("user"), a.group("host")
            port = int(a.group("port")) if a.group("port") else -1
        for part in (m.group("scheme"), user, host):
            _nullable(w, part)
        w.int(port)
        for part in (m.group("path") or None, None, None):  # as `new Path(String)`: no query, no fragment
            _nullable(w, part)
    data = w.getvalue()
    if flink_path(Reader(data, "path")) != text:
        raise FlinkEncodeError(f"path {text!r} cannot be written as a Flink Path (it does not read back the same)")
    return data


def file_split(row: dict) -> bytes:
    """A FileSource split (serializer version 1), framed: the inverse of `connector_layouts.file_split`."""
    w = Writer()
    w.utf(row["split_id"])
    w.bytes(path_bytes(row["path"]))
    for name in ("offset", "length", "file_modification_time", "file_size"):
        w.long(row[name])
    hosts = row.get("hostnames") or []
    w.int(len(hosts))
    for h in hosts:
        w.utf(h)
    has_position = row.get("reader_offset") is not None or row.get("reader_records_after_offset") is not None
    w.bool(has_position)
    if has_position:
        w.long(row["reader_offset"] if row["reader_offset"] is not None else -1)
        w.long(row.get("reader_records_after_offset") or 0)
    return frame(FILE_SPLIT_VERSION, w.getvalue())


def kafka_split(row: dict) -> bytes:
    """A KafkaSource split (serializer version 0), framed: UTF topic, int partition, long
    starting offset, long stopping offset."""
    w = Writer()
    w.utf(row["topic"])
    w.int(row["partition"])
    w.long(row["starting_offset"])
    w.long(row["stopping_offset"])
    return frame(KAFKA_SPLIT_VERSION, w.getvalue())


def layout_of(field_names: list[str]) -> str | None:
    """The connector layout whose ``value`` struct has exactly these fields (a column read
    from a connector state, maybe changed by a fix), or None."""
    return next((layout for layout, t in C.TYPES.items() if [f.name for f in t] == list(field_names)), None)


def element(layout: str, row: dict | None) -> bytes:
    """One operator state element (a framed split) of a *layout* row: a FileSource or KafkaSource
    split, or a ``(version, bytes)`` row written back as it was."""
    if row is None:
        raise FlinkEncodeError("a connector state's element is null")
    if layout == C.RAW:
        return frame(row["version"], row["bytes"])
    if layout == C.FILE_SPLIT and row["version"] == FILE_SPLIT_VERSION:
        return file_split(row)
    if layout == C.KAFKA_SPLIT and row["version"] == KAFKA_SPLIT_VERSION:
        return kafka_split(row)
    raise FlinkEncodeError(f"a {layout} of version {row['version']} cannot be written from its columns "
                           "(FileSource and KafkaSource splits can; keep other connector states as they are)")
