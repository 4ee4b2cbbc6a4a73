"""The `statectl` typer app: inspect, read, bootstrap, modify and rescale savepoints.

Commands here only parse options, call the library and hand results to
:mod:`statectl.cli.output`. Spark is imported only by the commands that need it.
The console script's entry point is `cli.main.run`.
"""

from __future__ import annotations

import os
import sys

import typer

from statectl import __version__

from .classes import Classes, use_classes
from .listing import Checkpoint
from .options import OPTIONS
from .output import output_for, print_error
from .snapshots import opened

app = typer.Typer(
    name="statectl",
    help="Read, bootstrap, modify and rescale savepoints of stateful stream-processing jobs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)



def _version(value: bool) -> None:
    if value:
        print(f"statectl {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    debug: bool = typer.Option(False, "--debug", help="Show Python tracebacks on errors."),
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Print the version and exit."),
    s3_endpoint: str = typer.Option(None, "--s3-endpoint", metavar="URL",
                                    help="The S3 API endpoint of s3:// locations (default: "
                                    "$AWS_ENDPOINT_URL, else AWS); credentials come from the "
                                    "usual AWS_* variables."),
) -> None:
    OPTIONS["debug"] = debug
    if s3_endpoint:  # read by pyarrow here and in Spark's workers, which start after this
        os.environ["AWS_ENDPOINT_URL"] = s3_endpoint


@app.command()
def info(
    savepoint: str = typer.Argument(..., help="Savepoint directory (a path or URI), or a folder of "
                                    "snapshots (the newest is shown)."),
    json_: bool = typer.Option(False, "--json", help="Print one JSON object instead of tables."),
    checkpoint: Checkpoint = None,
    classes: Classes = None,
) -> None:
    """Show what a savepoint holds: operators, states, types, files and sizes."""
    from .info import show_info

    use_classes(classes)
    show_info(savepoint, json_, checkpoint)


@app.command()
def validate(
    savepoint: str = typer.Argument(..., help="Savepoint directory (a path or URI), or a folder of "
                                    "snapshots (the newest is checked)."),
    json_: bool = typer.Option(False, "--json", help="Print one JSON object instead of text."),
    deep: bool = typer.Option(False, "--deep", help="Also decode every stream and file, in this process "
                              "(finds damaged bytes that sizes cannot show: Flink keeps no checksums)."),
    checkpoint: Checkpoint = None,
) -> None:
    """Check every file reference, size, checksum and schema. Exit 1 if anything is wrong."""
    from statectl.statefmt.validate import validate as run_validation

    report = run_validation(opened(savepoint, checkpoint), deep=deep)
    doc = {
        "location": report.location,
        "valid": report.valid,
        "problems": report.problems,
        "dependencies": [vars(d) for d in report.dependencies],
        "files_checked": report.files_checked,
        "bytes_checked": report.bytes_checked,
        "notes": report.notes,
    }
    output_for(json_).validation(doc)
    if not report.valid:
        raise typer.Exit(1)


from .diffing import register as _register_diffing  # noqa: E402
from .engine_cmd import register as _register_engine  # noqa: E402
from .explore import register as _register_explore  # noqa: E402
from .listing import register as _register_listing  # noqa: E402
from .pruning import register as _register_pruning  # noqa: E402
from .reading import register as _register_reading  # noqa: E402
from .rescaling import register as _register_rescaling  # noqa: E402
from .stats import register as _register_stats  # noqa: E402
from .upgrading import register as _register_upgrading  # noqa: E402
from .writing import register as _register_writing  # noqa: E402

_register_reading(app)
_register_writing(app)
_register_rescaling(app)
_register_stats(app)
_register_pruning(app)
_register_diffing(app)
_register_listing(app)
_register_upgrading(app)
_register_engine(app)
_register_explore(app)


def run_app() -> int:
    """Run the app on ``sys.argv``; click's errors as one `error:` line and their exit codes
    (the rest, as `cli.main.run` says)."""
    from typer._click import exceptions as click_errors  # typer's own copy of click

    try:
        code = app(standalone_mode=False, prog_name="statectl")
    except click_errors.NoArgsIsHelpError as e:
        print(e.ctx.get_help())
        sys.exit(2)
    except click_errors.UsageError as e:
        command = e.ctx.command_path if e.ctx is not None else "statectl"
        print_error(f"{e.format_message()} (see {command} --help)")
        sys.exit(2)
    except click_errors.ClickException as e:
        print_error(e.format_message())
        sys.exit(e.exit_code)
    except typer.Abort:
        print_error("interrupted")
        sys.exit(130)
    return code if isinstance(code, int) else 0
