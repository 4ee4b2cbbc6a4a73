"""Write kinds by format family: the twin of `readers/sources.py`.

A write is of one format family, chosen once from the format it writes (which defaults to
its base's family): statectl's own (canonical and RocksDB, `writers/own/`) or Apache Flink's
(`writers/flink/`). The family answers every question `SavepointWriter` and `rescale` ask
that depends on the family: what of an operator it can write, whether an operator may be
named by its operator id alone, what it refuses to rescale, and the write kind that runs
each step of the one transaction. Like PyIceberg's scheme table, the registry names where a
family's code is and imports it on first use; nothing above asks "is it Flink?".

A new family implements :class:`WriteFamily` in its own folder and joins :data:`FAMILIES`
under its `statefmt` family name (`SavepointFormat.family`).
"""

from __future__ import annotations

from functools import cache
from importlib import import_module
from typing import TYPE_CHECKING, Protocol, Sequence

from statectl.statefmt.errors import StatectlError
from statectl.statefmt.formats import family_of, format_family

if TYPE_CHECKING:
    from statectl.statefmt.fs import Location
    from statectl.statefmt.model import Savepoint

    from .commit import Staged
    from .definitions import OperatorData
    from .job import WriteSession
    from .rebuild import Rebuild
    from .report import OperatorReport

# family name (statefmt's `SavepointFormat.family`) -> "module:class" of its write family
FAMILIES: dict[str, str] = {
    "statectl": "statectl.writers.own.kind:OwnFamily",
    "flink": "statectl.writers.flink.kind:FlinkFamily",
}


class WriteKind(Protocol):
    """One write of a family: its part in each step of the transaction of `SavepointWriter.write`."""

    removed: list[str]  # the labels of the base's operators the output leaves out

    def plan(self, session: "WriteSession") -> None:
        """Check what is to be written and plan its jobs; no file is written yet."""

    def run(self, session: "WriteSession") -> None:
        """Run the jobs: every new file in place."""

    def copy(self, out: "Location", token: str) -> tuple[int, int]:
        """Copy the files shared with other savepoints into *out*; the files and bytes copied."""

    def staged(self) -> "Staged":
        """The savepoint to commit."""

    def reports(self, sp: "Savepoint") -> list["OperatorReport"]:
        """A report per operator of the committed savepoint *sp*."""


class WriteFamily(Protocol):
    name: str  # the statefmt family it writes ("statectl", "flink")
    title: str  # how messages name a savepoint of it ("a statectl savepoint")
    default_format: str  # the format a write of this family writes unless told otherwise
    names_by_operator_id: bool  # whether an operator may be named by its operator id alone
    keyed_layouts: tuple[str, ...]  # the layouts of keyed state a write may be told to use (--native)

    def output_name(self, format: str) -> str:
        """How messages name an output of *format* ("statectl's canonical")."""

    def check_operator(self, operator: "OperatorData") -> None:
        """Refuse, in one line, what this family cannot write of *operator*."""

    def check_rebuilds(self, base: "Savepoint", rebuilds: Sequence["Rebuild"]) -> None:
        """Refuse, in one line each and without Spark, operators of *base* this family cannot
        write again at new limits."""

    def write_kind(self, writer, removed: list[str], spark) -> WriteKind:
        """The write *writer* describes, in this family (*removed*: the labels of the base's
        operators it leaves out)."""


@cache
def write_family(name: str) -> WriteFamily:
    """The write family registered under *name*."""
    try:
        module, cls = FAMILIES[name].split(":")
    except KeyError:
        raise StatectlError(f"no writer writes the format family {name!r}") from None
    return getattr(import_module(module), cls)()


def family_for_format(format: str) -> WriteFamily:
    """The family that writes *format*."""
    return write_family(format_family(format))


def family_of_savepoint(sp: "Savepoint") -> WriteFamily:
    """The family of a loaded savepoint's format."""
    return write_family(family_of(sp))
