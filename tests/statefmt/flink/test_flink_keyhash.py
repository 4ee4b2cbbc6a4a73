"""Flink's key-group hash: Java hashCode emulation, Flink's murmur, scalar and vector forms."""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from statectl.statefmt.errors import KeyTypeError, LimitError
from statectl.statefmt.flink.keyhash import (
    flink_key_group,
    flink_key_groups,
    java_hash_code,
    java_hash_codes,
    murmur_hash,
    murmur_hash_array,
    string_hash_code,
    type_name,
)

FIXTURES = Path(__file__).parents[2] / "fixtures" / "flink-dev"
# The key type each scenario's job declared (README: "Key type ...").
KEY_TYPES = {
    "long-hashmap-canonical": "Long",
    "long-rocksdb-canonical": "Long",
    "long-rocksdb-native": "Long",
    "int-hashmap-native": "Integer",
    "pojo-hashmap-canonical": "String",
    "pojo-rocksdb-canonical": "String",
    "tuple-rocksdb-native": ("String", "Integer"),
}

# hashCode() of these values as printed by a Java 17 JVM.
JAVA_HASH_CODES = [
    ("", "String", 0),
    ("a", "String", 97),
    ("hello", "String", 99162322),
    ("été", "String", 227742),
    ("€", "String", 8364),
    ("😀", "String", 1772899),
    ("user-014-😀", "String", 739257183),
    ("ap-süd", "String", -1413046275),
    ("the quick brown fox jumps over the lazy dog 0123456789", "String", 2041385682),
    (0, "Long", 0),
    (-1, "Long", 0),
    (2**63 - 1, "Long", -2147483648),
    (-(2**63), "Long", -2147483648),
    (4294967296, "Long", 1),
    (9007199254740993, "Long", 2097153),
    (0, "Integer", 0),
    (-1, "Integer", -1),
    (2**31 - 1, "Integer", 2147483647),
    (-(2**31), "Integer", -2147483648),
    (-1, "Short", -1),
    (32767, "Short", 32767),
    (-128, "Byte", -128),
    (7, "Byte", 7),
    (True, "Boolean", 1231),
    (False, "Boolean", 1237),
    ("A", "Character", 65),
    ("€", "Character", 8364),
    (0xFFFF, "Character", 65535),
    (0.0, "Double", 0),
    (-0.0, "Double", -2147483648),
    (1.0, "Double", 1072693248),
    (-2.5, "Double", -1073479680),
    (math.nan, "Double", 2146959360),
    (math.inf, "Double", 2146435072),
    (5e-324, "Double", 1),
    (1e300, "Double", -164130400),
    (0.0, "Float", 0),
    (-0.0, "Float", -2147483648),
    (1.0, "Float", 1065353216),
    (math.nan, "Float", 2143289344),
    (-math.inf, "Float", -8388608),
    (3.1415927, "Float", 1078530011),
]


def _fixture_keys(name):
    expected = json.loads((FIXTURES / name / "expected.json").read_text())
    keys = expected["keys"]
    return expected["max_parallelism"], [v["key"] for v in keys.values()], [
        v["key_group"] for v in keys.values()]


def _arrow_keys(keys, key_type):
    if isinstance(key_type, tuple):
        return pa.array([{"f0": k[0], "f1": k[1]} for k in keys],
                        pa.struct([("f0", pa.string()), ("f1", pa.int32())]))
    return pa.array(keys, {"Long": pa.int64(), "Integer": pa.int32(), "String": pa.string()}[key_type])


@pytest.mark.parametrize("fixture", sorted(KEY_TYPES))
def test_every_fixture_key_group_is_recomputed_from_its_key(fixture):
    """expected.json gives each key's group as real Flink assigned it."""
    key_type = KEY_TYPES[fixture]
    max_p, keys, groups = _fixture_keys(fixture)
    assert len(keys) >= 16
    scalar = [flink_key_group(tuple(k) if isinstance(k, list) else k, key_type, max_p) for k in keys]
    assert scalar == groups
    assert flink_key_groups(_arrow_keys(keys, key_type), key_type, max_p).tolist() == groups


