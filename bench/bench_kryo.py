"""Decoding Kryo and Avro values vs the same values as a POJO, in-process, in the same run.

    python bench/bench_kryo.py [--values 1000000] [--repeat 3]

Flink 2.3's own serializers (the suite's probe, `tests/kryo_probe`, compiled against the cached
jars) write N values of one class with five fields, a UUID and a list of three strings among
them (`id, name, count, level, tags`): with `KryoSerializer<BenchUser>` (Kryo 5), and as the
POJO `BenchPojo` (the UUID as its text, the tags as a String[]) with Flink's `PojoSerializer`.
The same values are also written as flink-avro writes a record of that shape (its
`DataOutputEncoder`, docs/AVRO.md; no flink-avro jar is at hand, so the bytes are made here).
Each column is decoded whole by statectl's decoders (`FlinkType.column`), the cases
alternating; prints values/s and the throughput ratios Kryo / POJO and Avro / POJO (target
each >= 0.5), with the load average before and after. The three decodings must agree.
"""

from __future__ import annotations

import argparse
import json
import struct
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "tests"))

from common import alternating_medians, load_average  # noqa: E402

TARGET = 0.5
AVRO_SNAPSHOT = "org.apache.flink.formats.avro.typeutils.AvroSerializerSnapshot"
SCHEMA = {"type": "record", "name": "BenchUser", "fields": [
    {"name": "id", "type": "string"}, {"name": "name", "type": "string"}, {"name": "count", "type": "long"},
    {"name": "level", "type": "int"}, {"name": "tags", "type": {"type": "array", "items": "string"}}]}


def _utf(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">H", len(raw)) + raw


def avro_values(pojo_rows: list[dict]) -> tuple[bytes, np.ndarray, bytes]:
    """The POJO's values as flink-avro's DataOutputEncoder writes the record: data, offsets, snapshot."""
    parts, offsets, at = [], [0], 0
    for row in pojo_rows:
        b = bytearray()
        for text in (row["id"], row["name"]):
            raw = text.encode()
            b += struct.pack(">i", len(raw)) + raw
        b += struct.pack(">qi", row["count"], row["level"])
        b += bytes([len(row["tags"])])
        for tag in row["tags"]:
            raw = tag.encode()
            b += struct.pack(">i", len(raw)) + raw
        b += b"\0"
        parts.append(bytes(b))
        at += len(b)
        offsets.append(at)
    snapshot = _utf(AVRO_SNAPSHOT) + struct.pack(">i", 2) + _utf("org.apache.avro.generic.GenericRecord") \
        + _utf(json.dumps(SCHEMA))
    return b"".join(parts), np.array(offsets, dtype=np.int64), snapshot


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--values", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    from statectl.statefmt.flink.binary import Reader
    from statectl.statefmt.flink.kryo.classes import load_classpath
    from statectl.statefmt.flink.kryo.context import KryoSetting, kryo_setting
    from statectl.statefmt.flink.kryo.registry import KRYO5
    from statectl.statefmt.flink.serializers import read_snapshot
    from statectl.statefmt.flink.types import Buf
    from support import kryo_probe

    print(f"load average before: {load_average()}")
    with tempfile.TemporaryDirectory(prefix="statectl-bench-kryo-") as tmp:
        folder = Path(tmp)
        kryo_probe.run("2.3.0", "bench", str(args.values), str(folder))
        setting = KryoSetting(KRYO5, load_classpath([kryo_probe.compiled("2.3.0")]))
        cases, columns = {}, {}
        for kind in ("kryo", "pojo"):
            with kryo_setting(setting):
                t = read_snapshot(Reader((folder / f"{kind}.snapshot").read_bytes(), kind))
            offsets = np.fromfile(folder / f"{kind}.offsets", dtype="<i8")
            cases[kind] = (t, Buf((folder / f"{kind}.bin").read_bytes(), kind), offsets)
        pojo_rows = cases["pojo"][0].column(cases["pojo"][1], cases["pojo"][2][:-1], cases["pojo"][2][1:])[0]
        data, offsets, snapshot = avro_values(pojo_rows.to_pylist())
        cases["avro"] = (read_snapshot(Reader(snapshot, "avro")), Buf(data, "avro"), offsets)

    def decode(kind: str):
        def run():
            t, buf, offsets = cases[kind]
            columns[kind] = t.column(buf, offsets[:-1].copy(), offsets[1:].copy())[0]
        return run

    for kind in cases:  # compile the kernels once, untimed
        t, buf, offsets = cases[kind]
        t.column(buf, offsets[:1000].copy(), offsets[1:1001].copy())
    _, medians = alternating_medians({k: decode(k) for k in cases}, args.repeat)
    kryo, pojo, avro = (columns[k].to_pylist()[:1000] for k in ("kryo", "pojo", "avro"))
    assert [dict(r, tags=list(r["tags"])) for r in kryo] == pojo == avro, "the decodings differ"
    n = args.values
    for kind in ("pojo", "kryo", "avro"):
        print(f"{kind:5s} {medians[kind]:7.3f} s  {n / medians[kind]:12,.0f} values/s")
    for kind in ("kryo", "avro"):
        ratio = medians["pojo"] / medians[kind]
        print(f"{kind} / pojo throughput: {ratio:.2f} (target >= {TARGET})")
    print(f"load average after: {load_average()}")


if __name__ == "__main__":
    main()
