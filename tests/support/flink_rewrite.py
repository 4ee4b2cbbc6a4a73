"""A Flink savepoint as a bootstrap spec: each operator's entry and tables from the product's
`writers.flink.source.operator_spec` (a `flink:` binding taken from its own serializers), the
tables saved as Parquet inputs, so `bootstrap --format flink` writes it again."""

from __future__ import annotations

from pathlib import Path

import yaml

from statectl.statefmt.flink.savepoint import open_flink_savepoint
from statectl.writers.flink.source import operator_spec


def spec_from_flink_savepoint(spark, path, folder: Path) -> Path:
    """Write *path*'s tables under *folder* and the spec that bootstraps them again; its path."""
    folder.mkdir(parents=True, exist_ok=True)
    fsp = open_flink_savepoint(str(path))
    operators = []
    for op in fsp.operators:
        entry, frames = operator_spec(spark, fsp, op)
        if entry is None:
            continue
        for name, df in frames.items():
            df.write.mode("overwrite").parquet(str(folder / name))
        operators.append(entry)
    spec = folder / "spec.yaml"
    spec.write_text(yaml.safe_dump({"format": "flink", "operators": operators}, sort_keys=False,
                                   allow_unicode=True))
    return spec
