"""Lift capacity of a machine standing on the ground: tipping load, hydraulic load, rated load (ISO 10567).

For a batch of lift points (configurations of one machine, B cases) and a named
load (a force at a frame, scaled by a factor lambda):

* **tipping**: continuation on lambda with the statics solver. A factor is
  *standing* when the solve converges to an equilibrium the solver calls stable
  and the centre of pressure lies strictly inside the support polygon (tipping
  margin > 0); the machine tips between the largest standing factor found and
  the smallest factor that is not. Each trial starts from the last standing
  equilibrium; the next factor is the secant prediction of where the margin
  reaches zero (taken a quarter tolerance short), doubled while nothing tips,
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

from dataclasses import dataclass, field, replace

import numpy as np

from .. import statics as st
from ..generalized import AppliedLoad
from ..kinematics import state
from ..results import joint_loads
from .stand import Stand


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
    solver: st.SolverOptions = field(default_factory=lambda: st.SolverOptions(max_iterations=40, full_load_iterations=40,
                                                                             max_load_halvings=2))


@dataclass
class Capacity:
    """Per lift point (B,): tipping factor bracket ``tipping`` (largest standing) and ``tipped`` (smallest not),
    the tipping edge (contact names), hydraulic factor and its cylinder, rated factor and what governs
    (``tipping`` / ``hydraulic``). Factors multiply the named load; ``load`` is its size (N)."""

    load: float
    tipping: np.ndarray
    tipped: np.ndarray
    edge: list[tuple[str, str]]
    hydraulic: np.ndarray
    cylinder: list[str]
    rated: np.ndarray
    governs: list[str]
    solves: int


@dataclass
class _Search:
    """Per-case state of the tipping search."""

    lo: np.ndarray
    margin_lo: np.ndarray
    q_lo: np.ndarray
    previous: np.ndarray  # (B, 2): factor and margin of the standing point before lo (nan: none yet)
    hi: np.ndarray
    edge: np.ndarray  # (B, 2) contact indices of the tipping edge at lo


def _with_factor(load: AppliedLoad, factor: np.ndarray) -> AppliedLoad:
    return AppliedLoad(load.frame, load.force * factor[:, None], load.torque * factor[:, None], load.follow)


def _standing(stand: Stand, field_, q: np.ndarray, result: st.BatchResult) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(B,) standing, tipping margin (m), tipping edge (B, 2)."""
    prints, _, _ = stand.footprints(field_, result.q)
    margin = np.array([p.margin for p in prints])
    edge = np.array([p.edge for p in prints])
    return result.converged & result.stable & (margin > 0.0), margin, edge


