"""Kryo values (Flink's `KryoSerializer`) as typed columns.

The declared type decides the column: a number, a string (also UUIDs, big numbers, URIs,
locales, enum constants), a date or time, or, for a final class whose layout is known, a struct
of its fields. What only the bytes say (a field typed `Object`, an interface or a non-final
class, a collection, a map) is a JSON string, an object with its class under ``"@class"``.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pyarrow as pa

from ...errors import FlinkFormatError
from ..kryo.classes import JavaType
from ..kryo.decode import FINAL_BUILTINS, LIST_DECLARED, KryoDecoder
from ..kryo.stream import KryoDataError
from .base import DamagedValue, FlinkType
from .scalars import Opaque

KRYO_SERIALIZER = "org.apache.flink.api.java.typeutils.runtime.kryo.KryoSerializer"


class KryoValueError(DamagedValue):
    """A damaged Kryo value (or one holding a class it cannot read), located in its bytes."""

    kind = "Kryo"

_NUMBERS = {"int": pa.int32(), "long": pa.int64(), "short": pa.int16(), "byte": pa.int8(),
            "float": pa.float32(), "double": pa.float64(), "boolean": pa.bool_(), "char": pa.string()}
_BOXED = {"java.lang.Integer": "int", "java.lang.Long": "long", "java.lang.Short": "short",
          "java.lang.Byte": "byte", "java.lang.Float": "float", "java.lang.Double": "double",
          "java.lang.Boolean": "boolean", "java.lang.Character": "char"}
_TEXT = {"java.lang.String", "java.util.UUID", "java.math.BigDecimal", "java.math.BigInteger", "java.net.URI",
         "java.util.Locale"}
_TIMES = {"java.time.LocalDate": pa.date32(), "java.time.LocalDateTime": pa.timestamp("us"),
          "java.time.LocalTime": pa.time64("us"), "java.time.Instant": pa.timestamp("us", "UTC"),
          "java.util.Date": pa.timestamp("us", "UTC"), "java.sql.Date": pa.timestamp("us", "UTC"),
          "java.sql.Timestamp": pa.timestamp("us", "UTC"), "java.sql.Time": pa.timestamp("us", "UTC")}
JSON = pa.string()


def _json_default(v):
    if isinstance(v, (dt.date, dt.time)):
        return v.isoformat()
    return str(v)


def as_json(value) -> str | None:
    return None if value is None else json.dumps(value, default=_json_default, ensure_ascii=False)


@dataclass(frozen=True, eq=False)
class Kryo(FlinkType):
    """Values of one KryoSerializer<T>: decoded by *decoder*, typed from T's declared class."""

    type_class: str
    decoder: KryoDecoder = field(repr=False)
    serializer: str = KRYO_SERIALIZER
    # the serializer snapshot as the savepoint holds it (class, version, payload): a rewrite
    # writes it again as it was, registrations and all
    snapshot: bytes = field(default=b"", repr=False)

    def describe(self) -> str:
        return f"Kryo<{self.type_class}>"

    def arrow(self) -> pa.DataType:
        return self._arrow_of(JavaType(self.type_class), ())

    def _arrow_of(self, t: JavaType, seen: tuple[str, ...]) -> pa.DataType:
        """*t*'s column type: its own where the declared type fixes it, else JSON text."""
        typed = self._typed(t, seen)
        return JSON if typed is None else typed

    def _typed(self, t: JavaType, seen: tuple[str, ...]) -> pa.DataType | None:
        if t.dims:
            return None
        if t.name in LIST_DECLARED and len(t.args) == 1 and self.decoder.is_final(t.args[0]):
            element = self._typed(t.args[0], seen)
            return None if element is None else pa.list_(element)
        if t.name == "java.util.Optional" and len(t.args) == 1 and self.decoder.is_final(t.args[0]):
            return self._typed(t.args[0], seen)  # an Optional is its content, or null
        name = _BOXED.get(t.name, t.name)
        if name in _NUMBERS:
            return _NUMBERS[name]
        if name in _TEXT:
            return pa.string()
        if name in _TIMES:
            return _TIMES[name]
        info = self.decoder.class_info(name)
        if info is None or name in seen or not info.final or info.abstract:
            return None
        if info.enum:
            return pa.string()
        fields = self.decoder.fields_of(info)
        return pa.struct([(f.name, self._arrow_of(f.type, seen + (name,))) for f in fields])

    def read(self, r):
        value, end = self._decode(r.data, r.pos, r.end, r.base, r.source)
        r.pos = end
        return self._convert(value, JavaType(self.type_class), ())

    @cached_property
    def plan(self):
        """The compiled walk for this class's values (None: they are decoded one by one)."""
        from ..kryo.plan import fixed_plan
        return fixed_plan(self.decoder, self.type_class)

    def column(self, buf, starts, limits=None):
        """All values at once where the class's layout is fixed (:mod:`..kryo.plan`); the rows
        that hold a back reference, and every value of other classes, one by one."""
        if self.plan is None:
            return super().column(buf, starts, limits)
        from ..kryo.kernel import ENDS_EARLY, OK
        from ..kryo.plan import columns
        starts = np.asarray(starts, dtype=np.int64)
        bounds = np.full(len(starts), len(buf.data), dtype=np.int64) if limits is None else \
            np.minimum(np.asarray(limits, dtype=np.int64), len(buf.data))  # the walk reads no further
        array, ends, fallback, (code, row, at) = columns(self.plan, self.decoder, buf.arr, starts, bounds, self.arrow())
        if code != OK:
            what = "it ends early" if code == ENDS_EARLY else "its bytes make no sense"
            raise KryoValueError(buf.source, f"{self.type_class}: {what}", int(at), buf.base)
        if not fallback.any():
            return array, ends
        rows = np.flatnonzero(fallback)
        try:
            slow, slow_ends = super().column(buf, starts[rows], None if limits is None else limits[rows])
        except (pa.ArrowTypeError, pa.ArrowInvalid):  # a damaged value read as another class
            raise KryoValueError(buf.source, f"{self.type_class}: a value does not fit its class",
                                 int(starts[rows[0]]), buf.base) from None
        ends[rows] = slow_ends
        order = np.arange(len(starts))
        order[rows] = len(starts) + np.arange(len(rows))
        return pa.concat_arrays([array, slow.cast(array.type)]).take(pa.array(order)), ends

    def _decode(self, data, start: int, end: int, base: int, source: str):
        try:
            return self.decoder.read_value(data, start, end)
        except KryoDataError as e:
            raise KryoValueError(source, str(e), start, base) from None

    def _convert(self, value, t: JavaType, seen: tuple[str, ...]):
        """*value* (as decoded) shaped as :meth:`_arrow_of` types *t*."""
        if value is None:
            return None
        arrow = self._typed(t, seen)
        if arrow is None:
            return as_json(value)
        if pa.types.is_list(arrow):
            return [self._convert(v, t.args[0], seen) for v in value]
        if t.name == "java.util.Optional":
            return self._convert(value, t.args[0], seen)
        if pa.types.is_struct(arrow):
            if not isinstance(value, dict) or value.get("@class") != t.name:
                return None if not isinstance(value, dict) else self._struct_mismatch(value, t)
            info = self.decoder.class_info(t.name)
            return {f.name: self._convert(value.get(f.name), f.type, seen + (t.name,))
                    for f in self.decoder.fields_of(info)}
        return value

    def _struct_mismatch(self, value, t: JavaType):
        raise FlinkFormatError(f"a Kryo value of the final class {t.name} holds a {value.get('@class')}")


