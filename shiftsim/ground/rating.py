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

from dataclasses import dataclass, field, replace

import numpy as np

from .. import statics as st
from ..forces import AppliedLoad, frame_point
from ..kinematics import state
from ..solution import joint_load_arrays
from .path import LIMIT_POINT, PathOptions, factored, load_path
from .selfcheck import BALANCE_TOLERANCE, balance_factors
from .footprint import centres_of_pressure, ring_margins, support_ring
from .stand import Stand, solve_grouped, take
from .validity import Limits, Violation, assess, violations


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
    """ISO 10567 fractions; ``tolerance``: relative width of the bracket each event is located to on the load
    factor; ``max_solves``: batched solves per search; ``bound``: the search bound, the named load at most this
    many times the machine's weight; what makes an equilibrium impossible (``limits``); the self-check's
    tolerance; the solver's settings on the path (no load stepping: a step that fails is halved instead; no
    escape from unstable points: a path stays on its branch)."""

    tipping_fraction: float = 0.75
    hydraulic_fraction: float = 0.87
    tolerance: float = 1e-6
    max_solves: int = 60
    bound: float = 10.0
    limits: Limits = Limits()
    balance_tolerance: float = BALANCE_TOLERANCE
    solver: st.SolverOptions = field(default_factory=lambda: st.SolverOptions(
        max_iterations=8, full_load_iterations=8, load_stepping=False, seek_stable=False))


@dataclass
class Capacity:
    """Per lift point (B,): the tipping factor ``tipping`` (the last equilibrium on the standing path) and
    ``tipped`` (where the path ends: within ``tolerance`` above it), the tipping edge (contact names; two empty
    names where the point does not stand), hydraulic factor and its cylinder, rated factor and what governs
    (``tipping`` / ``hydraulic``; ``invalid``: no rating). Factors multiply the named load; ``load`` is its size
    (N). ``balance`` (B,): the factor the self-check's moment balance about the tipping edge gives (nan: not
    checked, :mod:`.selfcheck`). ``ended`` per point: why the path ended without the machine tipping (then
    ``tipping`` is only a lower bound: it does not tip below it); ``invalid`` per point: why it has no rating
    (empty: it has one). ``q_unloaded`` (B, nq): the machine standing with the named load at factor 0.

    Where each point's path ended, for sensitivities of the tipping factor:

    * ``q_last`` (B, nq): the last equilibrium on the standing path, at factor ``tipping``;
    * ``event`` (B,): what ended the path -- ``lift-off`` (the centre of pressure reached the tipping edge:
      the tipping margin, the signed distance of the centre of pressure from that edge's line, is zero there),
      ``limit point`` (the smallest eigenvalue of the reduced stiffness, on the null space of the closure rows,
      reaches zero), ``path ends`` (no acceptable equilibrium ahead or the search bound: ``ended`` says which),
      ``not standing`` (not even unloaded);
    * ``event_factor`` (B,): the load factor at the event: the zero of its event function (the tipping margin,
      the lowest eigenvalue) where the path located it, within ``tolerance`` above ``tipping``; else ``tipping``
      (0 where not standing);
    * ``null_vector`` (B, nq): at a limit point, the reduced stiffness' eigenvector of its smallest eigenvalue
      as a change of all coordinates (unit norm; nan elsewhere);
    * ``stiffness_check`` (B,): at a limit point, the lowest eigenvalue of the reduced stiffness by central
      differences of the residual over the unloaded one (the self-check of a limit point: above
      ``LIMIT_CHECK`` the point is invalid; nan elsewhere);
    * ``hydraulic_event`` (B,): ``cylinder limit <joint>`` where the hydraulic path ended at a cylinder's limit;
    * ``steps``, ``trials`` (B,): accepted steps and solves on each standing path."""

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
    event_factor: np.ndarray
    null_vector: np.ndarray
    stiffness_check: np.ndarray
    hydraulic_event: list[str]
    steps: np.ndarray
    trials: np.ndarray


