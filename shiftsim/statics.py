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

The iteration runs in the compiled core (``solve_case`` in core/src/newton.c, docs/core.md), one case at a
time, batches over threads: :func:`solve_batch` is the batched mode, :func:`solve` the single solve (its
loaded case; the unloaded reference is solved when deflections are first asked for). This module holds the
API: it validates, lays the problem out for the core, calls it and wraps the arrays.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import forces as gen
from .core import library as core_library
from .core import memory
from .core.layout import compiled
from .core.library import core
from .core import problem as core_tables
from .core.problem import problem as core_problem
from .errors import InputError, Problem
from .kinematics import (State, _assembly_problem, assemble, closure_jacobian, coupling_callbacks, coupling_map,
                         model_size, state)
from .model import PRISMATIC, Model
from .solve_memory import tree_structured

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
    load bracketed from above). ``memory_limit`` (bytes): a solve whose estimated memory
    (:mod:`shiftsim.core.memory`) is more is refused before it starts with
    :class:`~shiftsim.core.memory.SolveTooLarge` (a ``MemoryError``); None: what this process may still take
    (physical and available memory, the address-space limit), ``math.inf``: no limit. ``structured_from``: a model
    with at least this many free coordinates has its stiffness factorized in tree order, its loops through a
    bordered system, in time linear in its size for a fixed number of loops (docs/core.md, "Big models"), the same
    equilibrium as the dense factorization below."""

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
    memory_limit: float | None = None
    structured_from: int = memory.STRUCTURED_FROM

    def __post_init__(self) -> None:
        if not 0 <= self.max_load_halvings <= MAX_LOAD_HALVINGS:  # each halving doubles the load steps
            raise ValueError(f"max_load_halvings is {self.max_load_halvings}, expected 0 to {MAX_LOAD_HALVINGS}")


MAX_LOAD_HALVINGS = 30
"""Most halvings of a load step (a step of 2**-30 of the load is far below any tolerance)."""


@dataclass
class BatchResult:
    """Raw equilibria of a batch of B cases.

    ``q`` (B, nq); ``multipliers`` (B, 6 n_closures), zero on redundant rows; ``converged``,
    ``iterations``, ``residual`` (B,); ``stability`` (B,) one of :data:`STABILITY`;
    ``neutral`` per case the neutral directions (k, nf) as combinations of the free
    coordinates ``free``; ``unheld`` per case the indices into ``free`` of coordinates that
    nothing holds against the load (found before iterating: no equilibrium exists); ``runaway``
    per case those of free translations that ran :data:`RUNAWAY_SIZES` machine sizes away while
    the energy kept falling (no equilibrium within reach); ``size`` (B,) each case's machine size at its
    start (m).
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
    size: np.ndarray | None = None  # (B,) m: each case's machine size at its start (see kinematics.model_size)

    def take(self, case: int) -> BatchResult:
        """The result of one case (views, not copies)."""
        one = slice(case, case + 1)
        return BatchResult(self.q[one], self.multipliers[one], self.converged[one], self.iterations[one],
                           self.residual[one], self.stability[one], self.free, self.neutral[one], self.unheld[one],
                           self.runaway[one], self.runaway_distance, None if self.size is None else self.size[one])

    @property
    def stable(self) -> np.ndarray:
        """(B,) True where the equilibrium is stable (not neutral, not unstable)."""
        return self.stability == "stable"


SMALL_SOLVE_BYTES = 2**20  # a solve needing less is not checked against the memory left (the check reads /proc)
STABILITY = core_tables.VERDICTS
_VERDICTS = np.array(STABILITY)  # by the core's stability code
_CONVERGED, _ITERATIONS, _RESIDUAL, _STABILITY, _NEUTRAL_COUNT, _SIZE = (
    core_tables.RESULT_FLAGS.index(name) for name in ("converged", "iterations", "residual", "stability",
                                                      "neutral_count", "size"))  # columns of the core's flags


