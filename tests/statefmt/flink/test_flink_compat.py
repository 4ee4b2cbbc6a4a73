"""`statefmt.flink.compat`: two serializer snapshots' types compared, each verdict with its reason."""

from __future__ import annotations

import pytest

from statectl.statefmt.flink import types as T
from statectl.statefmt.flink.compat import (CONVERTIBLE, FLINK_MIGRATES, IDENTICAL, INCOMPATIBLE, compare,
                                            compare_sql)
from statectl.statefmt.flink.rowdata import RowData
from statectl.statefmt.flink.sqltypes import SqlType

LONG, INT, STRING = T.Scalar("long", "LongSerializer"), T.Scalar("int", "IntSerializer"), T.String(serializer="S")


def pojo(*fields, cls="x.P"):
    return T.Pojo(cls, tuple(fields), serializer="PojoSerializer")


def test_the_same_snapshot_is_identical():
    assert compare(pojo(("a", LONG)), pojo(("a", LONG))).level == IDENTICAL


@pytest.mark.parametrize("old,new,level", [(INT, LONG, CONVERTIBLE), (LONG, INT, INCOMPATIBLE),
                                           (T.Scalar("float"), T.Scalar("double"), CONVERTIBLE)])
def test_numbers_widen_and_never_narrow(old, new, level):
    assert compare(old, new, "v").level == level


def test_pojo_fields_added_or_removed_are_migrated_by_flink_and_named():
    v = compare(pojo(("a", LONG), ("b", INT)), pojo(("a", LONG), ("c", STRING)), "profile")
    assert v.level == FLINK_MIGRATES
    assert sorted(v.reasons) == ["profile.b: POJO field removed",
                                 "profile.c: POJO field added (null or 0 in restored values)"]


def test_a_pojo_field_retyped_names_the_field():
    v = compare(pojo(("a", LONG)), pojo(("a", T.Scalar("double", "DoubleSerializer"))), "p")
    assert v.level == INCOMPATIBLE and v.reasons == ("p.a: long became double",)


def test_ttl_switched_on_is_migrated_by_flink_2_and_convertible_for_flink_1():
    assert compare(LONG, T.Ttl(LONG, "TtlSerializer")).level == FLINK_MIGRATES
    v = compare(T.Ttl(LONG, "TtlSerializer"), LONG, flink_2=False)
    assert v.level == CONVERTIBLE and "TTL switched off" in v.reasons[0]


def test_sql_columns():
    varchar = lambda n, nullable=True: SqlType("VARCHAR", nullable, length=n)  # noqa: E731
    assert compare_sql(varchar(10), varchar(20), "f1").level == CONVERTIBLE
    assert compare_sql(varchar(20), varchar(10), "f1").level == INCOMPATIBLE
    assert compare_sql(SqlType("BIGINT", False), SqlType("BIGINT", True), "f0").reasons == \
        ("f0: NOT NULL made nullable",)
    assert compare_sql(SqlType("INTEGER"), SqlType("BIGINT"), "f0").level == CONVERTIBLE
    assert compare_sql(SqlType("BIGINT"), SqlType("INTEGER"), "f0").level == INCOMPATIBLE


def test_a_sql_row_with_a_column_appended():
    old = RowData((SqlType("BIGINT"),))
    assert compare(old, RowData((SqlType("BIGINT"), SqlType("BIGINT")))).level == CONVERTIBLE
    v = compare(old, RowData((SqlType("BIGINT"), SqlType("BIGINT", False))), "acc")
    assert v.level == INCOMPATIBLE and v.reasons[0].startswith("acc.f1: column BIGINT NOT NULL appended")


def test_another_type_or_serializer_is_incompatible():
    assert compare(LONG, STRING).level == INCOMPATIBLE
    assert compare(T.List(LONG, "ListSerializer"), T.List(LONG, "SetSerializer")).level == INCOMPATIBLE
    assert compare(pojo(("a", LONG)), pojo(("a", LONG), cls="y.Q")).level == INCOMPATIBLE


def test_fields_new_adds_are_named_for_their_initial_values():
    old = RowData((SqlType("BIGINT"),))
    v = compare(old, RowData((SqlType("BIGINT"), SqlType("BIGINT"), SqlType("INTEGER"))))
    assert v.level == CONVERTIBLE and v.values and v.added == ("f1", "f2")
    row = compare(T.Row((("a", LONG),), serializer="R"), T.Row((("a", LONG), ("b", INT)), serializer="R"), "acc")
    assert row.added == ("acc.b",)
