"""`statectl`'s entry point: one clear `error:` line for bad input, never a traceback.

``statectl --version`` and ``statectl info SAVEPOINT [--json]`` are answered here without
building the typer app (`cli.app`), whose parsing imports typer, click and pydantic (about
0.1 s, a third of the time `info` may take); any other command line, these with any other
option included, goes to the app, which parses it the same way.
"""

from __future__ import annotations

import sys
import traceback

from statectl.statefmt.errors import StatectlError


def run() -> None:
    """Console-script entry point.

    Usage lines name ``statectl`` however Python was started (click would name
    ``python -m ...`` when the command runs inside another module's process).

    Exit codes: 0 success, 1 bad input (or an invalid savepoint), 2 a usage error
    (an unknown option, a missing argument), 130 interrupted.
    """
    from .handoff import handed_off
    from .options import debug_enabled
    from .output import print_error
    from .startup import refuse

    try:
        handed = handed_off(sys.argv[1:])  # run by the warm engine's command server, if one serves
        if handed is not None:
            sys.exit(handed)
        refuse()
        code = _answer_fast(sys.argv[1:])
        if code is None:
            from .app import run_app

            code = run_app()
    except StatectlError as e:
        if debug_enabled():
            traceback.print_exc()
        for line in getattr(e, "lines", None) or (str(e),):  # a spec's mistakes: one line each
            print_error(line)
        sys.exit(e.exit_code)
    except KeyboardInterrupt:
        print_error("interrupted")
        sys.exit(130)
    sys.exit(code)


def _answer_fast(args: list[str]) -> int | None:
    """The exit code of a command line answered without the app, or None."""
    if args == ["--version"]:
        from statectl import __version__

        print(f"statectl {__version__}")
        return 0
    if not args or args[0] != "info" or len(args) > 3:
        return None
    rest = args[1:]
    json_ = "--json" in rest
    if json_:
        rest.remove("--json")
    if len(rest) != 1 or rest[0].startswith("-"):
        return None
    from .info import show_info

    show_info(rest[0], json_)
    return 0


if __name__ == "__main__":
    run()
