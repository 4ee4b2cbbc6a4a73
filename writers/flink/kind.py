"""Apache Flink's savepoints as a write family (`writers/kinds.py`): a write that only removes
or renames operators of a Flink base is a metadata-only :class:`~.modify.FlinkModification`;
any other writes its operators with the Flink writer (:class:`~.write.FlinkWrite`), the
base's others kept as shallow pointer copies."""

from __future__ import annotations

from statectl.statefmt.errors import UsageError
from statectl.statefmt.vocabulary import Format


class FlinkFamily:
    name = "flink"
    title = "a Flink savepoint"
    default_format = Format.FLINK.value
    names_by_operator_id = True  # Flink 1.x savepoints and SQL jobs name operators by id alone
    keyed_layouts = ("canonical", "native")  # key-group streams, or RocksDB snapshots (FlinkBinding.native)

    def output_name(self, format: str) -> str:
        return "Flink"

    def check_operator(self, operator) -> None:
        pass  # a flink: binding and TTL columns are this family's

    def check_rebuilds(self, base, rebuilds) -> None:
        from .rescale import check_flink_rescale

        check_flink_rescale(base, rebuilds)

    def write_kind(self, writer, removed: list[str], spark):
        from statectl.statefmt.flink.model import flink_savepoint

        from .write import FlinkWrite, kept_max_parallelism

        kept_from = writer.base if writer.base_family is self else None
        if kept_from is None:  # nothing of the base is kept (check_base_format)
            return FlinkWrite(None, [(op, "written") for op in writer.new.values()], [], removed,
                              writer.max_parallelism, layout=writer.layout)
        fsp = flink_savepoint(kept_from)
        if not writer.new and not writer.rebuilt:
            from .modify import FlinkModification

            return FlinkModification(fsp, writer.removed_ids, writer.renamed)
        if writer.renamed:
            raise UsageError("renaming operators of a Flink savepoint while writing others is not "
                             "supported; rename them with statectl modify first")
        from .rescale import rescaled_operators
        from .source import on_flink_base

        written = set(writer.new) | set(writer.rebuilt)
        kept = [op for op in fsp.metadata.operators if op.operator_id not in written
                and op.operator_id not in writer.removed_ids]
        operators = [(on_flink_base(fsp, op), "written") for op in writer.new.values()]
        operators += rescaled_operators(spark, kept_from, list(writer.rebuilt.values()))
        return FlinkWrite(fsp, operators, kept, removed, writer.max_parallelism,
                          kept_max_parallelism(fsp, writer.rebuilt), writer.layout)
