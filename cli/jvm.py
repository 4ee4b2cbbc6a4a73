"""The Java options of the Spark driver JVM a command starts: a faster start-up, same results.

- C1 only (``-XX:TieredStopAtLevel=1``) for a command that only reads up to
  :data:`C1_READ_BYTES` of state (`read`, `sql`): C2's compiler threads compete with the
  start-up and with the Python workers that decode state for a small machine's cores, and
  the JVM's share of such a read is small (the 1M-key Flink read and aggregate, 71 MB: 10-12 s
  whole process against 12 s without, 16-22 s with neither option, 2 cores). Larger reads
  and the writes keep C2, whose faster code pays back its compile time on more rows.
- A class-data-sharing archive of the classes Spark loads (JDK 13+ dynamic CDS): the first
  command dumps it when its JVM exits (``-XX:ArchiveClassesAtExit``), later ones map it
  (``-XX:SharedArchiveFile``) instead of loading and verifying thousands of classes from jars.
  It lives in statectl's cache folder, named by the PySpark release and the JDK. A dump is
  written to a name of its own (``.<pid>.tmp``) and taken into use by a later command once
  no JVM is writing it, so concurrent commands never read a half-written archive.
  A JVM that finds the archive unusable (another class path, say) ignores it and runs without;
  one that cannot start with it (a dump cut short when its JVM was killed) is started again
  without it, and the archive and that JVM's crash report (written beside the archive, not in
  the working directory) are removed (:func:`without_archive`), so the next command dumps a
  new one.

The user's own ``spark.driver.extraJavaOptions`` (spark-defaults.conf, `cli.sparkconf`) come
first and stay; statectl's are added after them, less any that the user's options (or
``spark.driver.defaultJavaOptions``, ``JAVA_TOOL_OPTIONS``, ``JDK_JAVA_OPTIONS``, which the
command line would override) already decide: their ``-XX:TieredStopAtLevel`` or
``-XX:[+-]TieredCompilation`` keeps C1-only out, their own archive or ``-Xshare`` keeps the
class-data sharing out, their ``-XX:ErrorFile`` keeps the crash report where they put it.

`bench/bench_spark_fixed_cost.py` measures the start-up with and without them.
"""

from __future__ import annotations

import glob
import hashlib
import os
import shlex
import shutil

C1_ONLY = "-XX:TieredStopAtLevel=1"
SHARED_ARCHIVE = "-XX:SharedArchiveFile="  # followed by the archive's path
ERROR_FILE = "-XX:ErrorFile="
C1_READ_BYTES = 1 << 30

EXTRA_JAVA_OPTIONS = "spark.driver.extraJavaOptions"  # the user's, then statectl's
DEFAULT_JAVA_OPTIONS = "spark.driver.defaultJavaOptions"  # an administrator's, applied before; left as is
JAVA_ENVIRONMENT = ("JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS")  # the JVM reads them before its command line
COMPILER_OPTIONS = ("-XX:TieredStopAtLevel=", "-XX:-TieredCompilation", "-XX:+TieredCompilation")
SHARING_OPTIONS = (SHARED_ARCHIVE, "-XX:ArchiveClassesAtExit=", "-Xshare:", "-XX:+AutoCreateSharedArchive")


def driver_java_options(read_bytes: int | None = None, user_properties: dict[str, str] | None = None) -> str:
    """statectl's options for the driver JVM: C1 only for a read of at most :data:`C1_READ_BYTES`
    (*read_bytes* None: not only a read), and the class-data-sharing archive where one can be
    kept; each left out where the user's own Spark properties or Java environment already decide it."""
    user = _users_options(user_properties or {})
    c1 = [C1_ONLY] if read_bytes is not None and read_bytes <= C1_READ_BYTES and \
        not _sets(user, COMPILER_OPTIONS) else []
    sharing = [] if _sets(user, SHARING_OPTIONS) else class_data_sharing()
    if _sets(user, (ERROR_FILE,)):
        sharing = [o for o in sharing if not o.startswith(ERROR_FILE)]
    return " ".join([*c1, *sharing])


def extra_java_options(user_properties: dict[str, str], ours: str) -> str:
    """:data:`EXTRA_JAVA_OPTIONS` as statectl sets it: the user's own, then *ours*."""
    return " ".join(o for o in (user_properties.get(EXTRA_JAVA_OPTIONS, "").strip(), ours) if o)


