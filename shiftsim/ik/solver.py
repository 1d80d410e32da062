"""The generic inverse-kinematics solver: projected Levenberg–Marquardt (CLARAty §8.6–8.9).

Minimises ``1/2 |W r(q)|^2`` over the free coordinates of an
:class:`~.problem.IKProblem` (r: constraints, loop closures, coupled limits).

Each iteration solves the damped Gauss–Newton step ``(J^T J + lambda I) d = -J^T r``
by Cholesky on these normal equations (a few coordinates wide: one small solve
costs less than a least-squares factorization; the condition number of J is
squared, and where round-off leaves the damped matrix not positive definite the
step is its least-squares solution), on the coordinates that are not pinned at a limit:
a coordinate at a bound whose gradient pushes it outwards is held for the
step (active set). The trial point is then *projected* onto the box of joint
limits (clipped), so every iterate respects the limits. The damping follows
the gain ratio ``rho`` = actual / predicted decrease (Nielsen's rule:
``lambda *= max(1/3, 1 - (2 rho - 1)^3)`` on success, doubled growth on
failure); near a solution lambda vanishes and the iteration is Gauss–Newton,
quadratically convergent when the constraints can be met.

It stops with ``converged`` once the residual norm is within the tolerance,
and with ``failed`` when the cost stops decreasing (a local minimum of the
error: targets out of reach, conflicting, or blocked by limits), when no
damping gives a decrease, or after ``max_iterations``. With
``options.restarts`` it then tries again from random starts and keeps the
best outcome.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.linalg.lapack import dposv

from .problem import Evaluation, IKProblem, IKResult

NAME = "generic (projected Levenberg-Marquardt)"
INITIAL_DAMPING = 1e-3  # relative to the largest diagonal entry of J^T J
MAX_DAMPING = 1e12
STALL_DECREASE = 1e-9  # relative decrease of the cost counted as no progress
STALL_STEPS = 3
STATIONARY = 1e-6  # |J^T r| relative to |J| |r| at a minimum of the error
STUCK = ("the error stopped decreasing (a local minimum: targets out of reach, constraints in conflict, "
         "or joint limits in the way)")


def _pinned_at_bounds(x: list[float], gradient: list[float], lower: list[float], upper: list[float]) -> list[int]:
    """Positions (in the free coordinates) of those at a bound whose descent direction (-gradient) leaves
    the box. One entry per free coordinate in each list; plain floats, as the lists are a few long."""
    pinned = []
    for k, (xk, gk, lo, hi) in enumerate(zip(x, gradient, lower, upper)):
        # within 1e-12 (relative beyond 1) of the bound the gradient pushes against
        if (gk > 0.0 and xk <= lo + 1e-12 * max(1.0, abs(xk))) or (gk < 0.0 and xk >= hi - 1e-12 * max(1.0, abs(xk))):
            pinned.append(k)
    return pinned


def _damped_step(normal: np.ndarray, gradient: np.ndarray, damping: float, identity: np.ndarray) -> np.ndarray:
    """The step d (n,) of ``(J^T J + damping I) d = -J^T r`` from ``normal`` = J^T J (n, n) and ``gradient``
    = J^T r (n,) (``identity``: an identity matrix of at least n rows): by Cholesky (LAPACK ``dposv``, whose
    call costs a fraction of numpy.linalg.solve's on a few unknowns), or, when round-off leaves the damped
    matrix not positive definite (damping vanishing on a singular J), as its minimum-norm least-squares
    solution."""
    n = len(gradient)
    damped = normal + damping * identity[:n, :n]
    _, step, info = dposv(damped, -gradient)
    if info != 0:
        step = np.linalg.lstsq(damped, -gradient, rcond=None)[0]
    return step


def levenberg_marquardt(problem: IKProblem, q_start: np.ndarray) -> tuple[np.ndarray, int, str]:
    """One projected LM descent from ``q_start``: (last configuration, iterations, why it stopped)."""
    q = problem.project(q_start)
    current: Evaluation = problem.evaluate(q)
    options = problem.options
    all_free = problem.free.size == problem.model.nq
    free = slice(None) if all_free else problem.free  # a view when every coordinate is free
    lower, upper = problem.lower[free].tolist(), problem.upper[free].tolist()
    bounded = not all(math.isinf(bound) for bound in lower + upper)
    identity = np.eye(len(lower))
    scale = max([1.0, *(current.jacobian.T @ current.jacobian).diagonal().tolist()])  # largest |column|^2
    damping, growth, stalled = INITIAL_DAMPING * scale, 2.0, 0
    iterations = 0
    while current.norm > options.tolerance:
        if not problem.free.size:
            return q, iterations, "no joint is free to move"
        if iterations == options.max_iterations:
            return q, iterations, f"stopped after {iterations} iterations"
        jac, weighted, cost = current.jacobian, current.weighted, current.cost
        gradient = jac.T @ weighted
        normal = jac.T @ jac
        # |J|_F |r| (|J|_F^2 is the trace of J^T J): the scale the gradient is small against at a minimum
        size = math.sqrt(sum(normal.diagonal().tolist()) * cost)
        pinned = _pinned_at_bounds(q[free].tolist(), gradient.tolist(), lower, upper) if bounded else []
        if pinned:
            moving = np.array([k for k in range(len(gradient)) if k not in pinned])
            gradient, normal = gradient[moving], normal[moving][:, moving]
        if math.sqrt(gradient @ gradient) <= STATIONARY * size:
            return q, iterations, STUCK
        iterations += 1
        if pinned:
            step = np.zeros(len(lower))
            step[moving] = _damped_step(normal, gradient, damping, identity)
        else:
            step = _damped_step(normal, gradient, damping, identity)
        largest = max(map(abs, step.tolist()))
        if largest > options.max_step:
            step *= options.max_step / largest
        if all_free:
            trial = problem.project(q + step)
            taken = trial - q
        else:
            trial = q.copy()
            trial[free] += step
            trial = problem.project(trial)
            taken = trial[free] - q[free]
        linear = weighted + jac @ taken
        predicted = cost - linear @ linear
        candidate = problem.evaluate(trial)
        actual = cost - candidate.cost
        if predicted > 0 and actual > 0:
            rho = actual / predicted
            q, current = trial, candidate
            damping *= max(1.0 / 3.0, 1.0 - (2.0 * rho - 1.0) ** 3)
            growth = 2.0
            stalled = stalled + 1 if actual <= STALL_DECREASE * cost else 0
            if stalled >= STALL_STEPS:
                return q, iterations, STUCK
        else:
            damping *= growth
            growth *= 2.0
            if damping > MAX_DAMPING * scale:
                return q, iterations, STUCK
    return q, iterations, "converged"


def solve_generic(problem: IKProblem, q_start: np.ndarray) -> IKResult:
    """Projected LM from ``q_start``, then from ``options.restarts`` random starts while it fails;
    the best configuration found is reported, with the iterations of all attempts."""
    q, total, reason = levenberg_marquardt(problem, q_start)
    best_q, best_norm, best_reason = q, problem.evaluate(q).norm, reason
    rng = None
    attempts = 1
    while best_norm > problem.options.tolerance and attempts <= problem.options.restarts:
        if rng is None:  # made only when a restart is needed: it costs as much as an iteration
            rng = np.random.default_rng(problem.options.seed)
        q, iterations, reason = levenberg_marquardt(problem, problem.random_start(rng, q_start))
        total += iterations
        attempts += 1
        norm = problem.evaluate(q).norm
        if norm < best_norm:
            best_q, best_norm, best_reason = q, norm, reason
    notes = [] if best_norm <= problem.options.tolerance else [best_reason]
    if attempts > 1:
        notes.append(f"best of {attempts} starts")
    return problem.result(best_q, total, NAME, "; ".join(notes))
