"""Queries only (`statectl sql`, a spec's ``{sql: ...}`` inputs): a statement that could write
or change anything is refused.

Spark runs a command (``INSERT OVERWRITE DIRECTORY``, ``CREATE``, ``SET``...) at
once when it parses it, so the check happens before the statement reaches Spark,
on its words: string literals, backquoted identifiers and comments are skipped;
the first word must begin a query, and no word may be one that only a command
uses. A column with such a name is written in backquotes.
"""

from __future__ import annotations

import re

from statectl.statefmt.errors import UsageError

QUERY_STARTS = ("SELECT", "WITH", "VALUES", "TABLE", "FROM")
COMMAND_WORDS = frozenset("""
    INSERT OVERWRITE DIRECTORY CREATE DROP ALTER DELETE UPDATE MERGE TRUNCATE LOAD CACHE
    UNCACHE REFRESH MSCK REPAIR ANALYZE GRANT REVOKE SET RESET USE ADD REPLACE RENAME
    DECLARE EXECUTE CALL COPY EXPORT IMPORT OPTIMIZE VACUUM COMMENT
""".split())

# string literals ('..' or "..", backslash escapes), backquoted names, comments
_SKIPPED = re.compile(r"""'(?:\\.|[^'\\])*'|"(?:\\.|[^"\\])*"|`(?:``|[^`])*`|--[^\n]*|/\*.*?\*/""",
                      re.S)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def check_read_only(statement: str) -> str:
    """*statement* if it is one read-only query; else one UsageError line saying why."""
    text = _SKIPPED.sub(" ", statement)
    if re.search(r"'|\"|`|/\*", text):
        raise UsageError("the query has an unterminated quote or comment")
    if ";" in text.strip().rstrip(";"):
        raise UsageError("statectl sql runs one query; remove the ';' between statements")
    words = [w.upper() for w in _WORD.findall(text)]
    if not words or words[0] not in QUERY_STARTS:
        first = words[0] if words else "nothing"
        raise UsageError(f"statectl sql runs queries only (SELECT, WITH, VALUES, TABLE, FROM); "
                         f"the statement begins with {first}")
    banned = [w for w in words if w in COMMAND_WORDS]
    if banned:
        raise UsageError(f"statectl sql runs read-only queries only; {banned[0]} changes data "
                         "(quote a column of that name in backquotes)")
    return statement