def _problem(model: Model, free: np.ndarray, rows: np.ndarray, loads: list[gen.AppliedLoad], has_rates: bool,
             options: SolverOptions, fields: tuple[gen.ForceField, ...]):
    """The compiled core's problem (a capsule), with the model's couplings as callbacks; fields with a
    ``core_field(n_nodes)`` (ground contacts and tyres) are evaluated by the core, the others called back.
    Kept on the model for reuse when no fields take part (fields change from call to call)."""
    frames = tuple(int(l.frame) for l in loads) if loads else ()
    follow = tuple(bool(l.follow) for l in loads) if loads else ()
    key = (free.tobytes(), np.asarray(rows, np.int64).tobytes(), frames, follow, has_rates, options)
    cache = model.cache.setdefault("core_problems", {})
    if not fields:
        capsule = cache.get(key)
        if capsule is not None:
            return capsule

    native = tuple(f.core_field(model.n_nodes) for f in fields if hasattr(f, "core_field"))
    called = tuple(f for f in fields if not hasattr(f, "core_field"))

    def terms(q, rotation, position, omega, v):  # fields change from call to call: never kept on the model
        s = State(q[None], rotation[None], position[None], omega[None], v[None])
        parts = [field.terms(model, s) for field in called]
        return (sum(t.Q[0] for t in parts), sum(t.stiffness[0] for t in parts), float(sum(t.energy[0] for t in parts)),
                all(t.conservative for t in parts))

    capsule = core_problem(
        compiled(model), model.nq, model.n_nodes, np.ascontiguousarray(free, dtype=np.int64),
        np.ascontiguousarray(rows, dtype=np.int64),
        (model.node_kind[model.coordinate_node[free]] == PRISMATIC).astype(np.int64),
        np.array(frames, dtype=np.int64), np.array(follow, dtype=np.int64), *coupling_callbacks(model, free),
        terms if called else None, has_rates, options, RUNAWAY_SIZES, native)
    if not fields:
        if len(cache) > 64:
            cache.clear()
        cache[key] = capsule
    return capsule


def _load_arrays(loads: list[gen.AppliedLoad], batch: int) -> tuple[np.ndarray, np.ndarray]:
    """Load forces and torques (B, L, 3)."""
    force = np.zeros((batch, len(loads), 3))
    torque = np.zeros((batch, len(loads), 3))
    for i, load in enumerate(loads):
        force[:, i] = load.force
        torque[:, i] = load.torque
    return force, torque


def _solve_cases(model: Model, q_start: np.ndarray, free: np.ndarray, rows: np.ndarray, gravity: np.ndarray,
                 loads: list[gen.AppliedLoad], force: np.ndarray, torque: np.ndarray, rate_force: np.ndarray | None,
                 options: SolverOptions, fields: tuple[gen.ForceField, ...], classify: np.ndarray,
                 threads: int = 1) -> BatchResult:
    """The compiled core on B cases: starts q_start (B, nq), gravity (B, 3), load forces and torques (B, L, 3) of
    ``loads``' frames, rate forces (B, nq) or None, ``classify`` (B,) int64 (0: skip the stability verdict), on
    ``threads`` threads (one when the model calls Python back: couplings, fields)."""
    batch, nf, m = q_start.shape[0], len(free), len(rows)
    threads = 1 if any(not hasattr(f, "core_field") for f in fields) or model.couplings else threads
    concurrent = max(min(threads, batch), 1)
    structured = (tree_structured(model, nf, options.structured_from) and not fields
                  and not options.finite_difference_stiffness
                  and not any(np.any(torque[:, i]) or (load.follow and np.any(force[:, i]))
                              for i, load in enumerate(loads)))
    need = (concurrent * memory.solve_bytes(model.nq, len(model.closures), structured)
            + 8 * batch * nf * (nf + 8))
    if need > SMALL_SOLVE_BYTES or options.memory_limit is not None:  # reading /proc costs more than a small solve
        memory.check_fits(need, f"a solve of {batch} case{'s' if batch > 1 else ''} ({model.nq} coordinates, "
                          f"{len(model.closures)} loops, {concurrent} at once)", options.memory_limit)
    problem = _problem(model, free, rows, loads, rate_force is not None, options, fields)
    rates = np.zeros((batch, model.nq)) if rate_force is None else np.ascontiguousarray(rate_force, dtype=float)
    out_q, out_lam = np.empty((batch, model.nq)), np.empty((batch, m))
    flags, neutral = np.empty((batch, len(core_tables.RESULT_FLAGS))), np.zeros((batch, nf, nf))
    unheld, runaway = np.zeros((batch, nf), np.uint8), np.zeros((batch, nf), np.uint8)
    core.solve(compiled(model), problem, gravity, force, torque, rates, q_start, classify, out_q, out_lam, flags,
               neutral, unheld, runaway, threads)
    full = np.zeros((batch, 6 * len(model.closures)))
    if m:
        full[:, rows] = out_lam
    counts, size = flags[:, _NEUTRAL_COUNT].astype(int), flags[:, _SIZE].copy()
    return BatchResult(out_q, full, flags[:, _CONVERGED] > 0.5, flags[:, _ITERATIONS].astype(int),
                       flags[:, _RESIDUAL].copy(), _VERDICTS[flags[:, _STABILITY].astype(int)], free,
                       [neutral[b, : counts[b]] for b in range(batch)], _indices(unheld), _indices(runaway),
                       RUNAWAY_SIZES * max(float(size.max(initial=0.0)), 1.0), size)


