"""One Kryo value to Python, as Flink's `KryoSerializer` wrote it (class, reference, object).

Objects become dicts with their class under ``@class``; collections lists; maps lists of
``{"key", "value"}``; UUIDs, big numbers, URIs and locales their text; dates `datetime`s.
References (Flink turns them on) are followed: a repeated object is decoded once and appears
again where it was referenced. A class without a known layout, or written by a custom
serializer, is a :class:`MissingLayout`, naming it.
"""

from __future__ import annotations

from .classes import OBJECT, ClassInfo, ClassPath, FieldInfo, JavaType, kryo_name
from .jdk import ARRAY_ELEMENTS, BUILTINS, FIELD_PRIMITIVES, SCALARS
from .known import KNOWN_LAYOUTS
from .registry import BOXED, KRYO2, KRYO5, KryoConfig
from .stream import KryoDataError, KryoIn

NULL, NOT_NULL = 0, 1
MAX_DEPTH = 64  # objects inside objects: deeper is taken for damage (as for Java-serialized objects)
NAME = -1

# Values Kryo never references (no reference marker before them).
UNREFERENCED = {"int", "float", "boolean", "byte", "char", "short", "long", "double", *BOXED}

COLLECTIONS = {"java.util.ArrayList", "java.util.LinkedList", "java.util.HashSet", "java.util.LinkedHashSet",
               "java.util.Vector", "java.util.ArrayDeque", "java.util.concurrent.CopyOnWriteArrayList",
               "java.util.concurrent.ConcurrentLinkedQueue", "java.util.Stack",
               # the Collections wrappers are Collections too: Kryo writes what they hold
               *(f"java.util.Collections${kind}{what}" for kind in ("Unmodifiable", "Synchronized", "Checked")
                 for what in ("Collection", "List", "RandomAccessList", "Set", "SortedSet", "NavigableSet"))}
SORTED_COLLECTIONS = {"java.util.TreeSet", "java.util.concurrent.ConcurrentSkipListSet"}
MAPS = {"java.util.HashMap", "java.util.LinkedHashMap", "java.util.concurrent.ConcurrentHashMap",
        "java.util.Hashtable", "java.util.IdentityHashMap", "java.util.WeakHashMap",
        *(f"java.util.Collections${kind}{what}" for kind in ("Unmodifiable", "Synchronized", "Checked")
          for what in ("Map", "SortedMap", "NavigableMap"))}
SORTED_MAPS = {"java.util.TreeMap", "java.util.concurrent.ConcurrentSkipListMap"}
# Declared collection types a column types as a list (when the element type is known).
LIST_DECLARED = {"java.util.List", "java.util.Collection", "java.util.Set", "java.util.ArrayList",
                 "java.util.LinkedList", "java.util.HashSet", "java.util.LinkedHashSet"}
FINAL_BUILTINS = {"java.lang.String", "java.util.UUID", "java.net.URI",
                  "java.util.Locale", "java.util.Optional", "java.time.LocalDate", "java.time.LocalDateTime",
                  "java.time.Instant", "java.time.LocalTime", "java.time.Duration", *BOXED}


class MissingLayout(KryoDataError):
    """A class the decoder cannot read: no layout given, or a custom serializer."""

    def __init__(self, class_name: str, why: str):
        super().__init__(f"class {class_name}: {why}")
        self.class_name = class_name


