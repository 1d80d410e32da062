"""The derivative of a critical load where the load path does not fold but bifurcates: the equilibrium goes on
through the critical load (an upright column or an inverted pendulum under its load), the load doing no work
along the mode that loses its stiffness (w^T dR/d lambda = 0), so the envelope theorem of :mod:`.limit` has a
zero denominator.

There the critical load is where the fundamental path's stiffness H(u(lambda, p), lambda, p) = -dR/du becomes
singular: sigma = w^T H v = 0 with v, w its right and left null vectors. Differentiating that condition,

    d lambda*/dp = -(w^T dH/dp v) / (w^T dH/d lambda v),   dH/dx = dH/dx|_u + H_u[du/dx],

with du/dx from H du/dx = dR/dx (its minimum-norm solution: the mode's own part does not move sigma at a
symmetric bifurcation). w^T dH/dp|_u v = -d/de w^T dR/dp(u + e v) and w^T H_u[x] v = w^T (d/de H(u + e v)) x
(second derivatives commute) are central differences along the mode of the analytic first derivatives
(Richardson-extrapolated, about 1e-10 relative). A parameter that does work along the mode (w^T dR/dp != 0: a
side load, an offset) breaks the symmetry: the critical load then turns into a fold whose load is not
differentiable in that parameter at the perfect system (it moves like the square root of the parameter's
change), which the result says instead of a number. Models with closed loops are not handled here.

The critical state is located from a path follower's last state short of it (its lowest eigenvector there,
the path's ``null_vector``): secant steps on the smallest eigenvalue of the symmetric stiffness, linear in the
load factor along the fundamental path, each point of that path a Newton solve.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from .. import statics
from ..errors import InputError, Problem
from ..model import Model
from . import implicit
from . import parameters as parameter_table
from .limit import SINGULAR, LimitSensitivities

STEP = 1e-4  # the central differences' step along the mode (the mode has unit length in the free coordinates)
MAX_SECANT = 12
SYMMETRIC = 1e-9  # a parameter whose generalized force has more than this part along the mode breaks the symmetry


def _problem(factor: float, what: str, expected: str) -> InputError:
    return InputError([Problem("bifurcation", f"load factor {factor:g}", what, expected)])


class _Path:
    """The fundamental path of ``loads`` (``statics.Load`` at factor 1, all scaled) over the free coordinates of
    a model without closed loops: its residual, stiffness and force partials at (u, lambda)."""

    def __init__(self, model: Model, q: np.ndarray, free: np.ndarray, gravity: np.ndarray, loads):
        self.model, self.q, self.free, self.gravity, self.loads = model, q.copy(), free, gravity, tuple(loads)

    def at(self, u: np.ndarray) -> np.ndarray:
        q = self.q.copy()
        q[self.free] = u
        return q

    def scaled(self, factor: float) -> tuple:
        return tuple(replace(load, factor=load.factor * factor) for load in self.loads)

    def evaluate(self, u: np.ndarray, factor: float) -> statics.Evaluation:
        return statics.evaluate(self.model, self.at(u), self.free, self.gravity,
                                statics.applied(self.model, list(self.scaled(factor))))

    def equilibrium(self, u: np.ndarray, factor: float) -> np.ndarray:
        """Newton's method on R(u, lambda) = 0 from ``u`` (least squares on the near-singular stiffness)."""
        for _ in range(20):
            e = self.evaluate(u, factor)
            step = np.linalg.lstsq(e.hessian, e.residual, rcond=1e-14)[0]
            u = u + step
            if np.max(np.abs(step), initial=0.0) <= 1e-14 * max(1.0, float(np.max(np.abs(u)))):
                return u
        raise _problem(factor, "Newton's method found no equilibrium on the fundamental path",
                       "an equilibrium path that bifurcates")

    def partials(self, u: np.ndarray, factor: float, params: list) -> np.ndarray:
        """dR/dp (nf, P) at (u, lambda)."""
        eq = implicit.equilibrium_at(self.model, self.at(u), self.free, self.gravity, self.scaled(factor))
        partial, _ = parameter_table.force_partials(self.model, eq.state, self.gravity, eq.loads,
                                                    eq.closure_multipliers, params)
        return partial[self.free]


def _lowest(h: np.ndarray) -> tuple[float, np.ndarray]:
    values, vectors = np.linalg.eigh(0.5 * (h + h.T))
    return float(values[0]), vectors[:, 0]


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
    if model.closures:
        raise _problem(factor, "not implemented: a bifurcation of a model with closed loops",
                       "a model without closures")
    path = _Path(model, np.asarray(q, float), free, gravity, loads)
    u = path.q[free]
    along = path.evaluate(u, factor + 1.0).q_force_reduced - path.evaluate(u, factor).q_force_reduced
    mode = np.asarray(direction, float)[free]
    if abs(mode @ along) > SINGULAR * np.linalg.norm(along) * np.linalg.norm(mode):
        raise _problem(factor, "the load does work along the lowest mode: a fold, not a bifurcation",
                       "a limit point of :func:`shiftsim.sensitivity.limit.locate_fold`")
    # the critical factor: secant on the lowest eigenvalue along the fundamental path
    f0, s0 = factor, _lowest(path.evaluate(u, factor).hessian)[0]
    f1 = factor * (1.0 + 1e-6)
    for _ in range(MAX_SECANT):
        u = path.equilibrium(u, f1)
        s1 = _lowest(path.evaluate(u, f1).hessian)[0]
        if s1 == s0:
            break
        f0, s0, f1 = f1, s1, f1 - s1 * (f1 - f0) / (s1 - s0)
        if abs(f1 - f0) <= 1e-14 * abs(f1):
            break
    else:
        raise _problem(factor, "the lowest eigenvalue does not reach zero near the path's last state",
                       "a bifurcation near the path's end")
    critical = f1
    u = path.equilibrium(u, critical)
    e = path.evaluate(u, critical)
    left, singular, right = np.linalg.svd(e.hessian)
    w, v = left[:, -1], right[-1]
    if singular[-1] > SINGULAR * max(float(singular[0]), 1e-300):
        raise _problem(critical, "the stiffness is not singular there", "a bifurcation")
    catalogue = parameter_table.catalogue(model, path.scaled(critical), gravity)
    params = parameter_table.select(catalogue, list(wrt))
    per_factor = [p for p in catalogue if p.kind == "load" and p.component == "factor"]
    every = [*params, *per_factor]
    partial = path.partials(u, critical, every)
    r_lambda = partial[:, len(params):] @ np.array([load.factor for load in loads], float)
    r_p = partial[:, : len(params)]
    # du/dx, minimum norm (the right-hand sides have no part along w where the symmetry holds)
    moved = np.linalg.lstsq(e.hessian, np.column_stack([r_p, r_lambda]), rcond=1e-12)[0]
    curvature = _along(lambda x: path.evaluate(x, critical).hessian, u, v)  # d/de H(u + e v)
    turning = _along(lambda x: path.partials(x, critical, params), u, v)  # d/de dR/dp(u + e v)
    per_lambda = (w @ (path.evaluate(u, critical + 1.0).hessian - e.hessian) @ v) + w @ curvature @ moved[:, -1]
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
                              derivative, v), reasons


__all__ = ["bifurcation_load_sensitivity"]
