"""The driver JVM's options: the class-data-sharing archive (dumped once, taken into use only when
complete), C1 only for small reads, and the user's own options kept in front of them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from statectl.cli import jvm, sparkconf


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    for variable in jvm.JAVA_ENVIRONMENT:  # the user's own JVM options would leave statectl's out
        monkeypatch.delenv(variable, raising=False)
    return tmp_path / "statectl" / "jvm"


def test_the_first_command_dumps_the_archive_to_a_name_of_its_own(cache):
    archive = jvm.archive_path()
    assert archive.startswith(str(cache)) and archive.endswith(".jsa")
    assert jvm.class_data_sharing() == [f"-XX:ArchiveClassesAtExit={archive}.{jvm.os.getpid()}.tmp"]



def test_c1_only_for_a_read_of_at_most_1_gib(cache):
    assert jvm.driver_java_options(jvm.C1_READ_BYTES).startswith("-XX:TieredStopAtLevel=1 ")
    assert "TieredStopAtLevel" not in jvm.driver_java_options(jvm.C1_READ_BYTES + 1)
    assert "TieredStopAtLevel" not in jvm.driver_java_options(None)  # a write, a rescale, a diff


def test_a_finished_dump_becomes_the_archive(cache):
    archive = jvm.archive_path()
    with open(f"{archive}.123.tmp", "wb") as f:
        f.write(jvm.DYNAMIC_ARCHIVE_MAGIC.to_bytes(4, "little") + b"rest")
    assert jvm.class_data_sharing() == [f"-XX:SharedArchiveFile={archive}", f"-XX:ErrorFile={cache}/hs_err_pid%p.log"]
    assert sorted(p.name for p in cache.iterdir()) == [archive.rsplit("/", 1)[1]]


def test_a_broken_dump_is_removed_and_dumped_again(cache):
    archive = jvm.archive_path()
    with open(f"{archive}.123.tmp", "wb") as f:
        f.write(b"\0" * 8)
    assert jvm.class_data_sharing() == [f"-XX:ArchiveClassesAtExit={archive}.{jvm.os.getpid()}.tmp"]
    assert list(cache.iterdir()) == []


def test_a_dump_still_being_written_is_left_alone(cache):
    archive = jvm.archive_path()
    dump = f"{archive}.123.tmp"
    with open(dump, "wb") as f:
        f.write(jvm.DYNAMIC_ARCHIVE_MAGIC.to_bytes(4, "little"))
    writer = subprocess.Popen([sys.executable, "-c", "import time; print(flush=True); time.sleep(60)", dump],
                              stdout=subprocess.PIPE)
    writer.stdout.readline()  # its command line, naming the dump, is in place
    try:
        assert jvm.class_data_sharing() == []  # neither the half-written archive nor a second dump
    finally:
        writer.kill()
        writer.wait()
    assert jvm.class_data_sharing() == [f"-XX:SharedArchiveFile={archive}", f"-XX:ErrorFile={cache}/hs_err_pid%p.log"]




@pytest.mark.slow
def test_a_command_whose_jvm_cannot_start_with_the_archive_runs_without_it_and_removes_it(cache, tmp_path):
    """A dump cut short (its JVM killed while writing) starts like an archive, and a JVM given
    it does not start: the command starts Spark again without it, and removes it."""
    from support import REPO
    from support.cli_runner import statectl_process

    sp = tmp_path / "sp"
    done = statectl_process("bootstrap", "--spec", str(REPO / "examples" / "spec.yaml"), str(sp),
                            env={"STATECTL_ENGINE": "classic"})  # a JVM of its own, which dumps
    assert done.returncode == 0, done.stderr
    deadline = time.monotonic() + 120  # the bootstrap's JVM dumps as it exits, after the command
    while not list(cache.glob("*.tmp")) and time.monotonic() < deadline:
        time.sleep(0.5)
    (dump,) = cache.glob("*.tmp")
    while jvm._alive(str(dump)) and time.monotonic() < deadline:
        time.sleep(0.5)
    archive = Path(jvm.archive_path())
    data = dump.read_bytes()
    dump.unlink()
    archive.write_bytes(data[: len(data) // 2])
    work = tmp_path / "work"
    work.mkdir()
    # this command's own JVM: a warm engine another test left running would answer it instead
    done = statectl_process("sql", str(sp), "SELECT count(*) AS n FROM proc", "-f", "jsonl", cwd=work,
                            env={"STATECTL_ENGINE": "classic"})
    assert (done.returncode, done.stdout, done.stderr) == (0, '{"n":20}\n', "")
    assert not archive.exists()
    assert list(work.iterdir()) == [] and list(cache.glob("hs_err*")) == []  # no crash report left


# The user's own driver JVM options (spark-defaults.conf) are kept; statectl's follow them.

def test_spark_defaults_are_read_as_java_properties():
    text = ("# a comment\n! another\n\n"
            "spark.master   local[2]\n"
            "spark.app.name=one two \n"
            "spark.executor.memory : 2g\n"
            "spark.driver.extraJavaOptions -Da=1 \\\n"
            "    -Db=2\n"
            "key\\ with\\=escapes value\\tx\\u0041\n"
            "empty\n")
    assert sparkconf.parse_properties(text) == {
        "spark.master": "local[2]", "spark.app.name": "one two", "spark.executor.memory": "2g",
        "spark.driver.extraJavaOptions": "-Da=1 -Db=2", "key with=escapes": "value\txA", "empty": ""}


def test_spark_defaults_come_from_spark_conf_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    assert sparkconf.spark_defaults() == {}
    (tmp_path / "spark-defaults.conf").write_text("spark.driver.extraJavaOptions  -Dx=1\n")
    assert sparkconf.spark_defaults() == {"spark.driver.extraJavaOptions": "-Dx=1"}


def test_statectl_options_follow_the_users(cache):
    archive = jvm.archive_path()
    user = {"spark.driver.extraJavaOptions": "-Dstatectl.test.marker='a b'"}
    ours = jvm.driver_java_options(1, user)
    assert ours == f"-XX:TieredStopAtLevel=1 -XX:ArchiveClassesAtExit={archive}.{jvm.os.getpid()}.tmp"
    assert jvm.extra_java_options(user, ours) == f"-Dstatectl.test.marker='a b' {ours}"
    assert jvm.extra_java_options({}, ours) == ours


@pytest.mark.parametrize("option", ["-XX:TieredStopAtLevel=4", "-XX:-TieredCompilation"])
def test_the_users_compiler_choice_keeps_c1_only_out(cache, option):
    for key in ("spark.driver.extraJavaOptions", "spark.driver.defaultJavaOptions"):
        assert "TieredStopAtLevel" not in jvm.driver_java_options(1, {key: f"-Dx=1 {option}"})


@pytest.mark.parametrize("variable", ["JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS"])
def test_the_users_java_environment_is_not_overridden(cache, monkeypatch, variable):
    monkeypatch.setenv(variable, "-XX:TieredStopAtLevel=4 -Xshare:off")
    assert jvm.driver_java_options(1, {}) == ""


@pytest.mark.parametrize("option", ["-XX:SharedArchiveFile=/mine.jsa", "-Xshare:off", "-XX:ArchiveClassesAtExit=/x"])
def test_the_users_class_data_sharing_keeps_statectls_out(cache, option):
    archive = jvm.archive_path()
    with open(archive, "wb") as f:
        f.write(jvm.DYNAMIC_ARCHIVE_MAGIC.to_bytes(4, "little"))
    assert jvm.driver_java_options(1, {"spark.driver.extraJavaOptions": option}) == jvm.C1_ONLY


def test_the_users_crash_report_place_is_kept(cache):
    archive = jvm.archive_path()
    with open(archive, "wb") as f:
        f.write(jvm.DYNAMIC_ARCHIVE_MAGIC.to_bytes(4, "little"))
    user = {"spark.driver.extraJavaOptions": "-XX:ErrorFile=/tmp/mine.log"}
    assert jvm.driver_java_options(None, user) == f"-XX:SharedArchiveFile={archive}"


DRIVER_JVM = """
import json
from statectl.cli.spark import spark_session
spark = spark_session(read_bytes=1)
jvm = spark._jvm
print(json.dumps({
    "conf": spark.sparkContext.getConf().get("spark.driver.extraJavaOptions"),
    "marker": jvm.java.lang.System.getProperty("statectl.test.marker"),
    "arguments": list(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments()),
}))
spark.stop()
"""


def driver_jvm(conf_dir: Path, defaults: str) -> dict:
    """The options of the driver JVM statectl starts with *defaults* as spark-defaults.conf."""
    conf_dir.mkdir()
    (conf_dir / "spark-defaults.conf").write_text(defaults)
    env = {k: v for k, v in os.environ.items() if k != "PYSPARK_SUBMIT_ARGS"}
    done = subprocess.run([sys.executable, "-c", DRIVER_JVM], capture_output=True, text=True, timeout=600,
                          env={**env, "SPARK_CONF_DIR": str(conf_dir)})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.slow
def test_the_users_driver_options_reach_the_driver_jvm_with_statectls(tmp_path):
    seen = driver_jvm(tmp_path / "conf", "spark.driver.extraJavaOptions  -Dstatectl.test.marker=1\n")
    conf = seen["conf"].split()  # Spark puts its own module options in front when it starts
    mine = conf.index("-Dstatectl.test.marker=1")
    assert conf[mine + 1] == jvm.C1_ONLY and any(o.startswith("-XX:SharedArchiveFile=") or
                                                 o.startswith("-XX:ArchiveClassesAtExit=") for o in conf[mine:])
    assert seen["marker"] == "1"
    assert {"-Dstatectl.test.marker=1", jvm.C1_ONLY} <= set(seen["arguments"])


@pytest.mark.slow
def test_the_users_conflicting_driver_options_win(tmp_path):
    mine = "-Dstatectl.test.marker=2 -XX:TieredStopAtLevel=4 -Xshare:auto"
    seen = driver_jvm(tmp_path / "conf", f"spark.driver.extraJavaOptions={mine}\n")
    assert seen["conf"].endswith(f" {mine}")  # nothing of statectl's after it: the user decided both
    assert "SharedArchiveFile" not in seen["conf"] and "ArchiveClassesAtExit" not in seen["conf"]
    assert seen["marker"] == "2"
    assert "-XX:TieredStopAtLevel=4" in seen["arguments"] and jvm.C1_ONLY not in seen["arguments"]
