"""The field layouts of a job's classes, read from its `.class` files (a folder or a jar) or a JSON file.

Kryo's `FieldSerializer` writes an object's non-static, non-transient fields, those of its
superclasses included, sorted by name; how each is written depends on its declared type (final
or not, primitive, its generic arguments) and, for public fields of a public class, on whether
Kryo may use generated accessors. A class file holds all of that; nothing of the JVM is needed.

A JSON layout file is ``{"classes": {"a.b.C": {"super": "...", "final": true, "public": false,
"fields": [{"name": "x", "type": "java.util.List<java.lang.String>"}]}}}``; an enum is
``{"enum": ["LOW", "HIGH"]}``.
"""

from __future__ import annotations

import json
import struct
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import UsageError

ACC_PUBLIC, ACC_STATIC, ACC_FINAL, ACC_TRANSIENT = 0x0001, 0x0008, 0x0010, 0x0080
ACC_INTERFACE, ACC_ABSTRACT, ACC_ENUM = 0x0200, 0x0400, 0x4000
CLASS_MAGIC = 0xCAFEBABE

PRIMITIVES = {"Z": "boolean", "B": "byte", "C": "char", "S": "short", "I": "int", "J": "long",
              "F": "float", "D": "double", "V": "void"}


@dataclass(frozen=True)
class JavaType:
    """A declared type: a class name (primitives by their keyword), its generic arguments, array depth.

    A type variable or wildcard is ``java.lang.Object`` (Kryo cannot know more of it either).
    """

    name: str
    args: tuple["JavaType", ...] = ()
    dims: int = 0

    @property
    def primitive(self) -> bool:
        return self.dims == 0 and self.name in PRIMITIVES.values()

    def __str__(self) -> str:
        args = f"<{', '.join(map(str, self.args))}>" if self.args else ""
        return self.name + args + "[]" * self.dims


OBJECT = JavaType("java.lang.Object")


def kryo_name(t: JavaType) -> str:
    """The name the decoder reads a declared type by (arrays with their brackets)."""
    return t.name + "[]" * t.dims


@dataclass(frozen=True)
class FieldInfo:
    name: str
    type: JavaType
    access: int
    declaring: str

    @property
    def serialized(self) -> bool:
        return not self.access & (ACC_STATIC | ACC_TRANSIENT)


@dataclass(frozen=True)
class ClassInfo:
    name: str
    super: str | None
    access: int
    fields: tuple[FieldInfo, ...]
    enum_constants: tuple[str, ...] = ()

    @property
    def final(self) -> bool:
        return bool(self.access & ACC_FINAL)

    @property
    def public(self) -> bool:
        return bool(self.access & ACC_PUBLIC)

    @property
    def abstract(self) -> bool:
        return bool(self.access & (ACC_ABSTRACT | ACC_INTERFACE))

    @property
    def enum(self) -> bool:
        return bool(self.access & ACC_ENUM)


@dataclass
class ClassPath:
    """Class layouts by binary name (``a.b.Outer$Inner``), from every source given."""

    classes: dict[str, ClassInfo] = field(default_factory=dict)

    def get(self, name: str) -> ClassInfo | None:
        return self.classes.get(name)

    def __bool__(self) -> bool:
        return bool(self.classes)


def load_classpath(paths) -> ClassPath:
    """Layouts from folders of `.class` files, jars and JSON layout files; a bad one is one error."""
    out = ClassPath()
    for p in paths or ():
        path = Path(p)
        if not path.exists():
            raise UsageError(f"--classes {path}: no such file or folder")
        if path.is_dir():
            for f in sorted(path.rglob("*.class")):
                _add(out, f.read_bytes(), str(f))
        elif path.suffix == ".json":
            out.classes.update(_json_layouts(path))
        elif zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as z:
                for n in z.namelist():
                    if n.endswith(".class") and not n.startswith("META-INF/"):
                        _add(out, z.read(n), f"{path}!{n}")
        elif path.suffix == ".class":
            _add(out, path.read_bytes(), str(path))
        else:
            raise UsageError(f"--classes {path}: not a folder, a jar, a .class or a .json layout file")
    return out


def _add(out: ClassPath, data: bytes, source: str) -> None:
    info = parse_class(data, source)
    out.classes[info.name] = info


class _Bytes:
    def __init__(self, data: bytes, source: str):
        self.data, self.pos, self.source = data, 0, source

    def take(self, fmt: str):
        try:
            values = struct.unpack_from(fmt, self.data, self.pos)
        except struct.error:
            raise UsageError(f"{self.source}: not a Java class file (truncated at byte {self.pos})") from None
        self.pos += struct.calcsize(fmt)
        return values[0] if len(values) == 1 else values

    def skip(self, n: int) -> None:
        if n < 0 or self.pos + n > len(self.data):
            raise UsageError(f"{self.source}: not a Java class file (truncated at byte {self.pos})")
        self.pos += n


