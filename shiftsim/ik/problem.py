"""An inverse-kinematics problem bound to a model, and its result.

:class:`IKProblem` is what every solver (generic or specialized) receives:
the model, the constraints checked against it, the coordinates it may move
(independent, not held), their limits and the stopping tolerance. It
evaluates the stacked residual of

* every Cartesian constraint (see :mod:`.constraints`),
* every loop closure of the model (6 rows each, as in
  :func:`~shiftsim.kinematics.closure_residual`: the loops close while the
  constraints are met),
* the limits of coupled coordinates (1 row each, zero inside the limits):
  a coupled coordinate is no unknown, so its limits bound its sources
  through the coupling law,

and builds the :class:`IKResult` of any configuration with
:meth:`IKProblem.result`, so that every solver reports alike.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from ..errors import InputError, Problem
from ..kinematics import closure_jacobian, closure_residual, coupling_map
from ..model import REVOLUTE, Model
from .constraints import BoundConstraint, CartesianConstraint
from .frames import FrameKinematics, independent_coordinates


def _limits(model: Model, respect: bool) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper bounds (nq,) of every coordinate: the joint limits of single-coordinate joints when
    ``respect``, -inf/+inf elsewhere. Cached on the model, read-only (problems share them)."""
    cache = model.cache.setdefault("ik_limits", {})
    if respect not in cache:
        lower, upper = np.full(model.nq, -np.inf), np.full(model.nq, np.inf)
        if respect:
            for joint in model.joints:
                if joint.limits is not None and len(joint.coordinates) == 1:
                    lower[joint.coordinates[0]], upper[joint.coordinates[0]] = joint.limits
        lower.flags.writeable = upper.flags.writeable = False
        cache[respect] = (lower, upper)
    return cache[respect]


@dataclass(frozen=True)
class IKOptions:
    """Settings of an inverse-kinematics solve.

    ``tolerance``: largest accepted norm of the residual (m and rad together).
    ``max_iterations``: per start. ``held``: joints kept at their start values.
    ``respect_limits``: keep every coordinate within its joint limits.
    ``max_step``: largest change of one coordinate in one iteration (rad or m).
    ``restarts``: further attempts from random starts within the limits
    (seeded by ``seed``, so results are reproducible) when the first fails.
    """

    tolerance: float = 1e-10
    max_iterations: int = 100
    held: tuple[str, ...] = ()
    respect_limits: bool = True
    max_step: float = 0.5
    restarts: int = 0
    seed: int = 0


MAX_ITERATIONS = 10_000
"""Most Newton iterations per start (a converging solve takes tens)."""

MAX_RESTARTS = 1_000
"""Most random restarts of a failing solve (each costs up to MAX_ITERATIONS iterations)."""


@dataclass(frozen=True)
class IKResult:
    """Outcome of a solve. ``q`` holds all coordinates (couplings applied); ``joints`` maps joint
    names to values (a list for multi-dof joints); ``constraints`` gives each constraint's errors;
    ``violated`` names the constraints (and loops, limits) not met to the tolerance."""

    status: str
    q: np.ndarray
    iterations: int
    residual: float
    solver: str
    joints: dict[str, float | list[float]]
    constraints: tuple[dict, ...]
    violated: tuple[str, ...]
    message: str

    @property
    def converged(self) -> bool:
        return self.status == "converged"

    def as_dict(self) -> dict:
        return {"status": self.status, "iterations": self.iterations, "residual": self.residual,
                "joints": self.joints, "solver": self.solver, "constraints": list(self.constraints),
                "violated": list(self.violated), "message": self.message}


@dataclass
class _Closure:
    name: str
    kind: str = "loop"
    rows: int = 6

    def report(self, residual: np.ndarray) -> dict:
        return {"name": self.name, "kind": self.kind, "position_error": math.hypot(*residual[:3].tolist()),
                "orientation_error": math.hypot(*residual[3:].tolist())}


@dataclass
class _CoupledLimit:
    name: str
    coordinate: int
    lower: float
    upper: float
    kind: str = "coupled_limit"
    rows: int = 1

    def report(self, residual: np.ndarray) -> dict:
        return {"name": self.name, "kind": self.kind, "excess": float(abs(residual[0]))}


@dataclass
class Evaluation:
    """Residual and Jacobian at one configuration: ``residual`` (rows,) unweighted (m, rad), ``weighted``
    (rows,) and ``jacobian`` (rows, n_free) (weighted rows, one column per free coordinate) for the least
    squares; ``norm`` is the Euclidean norm of ``residual``, ``cost`` the squared norm of ``weighted``."""

    residual: np.ndarray
    weighted: np.ndarray
    jacobian: np.ndarray
    norm: float = field(init=False)
    cost: float = field(init=False)

    def __post_init__(self) -> None:
        squared = float(self.residual @ self.residual)
        self.norm = math.sqrt(squared)
        self.cost = squared if self.weighted is self.residual else float(self.weighted @ self.weighted)


