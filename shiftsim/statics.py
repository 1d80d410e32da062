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

import ctypes
from dataclasses import dataclass

import numpy as np
import scipy.linalg

from . import generalized as gen
from .core import library as core_library
from .core.layout import compiled
from .core.library import address
from .core.problem import Callbacks, CProblem
from .errors import InputError, Problem
from .kinematics import State, assemble, closure_jacobian, coupling_map, forward, model_size, state
from .model import PRISMATIC, Model

RUNAWAY_SIZES = 100.0  # a free translation this many machine sizes from its start has no equilibrium to reach


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


def _callbacks(model: Model, free: np.ndarray, fields: tuple[gen.ForceField, ...]) -> Callbacks:
    """The model's couplings and the extra force fields as functions the compiled core calls back."""
    def apply(q: np.ndarray) -> np.ndarray:
        return model.apply_couplings(q)

    def jacobian(q: np.ndarray) -> np.ndarray:
        return coupling_map(model, q)[:, free]

    def terms(q, rotation, position, omega, v):
        s = State(q[None], rotation[None], position[None], omega[None], v[None])
        parts = [field.terms(model, s) for field in fields]
        return (sum(t.Q[0] for t in parts), sum(t.stiffness[0] for t in parts), float(sum(t.energy[0] for t in parts)),
                all(t.conservative for t in parts))

    coupled = bool(model.couplings)
    return Callbacks(model.nq, len(free), model.n_nodes, apply if coupled else None, jacobian if coupled else None,
                     terms if fields else None)


def _problem(model: Model, free: np.ndarray, rows: np.ndarray, loads: list[gen.AppliedLoad], has_rates: bool,
             options: SolverOptions, callbacks: Callbacks) -> tuple[CProblem, list[np.ndarray]]:
    """The ``Problem`` struct and the arrays it points at (keep them alive while the core runs)."""
    arrays = [np.ascontiguousarray(free, dtype=np.int64), np.ascontiguousarray(rows, dtype=np.int64),
              (model.node_kind[model.coordinate_node[free]] == PRISMATIC).astype(np.int64),
              np.array([l.frame for l in loads], dtype=np.int64), np.array([l.follow for l in loads], dtype=np.int64)]
    struct = CProblem(
        nf=len(free), m=len(rows), n_loads=len(loads), free=address(arrays[0]), rows=address(arrays[1]),
        translation=address(arrays[2]), load_frame=address(arrays[3]), load_follow=address(arrays[4]),
        coupling_apply=callbacks.apply, coupling_jacobian=callbacks.jacobian, field_terms=callbacks.terms,
        has_rates=has_rates, max_iterations=options.max_iterations, full_load_iterations=options.full_load_iterations,
        max_load_halvings=options.max_load_halvings, force_tolerance=options.force_tolerance,
        closure_tolerance=options.closure_tolerance, max_step=options.max_step,
        max_shifted_step=options.max_shifted_step, runaway_sizes=RUNAWAY_SIZES, seek_stable=options.seek_stable,
        finite_difference=options.finite_difference_stiffness, load_stepping=options.load_stepping)
    return struct, arrays


