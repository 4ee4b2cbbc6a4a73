"""Flink's dates, times and windows: fixed-width, decoded with numpy."""

from __future__ import annotations

import datetime
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from .base import LONG_MIN, FlinkType
from .buffer import as_dtype


@dataclass(frozen=True)
class Epoch(FlinkType):
    """Date, java.sql.Date/Time (a long of epoch ms, Long.MIN_VALUE = null)."""
    serializer: str = ""
    width = 8

    def arrow(self):
        return pa.timestamp("ms")

    def read(self, r):
        v = r.long()
        return None if v == LONG_MIN else v

    def from_matrix(self, m):
        v = as_dtype(m, ">i8").astype("<i8")
        return pa.array(v, pa.int64(), mask=v == LONG_MIN).cast(pa.timestamp("ms"))


@dataclass(frozen=True)
class SecondsNanos(FlinkType):
    """Instant (epoch seconds, nanos) and java.sql.Timestamp (epoch ms, nanos of the second)."""
    millis: bool
    serializer: str = ""
    width = 12

    def arrow(self):
        return pa.timestamp("ns")

    def _ns(self, first, nanos):
        seconds = np.floor_divide(first, 1000) if self.millis else first
        return seconds * 1_000_000_000 + nanos

    def read(self, r):
        first, nanos = r.long(), r.int()
        if first == LONG_MIN:
            return None
        return int(self._ns(first, nanos))

    def from_matrix(self, m):
        first = as_dtype(m[:, :8], ">i8").astype("<i8")
        nanos = as_dtype(m[:, 8:], ">i4").astype("<i8")
        return pa.array(self._ns(first, nanos), pa.int64(), mask=first == LONG_MIN).cast(pa.timestamp("ns"))


@dataclass(frozen=True)
class LocalDate(FlinkType):
    serializer: str = ""
    width = 6

    def arrow(self):
        return pa.date32()

    def read(self, r):
        year = r.int()
        month, day = r.byte(), r.byte()
        return None if year == -(1 << 31) else datetime.date(year, month, day)

    @staticmethod
    def days(m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Days since the epoch and the null mask of LocalDate bytes."""
        year = as_dtype(m[:, :4], ">i4").astype(np.int64)
        null = year == -(1 << 31)
        year = np.where(null, 1970, year)
        month = np.where(null, 1, m[:, 4].astype(np.int64))
        day = np.where(null, 1, m[:, 5].astype(np.int64))
        months = (year - 1970) * 12 + (month - 1)
        first = months.astype("datetime64[M]").astype("datetime64[D]").astype(np.int64)
        return first + day - 1, null

    def from_matrix(self, m):
        days, null = self.days(m)
        return pa.array(days.astype(np.int32), pa.int32(), mask=null).cast(pa.date32())


@dataclass(frozen=True)
class LocalTime(FlinkType):
    serializer: str = ""
    width = 7

    def arrow(self):
        return pa.time64("ns")

    def read(self, r):
        hour = r.byte()
        minute, second, nano = r.byte(), r.byte(), r.int()
        if hour == -128:
            return None
        return ((hour * 60 + minute) * 60 + second) * 1_000_000_000 + nano

    @staticmethod
    def nanos(m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        hour = m[:, 0].astype(np.int8).astype(np.int64)
        null = hour == -128
        nano = as_dtype(m[:, 3:7], ">i4").astype(np.int64)
        value = ((hour * 60 + m[:, 1].astype(np.int64)) * 60 + m[:, 2].astype(np.int64)) * 1_000_000_000 + nano
        return np.where(null, 0, value), null

    def from_matrix(self, m):
        value, null = self.nanos(m)
        return pa.array(value, pa.int64(), mask=null).cast(pa.time64("ns"))


@dataclass(frozen=True)
class LocalDateTime(FlinkType):
    serializer: str = ""
    width = 13

    def arrow(self):
        return pa.timestamp("ns")

    def read(self, r):
        date = LocalDate().read(r)
        time = LocalTime().read(r)
        if date is None:
            return None
        days = (date - datetime.date(1970, 1, 1)).days
        return days * 86_400_000_000_000 + time

    def from_matrix(self, m):
        days, null = LocalDate.days(m[:, :6])
        nanos, _ = LocalTime.nanos(m[:, 6:])
        return pa.array(days * 86_400_000_000_000 + nanos, pa.int64(), mask=null).cast(pa.timestamp("ns"))


@dataclass(frozen=True)
class TimeWindow(FlinkType):
    serializer: str = ""
    width = 16

    def arrow(self):
        return pa.struct([("start", pa.int64()), ("end", pa.int64())])

    def read(self, r):
        return {"start": r.long(), "end": r.long()}

    def from_matrix(self, m):
        return pa.StructArray.from_arrays(
            [pa.array(as_dtype(m[:, :8], ">i8").astype("<i8")), pa.array(as_dtype(m[:, 8:], ">i8").astype("<i8"))],
            names=["start", "end"])

    def describe(self):
        return "TimeWindow"