@dataclass(frozen=True, eq=False)
class KryoBytes(Opaque):
    """Kryo values that cannot be decoded here (no layout, a custom serializer): each value's
    class, as its bytes name it, beside the bytes themselves."""

    decoder: KryoDecoder | None = field(default=None, repr=False, compare=False)

    def arrow(self):
        return pa.struct([("class", pa.string()), ("bytes", pa.binary())])

    def column(self, buf, starts, limits=None):
        raw, limits = super().column(buf, starts, limits)
        from ..kryo.kernel import classes_at
        starts = np.asarray(starts, dtype=np.int64)
        n = len(starts)
        ids = np.zeros(n, dtype=np.int64)
        name_starts, name_ends = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
        classes_at(buf.arr, starts, np.minimum(limits, len(buf.data)), ids, name_starts, name_ends)
        names = self._names(buf, ids, name_starts, name_ends)
        valid = ids != -3
        return pa.StructArray.from_arrays([names, raw], ["class", "bytes"], mask=pa.array(~valid)), limits

    def _names(self, buf, ids: np.ndarray, name_starts: np.ndarray, name_ends: np.ndarray) -> pa.Array:
        """The class names: registered ids through the class table, names as written (each
        distinct one decoded once)."""
        out = np.empty(len(ids), dtype=object)
        table = self.decoder.config.ids
        for cid in np.unique(ids[ids >= 0]).tolist():
            reg = table.get(cid)
            out[ids == cid] = reg.name if reg is not None else f"(class id {cid})"
        named = np.flatnonzero(ids == -1)
        if len(named):
            spans = buf.slices(name_starts[named], name_ends[named]).dictionary_encode()
            texts = np.array([(k[:-1] + bytes([k[-1] & 0x7F])).decode("latin-1") for k in spans.dictionary.to_pylist()],
                             dtype=object)
            out[named] = texts[spans.indices.to_numpy()]
        for i in np.flatnonzero(ids == -2).tolist():
            from ..kryo.stream import KryoIn
            out[i] = KryoIn(buf.data, int(name_starts[i]), len(buf.data), True).string()
        out[ids == -4] = None
        return pa.array(out, pa.string())


