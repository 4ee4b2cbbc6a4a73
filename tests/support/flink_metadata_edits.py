"""Flink savepoints changed on purpose, for the tests of what statectl makes of them: a
`_metadata` made older (v3 to v5 from v6), edited in place, its stream files moved behind
absolute or file-merging (segment) handles, its keyed streams compressed with snappy.
The dev fixture `long-hashmap-canonical` is the usual base (PROC_STREAM, KEYED_HANDLE_AT)."""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import cramjam

from statectl.statefmt.flink.handles import RelativeFile
from statectl.statefmt.flink.metadata import parse_metadata

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "flink-dev"


TRAILER_START = b"\xac\xed\x00\x05"  # Java serialization


def utf(s: str) -> bytes:
    b = s.encode()
    return struct.pack(">H", len(b)) + b


def older(data: bytes, version: int) -> bytes:
    v6 = parse_metadata(data)
    out = data[:4] + struct.pack(">i", version) + data[8:]
    if version <= 4:
        for op in v6.operators:
            record = utf(op.name or "") + utf(op.uid or "") + bytes.fromhex(op.operator_id)
            assert out.count(record) == 1
            out = out.replace(record, bytes.fromhex(op.operator_id))
    if version == 3:
        out = out[:out.rindex(TRAILER_START)]
    return out


PROC_STREAM = "bc780fd0-df7b-44c3-82d9-5de05e45083a"  # lk-proc subtask 0, 17835 bytes


KEYED_HANDLE_AT = 0xCA  # lk-proc subtask 0's keyed handle type byte in _metadata


def edit_metadata(sp: Path, at: int, new: bytes) -> None:
    data = bytearray((sp / "_metadata").read_bytes())
    data[at:at + len(new)] = new
    (sp / "_metadata").write_bytes(bytes(data))


def rewrite(fixture: str, tmp: Path, make_handle) -> Path:
    """Copy *fixture*, move every stream file into tmp/shared and reference it with *make_handle*."""
    sp = tmp / "chk-1"  # a retained checkpoint: its files may lie in the job's shared/
    shutil.copytree(FIXTURES / fixture / "savepoint", sp)
    shared = tmp / "shared"
    shared.mkdir()
    meta = (sp / "_metadata").read_bytes()
    for f in sorted(sp.iterdir()):
        if f.name == "_metadata":
            continue
        old = relative_handle(f.name, f.stat().st_size)
        assert old in meta
        meta = meta.replace(old, make_handle(f, shared))
    (sp / "_metadata").write_bytes(meta)
    return sp


def absolute(f: Path, shared: Path) -> bytes:
    target = shared / f.name
    f.rename(target)
    return b"\x02" + struct.pack(">q", target.stat().st_size) + utf(f"file:{target}")


def segment(f: Path, shared: Path) -> bytes:
    merged = shared / "merged"
    data = f.read_bytes()
    with open(merged, "ab") as out:
        start = out.tell() + 7
        out.write(b"\xee" * 7 + data)
    f.unlink()
    return b"\x0f" + struct.pack(">qqi", start, len(data), 0) + utf(str(merged)) + utf(f"id-{f.name}")


def compress_keyed(sp_dir: Path, meta: bytes, handle) -> bytes:
    stream: RelativeFile = handle.stream
    data = (sp_dir / stream.relative_path).read_bytes()
    offsets = list(handle.offsets)
    present = [o for o in offsets if o]
    header_len = present[0]
    out = bytearray(data[:header_len])
    out[4] = 1  # usingKeyGroupCompression
    new_offsets = []
    ends = present[1:] + [len(data)]
    by_start = dict(zip(present, ends))
    for o in offsets:
        if not o:
            new_offsets.append(0)
            continue
        new_offsets.append(len(out))
        out += framed(data[o:by_start[o]])
    (sp_dir / stream.relative_path).write_bytes(bytes(out))
    name = stream.relative_path.encode()
    meta = replace(meta, pack(offsets), pack(new_offsets))
    return replace(meta, name + struct.pack(">q", len(data)), name + struct.pack(">q", len(out)))


def relative_handle(name: str, size: int) -> bytes:
    return b"\x06" + utf(name) + struct.pack(">q", size)


def framed(data: bytes) -> bytes:
    return bytes(cramjam.snappy.compress(data))


def pack(offsets) -> bytes:
    return b"".join(struct.pack(">q", o) for o in offsets)


def replace(meta: bytes, old: bytes, new: bytes) -> bytes:
    assert old in meta
    return meta.replace(old, new)


def with_coordinator(src: Path, dst: Path, uid: str, data: bytes | None) -> Path:
    """A copy of the savepoint folder *src* at *dst* whose operator *uid* holds *data* as its
    coordinator state (inline in `_metadata`; None: no coordinator state)."""
    import dataclasses

    from statectl.statefmt.flink.handles import InlineStream
    from statectl.statefmt.flink.metadata_write import encode_metadata

    shutil.copytree(src, dst)
    meta = parse_metadata((dst / "_metadata").read_bytes())
    state = None if data is None else InlineStream("coordinator", data)
    ops = tuple(dataclasses.replace(op, coordinator=state) if op.uid == uid else op for op in meta.operators)
    (dst / "_metadata").write_bytes(encode_metadata(dataclasses.replace(meta, operators=ops)))
    return dst
