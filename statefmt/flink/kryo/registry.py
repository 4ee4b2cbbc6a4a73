"""Which class a Kryo class id names, for each generation of Flink's Kryo.

Kryo registers the primitives and String at ids 0-8 (Kryo 2 also `void` at 9). Flink 1.x adds
chill's Scala registrations (10-72); both generations then register the same Java classes at
73-84, and every `KryoSerializer<T>` registers T and the job's registered types from 85, in the
order its serializer snapshot lists them (T first). The table was read from Flink 1.20's and 2.3's
own KryoSerializer (`tests/kryo_probe`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

KRYO5, KRYO2 = 5, 2
FIRST_USER_ID = 85

PRIMITIVE_IDS = ("int", "java.lang.String", "float", "boolean", "byte", "char", "short", "long", "double")

# Flink's fixed Java registrations (both generations), ids 73-84.
JAVA_IDS = ("java.util.Arrays$ArrayList", "java.util.BitSet", "java.util.PriorityQueue", "java.util.regex.Pattern",
            "java.sql.Date", "java.sql.Time", "java.sql.Timestamp", "java.net.URI",
            "java.net.InetSocketAddress", "java.util.UUID", "java.util.Locale", "java.text.SimpleDateFormat")

# Flink 1.x: chill's Scala registrations, ids 10-72 (decoded as far as their classes are known).
SCALA_IDS = (
    "scala.collection.convert.Wrappers$SeqWrapper", "scala.collection.convert.Wrappers$IteratorWrapper",
    "scala.collection.convert.Wrappers$MapWrapper", "scala.collection.convert.Wrappers$JListWrapper",
    "scala.collection.convert.Wrappers$JMapWrapper", "scala.Some", "scala.util.Left", "scala.util.Right",
    "scala.collection.immutable.Vector", *(f"scala.collection.immutable.Set$Set{i}" for i in range(1, 5)),
    "scala.collection.immutable.HashSet$HashTrieSet", *(f"scala.collection.immutable.Map$Map{i}" for i in range(1, 5)),
    "scala.collection.immutable.HashMap$HashTrieMap", "scala.collection.immutable.Range$Inclusive",
    "scala.collection.immutable.NumericRange$Inclusive", "scala.collection.immutable.NumericRange$Exclusive",
    "scala.collection.mutable.BitSet", "scala.collection.mutable.HashMap", "scala.collection.mutable.HashSet",
    "scala.collection.convert.Wrappers$IterableWrapper", *(f"scala.Tuple{i}" for i in range(1, 23)),
    "scala.Tuple1$mcJ$sp", "scala.Tuple1$mcI$sp", "scala.Tuple1$mcD$sp",
    *(f"scala.Tuple2$mc{a}{b}$sp" for a in "JID" for b in "JID"),
    "scala.Symbol", "scala.reflect.ClassTag", "scala.runtime.BoxedUnit")

# Boxed values share their primitive's registration.
BOXED = {"java.lang.Integer": "int", "java.lang.Float": "float", "java.lang.Boolean": "boolean",
         "java.lang.Byte": "byte", "java.lang.Character": "char", "java.lang.Short": "short",
         "java.lang.Long": "long", "java.lang.Double": "double"}


@dataclass(frozen=True)
class Registration:
    """A registered class; *serializer* names a custom serializer class ('' for Kryo's default)."""

    name: str
    serializer: str = ""


@dataclass
class KryoConfig:
    """One KryoSerializer's class table and custom serializers, from its snapshot."""

    generation: int
    type_class: str
    ids: dict[int, Registration] = field(default_factory=dict)
    custom_defaults: dict[str, str] = field(default_factory=dict)  # class -> default serializer class

    @classmethod
    def build(cls, generation: int, type_class: str, registrations: list[Registration],
              custom_defaults: dict[str, str]) -> "KryoConfig":
        ids = {i: Registration(n) for i, n in enumerate(PRIMITIVE_IDS)}
        if generation == KRYO2:
            ids[9] = Registration("void")
            ids.update({10 + i: Registration(n) for i, n in enumerate(SCALA_IDS)})
        ids.update({73 + i: Registration(n) for i, n in enumerate(JAVA_IDS)})
        for i, reg in enumerate(registrations):
            ids[FIRST_USER_ID + i] = reg
        return cls(generation, type_class, ids, dict(custom_defaults))

    def custom_serializer(self, name: str) -> str:
        """The custom serializer a class is written with ('' when Kryo's own)."""
        for reg in self.ids.values():
            if reg.name == name and reg.serializer:
                return reg.serializer
        return self.custom_defaults.get(name, "")
