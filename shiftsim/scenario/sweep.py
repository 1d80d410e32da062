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
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Literal

import numpy as np

ParameterKind = Literal["joint", "placement", "geometry", "pose", "load", "time"]


@dataclass(frozen=True)
class Parameter:
    """A swept quantity: ``name`` as written in the scenario; ``machine``/``target`` what it sets.

    kind ``joint``: target is the full joint name in machine ``machine`` (value in ``unit``: rad or m);
    ``placement``, ``geometry``: target is an MFK value reference ``C:oem.interface.id.field`` of machine
    ``machine`` (see ``scenario.mfk``); ``pose``: target is a pose component of an Mdx platform
    (see ``scenario.mdx``); ``load``: target is a load name, the value replaces the load's factor;
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
    values: tuple[tuple[float, ...], ...] = ()
    segment: int | None = None

    @property
    def names(self) -> list[str]:
        return [p.name for p in self.parameters]

    def table(self) -> np.ndarray:
        """Parameter values of every step, ``(n_steps, n_parameters)``; one step and no columns without a sweep."""
        if not self.parameters:
            return np.zeros((1, 0))
        if self.mode == "line":
            return np.array(self.values, dtype=float).T
        return np.array(list(itertools.product(*self.values)), dtype=float)

    def chains(self) -> list[tuple[int, ...]]:
        """Step indices of every chain, in step order (see the module docstring)."""
        n_steps = len(self.table())
        run = len(self.values[-1]) if self.mode == "grid" and self.parameters else n_steps
        chains = [tuple(range(start, start + run)) for start in range(0, n_steps, run)]
        if self.segment:
            chains = [c[i:i + self.segment] for c in chains for i in range(0, len(c), self.segment)]
        return chains


def expand(values: list[float] | dict[str, float]) -> tuple[float, ...]:
    """A parameter's values: a list as given, or ``{"from", "to", "steps"}`` as evenly spaced values, ends included."""
    if isinstance(values, dict):
        return tuple(float(v) for v in np.linspace(values["from"], values["to"], int(values["steps"])))
    return tuple(float(v) for v in values)
