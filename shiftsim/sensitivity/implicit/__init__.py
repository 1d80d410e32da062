"""Implicit differentiation of a converged static equilibrium.

At an equilibrium (u the free coordinates, lambda the multipliers of the independent closure rows, p the
parameters) the solver's conditions hold:

    F(u, lambda, p) = Q_u(u, p) + G_u(u)^T lambda = 0        (nf)
    g(u, p) = 0                                               (m)

Differentiating at fixed equilibrium with H = -dF/du (the solver's tangent stiffness, closure-force stiffness
included) gives the bordered (KKT) system

    [ H    -G^T ] [du/dp     ]   [ dQ_u/dp ]
    [ G     0   ] [dlambda/dp] = [ -dg/dp  ]

whose matrix A is factorized once (LU: H is not symmetric under loads that turn with their frame) and reused:
forward mode solves A X = B for the P parameter columns, adjoint mode solves A^T W = C^T for the outputs' rows and
forms W^T B. The matrix is regular exactly when the loop-projected stiffness Z^T H Z is (Z a null-space basis of
G; G has full row rank on the independent rows): a neutral equilibrium has no derivative.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import InputError, Problem, SolveError
from ... import statics
from ...kinematics import State, state
from ...model import Model
from ...solution import loop_joints

MODES = ("auto", "forward", "adjoint")


@dataclass(frozen=True)
class Equilibrium:
    """A converged equilibrium and what its derivative needs (per-call data, model immutable).

    ``q`` (nq,); ``free`` (nf,) free coordinate indices; ``rows`` (m,) independent closure rows; ``multipliers``
    (m,) on those rows; ``gravity`` (3,) m/s^2; ``loads`` the user loads (``statics.Load``); ``stability`` the
    solver's verdict; ``state`` the kinematic state at q; ``hessian`` (nq, nq) = -d(Q + G^T lambda)/dq at fixed
    lambda over all coordinates; ``residual`` (nq,) Q + G^T lambda (the actuator loads on prescribed coordinates);
    ``closure_jacobian`` (m, nq); ``ground`` the ground field the machine stands on (contacts and tyres,
    :mod:`shiftsim.ground`; None for a machine fixed to the world), its forces in Q and its stiffness in the
    hessian; ``indeterminate`` the joints whose loads the loops leave open (statically indeterminate: their
    efforts, pin forces and wrenches have no derivative)."""

    model: Model
    q: np.ndarray
    free: np.ndarray
    rows: np.ndarray
    multipliers: np.ndarray
    gravity: np.ndarray
    loads: tuple
    stability: str
    state: State
    hessian: np.ndarray
    residual: np.ndarray
    closure_jacobian: np.ndarray
    ground: object | None = None
    indeterminate: frozenset = frozenset()

    @property
    def closure_multipliers(self) -> np.ndarray:
        """(6 n_closures,) the multipliers on every closure row (0 on the redundant ones)."""
        out = np.zeros(6 * len(self.model.closures))
        out[self.rows] = self.multipliers
        return out


def equilibrium(model: Model, set: dict | None = None, hold=(), loads=(), gravity=None,
                options: statics.SolverOptions = statics.SolverOptions(), solution=None, ground=None) -> Equilibrium:
    """Solve (or take ``solution``, a :class:`~shiftsim.solution.Solution` solved with the same ``set``/``hold``
    and ``ground``) and evaluate the terms of the derivative over all coordinates. ``ground``: the ground field
    a floating model stands on (``Stand.field``), None for a machine fixed to the world."""
    fields = () if ground is None else (ground,)
    if model.couplings:
        raise InputError([Problem(model.spec.name, "couplings", "sensitivities of coupled coordinates are not "
                                  "implemented", "a model without joint couplings")])
    loads = tuple(loads)
    if solution is None:
        solution = statics.solve(model, set=set, hold=hold, loads=loads, gravity=gravity, options=options,
                                 fields=fields)
    if not solution.converged:
        raise SolveError(f"{model.spec.name}: the solve ended {solution.status!r}; sensitivities need a converged "
                         "equilibrium")
    free = free_coordinates(model, set, hold)
    q = solution.q
    rows = statics.independent_rows(model, q, free)
    # the multipliers on the independent rows: the least-squares ones on the free coordinates (exact at an
    # equilibrium; the solution's own are moved to the minimum-norm split where the loops leave it open)
    lam = statics.evaluate(model, q, free, solution.gravity, solution.loads, rows=rows, fields=fields).multipliers
    every = np.arange(model.nq)
    ev = statics.evaluate(model, q, every, solution.gravity, solution.loads, multipliers=lam, rows=rows,
                          fields=fields)
    unbalanced = float(np.max(np.abs(ev.residual[free]), initial=0.0))
    if unbalanced > 1e-6 * ev.force_scale:  # a Solution solved with other prescribed joints than those given here
        worst = model.coordinate_names[int(free[np.argmax(np.abs(ev.residual[free]))])]
        raise InputError([Problem("solution", worst, f"unbalanced by {unbalanced:.3g} (force scale "
                                  f"{ev.force_scale:.3g}): not an equilibrium with these joints free",
                                  "the set/hold the solution was solved with (and its ground field)")])
    return Equilibrium(model, q, free, rows, lam, np.asarray(solution.gravity, float), loads, solution.stability,
                       state(model, q[None]), ev.hessian, ev.residual, ev.closure_jacobian, ground,
                       _indeterminate(model, q, free, rows, solution))


def _indeterminate(model: Model, q: np.ndarray, free: np.ndarray, rows: np.ndarray, solution) -> frozenset[str]:
    """The joints whose loads the loops leave open (``solution.indeterminate``: held coordinates or rigid joints
    in loops), asked of the solution only when there may be any: a rigid joint on a loop, or more closure rows
    independent over all coordinates than over the free ones (``rows``)."""
    if not model.closures:
        return frozenset()
    if not any(model.joints[j].type == "rigid" for j in loop_joints(model)):
        if len(free) == model.nq or len(statics.independent_rows(model, q, np.arange(model.nq))) <= len(rows):
            return frozenset()
    return frozenset(solution.indeterminate)


def free_coordinates(model: Model, set: dict | None, hold) -> np.ndarray:
    """The free coordinates (nf,) of a solve with ``set`` and ``hold`` (names resolved once per model and kept on
    it: the names matter, not the values set)."""
    key = ("sensitivity free coordinates", tuple(sorted(set or {})), tuple(hold))
    free = model.cache.get(key)
    if free is None:
        _, prescribed = statics.resolve_prescribed(model, set or {}, list(hold))
        free = statics.free_coordinates(model, prescribed)
        free.flags.writeable = False
        model.cache[key] = free
    return free


def equilibrium_at(model: Model, q: np.ndarray, free: np.ndarray, gravity: np.ndarray, loads=(),
                   stability: str = "neutral", ground=None) -> Equilibrium:
    """The terms of the derivative at a configuration ``q`` (nq,) given by another solver (a path's limit point,
    where Newton's method does not converge), the multipliers the least-squares ones on the free coordinates.
    ``loads`` are ``statics.Load`` (their factors included); ``gravity`` (3,) m/s^2; ``ground`` as
    :func:`equilibrium`."""
    q, free, gravity, loads = np.asarray(q, float), np.asarray(free, int), np.asarray(gravity, float), tuple(loads)
    fields = () if ground is None else (ground,)
    applied = statics.applied(model, list(loads))
    rows = statics.independent_rows(model, q, free)
    lam = statics.evaluate(model, q, free, gravity, applied, rows=rows, fields=fields).multipliers
    ev = statics.evaluate(model, q, np.arange(model.nq), gravity, applied, multipliers=lam, rows=rows, fields=fields)
    return Equilibrium(model, q, free, rows, lam, gravity, loads, stability, state(model, q[None]), ev.hessian,
                       ev.residual, ev.closure_jacobian, ground)


@dataclass(frozen=True)
class Factorized:
    """The bordered matrix A ((nf + m), (nf + m)) of an equilibrium, LU-factorized once (LAPACK getrf: the factors
    and the 0-based pivots); ``regular`` False when it is singular (a neutral direction)."""

    lu: tuple | None
    nf: int
    regular: bool


def bordered(eq: Equilibrium) -> np.ndarray:
    """The bordered matrix A = [[H, -G^T], [G, 0]] ((nf + m), (nf + m)) over the free coordinates."""
    free = eq.free
    nf, m = len(free), len(eq.rows)
    a = np.zeros((nf + m, nf + m))
    a[:nf, :nf] = eq.hessian[free][:, free]
    g = eq.closure_jacobian[:, free]
    a[:nf, nf:], a[nf:, :nf] = -g.T, g
    return a


def right_hand_sides(eq: Equilibrium, force_partial: np.ndarray, closure_partial: np.ndarray) -> np.ndarray:
    """B ((nf + m), P) = [dQ_u/dp; -dg/dp] from dQ/dp (nq, P) and dg/dp (6 n_closures, P)."""
    return np.concatenate([force_partial[eq.free], -closure_partial[eq.rows]])


def factorize(eq: Equilibrium) -> Factorized:
    """A's LU factors, and whether A is regular: the loop-projected stiffness Z^T H Z (Z an orthonormal basis of G's
    null space, from G^T's complete QR) has its smallest singular value above 1e-10 of A's largest entry, and the
    solver did not find the equilibrium neutral. LAPACK is called directly: these matrices are small and the
    wrappers' checks would cost more than the work."""
    from scipy.linalg import lapack  # scipy: 0.3 s to import, paid only where it is used

    nf, m = len(eq.free), len(eq.rows)
    a = bordered(eq)
    if not a.size:
        return Factorized(None, nf, True)
    scale = max(float(np.max(np.abs(a))), 1e-300)
    regular = eq.stability != "neutral"
    if regular and nf > m:
        h = a[:nf, :nf]
        if m:
            reflectors, tau = np.zeros((nf, nf)), np.zeros(nf)  # G^T (nf, m) = Q R, Q's last nf - m columns: Z
            reflectors[:, :m], tau[:m] = lapack.dgeqrf(a[nf:, :nf].T)[:2]
            z = lapack.dorgqr(reflectors, tau)[0][:, m:]
            projected = z.T @ h @ z
        else:
            projected = h
        singular = lapack.dgesdd(projected, compute_uv=0)[1]
        regular = bool(singular[-1] > 1e-10 * scale)
    if not regular:
        return Factorized(None, nf, False)
    lu, pivots, info = lapack.dgetrf(a)
    return Factorized((lu, pivots), nf, info == 0)


def choose_mode(mode: str, n_parameters: int, n_outputs: int) -> str:
    """Forward when the parameters are no more than the outputs, adjoint otherwise (unless ``mode`` says)."""
    if mode not in MODES:
        raise InputError([Problem("mode", mode, "unknown mode", " or ".join(MODES))])
    if mode != "auto":
        return mode
    return "forward" if n_parameters <= n_outputs else "adjoint"


def derivatives(f: Factorized, rhs: np.ndarray, outputs: np.ndarray, explicit: np.ndarray, mode: str) -> np.ndarray:
    """dy/dp (Y, P) = C A^-1 B + D with ``rhs`` B ((nf + m), P), ``outputs`` C (Y, (nf + m)) the outputs'
    derivatives with respect to (u, lambda), ``explicit`` D (Y, P). Forward: A X = B; adjoint: A^T W = C^T."""
    if not f.regular:
        return np.full(explicit.shape, np.nan)
    if not f.lu:  # nothing free: the outputs move only explicitly
        return explicit.copy()
    from scipy.linalg import lapack  # scipy: 0.3 s to import, paid only where it is used

    lu, pivots = f.lu
    if mode == "forward":
        return outputs @ lapack.dgetrs(lu, pivots, rhs)[0] + explicit
    return lapack.dgetrs(lu, pivots, outputs.T, trans=1)[0].T @ rhs + explicit
