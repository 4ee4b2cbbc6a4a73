"""The RowData samples harness (tests/support/flink_rowdata.py): real Flink writes, for every case, a .bin
framed like a savepoint's serializer snapshot followed by the rows, and cases.json describes them.
Checks the harness only; decoding the rows is the decoder's tests' business."""

from __future__ import annotations

import json
import struct

import pytest

from support import flink_job
from support import flink_rowdata

VERSIONS = ("1.20.3", "2.3.0")
COMPOSITE_SNAPSHOTS = {
    "MapSerializer<RowData, List<RowData>>": "org.apache.flink.api.common.typeutils.base.MapSerializerSnapshot",
    "ListSerializer<RowData>": "org.apache.flink.api.common.typeutils.base.ListSerializerSnapshot",
}
REQUIRED_CASES = {"scalars", "scalars_not_null", "decimals", "strings", "binaries", "temporal", "intervals",
                  "arrays", "array_elements", "maps", "nested", "all_null", "wide_56", "wide_57", "wide_70",
                  "empty_row", "raw", "structured", "map_of_row_lists", "list_of_rows"}


@pytest.fixture(scope="module", params=VERSIONS)
def samples(request):
    version = request.param
    try:
        folder = flink_rowdata.make_samples(version)
    except flink_job.FlinkSetupError as e:
        pytest.fail(str(e), pytrace=False)
    return version, folder, json.loads((folder / "cases.json").read_text(encoding="utf-8"))


def test_layout(samples):
    version, folder, cases = samples
    assert (folder / "done").exists()
    assert (folder / "flink_version.txt").read_text().strip() == version
    names = [c["name"] for c in cases]
    assert len(names) == len(set(names))
    assert REQUIRED_CASES <= set(names)
    assert {p.name for p in folder.glob("*.bin")} == {f"{n}.bin" for n in names}


def test_bin_framing_and_row_count(samples):
    _, folder, cases = samples
    for case in cases:
        data = (folder / case["file"]).read_bytes()
        # int 2 (the snapshot proxy's version), then the snapshot's class name as Java modified UTF-8.
        assert struct.unpack(">i", data[:4])[0] == 2, case["name"]
        (n,) = struct.unpack(">H", data[4:6])
        cls = data[6:6 + n].decode()
        if case["serializer"] == "RowDataSerializer":
            assert cls == flink_rowdata.ROW_SNAPSHOT_CLASS, case["name"]
            items = case["rows"]
        else:
            assert cls == COMPOSITE_SNAPSHOTS[case["serializer"]], case["name"]
            items = case["values"]
        at = case["snapshot_length"]
        assert 6 + n + 4 < at < len(data)
        assert struct.unpack(">i", data[at:at + 4])[0] == len(items), case["name"]
        if case["serializer"] == "RowDataSerializer":
            # Each row: int length of the BinaryRowData, then that many bytes; nothing after the last.
            pos = at + 4
            for row in items:
                (size,) = struct.unpack(">i", data[pos:pos + 4])
                arity = len(case["fields"])
                assert size >= 8 * ((arity + 63 + 8) // 64) + 8 * arity, case["name"]
                pos += 4 + size
            assert pos == len(data), case["name"]
            assert all(len(r["values"]) == len(case["fields"]) for r in items)
            assert {r["kind"] for r in items} <= {"INSERT", "UPDATE_BEFORE", "UPDATE_AFTER", "DELETE"}
