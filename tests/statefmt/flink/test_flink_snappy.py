"""The snappy framing of Flink's compressed snapshots (xerial's SnappyFramedOutputStream)."""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess

import cramjam
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from statectl.statefmt.errors import FlinkFormatError
from statectl.statefmt.flink.snappy import (
    STREAM_IDENTIFIER,
    decompress_framed,
    iter_chunks,
    masked_crc32c,
)

# --- an encoder written here, as xerial's SnappyFramedOutputStream frames (64 KiB blocks,
# stored uncompressed when compression saves less than 15%), with its own CRC32C ---

_TABLE = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _TABLE.append(_c)


def _crc32c(data: bytes) -> int:
    c = 0xFFFFFFFF
    for b in data:
        c = _TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def _masked(data: bytes) -> bytes:
    c = _crc32c(data)
    return ((((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF).to_bytes(4, "little")


def _chunk(kind: int, body: bytes) -> bytes:
    return bytes([kind]) + len(body).to_bytes(3, "little") + body


def _frame(data: bytes, block: int = 65536, min_ratio: float = 0.85) -> bytes:
    out = bytearray(STREAM_IDENTIFIER)
    for i in range(0, len(data), block):
        piece = data[i:i + block]
        compressed = bytes(cramjam.snappy.compress_raw(piece))
        if len(compressed) / len(piece) <= min_ratio:
            out += _chunk(0x00, _masked(piece) + compressed)
        else:
            out += _chunk(0x01, _masked(piece) + piece)
    return bytes(out)


def test_the_test_crc_is_crc32c_and_agrees_with_the_module():
    assert _crc32c(b"123456789") == 0xE3069283  # the standard check value
    for data in (b"", b"a", os.urandom(1000)):
        assert masked_crc32c(data).to_bytes(4, "little") == _masked(data)


# --- round trips ------------------------------------------------------------------------

SIZES = [0, 1, 100, 65535, 65536, 65537, 200_000]


@pytest.mark.parametrize("size", SIZES)
def test_round_trip_of_compressible_and_random_data(size):
    compressible = (b"key-group state, " * (size // 17 + 1))[:size]
    random = os.urandom(size)
    for data, kind in ((compressible, 0x00), (random, 0x01)):
        framed = _frame(data)
        assert decompress_framed(framed) == data
        chunks = list(iter_chunks(framed))
        assert len(chunks) == -(-size // 65536)
        if size >= 100:  # a compressible block is compressed, a random one stored
            assert framed[chunks[0][0]] == kind


@settings(max_examples=100)
@given(st.binary(max_size=3000), st.integers(1, 700))
def test_round_trip_property(data, block):
    assert decompress_framed(_frame(data, block=block)) == data


def test_cramjams_framed_compressor_is_the_same_format():
    data = b"".join(f"{i}:view:{i * 7 % 5000}".encode() for i in range(30000)) + os.urandom(70000)
    framed = bytes(cramjam.snappy.compress(data))
    assert framed.startswith(STREAM_IDENTIFIER)
    assert decompress_framed(framed) == data


def test_chunk_offsets_slices_and_starting_inside_a_stream():
    a, b = b"first key group " * 9000, b"second " * 5
    both = _frame(a, block=50000) + _frame(b)
    split = len(_frame(a, block=50000))
    assert decompress_framed(both) == a + b  # a repeated identifier is allowed
    assert decompress_framed(both, end=split) == a
    assert decompress_framed(both, start=split) == b
    offsets = [pos for pos, _ in iter_chunks(both, end=split)]
    assert offsets[0] == len(STREAM_IDENTIFIER) and len(offsets) == 3
    assert decompress_framed(both, start=offsets[1], end=split, identifier=False) == a[50000:]


def test_padding_and_skippable_chunks_are_skipped():
    data = b"payload " * 100
    body = _frame(data)[len(STREAM_IDENTIFIER):]
    framed = (STREAM_IDENTIFIER + _chunk(0xFE, b"\0" * 7) + _chunk(0x80, b"meta") + body
              + _chunk(0xFD, b"") + _chunk(0xFE, b""))
    assert decompress_framed(framed) == data


# --- errors: one line, with the offset ------------------------------------------------------

def _error(framed: bytes, **kwargs) -> str:
    with pytest.raises(FlinkFormatError) as e:
        decompress_framed(framed, **kwargs)
    return str(e.value)


def test_bad_identifier():
    assert _error(b"\x00\x00\x00\x00data", name="/sp/abc") == (
        "/sp/abc: snappy stream at byte 0: does not begin with the snappy stream identifier "
        "ff 06 00 00 73 4e 61 50 70 59 (not compressed, or another codec)")
    assert _error(b"", base_offset=10) == (
        "snappy data: snappy stream at byte 10: does not begin with the snappy stream identifier "
        "ff 06 00 00 73 4e 61 50 70 59 (not compressed, or another codec)")


def test_truncation():
    framed = _frame(b"abc" * 1000)
    assert _error(framed[:12], name="f", base_offset=4257) == (
        "f: snappy stream at byte 4267: truncated chunk header (2 of 4 bytes)")
    length = int.from_bytes(framed[11:14], "little")
    assert _error(framed[:-1], name="f") == (
        f"f: snappy stream at byte 10: truncated chunk: type 00 needs {length} bytes, {length - 1} left")
    assert _error(framed, name="f", end=len(framed) - 5) == (
        f"f: snappy stream at byte 10: truncated chunk: type 00 needs {length} bytes, {length - 5} left")


def test_crc_mismatch():
    framed = bytearray(_frame(b"some state"))
    framed[-1] ^= 0x01  # a stored byte of the (uncompressed) payload
    stored = int.from_bytes(framed[14:18], "little")
    actual = masked_crc32c(b"some stat" + bytes([ord("e") ^ 1]))
    assert _error(bytes(framed), name="f") == (
        f"f: snappy stream at byte 10: CRC mismatch (stored {stored:08x}, computed {actual:08x}): "
        "corrupt data")


def test_bad_chunks():
    ident = STREAM_IDENTIFIER
    assert _error(ident + _chunk(0x02, b"x")) == (
        "snappy data: snappy stream at byte 10: unknown unskippable chunk type 02")
    assert _error(ident + _chunk(0x7F, b"")) == (
        "snappy data: snappy stream at byte 10: unknown unskippable chunk type 7f")
    assert _error(ident + _chunk(0x00, b"abc")) == (
        "snappy data: snappy stream at byte 10: data chunk of 3 bytes has no room for its CRC")
    assert _error(ident + _chunk(0xFF, b"snappy")) == (
        "snappy data: snappy stream at byte 10: malformed stream identifier chunk")
    assert _error(ident + _chunk(0x01, _masked(b"") + b"\0" * 65537)) == (
        "snappy data: snappy stream at byte 10: uncompressed chunk of 65537 bytes exceeds 65536")
    big = b"\0" * 70000
    bomb = _chunk(0x00, _masked(big) + bytes(cramjam.snappy.compress_raw(big)))
    assert _error(ident + bomb) == (
        "snappy data: snappy stream at byte 10: compressed chunk claims 70000 bytes, more than 65536")
    garbage = _chunk(0x00, _masked(b"x") + b"\x05\xff\xff\xff")
    message = _error(ident + garbage)
    assert re.fullmatch(r"snappy data: snappy stream at byte 10: corrupt compressed chunk: .+", message)
    assert "\n" not in message


# --- against xerial's own SnappyFramedOutputStream (the jar PySpark ships), when a JDK is here ---

FRAME_FILES_JAVA = """
import java.io.*;
import java.nio.file.*;
import org.xerial.snappy.SnappyFramedOutputStream;

/** Frames each input file as Flink's snapshot compression does: args = in out [in out ...]. */
public class FrameFiles {
    public static void main(String[] args) throws IOException {
        for (int i = 0; i < args.length; i += 2) {
            byte[] data = Files.readAllBytes(Paths.get(args[i]));
            try (OutputStream out = new SnappyFramedOutputStream(
                    new FileOutputStream(args[i + 1]), 64 * 1024, 0.85)) {
                for (int pos = 0; pos < data.length; pos += 1000) {  // small writes, as serializers do
                    out.write(data, pos, Math.min(1000, data.length - pos));
                }
            }
        }
    }
}
"""


def _xerial_jar():
    import pyspark

    jars = glob.glob(os.path.join(os.path.dirname(pyspark.__file__), "jars", "snappy-java-*.jar"))
    return jars[0] if jars else None


def test_streams_written_by_xerial_decode(tmp_path):
    jar = _xerial_jar()
    if shutil.which("javac") is None or shutil.which("java") is None or jar is None:
        pytest.skip("needs a JDK and PySpark's snappy-java jar")
    (tmp_path / "FrameFiles.java").write_text(FRAME_FILES_JAVA)
    subprocess.run(["javac", "-cp", jar, "FrameFiles.java"], cwd=tmp_path, check=True, timeout=120)
    inputs = {
        "empty": b"",
        "random": os.urandom(200_000),
        "state": b"".join(f"{i}:view:{i * 7 % 5000},".encode() for i in range(40_000)),
    }
    args = []
    for name, data in inputs.items():
        (tmp_path / f"{name}.bin").write_bytes(data)
        args += [f"{name}.bin", f"{name}.sz"]
    subprocess.run(["java", "-cp", f"{jar}{os.pathsep}.", "FrameFiles", *args], cwd=tmp_path,
                   check=True, timeout=120)
    for name, data in inputs.items():
        framed = (tmp_path / f"{name}.sz").read_bytes()
        assert decompress_framed(framed, name=name) == data
        kinds = [framed[pos] for pos, _ in iter_chunks(framed)]
        assert kinds == {"empty": [], "random": [1] * 4, "state": [0] * 10}[name]
