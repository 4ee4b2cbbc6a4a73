"""One table source per format family, chosen once from the operator's format."""

from __future__ import annotations

from statectl.statefmt.errors import StatectlError
from statectl.statefmt.model import Operator, Savepoint
from statectl.statefmt.vocabulary import Format

from .canonical import CanonicalSource
from .flink import FlinkSource
from .native import NativeSource
from .tablesource import TableSource

SOURCES: dict[Format, type[TableSource]] = {
    Format.CANONICAL: CanonicalSource,
    Format.ROCKSDB: NativeSource,
    Format.FLINK: FlinkSource,
}


def source_class(format: str) -> type[TableSource]:
    try:
        return SOURCES[Format(format)]
    except (KeyError, ValueError):
        raise StatectlError(f"no table source reads the format {format!r}") from None


def table_source(sp: Savepoint, op: Operator) -> TableSource:
    """The table source of *op*'s format, on the loaded model."""
    return source_class(op.format).of(sp, op)