def test_fixture_keys_cover_the_hard_cases():
    _, string_keys, _ = _fixture_keys("pojo-hashmap-canonical")
    assert {"user-004-été", "user-009-€", "user-014-😀"} <= set(string_keys)
    _, long_keys, _ = _fixture_keys("long-hashmap-canonical")
    assert {2**63 - 1, -(2**63), 9007199254740993, -1} <= set(long_keys)
    _, int_keys, _ = _fixture_keys("int-hashmap-native")
    assert {2**31 - 1, -(2**31), -1} <= set(int_keys)


@pytest.mark.parametrize("value, java, code", JAVA_HASH_CODES,
                         ids=[f"{t}:{v!r}" for v, t, _ in JAVA_HASH_CODES])
def test_java_hash_code_matches_the_jvm(value, java, code):
    assert java_hash_code(value, java) == code
    assert java_hash_codes([value], java).tolist() == [code]


def test_tuple_hash_code_is_flinks_formula_with_null_fields_as_zero():
    assert java_hash_code((), ()) == 0  # Tuple0
    assert java_hash_code(("a",), ("String",)) == 97  # Tuple1: the field's hash
    assert java_hash_code(("a", 1), ("String", "Integer")) == 31 * 97 + 1
    assert java_hash_code((None, 1), ("String", "Integer")) == 1
    assert java_hash_code(("a", None), ("String", "Integer")) == 31 * 97
    nested = java_hash_code(("a", (True, 2)), ("String", ("Boolean", "Long")))
    assert nested == 31 * 97 + (31 * 1231 + 2)
    wide = tuple(range(25))
    expected = 0
    for v in wide:
        expected = (31 * expected + v) & 0xFFFFFFFF
    assert java_hash_code(wide, ("Integer",) * 25) == expected - (1 << 32 if expected >= 1 << 31 else 0)


def test_type_names_and_aliases():
    assert type_name(("string", ("long", "int"))) == "Tuple2<String, Tuple2<Long, Integer>>"
    assert type_name(()) == "Tuple0"
    assert java_hash_code(5, "int") == java_hash_code(5, "Integer") == 5


BAD_KEYS = [
    (None, "Long", "a Flink key cannot be null"),
    (1, "BigDecimal", "cannot compute Flink's hash of a key of Java type 'BigDecimal'; supported: "
                      "Long, Integer, Short, Byte, Boolean, Character, Double, Float, String "
                      "and tuples of these"),
    (2**31, "Integer", "2147483648 is not a Java Integer (an integer in -2147483648..2147483647)"),
    (True, "Long", "True is not a Java Long (an integer in "
                   "-9223372036854775808..9223372036854775807)"),
    (1, "String", "1 is not a Java String"),
    ("ab", "Character", "'ab' is not a Java Character (one UTF-16 code unit)"),
    ("😀", "Character", "'😀' is not a Java Character (one UTF-16 code unit)"),
    (("a",), ("String", "Integer"), "('a',) is not a Tuple2<String, Integer> (a sequence of 2 fields)"),
    ((0,) * 26, ("Integer",) * 26, "Flink tuples have at most 25 fields, got a key type with 26"),
    (1e39, "Float", "1e+39 is too large for a Java Float"),
    (10**400, "Double", f"{10**400!r} is too large for a Java Double"),
]


@pytest.mark.parametrize("value, java, message", BAD_KEYS, ids=[f"{t}" for _, t, _ in BAD_KEYS])
def test_bad_keys_are_one_clear_error(value, java, message):
    with pytest.raises(KeyTypeError) as e:
        java_hash_code(value, java)
    assert str(e.value) == message