def tipping_factors(stand: Stand, q_start: np.ndarray, free: np.ndarray, gravity: np.ndarray, load: AppliedLoad,
                    options: CapacityOptions = CapacityOptions()) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Tipping factor brackets (lo, hi) (B,), tipping edges (B, 2) and the number of batched solves.

    ``q_start`` (B, nq): the lift points, base settled; ``load``: the named load at factor 1, (B, 3)
    arrays, model axes; ``gravity`` (3,) model axes. A case that does not stand unloaded has lo = hi = 0.
    """
    batch = q_start.shape[0]
    field_ = stand.field(q_start[0])
    rows = st.independent_rows(stand.model, q_start[0], free)
    solver = options.solver
    grav = np.broadcast_to(gravity, (batch, 3))
    first = st.solve_batch(stand.model, q_start, free, grav, [_with_factor(load, np.zeros(batch))], None, solver, rows,
                           (field_,))
    ok, margin, edge = _standing(stand, field_, q_start, first)
    s = _Search(np.zeros(batch), margin, first.q.copy(), np.full((batch, 2), np.nan),
                np.where(ok, np.inf, 0.0), edge)
    solves = 1
    tol = options.tolerance
    while solves < options.max_solves:
        active = np.flatnonzero((s.hi - s.lo) > tol * np.maximum(s.lo, 1e-12))
        if not len(active):
            break
        target = _next_factor(s, active, tol)
        result = st.solve_batch(stand.model, s.q_lo[active], free, grav[active], [_with_factor(_take(load, active), target)],
                                None, solver, rows, (field_,))
        solves += 1
        good, margin, edge = _standing(stand, field_, s.q_lo[active], result)
        up, down = active[good], active[~good]
        s.previous[up] = np.column_stack([s.lo[up], s.margin_lo[up]])
        s.lo[up], s.margin_lo[up], s.q_lo[up], s.edge[up] = target[good], margin[good], result.q[good], edge[good]
        s.hi[down] = target[~good]
    return s.lo, s.hi, s.edge, solves


def _take(load: AppliedLoad, cases: np.ndarray) -> AppliedLoad:
    return AppliedLoad(load.frame, load.force[cases], load.torque[cases], load.follow)


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
                      load: AppliedLoad, cylinders: list[Cylinder],
                      options: CapacityOptions = CapacityOptions()) -> tuple[np.ndarray, list[str], int]:
    """Hydraulic factor (B,) with the base held at ``q_standing`` (B, nq), the limiting cylinder per case,
    and the number of batched solves. No cylinders: inf."""
    batch = q_standing.shape[0]
    if not cylinders:
        return np.full(batch, np.inf), [""] * batch, 0
    model = stand.model
    held = np.array([i for i in free if i not in stand.base], dtype=int)
    rows = st.independent_rows(model, q_standing[0], held)
    grav = np.broadcast_to(gravity, (batch, 3))
    index = [model.joint_index(c.joint) for c in cylinders]
    push = np.array([c.push for c in cylinders])
    pull = np.array([c.pull for c in cylinders])
    names = [c.joint for c in cylinders]

    def forces(factor: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Cylinder forces (B, cylinders), N, pushing positive (nan where the solve failed), and the equilibria."""
        loaded = _with_factor(load, factor)
        result = st.solve_batch(model, q, held, grav, [loaded], None, options.solver, rows)
        values = np.array([[joint_loads(model, result.q[b], result.multipliers[b], grav[b],
                                        [_take(loaded, np.array([b]))])[j].effort[0] for j in index]
                           for b in range(batch)])
        return np.where(result.converged[:, None], values, np.nan), result.q

    def crossing(f_a, force_a, f_b, force_b) -> tuple[np.ndarray, np.ndarray]:
        """Per case the factor where the first cylinder reaches its limit on the secant, and that cylinder."""
        slope = (force_b - force_a) / (f_b - f_a)[:, None]
        limit = np.where(slope > 0.0, push, -pull)
        with np.errstate(divide="ignore", invalid="ignore"):
            at = f_b[:, None] + (limit - force_b) / slope
        at = np.where((slope != 0.0) & np.isfinite(at) & (at >= 0.0), at, np.inf)
        at = np.where((force_a > push) | (force_a < -pull), 0.0, at)  # beyond its limit unloaded
        return np.min(at, axis=1), np.argmin(at, axis=1)

    f_a, f_b = np.zeros(batch), np.ones(batch)
    force_a, q_a = forces(f_a, q_standing)
    force_b, q_b = forces(f_b, q_a)
    solves = 2
    factor, limiting = crossing(f_a, force_a, f_b, force_b)
    for _ in range(options.max_solves):
        if np.all(~np.isfinite(factor) | (np.abs(factor - f_b) <= options.tolerance * np.maximum(factor, 1e-12))):
            break
        going = np.isfinite(factor)
        f_a, force_a, q_a = f_b, force_b, q_b
        f_b = np.where(going, factor, f_b)
        force_b, q_b = forces(f_b, q_a)
        solves += 1
        new, new_limiting = crossing(f_a, force_a, f_b, force_b)
        factor, limiting = np.where(going, new, factor), np.where(going, new_limiting, limiting)
    return factor, [names[i] for i in limiting], solves


def capacity(stand: Stand, q_start: np.ndarray, free: np.ndarray, gravity: np.ndarray, load: AppliedLoad,
             cylinders: list[Cylinder], options: CapacityOptions = CapacityOptions()) -> Capacity:
    """Tipping, hydraulic and rated factors of the named ``load`` at every lift point (see the module docstring)."""
    lo, hi, edge, solves = tipping_factors(stand, q_start, free, gravity, load, options)
    unloaded = st.solve_batch(stand.model, q_start, free, np.broadcast_to(gravity, q_start.shape[:1] + (3,)),
                              [_with_factor(load, np.zeros(len(q_start)))], None, options.solver, None,
                              (stand.field(q_start[0]),))
    hydraulic, limiting, more = hydraulic_factors(stand, unloaded.q, free, gravity, load, cylinders, options)
    tipping_rated = options.tipping_fraction * lo
    hydraulic_rated = options.hydraulic_fraction * hydraulic
    rated = np.minimum(tipping_rated, hydraulic_rated)
    governs = ["tipping" if t <= h else "hydraulic" for t, h in zip(tipping_rated, hydraulic_rated)]
    names = stand.field(q_start[0]).names
    edges = [(names[a], names[b]) if a >= 0 else ("", "") for a, b in edge]
    size = float(np.linalg.norm(load.force[0]))
    return Capacity(size, lo, hi, edges, hydraulic, limiting, rated, governs, solves + more + 1)
