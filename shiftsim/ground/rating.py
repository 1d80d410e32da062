"""Lift capacity of a machine standing on the ground: tipping load, hydraulic load, rated load (ISO 10567).

For a batch of lift points (configurations of one machine, B cases) and a named
load (a force at a frame, scaled by a factor lambda):

* **tipping**: continuation on lambda with the statics solver. A factor is
  *standing* when the solve converges to an equilibrium the solver calls stable
  and the centre of pressure lies strictly inside the support polygon (tipping
  margin > 0); the machine tips between the largest standing factor found and
  the smallest factor that is not. Each trial starts from the last standing
  equilibrium. The first trial is 95 % of the rigid-machine estimate (moment
  balance of the unloaded ground reaction and the added vertical load about
  each support-polygon edge; the edge reached first is the tipping edge); then
  the secant prediction of where the centre of pressure reaches that edge
  (taken a quarter tolerance short), doubled while there is no prediction,
  bisected when the prediction leaves the bracket. It stops when the bracket is
  narrower than ``tolerance`` (relative) and reports its lower end: a factor at
  which the solver found the machine standing, never a guessed threshold.
* **hydraulic**: the base held where the unloaded machine stands (ISO 10567
  determines the hydraulic capacity with the machine secured against tipping),
  the factor at which a cylinder's force (the effort of its held stroke joint,
  positive pushing) reaches its limit: ``p pi/4 D^2`` pushing,
  ``p pi/4 (D^2 - d^2)`` pulling (bore D, rod d, relief pressure p). Secant on
  each cylinder's force from factors 0 and 1, then re-solved at the predicted
  factor until it moves by less than ``tolerance`` (relative).
* **rated**: ``min(tipping_fraction * tipping, hydraulic_fraction * hydraulic)``,
  by default 75 % and 87 % (ISO 10567), and which of the two governs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .. import statics as st
from ..forces import AppliedLoad, frame_point
from ..kinematics import state
from ..solution import joint_loads
from .selfcheck import BALANCE_TOLERANCE, balance_factors
from .stand import Equilibria, Stand, solve_grouped, take
from .validity import Limits, Violation, violations


@dataclass(frozen=True)
class Cylinder:
    """A hydraulic cylinder: its held stroke joint (model name), bore and rod diameters (m), relief pressure (Pa)."""

    joint: str
    bore: float
    rod: float
    pressure: float

    @property
    def push(self) -> float:
        """Largest pushing force (N): pressure on the full bore."""
        return self.pressure * np.pi / 4.0 * self.bore**2

    @property
    def pull(self) -> float:
        """Largest pulling force (N): pressure on the annulus around the rod."""
        return self.pressure * np.pi / 4.0 * (self.bore**2 - self.rod**2)


@dataclass(frozen=True)
class CapacityOptions:
    """ISO 10567 fractions, relative tolerance on the factors, and a cap on the solves per search."""

    tipping_fraction: float = 0.75
    hydraulic_fraction: float = 0.87
    tolerance: float = 1e-3
    max_solves: int = 40
    limits: Limits = Limits()
    balance_tolerance: float = BALANCE_TOLERANCE
    # a trial past the tipping load fails; load stepping from zero would only confirm it
    solver: st.SolverOptions = field(default_factory=lambda: st.SolverOptions(max_iterations=15, full_load_iterations=15,
                                                                             load_stepping=False))


@dataclass
class Capacity:
    """Per lift point (B,): tipping factor bracket ``tipping`` (largest standing) and ``tipped`` (smallest not),
    the tipping edge (contact names; two empty names where no downward load can tip it), hydraulic factor and its
    cylinder, rated factor and what governs (``tipping`` / ``hydraulic``; ``invalid``: no rating).
    Factors multiply the named load; ``load`` is its size (N). ``balance`` (B,): the factor the self-check's
    moment balance about the tipping edge gives (nan: not checked, :mod:`.selfcheck`). ``ended`` per point:
    why the search ended without the machine tipping (an impossible equilibrium ahead; then ``tipping`` is only
    a lower bound: it does not tip below it); ``invalid`` per point: why it has no rating (empty: it has one).
    ``q_unloaded`` (B, nq): the machine standing with the named load at factor 0. Where each point's path
    ended, for sensitivities of the tipping factor: ``q_last`` (B, nq), the last standing equilibrium found on
    it (at factor ``tipping``), and ``event`` (B,): what ended it -- ``tipped`` (no standing equilibrium at
    ``tipped``: the centre of pressure past the edge or no stable equilibrium), ``impossible`` (an impossible
    equilibrium ahead, ``ended``), ``never tips`` (no downward load tips it), ``not standing`` (not even
    unloaded). Limit points of the reduced stiffness are not told apart from tipping yet (no null vector)."""

    load: float
    tipping: np.ndarray
    tipped: np.ndarray
    edge: list[tuple[str, str]]
    hydraulic: np.ndarray
    cylinder: list[str]
    rated: np.ndarray
    governs: list[str]
    solves: int
    q_unloaded: np.ndarray
    balance: np.ndarray
    ended: list[list[Violation]]
    invalid: list[list[Violation]]
    q_last: np.ndarray
    event: list[str]


@dataclass
class _Search:
    """Per-case state of the tipping search."""

    lo: np.ndarray
    margin_lo: np.ndarray
    q_lo: np.ndarray
    previous: np.ndarray  # (B, 2): factor and margin of the standing point before lo (nan: none yet)
    hi: np.ndarray
    edge: np.ndarray  # (B, 2) contact indices of the tipping edge (the rigid prediction's)
    ended: list[list[Violation]]  # per case: what made the trial at ``hi`` impossible (empty: it tipped)


def _with_factor(load: AppliedLoad, factor: np.ndarray) -> AppliedLoad:
    return AppliedLoad(load.frame, load.force * factor[:, None], load.torque * factor[:, None], load.follow)


def _standing(stand: Stand, field_, result: Equilibria, edge: np.ndarray,
              limits: Limits) -> tuple[np.ndarray, np.ndarray, list[list[Violation]]]:
    """(B,) standing, the signed distance (m, positive inside) of the centre of pressure from the line of
    the tipping ``edge`` (B, 2) contact indices, and per case why the equilibrium is impossible
    (:func:`.validity.violations`; such a case is not standing)."""
    prints, points, _ = stand.footprints(field_, result.q)
    impossible = violations(stand, field_, result.q, limits)
    margin = np.array([p.margin for p in prints])
    cop = np.array([p.centre_of_pressure[:2] for p in prints])
    rows = np.arange(len(prints))
    a, b = points[rows, edge[:, 0], :2], points[rows, edge[:, 1], :2]
    along = b - a
    length = np.linalg.norm(along, axis=1)
    cross = along[:, 0] * (cop - a)[:, 1] - along[:, 1] * (cop - a)[:, 0]
    distance = np.where(length > 0.0, cross / np.maximum(length, 1e-300), margin)  # no edge predicted: the margin
    possible = np.array([not v for v in impossible])
    return result.converged & result.stable & (margin > 0.0) & possible, distance, impossible


def _rigid_prediction(stand: Stand, field_, result: Equilibria, load: AppliedLoad) -> tuple[np.ndarray, np.ndarray]:
    """Per case the factor at which the machine would tip if it were rigid, and the edge it would tip over:
    the moment balance of the ground reaction and the added vertical load about every edge of the support
    polygon, the edge reached first. (B,) factors (inf: never), (B, 2) contact indices ((0, 0): none)."""
    prints, points, _ = stand.footprints(field_, result.q)
    s = state(stand.model, result.q)
    _, at = frame_point(stand.model, s, load.frame)
    at = at @ stand.rotation.T + stand.translation
    down = -(load.force @ stand.rotation.T)[:, 2]  # vertical load per unit factor, N (positive downward)
    factor, edges = np.full(len(prints), np.inf), np.zeros((len(prints), 2), dtype=int)
    for b, p in enumerate(prints):
        ring = p.polygon
        if len(ring) < 3 or down[b] <= 0.0:
            continue
        for i, j in zip(ring, ring[1:] + ring[:1]):
            e = points[b, j, :2] - points[b, i, :2]

            def inside(x: np.ndarray) -> float:
                return float(e[0] * (x[1] - points[b, i, 1]) - e[1] * (x[0] - points[b, i, 0])) / float(np.linalg.norm(e))

            d_load = inside(at[b, :2])
            if d_load < 0.0:
                candidate = p.force[2] * inside(p.centre_of_pressure[:2]) / (down[b] * -d_load)
                if candidate < factor[b]:
                    factor[b], edges[b] = candidate, (i, j)
    return factor, edges


def tipping_factors(stand: Stand, q_start: np.ndarray, free: np.ndarray, gravity: np.ndarray, load: AppliedLoad,
                    options: CapacityOptions = CapacityOptions(),
                    others: list[AppliedLoad] = ()) -> tuple[_Search, np.ndarray, list[list[Violation]], int]:
    """The search's end (tipping factor brackets ``lo``, ``hi`` (B,), their equilibria, tipping edges (B, 2), why
    a bracket ended without tipping), the unloaded equilibria (B, nq), per case why the unloaded equilibrium is
    impossible, and the number of batched solves.

    ``q_start`` (B, nq): the lift points, base settled; ``load``: the named load at factor 1, (B, 3)
    arrays, model axes; ``others``: loads that stay as they are; ``gravity`` (3,) model axes. A case that
    does not stand unloaded, or that no downward load tips, has lo = hi = 0 or inf.
    """
    batch = q_start.shape[0]
    field_ = stand.field(q_start[0])
    solver = options.solver
    grav = np.broadcast_to(gravity, (batch, 3))
    unloaded = [_with_factor(load, np.zeros(batch)), *others]
    seated = stand.seat(q_start, free, grav, unloaded, solver)
    first = solve_grouped(stand.model, seated, free, grav, unloaded, solver, (field_,))
    rigid, edge = _rigid_prediction(stand, field_, first, load)
    ok, margin, unloaded_impossible = _standing(stand, field_, first, edge, options.limits)
    lo = np.where(ok & np.isinf(rigid), np.inf, 0.0)
    s = _Search(lo, margin, first.q.copy(), np.full((batch, 2), np.nan), np.where(ok, np.inf, 0.0), edge,
                [[] for _ in range(batch)])
    solves = 1
    tol = options.tolerance
    first_guess = np.where(np.isfinite(rigid), 0.95 * rigid, np.inf)
    while solves < options.max_solves:
        with np.errstate(invalid="ignore"):
            gap = np.where(np.isinf(s.lo), 0.0, s.hi - s.lo)  # lo = inf: nothing tips it
        active = np.flatnonzero(gap > tol * np.maximum(s.lo, 1e-12))
        if not len(active):
            break
        target = np.where(s.lo[active] == 0.0, np.minimum(first_guess[active], s.hi[active] * 0.5),
                          _next_factor(s, active, tol))
        loads = [_with_factor(take(load, active), target), *(take(o, active) for o in others)]
        result = solve_grouped(stand.model, s.q_lo[active], free, grav[active], loads, solver, (field_,))
        solves += 1
        good, margin, impossible = _standing(stand, field_, result, s.edge[active], options.limits)
        up, down = active[good], active[~good]
        s.previous[up] = np.column_stack([s.lo[up], s.margin_lo[up]])
        s.lo[up], s.margin_lo[up], s.q_lo[up] = target[good], margin[good], result.q[good]
        s.hi[down] = target[~good]
        for k in np.flatnonzero(~good):
            s.ended[active[k]] = impossible[k]
    return s, first.q, unloaded_impossible, solves


def _next_factor(s: _Search, active: np.ndarray, tol: float) -> np.ndarray:
    """The next trial factor of each active case (see the module docstring)."""
    lo, hi, margin = s.lo[active], s.hi[active], s.margin_lo[active]
    f0, m0 = s.previous[active, 0], s.previous[active, 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        predicted = np.where(m0 > margin, lo + margin * (lo - f0) / (m0 - margin), np.inf)
    predicted = np.where(np.isfinite(predicted) & (predicted > lo), predicted, np.inf)
    resolution = 0.5 * tol * np.maximum(lo, 1e-12)
    target = np.where(np.isfinite(predicted), np.maximum(predicted * (1.0 - 0.25 * tol), lo + resolution),
                      np.where(lo > 0.0, 2.0 * lo, 1.0))
    return np.where(target < hi, target, 0.5 * (lo + hi))


def hydraulic_factors(stand: Stand, q_standing: np.ndarray, free: np.ndarray, gravity: np.ndarray,
                      load: AppliedLoad, cylinders: list[Cylinder], options: CapacityOptions = CapacityOptions(),
                      others: list[AppliedLoad] = ()) -> tuple[np.ndarray, list[str], int]:
    """Hydraulic factor (B,) with the base held at ``q_standing`` (B, nq), the limiting cylinder per case,
    and the number of batched solves. No cylinders: inf."""
    batch = q_standing.shape[0]
    if not cylinders:
        return np.full(batch, np.inf), [""] * batch, 0
    model = stand.model
    held = np.array([i for i in free if i not in stand.base], dtype=int)
    grav = np.broadcast_to(gravity, (batch, 3))
    index = [model.joint_index(c.joint) for c in cylinders]
    push = np.array([c.push for c in cylinders])
    pull = np.array([c.pull for c in cylinders])
    names = [c.joint for c in cylinders]

    def forces(factor: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Cylinder forces (B, cylinders), N, pushing positive (nan where the solve failed), and the equilibria."""
        loads = [_with_factor(load, factor), *others]
        result = solve_grouped(model, q, held, grav, loads, options.solver)
        values = np.array([[joint_loads(model, result.q[b], result.multipliers[b], grav[b],
                                        [take(l, np.array([b])) for l in loads])[j].effort[0] for j in index]
                           for b in range(batch)])
        return np.where(result.converged[:, None], values, np.nan), result.q

    def crossing(f_a, force_a, f_b, force_b) -> tuple[np.ndarray, np.ndarray]:
        """Per case the factor where the first cylinder reaches its limit on the secant, and that cylinder."""
        with np.errstate(divide="ignore", invalid="ignore"):
            slope = (force_b - force_a) / (f_b - f_a)[:, None]
            limit = np.where(slope > 0.0, push, -pull)
            at = f_b[:, None] + (limit - force_b) / slope
        at = np.where((slope != 0.0) & np.isfinite(at) & (at >= 0.0), at, np.inf)
        return np.min(at, axis=1), np.argmin(at, axis=1)

    f_a, f_b = np.zeros(batch), np.ones(batch)
    force_a, q_a = forces(f_a, q_standing)
    beyond = np.any((force_a > push) | (force_a < -pull), axis=1)  # the cylinders cannot hold the machine itself
    force_b, q_b = forces(f_b, q_a)
    solves = 2
    factor, limiting = crossing(f_a, force_a, f_b, force_b)
    for _ in range(options.max_solves):
        going = np.flatnonzero(np.isfinite(factor) & ~beyond
                               & (np.abs(factor - f_b) > options.tolerance * np.maximum(factor, 1e-12)))
        if not len(going):
            break
        trial = f_b.copy()
        trial[going] = factor[going]
        force, q = forces(trial, q_b)  # every case re-solved (the others where they are); the going ones move on
        solves += 1
        f_a[going], force_a[going] = f_b[going], force_b[going]
        f_b[going], force_b[going], q_b[going] = factor[going], force[going], q[going]
        new, new_limiting = crossing(f_a, force_a, f_b, force_b)
        factor[going], limiting[going] = new[going], new_limiting[going]
    factor = np.where(beyond, 0.0, np.where(np.any(np.isnan(force_b), axis=1), np.nan, factor))
    return factor, [names[i] for i in limiting], solves