def test_bad_arrays_are_one_clear_error():
    with pytest.raises(KeyTypeError, match=r"^a Flink key cannot be null \(key 1 is\)$"):
        java_hash_codes(pa.array([1, None]), "Long")
    with pytest.raises(KeyTypeError, match=r"^keys of Arrow type int64 are not all Java Integer values"):
        java_hash_codes(np.array([2**40]), "Integer")
    with pytest.raises(KeyTypeError, match=r"^keys of Arrow type int64 are not Tuple2<String, Integer> "
                                           r"values \(a struct of 2 fields\)$"):
        java_hash_codes(np.array([1]), ("String", "Integer"))
    with pytest.raises(KeyTypeError, match="^Character keys must be strings of one UTF-16 code unit each$"):
        java_hash_codes(pa.array(["a", "😀"]), "Character")
    with pytest.raises(KeyTypeError, match=r"^keys of Arrow type bool are not Java Long values$"):
        java_hash_codes(np.array([True]), "Long")
    with pytest.raises(KeyTypeError, match=r"^keys of Arrow type int64 are not Java Boolean values$"):
        java_hash_codes(np.array([1]), "Boolean")
    with pytest.raises(KeyTypeError, match=r"^keys of Arrow type double are not Java Integer values$"):
        java_hash_codes(np.array([1.5]), "Integer")
    with pytest.raises(KeyTypeError, match=r"^keys are not all Java Float values: a value is too large "
                                           r"for a Java Float$"):
        java_hash_codes(np.array([1.0, 1e300]), "Float")
    assert java_hash_codes(np.array([1.0, np.inf, np.nan]), "Float").tolist() == [
        1065353216, 2139095040, 2143289344]
    with pytest.raises(LimitError):
        flink_key_groups(np.array([1]), "Long", 0)


def test_vector_form_handles_sliced_chunked_and_null_fields():
    strings = pa.array(["x", "😀é€", "", "hello", None, "tail"])
    sliced = strings.slice(1, 3)
    assert java_hash_codes(sliced, "String").tolist() == [
        string_hash_code(s) for s in ["😀é€", "", "hello"]]
    chunked = pa.chunked_array([pa.array([1, 2], pa.int64()), pa.array([3], pa.int64())])
    assert java_hash_codes(chunked, "Long").tolist() == [1, 2, 3]
    tuples = pa.array([{"f0": None, "f1": 1}, {"f0": "a", "f1": None}],
                      pa.struct([("f0", pa.string()), ("f1", pa.int32())]))
    assert java_hash_codes(tuples, ("String", "Integer")).tolist() == [1, 31 * 97]
    assert java_hash_codes(np.array([], dtype=np.int64), "Long").tolist() == []
    assert java_hash_codes(pa.array([], pa.string()), "String").tolist() == []


def test_murmur_hash_is_non_negative_and_the_vector_form_agrees():
    codes = np.array([0, 1, -1, 2**31 - 1, -(2**31), 99162322, 2097153], dtype=np.int32)
    scalar = [murmur_hash(int(c)) for c in codes]
    assert all(0 <= m < 2**31 for m in scalar)
    assert murmur_hash_array(codes).tolist() == scalar


# --- properties -----------------------------------------------------------------------

PROPS = settings(max_examples=200)
INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)


def _int32(x):
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x >= 1 << 31 else x


@PROPS
@given(st.text(min_size=0, max_size=60))
def test_string_hash_is_the_polynomial_over_utf16_units_wrapped_to_int32(s):
    units = [u for (u,) in struct.iter_unpack("<H", s.encode("utf-16-le", "surrogatepass"))]
    n = len(units)
    exact = sum(u * 31 ** (n - 1 - i) for i, u in enumerate(units))  # unbounded Python int
    assert string_hash_code(s) == _int32(exact)
    assert -(2**31) <= string_hash_code(s) < 2**31