def _indices(marked: np.ndarray) -> list[np.ndarray]:
    """Per row of ``marked`` (B, k) the indices of its nonzero entries."""
    if not marked.any():
        return [_NONE] * len(marked)
    return [np.flatnonzero(row) for row in marked]


_NONE = np.zeros(0, dtype=int)
_NONE.flags.writeable = False


def independent_rows(model: Model, q: np.ndarray, free: np.ndarray, tolerance: float = 1e-9) -> np.ndarray:
    """Indices of closure equations independent w.r.t. the free coordinates (pivoted QR of G^T, compiled core)."""
    if not model.closures:
        return np.zeros(0, dtype=int)
    s = state(model, q[None])
    jac = closure_jacobian(model, s)[0]
    g_u = jac @ coupling_map(model, q)[:, free] if model.couplings else jac[:, free]  # T selects without couplings
    if g_u.shape[1] == 0:
        return np.zeros(0, dtype=int)
    order = np.empty(g_u.shape[0], dtype=np.int64)
    rank = core.pivoted_rank(np.ascontiguousarray(g_u.T), tolerance, order)
    return np.sort(order[:rank])


def solve_batch(model: Model, q_start: np.ndarray, free: np.ndarray, gravity: np.ndarray,
                loads: list[gen.AppliedLoad] = (), rates: np.ndarray | None = None,
                options: SolverOptions = SolverOptions(), rows: np.ndarray | None = None,
                fields: tuple[gen.ForceField, ...] = (), classify: bool = True,
                threads: int | None = None) -> BatchResult:
    """Equilibria of B independent cases sharing the model, the free coordinates and the closure rows.

    ``q_start`` (B, nq) holds the prescribed values and the starting guess, whose loops must close
    (the solve starts by projecting onto them); each case ends in the well its start lies in.
    ``gravity`` (B, 3); loads carry (B, 3) force/torque arrays; ``fields`` are extra force fields
    (supports such as ground contacts), the same for every case. Cases in which some coordinate
    is held by nothing against the load are reported at once (``unheld``) without iterating;
    cases whose full load fails are re-solved with load stepping. ``classify`` False skips the
    stability verdict (every case reads 'stable'), for reference solves that need none.

    The cases run in compiled code (``solve_case`` in core/src/newton.c) on ``threads`` threads (default:
    every core this process may use), one when the model calls Python back (couplings, fields); each case is
    computed exactly as it would be alone.

    Parameters
    ----------
    model : Model
        The compiled model.
    q_start : (B, nq) array
        Prescribed values and starting guesses, one row per case.
    free : (k,) int array
        The coordinates the solve moves (:func:`~shiftsim.statics.free_coordinates` of the prescribed ones).
    gravity : (3,) or (B, 3) array
        m/s^2, model frame.
    loads : sequence of AppliedLoad, optional
        Loads with (B, 3) force and torque arrays (N, N m).
    rates, options, rows, fields, classify, threads
        As described above.

    Returns
    -------
    BatchResult
        Per case: q (B, nq), multipliers, converged, iterations, residual, stability, unheld and runaway
        coordinates.

    Raises
    ------
    SolveError
        The compiled core could not run (out of memory); a case that does not converge does not raise.

    Examples
    --------
    >>> from shiftsim.statics import free_coordinates
    >>> model = shiftsim.load_model("models/shift/cantilever10.json")
    >>> q_start = np.tile(model.q0, (3, 1))
    >>> result = shiftsim.solve_batch(model, q_start, free_coordinates(model, np.array([], int)), model.gravity)
    >>> result.converged.tolist()
    [True, True, True]
    """
    q_start = np.ascontiguousarray(np.atleast_2d(np.asarray(q_start, float)))
    batch = q_start.shape[0]
    free = np.asarray(free, dtype=int)
    loads = list(loads)
    if rows is None:
        rows = independent_rows(model, q_start[0], free)
    gravity = np.ascontiguousarray(np.broadcast_to(np.asarray(gravity, float), (batch, 3)))
    force, torque = _load_arrays(loads, batch)
    rate_force = None
    if rates is not None:
        rate_force = np.broadcast_to(gen.rate_forces(model, np.atleast_2d(rates)), (batch, model.nq))
    return _solve_cases(model, q_start, free, rows, gravity, loads, force, torque, rate_force, options,
                        tuple(fields), np.full(batch, int(classify), dtype=np.int64),
                        core_library.threads() if threads is None else max(int(threads), 1))