@dataclass
class IKProblem:
    """Constraints bound to a model, the coordinates a solver may move and their limits."""

    model: Model
    constraints: tuple[BoundConstraint, ...]
    options: IKOptions
    free: np.ndarray  # coordinate indices the solver moves (independent and not held)
    held: np.ndarray  # coordinate indices kept at their start values
    lower: np.ndarray  # (nq,) -inf where unlimited (or limits ignored)
    upper: np.ndarray
    _closures: tuple[_Closure, ...] = field(default=())
    _coupled_limits: tuple[_CoupledLimit, ...] = field(default=())
    _weights: np.ndarray = field(default_factory=lambda: np.ones(0))
    _last: tuple[bytes, Evaluation] | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        # constant per problem, read at every evaluation
        self._more_rows = bool(self.model.closures or self._coupled_limits)
        self._all_free = len(self.free) == self.model.nq  # free holds distinct coordinate indices
        self._unweighted = all(w == 1.0 for w in self._weights.tolist())

    # ------------------------------------------------------------------ building
    @classmethod
    def bind(cls, model: Model, constraints: Sequence[CartesianConstraint],
             options: IKOptions | None = None) -> IKProblem:
        """Check the constraints and options against ``model`` (InputError listing every problem)."""
        options = options or IKOptions()
        problems: list[Problem] = []
        if not constraints:
            problems.append(Problem("inverse kinematics", "constraints", "no constraint given",
                                    "at least one end-effector or contact constraint"))
        bound = []
        for c in constraints:
            try:
                bound.append(c.bind(model))
            except InputError as error:
                problems.extend(error.problems)
        if not (math.isfinite(options.tolerance) and options.tolerance > 0):
            problems.append(Problem("inverse kinematics", "tolerance", f"{options.tolerance}", "a positive number"))
        if not (1 <= options.max_iterations <= MAX_ITERATIONS and 0 <= options.restarts <= MAX_RESTARTS):
            problems.append(Problem("inverse kinematics", "options",
                                    f"max_iterations {options.max_iterations}, restarts {options.restarts}",
                                    f"max_iterations from 1 to {MAX_ITERATIONS:,} and restarts from 0 to "
                                    f"{MAX_RESTARTS:,}"))
        coupled = {c.target for c in model.couplings}
        held: list[int] = []
        for name in options.held:
            try:
                coordinates = model.coordinates_of(name)
            except InputError as error:
                problems.extend(Problem("inverse kinematics", f"held joint {name!r}", p.what, p.expected)
                                for p in error.problems)
                continue
            if coupled & set(coordinates):
                problems.append(Problem("inverse kinematics", f"held joint {name!r}",
                                        "the joint is coupled: it follows the joints its law names",
                                        "an independent joint"))
            held.extend(coordinates)
        if problems:
            raise InputError(problems)

        lower, upper = _limits(model, options.respect_limits)
        held_set = set(held)
        free = independent_coordinates(model)
        if held_set:
            free = np.array([i for i in free if i not in held_set], dtype=int)
        closures = tuple(_Closure(f"loop {model.joints[c.joint].name!r}") for c in model.closures)
        coupled_limits = tuple(
            _CoupledLimit(f"limits of {model.joints[model.coordinate_joint[c.target]].name!r}", c.target,
                          lower[c.target], upper[c.target])
            for c in model.couplings if np.isfinite(lower[c.target]) or np.isfinite(upper[c.target]))
        weights = np.array([c.weight for c in bound for _ in range(c.rows)]
                           + [1.0] * (6 * len(closures) + len(coupled_limits)))
        return cls(model, tuple(bound), options, free, np.array(sorted(held_set), dtype=int), lower, upper,
                   closures, coupled_limits, weights)

    # ------------------------------------------------------------------ evaluation
    @property
    def blocks(self) -> tuple:
        """Every residual block in row order: constraints, loops, coupled limits."""
        return (*self.constraints, *self._closures, *self._coupled_limits)

    def project(self, q: np.ndarray) -> np.ndarray:
        """``q`` with the free coordinates clipped into their limits and the couplings applied."""
        if self._all_free:  # then no coordinate is coupled: clipping is all there is to do
            return np.minimum(np.maximum(q, self.lower), self.upper)
        q = np.array(q, dtype=float)
        q[self.free] = np.minimum(np.maximum(q[self.free], self.lower[self.free]), self.upper[self.free])
        return self.model.apply_couplings(q)

    def evaluate(self, q: np.ndarray) -> Evaluation:
        """Residual and Jacobian (over the free coordinates) at ``q`` (nq,) (couplings already applied).

        The last evaluation is kept: asking again for the same ``q`` (the solver's final configuration,
        judged once more by :meth:`result`) returns it without recomputing.
        """
        q = np.asarray(q, dtype=float)
        key = q.tobytes()
        if self._last is not None and self._last[0] == key:
            return self._last[1]
        evaluation = self._evaluate(q)
        self._last = (key, evaluation)
        return evaluation

    def _evaluate(self, q: np.ndarray) -> Evaluation:
        model = self.model
        kin = FrameKinematics(model, q[None])
        if len(self.constraints) == 1 and not self._more_rows:  # the usual case: one block, nothing to stack
            residual, jac = self.constraints[0].evaluate(kin)
            return self._weighted(q, residual, jac)
        residuals, rows = [], []
        for c in self.constraints:
            r, j = c.evaluate(kin)
            residuals.append(r)
            rows.append(j)
        if model.closures:
            residuals.append(closure_residual(model, kin.state)[0])
            rows.append(closure_jacobian(model, kin.state)[0])
        for limit in self._coupled_limits:
            value = q[limit.coordinate]
            residuals.append(np.array([min(0.0, value - limit.lower) + max(0.0, value - limit.upper)]))
            row = np.zeros((1, model.nq))
            row[0, limit.coordinate] = float(residuals[-1][0] != 0.0)
            rows.append(row)
        return self._weighted(q, np.concatenate(residuals), np.concatenate(rows))

    def _weighted(self, q: np.ndarray, residual: np.ndarray, jac: np.ndarray) -> Evaluation:
        """The :class:`Evaluation` of the stacked ``residual`` (rows,) and ``jac`` (rows, nq) at ``q``:
        columns taken through the couplings onto the free coordinates, rows weighted."""
        if self.model.couplings:
            jac = jac @ coupling_map(self.model, q)[:, self.free]
        elif not self._all_free:
            jac = jac[:, self.free]
        if self._unweighted:
            return Evaluation(residual, residual, jac)
        return Evaluation(residual, residual * self._weights, jac * self._weights[:, None])

    # ------------------------------------------------------------------ helpers for solvers
    def random_start(self, rng: np.random.Generator, around: np.ndarray) -> np.ndarray:
        """A start with the free coordinates drawn within their limits (revolute without limits: (-pi, pi];
        prismatic without limits: within 1 m of ``around``)."""
        q = np.array(around, dtype=float)
        for i in self.free:
            lo, hi = self.lower[i], self.upper[i]
            if np.isfinite(lo) and np.isfinite(hi):
                q[i] = rng.uniform(lo, hi)
            elif self.model.node_kind[self.model.coordinate_node[i]] == REVOLUTE:
                q[i] = rng.uniform(-np.pi, np.pi)
            else:
                q[i] = around[i] + rng.uniform(-1.0, 1.0)
        return self.project(q)

    def result(self, q: np.ndarray, iterations: int, solver: str, note: str = "") -> IKResult:
        """The result of configuration ``q`` (projected into the limits, couplings applied), with the
        status decided by the tolerance, every block's errors and the violated ones named."""
        model = self.model
        q = self.project(q)
        evaluation = self.evaluate(q)
        tolerance = self.options.tolerance
        reports, violated, start = [], [], 0
        for block in self.blocks:
            part = evaluation.residual[start:start + block.rows]
            start += block.rows
            report = block.report(part)
            reports.append(report)
            if math.hypot(*part.tolist()) > tolerance:
                details = ", ".join(f"{k.replace('_', ' ')} {v:.3g}" for k, v in report.items() if isinstance(v, float))
                violated.append(f"{block.name} ({details})")
        converged = evaluation.norm <= tolerance
        if converged:
            message = f"converged: residual {evaluation.norm:.3g} after {iterations} iterations"
        else:
            message = (f"failed: residual {evaluation.norm:.3g} after {iterations} iterations "
                       f"(tolerance {tolerance:g}); not met: " + "; ".join(violated))
            at_limits = self.at_limits(q)
            if at_limits:
                message += "; joints at a limit: " + ", ".join(at_limits)
        if note:
            message += f"; {note}"
        values = q.tolist()
        joints = {j.name: (values[j.coordinates[0]] if len(j.coordinates) == 1 else [values[i] for i in j.coordinates])
                  for j in model.joints}
        return IKResult("converged" if converged else "failed", q, iterations, evaluation.norm, solver, joints,
                        tuple(reports), tuple(violated), message)

    def at_limits(self, q: np.ndarray) -> list[str]:
        """``joint (lower|upper)`` for each free coordinate at one of its limits."""
        names = []
        for i in self.free:
            for bound, side in ((self.lower[i], "lower"), (self.upper[i], "upper")):
                if np.isfinite(bound) and abs(q[i] - bound) <= 1e-12 * max(1.0, abs(bound)):
                    names.append(f"{self.model.coordinate_names[i]} ({side})")
        return names
