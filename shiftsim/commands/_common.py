"""Helpers shared by the sub-commands: scenario sub-parsers, parsing NAME=VALUE options, printing JSON."""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any, Callable

from ..errors import InputError, Problem
from ..jsonio import dumps


def scenario_parser(subparsers, name: str, func: Callable[[argparse.Namespace], int], *, help: str,
                    description: str, scenario_help: str) -> argparse.ArgumentParser:
    """The sub-command ``name SCENARIO`` that runs ``func``; the caller adds its own options."""
    parser = subparsers.add_parser(name, help=help, description=description)
    parser.add_argument("scenario", help=scenario_help)
    parser.set_defaults(func=func)
    return parser


def parse_assignment(text: str, option: str) -> tuple[str, list[float]]:
    """``NAME=v`` or ``NAME=v1,v2,...`` -> (NAME, [values]); bad text raises InputError."""
    name, sep, values = text.partition("=")
    if not sep or not name:
        raise InputError([Problem(option, text, "missing '='", "NAME=VALUE")])
    try:
        numbers = [float(v) for v in values.split(",")]
    except ValueError:
        raise InputError([Problem(option, text, f"{values!r} is not a number or comma-separated numbers",
                                  "NAME=VALUE with numbers")]) from None
    _refuse_non_finite(numbers, text, option)
    return name, numbers


def parse_vector(text: str, option: str, length: int) -> list[float]:
    try:
        numbers = [float(v) for v in text.split(",")]
    except ValueError:
        numbers = []
    if len(numbers) != length:
        raise InputError([Problem(option, text, "not a vector of numbers", f"{length} comma-separated numbers")])
    _refuse_non_finite(numbers, text, option)
    return numbers


def _refuse_non_finite(numbers: list[float], text: str, option: str) -> None:
    bad = [f"{v!r}" for v in numbers if not math.isfinite(v)]
    if bad:
        raise InputError([Problem(option, text, f"{', '.join(bad)} is not a finite number", "finite numbers")])


def emit_json(data: Any) -> None:
    sys.stdout.buffer.write(dumps(data))
    sys.stdout.flush()