@dataclass
class ChainResult:
    """Steps solved along continuation chains (:func:`solve_chain`), C steps in all.

    ``outcome`` (C,) one of :data:`CHAIN_OUTCOMES` per step; ``assembled`` (C, nq) each step's start (the previous
    equilibrium with the step's prescribed values, loops closed); ``iterations``, ``residual`` (C,) and ``stability``
    (C,) of the loaded solve. Meaningful only where ``outcome == "plain"``: ``q`` and ``q_reference`` (C, nq) the
    loaded and the unloaded equilibrium, ``multipliers`` (C, 6 n_closures) the solver's closure wrenches (zero on
    redundant rows), ``size`` (C,) m, and the joint loads at q with them (as
    :func:`~shiftsim.solution.joint_load_arrays`): ``wrench_world`` (C, J, 6) N and N m about each child-side joint
    frame's origin, world axes of the model; ``rotation`` (C, J, 3, 3) world <- child-side joint frame; ``effort``
    (C, nq) N or N m.
    """

    outcome: np.ndarray
    assembled: np.ndarray
    iterations: np.ndarray
    residual: np.ndarray
    stability: np.ndarray
    size: np.ndarray
    q: np.ndarray
    q_reference: np.ndarray
    multipliers: np.ndarray
    wrench_world: np.ndarray
    rotation: np.ndarray
    effort: np.ndarray

    @property
    def plain(self) -> np.ndarray:
        """(C,) True where the step was solved and its chain went on from it."""
        return self.outcome == "plain"


CHAIN_OUTCOMES = core_tables.CHAIN_OUTCOMES
_OUTCOMES = np.array(CHAIN_OUTCOMES)
ASSEMBLY_TOLERANCE, ASSEMBLY_ITERATIONS, HELD_STEP = 1e-10, 100, 0.1  # as kinematics.assemble's defaults
ROW_TOLERANCE = 1e-9  # as independent_rows'


