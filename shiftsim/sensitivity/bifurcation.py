"""The derivative of a critical load where the load path does not fold but bifurcates: the equilibrium goes on
through the critical load (an upright column or an inverted pendulum under its load), the load doing no work
along the mode that loses its stiffness (w^T dR/d lambda = 0), so the envelope theorem of :mod:`.limit` has a
zero denominator.

The path's unknowns are x = (u, mu): the free coordinates and the multipliers of the independent closure rows
(none without closed loops), its residual R = (F, -g) with F = Q_u + G_u^T mu and g the loop closures, its tangent
the bordered matrix A = -dR/dx = [[H, -G^T], [G, 0]] of :mod:`.implicit` (H = -dF/du at fixed mu). A is singular
exactly where the loop-projected stiffness Z^T H Z is (Z a basis of G's null space). The critical load is where A
becomes singular along the fundamental path: sigma = w^T A v = 0 with v, w its right and left null vectors.
Differentiating that condition,

    d lambda*/dp = -(w^T dA/dp v) / (w^T dA/d lambda v),   dA/dp = dA/dp|_x + A_x[dx/dp],

with dx/dp from A dx/dp = dR/dp (its minimum-norm solution: the mode's own part does not move sigma at a
symmetric bifurcation). w^T dA/dp|_x v = -d/de w^T dR/dp(x + e v) and w^T A_x[y] v = w^T (d/de A(x + e v)) y
(second derivatives commute) are central differences along the mode of the analytic first derivatives
(Richardson-extrapolated, about 1e-10 relative); moving x along v moves the multipliers with the coordinates. A
parameter that does work along the mode (w^T dR/dp != 0: a side load, an offset) breaks the symmetry: the critical
load then turns into a fold whose load is not differentiable in that parameter at the perfect system (it moves
like the square root of the parameter's change), which the result says instead of a number.

The critical state is located from a path follower's last state short of it (its lowest eigenvector there,
the path's ``null_vector``): secant steps on the smallest eigenvalue of the symmetric loop-projected stiffness,
linear in the load factor along the fundamental path, each point of that path a Newton solve of R = 0.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from scipy.linalg import null_space

from .. import statics
from ..errors import InputError, Problem
from ..kinematics import state
from ..model import Model
from . import implicit
from . import parameters as parameter_table
from .limit import SINGULAR, LimitSensitivities

STEP = 1e-4  # the central differences' step along the mode (its coordinates' part has unit length)
MAX_SECANT = 12
SYMMETRIC = 1e-9  # a parameter whose generalized force has more than this part along the mode breaks the symmetry


def _problem(factor: float, what: str, expected: str) -> InputError:
    return InputError([Problem("bifurcation", f"load factor {factor:g}", what, expected)])


class _Path:
    """The fundamental path of ``loads`` (``statics.Load`` at factor 1, all scaled) over x = (u, mu): the free
    coordinates and the multipliers of the closure rows independent at ``q`` (kept along the path). Its residual
    R = (F, -g), bordered matrix A = -dR/dx and partials dR/dp at (x, lambda)."""

    def __init__(self, model: Model, q: np.ndarray, free: np.ndarray, gravity: np.ndarray, loads):
        self.model, self.q, self.free, self.gravity, self.loads = model, q.copy(), free, gravity, tuple(loads)
        self.rows = statics.independent_rows(model, q, free)
        self.nf = len(free)

    def at(self, x: np.ndarray) -> np.ndarray:
        q = self.q.copy()
        q[self.free] = x[:self.nf]
        return q

    def scaled(self, factor: float) -> tuple:
        return tuple(replace(load, factor=load.factor * factor) for load in self.loads)

    def start(self, factor: float) -> np.ndarray:
        """x at the path's given configuration, the multipliers the least-squares ones there."""
        e = statics.evaluate(self.model, self.q, self.free, self.gravity,
                             statics.applied(self.model, list(self.scaled(factor))), rows=self.rows)
        return np.concatenate([self.q[self.free], e.multipliers])

    def evaluate(self, x: np.ndarray, factor: float) -> statics.Evaluation:
        return statics.evaluate(self.model, self.at(x), self.free, self.gravity,
                                statics.applied(self.model, list(self.scaled(factor))), multipliers=x[self.nf:],
                                rows=self.rows)

    @staticmethod
    def matrix(e: statics.Evaluation) -> np.ndarray:
        """A = [[H, -G^T], [G, 0]] of an evaluation."""
        g = e.closure_jacobian
        return np.block([[e.hessian, -g.T], [g, np.zeros((len(g), len(g)))]])

    def bordered(self, x: np.ndarray, factor: float) -> np.ndarray:
        return self.matrix(self.evaluate(x, factor))

    def equilibrium(self, x: np.ndarray, factor: float) -> np.ndarray:
        """Newton's method on R(x, lambda) = 0 from ``x`` (least squares on the near-singular bordered matrix)."""
        for _ in range(20):
            e = self.evaluate(x, factor)
            step = np.linalg.lstsq(self.matrix(e), np.concatenate([e.residual, -e.closure]), rcond=1e-14)[0]
            x = x + step
            if np.max(np.abs(step[:self.nf]), initial=0.0) <= 1e-14 * max(1.0, float(np.max(np.abs(x[:self.nf])))):
                return x
        raise _problem(factor, "Newton's method found no equilibrium on the fundamental path",
                       "an equilibrium path that bifurcates")

    def lowest(self, e: statics.Evaluation) -> float:
        """The smallest eigenvalue of the symmetric loop-projected stiffness Z^T H Z."""
        h = 0.5 * (e.hessian + e.hessian.T)
        if len(self.rows):
            z = null_space(e.closure_jacobian)
            h = z.T @ h @ z
        return float(np.linalg.eigvalsh(h)[0])

    def partials(self, x: np.ndarray, factor: float, params: list) -> np.ndarray:
        """dR/dp ((nf + m), P) = (dF/dp, -dg/dp) at (x, lambda)."""
        q = self.at(x)
        multipliers = np.zeros(6 * len(self.model.closures))
        multipliers[self.rows] = x[self.nf:]
        force, closure = parameter_table.force_partials(self.model, state(self.model, q[None]), self.gravity,
                                                        self.scaled(factor), multipliers, params)
        return np.concatenate([force[self.free], -closure[self.rows]])


