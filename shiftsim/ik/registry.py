"""Which inverse-kinematics solver a model gets: the registration point (CLARAty §2.3, §8.10, §12.2).

A specialized solver (a closed form for one arm, say) replaces the generic
one for the models it is registered for::

    def two_link_closed_form(problem: IKProblem, q_start: np.ndarray) -> IKResult | None:
        ...                               # read problem.model, problem.constraints
        return problem.result(q, 1, "two-link closed form")

    register_ik_solver("planar_2r", two_link_closed_form)      # by ModelSpec.name
    register_ik_solver(lambda model: model.nq == 2, solver)     # or by predicate

A solver receives the bound :class:`~.problem.IKProblem` and the start
configuration and returns an :class:`~.problem.IKResult` — built with
``problem.result(q, iterations, name)`` so that status, residual and the
violated constraints are judged as for the generic solver — or ``None`` to
decline (constraints it does not handle), in which case the next matching
solver, and finally the generic one, is used. The solver registered last is
tried first.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from ..errors import InputError, Problem
from ..model import Model
from .constraints import CartesianConstraint
from .problem import IKOptions, IKProblem, IKResult
from .solver import solve_generic

IKSolver = Callable[[IKProblem, np.ndarray], IKResult | None]
ModelMatch = str | Callable[[Model], bool]


@dataclass(frozen=True)
class _Registration:
    match: ModelMatch
    solver: IKSolver

    def applies_to(self, model: Model) -> bool:
        if isinstance(self.match, str):
            return model.spec.name == self.match
        return bool(self.match(model))


_registry: list[_Registration] = []


def register_ik_solver(match: ModelMatch, solver: IKSolver) -> IKSolver:
    """Use ``solver`` for the models named ``match`` (``ModelSpec.name``) or for which ``match(model)``
    is true. Returns ``solver`` (so it can serve as a decorator factory's result or be unregistered)."""
    if not (isinstance(match, str) or callable(match)):
        raise TypeError("match must be a model name or a predicate taking a Model")
    if not callable(solver):
        raise TypeError("solver must be callable as solver(problem, q_start)")
    _registry.append(_Registration(match, solver))
    return solver


def unregister_ik_solver(solver: IKSolver) -> None:
    """Remove every registration of ``solver``."""
    _registry[:] = [r for r in _registry if r.solver is not solver]


def registered_solvers(model: Model) -> list[IKSolver]:
    """Solvers registered for ``model``, the last registered first."""
    return [r.solver for r in reversed(_registry) if r.applies_to(model)]


def solve_ik(model: Model, constraints: Sequence[CartesianConstraint], q_start: np.ndarray | None = None,
             options: IKOptions | None = None, *, use_registered: bool = True) -> IKResult:
    """Joint values meeting all ``constraints`` at once (and closing the model's loops).

    ``q_start`` (nq,) defaults to the model's file values; held joints keep
    their start values. Bad constraints or options raise InputError; a target
    that cannot be met gives a result with status ``failed``, never an
    exception. ``use_registered=False`` skips specialized solvers.
    """
    problem = IKProblem.bind(model, constraints, options)
    start = model.q0 if q_start is None else np.asarray(q_start, dtype=float)
    if start.shape != (model.nq,) or not all(map(math.isfinite, start.tolist())):
        raise InputError([Problem("inverse kinematics", "q_start", f"shape {start.shape}",
                                  f"{model.nq} finite coordinates ({', '.join(model.coordinate_names)})")])
    for solver in registered_solvers(model) if use_registered else []:
        result = solver(problem, start)
        if result is not None:
            return result
    return solve_generic(problem, start)
