"""Java object serialization streams (``ObjectOutputStream``), read as plain data.

Some Flink serializer snapshots embed Java-serialized objects with no length before
them (the table runtime's `RowDataSerializer` snapshot holds its fields' `LogicalType`s
that way), so the stream must be parsed to find where it ends. This reads the
grammar of the Java Object Serialization Specification (protocol version 2) into
:class:`JavaObject`, :class:`JavaEnum`, lists and strings. Nothing is instantiated or
executed: class names are only text. Depth and counts are bounded by the bytes left.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import FlinkFormatError, UnsupportedFlinkFeature
from .binary import Reader, decode_modified_utf8

MAGIC = 0xACED
VERSION = 5
BASE_HANDLE = 0x7E0000
MAX_DEPTH = 64

TC_NULL, TC_REFERENCE, TC_CLASSDESC, TC_OBJECT, TC_STRING, TC_ARRAY, TC_CLASS = range(0x70, 0x77)
TC_BLOCKDATA, TC_ENDBLOCKDATA, TC_RESET, TC_BLOCKDATALONG, TC_EXCEPTION, TC_LONGSTRING = range(0x77, 0x7D)
TC_PROXYCLASSDESC, TC_ENUM = 0x7D, 0x7E
SC_WRITE_METHOD, SC_SERIALIZABLE, SC_EXTERNALIZABLE, SC_BLOCK_DATA = 0x01, 0x02, 0x04, 0x08

_NEW = object()  # an element not read before (not null, not a reference)
_PRIMITIVES = {"B": "byte", "C": "ushort", "D": "double", "F": "float", "I": "int", "J": "long",
               "S": "short", "Z": "bool"}


@dataclass
class ClassDesc:
    name: str
    flags: int
    fields: list[tuple[str, str]]  # (type code, name)
    superclass: "ClassDesc | None"

    def hierarchy(self) -> list["ClassDesc"]:
        """This class and its superclasses, topmost first (the order of their data)."""
        out, c = [], self
        while c is not None:
            out.append(c)
            c = c.superclass
        return out[::-1]


@dataclass
class JavaObject:
    """An object: its class, every serialized field of its class hierarchy by name, and what
    its classes' ``writeObject`` methods wrote after their fields (block data as bytes, objects)."""
    cls: str
    fields: dict[str, object] = field(default_factory=dict)
    annotations: list[object] = field(default_factory=list)

    def __getitem__(self, name: str):
        return self.fields[name]

    def get(self, name: str, default=None):
        return self.fields.get(name, default)


@dataclass(frozen=True)
class JavaEnum:
    cls: str
    name: str


@dataclass(frozen=True)
class JavaClass:
    name: str


def read_java_object(r: Reader) -> object:
    """One serialized object from *r* (its own stream header first), leaving *r* after it."""
    at = r.pos
    if r.ushort() != MAGIC or r.ushort() != VERSION:
        raise r.error("not a Java serialization stream (bad magic or version)", at)
    return _Stream(r).content(0)