def _users_options(user_properties: dict[str, str]) -> list[str]:
    """Every JVM option the user gave the driver, by Spark property or by environment."""
    given = [user_properties.get(k, "") for k in (DEFAULT_JAVA_OPTIONS, EXTRA_JAVA_OPTIONS)]
    return _tokens(" ".join([*given, *(os.environ.get(v, "") for v in JAVA_ENVIRONMENT)]))


def _tokens(options: str) -> list[str]:
    """*options* split as Spark's launcher splits them (quotes group); plain whitespace if unbalanced."""
    try:
        return shlex.split(options)
    except ValueError:
        return options.split()


def _sets(user: list[str], options: tuple[str, ...]) -> bool:
    return any(o.startswith(options) for o in user)


def class_data_sharing() -> list[str]:
    """Map the archive if it is there, else dump one at exit (unless a live JVM is dumping it)."""
    archive = archive_path()
    if archive is None or not os.path.isdir("/proc"):  # a dump's JVM is found in /proc
        return []
    for dump in glob.glob(glob.escape(archive) + ".*.tmp"):
        if not _alive(dump):  # its JVM has ended: the dump is complete (or never will be)
            _take(dump, archive)
    if os.path.exists(archive):
        # a JVM that dies on the archive writes its crash report beside it, not in the user's folder
        return [f"{SHARED_ARCHIVE}{archive}", f"{ERROR_FILE}{crash_report_pattern(archive)}"]
    if any(_alive(d) for d in glob.glob(glob.escape(archive) + ".*.tmp")):
        return []
    return [f"-XX:ArchiveClassesAtExit={archive}.{os.getpid()}.tmp"]


def without_archive(options: str) -> str:
    """*options* less the class-data-sharing archive, which is removed: a JVM could not start
    with it, and it must not stop the commands after this one either."""
    kept = []
    for option in options.split():
        if option.startswith(SHARED_ARCHIVE):
            archive = option[len(SHARED_ARCHIVE):]
            for path in [archive, *glob.glob(crash_report_pattern(archive).replace("%p", "*"))]:
                try:
                    os.remove(path)
                except OSError:
                    pass
        elif not option.startswith(ERROR_FILE):
            kept.append(option)
    return " ".join(kept)


def crash_report_pattern(archive: str) -> str:
    """Where a JVM started with *archive* writes a crash report (``%p``: its pid)."""
    return os.path.join(os.path.dirname(archive), "hs_err_pid%p.log")


DYNAMIC_ARCHIVE_MAGIC = 0xF00BABA8  # HotSpot's dynamic CDS archive header, little-endian on disk


def _take(dump: str, archive: str) -> None:
    """*dump* becomes the archive if it starts as one, else it is removed; another command
    may have taken it first."""
    try:
        with open(dump, "rb") as f:
            complete = int.from_bytes(f.read(4), "little") == DYNAMIC_ARCHIVE_MAGIC
        if complete:
            os.replace(dump, archive)
        else:
            os.remove(dump)
    except FileNotFoundError:
        pass


def archive_path() -> str | None:
    """The archive for this PySpark and JDK, in a writable cache folder (None: nowhere to keep it)."""
    java = _java()
    if java is None:
        return None
    import pyspark

    folder = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "statectl", "jvm")
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError:
        return None
    if not os.access(folder, os.W_OK):
        return None
    jdk = hashlib.sha256(f"{java}:{os.stat(java).st_mtime_ns}".encode()).hexdigest()[:12]
    return os.path.join(folder, f"spark-{pyspark.__version__}-{jdk}.jsa")


def _java() -> str | None:
    """The java binary PySpark starts (JAVA_HOME's, else the one on PATH), resolved."""
    home = os.environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else shutil.which("java")
    return os.path.realpath(java) if java and os.path.exists(java) else None


def _alive(dump: str) -> bool:
    """Whether a running JVM is writing *dump*: its command line names the file (the JVM
    outlives the command that started it while it dumps)."""
    wanted = dump.encode()
    for cmdline in glob.glob("/proc/[0-9]*/cmdline"):
        try:
            with open(cmdline, "rb") as f:
                if wanted in f.read():
                    return True
        except OSError:  # the process ended meanwhile
            continue
    return False
