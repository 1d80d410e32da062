"""The ``shiftsim`` command line.

Each sub-command lives in ``shiftsim/commands/<name>.py`` and exposes
``add_parser(subparsers)``; the parser it adds sets ``func=run`` where
``run(args) -> int`` returns the exit code. Exit codes: 0 ok, 1 could not
finish, 2 bad input (3 is ``collide``'s "collision found"). Errors derived from
:class:`~shiftsim.errors.ShiftsimError` are printed without a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys

from . import __version__
from .errors import ShiftsimError

COMMANDS = ("check", "fk", "solve", "jacobian", "ik", "run", "collide", "mfk", "mdx")


class _ArgumentParser(argparse.ArgumentParser):
    """argparse that exits with 2 and a one-line usage hint (bad input)."""

    def error(self, message: str) -> None:  # pragma: no cover - argparse exits
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _ArgumentParser(prog="shiftsim", description="Quasi-static multibody simulator.")
    parser.add_argument("--version", action="version", version=f"shiftsim {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, parser_class=_ArgumentParser)
    for name in COMMANDS:
        module_name = f"{__package__}.commands.{name}"
        if importlib.util.find_spec(module_name) is not None:
            importlib.import_module(module_name).add_parser(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from .threads import single_blas_thread

    try:
        with single_blas_thread():  # small matrices: BLAS threads only add overhead
            return int(args.func(args))
    except ShiftsimError as error:
        print(f"shiftsim {args.command}: error:", file=sys.stderr)
        for line in str(error).splitlines():
            print(f"  {line}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # output piped into a command that stopped reading (e.g. head)
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
