"""What the suite's tests share: builders of savepoints and rows, the CLI runners, the Spark
session and cluster, the Flink job's driver and what its savepoints are expected to hold.

Imported as ``support`` (``from support import flink_job``, ``from support.cli_runner import
statectl``): pytest puts ``tests/`` on ``sys.path`` for the suite's conftest, and the bench
scripts put it there themselves. No test module imports another; what two of them share is here.
"""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]  # the repository's root (the statectl package)
