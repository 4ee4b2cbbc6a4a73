"""Kryo values without the JVM: the realworld Flink 2.3 fixtures' Kryo states against the job's
model (`expected.json`), and values written by Flink's own KryoSerializer (the probe in
`tests/kryo_probe`, run on Flink 2.3 with Kryo 5 and Flink 1.20 with Kryo 2) decoded exactly."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

import statectl
from statectl.statefmt.errors import FlinkFormatError
from statectl.statefmt.flink.binary import Reader
from statectl.statefmt.flink.kryo.classes import load_classpath
from statectl.statefmt.flink.kryo.context import KryoSetting, kryo_setting, use_job_classes
from statectl.statefmt.flink.kryo.registry import FIRST_USER_ID, JAVA_IDS, KRYO2, KRYO5, PRIMITIVE_IDS, SCALA_IDS
from statectl.statefmt.flink.serializers import read_snapshot
from statectl.statefmt.flink.types import Kryo, Opaque
from support import kryo_probe
from support.cli_runner import statectl as run

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "flink-realworld-dev"
NAMES = ("realworld-hashmap-canonical", "realworld-rocksdb-native")
LAYOUTS = FIXTURES / "classes.json"
UTC = dt.timezone.utc


@pytest.fixture
def job_classes():
    use_job_classes([LAYOUTS])
    yield
    use_job_classes([])


def expected(name: str) -> dict:
    return json.loads((FIXTURES / name / "expected.json").read_text())["operators"]


@pytest.mark.parametrize("name", NAMES)
def test_kryo_fields_decode_with_the_jobs_layouts(name, job_classes):
    want = expected(name)["kryo-proc"]["expected"]
    rows = statectl.open_savepoint(str(FIXTURES / name / "savepoint")).keyed("kryo-proc").to_pylist()
    assert sorted(r["key"] for r in rows) == sorted(want)
    for row in rows:
        w = want[row["key"]]
        assert row["logins"] == w["logins"]
        assert row["device"] == ({k: w["device"][k] for k in ("model", "os", "screenWidth")}
                                 if w["device"] else None)
        p, wp = row["profile"], w["profile"]
        assert (p["sessionId"], p["eventCount"], p["totalAmount"], p["lastType"]) == \
            (wp["sessionId"], wp["eventCount"], wp["totalAmount"], wp["lastType"])
        # Optional<String> as a POJO field: Kryo<Optional>, its content's class only in the bytes: JSON
        assert (json.loads(p["lastCoupon"]) if p["lastCoupon"] is not None else None) == wp["lastCoupon"]
        attribution = json.loads(p["attribution"])
        assert attribution == {"@class": wp["attribution"]["class"],
                               **{k: v for k, v in wp["attribution"].items() if k not in ("class", "kryo_class_form")}}


@pytest.mark.parametrize("name", NAMES)
def test_legacy_kafka_offsets_decode(name, job_classes):
    want = expected(name)["legacy-offsets"]["expected"]["elements_per_subtask [topic, partition, offset]"]
    got = statectl.open_savepoint(str(FIXTURES / name / "savepoint")).union_state(
        "legacy-offsets", "topic-partition-offset-states").to_pylist()
    assert sorted((r["value"]["f0"]["topic"], r["value"]["f0"]["partition"], r["value"]["f1"]) for r in got) == \
        sorted(tuple(e) for sub in want.values() for e in sub)


def test_without_classes_kryo_states_stay_bytes_and_info_says_why():
    path = FIXTURES / NAMES[0] / "savepoint"
    t = statectl.open_savepoint(str(path)).keyed("kryo-proc")
    assert str(t.schema.field("device").type) == "struct<class: string, bytes: binary>"
    device = {r["key"]: r["device"] for r in t.to_pylist()}
    assert {d["class"] for d in device.values() if d} == {"flinkfixtures.RealWorldJob$DeviceInfo"}
    assert all(d["bytes"].startswith(b"W\x01") for d in device.values() if d)  # class id 85, not null
    out = run("info", str(path), "--json")
    assert out.returncode == 0, out.stderr
    states = {s["name"]: s for op in json.loads(out.stdout)["operators"] if op["uid"] == "kryo-proc"
              for s in op["states"]}
    assert states["device"]["type"] == "struct<class: string, bytes: binary>"
    assert states["device"]["note"] == ("Kryo, type flinkfixtures.RealWorldJob$DeviceInfo: no layout for "
                                        "flinkfixtures.RealWorldJob$DeviceInfo (decodes with --classes)")
    assert "field attribution: Kryo, type flinkfixtures.RealWorldJob$Attribution" in states["profile"]["note"]
    assert "note" not in states["logins"]
    table = run("info", str(path))
    assert "binary (bytes: decodes with --classes)" in table.stdout


def test_cli_reads_kryo_state_with_classes():
    path = FIXTURES / NAMES[0] / "savepoint"
    out = run("read", str(path), "--uid", "kryo-proc", "--classes", str(LAYOUTS), "--format", "jsonl")
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
    want = expected(NAMES[0])["kryo-proc"]["expected"]
    assert {r["key"]: r["device"]["model"] for r in rows if r["device"]} == \
        {k: v["device"]["model"] for k, v in want.items() if v["device"]}


def test_a_missing_classes_path_is_one_line():
    out = run("read", str(FIXTURES / NAMES[0] / "savepoint"), "--uid", "kryo-proc", "--classes", "/nonexistent")
    assert out.returncode != 0
    assert "Traceback" not in out.stderr
    assert "--classes /nonexistent: no such file or folder" in out.stderr


# -- values written by Flink's own KryoSerializer -------------------------------------------------

HOLDER = {
    "@class": "kryoprobe.KryoProbe$Holder",
    "anything": {"@class": "kryoprobe.KryoProbe$Child", "boxed": 42, "id": "c-1", "level": 3, "tier": "MID", "zeta": "z"},
    "asList": [5, 6], "big": "123456789012345678901234567890", "bits": [1, 70],
    "counts": [{"key": "x", "value": 1}, {"key": "y", "value": -2}],
    "date": dt.date(2024, 11, 3), "dateTime": dt.datetime(2024, 11, 3, 4, 5, 6, 7), "dec": "-12345.678",
    "empty": None, "emptyList": [],
    "instant": dt.datetime(2025, 6, 15, 15, 6, 40, 123456, tzinfo=UTC), "ints": [1, -1, 300], "level": "HIGH",
    "locale": "de_CH", "nested": [{"key": "k", "value": [1, 2]}], "nullLong": None, "nullString": None,
    "opt": "SAVE9", "set": ["s1", "s2"], "strs": ["p", None, "q"], "tags": ["a", "bb", "ccc"],
    "unmodifiable": ["u"], "uri": "https://example.com/a?b=1", "uuid": "01234567-89ab-cdef-fedc-ba9876543210",
    "when": dt.datetime(2025, 6, 15, 15, 6, 40, 123000, tzinfo=UTC),
}
DEVICE = {"active": True, "byteField": 5, "charField": "Z", "floatField": 1.5, "lastSeen": 1750000000000,
          "model": "Pixel 8", "os": "android-15", "score": 0.25, "screenWidth": 1080, "shortField": -3}


def _decode(version: str, sample: kryo_probe.Sample, with_classes: bool = True):
    generation = KRYO5 if version.startswith("2.") else KRYO2
    classpath = load_classpath([kryo_probe.compiled(version)] if with_classes else [])
    with kryo_setting(KryoSetting(generation, classpath)):
        t = read_snapshot(Reader(sample.snapshot, "snapshot"))
    return t, classpath


def _value(t, data: bytes):
    assert isinstance(t, Kryo), t
    decoder = t.decoder
    value, end = decoder.read_value(data, 0, len(data))
    assert end == len(data)
    return value


@pytest.fixture(scope="module", params=["2.3.0", "1.20.3"])
def probe(request):
    return request.param, kryo_probe.samples(request.param)


def test_class_ids_are_flinks_own(probe):
    version, _ = probe
    table = kryo_probe.registrations(version)
    ours = {i: n for i, n in enumerate(PRIMITIVE_IDS)}
    ours.update({73 + i: n for i, n in enumerate(JAVA_IDS)})
    if version.startswith("1."):
        ours[9] = "void"
        ours.update({10 + i: n for i, n in enumerate(SCALA_IDS)})
    ours[FIRST_USER_ID] = "java.lang.Object"
    assert {i: n for i, n in table.items() if i <= FIRST_USER_ID} == ours


@pytest.mark.parametrize("sample", ["device-registered", "device-unregistered"])
def test_final_class_fields_of_every_primitive_kind(probe, sample):
    version, samples = probe
    t, _ = _decode(version, samples[sample])
    got = _value(t, samples[sample].value)
    if sample == "device-unregistered":
        assert (got["model"], got["os"], got["lastSeen"], got["score"], got["active"]) == \
            ("ThinkPad X1", "windows-11", -5, -0.5, False)
    else:
        assert got == {"@class": "kryoprobe.KryoProbe$Device", **DEVICE}
    assert t.read(Reader(samples[sample].value, "v"))["screenWidth"] in (1080, 1920)


def test_superclass_fields_enums_boxed_and_public_fields(probe):
    version, samples = probe
    t, _ = _decode(version, samples["child-as-base"])
    assert _value(t, samples["child-as-base"].value) == HOLDER["anything"]
    t, _ = _decode(version, samples["public-fields"])
    assert _value(t, samples["public-fields"].value) == {
        "@class": "kryoprobe.KryoProbe$PublicFields", "count": -7, "name": "pub", "total": 1 << 40}


def test_builtin_values(probe):
    version, samples = probe
    for name, want in [("uuid", "00000000-0000-0001-ffff-ffffffffffff"), ("optional", "SAVE3"),
                       ("string-list", ["x", "y"]), ("null-value", None)]:
        t, _ = _decode(version, samples[name])
        assert _value(t, samples[name].value) == want, name


def test_every_jdk_kind_and_a_shared_reference(probe):
    version, samples = probe
    for name in ("holder", "holder-as-object"):
        t, _ = _decode(version, samples[name])
        got = _value(t, samples[name].value)
        first, second = got.pop("first"), got.pop("second")
        assert first == {"@class": "kryoprobe.KryoProbe$Device", **DEVICE}
        assert second is first  # one object, referenced twice
        assert got == HOLDER


def test_without_the_classes_a_user_class_stays_bytes():
    samples = kryo_probe.samples("2.3.0")
    t, _ = _decode("2.3.0", samples["device-registered"], with_classes=False)
    assert isinstance(t, Opaque)
    assert "no layout for kryoprobe.KryoProbe$Device" in t.reason


def test_damaged_kryo_values_end_in_one_error():
    samples = kryo_probe.samples("2.3.0")
    t, _ = _decode("2.3.0", samples["holder"])
    data = samples["holder"].value
    for cut in range(0, len(data), 7):
        with pytest.raises(FlinkFormatError):
            t.read(Reader(data[:cut], "v"))
    for i in range(0, len(data), 5):
        bad = bytearray(data)
        bad[i] ^= 0x5A
        try:
            t.read(Reader(bytes(bad), "v"))
        except FlinkFormatError as e:
            assert "Kryo value" in str(e)


def test_the_compiled_walk_equals_the_value_by_value_decoding():
    """Values of a final class with a fixed layout are decoded all at once; rows with a back
    reference (and top-level nulls, non-ASCII text, absent fields) come out as the per-value decoder gives them."""
    import numpy as np

    from statectl.statefmt.flink.types import Buf

    samples = kryo_probe.samples("2.3.0")
    t, _ = _decode("2.3.0", samples["twin-shared"])
    assert t.plan is not None
    values = [samples["twin-shared"].value, samples["twin-distinct"].value, samples["null-value"].value] * 3
    starts = np.cumsum([0] + [len(v) for v in values[:-1]])
    limits = starts + np.array([len(v) for v in values])
    buf = Buf(b"".join(values), "twins")
    column, ends = t.column(buf, starts, limits)
    assert ends.tolist() == limits.tolist()
    one_by_one = [t.read(Reader(v, "v")) for v in values]
    assert column.to_pylist() == one_by_one
    shared = one_by_one[0]
    assert shared["left"] == shared["right"] and shared["label"] == "shared" and shared["level"] == "LOW"
    assert shared["id"] == "01234567-89ab-cdef-0000-000000000001" and shared["boxed"] == -9
    assert one_by_one[1]["label"] == "distinct \u00e9\U0001F600" and one_by_one[1]["id"] is None
    assert one_by_one[2] is None
    with pytest.raises(FlinkFormatError, match="Kryo value"):
        t.column(Buf(b"".join(values)[:int(limits[3]) - 5], "cut"), starts[:4], limits[:4])


def test_lists_of_strings_and_numbers_in_the_compiled_walk(tmp_path):
    """A class with a UUID and a list of strings (the benchmark's): the walk and the per-value
    decoder agree on every value Flink's own KryoSerializer wrote, typed as list<string>."""
    import numpy as np

    from statectl.statefmt.flink.types import Buf

    kryo_probe.run("2.3.0", "bench", "300", str(tmp_path))
    classpath = load_classpath([kryo_probe.compiled("2.3.0")])
    with kryo_setting(KryoSetting(KRYO5, classpath)):
        t = read_snapshot(Reader((tmp_path / "kryo.snapshot").read_bytes(), "snapshot"))
    assert t.plan is not None
    assert str(t.arrow()) == "struct<count: int64, id: string, level: int32, name: string, tags: list<item: string>>"
    offsets = np.fromfile(tmp_path / "kryo.offsets", dtype="<i8")
    data = (tmp_path / "kryo.bin").read_bytes()
    column, ends = t.column(Buf(data, "bench"), offsets[:-1].copy(), offsets[1:].copy())
    assert ends.tolist() == offsets[1:].tolist()
    one_by_one = [t.read(Reader(data, "v", int(a), int(b))) for a, b in zip(offsets[:-1], offsets[1:])]
    assert column.to_pylist() == one_by_one
    assert one_by_one[0]["name"] == "user-0" and len(one_by_one[0]["tags"]) == 3


def test_a_damaged_kryo_value_in_a_savepoint_is_one_line(tmp_path, job_classes):
    """A device value whose class id names no class: the read fails in one line naming the
    operator, the state, the key group and the class; without --classes the state stays bytes."""
    import shutil

    copy = tmp_path / "savepoint"
    shutil.copytree(FIXTURES / NAMES[0] / "savepoint", copy)
    marker = b"W\x01\x01ThinkPad X\xb1"
    damaged = 0
    for f in copy.iterdir():
        data = f.read_bytes()
        if marker in data:
            f.write_bytes(data.replace(marker, b"\x7f" + marker[1:], 1))
            damaged += 1
    assert damaged
    out = run("read", str(copy), "--uid", "kryo-proc", "--classes", str(LAYOUTS), "--format", "jsonl")
    assert out.returncode == 1 and "Traceback" not in out.stderr
    line = out.stderr.strip()
    assert len(line.splitlines()) == 1
    assert "operator a5deec78295d717f8223d83718840b05" in line and "state 'device', key group" in line
    assert "Kryo<flinkfixtures.RealWorldJob$DeviceInfo>" in line and "unregistered class id 125" in line
    use_job_classes([])
    assert len(statectl.open_savepoint(str(copy)).keyed("kryo-proc")) == 18


JDK = {
    "jdk-aslist": ["a", "b"], "jdk-bitset": [3, 64], "jdk-locale": "de_CH",
    "jdk-sqldate": dt.datetime(2025, 6, 15, 15, 6, 40, 123000, tzinfo=UTC),
    "jdk-sqltime": dt.datetime(2025, 6, 15, 15, 6, 40, 123000, tzinfo=UTC),
    "jdk-timestamp": dt.datetime(2025, 6, 15, 15, 6, 40, 123456, tzinfo=UTC),
    "jdk-localdate": dt.date(2024, 11, 3), "jdk-localdatetime": dt.datetime(2024, 11, 3, 4, 5, 6, 7),
    "jdk-instant": dt.datetime(2025, 6, 15, 15, 6, 40, 123456, tzinfo=UTC),
    "jdk-uri": "https://example.com/a?b=1", "jdk-date": dt.datetime(2025, 6, 15, 15, 6, 40, 123000, tzinfo=UTC),
    "jdk-enum": "HIGH", "jdk-intarray": [1, -1, 300], "jdk-strarray": ["p", None, "q"],
}


@pytest.mark.parametrize("name", sorted(JDK))
def test_jdk_values_of_both_generations(probe, name):
    """Kryo 5's serializers and, under Kryo 2, chill's (Arrays.asList, BitSet, a Java-serialized
    Locale) and Kryo's FieldSerializer over the java.time classes' own fields."""
    version, samples = probe
    t, _ = _decode(version, samples[name])
    assert _value(t, samples[name].value) == JDK[name]


def test_a_jar_a_class_folder_and_bad_layouts(tmp_path):
    """--classes takes a jar as a folder of classes; a file that is neither is one line."""
    import zipfile

    from statectl.statefmt.errors import UsageError

    folder = kryo_probe.compiled("2.3.0")
    jar = tmp_path / "job.jar"
    with zipfile.ZipFile(jar, "w") as z:
        for f in folder.rglob("*.class"):
            z.write(f, str(f.relative_to(folder)))
        z.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")
    from_jar, from_folder = load_classpath([jar]).classes, load_classpath([folder]).classes
    assert from_jar == from_folder and "kryoprobe.KryoProbe$Device" in from_jar
    device = from_jar["kryoprobe.KryoProbe$Device"]
    assert device.final and [f.name for f in device.fields if f.serialized] == [
        "model", "os", "screenWidth", "lastSeen", "score", "active", "shortField", "byteField", "charField",
        "floatField"]
    assert from_jar["kryoprobe.KryoProbe$Level"].enum_constants == ("LOW", "MID", "HIGH")
    assert str(from_jar["kryoprobe.KryoProbe$Holder"].fields[2].type) == "java.util.Map<java.lang.String, java.lang.Integer>"
    for name, content, why in [("bad.json", "{", "not a layout file"), ("x.class", "nope", "not a Java class file"),
                               ("notes.txt", "x", "not a folder, a jar, a .class or a .json layout file")]:
        (tmp_path / name).write_text(content)
        with pytest.raises(UsageError, match=why):
            load_classpath([tmp_path / name])


def test_garbage_never_escapes_as_anything_but_one_error():
    """Random bytes as a Kryo value of a class with a layout: a value, or one FlinkFormatError."""
    from hypothesis import given, settings, strategies as st

    samples = kryo_probe.samples("2.3.0")
    t, _ = _decode("2.3.0", samples["holder"])
    seed = samples["holder"].value

    @settings(max_examples=300)
    @given(st.binary(max_size=64), st.integers(min_value=0, max_value=len(seed)))
    def run(noise, at):
        data = seed[:at] + noise
        try:
            t.read(Reader(data, "fuzz"))
        except FlinkFormatError:
            pass

    run()


def test_a_deeply_nested_value_is_one_error():
    """A value of lists inside lists 10,000 deep (as hostile bytes can be) ends in one error."""
    samples = kryo_probe.samples("2.3.0")
    t, _ = _decode("2.3.0", samples["string-list"])
    # an ArrayList of one element, of the same class (named before: name id 0, no nulls), again and again
    nested = b"\x01\x00java.util.ArrayLis\xf4\x01\x82" + b"\x01\x00\x00\x01\x82" * 10_000
    with pytest.raises(FlinkFormatError, match="nested more than 64 deep"):
        t.read(Reader(nested, "deep"))


def test_an_object_that_holds_itself(probe):
    version, samples = probe
    t, _ = _decode(version, samples["ring"])
    cycle = {"@class": "kryoprobe.KryoProbe$Ring", "@reference": "to an enclosing object"}
    assert _value(t, samples["ring"].value) == {"@class": "kryoprobe.KryoProbe$Ring", "name": "r", "next": cycle}
    assert t.read(Reader(samples["ring"].value, "v")) == {"name": "r", "next": json.dumps(cycle)}


def test_garbage_in_the_compiled_walk_is_one_error_too():
    import numpy as np
    from hypothesis import given, settings, strategies as st

    from statectl.statefmt.flink.types import Buf

    samples = kryo_probe.samples("2.3.0")
    t, _ = _decode("2.3.0", samples["twin-distinct"])
    seed = samples["twin-distinct"].value

    @settings(max_examples=300)
    @given(st.binary(max_size=48), st.integers(min_value=0, max_value=len(seed)))
    def run(noise, at):
        data = seed[:at] + noise
        try:
            t.column(Buf(data * 2, "fuzz"), np.array([0, len(data)]), np.array([len(data), 2 * len(data)]))
        except FlinkFormatError:
            pass

    run()


def test_spark_decodes_kryo_values_as_the_local_engine_does(spark, job_classes):
    """The splits carry the Kryo generation and the job's layouts to Spark's Python workers."""
    path = str(FIXTURES / NAMES[1] / "savepoint")
    local = sorted(statectl.open_savepoint(path).keyed("kryo-proc").to_pylist(), key=lambda r: r["key"])
    rows = statectl.open_savepoint(path, spark=spark).keyed("kryo-proc").orderBy("key").collect()
    assert [r.asDict(recursive=True) for r in rows] == local


def test_lists_longer_than_the_walks_first_room(tmp_path):
    """Values with many list elements: the walk stops for room, is given more and walks on."""
    import numpy as np

    from statectl.statefmt.flink.types import Buf

    kryo_probe.run("2.3.0", "bench", "1", str(tmp_path))
    with kryo_setting(KryoSetting(KRYO5, load_classpath([kryo_probe.compiled("2.3.0")]))):
        t = read_snapshot(Reader((tmp_path / "kryo.snapshot").read_bytes(), "snapshot"))

    def value(i: int, tags: int) -> bytes:
        # BenchUser (id 85 + 2), fields by name: count, id (UUID), level, name, tags (an ArrayList of strings)
        out = b"W\x01" + bytes([i * 2]) + b"\x01" + bytes(range(16)) + b"\x06" + b"\x01u" + bytes([0x80 | (48 + i)])
        out += b"\x01\x00java.util.ArrayLis\xf4\x01" + bytes([0x40 | ((tags + 1) & 0x3F), (tags + 1) >> 6])
        return out + b"".join(b"\x01t" + bytes([0x80 | (48 + k % 10)]) for k in range(tags))

    values = [value(i, 30 + i) for i in range(5)]
    starts = np.cumsum([0] + [len(v) for v in values[:-1]])
    limits = starts + np.array([len(v) for v in values])
    column, _ = t.column(Buf(b"".join(values), "many"), starts, limits)
    assert column.to_pylist() == [t.read(Reader(v, "v")) for v in values]
    assert [len(r["tags"]) for r in column.to_pylist()] == [30, 31, 32, 33, 34]


def test_the_legacy_kafka_partition_decodes_without_classes(probe):
    """The legacy Kafka consumer's KafkaTopicPartition (a stand-in of the same name and fields,
    tests/kryo_probe/org/...) is known: no --classes needed."""
    version, samples = probe
    t, _ = _decode(version, samples["kafka-partition"], with_classes=False)
    partition = 31 * _java_hash("payments") + 7
    assert t.read(Reader(samples["kafka-partition"].value, "v")) == {
        "cachedHash": (partition + 2**31) % 2**32 - 2**31, "partition": 7, "topic": "payments"}


def _java_hash(text: str) -> int:
    h = 0
    for ch in text:
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    return h - 2**32 if h >= 2**31 else h
