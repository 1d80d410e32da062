"""Static equilibrium: Newton's method on the balance of generalized forces with loop closure.

Unknowns u are the coordinates neither prescribed nor coupled; prescribed
coordinates are inputs. The system solved is

    T^T (Q_gravity + Q_restraints + Q_external + G^T lambda) = 0,   g(q) = 0

with T = dq/du (couplings), G the closure Jacobian restricted to its
independent rows (chosen by pivoted QR at the assembled pose: redundant
equations, e.g. three per planar loop, never enter the matrix). Each Newton
step solves the KKT system with the analytic tangent stiffness. Where the
stiffness reduced to the constraint null space is not positive definite, it
is shifted until it is, so every step descends the potential energy; the
line search works on the energy plus an l1 penalty on g (on the residual
norm when loads are not conservative). A converged point that is unstable is
left along its direction of negative curvature and the solve continues, so
the solver settles on a stable equilibrium when one is reachable. When the
full load fails, loads are applied in steps from the unloaded state.

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
from .kinematics import assemble, closure_jacobian, closure_residual, coupling_map, state
from .model import Model


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
    and a check; one residual evaluation pair per free coordinate)."""

    max_iterations: int = 60  # per load step
    force_tolerance: float = 1e-10
    closure_tolerance: float = 1e-10
    max_load_halvings: int = 8
    full_load_iterations: int = 25
    max_step: float = np.inf
    max_shifted_step: float = 1.0
    seek_stable: bool = True
    finite_difference_stiffness: bool = False


@dataclass
class BatchResult:
    """Raw equilibria of a batch: coordinates, multipliers (6 per closure, zero on redundant rows), status."""

    q: np.ndarray
    multipliers: np.ndarray
    converged: np.ndarray
    iterations: np.ndarray
    residual: np.ndarray
    stable: np.ndarray
    free: np.ndarray


@dataclass
class _Problem:
    model: Model
    free: np.ndarray
    rows: np.ndarray
    gravity: np.ndarray  # (B, 3)
    loads: list[gen.AppliedLoad]
    rate_force: np.ndarray | None  # (B, nq)
    options: SolverOptions
    fields: tuple[gen.ForceField, ...] = ()


@dataclass
class _Evaluation:
    residual: np.ndarray  # (B, nf) reduced force residual
    closure: np.ndarray  # (B, m)
    closure_jacobian: np.ndarray  # (B, m, nf)
    hessian: np.ndarray  # (B, nf, nf) = -d residual / du
    energy: np.ndarray  # (B,)
    force_scale: np.ndarray  # (B,)
    conservative: bool
    q_force_reduced: np.ndarray  # (B, nf) without closure forces


def _evaluate(p: _Problem, q: np.ndarray, multipliers: np.ndarray, scale: float | np.ndarray) -> _Evaluation:
    model = p.model
    batch = q.shape[0]
    s = state(model, q)
    factor = np.broadcast_to(np.asarray(scale, float), (batch,))
    loads = [gen.AppliedLoad(l.frame, l.force * factor[:, None], l.torque * factor[:, None], l.follow) for l in p.loads]
    point_forces, load_terms = gen.applied_loads(model, s, loads)
    weight = gen.gravity_and_world_forces(model, s, p.gravity * factor[:, None], point_forces)
    springs = gen.joint_springs(model, q)
    pairs = gen.pair_springs(model, s)
    terms = (weight, springs, pairs, load_terms) + tuple(field.terms(model, s) for field in p.fields)
    q_force = sum(t.Q for t in terms)
    if p.rate_force is not None:
        q_force = q_force + p.rate_force
    stiffness = sum(t.stiffness for t in terms)
    magnitude = sum(np.abs(t.Q) for t in terms)
    t_map = np.stack([coupling_map(model, qi)[:, p.free] for qi in q]) if model.couplings else None
    if len(p.rows):
        g = closure_residual(model, s)[:, p.rows]
        full_multipliers = np.zeros((batch, 6 * len(model.closures)))
        full_multipliers[:, p.rows] = multipliers
        jac = closure_jacobian(model, s)[:, p.rows]
        constraint_force = np.einsum("bmk,bm->bk", jac, multipliers)
        stiffness = stiffness + gen.closure_force_stiffness(model, s, full_multipliers)
        magnitude = magnitude + np.abs(constraint_force)
        g_u = _reduce_columns(jac, t_map, p.free)
    else:
        g = np.zeros((batch, 0))
        constraint_force = np.zeros_like(q_force)
        g_u = np.zeros((batch, 0, len(p.free)))
    reduced_q = _reduce_vector(q_force, t_map, p.free)
    residual = reduced_q + _reduce_vector(constraint_force, t_map, p.free)
    hessian = -_reduce_columns(_reduce_columns(stiffness, t_map, p.free).swapaxes(1, 2), t_map, p.free).swapaxes(1, 2)
    # the size of the forces in play: the largest generalized force of any term or, where the forces themselves
    # vanish (a pendulum hanging straight down), the stiffness times a small displacement (1 mrad or 1 mm)
    force_scale = np.maximum.reduce([
        np.max(np.abs(_reduce_vector(magnitude, None if t_map is None else np.abs(t_map), p.free)), axis=1, initial=0.0),
        1e-3 * np.max(np.abs(hessian), axis=(1, 2), initial=0.0),
        np.full(batch, 1e-9),
    ])
    evaluation = _Evaluation(residual, g, g_u, hessian, sum(t.energy for t in terms), force_scale,
                             all(t.conservative for t in terms), reduced_q)
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


