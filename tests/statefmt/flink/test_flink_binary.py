"""The big-endian reader: Java's modified UTF-8, Flink's StringValue, bounds."""

import struct

import pytest
from hypothesis import given, strategies as st

from statectl.statefmt.errors import FlinkFormatError
from statectl.statefmt.flink.binary import Reader


def java_units(text: str) -> list[int]:
    raw = text.encode("utf-16-le", "surrogatepass")
    return [int.from_bytes(raw[i:i + 2], "little") for i in range(0, len(raw), 2)]


def write_utf(text: str) -> bytes:
    """DataOutputStream.writeUTF, written independently of the reader."""
    out = bytearray()
    for u in java_units(text):
        if 0 < u < 0x80:
            out.append(u)
        elif u < 0x800:
            out += bytes([0xC0 | u >> 6, 0x80 | u & 0x3F])
        else:
            out += bytes([0xE0 | u >> 12, 0x80 | (u >> 6) & 0x3F, 0x80 | u & 0x3F])
    return struct.pack(">H", len(out)) + bytes(out)


def varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    return bytes(out + bytes([n]))


def write_string_value(text: str | None) -> bytes:
    if text is None:
        return b"\x00"
    units = java_units(text)
    return varint(len(units) + 1) + b"".join(varint(u) for u in units)


texts = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40)


@given(texts, texts)
def test_read_utf_round_trips(a, b):
    r = Reader(write_utf(a) + write_utf(b), "t")
    assert r.utf() == a
    assert r.utf() == b
    assert r.at_end()


@given(st.one_of(st.none(), texts), texts)
def test_string_value_round_trips(a, b):
    r = Reader(write_string_value(a) + write_string_value(b), "t")
    assert r.string_value() == a
    assert r.string_value() == b
    assert r.at_end()


def test_string_value_known_bytes():
    # 😀 is two UTF-16 surrogates, three varint bytes each; é two bytes.
    data = bytes.fromhex("04") + b"a" + bytes.fromhex("e901") + bytes.fromhex("bdb003")
    assert Reader(data, "t").string_value() == "aé\ud83d"  # a lone high surrogate stays
    assert Reader(write_string_value("x😀"), "t").string_value() == "x😀"


def test_nul_in_modified_utf8():
    assert Reader(bytes.fromhex("0003") + b"a\xc0\x80", "t").utf() == "a\x00"


def test_scalars_big_endian():
    data = struct.pack(">iqhdf?b", -2, 2**40, -3, 1.5, 0.25, True, -1)
    r = Reader(data, "t")
    assert (r.int(), r.long(), r.short(), r.double(), r.float(), r.bool(), r.byte()) == \
        (-2, 2**40, -3, 1.5, 0.25, True, -1)


def test_running_off_the_end_names_source_and_offset():
    r = Reader(b"\x00\x00\x00\x01\x00\x00", "some/file", base=100)
    r.int()
    with pytest.raises(FlinkFormatError) as e:
        r.long()
    assert str(e.value) == "some/file: ends early: 8 more byte(s) needed, 2 left at offset 104"


def test_bad_modified_utf8():
    with pytest.raises(FlinkFormatError) as e:
        Reader(bytes.fromhex("0002") + b"\xff\xfe", "m").utf()
    assert str(e.value) == "m: bad modified UTF-8 at offset 2"
