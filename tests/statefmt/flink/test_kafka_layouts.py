"""KafkaSource state against bytes made by Java stand-ins of the connector's serializers
(`support.kafka_standin`: no broker or connector jar offline): reader splits and each
enumerator state version decode to what the stand-ins were told to write."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import statectl
from statectl.statefmt.flink import connector_layouts as L, connectors as C
from statectl.statefmt.flink.kafka_layouts import NO_STOPPING_OFFSET, kafka_enumerator, kafka_split
from support.flink_metadata_edits import with_coordinator
from support.kafka_standin import standin_bytes

pytestmark = pytest.mark.slow  # compiles and runs the stand-ins once (cached)

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "flink-realworld-dev" / "realworld-hashmap-canonical"
A = {"topic": "payments.events", "partition": 2, "starting_offset": 4711, "stopping_offset": NO_STOPPING_OFFSET}
B = {"topic": "zahlungen-ü€", "partition": 0, "starting_offset": -2, "stopping_offset": 1000}
NO_OFFSETS = {"starting_offset": None, "stopping_offset": None}


@pytest.fixture(scope="module")
def java() -> dict[str, bytes]:
    return standin_bytes()


def test_reader_splits_are_a_kafka_state(java):
    elements = [java["split-a"], java["split-b"]]
    assert C.classify("SourceReaderState", elements, "state") == C.KAFKA_SPLIT
    got = C.table(C.KAFKA_SPLIT, 1, elements, "state").to_pylist()
    assert got == [{"subtask": 1, "value": {"version": 0, **A}}, {"subtask": 1, "value": {"version": 0, **B}}]


def test_enumerator_v3_keeps_offsets_and_status(java):
    assert kafka_enumerator(3, java["enum-v3"]) == [
        {**A, "assignment_status": "ASSIGNED", "subtask": None, "initial_discovery_finished": True},
        {**B, "assignment_status": "UNASSIGNED", "subtask": None, "initial_discovery_finished": True}]


def test_enumerator_v2_and_v1_keep_partitions_only(java):
    part = lambda s: {"topic": s["topic"], "partition": s["partition"], **NO_OFFSETS}  # noqa: E731
    assert kafka_enumerator(2, java["enum-v2"]) == [
        {**part(A), "assignment_status": "UNASSIGNED", "subtask": None, "initial_discovery_finished": False},
        {**part(B), "assignment_status": "ASSIGNED", "subtask": None, "initial_discovery_finished": False}]
    assert kafka_enumerator(1, java["enum-v1"]) == [
        {**part(s), "assignment_status": "ASSIGNED", "subtask": None, "initial_discovery_finished": True}
        for s in (A, B)]


def test_enumerator_v0_gives_each_subtasks_splits(java):
    got = kafka_enumerator(0, java["enum-v0"])
    assert [(r["subtask"], r["topic"], r["starting_offset"]) for r in got] == \
        [(0, A["topic"], 4711), (1, B["topic"], -2)]


def test_savepoint_coordinator_of_a_kafka_source_reads_as_its_partitions(java, tmp_path):
    data = (1).to_bytes(4, "big") + (3).to_bytes(4, "big") + len(java["enum-v3"]).to_bytes(4, "big") + java["enum-v3"]
    path = with_coordinator(FIXTURE / "savepoint", tmp_path / "sp", "file-source", data)
    rows = [r["value"] for r in statectl.open_savepoint(str(path)).operator_state("file-source", "coordinator")
            .to_pylist()]
    assert [(r["version"], r["topic"], r["starting_offset"], r["assignment_status"]) for r in rows] == \
        [(3, A["topic"], 4711, "ASSIGNED"), (3, B["topic"], -2, "UNASSIGNED")]


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_truncated_or_garbled_kafka_bytes_are_a_mismatch(java, data):
    name = data.draw(st.sampled_from(sorted(java)))
    parse = {"split": kafka_split, "file-": L.file_split}.get(name[:5]) or \
        (lambda b: kafka_enumerator(int(name[-1]), b))
    raw = bytearray(java[name] if name.startswith("enum") else java[name][8:])
    cut = data.draw(st.integers(0, len(raw)))
    flip = data.draw(st.integers(0, len(raw) - 1))
    raw[flip] ^= data.draw(st.integers(1, 255))
    for candidate in (bytes(raw[:cut]), bytes(raw)):
        try:
            parse(candidate)
        except L.LayoutMismatch:
            pass


# --- written back: what the connector's serializer writes ------------------------------------

def test_kafka_splits_re_encode_and_a_moved_offset_is_the_javas(java):
    from statectl.statefmt.flink.connector_encode import kafka_split as encode

    for name in ("split-a", "split-b"):
        assert encode(kafka_split(java[name][8:])) == java[name]
    assert encode({**kafka_split(java["split-a"][8:]), "starting_offset": 9000}) == java["split-a-moved"]


def test_file_splits_of_flinks_serializer_re_encode_and_a_moved_position_is_flinks(java):
    from statectl.statefmt.flink.connector_encode import file_split as encode

    for name in ("file-split", "file-split-hosts"):
        assert encode(L.file_split(java[name][8:])) == java[name]
    hosts = L.file_split(java["file-split-hosts"][8:])
    assert (hosts["path"], hosts["hostnames"], hosts["reader_offset"]) == \
        ("hdfs://namenode:8020/logs/part-0?v=2", ["host-a", "host-b"], None)
    moved = {**L.file_split(java["file-split"][8:]), "reader_records_after_offset": 600}
    assert encode(moved) == java["file-split-moved"]