def capacity(stand: Stand, q_start: np.ndarray, free: np.ndarray, gravity: np.ndarray, load: AppliedLoad,
             cylinders: list[Cylinder], options: CapacityOptions = CapacityOptions(),
             others: list[AppliedLoad] = ()) -> Capacity:
    """Tipping, hydraulic and rated factors of the named ``load`` at every lift point (see the module docstring);
    ``others``: loads that stay as they are (B, 3 arrays). A point whose rating cannot be trusted has none
    (nan, ``governs`` ``invalid``) and says why in ``invalid``: the machine cannot stand there unloaded, its
    tipping factor fails the self-check (:mod:`.selfcheck`), the hydraulic search failed, or the search ended
    at an impossible equilibrium (``ended``) below the load at which the hydraulic limit would govern."""
    s, q_unloaded, unloaded_impossible, solves = tipping_factors(stand, q_start, free, gravity, load, options, others)
    lo = s.lo
    hydraulic, limiting, more = hydraulic_factors(stand, q_unloaded, free, gravity, load, cylinders, options, others)
    batch = len(lo)
    invalid: list[list[Violation]] = [list(v) for v in unloaded_impossible]
    ended = [list(v) if np.isfinite(s.hi[b]) else [] for b, v in enumerate(s.ended)]
    for b in range(batch):
        if lo[b] == 0.0 and not invalid[b]:
            invalid[b].append(Violation("", "the machine does not stand unloaded at this lift point (no stable "
                                            "equilibrium with the centre of pressure inside its support)", np.nan))
        if np.isnan(hydraulic[b]):
            invalid[b].append(Violation("", "the hydraulic search failed (no equilibrium with the base held on the "
                                            "way to a cylinder's force limit)", np.nan))
    balance = _self_check(stand, s, gravity, load, others, options, invalid, ended)
    tipping_rated = options.tipping_fraction * lo
    hydraulic_rated = options.hydraulic_fraction * hydraulic
    rated = np.minimum(tipping_rated, hydraulic_rated)
    governs = ["tipping" if t <= h else "hydraulic" for t, h in zip(tipping_rated, hydraulic_rated)]
    for b in range(batch):
        if ended[b] and governs[b] == "tipping" and not invalid[b]:
            invalid[b].append(Violation("", f"does not tip below factor {lo[b]:.6g}, where the path ends at an "
                                            f"impossible equilibrium (" + "; ".join(v.message() for v in ended[b])
                                        + "): no tipping load to rate", np.nan))
        if invalid[b]:
            rated[b], governs[b] = np.nan, "invalid"
    names = stand.field(q_start[0]).names
    edges = [(names[a], names[b]) if a != b else ("", "") for a, b in s.edge]  # (0, 0): no edge predicted
    size = float(np.linalg.norm(load.force[0]))
    event = ["not standing" if lo[b] == 0.0 else "never tips" if np.isinf(lo[b]) else "impossible" if ended[b]
             else "tipped" for b in range(batch)]
    return Capacity(size, lo, s.hi, edges, hydraulic, limiting, rated, governs, solves + more, q_unloaded, balance,
                    ended, invalid, s.q_lo.copy(), event)