@dataclass
class _Tipping:
    """Where each case's standing path ended (B,): ``lo`` (its equilibrium ``q_lo`` (B, nq)), ``hi``, the event's
    factor ``at_event`` (the zero of its function where located, else ``lo``), the
    watched tipping ``edge`` (B, 2) contact indices ((0, 0): none), the ``event`` that ended it, ``ended`` why
    a path ended without tipping, ``null_vector`` (B, nq) at a limit point (nan elsewhere), ``steps`` (B,)
    accepted steps and ``trials`` (B,) solves of each case; ``differences`` (B,): at a limit point, the lowest
    eigenvalue ratio with the stiffness by central differences (:class:`.path.LoadPath`)."""

    lo: np.ndarray
    hi: np.ndarray
    at_event: np.ndarray
    q_lo: np.ndarray
    edge: np.ndarray
    event: list[str]
    ended: list[list[Violation]]
    null_vector: np.ndarray
    differences: np.ndarray
    steps: np.ndarray
    trials: np.ndarray


LIFT_OFF, PATH_ENDS, NOT_STANDING = "lift-off", "path ends", "not standing"
LIMIT_CHECK = 0.01  # a limit point whose lowest eigenvalue by central differences keeps more of its unloaded one
# than this is invalid (at a fold located to 1e-6 on the load, the eigenvalue keeps about sqrt(1e-6) of it)
EVENTS = (LIFT_OFF, LIFT_OFF, PATH_ENDS, LIMIT_POINT)  # the standing path's event functions, in this order
# (path.Events): the tipping margin (m), the ground's vertical reaction over the unloaded machine's (the whole machine
# lifted off), the headroom to an impossible equilibrium (.validity.assess) and the lowest eigenvalue of the reduced
# stiffness over the unloaded one


def _edge_distance(points: np.ndarray, cop: np.ndarray, edge: np.ndarray) -> np.ndarray:
    """Signed distances (B,) (m, positive inside: left of the counter-clockwise edge) of the centres of pressure
    ``cop`` (B, 2) from the lines through the contacts ``edge`` (B, 2) of ``points`` (B, n, 3); nan: no edge."""
    rows = np.arange(len(cop))
    a, b = points[rows, edge[:, 0], :2], points[rows, edge[:, 1], :2]
    along = b - a
    length = np.linalg.norm(along, axis=1)
    cross = along[:, 0] * (cop - a)[:, 1] - along[:, 1] * (cop - a)[:, 0]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(length > 0.0, cross / length, np.nan)