class _Stream:
    def __init__(self, r: Reader):
        self.r = r
        self.handles: list[object] = []

    def _new_handle(self, value) -> int:
        self.handles.append(value)
        return len(self.handles) - 1

    def content(self, depth: int) -> object:
        if depth > MAX_DEPTH:
            raise self.r.error(f"Java object nested deeper than {MAX_DEPTH}")
        r = self.r
        at, tc, seen = self._start()
        if seen is not _NEW:
            return seen
        if tc == TC_STRING:
            return self._string(r.ushort())
        if tc == TC_LONGSTRING:
            return self._string(r.long())
        if tc == TC_OBJECT:
            return self._object(depth)
        if tc == TC_ENUM:
            desc = self.class_desc(depth)
            h = self._new_handle(None)
            name = self.content(depth + 1)
            self.handles[h] = value = JavaEnum(desc.name if desc else "", str(name))
            return value
        if tc == TC_ARRAY:
            return self._array(depth)
        if tc == TC_CLASS:
            desc = self.class_desc(depth)
            value = JavaClass(desc.name if desc else "")
            self._new_handle(value)
            return value
        if tc in (TC_CLASSDESC, TC_PROXYCLASSDESC):
            r.pos = at
            return self.class_desc(depth)
        if tc == TC_BLOCKDATA:
            return r.bytes(r.ubyte())
        if tc == TC_BLOCKDATALONG:
            return r.bytes(r.int())
        if tc == TC_RESET:
            self.handles.clear()
            return self.content(depth)
        raise r.error(f"Java serialization element {tc:#04x} is not supported", at)

    def _start(self) -> tuple[int, int, object]:
        """(offset, type code, value) of the next element: the value is the element when it is
        null or a reference back to one already read, else ``_NEW`` (its content follows)."""
        at = self.r.pos
        tc = self.r.ubyte()
        if tc == TC_NULL:
            return at, tc, None
        if tc == TC_REFERENCE:
            return at, tc, self._reference(at)
        return at, tc, _NEW

    def _reference(self, at: int):
        h = self.r.int() - BASE_HANDLE
        if not 0 <= h < len(self.handles):
            raise self.r.error(f"Java object reference to unknown handle {h + BASE_HANDLE:#x}", at)
        return self.handles[h]

    def _string(self, n: int) -> str:
        at = self.r.pos
        value = decode_modified_utf8(self.r.bytes(n), self.r.source, self.r.base + at)
        self._new_handle(value)
        return value

    def class_desc(self, depth: int) -> ClassDesc | None:
        r = self.r
        at, tc, seen = self._start()
        if seen is not _NEW:
            if tc == TC_REFERENCE and not isinstance(seen, ClassDesc):
                raise r.error("Java class descriptor reference to something else", at)
            return seen
        if tc == TC_PROXYCLASSDESC:
            h = self._new_handle(None)
            names = [r.utf() for _ in range(self._count(2))]
            self._annotation(depth)
            desc = ClassDesc("proxy(" + ",".join(names) + ")", SC_SERIALIZABLE, [], self.class_desc(depth + 1))
            self.handles[h] = desc
            return desc
        if tc != TC_CLASSDESC:
            raise r.error(f"expected a Java class descriptor, found {tc:#04x}", at)
        name = r.utf()
        r.long()  # serialVersionUID
        desc = ClassDesc(name, 0, [], None)
        self._new_handle(desc)
        desc.flags = r.ubyte()
        for _ in range(self._count(3, r.short())):
            code = chr(r.ubyte())
            fname = r.utf()
            if code in "[L":
                self.content(depth + 1)  # the field's class name, a string
            elif code not in _PRIMITIVES:
                raise r.error(f"bad Java field type code {code!r} in class {name}")
            desc.fields.append((code, fname))
        self._annotation(depth)
        desc.superclass = self.class_desc(depth + 1)
        return desc

    def _count(self, least_bytes_each: int, n: int | None = None) -> int:
        """A count read from the stream, checked against the bytes left."""
        r = self.r
        n = r.int() if n is None else n
        if n < 0 or n * least_bytes_each > r.remaining:
            raise r.error(f"Java serialization count {n} exceeds the bytes left")
        return n

    def _annotation(self, depth: int) -> list[object]:
        out = []
        while True:
            if self.r.remaining <= 0:
                raise self.r.error("Java object annotation has no end marker")
            if self.r.data[self.r.pos] == TC_ENDBLOCKDATA:
                self.r.pos += 1
                return out
            out.append(self.content(depth + 1))

    def _object(self, depth: int) -> JavaObject:
        desc = self.class_desc(depth)
        if desc is None:
            raise self.r.error("Java object without a class")
        obj = JavaObject(desc.name)
        self._new_handle(obj)
        for c in desc.hierarchy():
            if c.flags & SC_EXTERNALIZABLE:
                if not c.flags & SC_BLOCK_DATA:
                    raise UnsupportedFlinkFeature(
                        f"{self.r.source}: Java class {c.name} writes itself in the old externalizable protocol")
                obj.annotations += self._annotation(depth)
                continue
            for code, fname in c.fields:
                obj.fields[fname] = self._value(code, depth)
            if c.flags & SC_WRITE_METHOD:
                obj.annotations += self._annotation(depth)
        return obj

    def _value(self, code: str, depth: int):
        if code in _PRIMITIVES:
            return getattr(self.r, _PRIMITIVES[code])()
        return self.content(depth + 1)

    def _array(self, depth: int) -> list | bytes:
        desc = self.class_desc(depth)
        if desc is None or not desc.name.startswith("["):
            raise self.r.error("Java array without an array class")
        code = desc.name[1]
        h = self._new_handle(None)
        n = self._count(1, self.r.int())
        if code == "B":
            self.handles[h] = data = self.r.bytes(n)  # a byte[] as bytes
            return data
        out: list = []
        self.handles[h] = out
        out.extend(self._value(code, depth) for _ in range(n))
        return out


def java_list(value) -> list:
    """The elements of a serialized java.util list (ArrayList, LinkedList, Arrays$ArrayList,
    the unmodifiable and synchronized wrappers), or of an array."""
    if value is None:
        return []
    if isinstance(value, list):
        return value
    if not isinstance(value, JavaObject):
        raise FlinkFormatError(f"expected a Java list, found {type(value).__name__}")
    for wrapped in ("list", "c", "a"):
        if wrapped in value.fields and isinstance(value.fields[wrapped], (JavaObject, list)):
            return java_list(value.fields[wrapped])
    return [v for v in value.annotations if not isinstance(v, bytes)]