class KryoDecoder:
    """Decodes values of one `KryoSerializer`: its class table, the generation, the job's layouts."""

    def __init__(self, config: KryoConfig, classpath: ClassPath):
        self.config, self.classpath = config, classpath
        self.little = config.generation == KRYO5

    def read_value(self, data, start: int, end: int):
        """The value written by `writeClassAndObject` at *start* and where it ends."""
        state = _Graph(KryoIn(data, start, end, self.little))
        value = self._class_and_object(state, None)
        return value, state.inp.pos

    # -- classes and references --------------------------------------------------------------

    def _read_class(self, g: "_Graph") -> str | None:
        cid = g.inp.varint()
        if cid == NULL:
            return None
        if cid == 1:  # NAME + 2: a class name, or a reference to one named before in this value
            name_id = g.inp.varint()
            if name_id in g.names:
                return g.names[name_id]
            name = g.inp.string()
            if not name:
                raise KryoDataError("empty class name")
            g.names[name_id] = name
            return name
        reg = self.config.ids.get(cid - 2)
        if reg is None:
            raise KryoDataError(f"unregistered class id {cid - 2}")
        if reg.serializer:
            raise MissingLayout(reg.name, f"written by the custom Kryo serializer {reg.serializer}")
        return reg.name

    def _class_and_object(self, g: "_Graph", generic: JavaType | None):
        name = self._read_class(g)
        if name is None:
            return None
        return self._object(g, name, generic, may_be_null=False)

    def _object(self, g: "_Graph", name: str, generic: JavaType | None, may_be_null: bool):
        """`writeObject`/`writeObjectOrNull` of a known class: the reference marker, then the data."""
        referenced = name not in UNREFERENCED and not self._is_enum(name)
        if may_be_null or referenced:
            if not referenced:
                return None if g.inp.varint() == NULL else self._data(g, name, generic)
            marker = g.inp.varint()
            if marker == NULL:
                if not may_be_null:
                    raise KryoDataError(f"null reference where {name} cannot be null")
                return None
            if marker != NOT_NULL:
                index = marker - 2
                if not 0 <= index < len(g.refs):
                    raise KryoDataError(f"reference {index} to no object read before")
                if index in g.open:  # an object inside itself: named, not repeated (no cycles in a row)
                    return {"@class": name, "@reference": "to an enclosing object"}
                return g.refs[index]
            slot = len(g.refs)
            g.refs.append(None)
            g.open.add(slot)
            value = self._data(g, name, generic, slot)
            g.open.discard(slot)
            g.refs[slot] = value
            return value
        return self._data(g, name, generic)

    def _is_enum(self, name: str) -> bool:
        """Kryo 5 never references an enum constant; Kryo 2 does."""
        if self.config.generation != KRYO5:
            return False
        info = self.classpath.get(name)
        return info is not None and info.enum

    # -- the data of one class ------------------------------------------------------------------

    def _data(self, g: "_Graph", name: str, generic: JavaType | None, slot: int | None = None):
        g.depth += 1
        if g.depth > MAX_DEPTH:
            raise KryoDataError(f"objects nested more than {MAX_DEPTH} deep")
        try:
            return self._data_of(g, name, generic, slot)
        finally:
            g.depth -= 1

    def _data_of(self, g: "_Graph", name: str, generic: JavaType | None, slot: int | None):
        custom = self.config.custom_defaults.get(name)
        if custom:
            raise MissingLayout(name, f"written by the custom Kryo serializer {custom}")
        if name in SCALARS:
            return SCALARS[name](g.inp, self.little)
        reader = BUILTINS.get(name)
        if reader is not None:
            return reader(self, g, generic)
        if name in COLLECTIONS or name in SORTED_COLLECTIONS:
            return self._collection(g, name, generic, sorted_=name in SORTED_COLLECTIONS)
        if name in MAPS or name in SORTED_MAPS:
            return self._map(g, name, generic, sorted_=name in SORTED_MAPS)
        if name.endswith("[]"):
            return self._array(g, name[:-2])
        if name.startswith("["):  # an array class as Java names it: [I, [Ljava.lang.String;
            return self._array(g, _array_element(name))
        info = self.class_info(name)
        if info is None:
            raise MissingLayout(name, "no layout (give the job's classes with --classes)")
        if info.enum:
            return self._enum_constant(g, info)
        obj = {"@class": name}
        if slot is not None:
            g.refs[slot] = obj  # an object may reference itself through its fields
        for f in self.fields_of(info):
            obj[f.name] = self._field(g, f)
        return obj

    def class_info(self, name: str) -> ClassInfo | None:
        """A class's layout: the job's (`--classes`), else one statectl knows (`known.py`)."""
        return self.classpath.get(name) or KNOWN_LAYOUTS.get(name)

    def fields_of(self, info: ClassInfo) -> list[FieldInfo]:
        """The fields Kryo's FieldSerializer writes, in its order: the class's and its superclasses', by name."""
        out, cls = [], info
        while cls is not None and cls.name != OBJECT.name:
            out.extend(f for f in cls.fields if f.serialized)
            if cls.super in (None, OBJECT.name):
                break
            parent = self.class_info(cls.super)
            if parent is None:
                raise MissingLayout(cls.super, f"no layout for the superclass of {info.name}")
            cls = parent
        return sorted(out, key=lambda f: f.name)

    def _field(self, g: "_Graph", f: FieldInfo):
        t = f.type
        if t.primitive:
            return FIELD_PRIMITIVES[t.name](g.inp, self.little)
        if self.is_final(t):
            return self._object(g, kryo_name(t), t, may_be_null=True)
        return self._class_and_object(g, t)

    def is_final(self, t: JavaType) -> bool:
        """Whether Kryo takes a declared type as the value's class (and writes no class id)."""
        if t.dims:
            element = JavaType(t.name)
            return element.primitive or self.is_final(element)
        if t.primitive or t.name in FINAL_BUILTINS:
            return True
        info = self.class_info(t.name)
        return info is not None and info.final

    def _enum_constant(self, g: "_Graph", info: ClassInfo):
        ordinal = g.inp.varint() - 1
        if ordinal < 0:
            return None
        if ordinal >= len(info.enum_constants):
            raise KryoDataError(f"enum {info.name} has no constant {ordinal}")
        return info.enum_constants[ordinal]

    # -- containers ---------------------------------------------------------------------------------

    def _element_type(self, generic: JavaType | None, index: int) -> JavaType | None:
        if generic is None or len(generic.args) <= index:
            return None
        return generic.args[index]

    def _collection(self, g: "_Graph", name: str, generic: JavaType | None, sorted_: bool = False):
        if self.config.generation == KRYO2:
            if sorted_:
                self._class_and_object(g, None)  # the comparator
            return self._elements_kryo2(g, g.inp.varint(), self._element_type(generic, 0))
        return self._collection_kryo5(g, generic, sorted_)

    def _elements_kryo2(self, g: "_Graph", n: int, element: JavaType | None) -> list:
        self._check_count(g, n)
        if element is not None and self.is_final(element):
            return [self._object(g, kryo_name(element), element, may_be_null=True) for _ in range(n)]
        return [self._class_and_object(g, element) for _ in range(n)]

    def _collection_kryo5(self, g: "_Graph", generic: JavaType | None, sorted_: bool) -> list:
        inp = g.inp
        element = self._element_type(generic, 0)
        known = element is not None and self.is_final(element)
        if known:
            has_null, n = inp.varint_flag()
        else:
            same_class, n = inp.varint_flag()
        n -= 1
        if sorted_:
            self._class_and_object(g, None)  # the comparator
        if n <= 0:
            return []
        self._check_count(g, n)
        if known:
            name = kryo_name(element)
            return [self._object(g, name, element, may_be_null=has_null) for _ in range(n)]
        if not same_class:
            return [self._class_and_object(g, None) for _ in range(n)]
        name = self._read_class(g)
        if name is None:
            return [None] * n
        has_null = inp.byte() != 0
        return [self._object(g, name, None, may_be_null=has_null) for _ in range(n)]

    def _map(self, g: "_Graph", name: str, generic: JavaType | None, sorted_: bool = False) -> list:
        inp = g.inp
        if self.config.generation == KRYO2:
            if sorted_:
                self._class_and_object(g, None)
            n = inp.varint()
        else:
            n = inp.varint() - 1
            if sorted_:
                self._class_and_object(g, None)
        if n <= 0:
            return []
        self._check_count(g, n)
        key_t, value_t = self._element_type(generic, 0), self._element_type(generic, 1)
        return [{"key": self._member(g, key_t), "value": self._member(g, value_t)} for _ in range(n)]

    def _member(self, g: "_Graph", t: JavaType | None):
        if t is not None and self.is_final(t):
            return self._object(g, kryo_name(t), t, may_be_null=True)
        return self._class_and_object(g, t)

    def _array(self, g: "_Graph", element: str):
        n = g.inp.varint() - 1
        if n < 0:
            return None
        self._check_count(g, n)
        if element in FIELD_PRIMITIVES:
            read = ARRAY_ELEMENTS.get(element, FIELD_PRIMITIVES[element])
            return [read(g.inp, self.little) for _ in range(n)]
        t = JavaType(element)
        if element == "java.lang.String" or self.is_final(t):
            return [self._object(g, element, t, may_be_null=True) for _ in range(n)]
        return [self._class_and_object(g, None) for _ in range(n)]

    def _check_count(self, g: "_Graph", n: int) -> None:
        if n < 0 or n > g.inp.end - g.inp.pos:
            raise KryoDataError(f"bad element count {n} at {g.inp.pos}")


class _Graph:
    """What one value's decoding remembers: class names by id, objects by reference id."""

    __slots__ = ("inp", "names", "refs", "depth", "open")

    def __init__(self, inp: KryoIn):
        self.inp, self.names, self.refs, self.depth = inp, {}, [], 0
        self.open: set[int] = set()  # objects being read: a reference to one is a cycle


_ARRAY_CODES = {"Z": "boolean", "B": "byte", "C": "char", "S": "short", "I": "int", "J": "long", "F": "float",
                "D": "double"}


def _array_element(name: str) -> str:
    """The element class of an array class's binary name (one dimension less)."""
    inner = name[1:]
    if inner.startswith("["):
        return _array_element(inner) + "[]"
    if inner.startswith("L") and inner.endswith(";"):
        return inner[1:-1]
    if inner in _ARRAY_CODES:
        return _ARRAY_CODES[inner]
    raise KryoDataError(f"bad array class name {name!r}")