def _cases(model: Model, q_start: np.ndarray, gravity: np.ndarray, loads: list[gen.AppliedLoad],
           rates: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per-case arrays for starts q_start (B, nq): gravity (B, 3), load forces and torques (B, L, 3), rate
    forces (B, nq), and the scales (B, 2): force floor (N m, :func:`_force_floor`) and machine size (m)."""
    batch = q_start.shape[0]
    gravity = np.ascontiguousarray(np.broadcast_to(np.asarray(gravity, float), (batch, 3)))
    force = np.zeros((batch, len(loads), 3))
    torque = np.zeros((batch, len(loads), 3))
    for i, load in enumerate(loads):
        force[:, i] = load.force
        torque[:, i] = load.torque
    rate_force = gen.rate_forces(model, np.atleast_2d(rates)) if rates is not None else np.zeros((1, model.nq))
    rate_force = np.ascontiguousarray(np.broadcast_to(rate_force, (batch, model.nq)))
    frames = forward(model, q_start, bodies=False).frames[:, :, :3, 3]
    sizes = np.sqrt(np.max(np.einsum("bfi,bfi->bf", frames, frames), axis=1, initial=0.0))
    scales = np.empty((batch, 2))
    scales[:, 1] = sizes
    scales[:, 0] = _force_floor(model, sizes, gravity, force, torque)
    return gravity, force, torque, rate_force, scales


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

    The cases run in compiled code (:mod:`shiftsim.core.newton`), spread over every core when there are
    several and the model calls no Python back (couplings, fields); each case is computed exactly as it
    would be alone.
    """
    q_start = np.ascontiguousarray(np.atleast_2d(np.asarray(q_start, float)))
    batch = q_start.shape[0]
    free = np.asarray(free, dtype=int)
    loads = list(loads)
    if rows is None:
        rows = independent_rows(model, q_start[0], free)
    gravity, force, torque, rate_force, scales = _cases(model, q_start, gravity, loads, rates)
    nf, m = len(free), len(rows)
    out_q, out_lam = np.empty((batch, model.nq)), np.empty((batch, m))
    flags, neutral = np.empty((batch, 5)), np.zeros((batch, nf, nf))
    unheld, runaway = np.zeros((batch, nf), np.uint8), np.zeros((batch, nf), np.uint8)
    callbacks = _callbacks(model, free, tuple(fields))
    problem, _arrays = _problem(model, free, rows, loads, rates is not None, options, callbacks)
    threads = 1 if callbacks.any or batch == 1 else core_library.threads()
    core_library.lib.shiftsim_solve(
        compiled(model).pointer, ctypes.addressof(problem), batch, address(gravity), address(force), address(torque),
        address(rate_force), address(scales), address(q_start), bool(classify), address(out_q), address(out_lam),
        address(flags), address(neutral), address(unheld), address(runaway), threads)
    callbacks.raise_error()
    full = np.zeros((batch, 6 * len(model.closures)))
    full[:, rows] = out_lam
    stability = np.array(STABILITY)[flags[:, 3].astype(int)]
    return BatchResult(out_q, full, flags[:, 0] > 0.5, flags[:, 1].astype(int), flags[:, 2], stability, free,
                       [neutral[b, : int(flags[b, 4])] for b in range(batch)],
                       [np.flatnonzero(row) for row in unheld], [np.flatnonzero(row) for row in runaway],
                       RUNAWAY_SIZES * max(float(scales[:, 1].max(initial=0.0)), 1.0))


@dataclass(frozen=True)
class Evaluation:
    """What the solver sees at one configuration (u: the free coordinates, m independent closure rows).

    ``residual`` (nf,) reduced force with closure forces; ``closure`` (m,); ``closure_jacobian`` (m, nf);
    ``hessian`` (nf, nf) = -d residual/du; ``energy`` J; ``force_scale`` N m; ``conservative``;
    ``q_force_reduced`` (nf,) without closure forces; ``multipliers`` (m,)."""

    residual: np.ndarray
    closure: np.ndarray
    closure_jacobian: np.ndarray
    hessian: np.ndarray
    energy: float
    force_scale: float
    conservative: bool
    q_force_reduced: np.ndarray
    multipliers: np.ndarray


def evaluate(model: Model, q: np.ndarray, free: np.ndarray, gravity: np.ndarray,
             loads: list[gen.AppliedLoad] = (), multipliers: np.ndarray | None = None,
             rows: np.ndarray | None = None, options: SolverOptions = SolverOptions(),
             fields: tuple[gen.ForceField, ...] = ()) -> Evaluation:
    """What the solver sees at one configuration q (nq,): reduced residual, closure terms, tangent stiffness
    (``hessian`` = -d residual/du, by central differences when ``options`` ask for them), energy, force scale.
    ``multipliers`` (m,) on the independent closure rows, default the least-squares ones. For diagnostics
    and tests; the same code as every solver iteration (``evaluate_case`` in core/src/newton.c)."""
    q = np.ascontiguousarray(q, dtype=float)
    free = np.asarray(free, dtype=int)
    loads = list(loads)
    if rows is None:
        rows = independent_rows(model, q, free)
    gravity, force, torque, rate_force, scales = _cases(model, q[None], gravity, loads, None)
    nf, m = len(free), len(rows)
    callbacks = _callbacks(model, free, tuple(fields))
    problem, _arrays = _problem(model, free, rows, loads, False, options, callbacks)
    case = _CCase(address(gravity), address(force), address(torque), address(rate_force), scales[0, 0], scales[0, 1])
    given = None if multipliers is None else np.ascontiguousarray(multipliers, dtype=float)
    out = dict(residual=np.zeros(nf), closure=np.zeros(m), closure_jacobian=np.zeros((m, nf)),
               hessian=np.zeros((nf, nf)), scalars=np.zeros(3), q_force_reduced=np.zeros(nf), multipliers=np.zeros(m))
    core_library.lib.evaluate_case(compiled(model).pointer, ctypes.addressof(problem), ctypes.addressof(case),
                                   address(q), address(given), *(address(x) for x in out.values()))
    callbacks.raise_error()
    energy, force_scale, conservative = out.pop("scalars")
    return Evaluation(energy=float(energy), force_scale=float(force_scale), conservative=bool(conservative), **out)


class _CCase(ctypes.Structure):
    """``Case`` of core/src/core.h."""

    _fields_ = [("gravity", ctypes.c_void_p), ("force", ctypes.c_void_p), ("torque", ctypes.c_void_p),
                ("rate_force", ctypes.c_void_p), ("force_floor", ctypes.c_double), ("size", ctypes.c_double)]


def _force_floor(model: Model, size: np.ndarray, gravity: np.ndarray, force: np.ndarray,
                 torque: np.ndarray) -> np.ndarray:
    """The model's own force scale (N m) per case: 1e-3 of its weight under ``gravity`` (B, 3) and its load
    forces (B, L, 3) times its size (B,) (m), plus the load torques (B, L, 3). Forces below ``force_tolerance``
    times this are round-off: a model whose forces all vanish (wheels with their centres of mass on their
    axles) has converged, not failed."""
    size = np.maximum(size, 1e-3)
    weight = model.total_mass * np.linalg.norm(gravity, axis=1)
    forces = np.linalg.norm(force, axis=2).sum(axis=1)
    torques = np.linalg.norm(torque, axis=2).sum(axis=1)
    return np.maximum(1e-3 * ((weight + forces) * size + torques), 1e-9)


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