def _reduced_eigen(e: _Evaluation, nf: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Eigenvalues/vectors of the symmetric stiffness on the constraint null space, and the basis."""
    reduced, z = _reduced_stiffness(e, nf)
    if reduced.shape[1] == 0:
        return np.zeros((reduced.shape[0], 0)), np.zeros((reduced.shape[0], 0, 0)), z
    values, vectors = np.linalg.eigh(reduced)
    return values, vectors, z


def _converged(p: _Problem, e: _Evaluation) -> np.ndarray:
    force_ok = np.max(np.abs(e.residual), axis=1, initial=0.0) <= p.options.force_tolerance * e.force_scale
    closure_ok = np.max(np.abs(e.closure), axis=1, initial=0.0) <= p.options.closure_tolerance
    return force_ok & closure_ok


def _residual_norm(e: _Evaluation) -> np.ndarray:
    return np.sqrt(np.sum(e.residual**2, axis=1) / e.force_scale**2 + np.sum(e.closure**2, axis=1))


def _merit(e: _Evaluation, penalty: np.ndarray) -> np.ndarray:
    if e.conservative:
        return e.energy + penalty * np.sum(np.abs(e.closure), axis=1)
    return _residual_norm(e)


def _newton(p: _Problem, q: np.ndarray, multipliers: np.ndarray, scale: float | np.ndarray,
            active: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Newton iterations on the cases in ``active``; returns q, multipliers, converged, iterations.

    Each iteration works only on the cases still iterating, so one slow case does
    not make the others pay for its evaluations.
    """
    model, free, nf = p.model, p.free, len(p.free)
    batch = q.shape[0]
    q, multipliers = q.copy(), multipliers.copy()
    iterations = np.zeros(batch, dtype=int)
    converged = np.zeros(batch, dtype=bool)
    penalty = np.zeros(batch)
    escapes = np.zeros(batch, dtype=int)
    e = _evaluate(p, q, multipliers, scale)
    for _ in range(p.options.max_iterations):
        done = _converged(p, e)
        if p.options.seek_stable and np.any(done & active & ~converged):
            lowest = _lowest_eigenvalue(_reduced_stiffness(e, nf)[0])
            unstable = done & active & ~converged & (lowest < -1e-9 * e.force_scale) & (escapes < 3)
            if np.any(unstable):
                _, vectors, z = _reduced_eigen(e, nf)
                # leave the unstable equilibrium along its direction of negative curvature
                direction = np.einsum("bij,bj->bi", z, vectors[:, :, 0])
                q[np.ix_(unstable, free)] += 0.05 * direction[unstable]
                escapes += unstable
                q = model.apply_couplings(q)
                e = _evaluate(p, q, multipliers, scale)
                done = _converged(p, e)
        converged |= done & active
        working = np.flatnonzero(active & ~converged)
        if not len(working):
            break
        iterations[working] += 1
        sub_scale = np.asarray(scale)[working] if np.ndim(scale) else scale
        q_w, lam_w, e_w, penalty[working] = _newton_step(
            _subset(p, working), q[working], multipliers[working], _take(e, working), sub_scale, penalty[working])
        q[working], multipliers[working] = q_w, lam_w
        e = _put(e, working, e_w)
    converged |= _converged(p, e) & active
    return q, multipliers, converged, iterations


def _newton_step(p: _Problem, q: np.ndarray, multipliers: np.ndarray, e: _Evaluation, scale: float | np.ndarray,
                 penalty: np.ndarray) -> tuple[np.ndarray, np.ndarray, _Evaluation, np.ndarray]:
    """One damped Newton step for every case given: KKT direction with the stiffness shifted to be positive
    definite on the constraint null space, then a backtracking line search on the merit."""
    model, free, nf = p.model, p.free, len(p.free)
    batch, m = q.shape[0], len(p.rows)
    lowest = _lowest_eigenvalue(_reduced_stiffness(e, nf)[0])
    level = np.max(np.abs(e.hessian), axis=(1, 2), initial=0.0) + 1e-12
    # smallest shift of the form 1e-3 |H| 2^k that makes the reduced stiffness positive definite
    base = 1e-3 * level
    doublings = np.floor(np.log2(np.maximum(-lowest / base, 0.5))) + 1.0
    shift = np.where(lowest < 1e-8 * level, base * 2.0 ** np.maximum(doublings, 0.0), 0.0)
    kkt = np.zeros((batch, nf + m, nf + m))
    kkt[:, :nf, :nf] = e.hessian + shift[:, None, None] * np.eye(nf)
    kkt[:, :nf, nf:] = -np.swapaxes(e.closure_jacobian, 1, 2)
    kkt[:, nf:, :nf] = e.closure_jacobian
    rhs = np.concatenate([e.residual, -e.closure], axis=1)
    try:
        step = np.linalg.solve(kkt, rhs[..., None])[..., 0]
    except np.linalg.LinAlgError:
        step = np.stack([np.linalg.lstsq(k, r, rcond=None)[0] for k, r in zip(kkt, rhs)])
    du, dlam = step[:, :nf], step[:, nf:]
    largest = np.max(np.abs(du), axis=1, initial=0.0)
    limit = np.where(shift > 0.0, p.options.max_shifted_step, p.options.max_step)
    cap = np.where(largest > limit, limit / np.maximum(largest, 1e-300), 1.0)
    du, dlam = du * cap[:, None], dlam * cap[:, None]
    penalty = np.maximum(penalty, 2.0 * np.max(np.abs(multipliers + dlam), axis=1, initial=0.0))
    phi0 = _merit(e, penalty)
    slope = (-np.einsum("bi,bi->b", e.q_force_reduced, du) - penalty * np.sum(np.abs(e.closure), axis=1)
             if e.conservative else -phi0)
    # where the predicted change of the merit is lost in its round-off, judge by the residual instead
    lost = np.abs(slope) < 1e-12 * (np.abs(phi0) + 1.0)
    norm0 = _residual_norm(e)
    alpha = np.ones(batch)
    searching = np.ones(batch, dtype=bool)
    q_new, lam_new, e_new = q.copy(), multipliers.copy(), e
    for _ in range(40):
        trial_q = q.copy()
        trial_q[:, free] += alpha[:, None] * du
        trial_q = model.apply_couplings(trial_q)
        trial_lam = multipliers + alpha[:, None] * dlam
        e_trial = _evaluate(p, trial_q, trial_lam, scale)
        accept = _merit(e_trial, penalty) <= phi0 + 1e-4 * alpha * np.minimum(slope, 0.0)
        accept |= lost & (shift == 0.0) & (_residual_norm(e_trial) < (1.0 - 1e-4 * alpha) * norm0)
        accept &= searching
        q_new[accept], lam_new[accept] = trial_q[accept], trial_lam[accept]
        e_new = _merge(e_new, e_trial, accept)
        searching &= ~accept
        if not np.any(searching) or np.all(alpha[searching] < 1e-10):
            break
        alpha = np.where(searching, 0.5 * alpha, alpha)
    return q_new, lam_new, e_new, penalty


def _take(e: _Evaluation, cases: np.ndarray) -> _Evaluation:
    """The evaluation of some cases."""
    return _Evaluation(e.residual[cases], e.closure[cases], e.closure_jacobian[cases], e.hessian[cases],
                       e.energy[cases], e.force_scale[cases], e.conservative, e.q_force_reduced[cases])


def _put(e: _Evaluation, cases: np.ndarray, part: _Evaluation) -> _Evaluation:
    """``e`` with the evaluation of some cases replaced by ``part``."""
    for name in ("residual", "closure", "closure_jacobian", "hessian", "energy", "force_scale", "q_force_reduced"):
        getattr(e, name)[cases] = getattr(part, name)
    return e


def _merge(a: _Evaluation, b: _Evaluation, take_b: np.ndarray) -> _Evaluation:
    """Per-case choice between two evaluations."""
    def pick(x, y):
        mask = take_b.reshape((-1,) + (1,) * (np.ndim(x) - 1))
        return np.where(mask, y, x)

    return _Evaluation(pick(a.residual, b.residual), pick(a.closure, b.closure),
                       pick(a.closure_jacobian, b.closure_jacobian), pick(a.hessian, b.hessian),
                       pick(a.energy, b.energy), pick(a.force_scale, b.force_scale), a.conservative and b.conservative,
                       pick(a.q_force_reduced, b.q_force_reduced))


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
                fields: tuple[gen.ForceField, ...] = ()) -> BatchResult:
    """Equilibria of B independent cases sharing the model, the free coordinates and the closure rows.

    ``q_start`` (B, nq) holds the prescribed values and the starting guess; ``gravity`` (B, 3);
    loads carry (B, 3) force/torque arrays; ``fields`` are extra force fields (supports such as
    ground contacts), the same for every case. Cases whose full load fails are re-solved with
    load stepping.
    """
    q_start = np.atleast_2d(np.asarray(q_start, float))
    batch = q_start.shape[0]
    free = np.asarray(free, dtype=int)
    gravity = np.broadcast_to(np.asarray(gravity, float), (batch, 3))
    if rows is None:
        rows = independent_rows(model, q_start[0], free)
    rate_force = gen.rate_forces(model, rates) if rates is not None else None
    p = _Problem(model, free, rows, gravity, list(loads), rate_force, options, tuple(fields))
    lam0 = np.zeros((batch, len(rows)))
    first_try = replace(p, options=replace(options, max_iterations=min(options.max_iterations,
                                                                      options.full_load_iterations)))
    q, lam, converged, iterations = _newton(first_try, q_start, lam0, 1.0, np.ones(batch, dtype=bool))
    failed = np.flatnonzero(~converged)
    if len(failed):
        q_f, lam_f, ok_f, its_f = _load_stepping(_subset(p, failed), q_start[failed])
        q[failed], lam[failed], converged[failed] = q_f, lam_f, ok_f
        iterations[failed] += its_f
    e = _evaluate(p, q, lam, 1.0)
    stable = _lowest_eigenvalue(_reduced_stiffness(e, len(free))[0]) > 1e-9 * e.force_scale
    full = np.zeros((batch, 6 * len(model.closures)))
    full[:, rows] = lam
    return BatchResult(q, full, converged, iterations, _residual_norm(e), stable, free)


