"""statectl's own format family as a write family (`writers/kinds.py`)."""

from __future__ import annotations

from statectl.statefmt.vocabulary import Format

from ..definitions import KeyedData, OperatorData
from ..errors import SpecError


class OwnFamily:
    name = "statectl"
    title = "a statectl savepoint"
    default_format = Format.CANONICAL.value
    names_by_operator_id = False  # its operators always have a uid
    keyed_layouts = ()  # its format (--format canonical or rocksdb) is the layout

    def output_name(self, format: str) -> str:
        return f"statectl's {format}"

    def check_operator(self, operator: OperatorData) -> None:
        if operator.flink is not None:
            raise SpecError(f"operator {operator.label!r}: a flink: type binding needs format flink")
        states = operator.keyed.states if isinstance(operator.keyed, KeyedData) else ()
        with_ttl = [s.name for s in states if getattr(s, "ttl_column", None)]
        if with_ttl:
            raise SpecError(f"operator {operator.label!r}, state {with_ttl[0]!r}: ttl_column is for the TTL "
                            "states of a Flink savepoint (format flink)")

    def check_rebuilds(self, base, rebuilds) -> None:
        pass  # every keyed operator of statectl's formats can be rescaled

    def write_kind(self, writer, removed: list[str], spark):
        from .write import OwnWrite

        # a base of another family is only an input: nothing of it is kept (check_base_format)
        return OwnWrite(writer, writer.base if writer.base_family is self else None, removed)
