"""The derivative of a limit load: the load factor at which the load path folds (the largest load the equilibrium
can carry along it), by the envelope theorem on the bordered system, without re-solving.

Along the path the conditions R(x, lambda, p) = 0 hold (x = (u, multipliers), lambda the load factor); the load
multiplies the generalized force of the path's loads. At a fold the bordered matrix A = -dR/dx is singular with a
left null vector w (w^T A = 0); differentiating R = 0 and multiplying by w^T removes dx:

    d lambda* / dp = -(w^T B_p) / (w^T B_lambda),

B the right-hand sides of the bordered system ([dQ_u/dp; -dg/dp], :func:`.implicit.right_hand_sides`) for the
parameters and for the load factor (the generalized force of the loads at factor 1). The state at the fold (its
coordinates and load factor, and optionally its null vector) comes from whoever followed the path; a matrix that
is not singular there, or a load that does no work along the fold's mode (w^T B_lambda = 0: a bifurcation, not a
limit point), is refused with the reason.

A path follower stops within its tolerance *short* of the fold, where the matrix is not yet singular and its
smallest singular vector is off by the square root of the distance (7 % on the shipped excavator's chart at 1e-6).
:func:`locate_fold` finds the fold itself from there: the path is parameterized by its distance s along the
null vector found there (x = x_last + s phi + ...), the bordered system with the load factor as one more unknown
and phi^T (u - u_last) = s as one more equation is regular through the fold, and the load factor lambda(s) along
it peaks at the fold: the secant method on d lambda / ds (that system's tangent), a few Newton solves of the
extended system each. At the fold lambda is exact to the square of the distance in s.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .. import statics
from ..errors import InputError, Problem
from ..model import Model
from . import differentiate, implicit
from . import ground as ground_terms
from . import parameters as parameter_table

SINGULAR = 1e-8  # a fold's smallest singular value of A, relative to its largest


@dataclass(frozen=True)
class LimitSensitivities:
    """d(limit load factor)/dp at a fold: ``factor`` the load factor there, ``parameters`` (P,) names,
    ``parameter_values`` (P,), ``derivative`` (P,) per parameter unit, ``null_vector`` (nf + m,) the right null
    vector of the bordered matrix at a fold (its mode in free coordinates, then multipliers); None for an event
    that is no fold (a cylinder reaching its relief force)."""

    factor: float
    parameters: tuple[str, ...]
    parameter_values: np.ndarray
    derivative: np.ndarray
    null_vector: np.ndarray | None

    @property
    def elasticity(self) -> np.ndarray:
        """(P,) % change of the limit load per 1 % of each parameter."""
        return self.derivative * self.parameter_values / self.factor


@dataclass(frozen=True)
class Fold:
    """A located fold of a load path: coordinates ``q`` (nq,), load ``factor``, multipliers (m,) on the independent
    closure ``rows``, and the secant iterations it took."""

    q: np.ndarray
    factor: float
    multipliers: np.ndarray
    rows: np.ndarray
    iterations: int


FOLD_TOLERANCE = 1e-13  # the fold's load factor to this (relative): its error is the square of the step in s
MAX_SECANT = 12
MAX_NEWTON = 12
NEWTON_STEP = 1e-10  # a Newton step this small (relative) is the last: the next one is at round-off


class _Branch:
    """The path near a fold, parameterized by s = phi^T (u - u_last): the extended system over (u, multipliers,
    lambda) and its Newton solve at a given s (see the module docstring). ``scaled`` are the loads the factor
    multiplies (``statics.Load`` at factor 1), ``fixed`` those that stay."""

    def __init__(self, model: Model, q: np.ndarray, free: np.ndarray, gravity: np.ndarray, scaled, fixed,
                 direction: np.ndarray, fields: tuple, rows: np.ndarray):
        self.model, self.free, self.gravity, self.fields, self.rows = model, free, gravity, fields, rows
        self.scaled, self.fixed = tuple(scaled), tuple(fixed)
        self.origin = q[free].copy()
        self.phi = direction[free] / np.linalg.norm(direction[free])
        self.q_template = q.copy()

    def _evaluate(self, u: np.ndarray, lam: np.ndarray, factor: float, per_factor: bool):
        q = self.q_template.copy()
        q[self.free] = u
        loads = [replace(load, factor=load.factor * factor) for load in self.scaled] + list(self.fixed)
        e = statics.evaluate(self.model, q, self.free, self.gravity, statics.applied(self.model, loads), lam,
                             self.rows, fields=self.fields)
        if not per_factor:
            return q, e, None
        more = [replace(load, factor=load.factor * (factor + 1.0)) for load in self.scaled] + list(self.fixed)
        e1 = statics.evaluate(self.model, q, self.free, self.gravity, statics.applied(self.model, more), lam,
                              self.rows, fields=self.fields)
        return q, e, e1.q_force_reduced - e.q_force_reduced

    def _matrix(self, e, along: np.ndarray) -> tuple[np.ndarray, float]:
        """d(R, g, c phi^T u)/d(u, multipliers, lambda) ((nf + m + 1) square) and c, the largest stiffness (the
        last row on the scale of the others)."""
        nf, m = len(self.free), len(self.rows)
        scale = max(float(np.max(np.abs(e.hessian), initial=0.0)), 1.0)
        j = np.zeros((nf + m + 1, nf + m + 1))
        j[:nf, :nf], j[:nf, nf:nf + m], j[:nf, -1] = -e.hessian, e.closure_jacobian.T, along
        j[nf:nf + m, :nf], j[-1, :nf] = e.closure_jacobian, scale * self.phi
        return j, scale

    def solve(self, s: float, u: np.ndarray, lam: np.ndarray, factor: float):
        """The path's point at ``s`` from the guess (u, multipliers, factor): (q, multipliers, factor, d factor/ds),
        None where Newton's method does not converge."""
        nf, m = len(self.free), len(self.rows)
        for _ in range(MAX_NEWTON):
            q, e, along = self._evaluate(u, lam, factor, True)
            j, scale = self._matrix(e, along)
            f = np.concatenate([e.residual, e.closure, [scale * (self.phi @ (u - self.origin) - s)]])
            try:
                step = np.linalg.solve(j, -f)
                slope = float(np.linalg.solve(j, scale * np.eye(nf + m + 1)[-1])[-1])
            except np.linalg.LinAlgError:
                return None
            u, lam, factor = u + step[:nf], lam + step[nf:nf + m], factor + float(step[-1])
            small = np.max(np.abs(step[:nf]), initial=0.0) <= NEWTON_STEP * max(1.0, float(np.max(np.abs(u))))
            if small and abs(step[-1]) <= NEWTON_STEP * max(abs(factor), 1e-300):  # quadratic: the next is round-off
                q = self.q_template.copy()
                q[self.free] = u
                return q, lam, factor, slope
        return None


