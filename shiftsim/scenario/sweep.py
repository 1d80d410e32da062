"""Sweeps: the table of steps and its partition into continuation chains.

A *line* sweep steps all parameters together (equal lengths); a *grid* takes
every combination, the first parameter varying slowest and the last fastest
(``itertools.product`` order). Step indices follow that order.

A *chain* is a run of consecutive steps solved one after the other, each from
the previous step's equilibrium. The partition depends on the scenario only,
never on how many processes run it, so every chain is solved the same way
whatever ``--jobs`` says and results are identical bit for bit:

* a line sweep is one chain;
* a grid is one chain per combination of all but its last parameter, running
  along the last parameter;
* ``segment: n`` cuts every chain into pieces of at most ``n`` steps (more
  chains, so more parallel work, at the price of restarting from the start
  state at each cut).

Every chain starts from the scenario's start state (the machines' assembled
file configuration with the scenario's joint values).

Size: a sweep may have at most :data:`MAX_STEPS` steps (one million; at a few
milliseconds a step that is already hours of solving, and gigabytes of
results). :attr:`Sweep.size` counts the steps from the parameters' value
counts without building anything, and :func:`check_size` refuses a larger
sweep with the count before any table is built. A ``{"from", "to", "steps"}``
range beyond the limit is only counted (:class:`OversizedRange`), so even a
``"steps": 1000000000`` costs nothing until it is refused. Within the limit
the values and the table (at most a million rows) are built once per sweep.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from ..errors import Problem, ScenarioError

MAX_STEPS = 1_000_000

ParameterKind = Literal["joint", "placement", "geometry", "pose", "site", "load", "time"]


@dataclass(frozen=True)
class Parameter:
    """A swept quantity: ``name`` as written in the scenario; ``machine``/``target`` what it sets.

    kind ``joint``: target is the full joint name in machine ``machine`` (value in ``unit``: rad or m);
    ``placement``, ``geometry``: target is an MFK value reference ``C:oem.interface.id.field`` of machine
    ``machine`` (see ``scenario.mfk``); ``pose``: target is a pose component of an Mdx platform
    (see ``scenario.mdx``); ``site``: target is one of ``placement.x``, ``.y``, ``.z`` (m) or ``.yaw`` (rad), the
    machine's placement in the world (any machine; ``scenario.machines.SITE_SETTINGS``); ``load``: target is a load name, the value replaces the load's factor;
    ``time``: the value is a time in s.
    """

    name: str
    kind: ParameterKind
    unit: str
    machine: str | None = None
    target: str | None = None


@dataclass(frozen=True)
class Sweep:
    """Parameters with their values (one tuple per parameter), mode and optional chain segment length."""

    mode: Literal["line", "grid"] = "line"
    parameters: tuple[Parameter, ...] = ()
    values: tuple[Sequence[float], ...] = ()
    segment: int | None = None

    @property
    def names(self) -> list[str]:
        return [p.name for p in self.parameters]

    @property
    def size(self) -> int:
        """Number of steps (1 without a sweep), counted without building the table."""
        counts = [len(v) for v in self.values]
        if not counts:
            return 1
        return counts[0] if self.mode == "line" else math.prod(counts)

    def table(self) -> np.ndarray:
        """Parameter values of every step, ``(n_steps, n_parameters)``; one step and no columns without a sweep.

        Built on first use and kept (read-only: every chain asks for it); raises
        ScenarioError beyond :data:`MAX_STEPS` steps.
        """
        return self._table

    @functools.cached_property
    def _table(self) -> np.ndarray:
        check_size(self)
        if not self.parameters:
            table = np.zeros((1, 0))
        elif self.mode == "line":
            table = np.array([np.asarray(v, dtype=float) for v in self.values]).T
        else:
            table = np.array(list(itertools.product(*self.values)), dtype=float).reshape(-1, len(self.parameters))
        table.flags.writeable = False
        return table

    def chains(self) -> list[tuple[int, ...]]:
        """Step indices of every chain, in step order (see the module docstring)."""
        n_steps = self.size
        check_size(self)
        run = len(self.values[-1]) if self.mode == "grid" and self.parameters else n_steps
        chains = [tuple(range(start, start + run)) for start in range(0, n_steps, run)]
        if self.segment:
            chains = [c[i:i + self.segment] for c in chains for i in range(0, len(c), self.segment)]
        return chains


def size_problem(sweep: Sweep) -> str | None:
    """Why ``sweep`` is too large to run (its step count against :data:`MAX_STEPS`), or None."""
    if sweep.size <= MAX_STEPS:
        return None
    counts = " x ".join(f"{len(v):,}" for v in sweep.values) if sweep.mode == "grid" else ""
    grid = f" ({counts} grid)" if counts and len(sweep.values) > 1 else ""
    return f"{sweep.size:,} steps{grid}, more than a run can hold"


def check_size(sweep: Sweep, file: str = "scenario") -> None:
    """Raise ScenarioError (exit 2) naming ``file`` when the sweep has more than :data:`MAX_STEPS` steps."""
    problem = size_problem(sweep)
    if problem:
        raise ScenarioError([Problem(file, "sweep", problem, f"at most {MAX_STEPS:,} steps")])


class OversizedRange(Sequence[float]):
    """A ``{"from", "to", "steps"}`` range of more than :data:`MAX_STEPS` values: counted, never built.

    Its length is the step count; reading a value raises ScenarioError with the
    count, so nothing can build (or loop over) a billion values by accident.
    """

    def __init__(self, count: int):
        self.count = count

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, index):  # type: ignore[override]
        raise ScenarioError([Problem("scenario", "sweep", f"a range of {self.count:,} steps",
                                     f"at most {MAX_STEPS:,} steps")])


MAX_JOINT_VALUE = 1e3
"""Largest magnitude of a swept joint or placement value (rad or m), as for ``--set``: the continuation between
steps walks at most 0.1 rad or m per increment, so a farther value would take minutes."""


def values_beyond(values: list[float] | dict[str, float], bound: float) -> list[float]:
    """The values of a parameter's spec (a list, or a range's ``from`` and ``to``) beyond ``bound`` in magnitude."""
    ends = [values["from"], values["to"]] if isinstance(values, dict) else values
    return [float(v) for v in ends if abs(v) > bound]


def expand(values: list[float] | dict[str, float]) -> Sequence[float]:
    """A parameter's values: a list as given, or ``{"from", "to", "steps"}`` as evenly spaced values, ends included.

    A range of more than :data:`MAX_STEPS` values is an :class:`OversizedRange` (counted, then refused).
    """
    if isinstance(values, dict):
        count = int(values["steps"])
        if count > MAX_STEPS:
            return OversizedRange(count)
        return tuple(float(v) for v in np.linspace(values["from"], values["to"], count))
    return tuple(float(v) for v in values)
