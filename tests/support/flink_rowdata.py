"""Ground truth for the table runtime's RowData serialization, written by real Flink: runs
tests/flink/src/flinkjob/RowDataSamples.java once per (Flink version, source hash) and caches its
output folder (cases.json, one <case>.bin per case, flink_version.txt) under the snapshot cache.
Layout and canonical JSON forms: tests/flink/README.md, "RowData samples".

Command line:
    python tests/support/flink_rowdata.py VERSION      # makes (or finds) the folder and prints its path
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: `support` is imported from tests/
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from support import flink_job  # noqa: E402

MAIN_CLASS = "flinkjob.RowDataSamples"
# The snapshot class every RowDataSerializer case's .bin names right after the leading int 2.
ROW_SNAPSHOT_CLASS = "org.apache.flink.table.runtime.typeutils.RowDataSerializer$RowDataSerializerSnapshot"


def samples_dir(version: str) -> Path:
    """Where make_samples puts (or found) the samples of *version* for the current sources."""
    return flink_job.snapshot_cache() / f"rowdata-{version}-{flink_job.source_hash()}"


def make_samples(version: str, timeout: float = 600) -> Path:
    """The samples folder of Flink *version*: fetches the jars and compiles the job's sources when
    needed, runs RowDataSamples once, and returns the folder (valid once its `done` file exists)."""
    out = samples_dir(version)
    if (out / "done").exists():
        return out
    flink_job.fetch_jars(version)
    classes = flink_job.compile_job(version)
    with flink_job._locked(flink_job.snapshot_cache()):
        if (out / "done").exists():
            return out
        shutil.rmtree(out, ignore_errors=True)
        cmd = [flink_job._tool("java"), *flink_job.JVM_FLAGS, *flink_job.QUICK_JVM_FLAGS,
               f"-Dlog4j.configurationFile={flink_job.JOB_DIR / 'log4j2.properties'}",
               "-cp", f"{classes}:{flink_job.lib_dir(version)}/*", MAIN_CLASS, str(out)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-40:])
            raise flink_job.FlinkJobError(f"RowDataSamples failed for Flink {version} (exit {proc.returncode}):\n{tail}")
        (out / "done").write_text("ok\n")
    return out


def _main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    print(make_samples(argv[0]))
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