def locate_fold(model: Model, q: np.ndarray, free: np.ndarray, gravity: np.ndarray, scaled, factor: float,
                direction: np.ndarray, fixed=(), fields: tuple = (), rows: np.ndarray | None = None,
                expected: float | None = None) -> Fold:
    """The fold of the path of the loads ``scaled`` (``statics.Load`` at factor 1, all multiplied by the load
    factor; ``fixed`` loads stay) near its equilibrium ``q`` (nq,) at ``factor``, short of the fold, ``direction``
    (nq,) the reduced stiffness' lowest eigenvector there (the path's ``null_vector``); ``expected`` the path's
    estimate of the fold's factor (a first step; default 1e-6 beyond ``factor``). ``gravity`` (3,), ``fields``
    the force fields (a ground), ``rows`` the independent closure rows (default: those at ``q``). Raises
    InputError where the extended system has no solution near ``q`` or its load factor has no peak there."""
    q, free, gravity = np.asarray(q, float), np.asarray(free, int), np.asarray(gravity, float)
    rows = statics.independent_rows(model, q, free) if rows is None else np.asarray(rows, int)
    branch = _Branch(model, q, free, gravity, scaled, fixed, np.asarray(direction, float), tuple(fields), rows)
    _, first, along = branch._evaluate(q[free], None, factor, True)
    if abs(branch.phi @ along) <= SINGULAR * float(np.linalg.norm(along)):
        raise InputError([Problem("limit point", f"load factor {factor:g}", "the load does no work along the "
                                  "lowest mode: the path bifurcates there, it does not fold",
                                  "a fold (a bifurcation: shiftsim.sensitivity.bifurcation)")])
    start = first.multipliers
    here = branch.solve(0.0, q[free].copy(), start, factor)
    if here is None:
        raise InputError([Problem("limit point", f"load factor {factor:g}", "no equilibrium of the extended system "
                                  "at the path's last state", "an equilibrium of the load path near its fold")])
    s0, f0 = 0.0, here[3]
    ahead = (expected if expected is not None and expected > factor else factor * (1.0 + 1e-6)) - here[2]
    s1 = 2.0 * ahead / f0 if f0 != 0.0 else 1e-6  # lambda* - lambda = a s^2 near the fold, d lambda/ds = 2 a s
    last = here
    for iteration in range(1, MAX_SECANT + 1):
        point = branch.solve(s1, last[0][free], last[1], last[2])
        if point is None:
            raise InputError([Problem("limit point", f"load factor {factor:g}", f"no equilibrium of the extended "
                                      f"system at s = {s1:.3g} from the path's last state",
                                      "a fold near the path's end")])
        f1 = point[3]
        if abs(s1 - s0) * abs(f1) <= FOLD_TOLERANCE * abs(point[2]) or f1 == 0.0:
            return Fold(point[0], point[2], point[1], rows, iteration)
        if f1 == f0:
            break
        s0, f0, s1, last = s1, f1, s1 - f1 * (s1 - s0) / (f1 - f0), point
    raise InputError([Problem("limit point", f"load factor {factor:g}", "the load factor has no peak along the "
                              "fold's mode near the path's last state", "a fold near the path's end")])


