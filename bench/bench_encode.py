"""Encoding values for a Flink savepoint from rows: Kryo and Avro vs a POJO, in-process, same run.

    python bench/bench_encode.py [--values 1000000] [--repeat 3]

One column of N rows of one shape (`id`, `name`: strings; `count`: long; `level`: int) is
encoded three ways by statectl's encoders (`statefmt/flink/encode.py`): as Flink's
`PojoSerializer` writes a POJO of these fields (the baseline), as Kryo 5 writes a final class
of them (`kryo/encode.py`; the class's layout from a JSON layout file, registered as Flink's
`KryoSerializer<T>` registers its own T), and as flink-avro writes a record of them
(`avro_encode.py`). The cases alternate; prints values/s and each throughput / the POJO's.
Each encoding is decoded back and checked equal to the rows.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))

from common import alternating_medians, load_average  # noqa: E402

CLASS = "bench.User"
FIELDS = [("id", "java.lang.String", pa.string()), ("name", "java.lang.String", pa.string()),
          ("count", "long", pa.int64()), ("level", "int", pa.int32())]


def rows(n: int) -> pa.Array:
    rng = np.random.default_rng(4711)
    ids = pa.array([f"{i:08x}-user" for i in range(n)])
    names = pa.array([f"user-{i}" for i in range(n)])
    return pa.StructArray.from_arrays(
        [ids, names, pa.array(rng.integers(0, 1_000_000, n)), pa.array(rng.integers(0, 10, n).astype(np.int32))],
        [f for f, _, _ in FIELDS])


def types(folder: Path):
    """The POJO, Kryo and Avro types of the shape, as a savepoint's snapshots would give them."""
    from statectl.statefmt.flink import types as T
    from statectl.statefmt.flink.avro_schema import avro_type
    from statectl.statefmt.flink.kryo.classes import load_classpath
    from statectl.statefmt.flink.kryo.context import KryoSetting, kryo_setting
    from statectl.statefmt.flink.kryo.decode import KryoDecoder
    from statectl.statefmt.flink.kryo.registry import KRYO5
    from statectl.statefmt.flink.kryo.snapshot import kryo_config

    pojo = T.Pojo(CLASS, (("count", T.Scalar("long")), ("id", T.String()), ("level", T.Scalar("int")),
                          ("name", T.String())), (), "org.apache.flink.api.java.typeutils.runtime.PojoSerializer")
    layout = folder / "classes.json"
    layout.write_text(json.dumps({"classes": {CLASS: {"final": True,
                                                      "fields": [{"name": f, "type": t} for f, t, _ in FIELDS]}}}))
    with kryo_setting(KryoSetting(KRYO5, load_classpath([layout]))):
        config = kryo_config(KRYO5, CLASS, [], [], [])
        kryo = T.Kryo(CLASS, KryoDecoder(config, load_classpath([layout])))
    avro = avro_type(json.dumps({"type": "record", "name": "User", "fields": [
        {"name": "id", "type": "string"}, {"name": "name", "type": "string"}, {"name": "count", "type": "long"},
        {"name": "level", "type": "int"}]}))
    return {"pojo": pojo, "kryo": kryo, "avro": avro}


def decoded(t, encoded: pa.Array) -> pa.Array:
    from statectl.statefmt.bytecolumns import parts_of
    from statectl.statefmt.flink.types import Buf

    data, offsets = parts_of(encoded)
    return t.column(Buf(data.tobytes(), "encoded"), offsets[:-1], offsets[1:])[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--values", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    from statectl.statefmt.flink.encode import encode

    print(f"load average before: {load_average()}")
    values = rows(args.values)
    with tempfile.TemporaryDirectory(prefix="statectl-bench-encode-") as tmp:
        cases = types(Path(tmp))
        assert cases["kryo"].plan is not None, "the bench class has no fixed layout"
        inputs = {k: values.cast(t.arrow()) for k, t in cases.items()}
        out: dict[str, pa.Array] = {}

        def run(kind: str):
            def once():
                out[kind] = encode(cases[kind], inputs[kind])
            return once

        for kind in cases:  # untimed: compile and warm up
            encode(cases[kind], inputs[kind].slice(0, 1000))
        _, medians = alternating_medians({k: run(k) for k in cases}, args.repeat)
        for kind, t in cases.items():
            back = decoded(t, out[kind].slice(0, 1000))
            assert back.to_pylist() == inputs[kind].slice(0, 1000).to_pylist(), f"{kind} does not read back"
    n = args.values
    for kind in cases:
        print(f"{kind:5s} {medians[kind]:7.3f} s  {n / medians[kind]:12,.0f} values/s")
    for kind in ("kryo", "avro"):
        print(f"{kind} / pojo throughput: {medians['pojo'] / medians[kind]:.2f}")
    print(f"load average after: {load_average()}")


if __name__ == "__main__":
    main()
