"""A `KryoSerializerSnapshot`: the declared class, the registrations in id order, the default
serializers. Its payload is the declared class name, then three linked optional maps."""

from __future__ import annotations

from .registry import KryoConfig, Registration

UNSPECIFIED, CLASS, INSTANCE = 0, 1, 2


def read_registration(name: str, r) -> Registration:
    """One registration's framed bytes: the class, how its serializer is given, that serializer."""
    if r is None:  # the class is missing where the snapshot was written: its id still counts
        return Registration(name)
    r.utf()  # the registered class (a stand-in for Avro's)
    kind = r.int()
    if kind == UNSPECIFIED:
        return Registration(name)
    if kind == CLASS:
        return Registration(name, r.utf())
    return Registration(name, "a serializer instance")


def kryo_config(generation: int, type_class: str, registrations, defaults, default_classes) -> KryoConfig:
    custom = {name: "a default serializer" for name, _, _ in list(defaults) + list(default_classes)}
    return KryoConfig.build(generation, type_class, list(registrations), custom)