def _along(function, u: np.ndarray, v: np.ndarray):
    """d/de function(u + e v) at e = 0: central differences at STEP and STEP / 2, Richardson-extrapolated."""
    def central(e):
        return (function(u + e * v) - function(u - e * v)) / (2.0 * e)
    return (4.0 * central(STEP / 2.0) - central(STEP)) / 3.0


def bifurcation_load_sensitivity(model: Model, q: np.ndarray, factor: float, loads, direction: np.ndarray,
                                 wrt=("all",), set: dict | None = None, hold=(), gravity=None
                                 ) -> tuple[LimitSensitivities, tuple[str | None, ...]]:
    """The critical load factor where the path of ``loads`` (``statics.Load`` at factor 1, all scaled by the
    factor) bifurcates, located from the path's last state ``q`` (nq,) at ``factor`` short of it and its lowest
    eigenvector ``direction`` (nq,), and its derivatives with respect to the parameters ``wrt`` (names or kinds,
    docs/sensitivity.md); joints in ``set``/``hold`` prescribed. Returns the sensitivities (NaN where a parameter
    breaks the symmetry) and per parameter why it has none (None where it has one)."""
    _, prescribed = statics.resolve_prescribed(model, set or {}, list(hold))
    free = statics.free_coordinates(model, prescribed)
    gravity = model.gravity if gravity is None else np.asarray(gravity, float)
    path = _Path(model, np.asarray(q, float), free, gravity, loads)
    x = path.start(factor)
    along = path.evaluate(x, factor + 1.0).q_force_reduced - path.evaluate(x, factor).q_force_reduced
    mode = np.asarray(direction, float)[free]
    if abs(mode @ along) > SINGULAR * np.linalg.norm(along) * np.linalg.norm(mode):
        raise _problem(factor, "the load does work along the lowest mode: a fold, not a bifurcation",
                       "a limit point of :func:`shiftsim.sensitivity.limit.locate_fold`")
    # the critical factor: secant on the lowest eigenvalue along the fundamental path
    f0, s0 = factor, path.lowest(path.evaluate(x, factor))
    f1 = factor * (1.0 + 1e-6)
    for _ in range(MAX_SECANT):
        x = path.equilibrium(x, f1)
        s1 = path.lowest(path.evaluate(x, f1))
        if s1 == s0:
            break
        f0, s0, f1 = f1, s1, f1 - s1 * (f1 - f0) / (s1 - s0)
        if abs(f1 - f0) <= 1e-14 * abs(f1):
            break
    else:
        raise _problem(factor, "the lowest eigenvalue does not reach zero near the path's last state",
                       "a bifurcation near the path's end")
    critical = f1
    x = path.equilibrium(x, critical)
    a = path.bordered(x, critical)
    left, singular, right = np.linalg.svd(a)
    if singular[-1] > SINGULAR * max(float(singular[0]), 1e-300):
        raise _problem(critical, "the stiffness is not singular there", "a bifurcation")
    w, v = left[:, -1], right[-1] / np.linalg.norm(right[-1][:path.nf])  # the mode: unit length in the coordinates
    catalogue = parameter_table.catalogue(model, path.scaled(critical), gravity)
    params = parameter_table.select(catalogue, list(wrt))
    per_factor = [p for p in catalogue if p.kind == "load" and p.component == "factor"]
    every = [*params, *per_factor]
    partial = path.partials(x, critical, every)
    r_lambda = partial[:, len(params):] @ np.array([load.factor for load in loads], float)
    r_p = partial[:, : len(params)]
    # dx/dp, minimum norm (the right-hand sides have no part along w where the symmetry holds)
    moved = np.linalg.lstsq(a, np.column_stack([r_p, r_lambda]), rcond=1e-12)[0]
    curvature = _along(lambda y: path.bordered(y, critical), x, v)  # d/de A(x + e v)
    turning = _along(lambda y: path.partials(y, critical, params), x, v)  # d/de dR/dp(x + e v)
    per_lambda = (w @ (path.bordered(x, critical + 1.0) - a) @ v) + w @ curvature @ moved[:, -1]
    per_p = -(w @ turning) + w @ curvature @ moved[:, :-1]
    if per_lambda == 0.0:
        raise _problem(critical, "the load does not change the stiffness along the mode", "a load that buckles it")
    derivative = -per_p / per_lambda
    breaks = np.abs(w @ r_p) > SYMMETRIC * np.linalg.norm(r_p, axis=0)  # its force along the mode, of its own
    derivative[breaks] = np.nan
    reasons = tuple("not differentiable: the parameter does work along the buckling mode (it breaks the "
                    "bifurcation's symmetry: the critical load moves like the square root of its change)"
                    if b else None for b in breaks)
    return LimitSensitivities(float(critical), tuple(p.name for p in params), np.array([p.value for p in params]),
                              derivative, v[:path.nf]), reasons


__all__ = ["bifurcation_load_sensitivity"]
