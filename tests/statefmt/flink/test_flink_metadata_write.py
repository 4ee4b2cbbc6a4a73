"""`encode_metadata` is the exact inverse of `parse_metadata`: every `_metadata` Flink wrote (the dev
fixtures, their v3 to v5 variants, their handles rewritten as absolute files and segments, every
savepoint and retained checkpoint the suite's Flink job makes in 1.17, 1.20 and 2.3) comes back
byte for byte; and any handle encodes and parses back to itself."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from statectl.statefmt.errors import FlinkFormatError
from statectl.statefmt.flink import handles as H
from statectl.statefmt.flink.binary import Reader
from statectl.statefmt.flink.binary_write import Writer, encode_modified_utf8
from statectl.statefmt.flink.metadata import FlinkMetadata, parse_metadata
from statectl.statefmt.flink.metadata_write import (encode_keyed_handle, encode_metadata,
                                                    encode_operator_handle, encode_stream_handle,
                                                    operator_id_bytes)
from support.flink_shapes import COMPRESSED, HASHMAP_CANONICAL, INCREMENTAL, METADATA_VERSION, SHAPES
from support.flink_metadata_edits import absolute, rewrite, segment
from support.flink_metadata_edits import older

FIXTURES = Path(__file__).parents[2] / "fixtures" / "flink-dev"
FIXTURE_NAMES = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir())


def assert_round_trip(data: bytes) -> FlinkMetadata:
    meta = parse_metadata(data)
    assert encode_metadata(meta) == data
    return meta


@pytest.mark.parametrize("fixture", FIXTURE_NAMES)
@pytest.mark.parametrize("version", [3, 4, 5, 6])
def test_dev_fixtures_round_trip(fixture, version):
    data = (FIXTURES / fixture / "savepoint" / "_metadata").read_bytes()
    meta = assert_round_trip(data if version == 6 else older(data, version))
    assert meta.version == version
    if version == 3:
        assert meta.trailer == b""
    else:
        assert meta.trailer.startswith(b"\xac\xed\x00\x05") and len(meta.trailer) in (742, 745)


@pytest.mark.parametrize("make_handle", [absolute, segment], ids=["absolute", "segment"])
def test_rewritten_handles_round_trip(tmp_path, make_handle):
    sp = rewrite("long-rocksdb-native", tmp_path, make_handle)
    meta = assert_round_trip((sp / "_metadata").read_bytes())
    kind = H.AbsoluteFile if make_handle is absolute else H.SegmentFile
    files = [f for op in meta.operators for s in op.subtasks if isinstance(s.managed_keyed, H.IncrementalRocksDB)
             for _, f in s.managed_keyed.files]
    assert files and all(isinstance(f, kind) for f in files)


def test_master_states_and_coordinator_round_trip():
    """What the fixtures leave empty (master states, a coordinator's state) is kept too."""
    data = (FIXTURES / "long-hashmap-canonical" / "savepoint" / "_metadata").read_bytes()
    meta = parse_metadata(data)
    op = meta.operators[0]
    coordinator = H.InlineStream("coordinator", b"\x01\x02\x03")
    changed = FlinkMetadata(meta.version, meta.checkpoint_id,
                            (type(op)(**{**op.__dict__, "coordinator": coordinator}), *meta.operators[1:]),
                            (b"master-1", b""), meta.trailer)
    again = parse_metadata(encode_metadata(changed))
    assert again == changed
    assert again.master_states == (b"master-1", b"")
    assert again.operators[0].coordinator == coordinator


@pytest.fixture(scope="module")
def job_metadata_files(flink_snapshots):
    """Every `_metadata` of every snapshot the suite's Flink job makes (all chk-N of a retained one)."""
    files = []
    for version in sorted(METADATA_VERSION):
        shapes = [*SHAPES.values(), HASHMAP_CANONICAL, INCREMENTAL, COMPRESSED]
        for snap in flink_snapshots(version, shapes):
            if snap.path.name.startswith("chk-"):
                files += [(version, p) for p in sorted(snap.path.parent.glob("chk-*/_metadata"))]
            else:
                files.append((version, snap.metadata))
    return files


def test_job_snapshots_round_trip(job_metadata_files):
    versions = set()
    for version, path in job_metadata_files:
        meta = assert_round_trip(path.read_bytes())
        versions.add((version, meta.version))
    assert versions == {(v, m) for v, m in METADATA_VERSION.items()}
    assert len(job_metadata_files) >= 3 * 4 + 2


def test_modified_utf8():
    assert encode_modified_utf8("a\x00b") == b"a\xc0\x80b"
    assert encode_modified_utf8("€") == "€".encode()
    assert encode_modified_utf8("😀") == b"\xed\xa0\xbd\xed\xb8\x80"  # two 3-byte surrogates
    w = Writer()
    with pytest.raises(FlinkFormatError, match="cannot be written"):
        w.utf("é" * 40000)


def test_operator_id_bytes():
    assert operator_id_bytes("f362c87ffabe89c8a91fa7d0a523ba6c").hex() == "f362c87ffabe89c8a91fa7d0a523ba6c"
    with pytest.raises(FlinkFormatError, match="not an operator id"):
        operator_id_bytes("src")


# --- any handle -> encode -> parse -> equal ---------------------------------------------------

texts = st.text(max_size=12)
longs = st.integers(-(2**63), 2**63 - 1)
ints = st.integers(-(2**31), 2**31 - 1)
stream_handles = st.one_of(
    st.builds(H.InlineStream, texts, st.binary(max_size=20)),
    st.builds(H.RelativeFile, texts, longs),
    st.builds(H.AbsoluteFile, texts, longs),
    st.builds(H.SegmentFile, texts, longs, longs, ints, texts, st.booleans()),
)
offsets = st.lists(longs, max_size=6).map(tuple)
named = st.lists(st.tuples(texts, stream_handles), max_size=3).map(tuple)
keyed_handles = st.one_of(
    st.builds(H.KeyGroupsStream, st.just("canonical"), ints, offsets, stream_handles, st.none()),
    st.builds(H.KeyGroupsStream, st.just("native"), ints, offsets, stream_handles, st.none() | texts),
    st.builds(lambda cid, bid, start, count, meta, shared, private, v2, size, hid: H.IncrementalRocksDB(
        cid, bid, start, count, meta, shared, private, size if v2 else None, hid if v2 else None),
        longs, texts, ints, ints, stream_handles, named, named, st.booleans(), longs, texts),
)
operator_handles = st.builds(
    H.OperatorStream,
    st.lists(st.builds(H.OperatorStateInfo, texts, st.sampled_from(H.DISTRIBUTION_MODES), offsets),
             max_size=3).map(tuple),
    stream_handles | st.none(),
    st.none() | st.builds(H.SegmentDirs, texts, texts, st.booleans()),
)


def _round_trip(encode, read, handle):
    w = Writer()
    encode(w, handle)
    data = w.getvalue()
    r = Reader(data, "handle")
    assert read(r, "test") == handle
    assert r.at_end()


@settings(max_examples=300)
@given(stream_handles | st.none())
def test_stream_handles(handle):
    _round_trip(encode_stream_handle, H.read_stream_handle, handle)


@settings(max_examples=300)
@given(keyed_handles | st.none())
def test_keyed_handles(handle):
    _round_trip(encode_keyed_handle, H.read_keyed_handle, handle)


@settings(max_examples=200)
@given(operator_handles | st.none())
def test_operator_handles(handle):
    _round_trip(encode_operator_handle, H.read_operator_handle, handle)


def test_null_handles_are_one_zero_byte():
    for encode in (encode_stream_handle, encode_keyed_handle, encode_operator_handle):
        w = Writer()
        encode(w, None)
        assert w.getvalue() == b"\x00"
    assert struct.unpack(">i", encode_metadata(FlinkMetadata(6, 7, ()))[4:8]) == (6,)
