"""Operator identity: a uid, and the operator id derived from it as Flink does."""

from __future__ import annotations

import re
from dataclasses import dataclass

import mmh3

from .errors import UsageError

_OPERATOR_ID = re.compile(r"^[0-9a-f]{32}$")


def operator_id_for_uid(uid: str) -> str:
    """MurmurHash3 x64 128-bit, seed 0, of the uid's UTF-8 bytes, as 32 hex digits.

    The digest is h1 then h2, each little-endian: exactly Flink's OperatorID for
    the same uid, so both name the same operator.
    """
    return mmh3.hash_bytes(uid.encode("utf-8"), 0, True).hex()


def is_operator_id(text: str) -> bool:
    return bool(_OPERATOR_ID.match(text))


def check_operator_id(text: str) -> str:
    """Normalise an operator id given by a user (any case); reject other text."""
    normal = text.strip().lower()
    if not is_operator_id(normal):
        raise UsageError(f"operator id must be 32 hexadecimal digits, got {text!r}")
    return normal


@dataclass(frozen=True)
class OperatorRef:
    """How a user names an operator: by uid, by operator id when the uid is unknown, or by
    its name in the job (a Flink SQL operator's `GroupAggregate[40]`) where that is unique."""

    uid: str | None = None
    operator_id: str | None = None
    name: str | None = None

    def __post_init__(self) -> None:
        if sum(x is not None for x in (self.uid, self.operator_id, self.name)) != 1:
            raise UsageError("name an operator by exactly one of uid, operator id or name")
        if self.operator_id is not None:
            object.__setattr__(self, "operator_id", check_operator_id(self.operator_id))

    @property
    def resolved_id(self) -> str:
        if self.name is not None:
            raise UsageError(f"operator name {self.name!r} names an operator only within a savepoint")
        return self.operator_id if self.operator_id else operator_id_for_uid(self.uid)

    def __str__(self) -> str:
        if self.name is not None:
            return f"name {self.name!r}"
        return f"uid {self.uid!r}" if self.uid is not None else f"operator id {self.operator_id}"