def _self_check(stand: Stand, s: _Search, gravity: np.ndarray, load: AppliedLoad, others: list[AppliedLoad],
                options: CapacityOptions, invalid: list[list[Violation]], ended: list[list[Violation]]) -> np.ndarray:
    """The balance factor (:mod:`.selfcheck`) of every point that tipped (nan elsewhere); a point whose tipping
    factor is more than ``options.balance_tolerance`` (relative) from it gets the reason in ``invalid``."""
    batch = len(s.lo)
    balance = np.full(batch, np.nan)
    cases = np.array([b for b in range(batch) if 0.0 < s.lo[b] < np.inf and np.isfinite(s.hi[b]) and not ended[b]
                      and s.edge[b, 0] != s.edge[b, 1]], dtype=int)
    if not len(cases):
        return balance
    field_ = stand.field(s.q_lo[cases[0]])
    evaluated = field_.evaluate(state(stand.model, s.q_lo[cases]))
    rows = np.arange(len(cases))
    edge_points = np.stack([evaluated.points[rows, s.edge[cases, 0]], evaluated.points[rows, s.edge[cases, 1]]], axis=1)
    off_edge = np.ones(evaluated.forces.shape[:2], dtype=bool)
    off_edge[rows, s.edge[cases, 0]] = off_edge[rows, s.edge[cases, 1]] = False
    found, off, per_factor = balance_factors(
        stand.model, stand.rotation, stand.translation, s.q_lo[cases], np.broadcast_to(gravity, (len(cases), 3)),
        take(load, cases), [take(o, cases) for o in others], edge_points, evaluated.points, evaluated.forces, off_edge)
    balance[cases] = found
    names = field_.names
    for k, b in enumerate(cases):
        gap = abs(found[k] - s.lo[b]) / s.lo[b]
        if not gap <= options.balance_tolerance:
            invalid[b].append(Violation("", f"fails its self-check: the moment balance about the tipping edge "
                                            f"{names[s.edge[b, 0]]} - {names[s.edge[b, 1]]} gives factor "
                                            f"{found[k]:.6g}, the search {s.lo[b]:.6g} ({100 * gap:.3g} % apart; the "
                                            f"contacts off the edge still carry {abs(off[k]):.4g} N m of the load's "
                                            f"{abs(per_factor[k] * s.lo[b]):.4g} N m)", np.nan))
    return balance