NOT_FIXED = "only a final class whose fields Kryo writes in a fixed layout (numbers, strings, enums, such classes) can be"


def writable(t: Kryo) -> str | None:
    """Why values of *t* cannot be written again (None when they can)."""
    if not t.snapshot:
        return "its serializer snapshot is not at hand"
    if t.plan is None:
        return NOT_FIXED
    return None


def needs_classes(decoder: KryoDecoder, type_class: str) -> str | None:
    """Why values of *type_class* cannot be decoded with the layouts at hand (None when they can)."""
    return _missing(decoder, JavaType(type_class), (), bool(decoder.classpath))


def _missing(decoder: KryoDecoder, t: JavaType, seen: tuple[str, ...], have_classes: bool) -> str | None:
    name = t.name
    if t.dims:
        return _missing(decoder, JavaType(name), seen, have_classes)
    if t.primitive or name in _BOXED or name in FINAL_BUILTINS or name in _TEXT or name in _TIMES \
            or name in seen:
        return None
    info = decoder.class_info(name)
    if info is None:
        if name.startswith(("java.", "javax.")):
            return None if have_classes or name in _GENERIC_JDK else f"{name} holds values of classes named only in the bytes"
        return f"no layout for {name}"
    if info.enum:
        return None
    if not info.final and not have_classes:
        return f"{name} is not final: its values' classes are named only in the bytes"
    for f in decoder.fields_of(info):
        why = _missing(decoder, f.type, seen + (name,), have_classes)
        if why:
            return why
    return None


# JDK containers whose contents Kryo names by class id or name: decodable when those classes are.
_GENERIC_JDK = {"java.util.List", "java.util.ArrayList", "java.util.Map", "java.util.HashMap", "java.util.Set",
                "java.util.HashSet", "java.util.Collection", "java.util.LinkedList", "java.util.TreeMap",
                "java.util.LinkedHashMap", "java.util.LinkedHashSet", "java.util.TreeSet"}


def classes_note(t: FlinkType) -> str:
    """What a state's type says about `--classes`: why its values stay bytes without them."""
    reason = getattr(t, "reason", "")
    return reason if "--classes" in reason else ""
