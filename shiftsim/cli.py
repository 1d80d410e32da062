"""The ``shiftsim`` command line.

Each sub-command lives in ``shiftsim/commands/<name>.py`` and exposes
``add_parser(subparsers)``; the parser it adds sets ``func=run`` where
``run(args) -> int`` returns the exit code. Exit codes: 0 ok, 1 could not
finish, 2 bad input (3 is ``collide``'s "collision found"). Errors derived from
:class:`~shiftsim.errors.ShiftsimError` are printed without a traceback.

Start-up stays light: :data:`COMMANDS` holds every command's one-line help, so
``shiftsim --help`` lists them without importing any, and only the module of
the command being run is imported (with what it needs: scipy, matplotlib,
pybullet, lupa are never loaded for a command that does not use them).
"""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import sys
import warnings

from .errors import InputError, Problem, ShiftsimError, ShiftsimWarning

# name -> one-line help, as each command's own parser gives it (tests/commands/test_startup.py keeps them equal)
COMMANDS = {
    "check": "validate a model or a scenario and summarize it",
    "fk": "forward kinematics: world poses of every body and frame",
    "solve": "static equilibrium, deflections and joint loads",
    "jacobian": "Jacobian of a frame (linear then angular rows)",
    "sensitivity": "exact derivatives of an equilibrium's outputs w.r.t. design parameters",
    "ik": "inverse kinematics: joint values that reach target frame poses",
    "run": "run a scenario: sweep, results.json, CSV and plots",
    "plot": "draw a results folder's plots again (from its results and the inputs it records)",
    "collide": "distances between a scenario's machines at every sweep step (kinematics only)",
    "capacity": "tipping, hydraulic and rated lift capacity (ISO 10567) at every sweep step",
    "mfk": "Topcon MFK resource configurations: show, encode, decode",
    "mdx": "Mdx motion platform: kinematics, simulated middleware and effector",
    "view": "the run in the browser, in 3D (viser): a results folder, or a scenario run first",
}


class _ArgumentParser(argparse.ArgumentParser):
    """argparse that exits with 2 and a one-line usage hint (bad input)."""

    def error(self, message: str) -> None:  # pragma: no cover - argparse exits
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {message}\n")


class _VersionAction(argparse.Action):
    """``--version``: the installed version, looked up only when asked for."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest, nargs=0, default=default, help=help)

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        from . import __version__

        print(f"shiftsim {__version__}")
        parser.exit()


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser; ``command``'s module adds its full sub-parser, the other commands are listed by name and help
    only (``None``: every command's module is imported and adds its sub-parser)."""
    parser = _ArgumentParser(prog="shiftsim", description="Quasi-static multibody simulator.")
    parser.add_argument("--version", action=_VersionAction, help="show the version and exit")
    subparsers = parser.add_subparsers(dest="command", required=True, parser_class=_ArgumentParser)
    for name, summary in COMMANDS.items():
        if command is None or name == command:
            importlib.import_module(f"{__package__}.commands.{name}").add_parser(subparsers)
        else:
            subparsers.add_parser(name, help=summary)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    from .threads import blas_starts_with_one_thread

    blas_starts_with_one_thread()  # before the command's modules load numpy
    command = next((a for a in argv if not a.startswith("-")), "")  # the top level has only flags before it
    try:  # Ctrl-C while the command's modules are imported: exit 130 like during the command, no traceback
        args = build_parser(command).parse_args(argv)
        from .threads import single_blas_thread
    except KeyboardInterrupt:
        return 130

    # Warnings are shown only after recording stops: shown inside the block, each would be recorded again
    # into the list being shown, for ever (issue 25, item 1).
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ShiftsimWarning)
        try:
            with single_blas_thread():  # small matrices: BLAS threads only add overhead
                code = int(args.func(args))
        except ShiftsimError as error:
            failure = error
        except BrokenPipeError:  # output piped into a command that stopped reading (e.g. head); an OSError,
            _drop_stdout()       # so caught before the clause below
            return 0
        except (OSError, ValueError) as error:  # a path no system call takes, wherever it was used
            failure = _unusable_path(error)
            if failure is None:
                raise
        except KeyboardInterrupt:
            return 130
        else:
            failure = None
    _show_warnings(args.command, caught)
    if failure is None:
        return code
    print(f"shiftsim {args.command}: error:", file=sys.stderr)
    for line in str(failure).splitlines():
        print(f"  {line}", file=sys.stderr)
    return failure.exit_code


def _drop_stdout() -> None:
    """Point stdout at /dev/null: the reader of its pipe has gone, and the interpreter's flush at exit
    would otherwise raise BrokenPipeError again (with a traceback) for what is still buffered."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


PATH_EXPECTED = "a path of at most 4096 bytes, each name at most 255 bytes, without NUL characters or symlink loops"
_PATH_ERRORS = {errno.ENAMETOOLONG: "a file name or path too long", errno.ELOOP: "a loop of symbolic links"}


def _unusable_path(error: OSError | ValueError) -> InputError | None:
    """Bad input (exit 2) for a path the system refuses (too long, a symlink loop, a NUL byte); None for others."""
    from .typed import shown  # numpy: not loaded by ``shiftsim --help``

    if isinstance(error, OSError) and error.errno in _PATH_ERRORS:
        path = shown(str(error.filename)) if error.filename is not None else "a path"
        return InputError([Problem(path, "", _PATH_ERRORS[error.errno], PATH_EXPECTED)])
    if isinstance(error, ValueError) and "null byte" in str(error):
        return InputError([Problem("a path", "", "holds a NUL character", PATH_EXPECTED)])
    return None


# commands that print the readers' warnings themselves, grouped with their own summary
_REPORT_OWN_WARNINGS = {"check", "run", "collide", "capacity"}


def _show_warnings(command: str, caught: list[warnings.WarningMessage]) -> None:
    """Readers' warnings as ``warning: ...`` lines on stderr, grouped by kind (once each), other warnings as usual."""
    from .errors import group_warnings

    ours = {}  # by text, first seen first; a reader's Notice keeps its parts so that like warnings group
    for w in caught:
        if issubclass(w.category, ShiftsimWarning):
            notice = w.message.args[0] if w.message.args else str(w.message)
            ours.setdefault(str(notice), notice)
    for w in caught:
        if not issubclass(w.category, ShiftsimWarning):
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    if command in _REPORT_OWN_WARNINGS:
        return
    for line in group_warnings(ours.values()):
        print(f"warning: {line}", file=sys.stderr)

if __name__ == "__main__":
    sys.exit(main())
