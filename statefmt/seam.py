"""The format seam's protocol: what every savepoint format answers (`statefmt/formats.py`
registers the implementations: statectl's own in `own/format.py`, Flink's in
`flink/format.py`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator, Protocol

from .fs import Location
from .model import DataFile, Operator, Savepoint

if TYPE_CHECKING:
    import pyarrow as pa


class SavepointFormat(Protocol):
    name: str  # a :class:`Format` word
    family: str  # whose format: "statectl" or "flink" (`statectl ls`)
    names_serializers: bool  # its states name their serializer classes (`info` shows them)

    def sniff(self, head: bytes) -> bool:
        """Whether a `_metadata` starting with *head* (its first bytes) is of this format."""

    def load(self, location: Location, data: bytes) -> Savepoint:
        """The model of the savepoint at *location* whose `_metadata` is *data*, checked."""

    def named_files(self, data: bytes, source: str) -> set[str]:
        """The files inside its own folder the committed `_metadata` *data* names."""

    def write_metadata(self, out: Location, document) -> tuple[Savepoint, set[str]]:
        """Put *document* (this format's own: see :class:`Staged`) at *out*, every data file
        already in place: what must precede `_metadata` (a lineage), then `_metadata`,
        atomically. Returns the committed savepoint's model and the files inside *out* it
        names. The removal of a replaced savepoint's files is :func:`~.formats.commit_staged`'s."""

    def file_schemas(self, op: Operator) -> Iterator[tuple[DataFile, "pa.Schema | None"]]:
        """Every data file of *op*'s states with the Arrow schema `validate` checks it
        against (None: a file that is not statectl's Parquet, checked by size and checksum)."""

    def decode_all(self, sp: Savepoint, op: Operator, skip: set[tuple[str, str]]) -> Decoded:
        """`validate --deep`: decode every file of *op* but those in *skip* (operator id,
        file path: already found bad)."""

    def validation_notes(self, sp: Savepoint, deep: bool) -> list[str]:
        """What `validate` says of a savepoint holding operators of this format, besides
        its problems: what it could not check, and why."""


@dataclass(frozen=True)
class Decoded:
    """What `validate --deep` decoded of one operator: rows, parts (splits or files) and
    the problems found, one line each."""
    rows: int = 0
    parts: int = 0
    problems: tuple[str, ...] = ()


@dataclass(frozen=True)
class Staged:
    """A written savepoint before its `_metadata` (every data file in place): the document its
    *format* commits (statectl's own: the :class:`Savepoint`; Flink's: a ``FlinkCommit``)."""

    format: SavepointFormat
    document: object
