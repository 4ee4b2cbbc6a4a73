"""`check` and `remap` when a DataStream job's state types change (docs/UPGRADES.md), proved by a
real Flink job in two versions (`tests/upgrade_job/`: common + v1, common + v2, and the
release's source), Flink 2.3 and 1.20, on the hashmap and RocksDB backends: v2 adds a field to the `profile` POJO, widens `visits` from
Integer to Long and switches TTL on for `seen`. `check` says what Flink migrates itself and what
statectl converts; v2 refuses v1's savepoint (Integer to Long is no migration Flink knows), and
restores remap's output holding every value of v1's state, the added field null."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.cli_runner import statectl
from support.java_programs import java
from support.savepoint_rows import digest

pytestmark = pytest.mark.slow  # real Flink jobs

MAIN = "upgradejob.Main"
RELEASES = {"2.3.0": "flink2", "1.20.3": "flink1"}
KEYS = [f"k{i}" for i in range(6)]


def job(version: str, job_version: str, mode: str, *args: str) -> None:
    java("upgrade_job", MAIN, mode, *args, version=version, parts=("common", job_version, RELEASES[version]))


def saved(version: str, job_version: str, mode: str, out: Path, backend: str) -> Path:
    out.mkdir(parents=True)
    job(version, job_version, mode, str(out), backend)
    return Path((out / "savepoint.txt").read_text().removeprefix("file:"))


def restored(version: str, savepoint: Path, out: Path, backend: str) -> list[str]:
    out.mkdir()
    job(version, "v2", "restore", str(savepoint), str(out), backend)
    return (out / "restored.txt").read_text().splitlines()


@pytest.fixture(scope="module", params=[(v, b) for v in RELEASES for b in ("hashmap", "rocksdb")],
                ids=lambda p: f"{p[0]}-{p[1]}")
def upgrade(request, tmp_path_factory):
    version, backend = request.param
    tmp = tmp_path_factory.mktemp(f"upgrade-{version}-{backend}")
    return (version, backend, tmp, saved(version, "v1", "save", tmp / "v1", backend),
            saved(version, "v2", "new", tmp / "v2", backend))


def test_check_says_what_flink_migrates_and_what_remap_converts(upgrade):
    version, _, _, old, new = upgrade
    result = statectl("check", str(old), "--against", str(new), "--json")
    assert result.returncode == 1, result.stderr
    (acct,) = json.loads(result.stdout)["operators"]  # the one operator with state
    assert (acct["status"], acct["how"], acct["level"]) == ("restored", "same operator id", "convertible")
    if version.startswith("2."):  # Flink 1.x _metadata has no uids
        assert (acct["old"], acct["new"]) == ("acct", "acct")
    levels = {s["name"]: (s["level"], s["reasons"]) for s in acct["states"] if s["level"] != "identical"}
    assert levels == {"visits": ("convertible", ["int widened to long"]),
                      "profile": ("flink migrates", ["tier: POJO field added (null or 0 in restored values)"]),
                      "seen": ("flink migrates", ["TTL switched on"]) if version.startswith("2.") else
                      ("convertible", ["TTL switched on (Flink 1.x does not migrate it)"])}


def test_v2_refuses_v1_and_restores_remaps_output_with_v1s_state(upgrade):
    version, backend, tmp, old, new = upgrade
    before = digest(old)
    result = statectl("remap", str(old), str(tmp / "remapped"), "--against", str(new))
    assert result.returncode == 0, result.stderr
    assert digest(old) == before
    with pytest.raises(Exception, match="must not be incompatible with the old state serializer"):
        restored(version, old, tmp / "as-v1", backend)
    assert restored(version, tmp / "remapped", tmp / "restored", backend) == [
        f"{k} {k} {100 * (i + 1)} null {i + 1} seen-{k}" for i, k in enumerate(KEYS)]
