"""Source splits written back byte for byte: every FileSource split of the realworld fixtures
(readers' and the enumerator's pending ones) re-encodes to its bytes; a path that does not
read back the same, a null element or a layout that cannot be written is one error."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from statectl.statefmt.errors import FlinkEncodeError
from statectl.statefmt.flink import connector_encode as E, connector_layouts as L, connectors as C
from statectl.statefmt.flink.binary import Reader
from statectl.statefmt.flink.savepoint import open_flink_savepoint, raw_operator_elements

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "flink-realworld-dev"
NAMES = ("realworld-hashmap-canonical", "realworld-rocksdb-native")


def reader_elements(name: str) -> list[bytes]:
    op = open_flink_savepoint(str(FIXTURES / name / "savepoint")).operator("file-source")
    return [e for s in op.operator_splits for e in raw_operator_elements(s, "SourceReaderState")]


@pytest.mark.parametrize("name", NAMES)
def test_every_reader_split_re_encodes_to_its_bytes(name):
    elements = reader_elements(name)
    assert len(elements) == 2
    for element in elements:
        version, payload = L.frame(Reader(element, "element"))
        assert E.element(C.FILE_SPLIT, {"version": version, **L.file_split(payload)}) == element


@pytest.mark.parametrize("name", NAMES)
def test_every_pending_split_re_encodes_to_its_bytes(name):
    sp = open_flink_savepoint(str(FIXTURES / name / "savepoint"))
    state = next(op.coordinator.data for op in sp.metadata.operators if op.uid == "file-source")
    _, _, checkpoint = L.coordinator_checkpoint(state)
    r = Reader(checkpoint, "checkpoint")
    r.bytes(16)  # magic, split serializer version, counts
    splits = [r.bytes(int.from_bytes(r.bytes(4), "little")) for _ in L.pending_splits(checkpoint)[1]]
    assert splits and all(E.file_split(L.file_split(s))[8:] == s for s in splits)


def test_a_raw_row_is_written_back_as_it_was():
    assert E.element(C.RAW, {"version": 7, "bytes": b"\x01\x02"}) == bytes.fromhex("000000070000000201 02".replace(" ", ""))


def test_what_cannot_be_written_is_one_error():
    with pytest.raises(FlinkEncodeError, match="file sink bucket of version 3 cannot be written"):
        E.element(C.BUCKET, {"version": 3})
    with pytest.raises(FlinkEncodeError, match="null"):
        E.element(C.FILE_SPLIT, None)
    with pytest.raises(FlinkEncodeError, match="not a host and port"):
        E.path_bytes("hdfs://namenode:port/x")


def test_layout_of_a_column_is_known_by_its_fields():
    assert E.layout_of([f.name for f in C.TYPES[C.KAFKA_SPLIT]]) == C.KAFKA_SPLIT
    assert E.layout_of(["version", "topic"]) is None


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_any_path_text_reads_back_the_same_or_is_refused(text):
    try:
        data = E.path_bytes(text)
    except FlinkEncodeError:
        return
    assert L.flink_path(Reader(data, "path")) == text