def fold_derivative(eq: implicit.Equilibrium, rhs: np.ndarray, along_path: np.ndarray, factor: float
                    ) -> tuple[np.ndarray, np.ndarray]:
    """d lambda*/dp (P,) at a fold ``eq`` (its factor ``factor``) from the bordered system's right-hand sides
    ``rhs`` ((nf + m), P) of the parameters and ``along_path`` ((nf + m),) of the load factor; and the right null
    vector ((nf + m),). InputError where the state is no equilibrium, no fold, or a bifurcation.

    The null vectors come from the loop-projected stiffness Z^T H Z (Z an orthonormal basis of the closure rows'
    null space), not from the bordered matrix itself: its multiplier block has singular values of order
    |G|^2 / |H| (1e-7 of the largest on a machine on stiff ground), so near a fold its smallest singular vector is
    mixed with theirs. With y^T (Z^T H Z) = 0 the left null vector is w = (Z y, mu), G^T mu = -H^T Z y; the
    right one (Z v, nu), G^T nu = H Z v."""
    free = eq.free
    h, g = eq.hessian[np.ix_(free, free)], eq.closure_jacobian[:, free]
    nf, m = h.shape[0], g.shape[0]
    z = np.linalg.qr(g.T, mode="complete")[0][:, m:] if m else np.eye(nf)
    u, singular, vt = np.linalg.svd(z.T @ h @ z)
    # scale: the largest stiffness, or the path load's generalized force per unit coordinate (a one-coordinate path)
    scale = max(float(singular[0]), abs(factor) * float(np.linalg.norm(along_path)))
    unbalanced = float(np.max(np.abs(eq.residual[free]), initial=0.0))
    if unbalanced > SINGULAR * scale:
        raise InputError([Problem("limit point", f"load factor {factor:g}", f"unbalanced by {unbalanced:.3g} "
                                  f"(scale {scale:.3g}): not an equilibrium", "the state of a fold of the path")])
    if singular[-1] > SINGULAR * scale:
        raise InputError([Problem("limit point", f"load factor {factor:g}", "the loop-projected stiffness is not "
                                  f"singular there (smallest singular value {singular[-1] / scale:.3g} of the "
                                  "scale): not a limit point of the load path", "the state of a fold of the path")])
    left_u, right_u = z @ u[:, -1], z @ vt[-1]
    left = np.concatenate([left_u, np.linalg.lstsq(g.T, -h.T @ left_u, rcond=None)[0] if m else []])
    right = np.concatenate([right_u, np.linalg.lstsq(g.T, h @ right_u, rcond=None)[0] if m else []])
    work = float(left @ along_path)
    if abs(work) <= SINGULAR * float(np.linalg.norm(along_path)):
        raise InputError([Problem("limit point", f"load factor {factor:g}", "the load does no work along the "
                                  "fold's mode: a bifurcation, not a limit point (its load has no derivative)",
                                  "a fold at which the load path turns back")])
    return -(left @ rhs) / work, right