def parse_class(data: bytes, source: str) -> ClassInfo:
    """A class file's name, superclass, access flags, fields (with generic signatures), enum constants."""
    b = _Bytes(data, source)
    if b.take(">I") != CLASS_MAGIC:
        raise UsageError(f"{source}: not a Java class file")
    b.take(">HH")
    pool = _constant_pool(b)

    def utf(i: int) -> str:
        v = pool.get(i)
        if not isinstance(v, str):
            raise UsageError(f"{source}: bad constant pool index {i}")
        return v

    def class_name(i: int) -> str:
        entry = pool.get(i)
        if not isinstance(entry, tuple) or entry[0] != "class":
            raise UsageError(f"{source}: bad class reference {i}")
        return utf(entry[1]).replace("/", ".")

    access, this, sup = b.take(">HHH")
    name = class_name(this)
    super_name = class_name(sup) if sup else None
    b.skip(2 * b.take(">H"))  # interfaces
    fields = []
    for _ in range(b.take(">H")):
        f_access, f_name, f_desc = b.take(">HHH")
        signature = None
        for _ in range(b.take(">H")):
            a_name, a_len = b.take(">HI")
            if utf(a_name) == "Signature" and a_len == 2:
                signature = utf(b.take(">H"))
            else:
                b.skip(a_len)
        declared = parse_descriptor(signature or utf(f_desc), source)
        fields.append(FieldInfo(utf(f_name), declared, f_access, name))
    enum_constants = tuple(f.name for f in fields if f.access & ACC_ENUM)
    return ClassInfo(name, super_name, access, tuple(fields), enum_constants)


def _constant_pool(b: _Bytes) -> dict[int, object]:
    pool: dict[int, object] = {}
    count = b.take(">H")
    i = 1
    while i < count:
        tag = b.take(">B")
        if tag == 1:
            n = b.take(">H")
            start = b.pos
            b.skip(n)
            pool[i] = b.data[start:start + n].decode("utf-8", "replace")
        elif tag == 7:
            pool[i] = ("class", b.take(">H"))
        elif tag in (3, 4):
            b.skip(4)
        elif tag in (5, 6):
            b.skip(8)
            i += 1  # a long or double takes two slots
        elif tag in (8, 16, 19, 20):
            b.skip(2)
        elif tag in (9, 10, 11, 12, 17, 18):
            b.skip(4)
        elif tag == 15:
            b.skip(3)
        else:
            raise UsageError(f"{b.source}: not a Java class file (constant tag {tag})")
        i += 1
    return pool


def parse_descriptor(text: str, source: str = "<descriptor>") -> JavaType:
    """A field descriptor or generic signature (``Ljava/util/List<Ljava/lang/String;>;``)."""
    t, end = _sig(text, 0, source)
    return t


def _sig(s: str, i: int, source: str) -> tuple[JavaType, int]:
    dims = 0
    while i < len(s) and s[i] == "[":
        dims, i = dims + 1, i + 1
    if i >= len(s):
        raise UsageError(f"{source}: bad type signature {s!r}")
    c = s[i]
    if c in PRIMITIVES:
        return JavaType(PRIMITIVES[c], (), dims), i + 1
    if c == "T":  # a type variable
        return JavaType(OBJECT.name, (), dims), s.index(";", i) + 1
    if c in "*":
        return JavaType(OBJECT.name, (), dims), i + 1
    if c in "+-":
        inner, j = _sig(s, i + 1, source)
        return (inner if c == "+" else OBJECT), j
    if c != "L":
        raise UsageError(f"{source}: bad type signature {s!r}")
    j, name, args = i + 1, [], ()
    while j < len(s) and s[j] not in ";<":
        name.append(s[j])
        j += 1
    if j < len(s) and s[j] == "<":
        parsed = []
        j += 1
        while s[j] != ">":
            a, j = _sig(s, j, source)
            parsed.append(a)
        args = tuple(parsed)
        j += 1
        while j < len(s) and s[j] == ".":  # an inner class of a generic outer: keep the inner's name
            k = j + 1
            while s[k] not in ";<":
                k += 1
            name.append("$" + s[j + 1:k])
            j = k
            if s[j] == "<":
                depth = 0
                while True:
                    depth += {"<": 1, ">": -1}.get(s[j], 0)
                    j += 1
                    if depth == 0:
                        break
    return JavaType("".join(name).replace("/", "."), args, dims), j + 1


def parse_java_type(text: str) -> JavaType:
    """A type as written in a JSON layout: ``int``, ``java.util.Map<java.lang.String, long[]>``."""
    text = text.strip()
    dims = 0
    while text.endswith("[]"):
        text, dims = text[:-2].rstrip(), dims + 1
    if "<" not in text:
        return JavaType(text, (), dims)
    head, rest = text.split("<", 1)
    if not rest.endswith(">"):
        raise UsageError(f"bad type {text!r} in a layout file")
    parts, depth, cur = [], 0, ""
    for ch in rest[:-1]:
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += {"<": 1, ">": -1}.get(ch, 0)
        cur += ch
    parts.append(cur)
    return JavaType(head.strip(), tuple(parse_java_type(p) for p in parts), dims)


def _json_layouts(path: Path) -> dict[str, ClassInfo]:
    try:
        doc = json.loads(path.read_text())
        classes = doc["classes"]
        out = {}
        for name, spec in classes.items():
            access = (ACC_FINAL if spec.get("final", False) else 0) | (ACC_PUBLIC if spec.get("public") else 0)
            if "enum" in spec:
                out[name] = ClassInfo(name, "java.lang.Enum", access | ACC_ENUM | ACC_FINAL, (),
                                      tuple(spec["enum"]))
                continue
            fields = tuple(
                FieldInfo(f["name"], parse_java_type(f["type"]),
                          (ACC_PUBLIC if f.get("public") else 0) | (ACC_TRANSIENT if f.get("transient") else 0)
                          | (ACC_FINAL if f.get("final") else 0),
                          name)
                for f in spec.get("fields", ()))
            out[name] = ClassInfo(name, spec.get("super", "java.lang.Object"), access, fields)
        return out
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise UsageError(f"--classes {path}: not a layout file ({e.__class__.__name__}: {e})") from None