def _watch(stand: Stand, field_, q: np.ndarray, edge: np.ndarray, rings: dict[tuple[int, tuple[bool, ...]], tuple[int, ...]],
           cases: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The lift-off event function at equilibria ``q`` (B, nq): the signed distance (m) of the centre of pressure
    from the nearest edge of the support polygon (the tipping margin; from the line of the kept ``edge`` (B, 2)
    while fewer than three loaded contacts span the polygon), that edge (B, 2), and the contacts' normal forces
    (B, n) (N; nan distance: nothing presses on the ground). ``rings``: the hull of each (case, set of loaded
    contacts) found so far, filled as new sets appear (a polygon's hull is found once, not at every step);
    ``cases`` (B,): the lift points ``q`` belongs to."""
    c = field_.evaluate(state(stand.model, np.atleast_2d(q)))
    cop, loaded = centres_of_pressure(c.points, c.forces)
    edge = edge.copy()
    ring = []
    for b, case in enumerate(cases):
        key = (int(case), tuple(loaded[b].tolist()))
        if key not in rings:  # footprint()'s polygon: none where nothing presses on the ground
            rings[key] = tuple(support_ring(c.points[b], loaded[b])) if np.isfinite(cop[b, 0]) else ()
        ring.append(rings[key])
    spans = np.array([len(r) >= 3 for r in ring]) & np.isfinite(cop[:, 0])
    distance = _edge_distance(c.points, cop[:, :2], edge)
    if spans.any():
        margin, nearest = ring_margins(c.points[spans][..., :2], cop[spans, :2], [r for r, s in zip(ring, spans) if s])
        distance[spans], edge[spans] = margin, nearest
    return np.where(np.isfinite(cop[:, 0]), distance, np.nan), edge, c.forces[..., 2]


def _rigid_prediction(stand: Stand, field_, q: np.ndarray, load: AppliedLoad,
                      rings: dict[tuple[int, tuple[bool, ...]], tuple[int, ...]]) -> tuple[np.ndarray, np.ndarray]:
    """Per case the factor at which the machine would tip if it were rigid, and the edge it would tip over:
    the moment balance of the ground reaction and the added vertical load about every edge of the support
    polygon, the edge reached first (a load pressing down outside an edge, or pulling up inside one). (B,)
    factors (inf: never), (B, 2) contact indices ((0, 0): none). The first step of each path is half of it.
    ``rings``: the polygons :func:`_watch` found at ``q`` (B, nq)."""
    c = field_.evaluate(state(stand.model, q))
    cop, loaded = centres_of_pressure(c.points, c.forces)
    carried = c.forces[..., 2].sum(axis=1)
    _, at = frame_point(stand.model, state(stand.model, q), load.frame)
    at = at @ stand.rotation.T + stand.translation
    down = -(load.force @ stand.rotation.T)[:, 2]  # vertical load per unit factor, N (positive downward)
    factor, edges = np.full(len(q), np.inf), np.zeros((len(q), 2), dtype=int)
    for b in range(len(q)):
        ring = list(rings[(b, tuple(loaded[b].tolist()))])
        if len(ring) < 3 or down[b] == 0.0 or not np.isfinite(cop[b, 0]):
            continue
        for i, j in zip(ring, ring[1:] + ring[:1]):
            e = c.points[b, j, :2] - c.points[b, i, :2]

            def inside(x: np.ndarray) -> float:
                return float(e[0] * (x[1] - c.points[b, i, 1]) - e[1] * (x[0] - c.points[b, i, 0])) / float(np.linalg.norm(e))

            d_load = inside(at[b, :2])
            if down[b] * d_load < 0.0:
                candidate = carried[b] * inside(cop[b, :2]) / (down[b] * -d_load)
                if candidate < factor[b]:
                    factor[b], edges[b] = candidate, (i, j)
    return factor, edges


def tipping_paths(stand: Stand, q_start: np.ndarray, free: np.ndarray, gravity: np.ndarray, load: AppliedLoad,
                  options: CapacityOptions = CapacityOptions(),
                  others: list[AppliedLoad] = ()) -> tuple[_Tipping, np.ndarray, list[list[Violation]], int]:
    """Each lift point's standing path followed from the unloaded machine as the named load's factor grows
    (:mod:`.path`), ended at its first event -- ``lift-off`` (the centre of pressure reaches the edge of the
    support: the tipping margin falls to zero as a contact group lifts) or ``limit point`` (the reduced
    stiffness loses definiteness) -- located to ``options.tolerance`` (relative), or else where no acceptable
    equilibrium lies ahead (``path ends``: an impossible equilibrium, no equilibrium, the search bound).
    Returns the paths' ends, the unloaded equilibria (B, nq), per case why the unloaded equilibrium is
    impossible, and the number of batched solves.

    ``q_start`` (B, nq): the lift points, base settled; ``load``: the named load at factor 1, (B, 3)
    arrays, model axes; ``others``: loads that stay as they are; ``gravity`` (3,) model axes.
    """
    batch = q_start.shape[0]
    model = stand.model
    field_ = stand.field(q_start[0])
    grav = np.broadcast_to(np.asarray(gravity, float), (batch, 3))
    unloaded = factored(load, others, np.arange(batch), np.zeros(batch))
    settled = replace(options.solver, seek_stable=True)
    seated = stand.seat(q_start, free, grav, unloaded, settled)
    first = solve_grouped(model, seated, free, grav, unloaded, settled, (field_,))
    rings: dict[tuple[int, tuple[bool, ...]], tuple[int, ...]] = {}
    start_margin, watched, normal = _watch(stand, field_, first.q, np.zeros((batch, 2), dtype=int), rings,
                                           np.arange(batch))
    rigid, edge = _rigid_prediction(stand, field_, first.q, load, rings)
    watched = np.where((watched == 0).all(axis=1)[:, None], edge, watched)
    unloaded_impossible = violations(stand, field_, first.q, options.limits)
    bound = _bound(stand.model, gravity, load, options)
    unloaded_reaction = np.maximum(normal.sum(axis=1), 1e-300)

    def watch(cases: np.ndarray, factors: np.ndarray, result) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
        """The tipping margin, the ground's reaction over the unloaded one and the headroom to an impossible
        equilibrium (:func:`.validity.assess`); an equilibrium pressing on the ground."""
        distance, watched[cases], forces = _watch(stand, field_, result.q, watched[cases], rings, cases)
        impossible, headroom = assess(stand, field_, result.q, options.limits)
        pressed = np.isfinite(distance) | ~result.converged  # a converged machine pressing on nothing: in the air
        why = ["; ".join(v.message() for v in vs) if vs else "" if up else "nothing presses on the ground"
               for vs, up in zip(impossible, pressed)]
        values = np.column_stack([distance, forces.sum(axis=1) / unloaded_reaction[cases], headroom])
        return values, forces, pressed, why

    followed = load_path(model, first.q, free, grav, load, list(others), (field_,), options.solver,
                         PathOptions(options.tolerance, options.max_solves), watch,
                         np.where(np.isfinite(rigid), 0.5 * rigid, 0.125 * bound), bound)
    path = followed.path
    standing = path.trials > 0  # a start that is unstable, impossible or over its edge has no path
    event, ended = [], []
    for b in range(batch):
        if not standing[b]:
            event.append(NOT_STANDING)
            ended.append([])
        elif EVENTS[path.event[b]] == PATH_ENDS:  # the headroom to an impossible equilibrium ran out
            event.append(PATH_ENDS)
            at_limit = Limits(options.limits.sink * (1 - 1e-3), options.limits.tyre_compression * (1 - 1e-3))
            ended.append(violations(stand, field_, path.q[b], at_limit)[0]  # what reaches its limit there
                         or [Violation("", "reaches an impossible equilibrium", np.nan)])
        elif path.event[b] >= 0:  # a stiffness lost as the centre of pressure reaches the edge: a lift-off
            edge_reached = path.values[b, 0] <= 1e-4 * abs(start_margin[b])
            event.append(LIFT_OFF if edge_reached else EVENTS[path.event[b]])
            ended.append([])
        elif path.unfinished[b]:
            event.append(PATH_ENDS)
            ended.append([Violation("", f"the path's solve budget ({options.max_solves} solves) ran out between "
                                        f"factors {path.lo[b]:.6g} and {path.hi[b]:.6g}", np.nan)])
        elif not np.isfinite(path.hi[b]):
            event.append(PATH_ENDS)
            ended.append([Violation("", f"the search bound ({options.bound:g} times the machine's weight) is reached "
                                        "standing", np.nan)])
        else:
            event.append(PATH_ENDS)
            ended.append([Violation("", "no acceptable equilibrium beyond it (" + (path.why[b] or "none found") + ")",
                                    np.nan)])
    _, edge, _ = _watch(stand, field_, path.q, watched, rings, np.arange(batch))  # the edge where the path ended
    tipping = _Tipping(np.where(standing, path.lo, 0.0), np.where(standing, path.hi, 0.0),
                       np.where(standing, followed.at_event, 0.0), path.q, edge, event, ended, followed.null_vector,
                       np.where([e == LIMIT_POINT for e in event], followed.differences, np.nan), path.steps,
                       path.trials)
    seats = 1 if len(stand.base) < len(free) else 0
    return tipping, first.q, unloaded_impossible, 1 + seats + followed.solves


def _bound(model, gravity: np.ndarray, load: AppliedLoad, options: CapacityOptions) -> np.ndarray:
    """The search bound (B,): the factor at which the named load is ``options.bound`` times the machine's weight."""
    weight = model.total_mass * float(np.linalg.norm(gravity))
    size = np.linalg.norm(load.force, axis=1)
    with np.errstate(divide="ignore"):
        return np.where(size > 0.0, options.bound * weight / size, 0.0)


def cylinder_limit(name: str) -> str:
    """The event of a cylinder reaching its force limit."""
    return f"cylinder limit {name}"


def hydraulic_factors(stand: Stand, q_standing: np.ndarray, free: np.ndarray, gravity: np.ndarray,
                      load: AppliedLoad, cylinders: list[Cylinder], options: CapacityOptions = CapacityOptions(),
                      others: list[AppliedLoad] = (), first_step: np.ndarray | None = None
                      ) -> tuple[np.ndarray, list[str], int]:
    """Hydraulic factor (B,) with the base held at ``q_standing`` (B, nq), the limiting cylinder per case,
    and the number of batched solves. The path is followed from factor 0 (:mod:`.path`) watching each
    cylinder's headroom ``1 - max(F / push, -F / pull)`` (F its force, pushing positive), the first to reach
    zero located to ``options.tolerance``; ``first_step`` (B,) the first step's factor (default an eighth of
    the search bound). No cylinders: inf; a cylinder beyond its limit unloaded: 0; a path that ends before any
    cylinder's limit (no equilibrium ahead, the search bound): nan."""
    batch = q_standing.shape[0]
    if not cylinders:
        return np.full(batch, np.inf), [""] * batch, 0
    model = stand.model
    held = np.array([i for i in free if i not in stand.base], dtype=int)
    grav = np.broadcast_to(np.asarray(gravity, float), (batch, 3))
    stroke = [model.joints[model.joint_index(c.joint)].coordinates[0] for c in cylinders]  # its effort: the force
    push = np.array([c.push for c in cylinders])
    pull = np.array([c.pull for c in cylinders])
    names = [c.joint for c in cylinders]
    bound = _bound(model, gravity, load, options)

    def watch(cases: np.ndarray, factors: np.ndarray, result) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
        """Each cylinder's headroom; a stable equilibrium."""
        loads = factored(load, others, cases, factors)
        force = np.array([joint_load_arrays(model, result.q[i], result.multipliers[i], grav[b],
                                            [take(l, np.array([i])) for l in loads])[2][stroke]
                          for i, b in enumerate(cases)]).reshape(len(cases), len(stroke))
        why = ["" if s else "no stable equilibrium with the base held" for s in result.stable]
        return 1.0 - np.maximum(force / push, -force / pull), np.zeros((len(cases), 0)), result.stable, why

    first = np.where(np.isfinite(first_step) & (first_step > 0.0), first_step, 0.125 * bound) \
        if first_step is not None else 0.125 * bound
    followed = load_path(model, q_standing, held, grav, load, list(others), (), options.solver,
                         PathOptions(options.tolerance, options.max_solves), watch, first, bound, stiffness=False)
    path = followed.path
    found = (path.event >= 0) & np.isfinite(path.hi) & ~path.unfinished
    beyond = (path.trials == 0) & np.isfinite(path.values).all(axis=1) & np.any(path.values <= 0.0, axis=1)
    factor = np.where(beyond, 0.0, np.where(found, path.lo, np.nan))
    limiting = np.where(found, path.event, np.argmin(np.nan_to_num(path.values, nan=np.inf), axis=1))
    return factor, [names[i] for i in limiting], followed.solves


def capacity(stand: Stand, q_start: np.ndarray, free: np.ndarray, gravity: np.ndarray, load: AppliedLoad,
             cylinders: list[Cylinder], options: CapacityOptions = CapacityOptions(),
             others: list[AppliedLoad] = ()) -> Capacity:
    """Tipping, hydraulic and rated factors of the named ``load`` at every lift point (see the module docstring);
    ``others``: loads that stay as they are (B, 3 arrays). A point whose rating cannot be trusted has none
    (nan, ``governs`` ``invalid``) and says why in ``invalid``: the machine cannot stand there unloaded, its
    tipping factor fails the self-check (:mod:`.selfcheck`), the hydraulic search failed, or the path ended
    without tipping (``ended``) below the load at which the hydraulic limit would govern."""
    s, q_unloaded, unloaded_impossible, solves = tipping_paths(stand, q_start, free, gravity, load, options, others)
    lo = s.lo
    hydraulic, limiting, more = hydraulic_factors(stand, q_unloaded, free, gravity, load, cylinders, options, others,
                                                  np.where(lo > 0.0, 0.5 * lo, np.nan))
    batch = len(lo)
    invalid: list[list[Violation]] = [list(v) for v in unloaded_impossible]
    ended = s.ended
    for b in range(batch):
        if s.event[b] == NOT_STANDING and not invalid[b]:
            invalid[b].append(Violation("", "the machine does not stand unloaded at this lift point (no stable "
                                            "equilibrium with the centre of pressure inside its support)", np.nan))
        if np.isnan(hydraulic[b]):
            invalid[b].append(Violation("", "the hydraulic search failed (no equilibrium with the base held on the "
                                            "way to a cylinder's force limit)", np.nan))
    balance = _self_check(stand, s, gravity, load, others, options, invalid)
    for b in np.flatnonzero(np.isfinite(s.differences)):
        if not abs(s.differences[b]) <= LIMIT_CHECK:
            invalid[b].append(Violation("", f"fails its self-check: at the limit point the stiffness by central "
                                            f"differences of the residual keeps {s.differences[b]:.3g} of its unloaded "
                                            f"lowest eigenvalue (at most {LIMIT_CHECK:g} at a real one)", np.nan))
    tipping_rated = options.tipping_fraction * lo
    hydraulic_rated = options.hydraulic_fraction * hydraulic
    rated = np.minimum(tipping_rated, hydraulic_rated)
    governs = ["tipping" if t <= h else "hydraulic" for t, h in zip(tipping_rated, hydraulic_rated)]
    for b in range(batch):
        if ended[b] and governs[b] == "tipping" and not invalid[b]:
            invalid[b].append(Violation("", f"does not tip below factor {lo[b]:.6g} (its path ends: "
                                            + "; ".join(v.message() for v in ended[b])
                                        + "): no tipping load to rate", np.nan))
        if invalid[b]:
            rated[b], governs[b] = np.nan, "invalid"
    names = stand.field(q_start[0]).names
    edges = [(names[e[0]], names[e[1]]) if e[0] != e[1] and s.event[b] != NOT_STANDING else ("", "")
             for b, e in enumerate(s.edge)]
    size = float(np.linalg.norm(load.force[0]))
    hydraulic_event = [cylinder_limit(limiting[b]) if np.isfinite(hydraulic[b]) else "" for b in range(batch)]
    return Capacity(size, lo, s.hi, edges, hydraulic, limiting, rated, governs, solves + more, q_unloaded, balance,
                    ended, invalid, s.q_lo.copy(), s.event, s.at_event, s.null_vector, s.differences, hydraulic_event, s.steps,
                    s.trials)


def _self_check(stand: Stand, s: _Tipping, gravity: np.ndarray, load: AppliedLoad, others: list[AppliedLoad],
                options: CapacityOptions, invalid: list[list[Violation]]) -> np.ndarray:
    """The balance factor (:mod:`.selfcheck`) of every point whose path ended at lift-off (nan elsewhere: a limit
    point before lift-off leaves the contacts off the edge loaded, so no moment balance about an edge holds
    there); a point whose tipping factor is more than ``options.balance_tolerance`` (relative) from it gets the
    reason in ``invalid``."""
    batch = len(s.lo)
    balance = np.full(batch, np.nan)
    cases = np.array([b for b in range(batch) if s.event[b] == LIFT_OFF and s.edge[b, 0] != s.edge[b, 1]], dtype=int)
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
                                            f"{found[k]:.6g}, the path {s.lo[b]:.6g} ({100 * gap:.3g} % apart; the "
                                            f"contacts off the edge still carry {abs(off[k]):.4g} N m of the load's "
                                            f"{abs(per_factor[k] * s.lo[b]):.4g} N m)", np.nan))
    return balance
