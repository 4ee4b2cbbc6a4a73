"""`statectl engine status|stop`: the warm engine (`cli.engine`) shown and stopped. No Spark starts."""

from __future__ import annotations

import time

import typer

engine_app = typer.Typer(help="The warm Spark engine kept between commands: status, stop.",
                         no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(engine_app, name="engine")


@engine_app.command("status")
def status() -> None:
    """Whether this user's warm engine runs: its process, port, age, idle time and idle limit.
    Exit 0 when it runs, 3 when none does."""
    from . import engine

    folder = engine.state_dir()
    record = engine.live_record(folder)
    if record is None:
        print("engine: not running" + (" (STATECTL_ENGINE=classic)" if engine.classic_requested() else ""))
        raise typer.Exit(3)
    now = time.time()
    idle = now - engine.last_activity(folder)
    current = "current" if record.fingerprint == engine.fingerprint() else \
        "stale: the next command replaces it"
    print(f"engine: running (pid {record.pid}, 127.0.0.1:{record.port}, up {now - record.started:.0f} s, "
          f"idle {idle:.0f} s of {record.idle:.0f} s, {current})")


@engine_app.command("stop")
def stop() -> None:
    """Stop this user's warm engine (its Spark ends; the next command that needs Spark starts one)."""
    from . import engine

    folder = engine.state_dir()
    record = engine.live_record(folder)
    if record is None or not engine.stop(folder, record):
        print("engine: not running")
        return
    print(f"engine: stopped (pid {record.pid})")