@PROPS
@given(st.characters(min_codepoint=0x10000, max_codepoint=0x10FFFF), st.text(max_size=5))
def test_a_supplementary_character_hashes_as_its_two_surrogates(c, rest):
    hi, lo = divmod(ord(c) - 0x10000, 0x400)
    surrogates = chr(0xD800 + hi) + chr(0xDC00 + lo)
    assert string_hash_code(c) == 31 * (0xD800 + hi) + (0xDC00 + lo)
    assert java_hash_code(c + rest, "String") == string_hash_code(surrogates + rest)


@PROPS
@given(INT64)
def test_long_hash_wraps_like_java(v):
    u = v & (2**64 - 1)
    assert java_hash_code(v, "Long") == _int32((u ^ (u >> 32)) & 0xFFFFFFFF)


@PROPS
@given(st.lists(INT32, max_size=6))
def test_integer_tuple_hash_wraps_like_java_int_arithmetic(fields):
    h = 0
    for f in fields:
        h = _int32(31 * h + f)  # Java int: every step wraps
    assert java_hash_code(tuple(fields), ("Integer",) * len(fields)) == h


MAX_P = st.sampled_from([1, 7, 128, 256, 32768])


@PROPS
@given(st.lists(INT64, max_size=40), MAX_P)
def test_vector_equals_scalar_long(values, max_p):
    expected = [flink_key_group(v, "Long", max_p) for v in values]
    assert flink_key_groups(np.array(values, dtype=np.int64), "Long", max_p).tolist() == expected


@PROPS
@given(st.lists(INT32, max_size=40), MAX_P)
def test_vector_equals_scalar_integer(values, max_p):
    expected = [flink_key_group(v, "Integer", max_p) for v in values]
    assert flink_key_groups(np.array(values, dtype=np.int32), "Integer", max_p).tolist() == expected


@PROPS
@given(st.lists(st.text(max_size=20), max_size=40), MAX_P)
def test_vector_equals_scalar_string(values, max_p):
    expected = [flink_key_group(v, "String", max_p) for v in values]
    assert flink_key_groups(pa.array(values, pa.string()), "String", max_p).tolist() == expected
    assert flink_key_groups(pa.array(values, pa.large_string()), "String", max_p).tolist() == expected


@PROPS
@given(st.lists(st.tuples(st.none() | st.text(max_size=8), st.none() | INT32), max_size=30), MAX_P)
def test_vector_equals_scalar_tuple2(values, max_p):
    t = ("String", "Integer")
    expected = [flink_key_group(v, t, max_p) for v in values]
    arr = pa.array([{"f0": a, "f1": b} for a, b in values],
                   pa.struct([("f0", pa.string()), ("f1", pa.int32())]))
    assert flink_key_groups(arr, t, max_p).tolist() == expected
    assert flink_key_groups(values, t, max_p).tolist() == expected  # from Python tuples


@PROPS
@given(st.lists(st.floats(allow_nan=True, width=64), max_size=30),
       st.lists(st.floats(allow_nan=True, width=32), max_size=30),
       st.lists(st.booleans(), max_size=10),
       st.lists(st.integers(-(2**15), 2**15 - 1), max_size=10),
       st.lists(st.integers(-128, 127), max_size=10),
       st.lists(st.integers(0, 0xFFFF), max_size=10))
def test_vector_equals_scalar_other_types(doubles, floats, bools, shorts, bytes_, chars):
    for values, t, dtype in [(doubles, "Double", np.float64), (floats, "Float", np.float32),
                             (bools, "Boolean", np.bool_), (shorts, "Short", np.int16),
                             (bytes_, "Byte", np.int8), (chars, "Character", np.uint16)]:
        expected = [java_hash_code(v, t) for v in values]
        assert java_hash_codes(np.array(values, dtype=dtype), t).tolist() == expected, t
    nan_payload = np.array([0x7FF0000000000123], dtype=np.int64).view(np.float64)
    assert java_hash_codes(nan_payload, "Double").tolist() == [java_hash_code(math.nan, "Double")]
