"""Static equilibrium: Newton's method on the balance of generalized forces with loop closure.

Unknowns u are the coordinates neither prescribed nor coupled; prescribed
coordinates are inputs. The system solved is

    T^T (Q_gravity + Q_restraints + Q_external + G^T lambda) = 0,   g(q) = 0

with T = dq/du (couplings), G the closure Jacobian restricted to its
independent rows (chosen by pivoted QR at the assembled pose: redundant
equations, e.g. three per planar loop, never enter the matrix). The solve is
a descent of the potential energy on the closed-loop manifold: the
multipliers are the least-squares ones at every iterate, each Newton step is
taken in the null space of G with the analytic tangent stiffness (shifted to
positive definite where it is not), and every trial point of the line search
is projected back onto g(q) = 0 before its energy is compared (the residual
norm stands in for the energy when loads are not conservative). A converged
point that is unstable is left along its direction of negative curvature,
toward the start, so the solve settles in the well its start lies in. A
coordinate that nothing holds against the load is reported before iterating
(or when it runs far away): no equilibrium exists. When the full load fails,
loads are applied in steps from the unloaded state. docs/statics.md has the
reasons and the verdicts (stable, neutral, unstable, no equilibrium).

Dampers and friction act on rates: a single solve has zero rates and they add
nothing; sweeps with a time axis pass the rates between steps (``rates``).

Everything works on batches of independent cases ``(B, ...)`` at once:
:func:`solve_batch` is the batched mode, :func:`solve` the single solve.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import scipy.linalg

from . import generalized as gen
from .errors import InputError, Problem
from .kinematics import State, assemble, closure_jacobian, closure_residual, coupling_map, model_size, state
from .model import PRISMATIC, Model


@dataclass(frozen=True)
class Load:
    """A force (N) and torque (N m) at a frame.

    ``direction`` "world": components in world axes, fixed in the world;
    "body": components in the frame's axes, turning with the body.
    """

    frame: str
    force: tuple[float, float, float] = (0.0, 0.0, 0.0)
    torque: tuple[float, float, float] = (0.0, 0.0, 0.0)
    direction: str = "world"
    factor: float = 1.0


@dataclass(frozen=True)
class SolverOptions:
    """Newton settings. Tolerances: ``force_tolerance`` relative to the largest generalized force
    in play, ``closure_tolerance`` absolute (m and rad). ``max_step`` caps a Newton step's largest
    coordinate change (rad or m), ``max_shifted_step`` a step taken with a shifted stiffness (where
    the mechanism is unstable or its stiffness vanishes, as on a spring's slack side); the line
    search on the energy does the rest of the globalization. ``finite_difference_stiffness``
    replaces the analytic tangent stiffness by central differences of the residual (a fallback
    and a check; one residual evaluation pair per free coordinate). ``load_stepping`` False reports a
    case whose full load fails as failed at once (for searches that expect failures, such as a tipping
    load bracketed from above)."""

    max_iterations: int = 60  # per load step
    force_tolerance: float = 1e-10
    closure_tolerance: float = 1e-10
    max_load_halvings: int = 8
    full_load_iterations: int = 25
    max_step: float = np.inf
    max_shifted_step: float = 1.0
    seek_stable: bool = True
    finite_difference_stiffness: bool = False
    load_stepping: bool = True


@dataclass
class BatchResult:
    """Raw equilibria of a batch of B cases.

    ``q`` (B, nq); ``multipliers`` (B, 6 n_closures), zero on redundant rows; ``converged``,
    ``iterations``, ``residual`` (B,); ``stability`` (B,) one of :data:`STABILITY`;
    ``neutral`` per case the neutral directions (k, nf) as combinations of the free
    coordinates ``free``; ``unheld`` per case the indices into ``free`` of coordinates that
    nothing holds against the load (found before iterating: no equilibrium exists); ``runaway``
    per case those of free translations that ran :data:`RUNAWAY_SIZES` machine sizes away while
    the energy kept falling (no equilibrium within reach).
    """

    q: np.ndarray
    multipliers: np.ndarray
    converged: np.ndarray
    iterations: np.ndarray
    residual: np.ndarray
    stability: np.ndarray
    free: np.ndarray
    neutral: list[np.ndarray]
    unheld: list[np.ndarray]
    runaway: list[np.ndarray]
    runaway_distance: float = np.inf  # m: how far a free translation ran before it counted as ``runaway``

    @property
    def stable(self) -> np.ndarray:
        """(B,) True where the equilibrium is stable (not neutral, not unstable)."""
        return self.stability == "stable"


STABILITY = ("stable", "neutral", "unstable")


@dataclass
class _Problem:
    """What one batched solve holds fixed: the model, free coordinates, independent closure rows, loads (B, ...),
    options, extra force fields, and the model's scales (force floor in N m, size in m)."""

    model: Model
    free: np.ndarray
    rows: np.ndarray
    gravity: np.ndarray  # (B, 3)
    loads: list[gen.AppliedLoad]
    rate_force: np.ndarray | None  # (B, nq)
    options: SolverOptions
    fields: tuple[gen.ForceField, ...] = ()
    force_floor: float = 1e-9  # N m: no generalized force in play is taken smaller (see _force_floor)
    size: float = 1.0  # m: the machine's size at the start (see model_size)


@dataclass
class _Evaluation:
    """Everything one Newton iteration needs at a batch of configurations (u: the free coordinates)."""

    residual: np.ndarray  # (B, nf) reduced force residual, closure forces included
    closure: np.ndarray  # (B, m) closure residual on the independent rows
    closure_jacobian: np.ndarray  # (B, m, nf)
    hessian: np.ndarray  # (B, nf, nf) = -d residual / du
    energy: np.ndarray  # (B,)
    force_scale: np.ndarray  # (B,)
    conservative: bool
    q_force_reduced: np.ndarray  # (B, nf) without closure forces
    multipliers: np.ndarray  # (B, m) closure multipliers used


def _least_squares_multipliers(g_u: np.ndarray, force: np.ndarray) -> np.ndarray:
    """lambda (B, m) minimizing |force + G_u^T lambda| for G_u (B, m, nf), force (B, nf).

    At an equilibrium the minimum is zero and lambda is exact; elsewhere the
    remainder is the force projected on the motions the loops allow.
    """
    gram = g_u @ np.swapaxes(g_u, 1, 2)
    rhs = -np.einsum("bmk,bk->bm", g_u, force)
    try:
        return np.linalg.solve(gram, rhs[..., None])[..., 0]
    except np.linalg.LinAlgError:  # a singular configuration: minimum-norm multipliers
        return np.stack([np.linalg.lstsq(gm, r, rcond=1e-12)[0] for gm, r in zip(gram, rhs)])


def _evaluate(p: _Problem, q: np.ndarray, multipliers: np.ndarray | None, scale: float | np.ndarray,
              s: State | None = None) -> _Evaluation:
    """Forces, stiffness, closure terms and energy at q (B, nq) under the load factor ``scale``.

    With ``multipliers`` None the closure multipliers are the least-squares ones
    (:func:`_least_squares_multipliers`), so the residual is the force along the
    motions the loops allow; given multipliers (B, m) are used as they are. ``s``: the
    kinematic state at q when the caller has it.
    """
    model = p.model
    batch = q.shape[0]
    s = state(model, q) if s is None else s
    factor = np.broadcast_to(np.asarray(scale, float), (batch,))
    loads = [gen.AppliedLoad(l.frame, l.force * factor[:, None], l.torque * factor[:, None], l.follow) for l in p.loads]
    point_forces, load_terms = gen.applied_loads(model, s, loads)
    weight = gen.gravity_and_world_forces(model, s, p.gravity * factor[:, None], point_forces)
    springs = gen.joint_springs(model, q)
    pairs = gen.pair_springs(model, s)
    terms = (weight, springs, pairs, load_terms) + tuple(field.terms(model, s) for field in p.fields)
    q_force = sum(t.Q for t in terms)
    energy = sum(t.energy for t in terms)
    if p.rate_force is not None:  # constant generalized forces: potential -Q.q
        q_force = q_force + p.rate_force
        energy = energy - np.einsum("bk,bk->b", p.rate_force, q)
    stiffness = sum(t.stiffness for t in terms)
    magnitude = sum(np.abs(t.Q) for t in terms)
    t_map = np.stack([coupling_map(model, qi)[:, p.free] for qi in q]) if model.couplings else None
    reduced_q = _reduce_vector(q_force, t_map, p.free)
    if len(p.rows):
        g = closure_residual(model, s)[:, p.rows]
        jac = closure_jacobian(model, s)[:, p.rows]
        g_u = _reduce_columns(jac, t_map, p.free)
        if multipliers is None:
            multipliers = _least_squares_multipliers(g_u, reduced_q)
        full_multipliers = np.zeros((batch, 6 * len(model.closures)))
        full_multipliers[:, p.rows] = multipliers
        constraint_force = np.einsum("bmk,bm->bk", jac, multipliers)
        stiffness = stiffness + gen.closure_force_stiffness(model, s, full_multipliers)
        magnitude = magnitude + np.abs(constraint_force)
    else:
        g = np.zeros((batch, 0))
        multipliers = np.zeros((batch, 0))
        constraint_force = np.zeros_like(q_force)
        g_u = np.zeros((batch, 0, len(p.free)))
    residual = reduced_q + _reduce_vector(constraint_force, t_map, p.free)
    hessian = -_reduce_columns(_reduce_columns(stiffness, t_map, p.free).swapaxes(1, 2), t_map, p.free).swapaxes(1, 2)
    # the size of the forces in play: the largest generalized force of any term or, where the forces themselves
    # vanish (a pendulum hanging straight down), the stiffness times a small displacement (1 mrad or 1 mm), and
    # never below the model's own scale (its weight times its size, see _Problem.force_floor)
    force_scale = np.maximum.reduce([
        np.max(np.abs(_reduce_vector(magnitude, None if t_map is None else np.abs(t_map), p.free)), axis=1, initial=0.0),
        1e-3 * np.max(np.abs(hessian), axis=(1, 2), initial=0.0),
        np.full(batch, p.force_floor),
    ])
    evaluation = _Evaluation(residual, g, g_u, hessian, energy, force_scale,
                             all(t.conservative for t in terms), reduced_q, multipliers)
    if p.options.finite_difference_stiffness:
        evaluation.hessian = _finite_difference_hessian(p, q, multipliers, scale)
    return evaluation


def _finite_difference_hessian(p: _Problem, q: np.ndarray, multipliers: np.ndarray,
                               scale: float | np.ndarray) -> np.ndarray:
    """-d(residual)/du by central differences (multipliers fixed), step 1e-6 per coordinate (rad or m)."""
    analytic = replace(p, options=replace(p.options, finite_difference_stiffness=False))
    step = 1e-6
    columns = []
    for i in p.free:
        plus, minus = q.copy(), q.copy()
        plus[:, i] += step
        minus[:, i] -= step
        r_plus = _evaluate(analytic, p.model.apply_couplings(plus), multipliers, scale).residual
        r_minus = _evaluate(analytic, p.model.apply_couplings(minus), multipliers, scale).residual
        columns.append(-(r_plus - r_minus) / (2 * step))
    return np.stack(columns, axis=2)


def _reduce_vector(x: np.ndarray, t_map: np.ndarray | None, free: np.ndarray) -> np.ndarray:
    """T^T x for x (B, nq): the free components, or through the coupling map when there is one."""
    if t_map is not None:
        return np.einsum("bki,bk->bi", t_map, x)
    return x if len(free) == x.shape[1] else x[:, free]


def _reduce_columns(a: np.ndarray, t_map: np.ndarray | None, free: np.ndarray) -> np.ndarray:
    """A T for A (B, r, nq)."""
    if t_map is not None:
        return a @ t_map
    return a if len(free) == a.shape[2] else a[:, :, free]  # free is sorted and unique: all of them is the identity


def _null_space(g_u: np.ndarray, nf: int) -> np.ndarray:
    """Orthonormal null-space basis (B, nf, nf - m) of full-row-rank G_u (B, m, nf)."""
    m = g_u.shape[1]
    if m == 0:
        return np.broadcast_to(np.eye(nf), (g_u.shape[0], nf, nf))
    _, _, vt = np.linalg.svd(g_u)
    return np.swapaxes(vt[:, m:, :], 1, 2)


def _reduced_stiffness(e: _Evaluation, nf: int) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric part of the stiffness on the constraint null space (B, r, r), and the basis (B, nf, r)."""
    z = _null_space(e.closure_jacobian, nf)
    sym = 0.5 * (e.hessian + np.swapaxes(e.hessian, 1, 2))
    if e.closure_jacobian.shape[1] == 0:
        return sym, z
    return np.swapaxes(z, 1, 2) @ sym @ z, z


def _lowest_eigenvalue(reduced: np.ndarray) -> np.ndarray:
    """Smallest eigenvalue per case, +inf where a Cholesky factorization shows it is positive definite."""
    if reduced.shape[1] == 0:
        return np.full(reduced.shape[0], np.inf)
    lowest = np.full(reduced.shape[0], np.inf)
    try:
        np.linalg.cholesky(reduced)
        return lowest
    except np.linalg.LinAlgError:
        pass
    failing = []
    for b, matrix in enumerate(reduced):
        try:
            np.linalg.cholesky(matrix)
        except np.linalg.LinAlgError:
            failing.append(b)
    lowest[failing] = np.linalg.eigvalsh(reduced[failing])[:, 0]
    return lowest


def _stiffness_floor(e: _Evaluation) -> np.ndarray:
    """Stiffness eigenvalues below this (B,) in magnitude count as zero: neutral directions.

    Relative to the model's scale (force_scale, N m) and to the largest stiffness entry."""
    return 1e-9 * np.maximum(e.force_scale, np.max(np.abs(e.hessian), axis=(1, 2), initial=0.0))


def _converged(p: _Problem, e: _Evaluation) -> np.ndarray:
    force_ok = np.max(np.abs(e.residual), axis=1, initial=0.0) <= p.options.force_tolerance * e.force_scale
    closure_ok = np.max(np.abs(e.closure), axis=1, initial=0.0) <= p.options.closure_tolerance
    return force_ok & closure_ok


def _residual_norm(e: _Evaluation) -> np.ndarray:
    return np.sqrt(np.sum(e.residual**2, axis=1) / e.force_scale**2 + np.sum(e.closure**2, axis=1))


def _merit(e: _Evaluation) -> np.ndarray:
    """What the line search lowers: the potential energy on the closed-loop manifold, or the residual norm
    when the forces have no potential (following loads, saturated friction)."""
    return e.energy if e.conservative else _residual_norm(e)


def _project(p: _Problem, q: np.ndarray,
             max_correction: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, State | None]:
    """Close the loops from q (B, nq) by moving the free coordinates: Gauss-Newton with minimum-norm steps.

    The projection onto g(q) = 0 that keeps every trial point of the line search on the
    closed-loop manifold. Returns the projected q and whether each case closed to the
    closure tolerance (all six equations of every closure, redundant ones included) with a
    correction no larger than ``max_correction`` (B,) (rad or m, largest coordinate change):
    a trial step whose projection lands far from it may have jumped to another assembly branch.
    Also returns the kinematic state at the projected q (None without loops).
    """
    model = p.model
    start = q
    q = q.copy()
    if not model.closures:
        return q, np.ones(q.shape[0], dtype=bool), None
    target = 1e-3 * p.options.closure_tolerance
    previous = np.full(q.shape[0], np.inf)
    for _ in range(30):
        s = state(model, q)
        g_full = closure_residual(model, s)
        norm = np.max(np.abs(g_full), axis=1)
        working = (norm > target) & (norm < 0.5 * previous)
        if not np.any(working):
            break
        previous = np.where(working, norm, previous)
        cases = np.flatnonzero(working)
        jac = closure_jacobian(model, s)[cases][:, p.rows]
        t_map = np.stack([coupling_map(model, qi)[:, p.free] for qi in q[cases]]) if model.couplings else None
        g_u = _reduce_columns(jac, t_map, p.free)
        g = g_full[cases][:, p.rows]
        gram = g_u @ np.swapaxes(g_u, 1, 2)
        try:
            y = np.linalg.solve(gram, g[..., None])[..., 0]
        except np.linalg.LinAlgError:
            y = np.stack([np.linalg.lstsq(gm, r, rcond=1e-12)[0] for gm, r in zip(gram, g)])
        step = -np.einsum("bmk,bm->bk", g_u, y)
        moved = q[cases]
        moved[:, p.free] += step
        q[cases] = model.apply_couplings(moved)
    else:  # out of iterations: measure where the last step left the loops
        s = state(model, q)
        norm = np.max(np.abs(closure_residual(model, s)), axis=1)
    closed = np.isfinite(norm) & (norm <= p.options.closure_tolerance)
    if max_correction is not None:
        closed &= np.max(np.abs(q - start), axis=1, initial=0.0) <= max_correction
    return q, closed, s


def _escape_direction(p: _Problem, e: _Evaluation, q: np.ndarray, anchor: np.ndarray) -> np.ndarray:
    """Unit direction (B, nf) of most negative curvature on the closed-loop motions, signed toward ``anchor``
    (the start configuration), so an unstable equilibrium is left for the well the start lies in."""
    reduced, z = _reduced_stiffness(e, len(p.free))
    _, vectors = np.linalg.eigh(reduced)
    direction = np.einsum("bij,bj->bi", z, vectors[:, :, 0])
    toward = np.einsum("bi,bi->b", direction, anchor[:, p.free] - q[:, p.free])
    return np.where((toward < 0.0)[:, None], -direction, direction)


def _newton(p: _Problem, q: np.ndarray, scale: float | np.ndarray, active: np.ndarray,
            anchor: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Newton iterations on the cases in ``active``, every iterate on the closed-loop manifold.

    Returns q, multipliers, converged, iterations and ``runaway`` (B, nf): the free translations
    that ran more than :data:`RUNAWAY_SIZES` machine sizes from ``anchor`` while the energy kept
    falling (no equilibrium within reach; such cases stop). Each iteration works only on the cases
    still iterating, so one slow case does not make the others pay for its evaluations.
    ``anchor`` (B, nq), default the start: the configuration whose well the solve should end in.
    Where the stiffness is not positive definite, steps are capped; a capped step accepted whole
    lets the next one be four times longer (a partly accepted one halves the growth), so a body
    that falls freely reaches the runaway distance in a few iterations instead of creeping.
    """
    model, free, nf = p.model, p.free, len(p.free)
    batch = q.shape[0]
    anchor = q.copy() if anchor is None else anchor
    q, closed, s = _project(p, q)
    iterations = np.zeros(batch, dtype=int)
    converged = np.zeros(batch, dtype=bool)
    active = active & closed
    escapes = np.zeros(batch, dtype=int)
    reach = np.ones(batch)
    translation = np.asarray(model.node_kind[model.coordinate_node[free]] == PRISMATIC)
    runaway = np.zeros((batch, nf), dtype=bool)
    e = _evaluate(p, q, None, scale, s)
    for _ in range(p.options.max_iterations):
        done = _converged(p, e)
        if p.options.seek_stable and np.any(done & active & ~converged):
            lowest = _lowest_eigenvalue(_reduced_stiffness(e, nf)[0])
            unstable = done & active & ~converged & (lowest < -_stiffness_floor(e)) & (escapes < 3)
            if np.any(unstable):
                # leave the unstable equilibrium along its direction of negative curvature, toward the start
                direction = _escape_direction(p, e, q, anchor)
                trial = q.copy()
                trial[np.ix_(unstable, free)] += 0.05 * direction[unstable]
                trial, ok, _ = _project(p, model.apply_couplings(trial))
                unstable &= ok
                q[unstable] = trial[unstable]
                escapes += unstable
                e = _evaluate(p, q, None, scale)
                done = _converged(p, e)
        converged |= done & active
        working = np.flatnonzero(active & ~converged)
        if not len(working):
            break
        iterations[working] += 1
        sub_scale = np.asarray(scale)[working] if np.ndim(scale) else scale
        q_w, e_w, grown = _newton_step(_subset(p, working), q[working], _take(e, working), sub_scale, reach[working])
        q[working] = q_w
        e = _put(e, working, e_w)
        reach[working] = np.where(grown, 4.0 * reach[working], np.maximum(1.0, 0.5 * reach[working]))
        travel = np.abs(q[:, free] - anchor[:, free]) * translation
        runaway = travel > RUNAWAY_SIZES * max(p.size, 1.0)
        active &= ~np.any(runaway, axis=1)
    converged |= _converged(p, e) & active
    return q, e.multipliers, converged, iterations, runaway


def _newton_step(p: _Problem, q: np.ndarray, e: _Evaluation, scale: float | np.ndarray,
                 reach: np.ndarray) -> tuple[np.ndarray, _Evaluation, np.ndarray]:
    """One damped Newton step for every case given, on the closed-loop manifold.

    Direction: the Newton step in the motions the loops allow (null space Z of G_u), with
    the reduced stiffness Z^T K Z shifted to be positive definite where it is not. Length: a
    backtracking line search whose every trial point is projected back onto g(q) = 0 before
    the energy is compared, so the search is a descent of the potential on the manifold.
    Steps taken with a shifted stiffness are capped at ``max_shifted_step`` in rotation and ``reach`` (B,)
    times that in translation;
    returns the new q, its evaluation and where such a capped step was accepted whole.
    """
    model, free, nf = p.model, p.free, len(p.free)
    batch = q.shape[0]
    z = _null_space(e.closure_jacobian, nf)
    zt = np.swapaxes(z, 1, 2)
    reduced = zt @ e.hessian @ z
    force = np.einsum("bji,bj->bi", z, e.residual)
    lowest = _lowest_eigenvalue(0.5 * (reduced + np.swapaxes(reduced, 1, 2)))
    level = np.max(np.abs(reduced), axis=(1, 2), initial=0.0) + 1e-12 * e.force_scale
    # smallest shift of the form 1e-3 |K| 2^k that makes the reduced stiffness positive definite
    base = 1e-3 * level
    doublings = np.floor(np.log2(np.maximum(-lowest / base, 0.5))) + 1.0
    shift = np.where(lowest < 1e-8 * level, base * 2.0 ** np.maximum(doublings, 0.0), 0.0)
    r = reduced.shape[1]
    system = reduced + shift[:, None, None] * np.eye(r)
    try:
        y = np.linalg.solve(system, force[..., None])[..., 0]
    except np.linalg.LinAlgError:
        y = np.stack([np.linalg.lstsq(k, f, rcond=None)[0] for k, f in zip(system, force)])
    du = np.einsum("bij,bj->bi", z, y)
    # caps: rotations to max_shifted_step (rad) where shifted and a quarter turn elsewhere (a weak well is not
    # crossed in one step), translations to reach times max_shifted_step (m) where shifted
    translation = np.asarray(model.node_kind[model.coordinate_node[free]] == PRISMATIC)
    largest_turn = np.max(np.abs(du) * ~translation, axis=1, initial=0.0)
    largest_move = np.max(np.abs(du) * translation, axis=1, initial=0.0)
    turn_limit = np.where(shift > 0.0, p.options.max_shifted_step, min(p.options.max_step, np.pi / 2))
    move_limit = np.where(shift > 0.0, reach * p.options.max_shifted_step, p.options.max_step)
    cap = np.minimum(np.where(largest_turn > turn_limit, turn_limit / np.maximum(largest_turn, 1e-300), 1.0),
                     np.where(largest_move > move_limit, move_limit / np.maximum(largest_move, 1e-300), 1.0))
    du = du * cap[:, None]
    phi0 = _merit(e)
    slope = -np.einsum("bi,bi->b", e.q_force_reduced, du) if e.conservative else -phi0
    # where the predicted change of the merit is lost in its round-off, judge by the residual instead
    lost = np.abs(slope) < 1e-12 * (np.abs(phi0) + 1.0)
    norm0 = _residual_norm(e)
    alpha = np.ones(batch)
    searching = np.ones(batch, dtype=bool)
    q_new, e_new = q.copy(), e
    for _ in range(40):
        trial_q = q.copy()
        trial_q[:, free] += alpha[:, None] * du
        # the correction back onto the loops is second order in the step: one as large as half the step is a jump
        trial_q, closed, s_trial = _project(p, model.apply_couplings(trial_q),
                                            0.5 * alpha * np.max(np.abs(du), axis=1, initial=0.0) + 1e-6)
        e_trial = _evaluate(p, trial_q, None, scale, s_trial)
        accept = _merit(e_trial) <= phi0 + 1e-4 * alpha * np.minimum(slope, 0.0)
        accept |= lost & (shift == 0.0) & (_residual_norm(e_trial) < (1.0 - 1e-4 * alpha) * norm0)
        accept &= searching & closed
        q_new[accept] = trial_q[accept]
        e_new = _merge(e_new, e_trial, accept)
        searching &= ~accept
        if not np.any(searching) or np.all(alpha[searching] < 1e-10):
            break
        alpha = np.where(searching, 0.5 * alpha, alpha)
    whole = (alpha == 1.0) & ~searching
    return q_new, e_new, whole & (shift > 0.0) & (cap < 1.0)


_FIELDS = ("residual", "closure", "closure_jacobian", "hessian", "energy", "force_scale", "q_force_reduced",
           "multipliers")


def _take(e: _Evaluation, cases: np.ndarray) -> _Evaluation:
    """The evaluation of some cases."""
    return _Evaluation(**{name: getattr(e, name)[cases] for name in _FIELDS}, conservative=e.conservative)


def _put(e: _Evaluation, cases: np.ndarray, part: _Evaluation) -> _Evaluation:
    """``e`` with the evaluation of some cases replaced by ``part``."""
    for name in _FIELDS:
        getattr(e, name)[cases] = getattr(part, name)
    return e


def _merge(a: _Evaluation, b: _Evaluation, take_b: np.ndarray) -> _Evaluation:
    """Per-case choice between two evaluations."""
    def pick(x, y):
        mask = take_b.reshape((-1,) + (1,) * (np.ndim(x) - 1))
        return np.where(mask, y, x)

    return _Evaluation(**{name: pick(getattr(a, name), getattr(b, name)) for name in _FIELDS},
                       conservative=a.conservative and b.conservative)


def independent_rows(model: Model, q: np.ndarray, free: np.ndarray, tolerance: float = 1e-9) -> np.ndarray:
    """Indices of closure equations independent w.r.t. the free coordinates (pivoted QR of G^T)."""
    if not model.closures:
        return np.zeros(0, dtype=int)
    s = state(model, q[None])
    g_u = closure_jacobian(model, s)[0] @ coupling_map(model, q)[:, free]
    if g_u.shape[1] == 0:
        return np.zeros(0, dtype=int)
    _, r, pivots = scipy.linalg.qr(g_u.T, pivoting=True, mode="economic")
    diagonal = np.abs(np.diag(r))
    rank = int(np.sum(diagonal > tolerance * max(diagonal.max(initial=0.0), 1.0)))
    return np.sort(pivots[:rank])


def solve_batch(model: Model, q_start: np.ndarray, free: np.ndarray, gravity: np.ndarray,
                loads: list[gen.AppliedLoad] = (), rates: np.ndarray | None = None,
                options: SolverOptions = SolverOptions(), rows: np.ndarray | None = None,
                fields: tuple[gen.ForceField, ...] = (), classify: bool = True) -> BatchResult:
    """Equilibria of B independent cases sharing the model, the free coordinates and the closure rows.

    ``q_start`` (B, nq) holds the prescribed values and the starting guess, whose loops must close
    (the solve starts by projecting onto them); each case ends in the well its start lies in.
    ``gravity`` (B, 3); loads carry (B, 3) force/torque arrays; ``fields`` are extra force fields
    (supports such as ground contacts), the same for every case. Cases in which some coordinate
    is held by nothing against the load are reported at once (``unheld``) without iterating;
    cases whose full load fails are re-solved with load stepping. ``classify`` False skips the
    stability verdict (every case reads 'stable'), for reference solves that need none.
    """
    q_start = np.atleast_2d(np.asarray(q_start, float))
    batch = q_start.shape[0]
    free = np.asarray(free, dtype=int)
    gravity = np.broadcast_to(np.asarray(gravity, float), (batch, 3))
    if rows is None:
        rows = independent_rows(model, q_start[0], free)
    rate_force = gen.rate_forces(model, rates) if rates is not None else None
    size = model_size(model, q_start[0])
    p = _Problem(model, free, rows, gravity, list(loads), rate_force, options, tuple(fields),
                 _force_floor(model, size, gravity, list(loads)), size)
    q, closed, s = _project(p, q_start)
    e = _evaluate(p, q, None, 1.0, s)
    unheld = _unheld(p, q, e) & closed[:, None]
    trying = closed & ~np.any(unheld, axis=1)
    first_try = replace(p, options=replace(options, max_iterations=min(options.max_iterations,
                                                                      options.full_load_iterations)))
    converged, iterations, lam = np.zeros(batch, dtype=bool), np.zeros(batch, dtype=int), e.multipliers
    runaway = np.zeros_like(unheld)
    if np.any(trying):
        q, lam, converged, iterations, runaway = _newton(first_try, q, 1.0, trying)
        failed = np.flatnonzero(trying & ~converged & ~np.any(runaway, axis=1))
        if len(failed) and options.load_stepping:
            q_f, lam_f, ok_f, its_f = _load_stepping(_subset(p, failed), q_start[failed])
            q[failed], lam[failed], converged[failed] = q_f, lam_f, ok_f
            iterations[failed] += its_f
        e = _evaluate(p, q, lam, 1.0)
    stability, neutral = np.full(batch, "stable", dtype=object), [np.zeros((0, len(free)))] * batch
    judged = np.flatnonzero(converged) if classify else np.zeros(0, dtype=int)
    if len(judged):
        verdicts, directions = _stability(p, _take(e, judged))
        stability[judged] = verdicts
        for k, b in enumerate(judged):
            neutral[b] = directions[k]
    stability = stability.astype(str)
    full = np.zeros((batch, 6 * len(model.closures)))
    full[:, rows] = lam
    return BatchResult(q, full, converged, iterations, _residual_norm(e), stability, free, neutral,
                       [np.flatnonzero(row) for row in unheld], [np.flatnonzero(row) for row in runaway],
                       RUNAWAY_SIZES * max(size, 1.0))


def _force_floor(model: Model, size: float, gravity: np.ndarray, loads: list[gen.AppliedLoad]) -> float:
    """The model's own force scale (N m): 1e-3 of its weight and load forces times its size (m), plus the load
    torques. Forces below ``force_tolerance`` times this are round-off: a model whose forces all vanish
    (wheels with their centres of mass on their axles) has converged, not failed."""
    size = max(size, 1e-3)
    weight = model.total_mass * float(np.max(np.linalg.norm(gravity, axis=1), initial=0.0))
    forces = sum(float(np.max(np.linalg.norm(l.force, axis=1), initial=0.0)) for l in loads)
    torques = sum(float(np.max(np.linalg.norm(l.torque, axis=1), initial=0.0)) for l in loads)
    return max(1e-3 * ((weight + forces) * size + torques), 1e-9)


_PROBE_DISTANCES = (1.0, 1000.0)  # in model sizes
RUNAWAY_SIZES = 100.0  # a free translation this many machine sizes from its start has no equilibrium to reach


def _unheld(p: _Problem, q: np.ndarray, e: _Evaluation) -> np.ndarray:
    """(B, nf) free coordinates that nothing holds against the load: no equilibrium exists.

    A candidate has a generalized force beyond the tolerance and no stiffness at all
    (its row and column of the stiffness and its closure-Jacobian column vanish), so its
    energy falls linearly. It is confirmed by probing: every candidate moved with its force
    by 1 and 1000 model sizes (a slider running to its end stop or a body falling
    onto a contact would feel a change) and its force stays the same to 1e-6.
    """
    h = e.hessian
    column = np.maximum(np.max(np.abs(h), axis=1, initial=0.0), np.max(np.abs(h), axis=2, initial=0.0))
    if e.closure_jacobian.shape[1]:
        column = np.maximum(column, np.max(np.abs(e.closure_jacobian), axis=1))
    scale = np.maximum(np.max(np.abs(h), axis=(1, 2), initial=0.0), e.force_scale)
    force = e.q_force_reduced
    pushed = np.abs(force) > p.options.force_tolerance * e.force_scale[:, None]
    candidates = (column <= 1e-12 * scale[:, None]) & pushed
    cases = np.flatnonzero(np.any(candidates, axis=1))
    if not len(cases):
        return candidates
    size = max(p.size, 1.0)
    sub = _subset(p, cases)
    direction = np.where(candidates[cases], np.sign(force[cases]), 0.0)
    for distance in _PROBE_DISTANCES:
        trial = q[cases].copy()
        trial[:, p.free] += distance * size * direction
        moved = _evaluate(sub, p.model.apply_couplings(trial), None, 1.0).q_force_reduced
        candidates[cases] &= np.abs(moved - force[cases]) <= 1e-6 * np.abs(force[cases])
    return candidates


def _stability(p: _Problem, e: _Evaluation) -> tuple[np.ndarray, list[np.ndarray]]:
    """Per case 'stable', 'neutral' or 'unstable' from the stiffness on the closed-loop motions, and the
    neutral directions (k, nf) in free coordinates (unit vectors; empty unless neutral).

    Stable: positive definite beyond the floor (a Cholesky factorization of K - floor I proves it);
    unstable: an eigenvalue below -floor; neutral otherwise (zero-stiffness directions only)."""
    reduced, z = _reduced_stiffness(e, len(p.free))
    batch, r = reduced.shape[0], reduced.shape[1]
    floor = _stiffness_floor(e)
    stability = np.full(batch, "stable", dtype=object)
    neutral = [np.zeros((0, len(p.free))) for _ in range(batch)]
    if r == 0:
        return stability, neutral
    for b in range(batch):
        try:
            np.linalg.cholesky(reduced[b] - floor[b] * np.eye(r))
            continue
        except np.linalg.LinAlgError:
            pass
        values, vectors = np.linalg.eigh(reduced[b])
        if values[0] < -floor[b]:
            stability[b] = "unstable"
        else:
            stability[b] = "neutral"
            neutral[b] = (z[b] @ vectors[:, values <= floor[b]]).T
    return stability.astype(str), neutral


def _subset(p: _Problem, cases: np.ndarray) -> _Problem:
    """The problem restricted to some cases of the batch."""
    loads = [gen.AppliedLoad(l.frame, l.force[cases], l.torque[cases], l.follow) for l in p.loads]
    rate_force = None if p.rate_force is None else p.rate_force[cases]
    return replace(p, gravity=p.gravity[cases], loads=loads, rate_force=rate_force)


def _load_stepping(p: _Problem, q_start: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Continuation in the load factor from 0 to 1, all cases at once, each with its own increment
    (doubled after a success, halved after a failure). Returns q, multipliers, converged, iterations."""
    batch = q_start.shape[0]
    everyone = np.ones(batch, dtype=bool)
    q, lam, ok, iterations, _ = _newton(p, q_start, 0.0, everyone)
    level = np.zeros(batch)
    increment = np.full(batch, 0.25)
    smallest = 0.25 / 2**p.options.max_load_halvings
    going = ok.copy()
    while np.any(going):
        target = np.minimum(1.0, level + increment)
        q_try, lam_try, done, its, _ = _newton(p, q, target, going, anchor=q_start)
        iterations += its
        good, bad = going & done, going & ~done
        q[good], lam[good], level[good] = q_try[good], lam_try[good], target[good]
        increment = np.where(good, 2.0 * increment, np.where(bad, 0.5 * increment, increment))
        going &= (level < 1.0) & (increment >= smallest)
    return q, lam, ok & (level >= 1.0), iterations


# ---------------------------------------------------------------------- user-facing single solve
def resolve_prescribed(model: Model, set_values: dict[str, float | list[float]], hold: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Starting coordinates (file values, overridden by ``set``) and the prescribed coordinate indices."""
    q = model.q0.copy()
    prescribed: list[int] = []
    problems = []
    for name, value in set_values.items():
        try:
            coordinates = model.coordinates_of(name)
        except InputError as error:
            problems.extend(Problem("--set", name, p.what, p.expected) for p in error.problems)
            continue
        values = np.atleast_1d(np.asarray(value, float))
        if len(values) != len(coordinates):
            problems.append(Problem("--set", name, f"{len(values)} values given", f"{len(coordinates)} for this joint"))
            continue
        q[list(coordinates)] = values
        prescribed.extend(coordinates)
    for name in hold:
        try:
            prescribed.extend(model.coordinates_of(name))
        except InputError as error:
            problems.extend(Problem("--hold", name, p.what, p.expected) for p in error.problems)
    if problems:
        raise InputError(problems)
    return q, np.array(sorted(set(prescribed)), dtype=int)


def free_coordinates(model: Model, prescribed: np.ndarray) -> np.ndarray:
    coupled = {c.target for c in model.couplings}
    fixed = set(prescribed.tolist())
    return np.array([i for i in range(model.nq) if i not in fixed and i not in coupled], dtype=int)


def applied(model: Model, loads: list[Load], batch: int = 1) -> list[gen.AppliedLoad]:
    """User loads as solver loads (frame index, (B, 3) arrays scaled by their factor)."""
    out = []
    for load in loads:
        if load.direction not in ("world", "body"):
            raise InputError([Problem("load", load.frame, f"direction {load.direction!r}", "'world' or 'body'")])
        frame = model.frame_index(load.frame)
        force = np.broadcast_to(np.asarray(load.force, float) * load.factor, (batch, 3)).copy()
        torque = np.broadcast_to(np.asarray(load.torque, float) * load.factor, (batch, 3)).copy()
        out.append(gen.AppliedLoad(frame, force, torque, load.direction == "body"))
    return out


def solve(model: Model, set: dict[str, float | list[float]] | None = None, hold: list[str] | tuple[str, ...] = (),
          loads: list[Load] | tuple[Load, ...] = (), gravity: np.ndarray | None = None,
          q_start: np.ndarray | None = None, rates: np.ndarray | None = None,
          options: SolverOptions = SolverOptions(), fields: tuple[gen.ForceField, ...] = ()):
    """Solve one static equilibrium and its unloaded reference; return a :class:`~shiftsim.results.Solution`.

    ``set`` prescribes joints at values, ``hold`` at their current values (file
    values, or ``q_start``). ``gravity`` overrides the model's (m/s^2).
    The reference configuration is the same problem with gravity, external
    loads and rate forces (dampers, friction) switched off; deflections are
    measured from it. ``fields`` are extra supports (ground contacts), active in both.
    """
    from .results import Solution

    q, prescribed = resolve_prescribed(model, set or {}, list(hold))
    start = model.q0 if q_start is None else np.asarray(q_start, float)
    if q_start is not None:  # start from q_start; the joints given with ``set`` take their values
        given = q.copy()
        q = start.copy()
        for name in set or {}:
            coordinates = list(model.coordinates_of(name))
            q[coordinates] = given[coordinates]
    free = free_coordinates(model, prescribed)
    gravity = model.gravity if gravity is None else np.asarray(gravity, float)
    q = assemble(model, q, held=prescribed, start=start).q
    rows = independent_rows(model, q, free)
    loads_applied = applied(model, list(loads))
    rate_array = None if rates is None else np.atleast_2d(rates)
    # both solves start from the same assembled pose, so each ends in the well that pose lies in
    loaded = solve_batch(model, q[None], free, gravity[None], loads_applied, rate_array, options, rows, fields)
    if len(loaded.unheld[0]) or len(loaded.runaway[0]):  # no equilibrium: nothing to measure deflections from
        reference = loaded
    else:
        reference = solve_batch(model, q[None], free, np.zeros(3), [], None, options, rows, fields, classify=False)
    return Solution.build(model, loaded, reference, gravity, loads_applied, q, fields)


__all__ = ["BatchResult", "Load", "STABILITY", "SolverOptions", "model_size", "solve", "solve_batch"]