def _subset(p: _Problem, cases: np.ndarray) -> _Problem:
    """The problem restricted to some cases of the batch."""
    loads = [gen.AppliedLoad(l.frame, l.force[cases], l.torque[cases], l.follow) for l in p.loads]
    rate_force = None if p.rate_force is None else p.rate_force[cases]
    return _Problem(p.model, p.free, p.rows, p.gravity[cases], loads, rate_force, p.options, p.fields)


def _load_stepping(p: _Problem, q_start: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Continuation in the load factor from 0 to 1, all cases at once, each with its own increment
    (doubled after a success, halved after a failure). Returns q, multipliers, converged, iterations."""
    batch = q_start.shape[0]
    everyone = np.ones(batch, dtype=bool)
    q, lam, ok, iterations = _newton(p, q_start, np.zeros((batch, len(p.rows))), 0.0, everyone)
    level = np.zeros(batch)
    increment = np.full(batch, 0.25)
    smallest = 0.25 / 2**p.options.max_load_halvings
    going = ok.copy()
    while np.any(going):
        target = np.minimum(1.0, level + increment)
        q_try, lam_try, done, its = _newton(p, q, lam, target, going)
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
          options: SolverOptions = SolverOptions()):
    """Solve one static equilibrium and its unloaded reference; return a :class:`~shiftsim.results.Solution`.

    ``set`` prescribes joints at values, ``hold`` at their current values (file
    values, or ``q_start``). ``gravity`` overrides the model's (m/s^2).
    The reference configuration is the same problem with gravity, external
    loads and rate forces (dampers, friction) switched off; deflections are
    measured from it.
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
    reference = solve_batch(model, q[None], free, np.zeros(3), [], None, options, rows)
    loaded = solve_batch(model, reference.q if reference.converged[0] else q[None], free, gravity[None],
                         loads_applied, rate_array, options, rows)
    return Solution.build(model, loaded, reference, gravity, loads_applied)


__all__ = ["BatchResult", "Load", "SolverOptions", "solve", "solve_batch"]