def solve_chain(model: Model, q_first: np.ndarray, target: np.ndarray, prescribed: np.ndarray,
                chain_start: np.ndarray, gravity: np.ndarray, loads: list[gen.AppliedLoad] = (),
                rows: np.ndarray | None = None, options: SolverOptions = SolverOptions(),
                threads: int | None = None) -> ChainResult:
    """Continuation chains in compiled code (``solve_chain`` in core/src/chain.c): every step of a chain starts from
    the previous step's equilibrium (the chain's first from ``q_first``), exactly as :func:`solve` with ``q_start``
    set to it and the step's prescribed values does, and is solved loaded and unloaded (its reference).

    Each step: the previous equilibrium with the step's prescribed values, its loops closed as
    :func:`~shiftsim.kinematics.assemble` closes them with ``start`` (the held coordinates travelling in increments
    of at most 0.1 rad or m); the loaded equilibrium with its stability verdict and the reference (no gravity, no
    loads, no verdict) from that pose; the joint loads of the loaded equilibrium. A step that is not plain (see
    :data:`CHAIN_OUTCOMES`) ends its chain: the steps after it are not solved. Chains run on ``threads`` threads
    (default every core; one when the model calls Python back).

    Parameters
    ----------
    model : Model
        The compiled model.
    q_first : (K, nq) array
        Each chain's start: a closed configuration (an equilibrium, or the machine's start state).
    target : (C, nq) array
        Per step, the values of the ``prescribed`` coordinates (the other entries are not read), rad or m.
    prescribed : (h,) int array
        The prescribed coordinates (the same for every step).
    chain_start : (K + 1,) int array
        Chain k holds steps ``chain_start[k]`` to ``chain_start[k + 1] - 1``; 0 first, C last.
    gravity : (C, 3) array
        m/s^2, model frame.
    loads : sequence of AppliedLoad
        Loads with (C, 3) force and torque arrays (N, N m).
    rows : (m,) int array, optional
        The independent closure rows the solve uses (default: those at ``q_first[0]``); a step at whose assembled
        pose other rows are independent ends its chain (``rows_changed``), as :func:`solve` would choose those.
    options : SolverOptions, optional
        Newton settings.
    threads : int, optional
        Threads the chains run on.

    Returns
    -------
    ChainResult
        Per step its outcome and, where plain, both equilibria and the joint loads.
    """
    q_first = np.ascontiguousarray(np.atleast_2d(np.asarray(q_first, float)))
    target = np.ascontiguousarray(np.atleast_2d(np.asarray(target, float)))
    steps, nq, joints, closures = target.shape[0], model.nq, len(model.joints), 6 * len(model.closures)
    prescribed = np.ascontiguousarray(np.asarray(prescribed, dtype=np.int64))
    free = free_coordinates(model, prescribed)
    loads = list(loads)
    if rows is None:
        rows = independent_rows(model, q_first[0], free)
    rows = np.ascontiguousarray(np.asarray(rows, dtype=np.int64))
    gravity = np.ascontiguousarray(np.broadcast_to(np.asarray(gravity, float), (steps, 3)))
    force, torque = _load_arrays(loads, steps)
    threads = core_library.threads() if threads is None else max(int(threads), 1)
    concurrent = max(min(threads, len(q_first)), 1)
    need = concurrent * memory.solve_bytes(model.nq, len(model.closures), False) + 8 * steps * (6 * nq + 15 * joints
                                                                                                + closures + 8)
    if need > SMALL_SOLVE_BYTES or options.memory_limit is not None:
        memory.check_fits(need, f"a chain solve of {steps} steps ({model.nq} coordinates, {len(model.closures)} loops, "
                          f"{concurrent} at once)", options.memory_limit)
    problem = _problem(model, free, rows, loads, False, options, ())
    outcome, flags = np.empty(steps, np.int64), np.zeros((steps, len(core_tables.RESULT_FLAGS)))
    assembled, q, q_reference, effort = (np.zeros((steps, nq)) for _ in range(4))
    multipliers = np.zeros((steps, closures))
    wrench, rotation = np.zeros((steps, joints, 6)), np.zeros((steps, joints, 3, 3))
    core.solve_chain(compiled(model), problem, _assembly_problem(model, free), prescribed, HELD_STEP,
                     ASSEMBLY_TOLERANCE, ROW_TOLERANCE, ASSEMBLY_ITERATIONS,
                     np.ascontiguousarray(chain_start, dtype=np.int64), q_first, target, gravity, force, torque, outcome,
                     assembled, flags, q, q_reference, multipliers, wrench, rotation, effort, threads)
    return ChainResult(_OUTCOMES[outcome], assembled, flags[:, _ITERATIONS].astype(int), flags[:, _RESIDUAL].copy(),
                       _VERDICTS[flags[:, _STABILITY].astype(int)], flags[:, _SIZE].copy(), q, q_reference,
                       multipliers, wrench, rotation, effort)


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
    force, torque = _load_arrays(loads, 1)
    nf, m = len(free), len(rows)
    problem = _problem(model, free, rows, loads, False, options, tuple(fields))
    given = None if multipliers is None else np.ascontiguousarray(multipliers, dtype=float)
    out = dict(residual=np.zeros(nf), closure=np.zeros(m), closure_jacobian=np.zeros((m, nf)),
               hessian=np.zeros((nf, nf)), scalars=np.zeros(len(core_tables.EVALUATION_SCALARS)),
               q_force_reduced=np.zeros(nf), multipliers=np.zeros(m))
    core.evaluate(compiled(model), problem, np.asarray(gravity, float).reshape(3).copy(), force[0], torque[0], q,
                  given, *out.values())
    scalar = dict(zip(core_tables.EVALUATION_SCALARS, out.pop("scalars")))
    energy, force_scale, conservative = scalar["energy"], scalar["force_scale"], scalar["conservative"]
    return Evaluation(energy=float(energy), force_scale=float(force_scale), conservative=bool(conservative), **out)


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
    """The coordinates the solve moves (ascending): those neither ``prescribed`` nor coupled."""
    if not len(prescribed) and not model.couplings:
        return np.arange(model.nq)
    moved = np.ones(model.nq, dtype=bool)
    moved[np.asarray(prescribed, dtype=int)] = False
    if model.couplings:
        moved[[c.target for c in model.couplings]] = False
    return np.flatnonzero(moved)


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