def fold_sensitivities(eq: implicit.Equilibrium, params: list[parameter_table.Parameter],
                       per_factor: parameter_table.Parameter, factor: float) -> LimitSensitivities:
    """:func:`fold_derivative` at the fold ``eq`` (the load factor ``factor``, a standing machine's ground field
    in ``eq.ground``) for the parameters ``params``; ``per_factor`` the parameter the path's load factor is (the
    factor of the loads it multiplies). InputError where a contact or tyre is at its lift-off or friction knot
    there (one-sided derivatives only) or :func:`fold_derivative` refuses."""
    every = [*params, per_factor]
    if eq.ground is not None:
        knots = ground_terms.knot_reasons(ground_terms.evaluate(eq.ground, eq.model, eq.state))
        if knots:
            raise InputError([Problem("limit point", f"load factor {factor:g}", knots[0], "a differentiable fold")])
    partial, closure_partial, _ = ground_terms.equilibrium_partials(eq, every)
    rhs = implicit.right_hand_sides(eq, partial, closure_partial)
    derivative, null = fold_derivative(eq, rhs[:, :-1], rhs[:, -1], factor)
    return LimitSensitivities(float(factor), tuple(p.name for p in params), np.array([p.value for p in params]),
                              derivative, null)


def limit_load_sensitivity(model: Model, q: np.ndarray, factor: float, loads, wrt=("all",), set: dict | None = None,
                           hold=(), gravity=None, direction: np.ndarray | None = None) -> LimitSensitivities:
    """Sensitivities of the load factor ``factor`` at which the path of ``loads`` (``statics.Load`` at factor 1,
    all scaled by the factor) folds at coordinates ``q`` (nq,), with the joints in ``set``/``hold`` prescribed,
    with respect to the parameters ``wrt`` (names or kinds, docs/sensitivity.md). With ``direction`` (nq,), the
    reduced stiffness' lowest eigenvector at ``q`` (a path follower's ``null_vector``), ``q`` and ``factor`` are
    the path's last state short of the fold, which is located first (:func:`locate_fold`)."""
    _, prescribed = statics.resolve_prescribed(model, set or {}, list(hold))
    free = statics.free_coordinates(model, prescribed)
    gravity = model.gravity if gravity is None else np.asarray(gravity, float)
    if direction is not None:
        fold = locate_fold(model, q, free, gravity, loads, factor, direction)
        q, factor = fold.q, fold.factor
    scaled = tuple(replace(load, factor=load.factor * factor) for load in loads)
    eq = implicit.equilibrium_at(model, q, free, gravity, scaled)
    catalogue = parameter_table.catalogue(model, scaled, gravity)
    params = parameter_table.select(catalogue, list(wrt))
    per_factor = [p for p in catalogue if p.kind == "load" and p.component == "factor"]
    partial, closure_partial = parameter_table.force_partials(model, eq.state, gravity, scaled,
                                                              eq.closure_multipliers, [*params, *per_factor])
    rhs = implicit.right_hand_sides(eq, partial, closure_partial)
    # the path's load is sum_i f_i lambda F_i: d/d lambda = sum_i f_i dQ/d(factor_i)
    along_path = rhs[:, len(params):] @ np.array([load.factor for load in loads], float)
    derivative, null = fold_derivative(eq, rhs[:, : len(params)], along_path, factor)
    return LimitSensitivities(float(factor), tuple(p.name for p in params), np.array([p.value for p in params]),
                              derivative, null)


