"""Kryo values written from rows: each value the probe had Flink's own KryoSerializer write
(`tests/kryo_probe`, Kryo 5 on Flink 2.3 and Kryo 2 on Flink 1.20), decoded to a row and
encoded again, is the same bytes."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from statectl.statefmt.errors import FlinkEncodeError
from statectl.statefmt.flink.binary import Reader
from statectl.statefmt.flink.kryo.classes import load_classpath
from statectl.statefmt.flink.kryo.context import KryoSetting, kryo_setting
from statectl.statefmt.flink.kryo.encode import encode_fixed, varlongs
from statectl.statefmt.flink.kryo.registry import KRYO2, KRYO5
from statectl.statefmt.flink.kryo.stream import KryoIn
from statectl.statefmt.flink.serializers import read_snapshot
from statectl.statefmt.flink.types import Buf
from support import kryo_probe

# the samples of a final class with a fixed layout, as each generation's plan covers them
FIXED = ["device-registered", "device-unregistered", "null-value", "kafka-partition", "texts", "texts-edge"]


@pytest.fixture(scope="module", params=["2.3.0", "1.20.3"])
def probe(request):
    version = request.param
    return version, kryo_probe.samples(version), load_classpath([kryo_probe.compiled(version)])


def _type(version, sample, classpath):
    with kryo_setting(KryoSetting(KRYO5 if version.startswith("2.") else KRYO2, classpath)):
        return read_snapshot(Reader(sample.snapshot, "snapshot"))


def _rows(t, values: list[bytes]) -> pa.Array:
    starts = np.cumsum([0] + [len(v) for v in values[:-1]])
    limits = starts + np.array([len(v) for v in values])
    column, _ = t.column(Buf(b"".join(values), "samples"), starts, limits)
    return column


def _encode(t, rows: pa.Array) -> list[bytes]:
    return encode_fixed(t.plan, t.type_class, rows, t.decoder.config.generation, "value").to_pylist()


@pytest.mark.parametrize("name", FIXED)
def test_a_value_decoded_and_encoded_again_is_flinks_bytes(probe, name):
    version, samples, classpath = probe
    t = _type(version, samples[name], classpath)
    assert t.plan is not None
    assert _encode(t, _rows(t, [samples[name].value])) == [samples[name].value]


def test_many_values_of_one_class_at_once(probe):
    version, samples, classpath = probe
    t = _type(version, samples["texts"], classpath)
    values = [samples[n].value for n in ("texts", "texts-edge", "texts", "texts-edge")]
    assert _encode(t, _rows(t, values)) == values


def test_a_shared_object_is_written_twice_and_reads_the_same(probe):
    """Rows hold no object identity: Kryo's back reference becomes a second copy, the same value."""
    version, samples, classpath = probe
    t = _type(version, samples["twin-shared"], classpath)
    if t.plan is None:  # Kryo 2 has no UUID serializer of its own: the class has no fixed layout
        return
    rows = _rows(t, [samples["twin-shared"].value])
    again = _encode(t, rows)
    assert again != [samples["twin-shared"].value]
    assert _rows(t, again).to_pylist() == rows.to_pylist()


def test_rows_a_java_field_cannot_hold_are_one_clear_error(probe):
    version, samples, classpath = probe
    t = _type(version, samples["texts"], classpath)
    row = _rows(t, [samples["texts"].value]).to_pylist()[0]
    for field, value, message in [
        ("small", None, r"value\.small: row 0 is null, which a Java primitive field cannot hold"),
        ("level", "NOPE", r"value\.level: row 0 holds 'NOPE', not a constant of the enum \(LOW, MID, HIGH\)"),
        ("letter", "ab", r"value\.letter: a Java char holds one UTF-16 unit; row 0 does not"),
    ]:
        bad = pa.array([{**row, field: value}], t.arrow())
        with pytest.raises(FlinkEncodeError, match=message):
            _encode(t, bad)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 2**64 - 1), max_size=30))
def test_varlongs_read_back(values):
    encoded = varlongs(np.array(values, dtype=np.uint64)).to_pylist()
    for value, data in zip(values, encoded):
        reader = KryoIn(data, 0, len(data), False)
        assert reader.varlong(True) & (2**64 - 1) == value and reader.pos == len(data)
