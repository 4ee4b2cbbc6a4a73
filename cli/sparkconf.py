"""The Spark properties a user set for the JVMs statectl starts, read as Spark's launcher reads them.

A session's ``builder.config`` reaches the launcher as ``--conf``, which wins over the same key
in ``spark-defaults.conf``: statectl reads the user's value first so that what it adds is added
to the user's setting, not put in its place (`cli.jvm`). The file is the one Spark's launcher
loads: ``$SPARK_CONF_DIR/spark-defaults.conf``, else ``$SPARK_HOME/conf/`` (PySpark's own
folder when SPARK_HOME is not set), in `java.util.Properties` syntax, values trimmed.
"""

from __future__ import annotations

import os
import re

DEFAULTS_FILE = "spark-defaults.conf"

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|.)", re.DOTALL)
_KEY_END = re.compile(r"(?<!\\)(?:\\\\)*[=:\s]")  # the first separator no backslash escapes


def spark_defaults_path() -> str:
    """Where Spark's launcher looks for the user's properties file."""
    folder = os.environ.get("SPARK_CONF_DIR")
    if not folder:
        home = os.environ.get("SPARK_HOME")
        if not home:
            from pyspark.find_spark_home import _find_spark_home

            home = _find_spark_home()
        folder = os.path.join(home, "conf")
    return os.path.join(folder, DEFAULTS_FILE)


def spark_defaults() -> dict[str, str]:
    """The properties of the user's ``spark-defaults.conf`` ({} when there is none)."""
    try:
        with open(spark_defaults_path(), encoding="utf-8") as f:
            return parse_properties(f.read())
    except FileNotFoundError:
        return {}


def parse_properties(text: str) -> dict[str, str]:
    """`java.util.Properties.load` of *text*, each value trimmed as Spark trims it."""
    properties = {}
    for line in _logical_lines(text):
        separator = _KEY_END.search(line)
        cut = separator.end() if separator else len(line)
        key = line[:separator.end() - 1] if separator else line
        rest = line[cut:].lstrip(" \t\f")
        if separator and separator.group()[-1].isspace() and rest[:1] in ("=", ":"):
            rest = rest[1:]
        properties[_unescape(key)] = _unescape(rest).strip()
    return properties


def _logical_lines(text: str):
    """Natural lines joined where one ends in an odd number of backslashes; no comments or blanks."""
    pending = None
    for natural in text.splitlines():
        natural = natural.lstrip(" \t\f")
        if pending is None and (not natural or natural[0] in "#!"):
            continue
        trailing = len(natural) - len(natural.rstrip("\\"))
        joined = natural if pending is None else pending + natural
        if trailing % 2:
            pending = joined[:-1]
            continue
        pending = None
        yield joined
    if pending:
        yield pending


def _unescape(text: str) -> str:
    def one(m: re.Match) -> str:
        c = m.group(1)
        return chr(int(c[1:], 16)) if len(c) == 5 else _ESCAPES.get(c, c)

    return _ESCAPE.sub(one, text)