@dataclass(frozen=True)
class Event:
    """An output reaching a fixed value along the load path: ``value`` the output there, ``slope`` its total
    derivative in the load factor, ``result`` d(load factor)/dp at fixed threshold."""

    value: float
    slope: float
    result: LimitSensitivities


def event_load_sensitivity(model: Model, q: np.ndarray, factor: float, loads, output: str, wrt=("all",),
                           set: dict | None = None, hold=(), gravity=None) -> Event:
    """Sensitivities of the load factor ``factor`` at which the equilibrium output ``output`` (a name of
    docs/sensitivity.md's outputs) reaches a threshold that does not depend on the parameters, at coordinates ``q``
    (nq,) of the path of ``loads`` (at factor 1, all scaled by the factor): from y(lambda*(p), p) = threshold,
    d lambda*/dp = -(dy/dp) / (dy/d lambda), both from the implicit derivative of the equilibrium there. A held
    tipping-edge hinge's effort reaching 0 is a tipping event; a cylinder force reaching its relief force a
    hydraulic one (:mod:`.hydraulic` adds the threshold's own parameters)."""
    _, prescribed = statics.resolve_prescribed(model, set or {}, list(hold))
    free = statics.free_coordinates(model, prescribed)
    gravity = model.gravity if gravity is None else np.asarray(gravity, float)
    scaled = tuple(replace(load, factor=load.factor * factor) for load in loads)
    eq = implicit.equilibrium_at(model, q, free, gravity, scaled, stability="stable")
    catalogue = parameter_table.catalogue(model, scaled, gravity)
    params = parameter_table.select(catalogue, list(wrt))
    per_factor = [p.name for p in catalogue if p.kind == "load" and p.component == "factor"]
    result = differentiate(eq, [output], [*(p.name for p in params), *per_factor])
    unbalanced = float(np.max(np.abs(eq.residual[free]), initial=0.0))
    if result.reasons[0] or unbalanced > SINGULAR * max(1.0, float(np.max(np.abs(eq.residual)))):
        raise InputError([Problem("event", output, result.reasons[0] or f"unbalanced by {unbalanced:.3g}: not an "
                                  "equilibrium", "a differentiable equilibrium at the event")])
    column = {name: j for j, name in enumerate(result.parameters)}
    slope = float(np.array([result.derivative[0, column[n]] for n in per_factor])
                  @ np.array([load.factor for load in loads], float))
    if slope == 0.0:
        raise InputError([Problem("event", output, "the load does not change the output", "an output the load moves")])
    derivative = -np.array([result.derivative[0, column[p.name]] for p in params]) / slope
    return Event(float(result.values[0]), slope,
                 LimitSensitivities(float(factor), tuple(p.name for p in params), np.array([p.value for p in params]),
                                    derivative, None))


__all__ = ["Event", "Fold", "LimitSensitivities", "event_load_sensitivity", "fold_derivative", "fold_sensitivities",
           "limit_load_sensitivity", "locate_fold"]