_CLASSIFY, _NO_VERDICT = np.ones(1, dtype=np.int64), np.zeros(1, dtype=np.int64)  # one case's ``classify``


def solve(model: Model, set: dict[str, float | list[float]] | None = None, hold: list[str] | tuple[str, ...] = (),
          loads: list[Load] | tuple[Load, ...] = (), gravity: np.ndarray | None = None,
          q_start: np.ndarray | None = None, rates: np.ndarray | None = None,
          options: SolverOptions = SolverOptions(), fields: tuple[gen.ForceField, ...] = ()):
    """Solve one static equilibrium; return a :class:`~shiftsim.solution.Solution` (its unloaded reference is solved
    when deflections are first asked for: ``q_reference``, ``as_dict``, ``print``).

    ``set`` prescribes joints at values, ``hold`` at their current values (file
    values, or ``q_start``). ``gravity`` overrides the model's (m/s^2).
    The reference configuration is the same problem with gravity, external
    loads and rate forces (dampers, friction) switched off; deflections are
    measured from it. ``fields`` are extra supports (ground contacts), active in both.

    Parameters
    ----------
    model : Model
        The compiled model (:func:`load_model`).
    set : dict of str to float or list of float, optional
        Joint name -> value (rad or m; a list for a multi-coordinate joint), prescribed.
    hold : sequence of str, optional
        Joints held at their current value.
    loads : sequence of Load, optional
        External forces and torques on frames (N, N m).
    gravity : (3,) array, optional
        m/s^2, model frame; the model's own when None.
    q_start : (nq,) array, optional
        The starting configuration (default the model's file values).
    rates : (nq,) array, optional
        Coordinate rates for rate-dependent forces (dampers, friction).
    options : SolverOptions, optional
        Newton settings.
    fields : tuple of force fields, optional
        Extra supports such as ground contacts.

    Returns
    -------
    Solution
        Status (``converged``, ``failed``, ``no equilibrium``), q and its reference, joint loads; print it for a
        summary, ``as_dict()`` for every number.

    Raises
    ------
    InputError
        A joint name in ``set``/``hold`` or a load frame that the model does not have (the valid names are listed),
        or a prescribed value that cannot be assembled.

    Examples
    --------
    >>> model = shiftsim.load_model("models/shift/cantilever10.json")
    >>> solution = shiftsim.solve(model)
    >>> solution.status, round(float(solution.joint_loads["hinge1"].wrench_world[2]), 1)  # N: the weight
    ('converged', 196.2)
    """
    from .solution import Solution

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
    force, torque = _load_arrays(loads_applied, 1)
    rate_force = None if rates is None else gen.rate_forces(model, np.atleast_2d(rates))
    fields = tuple(fields)
    loaded = _solve_cases(model, q[None], free, rows, np.array(gravity, float).reshape(1, 3), loads_applied,
                          force, torque, rate_force, options, fields, _CLASSIFY)

    def reference() -> BatchResult:
        """The reference: no gravity, loads or rate forces, no verdict, from the same assembled pose (so it ends
        in the well that pose lies in); solved when deflections are first asked for."""
        return _solve_cases(model, q[None], free, rows, np.zeros((1, 3)), loads_applied, np.zeros_like(force),
                            np.zeros_like(torque), None, options, fields, _NO_VERDICT)

    return Solution.build(model, loaded, reference, gravity, loads_applied, q, fields)


__all__ = ["BatchResult", "CHAIN_OUTCOMES", "ChainResult", "Load", "STABILITY", "SolverOptions", "model_size", "solve",
           "solve_batch", "solve_chain"]
